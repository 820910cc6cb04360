"""One browser session's state: the current dataset, the trained model and the sweep.

Privacy: everything held here derives from one user's raw records. The app passes its
``st.session_state`` in, so the objects live in that session only; nothing here is ever
put in ``st.cache_data``/``st.cache_resource``, which all sessions share.

No streamlit import: any mutable mapping works, which is how the tests drive it.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from dpviz.app.odometer import Relabel, dataset_key
from dpviz.app.support import PreparedData
from dpviz.privacy.session_ledger import Release, SessionLedger

DATA_KEY = "dpviz.data"
RUN_KEY = "dpviz.run"
SWEEP_KEY = "dpviz.sweep"
UPLOAD_KEY = "dpviz.upload"
# The ε odometer: one SessionLedger per dataset (keyed by its records, in memory only),
# the number of model lineages named in the session, the current run's lineage (the run
# and its name) and its relabels.
ODOMETER_KEY = "dpviz.odometer"
MODELS_KEY = "dpviz.models_trained"
LINEAGE_KEY = "dpviz.run_lineage"
RELABEL_KEY = "dpviz.relabels"
# Widgets whose key starts with this keep their value when the user visits another page:
# Streamlit drops a widget's state once a run does not draw it, so app.py re-assigns
# these keys on every run (Streamlit's documented way to keep widget state).
KEEP_PREFIX = "keep."
# Set by app.py on every run. A page that finds it missing was opened before app.py ever
# ran in this session: a fresh server's first request for a deep link runs the page file
# alone (Streamlit's pages/ folder mode). The page then asks app.py to run first.
FRAME_KEY = "dpviz.frame"
WANTED_KEY = "dpviz.wanted_page"
# The address's query parameter that says where the session's data came from ("upload"
# or "demo"): the only trace of an upload that outlives the session (nothing of the file).
DATA_PARAM = "data"
LOST_KEY = "dpviz.lost_upload"
PARAM_KEY = "dpviz.data_param"
LOST_UPLOAD = (
    "Your uploaded file is gone: this session is new (the server restarted or the session "
    "expired) but the address says it held an upload. Uploads live only in a session's "
    "memory, never on disk, so the file and anything trained on it were lost, and the demo "
    "dataset is loaded instead. Upload the file again on the Data page."
)


class AppState:
    """Typed access to the dpviz objects in a session-state mapping.

    Parameters
    ----------
    store : MutableMapping
        ``st.session_state`` in the app, a plain dict in tests.
    """

    def __init__(self, store: MutableMapping[str, Any]):
        self.store = store

    # --- dataset ----------------------------------------------------------------------

    @property
    def data(self) -> PreparedData | None:
        """The dataset the Train, Trees, Leaves and Curves pages work on."""
        return self.store.get(DATA_KEY)

    def set_data(self, data: PreparedData) -> list[str]:
        """Make ``data`` current. A model or sweep of another dataset (or of the same
        records under another schema) no longer describes it and is dropped; returns
        what was dropped, for the page to say so."""
        current = self.data
        if current is not None and current.fingerprint != data.fingerprint:
            self.store.pop(LOST_KEY, None)  # the user chose data again
        if current is not None and current.fingerprint == data.fingerprint:
            # The same records and schema: models stay valid, but keep the newest note
            # and declaration (where the schema came from, what was declared).
            data.keep_encoding_of(current)
            self.store[DATA_KEY] = data
            return []
        self.store[DATA_KEY] = data
        dropped = []
        for key, what in ((RUN_KEY, "the trained model"), (SWEEP_KEY, "the sweep results")):
            if self.store.pop(key, None) is not None:
                dropped.append(what)
        self.store.pop(RELABEL_KEY, None)
        return dropped

    def clear_data(self) -> list[str]:
        """No current dataset (a failed choice on the Data page must not leave the old
        one silently in use); returns what was dropped with it."""
        dropped = []
        if self.store.pop(DATA_KEY, None) is not None:
            dropped.append("the dataset")
        for key, what in ((RUN_KEY, "the trained model"), (SWEEP_KEY, "the sweep results")):
            if self.store.pop(key, None) is not None:
                dropped.append(what)
        self.store.pop(RELABEL_KEY, None)
        return dropped

    def start(self, demo: PreparedData, data_param: str | None) -> None:
        """A session's first run: the demo becomes current; when the address says the
        session held an upload (``data_param``), remember to say it was lost."""
        self.set_data(demo)
        # A deep link's page saw the address before the switch to app.py cleared it.
        if "upload" in (data_param, self.store.pop(PARAM_KEY, None)):
            self.store[LOST_KEY] = LOST_UPLOAD

    @property
    def lost_upload(self) -> str | None:
        """The notice that an upload was lost, until the user chooses data again."""
        return self.store.get(LOST_KEY)

    @property
    def data_param(self) -> str | None:
        """The value of the address's :data:`DATA_PARAM` for the current data."""
        return None if self.data is None else self.data.source

    # --- results ----------------------------------------------------------------------

    @property
    def run(self) -> Any:
        """The last training run (``dpviz.app.train.TrainRun``) or None."""
        return self.store.get(RUN_KEY)

    def set_run(self, run: Any) -> None:
        """Make ``run`` current, with no relabels yet."""
        self.store[RUN_KEY] = run
        self.store[RELABEL_KEY] = []

    @property
    def lineage(self) -> str:
        """The current run's model lineage ("model N", numbered in the session), which
        its relabels share. Tied to the run object itself: a run put in the store any
        other way still gets a lineage of its own, never another model's."""
        run, named = self.run, self.store.get(LINEAGE_KEY)
        if named is None or named[0] is not run:
            number = int(self.store.get(MODELS_KEY, 0)) + 1
            self.store[MODELS_KEY] = number
            named = (run, f"model {number}")
            self.store[LINEAGE_KEY] = named
        return named[1]

    @property
    def relabels(self) -> list[Relabel]:
        """The current run's relabelled models, oldest first."""
        lineage = self.lineage
        return [r for r in self.store.get(RELABEL_KEY) or [] if r.lineage == lineage]

    def add_relabel(self, relabelled: Relabel) -> None:
        self.store[RELABEL_KEY] = [*self.relabels, relabelled]

    # --- the ε odometer ---------------------------------------------------------------

    def odometers(self) -> dict[str, SessionLedger]:
        """Every dataset's session ledger, by its records' key (in memory only)."""
        return self.store.setdefault(ODOMETER_KEY, {})

    def _odometer_key(self) -> str:
        data = self.data
        key = "none" if data is None else dataset_key(data)
        books = self.odometers()
        if key not in books:
            books[key] = SessionLedger(dataset="" if data is None else data.name)
        return key

    @property
    def odometer(self) -> SessionLedger:
        """The current dataset's session ledger (a new, empty one on first use)."""
        return self.odometers()[self._odometer_key()]

    def odometer_index(self) -> int:
        """The current dataset's position among the session's ledgers (for widget keys)."""
        return list(self.odometers()).index(self._odometer_key())

    def book(self, release: Release) -> Release:
        """Record that ``release`` left the app (a download was clicked)."""
        return self.odometer.book(release)

    @property
    def sweep(self) -> Any:
        """The last sweep (``dpviz.app.curves.SweepRun``) or None."""
        return self.store.get(SWEEP_KEY)

    def set_sweep(self, sweep: Any) -> None:
        self.store[SWEEP_KEY] = sweep

    # --- the user's upload ------------------------------------------------------------

    @property
    def upload(self) -> Any:
        """The uploaded file and schema choices (``dpviz.app.data.UploadWorkspace``):
        kept so that leaving the Data page and coming back does not lose them."""
        return self.store.get(UPLOAD_KEY)

    def set_upload(self, workspace: Any) -> None:
        self.store[UPLOAD_KEY] = workspace

    # --- the frame app.py draws around every page ----------------------------------

    def mark_frame(self) -> str | None:
        """Called by app.py on every run; returns a page that was asked for before the
        frame existed (to switch to once the navigation is set up), else None."""
        self.store[FRAME_KEY] = True
        return self.store.pop(WANTED_KEY, None)

    def needs_frame(self, page: str, data_param: str | None = None) -> bool:
        """True when app.py has not run in this session yet; remembers ``page`` so that
        app.py can open it once it has, and the address's ``data_param``, which the
        switch to app.py clears."""
        if self.store.get(FRAME_KEY):
            return False
        self.store[WANTED_KEY] = page
        if data_param is not None:
            self.store[PARAM_KEY] = data_param
        return True

    # --- sidebar ----------------------------------------------------------------------

    def summary(self) -> list[str]:
        """Markdown lines for the sidebar: current dataset, model and sweep."""
        data = self.data
        if data is None:
            return ["**Data:** none yet — pick one on the Data page."]
        schema = data.schema
        lines = [
            f"**Data:** {data.name} · {len(data.frame):,} rows · label `{schema.label}` "
            f"({len(schema.classes)} classes) · {len(schema.features)} features",
            "Schema: public"
            if data.schema_public
            else "⚠️ Schema inferred from the data: **no privacy guarantee**",
        ]
        if data.schema_public and schema.declaration:
            lines.append(f"Schema declaration: {schema.declaration}")
        run = self.run
        lines.append(f"**Model:** {run.describe()}" if run else "**Model:** not trained yet")
        sweep = self.sweep
        if sweep:
            lines.append(f"**Sweep:** {sweep.describe()}")
        return lines


def kept_widget_keys(store: MutableMapping[str, Any]) -> list[str]:
    """Keys of widgets whose value must survive a page switch (see ``KEEP_PREFIX``)."""
    return [k for k in list(store.keys()) if isinstance(k, str) and k.startswith(KEEP_PREFIX)]
