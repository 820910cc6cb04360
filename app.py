"""dpviz home page: train a differentially private random forest and see what privacy costs.

Thin by design: widgets → one ``dpviz.app_support`` call → render. Every computation and
figure lives in ``dpviz`` (unit-tested there); run with ``streamlit run app.py``.
"""

from __future__ import annotations

import streamlit as st

from dpviz import app_support as support
from dpviz.demos import DEFAULT_DEMO, DEMOS
from dpviz.mechanisms import MECHANISMS

DEMO, UPLOAD = "Bundled demo dataset", "Upload a CSV"
RUN_KEY = "home_run"
METRICS = (("accuracy", "Accuracy"), ("auc", "ROC AUC"), ("f1", "F1"))

st.set_page_config(page_title="dpviz — what privacy costs a random forest", layout="wide")


@st.cache_data(show_spinner="Loading the demo dataset…")
def prepare_demo(demo_id: str) -> support.PreparedData:
    return support.prepare_demo(demo_id)


@st.cache_data(show_spinner="Reading the CSV…")
def read_upload(data: bytes):
    return support.read_uploaded_csv(data)


def choose_data() -> support.PreparedData | None:
    """Sidebar part 1: a bundled demo, or an uploaded CSV with an optional schema."""
    bar = st.sidebar
    bar.header("1 · Data")
    if bar.radio("Data source", (DEMO, UPLOAD), key="source") == DEMO:
        ids = list(DEMOS)
        demo_id = bar.selectbox(
            "Demo dataset",
            ids,
            index=ids.index(DEFAULT_DEMO),
            format_func=lambda d: DEMOS[d].title,
            key="demo",
        )
        bar.caption(DEMOS[demo_id].description)
        return prepare_demo(demo_id)
    upload = bar.file_uploader("CSV file with a header row", type=["csv", "tsv", "txt"], key="csv")
    if upload is None:
        st.info("Upload a CSV in the sidebar, or switch back to a bundled demo dataset.")
        return None
    try:
        frame = read_upload(upload.getvalue())
    except ValueError as exc:
        st.error(f"Could not read {upload.name}: {exc}")
        return None
    schema_file = bar.file_uploader(
        "Public schema JSON (optional, recommended)",
        type=["json"],
        key="schema",
        help="Label, class list and each feature's domain, written from public knowledge. "
        "`python -m dpviz info --schema-out` drafts one; check it before trusting it.",
    )
    try:
        schema = support.read_uploaded_schema(schema_file.getvalue()) if schema_file else None
        columns = [str(c) for c in frame.columns]
        default = schema.label if schema and schema.label in columns else None
        default = default or support.guess_label(columns)
        label = bar.selectbox("Label column", columns, index=columns.index(default), key="label")
        return support.prepare_upload(frame, label, schema, name=upload.name)
    except ValueError as exc:
        st.error(f"Cannot use this data: {exc}")
        return None


def choose_model(ready: bool) -> tuple[dict, bool]:
    """Sidebar part 2: mechanism (with its badge), ε, trees, folds and the Train button."""
    bar = st.sidebar
    bar.header("2 · Model")
    mechanism = bar.selectbox(
        "Leaf mechanism",
        list(MECHANISMS),
        format_func=lambda m: f"{m}  [{MECHANISMS[m].badge}]",
        key="mechanism",
    )
    mech = MECHANISMS[mechanism]
    if mech.private:
        bar.caption(f"**{mech.badge}** · {mech.description}")
    else:
        bar.error(f"**{mech.badge}** · {mech.description}")
    settings = {
        "mechanism": mechanism,
        "epsilon": bar.number_input(
            "Privacy budget ε",
            0.01,
            10.0,
            1.0,
            step=0.1,
            format="%.2f",
            key="epsilon",
            help="The released model's total ε. Each tree reads its own disjoint part of the "
            "records and spends all of ε on its leaves (parallel composition).",
        ),
        "n_estimators": int(bar.number_input("Trees", 1, 1000, 100, step=10, key="trees")),
        "folds": int(bar.number_input("Cross-validation folds", 2, 10, 3, key="folds")),
    }
    return settings, bar.button("Train", type="primary", disabled=not ready, key="train")


def show_run(run: support.HomeRun) -> None:
    r = run.result
    st.header(f"Results · {run.dataset}")
    st.caption(
        f"{r['mechanism']} · ε = {r['epsilon']:g} · {r['n_estimators']} trees · depth "
        f"{r['depth']} · {r['folds']}-fold CV. Change a setting and press Train to update."
    )
    (st.success if run.private else st.error)("**Privacy ledger.** " + run.privacy_summary)
    for col, (key, label) in zip(st.columns(len(METRICS)), METRICS):
        value, delta = run.metric(key)
        col.metric(label, value, delta, border=True, help="held-out folds: mean ± 1 std")
    # theme=None: show the figures exactly as dpviz.figures builds (and tests) them.
    st.plotly_chart(run.accuracy_figure, key="accuracy_chart", theme=None)
    st.plotly_chart(run.flip_figure, key="flip_chart", theme=None)
    st.subheader(f"Diagnostics — {support.NOT_PRIVATE_DIAGNOSTICS}")
    st.caption(
        "For the data owner only: these numbers read the true leaf counts, and the metrics "
        "above read the test folds; publishing them is not covered by ε. Cards: mean over "
        "the CV folds. Chart markers: one forest fitted on all records."
    )
    diagnostics = run.diagnostics()
    for col, (name, value) in zip(st.columns(len(diagnostics)), diagnostics.items()):
        col.metric(name, value)
    for message in run.encoding_messages:
        st.caption(f"Data preparation: {message}")


st.title("What does privacy cost a random forest?")
st.caption(
    "Train an ε-differentially private random decision forest (Fletcher & Islam 2017, with "
    "the 2021 correction), compare it with the same forest without privacy, and see how often "
    "the noise flips a leaf's label."
)
data = choose_data()
if data is not None:
    schema = data.schema
    st.markdown(
        f"**{data.name}** · {len(data.frame):,} rows · label `{schema.label}` with classes "
        f"{', '.join(f'`{c}`' for c in schema.classes)} · {len(schema.features)} features"
    )
    if data.schema_public:
        st.info(data.schema_note)
    else:
        st.warning(data.schema_note, icon="⚠️")
settings, train = choose_model(data is not None)
if train and data is not None:
    with st.status("Training…", expanded=True) as status:
        try:
            run = support.train_and_evaluate(data, progress=st.write, **settings)
        except ValueError as exc:
            status.update(label="Training failed", state="error")
            st.error(str(exc))
        else:
            st.session_state[RUN_KEY] = run
            status.update(label="Training finished", state="complete", expanded=False)
if RUN_KEY in st.session_state:
    show_run(st.session_state[RUN_KEY])
else:
    st.info("Choose the data and the model in the sidebar, then press **Train**.")
