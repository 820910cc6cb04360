"""App benchmark: how long the Curves page takes on 30,000 rows. Measures, never asserts.

    python bench/bench_app.py [--rows 30000] [--repeats 3] [--out bench/results/app.json]

1. Sweep: a 20-point ε curve (0.01 … 10, log-spaced), permute_flip, 100 trees,
   theorem2, 5-fold CV on SynthF (``dpviz.evaluation.synthetic.make_synth``), with ``n_jobs`` 1
   and 2. Timed twice: the bare engine (``dpviz.evaluation.sweep.run_sweep`` without references)
   and the app's call (``dpviz.app.sweep.run_with_references`` with the non-private
   forest but without scikit-learn's, the Curves page default above 5,000 rows).
2. Re-render after a sweep: with the app's default sweep (19 ε values × 3 mechanisms)
   kept in session state, the time to show another metric or another ε under
   discussion, measured two ways: (a) the figure function alone
   (``dpviz.figures.curves.curve_figure`` on the summary frame), (b) a whole Streamlit
   rerun of the Curves page through ``AppTest`` after changing the widget (this
   includes AppTest's own overhead; as AppTest runs a ``pages/`` file on its own, the
   sidebar drawn by app.py is not in it).
3. For scale: one press of Train on the Train page (3-fold CV + the non-private forest
   + the released forest on all records), the first press in a fresh process (cold:
   nothing imported or compiled beyond the page's own imports) and later presses.
4. The CLI's sweep (``run_sweep``, 20 ε, 5 folds) with its default references (the
   non-private forest and scikit-learn's random forest) against ``--no-references``.

The Curves view controls are a fragment (``st.fragment``): in the browser a metric
switch reruns that fragment only. 2(c) measures exactly that through AppTest, which
reruns a fragment alone when its rerun request names it (as the browser's does).

5. ``--browser CSV``: only what a user waits for in headless Chromium (Playwright,
   /usr/bin/chromium, the app served as ``tests/browser.py`` serves it): in a fresh
   session per repetition, upload the CSV on the Data page (no schema declared), open
   Curves, press Run sweep with the defaults, click → chart drawn; then, on the last
   session, ``--switches`` metric switches, click → the new metric's figure drawn (its
   y axis title). Each time is split into the browser before its rerun request, the
   server (request → last websocket frame) and the drawing after that frame.

Run it on an otherwise idle machine: other heavy processes distort every number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import streamlit.testing.v1.local_script_runner as local_runner  # noqa: E402

from dpviz.app import curves as app_curves  # noqa: E402
from dpviz.app.session import DATA_KEY, KEEP_PREFIX, SWEEP_KEY  # noqa: E402
from dpviz.app.support import PreparedData  # noqa: E402
from dpviz.app.sweep import run_with_references  # noqa: E402
from dpviz.evaluation.sweep import SweepGrid, run_sweep  # noqa: E402
from dpviz.evaluation.synthetic import make_synth  # noqa: E402
from dpviz.figures.curves import curve_figure  # noqa: E402
from dpviz.tabular.encode import encode  # noqa: E402

DATASET = "SynthF"
EPSILONS = [float(f"{v:.3g}") for v in np.geomspace(0.01, 10, 20)]
FOLDS = 5
RERENDERS = 15


def timed(fn, repeats: int) -> tuple[list[float], object]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def stats(times: list[float]) -> dict:
    return {
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "runs": len(times),
    }


def bench_sweeps(encoded, schema, repeats: int) -> dict:
    out = {}
    grid = SweepGrid(epsilons=EPSILONS, references=False)
    for n_jobs in (1, 2):
        times, _ = timed(
            lambda n_jobs=n_jobs: run_sweep(encoded, schema, grid, folds=FOLDS, n_jobs=n_jobs),
            repeats,
        )
        out[f"engine_n_jobs_{n_jobs}"] = stats(times)
        times, _ = timed(
            lambda n_jobs=n_jobs: run_with_references(
                encoded, schema, epsilons=EPSILONS, sklearn=False, folds=FOLDS, n_jobs=n_jobs
            ),
            repeats,
        )
        out[f"app_with_nonprivate_n_jobs_{n_jobs}"] = stats(times)
    return out


def bench_rerender(data: PreparedData) -> dict:
    from streamlit.testing.v1 import AppTest

    sweep = app_curves.run(data, app_curves.SweepSettings(folds=FOLDS))
    summary = sweep.summary
    fixed = {"n_estimators": 100, "depth_rule": "theorem2", "data_split": "disjoint"}
    epsilons = sweep.values("epsilon")
    figure_times = {"metric": [], "epsilon": []}
    for i in range(RERENDERS):
        metric = ("accuracy", "auc", "f1")[i % 3]
        start = time.perf_counter()
        curve_figure(summary, metric=metric, fixed=fixed, highlight_epsilon=1.0, folds=FOLDS)
        figure_times["metric"].append(time.perf_counter() - start)
        eps = epsilons[i % len(epsilons)]
        start = time.perf_counter()
        curve_figure(summary, metric="accuracy", fixed=fixed, highlight_epsilon=eps, folds=FOLDS)
        figure_times["epsilon"].append(time.perf_counter() - start)

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.session_state[DATA_KEY] = data
    at.session_state[SWEEP_KEY] = sweep
    at.switch_page("pages/curves.py").run()
    if at.exception:
        raise RuntimeError(f"the Curves page failed: {at.exception}")
    fragment_times = {"metric": []}
    fragments = list(at._fragment_storage._fragments)
    plain = local_runner.RerunData
    local_runner.RerunData = lambda **kw: plain(
        **kw, fragment_id_queue=fragments, is_fragment_scoped_rerun=True
    )
    try:
        for i in range(RERENDERS):
            metric = ("auc", "f1", "accuracy")[i % 3]
            start = time.perf_counter()
            at.radio(key=f"{KEEP_PREFIX}curves.metric").set_value(metric).run()
            fragment_times["metric"].append(time.perf_counter() - start)
            if at.exception or at.session_state[SWEEP_KEY] is not sweep:
                raise RuntimeError("a view change must not fail or rerun the sweep")
    finally:
        local_runner.RerunData = plain
    rerun_times = {"metric": [], "epsilon": []}
    for i in range(RERENDERS):
        metric = ("auc", "f1", "accuracy")[i % 3]
        start = time.perf_counter()
        at.radio(key=f"{KEEP_PREFIX}curves.metric").set_value(metric).run()
        rerun_times["metric"].append(time.perf_counter() - start)
        eps = epsilons[(i * 7) % len(epsilons)]
        start = time.perf_counter()
        at.select_slider(key=f"{KEEP_PREFIX}curves.discuss").set_value(eps).run()
        rerun_times["epsilon"].append(time.perf_counter() - start)
        if at.exception or at.session_state[SWEEP_KEY] is not sweep:
            raise RuntimeError("a view change must not fail or rerun the sweep")
    return {
        "sweep_seconds": sweep.seconds,
        "sweep": sweep.describe(),
        "figure_function": {k: stats(v) for k, v in figure_times.items()},
        "apptest_rerun": {k: stats(v) for k, v in rerun_times.items()},
        "apptest_fragment_rerun": {k: stats(v) for k, v in fragment_times.items()},
    }


FIRST_TRAIN = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {root!r})
from dpviz.app import train as app_train
from dpviz.app.support import PreparedData
from dpviz.evaluation.synthetic import make_synth
frame, schema = make_synth({dataset!r}, {rows}, seed=0)
data = PreparedData("bench", frame, schema, "generated", "bench")
settings = app_train.TrainSettings(sklearn_reference=False)
times = []
for _ in range(3):
    start = time.perf_counter()
    app_train.train(data, settings)
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def bench_train(rows: int, repeats: int) -> dict:
    """Train in fresh processes: the first press (cold) and the two after it (warm)."""
    code = FIRST_TRAIN.format(root=str(ROOT), dataset=DATASET, rows=rows)
    first, later = [], []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        times = json.loads(out.stdout.strip().splitlines()[-1])
        first.append(times[0])
        later.extend(times[1:])
    return {
        "settings": "permute_flip, ε = 1, 100 trees, theorem2, 3 folds",
        "first_press": stats(first),
        "later_presses": stats(later),
    }


def bench_cli_references(encoded, schema, repeats: int) -> dict:
    """The CLI sweep's call with its default references and with --no-references."""
    out = {}
    for name, references in (("no_references", False), ("default_references", True)):
        grid = SweepGrid(epsilons=EPSILONS, references=references)
        times, result = timed(
            lambda grid=grid: run_sweep(encoded, schema, grid, folds=FOLDS, n_jobs=1), repeats
        )
        out[name] = stats(times)
        rows = result.results
        out[name]["series_seconds"] = (
            rows.groupby("series")["fit_seconds"].sum().round(3).to_dict()
        )
    out["ratio_default_over_none"] = (
        out["default_references"]["median_s"] / out["no_references"]["median_s"]
    )
    return out


# --- In Chromium: what a user waits for (issue 29) -----------------------------------
# Both clocks run in the page (performance.now): from the click's pointerdown, caught
# in the capture phase before Streamlit sees it, to the first animation frame in which
# the chart shows what was asked for. Playwright's own work before the click is not in it.
_MARK_CLICKS = """() => {
  if (window.__benchMarked) return;
  window.__benchMarked = true;
  document.addEventListener('pointerdown', () => { window.__benchT0 = performance.now(); },
                            true);
}"""
# The y axis title is "<metric name> on held-out folds (%)": the new figure is drawn.
_Y_TITLE_IS = """(name) => {
  const t = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot .ytitle');
  return t && t.textContent.startsWith(name + ' ') ? performance.now() - window.__benchT0
                                                   : false;
}"""
# A first sweep's chart: a plot with its traces drawn (the empty axes shown before
# a sweep have none).
_CHART_DRAWN = """() => {
  const plots = document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot');
  return [...plots].some(p => p.querySelector('.scatterlayer .trace'))
    ? performance.now() - window.__benchT0 : false;
}"""
SWITCH_CYCLE = (("auc", "ROC AUC"), ("f1", "F1"), ("accuracy", "Accuracy"))
# Where the wait goes: the websocket's frames, timed in the page. From the click to the
# rerun request sent (the browser), from there to the last frame before the chart is
# drawn (the server: the script's rerun, its deltas), from that frame to the drawing.
_LOG_SOCKET = """() => {
  window.__benchFrames = [];
  const Plain = window.WebSocket;
  window.WebSocket = function (...args) {
    const socket = new Plain(...args);
    const send = socket.send.bind(socket);
    socket.send = (data) => {
      window.__benchFrames.push(['sent', performance.now(), data.byteLength || data.length]);
      return send(data);
    };
    socket.addEventListener('message', (event) => {
      const n = event.data.byteLength || event.data.size || event.data.length;
      window.__benchFrames.push(['received', performance.now(), n]);
    });
    return socket;
  };
  window.WebSocket.prototype = Plain.prototype;
  Object.assign(window.WebSocket, Plain);
}"""
_SPLIT = """(drawnAfter) => {
  const t0 = window.__benchT0, end = t0 + drawnAfter;
  const frames = window.__benchFrames.filter(f => f[1] >= t0 && f[1] <= end);
  const sent = frames.find(f => f[0] === 'sent');
  const got = frames.filter(f => f[0] === 'received');
  const last = got.length ? got[got.length - 1][1] : t0;
  return {browser_to_request_s: sent ? (sent[1] - t0) / 1000 : null,
          server_s: sent ? (last - sent[1]) / 1000 : null,
          drawing_after_last_frame_s: (end - last) / 1000,
          frames_received: got.length,
          bytes_received: got.reduce((a, f) => a + f[2], 0)};
}"""


def _open_curves_with_upload(browser, url: str, csv: Path, api):
    """A fresh session: upload ``csv`` on the Data page (no schema declared, as a user
    first does), then open the Curves page; returns the page."""
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.add_init_script(script=f"({_LOG_SOCKET})()")
    page.set_default_timeout(600_000)
    page.goto(url + "/data")
    # A fresh server's first page imports everything: slow on a busy machine, not timed.
    heading = page.get_by_role("heading", name="Data", exact=True)
    api.expect(heading).to_be_visible(timeout=600_000)
    page.get_by_text("My own CSV file", exact=True).click()
    page.locator('input[type="file"]').first.set_input_files(str(csv))
    sidebar = page.locator('[data-testid="stSidebar"]')
    api.expect(sidebar.get_by_text(csv.name, exact=False).first).to_be_visible()
    sidebar.get_by_role("link", name="Curves", exact=True).click()
    api.expect(page.get_by_role("button", name="Run sweep")).to_be_visible()
    _idle(page, api)
    _drawn_and_quiet(page, api)
    page.evaluate(_MARK_CLICKS)
    return page


# Resolves at the first idle period of the page's main thread that lasts ≥ 40 ms
# (requestIdleCallback grants at most 50 ms): no task is waiting, nothing is loading.
_QUIET = """() => new Promise((resolve) => {
  const wait = (deadline) => deadline.timeRemaining() >= 40 ? resolve(true)
                                                           : requestIdleCallback(wait);
  requestIdleCallback(wait);
})"""


def _drawn_and_quiet(page, api) -> None:
    """Until the page is as a user sees it before pressing Run sweep: the empty chart's
    axes drawn (the page loads its plotting library for them: about 2 s of the browser's
    CPU on this machine) and the browser idle. Clicking earlier times the library's
    loading, which a user choosing settings never waits for, beside the sweep."""
    api.expect(page.locator('[data-testid="stPlotlyChart"] .js-plotly-plot')).to_have_count(1)
    page.evaluate(_QUIET)


def _idle(page, api) -> None:
    api.expect(page.locator('[data-testid="stStatusWidget"]')).to_have_count(0)


# The same tests run on every change of the page instead of every animation frame: a
# page-side promise that resolves at the DOM mutation that makes ``test`` true. Polling
# on every frame keeps the renderer busy (it queries the DOM ~60 times a second) while
# the server needs both cores; plotly inserts its traces synchronously, so the mutation
# is at most one frame before the paint.
_ON_MUTATION = """([test, arg]) => new Promise((resolve) => {
  const check = new Function('return (' + test + ')')();
  const first = check(arg);
  if (first !== false) { resolve(first); return; }
  const observer = new MutationObserver(() => {
    const t = check(arg);
    if (t !== false) { observer.disconnect(); resolve(t); }
  });
  observer.observe(document.body, {childList: true, subtree: true, characterData: true});
})"""


def _wait(page, test: str, arg, watch: str) -> float:
    """Milliseconds from the click to ``test`` true, watched on every animation frame
    (``raf``) or on every change of the page (``mutation``)."""
    if watch == "mutation":
        return page.evaluate(_ON_MUTATION, [test, arg])
    return page.wait_for_function(test, arg=arg, polling="raf", timeout=600_000).json_value()


def _sweep_once(page, api, watch: str) -> tuple[float, dict]:
    """Press Run sweep with the page's defaults; seconds until its chart is drawn, and
    where they went."""
    page.get_by_role("button", name="Run sweep").click()
    drawn = _wait(page, _CHART_DRAWN, None, watch)
    return drawn / 1000, page.evaluate(_SPLIT, drawn)


def _switch_metric(page, api, metric_name: str, watch: str) -> tuple[float, dict]:
    """Click a metric of the Metric radio; seconds until the figure shows it, and where
    they went."""
    radio = page.locator('[data-testid="stRadio"]').filter(has_text="Metric")
    radio.get_by_text(metric_name, exact=True).click()
    drawn = _wait(page, _Y_TITLE_IS, metric_name, watch)
    return drawn / 1000, page.evaluate(_SPLIT, drawn)


def bench_browser(csv: Path, sweeps: int, switches: int, watch: str = "raf") -> dict:
    """The Curves page in headless Chromium on ``csv`` uploaded: ``sweeps`` default sweeps
    (each in a fresh session, click → first chart drawn) and, after the last one,
    ``switches`` metric switches (click → the new metric's figure drawn). ``watch``: how
    the page looks for the drawn figure (:func:`_wait`)."""
    from tests.browser import CHROMIUM, CHROMIUM_ARGS, playwright_or_skip, streamlit_app

    api = playwright_or_skip()
    log = Path(tempfile.mkdtemp(prefix="bench_app_")) / "streamlit.log"
    out: dict = {"upload": f"{csv.name}, {sum(1 for _ in csv.open()) - 1:,} rows", "watch": watch}
    out["server_log_and_screenshot"] = str(log.parent)
    with streamlit_app(ROOT / "app.py", log) as url, api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            sweep_times, switch_times, loads = [], {}, [os.getloadavg()]
            splits: dict[str, list] = {"sweep": [], "switch": []}
            for _ in range(sweeps):
                page = _open_curves_with_upload(browser, url, csv, api)
                seconds, split = _sweep_once(page, api, watch)
                sweep_times.append(seconds)
                splits["sweep"].append(split)
                loads.append(os.getloadavg())
                _idle(page, api)
                if page.locator('[data-testid="stException"]').count():
                    raise RuntimeError("the Curves page raised an exception")
                if _ < sweeps - 1:
                    page.close()
            out["sweep_caption"] = page.get_by_text("Sweep on ", exact=False).first.inner_text()
            for i in range(switches):
                metric, name = SWITCH_CYCLE[i % len(SWITCH_CYCLE)]
                seconds, split = _switch_metric(page, api, name, watch)
                switch_times.setdefault(metric, []).append(seconds)
                splits["switch"].append(split)
                _idle(page, api)
            loads.append(os.getloadavg())
            page.screenshot(path=str(log.with_suffix(".png")), full_page=True)
        finally:
            browser.close()
    every_switch = [t for times in switch_times.values() for t in times]
    out["default_sweep_click_to_chart"] = stats(sweep_times) | {"all_s": sweep_times}
    if every_switch:
        out["metric_switch_click_to_figure"] = stats(every_switch) | {"by_metric_s": switch_times}
    out["where_the_time_went"] = {
        what: {key: statistics.median(s[key] for s in rows) for key in rows[0]}
        for what, rows in splits.items()
        if rows
    }
    out["load_average_1_5_15"] = loads
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON")
    parser.add_argument(
        "--cli-only",
        action="store_true",
        help="only item 4 (the CLI sweep with and without its references), after a warm-up",
    )
    parser.add_argument(
        "--browser",
        type=Path,
        default=None,
        metavar="CSV",
        help="only the Chromium measures, on this CSV uploaded "
        "(python bench/big_upload.py make /tmp/50k.csv 50000)",
    )
    parser.add_argument("--switches", type=int, default=9, help="metric switches (--browser)")
    parser.add_argument(
        "--watch",
        choices=("raf", "mutation"),
        default="raf",
        help="look for the drawn figure on every animation frame or on every change of "
        "the page (--browser)",
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.browser:
        results = {
            "chromium": bench_browser(args.browser, args.repeats, args.switches, args.watch)
        }
        print(json.dumps(results, indent=2, ensure_ascii=False))
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
        return 0
    frame, schema = make_synth(DATASET, args.rows, seed=0)
    encoded = encode(frame, schema)
    if args.cli_only:
        from dpviz.compiled import kernels

        kernels.get(wait=True)  # loaded before either side is timed
        run_sweep(encoded, schema, SweepGrid(epsilons=EPSILONS[:2]), folds=FOLDS, n_jobs=1)
        results = {
            "load_average_start": os.getloadavg(),
            "cli_sweep_references": bench_cli_references(encoded, schema, args.repeats),
            "load_average_end": os.getloadavg(),
        }
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return 0
    data = PreparedData(f"{DATASET} ({args.rows:,} rows)", frame, schema, "generated", "bench")
    results = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "dataset": f"{DATASET}, {args.rows:,} rows",
        "sweep_20_eps_5_folds": bench_sweeps(encoded, schema, args.repeats),
        "rerender": bench_rerender(data),
        "train_page": bench_train(args.rows, args.repeats),
        "cli_sweep_references": bench_cli_references(encoded, schema, args.repeats),
    }
    print(json.dumps(results, indent=2, ensure_ascii=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
