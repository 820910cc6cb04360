"""Data page: a bundled demo or an uploaded CSV (previewed as read), the label (guessed:
check it), the columns to keep (IDs and free text left out), the public schema with its
missing-value rules and declaration, and a report of missing and out-of-domain values.
Logic: dpviz.app.data."""

from __future__ import annotations

import dataclasses

import streamlit as st

from dpviz.app import data as app_data
from dpviz.app import support as support
from dpviz.app.session import KEEP_PREFIX, AppState
from dpviz.evaluation.demos import DEFAULT_DEMO, DEMOS
from pages.ui import data as data_ui
from pages.ui.frame import frame_first

DEMO, UPLOAD = "A bundled demo dataset", "My own CSV file"
K_SOURCE = KEEP_PREFIX + "data.source"
K_DEMO = KEEP_PREFIX + "data.demo"


frame_first("pages/data.py")

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
    st.dataframe(upload.frame.head(50), height=200, placeholder="—")
    for note in upload.notes:
        st.info(f"Reading the file: {note}.")
    columns = [str(c) for c in upload.frame.columns]
    label_key = f"{KEEP_PREFIX}data.label.{upload.frame_id}"
    data_ui.read_schema_upload(workspace, label_key)
    if st.session_state.get(label_key) not in columns:
        st.session_state[label_key] = support.guess_label(
            upload.frame, list(app_data.suggest_drops(upload.frame))
        )
    label = st.selectbox(
        "Label column (what to predict)",
        columns,
        key=label_key,
        help="Guessed from the column names, the number of distinct values and the order "
        "(a target name first, else the last column; never a demographic column such as "
        "gender while another qualifies).",
    )
    st.caption("The label was guessed — check it: it should be the column the model predicts.")
    data_ui.choose_columns(workspace, label)
    frame = app_data.working_frame(upload, workspace, label)
    data_ui.offer_numbers(workspace, frame)
    try:
        base = app_data.choose_schema(
            frame,
            label,
            schema_file=workspace.schema_file,
            schema_name=workspace.schema_name,
        ).schema
        data_ui.edit_schema(workspace, label, base, frame)
        edits, classes = workspace.applied_edits(label)
        settings = dict(
            schema_file=workspace.schema_file,
            schema_name=workspace.schema_name,
            edits=edits,
            classes=classes,
            people=workspace.people(label),
        )
        choice = app_data.choose_schema(frame, label, **settings)
        lower = data_ui.choose_missing(frame, label, choice.schema, upload.frame_id)
        choice = data_ui.declare(workspace, frame, label, settings, choice)
        choice = dataclasses.replace(
            choice, schema=app_data.with_missing_rule(choice.schema, lower)
        )
    except ValueError as exc:
        failed(str(exc), columns)
        return
    use(app_data.prepare(upload, choice, workspace))
    for warning in choice.warnings:
        st.warning(warning, icon="⚠️")


st.title("Data")
current = state.data
st.session_state.setdefault(
    K_SOURCE, UPLOAD if current is not None and current.source == "upload" else DEMO
)
if st.radio("Data source", (DEMO, UPLOAD), key=K_SOURCE, horizontal=True) == DEMO:
    choose_demo()
else:
    choose_upload()
data_ui.show_current(state.data, st.session_state[K_SOURCE] == UPLOAD)
