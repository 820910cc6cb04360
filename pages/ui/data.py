"""The Data page's parts: an uploaded file's schema, columns, number columns and missing
values, and the dataset in use with its data report."""

from __future__ import annotations

import streamlit as st

from dpviz.app import data as app_data
from dpviz.app import support as support
from dpviz.app.session import KEEP_PREFIX
from pages.ui.odometer import schema_button

K_REPORT = "data.report"  # (fingerprint, DataReport) of the current dataset


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
    """The editable schema table; edits apply on submit (one rerun, not one per cell),
    rounded outwards on request (:func:`dpviz.app.data.rounded_table`)."""
    edits, classes = workspace.applied_edits(label)
    table = edits if edits is not None else app_data.schema_table(base, frame)
    classes = classes if classes is not None else app_data.join_list(base.classes)
    # Open again after an edit was applied: the user sees what the edit (or rounding) did.
    with st.expander("Feature types and public domains (edit)", expanded=edits is not None):
        st.caption(app_data.EDITOR_NOTE)
        with st.form(f"data.schema_form.{workspace.upload.frame_id}.{label}"):
            edited = st.data_editor(
                table,
                hide_index=True,
                disabled=["feature"],
                placeholder="",  # blank, not "None": the caption speaks of blank cells
                column_config={
                    "use": st.column_config.CheckboxColumn("use", width=65),
                    "feature": st.column_config.TextColumn("feature", width=140),
                    "type": st.column_config.SelectboxColumn(
                        "type", options=list(app_data.KINDS), required=True, width=105
                    ),
                    # Wide enough for a sign and every digit; the default number format
                    # shows them all (%g would cut -318427.8 to -318428).
                    "min": st.column_config.NumberColumn("min", width=120),
                    "max": st.column_config.NumberColumn("max", width=120),
                    "values": st.column_config.TextColumn("values (comma-separated)"),
                },
                key=f"data.editor.{workspace.upload.frame_id}.{label}.{workspace.edit_version}",
            )
            new_classes = st.text_input("Class list (comma-separated, public)", value=classes)
            apply, round_out = st.columns([1, 2])
            applied = apply.form_submit_button("Apply schema changes")
            rounded = round_out.form_submit_button(
                "Round min/max outwards and apply", help=app_data.ROUND_HELP
            )
            if applied or rounded:
                workspace.edits = app_data.rounded_table(edited) if rounded else edited
                workspace.classes = new_classes
                workspace.edits_for = (label, workspace.schema_file_id)
                workspace.edit_version += 1
                st.rerun()


def choose_columns(workspace, label: str) -> None:
    """Keep or drop each column BEFORE anything is validated; personal data, IDs and
    free text are dropped by default, with the reason."""
    upload = workspace.upload
    drops = workspace.drops(label)
    table = app_data.column_table(upload.frame, label, drops, workspace.suggestions(label))
    options = table["column"].tolist()
    st.markdown("**Columns** — list what the model must not use under 'Leave out these columns'")
    chosen = st.multiselect(
        "Leave out these columns",
        options,
        default=[c for c in drops if c in options],
        key=f"data.drop.{upload.frame_id}.{label}",
        help="Personal data (names, e-mail addresses, phone numbers, postal addresses), "
        "identifier columns and free text are left out by default: a tree that splits on "
        "them learns nothing that generalises, and the model would publish their values.",
    )
    if set(chosen) != set(drops):
        workspace.keep = {c: c not in chosen for c in options}
    table["keep"] = ~table["column"].isin(chosen)
    st.dataframe(table, hide_index=True, height=min(36 * (len(table) + 1), 300), placeholder="—")
    st.caption("Suggestions and counts read the raw records: for you only, not private.")


def offer_numbers(workspace, frame) -> None:
    """Columns that would become discrete although they hold numbers: say why, offer
    the fix."""
    for column, why in app_data.suspects(frame, workspace.numbers).items():
        st.warning(why, icon="⚠️")
        if st.button(f"Read {column!r} as numbers", key=f"data.numbers.{column}"):
            workspace.numbers = (*workspace.numbers, column)
            st.rerun()


def declare(workspace, frame, label: str, settings: dict, choice):
    """What the schema would publish, column by column; a tick of its own for each kept
    column that looks like personal data; the declaration. Returns the schema choice."""
    frame_id = workspace.upload.frame_id
    people = {c: r for c, r in settings["people"].items() if c in choice.schema.feature_names}
    with st.expander("What the model file and report will publish", expanded=bool(people)):
        st.dataframe(
            app_data.published_values(choice.schema, people), hide_index=True, placeholder="—"
        )
        st.caption("Every value here goes into the released model and the report.")
    published = [
        column
        for column, why in people.items()
        if st.checkbox(
            f"Publish the values of {column!r} — {why}",
            key=f"{KEEP_PREFIX}data.publish.{frame_id}.{column}",
        )
    ]
    settings = {**settings, "published": published}
    choice = app_data.choose_schema(frame, label, **settings)
    if not choice.public or settings["edits"] is not None:
        if st.checkbox(app_data.DECLARATION_PROMPT, key=f"{KEEP_PREFIX}data.declare.{frame_id}"):
            choice = app_data.choose_schema(frame, label, **settings, declared_public=True)
    return choice


def choose_missing(frame, label: str, schema, frame_id: str) -> list[str]:
    """Per continuous feature with missing values: drop those rows, or send the missing
    value to the lower branch (a public rule, applied the same in training and
    prediction). Returns the features that take the lower branch."""
    offer = app_data.missing_choice(frame, schema)
    # A schema file's rule for a feature with no missing cells here still holds.
    if not offer.offered:
        return offer.kept
    st.markdown("**Missing values**")
    st.caption(app_data.MISSING_HELP)
    chosen = st.multiselect(
        "Keep rows with a missing value of these features (missing → lower branch)",
        offer.offered,
        default=offer.preset,
        key=f"{KEEP_PREFIX}data.missing.{frame_id}.{label}",
    )
    return [*chosen, *offer.kept]


def show_current(data: support.PreparedData | None, upload_mode: bool) -> None:
    """The dataset in use: its schema in words, a preview, the data report (NOT private,
    computed once per dataset) and the schema JSON to download."""
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
    st.dataframe(data.frame.head(200), height=240, placeholder="—")
    # The report encodes every record (seconds on a million rows): once per dataset.
    cached = st.session_state.get(K_REPORT)
    if cached is None or cached[0] != data.fingerprint:
        cached = (data.fingerprint, app_data.data_report(data))
        st.session_state[K_REPORT] = cached
    report = cached[1]
    st.markdown(f"**Data report** — {support.NOT_PRIVATE_DIAGNOSTICS}")
    st.dataframe(report.table, hide_index=True, placeholder="—")
    if report.error:
        st.error(f"Training would fail: {report.error}")
    for message in report.messages:
        st.caption(f"Training will note: {message}")
    if report.rows_used is not None and not report.messages:
        st.caption(f"All {report.rows_used:,} rows are usable: no missing or clipped values.")
    schema_button(data)
