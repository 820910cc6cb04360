"""Data page: a bundled demo or an uploaded CSV (previewed as read), the label (guessed:
check it), the columns to keep (IDs and free text unticked), the public schema with its
missing-value rules and declaration, and a report of missing and out-of-domain values.
Logic: dpviz.app.data."""

from __future__ import annotations

import dataclasses

import streamlit as st

from dpviz.app import data as app_data
from dpviz.app import support as support
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.evaluation.demos import DEFAULT_DEMO, DEMOS

DEMO, UPLOAD = "A bundled demo dataset", "My own CSV file"
K_SOURCE = KEEP_PREFIX + "data.source"
K_DEMO = KEEP_PREFIX + "data.demo"
K_REPORT = "data.report"  # (fingerprint, DataReport) of the current dataset


# Opened before app.py ran in this session (a fresh server's first deep link): let app.py
# draw its frame first; it comes back to this page.
if AppState(st.session_state).needs_frame("pages/data.py"):
    st.switch_page("app.py")

state = AppState(st.session_state)
demo = st.cache_data(show_spinner="Loading the demo dataset…")(support.prepare_demo)


def use(prepared: support.PreparedData) -> None:
    dropped = state.set_data(prepared)
    if dropped:
        st.info(
            f"The dataset changed, so {' and '.join(dropped)} were cleared: they described "
            "the previous data."
        )


def keeps_working() -> None:
    if state.data is not None:
        st.caption(f"The app keeps working on the current dataset: {state.data.name}.")


def choose_demo() -> None:
    current = state.data
    st.session_state.setdefault(
        K_DEMO,
        current.frame_id.removeprefix("demo:")
        if current is not None and current.source == "demo"
        else DEFAULT_DEMO,
    )
    demo_id = st.selectbox(
        "Demo dataset", list(DEMOS), format_func=lambda d: DEMOS[d].title, key=K_DEMO
    )
    st.caption(DEMOS[demo_id].description)
    use(demo(demo_id))


def read_csv_upload() -> app_data.UploadWorkspace | None:
    limit = st.get_option("server.maxUploadSize")
    file = st.file_uploader(
        f"CSV file with a header row — at most {limit} MB",
        type=["csv", "tsv", "txt"],
        key="data.csv",
        help="The limit is server.maxUploadSize in .streamlit/config.toml.",
    )
    workspace = state.upload
    if file is not None and (workspace is None or workspace.file_id != file.file_id):
        bar = st.progress(0.0, text=f"Reading {file.name}…")
        try:
            upload = app_data.read_upload(
                file.name, file.getvalue(), lambda f, m: bar.progress(min(1.0, f), text=m)
            )
        except ValueError as exc:
            bar.empty()
            st.error(str(exc))
            keeps_working()
            return None
        bar.empty()
        workspace = app_data.UploadWorkspace(upload, file_id=file.file_id)
        state.set_upload(workspace)
    if workspace is None:
        st.info("Upload a CSV file: one row per record, a header row, a label column.")
        keeps_working()
        return None
    if file is None:
        st.caption(
            f"Using your upload {workspace.upload.name}; upload another file to replace it."
        )
    return workspace


def read_schema_upload(workspace: app_data.UploadWorkspace, label_key: str) -> None:
    file = st.file_uploader(
        "Public schema JSON (optional, recommended)",
        type=["json"],
        key="data.schema",
        help="Label, class list and every feature's domain, written from public knowledge "
        "(`python -m dpviz info --schema-out` drafts one: check it before trusting it).",
    )
    if file is not None and file.file_id != workspace.schema_file_id:
        try:
            schema = support.read_uploaded_schema(file.getvalue())
        except ValueError as exc:
            st.error(f"Could not read the schema {file.name}: {exc}")
            return
        workspace.schema_file, workspace.schema_name = schema, file.name
        workspace.schema_file_id = file.file_id
        if schema.label in workspace.upload.frame.columns:
            st.session_state[label_key] = schema.label
    if workspace.schema_file is not None:
        left, right = st.columns([4, 1])
        left.caption(f"Schema file in use: {workspace.schema_name}")
        if right.button("Forget it", key="data.forget_schema"):
            workspace.schema_file, workspace.schema_name, workspace.schema_file_id = None, "", ""
            st.rerun()


def edit_schema(workspace, label: str, base, frame) -> None:
    """The editable schema table; edits apply on submit (one rerun, not one per cell)."""
    edits, classes = workspace.applied_edits(label)
    table = edits if edits is not None else app_data.schema_table(base, frame)
    classes = classes if classes is not None else ", ".join(base.classes)
    with st.expander("Feature types and public domains (edit)", expanded=False):
        st.caption(
            "Cells prefilled from the file were read off the records. Replace them with "
            "public bounds, or leave them and accept that the guarantee is void. A blank "
            "min/max or value list is filled from the data (inferred)."
        )
        with st.form(f"data.schema_form.{workspace.upload.frame_id}.{label}"):
            edited = st.data_editor(
                table,
                hide_index=True,
                disabled=["feature"],
                column_config={
                    "use": st.column_config.CheckboxColumn("use", width="small"),
                    "type": st.column_config.SelectboxColumn(
                        "type", options=list(app_data.KINDS), required=True
                    ),
                    "min": st.column_config.NumberColumn("min", format="%g"),
                    "max": st.column_config.NumberColumn("max", format="%g"),
                    "values": st.column_config.TextColumn("values (comma-separated)"),
                },
                key=f"data.editor.{workspace.upload.frame_id}.{label}.{workspace.edit_version}",
            )
            new_classes = st.text_input("Class list (comma-separated, public)", value=classes)
            if st.form_submit_button("Apply schema changes"):
                workspace.edits, workspace.classes = edited, new_classes
                workspace.edits_for = (label, workspace.schema_file_id)
                workspace.edit_version += 1
                st.rerun()


def choose_columns(workspace, label: str) -> None:
    """Keep or drop each column BEFORE anything is validated; IDs and free text are
    dropped by default, with the reason."""
    upload = workspace.upload
    drops = workspace.drops(label)
    table = app_data.column_table(upload.frame, label, drops, workspace.suggestions(label))
    options = table["column"].tolist()
    st.markdown("**Columns** — untick what the model must not use")
    chosen = st.multiselect(
        "Leave out these columns",
        options,
        default=[c for c in drops if c in options],
        key=f"data.drop.{upload.frame_id}.{label}",
        help="Identifier columns (row numbers, names) and free text are left out by "
        "default: a tree that splits on them learns nothing that generalises.",
    )
    if set(chosen) != set(drops):
        workspace.keep = {c: c not in chosen for c in options}
    table["keep"] = ~table["column"].isin(chosen)
    st.dataframe(table, hide_index=True, height=min(36 * (len(table) + 1), 300))
    st.caption("Suggestions and counts read the raw records: for you only, not private.")


def offer_numbers(workspace, frame) -> None:
    """Columns that would become discrete although they hold numbers: say why, offer
    the fix."""
    for column, why in app_data.suspects(frame, workspace.numbers).items():
        st.warning(why, icon="⚠️")
        if st.button(f"Read {column!r} as numbers", key=f"data.numbers.{column}"):
            workspace.numbers = (*workspace.numbers, column)
            st.rerun()


def choose_missing(frame, label: str, schema, frame_id: str) -> list[str]:
    """Per continuous feature with missing values: drop those rows, or send the missing
    value to the lower branch (a public rule, applied the same in training and
    prediction). Returns the features that take the lower branch."""
    with_missing = [f.name for f in schema.continuous if frame[f.name].isna().any()]
    # A schema file's rule for a feature with no missing cells here still holds.
    kept = [f.name for f in schema.continuous if f.missing == "low" and f.name not in with_missing]
    if not with_missing:
        return kept
    st.markdown("**Missing values**")
    st.caption(app_data.MISSING_HELP)
    default = [f.name for f in schema.continuous if f.missing == "low" and f.name in with_missing]
    chosen = st.multiselect(
        "Keep rows with a missing value of these features (missing → lower branch)",
        with_missing,
        default=default,
        key=f"{KEEP_PREFIX}data.missing.{frame_id}.{label}",
    )
    return [*chosen, *kept]


def failed(message: str, columns) -> None:
    """A choice that cannot be used: say why and clear the previous upload's dataset
    (it must not silently stay in use)."""
    st.error(f"Cannot use this data: {app_data.column_hint(message, columns)}")
    if state.data is not None and state.data.source == "upload":
        state.clear_data()
        st.warning(
            "No dataset is in use now: the previous choice for this upload was cleared. "
            "Fix the choice above (label, columns or schema) to continue."
        )
    else:
        keeps_working()


def choose_upload() -> None:
    workspace = read_csv_upload()
    if workspace is None:
        return
    upload = workspace.upload
    if upload.header_warning:
        st.warning(upload.header_warning, icon="⚠️")
    st.markdown(f"**Your file** · {upload.name} · {len(upload.frame):,} rows")
    st.dataframe(upload.frame.head(50), height=200)
    for note in upload.notes:
        st.info(f"Reading the file: {note}.")
    columns = [str(c) for c in upload.frame.columns]
    label_key = f"{KEEP_PREFIX}data.label.{upload.frame_id}"
    read_schema_upload(workspace, label_key)
    if st.session_state.get(label_key) not in columns:
        st.session_state[label_key] = support.guess_label(
            upload.frame, list(app_data.suggest_drops(upload.frame))
        )
    label = st.selectbox(
        "Label column (what to predict)",
        columns,
        key=label_key,
        help="Guessed from the column names and the number of distinct values.",
    )
    st.caption("The label was guessed — check it: it should be the column the model predicts.")
    choose_columns(workspace, label)
    frame = app_data.working_frame(upload, workspace, label)
    offer_numbers(workspace, frame)
    try:
        base = app_data.choose_schema(
            frame,
            label,
            schema_file=workspace.schema_file,
            schema_name=workspace.schema_name,
        ).schema
        edit_schema(workspace, label, base, frame)
        edits, classes = workspace.applied_edits(label)
        settings = dict(
            schema_file=workspace.schema_file,
            schema_name=workspace.schema_name,
            edits=edits,
            classes=classes,
        )
        choice = app_data.choose_schema(frame, label, **settings)
        lower = choose_missing(frame, label, choice.schema, upload.frame_id)
        if not choice.public or edits is not None:
            prompt = app_data.declaration_prompt(
                choice.schema,
                frame,
                choice.filled,
                lists=workspace.schema_file is None and edits is None,
            )
            if st.checkbox(prompt, key=f"{KEEP_PREFIX}data.declare.{upload.frame_id}"):
                choice = app_data.choose_schema(frame, label, **settings, declared_public=True)
        choice = dataclasses.replace(
            choice, schema=app_data.with_missing_rule(choice.schema, lower)
        )
    except ValueError as exc:
        failed(str(exc), columns)
        return
    use(app_data.prepare(upload, choice, workspace))
    for warning in choice.warnings:
        st.warning(warning, icon="⚠️")


def show_current(upload_mode: bool) -> None:
    data = state.data
    if data is None or (upload_mode and data.source != "upload"):
        # The upload page never previews the demo: the upload's own preview is above.
        return
    schema = data.schema
    st.subheader(f"Current dataset · {data.name}")
    (st.info if data.schema_public else st.warning)(
        data.schema_note, icon=None if data.schema_public else "⚠️"
    )
    st.markdown(
        f"{len(data.frame):,} rows · label `{schema.label}` with classes "
        f"{', '.join(f'`{c}`' for c in schema.classes)} · {len(schema.continuous)} "
        f"continuous and {len(schema.discrete)} discrete features"
    )
    st.dataframe(data.frame.head(200), height=240)
    # The report encodes every record (seconds on a million rows): once per dataset.
    cached = st.session_state.get(K_REPORT)
    if cached is None or cached[0] != data.fingerprint:
        cached = (data.fingerprint, app_data.data_report(data.frame, schema))
        st.session_state[K_REPORT] = cached
    report = cached[1]
    st.markdown(f"**Data report** — {support.NOT_PRIVATE_DIAGNOSTICS}")
    st.dataframe(report.table, hide_index=True)
    if report.error:
        st.error(f"Training would fail: {report.error}")
    for message in report.messages:
        st.caption(f"Training will note: {message}")
    if report.rows_used is not None and not report.messages:
        st.caption(f"All {report.rows_used:,} rows are usable: no missing or clipped values.")
    st.download_button(
        "Download the schema JSON",
        schema.to_json(),
        file_name=f"{data.name.split()[0].removesuffix('.csv')}.schema.json",
        mime="application/json",
        key="data.schema_download",
    )


st.title("Data")
current = state.data
st.session_state.setdefault(
    K_SOURCE, UPLOAD if current is not None and current.source == "upload" else DEMO
)
if st.radio("Data source", (DEMO, UPLOAD), key=K_SOURCE, horizontal=True) == DEMO:
    choose_demo()
else:
    choose_upload()
show_current(st.session_state[K_SOURCE] == UPLOAD)
