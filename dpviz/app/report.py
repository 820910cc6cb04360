"""The ε decision report: one self-contained HTML file to keep with the decision.

The file opens without network access: plotly.js is inlined once, there is no
external script, style sheet, font or image, and a Content-Security-Policy forbids the
page from fetching anything. Every piece of user text (names, rationale, approvers,
parameters, the schema) is HTML-escaped.

What the report shares is chosen to be safe to share: the public schema, the
algorithm and its parameters, seeds, the candidates' risk translations (formulas of ε:
membership in or out of the data, the attribute of a person known to be in it, and the
per-record scope, k records → k·ε) and the chosen ε. The record count is left out
unless the caller says it may be disclosed. Utility curves are computed from the raw data
on held-out folds: NOT private, and the report says so beside them.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from dpviz.figures.common import MAJORITY_LABEL
from dpviz.privacy.ledger import PrivacyLedger
from dpviz.privacy.mechanisms import MECHANISMS
from dpviz.privacy.risk import (
    METRIC_NAMES,
    EpsilonChoice,
    attribute_posterior_bound,
    risk_sentences,
    risk_table,
)
from dpviz.privacy.schema import Schema

# Only inline scripts and styles; nothing may be fetched (connect, images, fonts).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
)
# The plotly logo in the mode bar links to plotly's site: turned off.
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
WITHHELD = "[withheld]"
# The report's manifest (as :mod:`dpviz.models.files.manifest` is the model file's):
# each section holds public input (the schema as declared, the settings and seeds, the
# people's own words, formulas of ε), the ledger's words (post-processing of booked
# releases), or scores on held-out records, which are NOT private, say so in the section,
# and are for the people deciding, not for publication.
SECTION_PUBLIC, SECTION_LEDGER, SECTION_NOT_PRIVATE = "public", "ledger", "NOT private"
REPORT_SECTIONS = {
    "Decision": SECTION_PUBLIC,
    "Candidates compared": SECTION_NOT_PRIVATE,
    "Curves": SECTION_NOT_PRIVATE,
    "Other DP libraries on the same folds": SECTION_NOT_PRIVATE,
    "Algorithm and parameters": SECTION_PUBLIC,
    "Public seeds": SECTION_PUBLIC,
    "Privacy ledger": SECTION_LEDGER,
    "Releases of this session": SECTION_LEDGER,
    "Dataset (what is safe to share)": SECTION_PUBLIC,
}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em;
     margin-top: 2em; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.meta { color: #555; }
.chosen { font-size: 1.6em; font-weight: bold; }
.banner { border: 3px solid #D55E00; background: #fff3ec; padding: 0.8em 1em; margin: 1em 0; }
.note { color: #555; font-size: 0.92em; }
.userText { white-space: pre-wrap; border-left: 4px solid #0072B2; padding: 0.3em 0.8em;
            background: #f6f9fc; }
tr.chosenRow td { background: #eaf3fa; font-weight: bold; }
"""


def dpviz_version() -> str:
    """The installed dpviz version (the package's own number when not installed)."""
    try:
        return version("dpviz")
    except PackageNotFoundError:
        from dpviz import __version__

        return __version__


def _e(value: Any) -> str:
    """HTML-escape any value's text, quotes included."""
    return html.escape(str(value), quote=True)


def _eps(value: float | None) -> str:
    if value is None:
        return "none"
    return "∞" if math.isinf(value) else f"{value:g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], classes=None) -> str:
    """An HTML table; cells are given already escaped."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if classes and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(row) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _td(value: Any, num: bool = False) -> str:
    return f'<td class="num">{_e(value)}</td>' if num else f"<td>{_e(value)}</td>"


# --- record count redaction ---------------------------------------------------------------


def _count_pattern(n_records: int) -> re.Pattern:
    forms = {str(n_records), f"{n_records:,}", f"{n_records:_}".replace("_", " ")}
    alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<![\d.,]){alternatives}(?![\d]|[.,]\d)")


def redact_figure(fig: go.Figure, n_records: int) -> go.Figure:
    """A copy of ``fig`` whose titles, notes, names and hover texts no longer state
    ``n_records`` (replaced by "[withheld]"). Data values are left as they are."""
    pattern = _count_pattern(int(n_records))
    out = go.Figure(fig)

    def clean(text):
        return pattern.sub(WITHHELD, text) if isinstance(text, str) else text

    if out.layout.title and out.layout.title.text:
        out.layout.title.text = clean(out.layout.title.text)
    for note in out.layout.annotations or ():
        note.text = clean(note.text)
    for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2"):
        ax = getattr(out.layout, axis, None)
        if ax is not None and ax.title and ax.title.text:
            ax.title.text = clean(ax.title.text)
    for trace in out.data:
        for attr in ("name", "hovertemplate"):
            if hasattr(trace, attr) and isinstance(getattr(trace, attr), str):
                setattr(trace, attr, clean(getattr(trace, attr)))
    return out


# --- sections -----------------------------------------------------------------------------


def _schema_section(
    schema: Schema, n_records: int | None, disclose: bool, dataset_name: str
) -> str:
    parts = ["<h2>Dataset (what is safe to share)</h2>"]
    if dataset_name and n_records is not None and not disclose:
        # Names such as "demo.csv (2,000 rows)" state the count the user chose to withhold.
        dataset_name = _count_pattern(int(n_records)).sub(WITHHELD, dataset_name)
    if dataset_name:
        parts.append(f"<p>Dataset: <strong>{_e(dataset_name)}</strong></p>")
    if n_records is not None and disclose:
        parts.append(f"<p>Records used: {n_records:,} (disclosed by decision of the user).</p>")
    else:
        parts.append(
            "<p>Record count: not disclosed. The number of records is itself a fact about "
            "the data; it appears here only when the data owner marks it as disclosable.</p>"
        )
    if schema.inferred:
        parts.append(
            '<div class="banner"><strong>The schema was inferred from the data.</strong> The '
            "class list and feature ranges were read from the records without noise, so the "
            "model carries NO differential-privacy guarantee, and the ranges are records' "
            "own values: they are withheld here.</div>"
        )
    if schema.declaration and not schema.inferred:
        # Who declared the schema public, in a fixed sentence (nothing read from the
        # records: which domains equal the data's own values is shown on screen only).
        parts.append(
            '<div class="banner declaration"><strong>Schema declaration.</strong> '
            f"{_e(schema.declaration)}</div>"
        )
    if schema.inferred:
        # The class names were read from the records: they may be the records' own
        # values (a name, an e-mail address), so only their number is shown.
        parts.append(
            f"<p>Label column: <strong>{_e(schema.label)}</strong>; "
            f"{len(schema.classes)} classes (names withheld: inferred from the data)</p>"
        )
    else:
        parts.append(
            f"<p>Label column: <strong>{_e(schema.label)}</strong>; classes: "
            + ", ".join(f"<code>{_e(c)}</code>" for c in schema.classes)
            + "</p>"
        )
    rows = []
    for f in schema.features:
        if schema.inferred:
            domain = "(withheld: inferred from the data)"
        elif f.kind == "continuous":
            domain = f"[{f.low:g}, {f.high:g}]"
        else:
            domain = ", ".join(f.values)
        rows.append([_td(f.name), _td(f.kind), _td(domain)])
    parts.append(_table(["feature", "type", "public domain"], rows))
    parts.append(
        '<p class="note">The schema is public knowledge by assumption: it was supplied by '
        "the user, not read from the records.</p>"
        if not schema.inferred and not schema.declaration
        else '<p class="note">The schema is public knowledge by the declaration above: '
        "dpviz cannot check where a domain came from.</p>"
        if not schema.inferred
        else ""
    )
    return "".join(parts)


def _candidate_frame(
    candidates: Sequence[float] | pd.DataFrame, prior: float, chosen: float | None
) -> pd.DataFrame:
    """The candidates as a risk table (the chosen ε added to a plain list)."""
    if isinstance(candidates, pd.DataFrame):
        table = candidates.copy()
        if "epsilon" in table and "attribute_posterior_bound" not in table:
            # A table from before the attribute bound: add it (a formula of ε and p).
            p = float(table["prior"].iloc[0]) if "prior" in table and len(table) else prior
            table["attribute_posterior_bound"] = [
                attribute_posterior_bound(p, float(e)) for e in table["epsilon"]
            ]
        return table
    values = [float(v) for v in candidates]
    if chosen is not None and not any(math.isclose(v, chosen) for v in values):
        values.append(chosen)
    return risk_table(sorted(values), prior) if values else pd.DataFrame()


def _candidates_section(
    table: pd.DataFrame,
    chosen: float | None,
    private: bool,
    metric: str | None,
    majority: float | None = None,
) -> str:
    if table.empty:
        return ""
    prior = float(table["prior"].iloc[0]) if "prior" in table else 0.5
    mean_col = f"{metric}_mean" if metric else None
    has_utility = mean_col is not None and mean_col in table.columns
    baseline_col = f"majority_{metric}_mean"
    if has_utility and majority is None and baseline_col in table.columns:
        found = table[baseline_col].dropna()
        majority = float(found.iloc[0]) if len(found) else None
    has_baseline = has_utility and majority is not None
    header = ["ε"]
    if has_utility:
        header.append(f"{_e(METRIC_NAMES.get(metric, metric))} (mean ± std, NOT private)")
    if has_baseline:
        header.append(f"{_e(MAJORITY_LABEL)}: always the majority class (NOT private)")
    header += [
        "odds that a person is in the data can change by at most ×",
        "best membership advantage",
        f"attacker's belief that a person is in the data at most (prior {prior:.0%})",
        "lowest equal error rate of a membership attacker",
        "attacker's belief about an attribute of a person known to be in the data at most "
        f"(prior {prior:.0%})",
    ]
    rows, classes = [], []
    for row in table.itertuples(index=False):
        eps = float(row.epsilon)
        cells = [_td(_eps(eps), num=True)]
        if has_utility:
            mean = getattr(row, mean_col)
            std = getattr(row, f"{metric}_std")
            text = "not swept" if pd.isna(mean) else f"{100 * mean:.1f}% ± {100 * std:.1f}"
            share = getattr(row, "one_class_share", math.nan)
            if not pd.isna(mean) and not pd.isna(share) and share > 0:
                where = "every fold" if share >= 1 else f"{100 * share:.0f}% of the folds"
                text += f" (predicts one class only, in {where})"
            cells.append(_td(text, num=True))
        if has_baseline:
            cells.append(_td(f"{100 * majority:.1f}%", num=True))
        if private:
            cells += [
                _td(f"{row.odds_ratio_bound:,.3g}", num=True),
                _td(f"{100 * row.membership_advantage:.1f} points", num=True),
                _td(f"{100 * row.posterior_bound:.1f}%", num=True),
                _td(f"{100 * row.balanced_error_rate:.1f}%", num=True),
                _td(f"{100 * row.attribute_posterior_bound:.1f}%", num=True),
            ]
        else:
            cells += [_td("no guarantee (NOT DP)")] * 5
        rows.append(cells)
        classes.append("chosenRow" if chosen is not None and math.isclose(eps, chosen) else "")
    parts = ["<h2>Candidates compared</h2>", _table(header, rows, classes)]
    if has_baseline:
        parts.append(
            '<p class="note">The trivial baseline always answers the training folds\' '
            "majority class, scored on the same held-out folds: a model at or below it has "
            "learnt nothing the class shares do not already say, whatever its ε.</p>"
        )
    if private:
        parts.append("<ul>")
        for eps in table["epsilon"]:
            sentences = risk_sentences(float(eps), prior)
            parts.append(
                f"<li><strong>ε = {_e(_eps(float(eps)))}</strong><ul>"
                + "".join(f"<li>{_e(s)}</li>" for s in sentences.values())
                + "</ul></li>"
            )
        parts.append("</ul>")
    parts.append(
        '<p class="note">Risk columns are formulas of ε that hold for any ε-differentially '
        "private model. Membership (is a person in or out of the data?): the odds-ratio "
        "bound e^ε, the best membership-inference advantage (e^ε − 1)/(e^ε + 1), the "
        "posterior bound p·e^ε/(1 − p + p·e^ε), and the equal-error point 1/(1 + e^ε) of the "
        "hypothesis-testing region. Attribute of a person known to be in the data (what her "
        "record says): changing a record is removing it and adding another, two neighbour "
        "steps, so the odds can move by up to e^(2ε), the posterior bound is "
        "p·e^(2ε)/(1 − p + p·e^(2ε)) and the best attribute-inference advantage "
        "1 − e^(−ε). Every number is per record: it assumes one record per person, and a "
        "person with k records in the data is protected only at k·ε.</p>"
    )
    return "".join(parts)


def _peers_section(peers: pd.DataFrame | None) -> str:
    """The other DP libraries' scores at the candidate ε values (``dpviz.app.peers.table``:
    one row per library and ε, its guarantee in words), NOT private."""
    if peers is None or peers.empty:
        return ""
    rows = [[_td(v, num=c in ("ε",)) for c, v in row.items()] for _, row in peers.iterrows()]
    return (
        "<h2>Other DP libraries on the same folds</h2>"
        '<p class="note">Other libraries\' models, fitted on the same cross-validation folds '
        "at the same ε values with the schema's public bounds, for comparison. Their scores "
        "are from held-out folds of the raw data: NOT private, for the people deciding. Each "
        "guarantee is the library's own claim for one fit; an (ε, δ) guarantee (DP-EBM) is "
        "weaker than pure ε-DP at the same ε.</p>" + _table(list(peers.columns), rows)
    )


def _figures_html(figures, n_records: int | None, disclose: bool) -> str:
    if not figures:
        return ""
    items = list(figures.items()) if isinstance(figures, Mapping) else [(None, f) for f in figures]
    parts = [
        "<h2>Curves</h2>",
        '<p class="note">Utility curves are computed on held-out folds of the raw data: '
        "NOT private, for the people deciding, not for publication.</p>",
    ]
    first = True
    for caption, fig in items:
        if n_records is not None and not disclose:
            fig = redact_figure(fig, n_records)
        if caption:
            parts.append(f"<h3>{_e(caption)}</h3>")
        parts.append(
            fig.to_html(
                full_html=False,
                # plotly.js goes in once, inline, with the first figure: no CDN.
                include_plotlyjs=first,
                include_mathjax=False,
                config=PLOTLY_CONFIG,
            )
        )
        first = False
    return "".join(parts)


def _parameters_section(
    algorithm: str, parameters: Mapping, seeds: Mapping, private: bool = True
) -> str:
    rows = [[_td("algorithm"), _td(algorithm)]]
    rows += [[_td(k), _td(_format_value(v))] for k, v in parameters.items()]
    parts = ["<h2>Algorithm and parameters</h2>", _table(["parameter", "value"], rows)]
    mech = parameters.get("mechanism")
    if isinstance(mech, str) and mech in MECHANISMS:
        m = MECHANISMS[mech]
        # The badge follows the ledger: a proven mechanism with NO guarantee here says so.
        badge = m.badge if private or not m.private else "ε-DP mechanism, NOT DP here: see ledger"
        parts.append(f"<p>Leaf mechanism <code>{_e(mech)}</code> ({_e(badge)}): ")
        parts.append(f"{_e(m.description)}</p>")
    parts.append("<h2>Public seeds</h2>")
    if seeds:
        parts.append(
            _table(["seed", "value"], [[_td(k), _td(_format_value(v))] for k, v in seeds.items()])
        )
    parts.append(
        '<p class="note">These seeds are public: they fix the folds and the tree structure, '
        "never the noise. Every model's noise comes from a fresh secret key that is not "
        "stored, so a rerun gives the same folds and trees with new noise: curves agree "
        "within their spread, not digit for digit.</p>"
    )
    return "".join(parts)


def _releases_section(releases: Sequence[Mapping[str, Any]]) -> str:
    """The session's releases (the ε odometer), from their ledgers alone."""

    def eps(value):
        return "NOT private" if value is None else f"{value:g}"

    rows = [
        [
            _td(r["number"], num=True),
            _td(r["what"]),
            _td(r["file"]),
            _td(r["time"]),
            _td(eps(r["epsilon"]), num=True),
            _td("voids the guarantee" if r["adds"] is None else f"{r['adds']:g}", num=True),
            _td(
                "no guarantee" if r["session_epsilon"] is None else f"{r['session_epsilon']:g}",
                num=True,
            ),
        ]
        for r in releases
    ]
    header = ["#", "Release", "File", "When (UTC)", "ε of the file", "Adds", "Session ε"]
    return (
        "<h2>Releases of this session</h2><p>Every file downloaded from this dataset in "
        "the dpviz session, in order, with its own ledger's ε. They compose sequentially; "
        "the files of one model (a model and its relabels) cost the largest of their "
        "ledgers, which already book the earlier releases. What was only shown on screen "
        "is not a release.</p>" + _table(header, rows)
    )


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return _eps(value)
    if isinstance(value, list | tuple):
        return ", ".join(_format_value(v) for v in value)
    return str(value)


def _is_private(ledger, choice, parameters) -> bool:
    if isinstance(ledger, PrivacyLedger):
        return ledger.private
    if choice is not None:
        return choice.private
    mech = parameters.get("mechanism")
    if isinstance(mech, str) and mech in MECHANISMS:
        return MECHANISMS[mech].private
    return True


# --- the report ---------------------------------------------------------------------------


def decision_report(
    *,
    schema: Schema,
    algorithm: str,
    parameters: Mapping[str, Any],
    seeds: Mapping[str, Any],
    chosen_epsilon: float | None,
    rationale: str = "",
    approvers: str = "",
    candidates: Sequence[float] | pd.DataFrame = (),
    prior: float = 0.5,
    choice: EpsilonChoice | None = None,
    ledger: PrivacyLedger | str | None = None,
    figures: Mapping[str, go.Figure] | Sequence[go.Figure] | None = None,
    n_records: int | None = None,
    disclose_record_count: bool = False,
    dataset_name: str = "",
    title: str = "dpviz ε decision report",
    created: datetime | None = None,
    majority: float | None = None,
    peers: pd.DataFrame | None = None,
    releases: Sequence[Mapping[str, Any]] = (),
) -> str:
    """A self-contained HTML decision report, as one string.

    Parameters
    ----------
    schema : Schema
        The public schema (shared as is; domains withheld when it was inferred).
    algorithm : str
        Algorithm id (e.g. ``"fletcher_islam"``).
    parameters : mapping
        The configuration: mechanism, trees, depth rule, data split, folds, ….
    seeds : mapping
        Every seed used (model, folds, draws), to reproduce the runs.
    chosen_epsilon : float or None
        The agreed total ε (None: no decision yet; the report says so).
    rationale, approvers : str
        Free text from the people deciding (escaped, line breaks kept).
    candidates : list of float or DataFrame
        Candidate ε values, or a :func:`dpviz.privacy.risk.candidate_table`; the chosen ε is
        added to a plain list when missing.
    prior : float, default=0.5
        The prior used for the posterior bounds (membership, and the attribute of a
        person known to be in the data) of a plain candidate list.
    choice : EpsilonChoice, optional
        The :func:`dpviz.privacy.risk.smallest_epsilon` answer: its reason is quoted and, when
        ``figures`` is None, its curve is drawn.
    ledger : PrivacyLedger or str, optional
        The chosen configuration's ledger (``describe()`` is quoted) or its text.
    figures : mapping of caption to figure, or list of figures, optional
        Plotly figures to inline. Default: the ε-choice curve (when ``choice`` is given)
        and the hypothesis-testing region of the candidates.
    n_records : int, optional
    disclose_record_count : bool, default=False
        Print ``n_records`` only when True. When False the count is also removed from
        the figures' titles, notes, names and hover texts.
    dataset_name, title : str
    created : datetime, optional
        Defaults to now (UTC).
    majority : float, optional
        The trivial baseline's score of the chosen metric (always answering the
        majority class, a fraction; NOT private): a column of the candidates table and
        a labelled line on the default utility curve. Default: the table's
        ``majority_<metric>_mean`` column when it has one.
    peers : DataFrame, optional
        Other DP libraries' scores on the same folds (``dpviz.app.peers.table``: one row
        per library and ε, with its guarantee; NOT private), shown in their own section.
    releases : list of mapping, optional
        Every file released from the dataset in this session, this report last
        (:meth:`dpviz.privacy.session_ledger.SessionLedger.rows`): listed with each file's
        ε, what it added and the running total (post-processing of their ledgers).

    Returns
    -------
    str
        A complete HTML document, UTF-8, that opens offline.

    Notes
    -----
    Shares public facts (schema, parameters, formulas of ε) and NOT-private utility
    scores computed on held-out data, labelled as such; the record count only when
    allowed. It never includes records, leaf counts or other diagnostics.
    """
    from dpviz.figures.curves import add_majority_line
    from dpviz.figures.teach import epsilon_choice_figure, hypothesis_testing_figure

    if not isinstance(schema, Schema):
        raise ValueError("schema must be a dpviz Schema (the public schema of the data)")
    if n_records is not None and (
        isinstance(n_records, bool) or not isinstance(n_records, int) or n_records < 0
    ):
        raise ValueError(f"n_records must be a whole number ≥ 0, got {n_records!r}")
    if chosen_epsilon is not None:
        chosen_epsilon = float(chosen_epsilon)
        if not math.isfinite(chosen_epsilon) or chosen_epsilon <= 0:
            raise ValueError(f"the chosen ε must be a positive number, got {chosen_epsilon!r}")
    created = created or datetime.now(UTC)
    private = _is_private(ledger, choice, parameters)
    table = _candidate_frame(candidates, prior, chosen_epsilon)
    metric = choice.metric if choice is not None else None
    if metric is None:
        metric = next((m for m in METRIC_NAMES if f"{m}_mean" in table.columns), None)
    if majority is None and f"majority_{metric}_mean" in table.columns:
        found = table[f"majority_{metric}_mean"].dropna()
        majority = float(found.iloc[0]) if len(found) else None
    if figures is None:
        figures = {}
        if choice is not None:
            utility = epsilon_choice_figure(choice, chosen=chosen_epsilon)
            xs = choice.curve["epsilon"].to_numpy(dtype=float)
            if majority is not None and len(xs):
                name = METRIC_NAMES.get(choice.metric, choice.metric)
                add_majority_line(utility, majority, [xs.min(), xs.max()], name)
            figures["Utility against ε"] = utility
        eps_for_region = list(table["epsilon"]) if not table.empty else []
        if private and eps_for_region:
            figures["What a membership attacker cannot do at each candidate ε"] = (
                hypothesis_testing_figure(eps_for_region[:5])
            )

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="meta">Created {_e(created.strftime("%Y-%m-%d %H:%M %Z").strip())} with '
        f"dpviz {_e(dpviz_version())}. This file is self-contained: it needs no internet "
        "connection.</p>",
    ]
    if not private:
        parts.append(
            '<div class="banner"><strong>NOT DIFFERENTIALLY PRIVATE.</strong> The chosen '
            "configuration has no privacy proof (a mechanism without a proof, or a schema "
            "read from the data). Its ε promises nothing, and none of the risk translations "
            "below applies.</div>"
        )

    # The decision.
    parts.append("<h2>Decision</h2>")
    if chosen_epsilon is None:
        parts.append('<p class="chosen">No ε has been chosen yet.</p>')
    else:
        parts.append(f'<p class="chosen">Chosen ε = {_e(_eps(chosen_epsilon))}</p>')
        if private:
            parts.append("<ul>")
            parts += [f"<li>{_e(s)}</li>" for s in risk_sentences(chosen_epsilon, prior).values()]
            parts.append("</ul>")
    if choice is not None:
        parts.append(
            f"<p>What dpviz suggested (acceptable loss {choice.acceptable_loss:g} points of "
            f"{_e(METRIC_NAMES.get(choice.metric, choice.metric))}): {_e(choice.reason)}</p>"
        )
    parts.append("<h3>Rationale</h3>")
    parts.append(f'<div class="userText">{_e(rationale) or "(none given)"}</div>')
    parts.append("<h3>Approved by</h3>")
    parts.append(f'<div class="userText">{_e(approvers) or "(none given)"}</div>')

    parts.append(_candidates_section(table, chosen_epsilon, private, metric, majority))
    parts.append(_peers_section(peers))
    parts.append(_figures_html(figures, n_records, disclose_record_count))
    parts.append(_parameters_section(algorithm, parameters, seeds, private))

    parts.append("<h2>Privacy ledger</h2>")
    if ledger is None:
        parts.append("<p>No ledger was recorded.</p>")
    else:
        text = ledger.describe() if isinstance(ledger, PrivacyLedger) else str(ledger)
        parts.append(f"<p>{_e(text)}</p>")
        if schema.declaration and not schema.inferred and schema.declaration not in text:
            parts.append(f"<p>Schema: {_e(schema.declaration)}</p>")

    if releases:
        parts.append(_releases_section(releases))
    parts.append(_schema_section(schema, n_records, disclose_record_count, dataset_name))
    parts.append(
        f'<p class="note">Generated by dpviz {_e(dpviz_version())} on '
        f"{_e(created.strftime('%Y-%m-%d'))}. Neighbouring datasets differ by adding or "
        "removing one record; pure ε-differential privacy (δ = 0). The guarantee is per "
        "record: one record per person is assumed, and a person with k records gets k·ε.</p>"
    )
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p)
