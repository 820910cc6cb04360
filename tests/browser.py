"""What the browser tests share: Debian's Chromium, and the app served on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
# How long a page waits for an element, a redraw or a download before the test fails: a
# guard against a hung app, not a timing assertion. Streamlit redraws after each widget
# change, and at a load average of 8 or more on 2 cores a rerun (a training, a sweep) can
# take minutes; a healthy app answers as soon as it is done.
WAIT_MS = 300_000


def playwright_or_skip():
    """playwright's sync API, or a skip that says what is missing."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium to run the browser test")
    api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright Python package is not installed"
    )
    # Playwright's 5 s default for assertions is far shorter than a rerun on a busy
    # machine (see WAIT_MS).
    api.expect.set_options(timeout=WAIT_MS)
    return api


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_server(url: str, server: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"streamlit exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"streamlit did not answer at {url} in time")


@contextmanager
def streamlit_app(app: Path, log_path: Path, port: int | None = None) -> Iterator[str]:
    """``streamlit run app`` on ``port`` (default: a free one) of 127.0.0.1; yields its
    URL; always stopped."""
    port = free_port() if port is None else port
    log = log_path.open("w")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "0"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            app.name,
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=app.parent,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        try:
            # Generous: a busy CI machine can take long to import streamlit; waiting is not a
            # timing assertion (a healthy server answers as soon as it is up).
            wait_for_server(url, process, time.monotonic() + 180)
        except (RuntimeError, TimeoutError) as exc:
            log.flush()
            pytest.fail(f"{exc}\n{log_path.read_text()[-2000:]}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()


def download_from(page, api, button, attempts: int = 3):
    """Click a download button once the app is idle and return the finished download. A
    click on the button of a run being replaced starts none, and a download whose file a
    new run replaced is cancelled ("Download.save_as: canceled"; both seen on a busy
    machine), so wait for the rerun to end and try again, a few times at most."""
    running = page.locator('[data-testid="stStatusWidget"]')
    for _ in range(attempts):
        api.expect(running).to_have_count(0, timeout=WAIT_MS)
        api.expect(button).to_be_enabled()
        try:
            # Shorter than WAIT_MS: a click that started no download is retried.
            with page.expect_download(timeout=60_000) as info:
                button.click()
        except api.TimeoutError:
            continue
        download = info.value
        if download.failure() is None:  # waits for the download to end
            return download
    raise AssertionError(f"{attempts} clicks on {button} gave no finished download")


@contextmanager
def browser_page(sync_api, height: int) -> Iterator:
    """A page of headless Chromium, 1400 px wide, that waits up to WAIT_MS for anything;
    the browser is always closed."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()
