"""A data owner's own CSV (issue 14): ID and free-text columns, decimal commas and
thousands separators, R's NA, missing numbers, a label that is not last, honest
declarations and the missing-value rule, from dpviz functions, the CLI and the Data
page (AppTest). The files in tests/data_owner/ are synthetic copies of real exports'
traits (tests/data_owner/make_files.py writes them).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpviz import DPRandomForestClassifier
from dpviz.app import data as app_data
from dpviz.app import train as app_train
from dpviz.app.report import decision_report
from dpviz.app.session import AppState
from dpviz.app.support import PreparedData
from dpviz.cli import main
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.schema import (
    DECLARED_BY_SCHEMA_OPTION,
    DECLARED_BY_SCHEMA_UPLOAD,
    DECLARED_ON_DATA_PAGE,
    Feature,
    PrivacyLeakWarning,
    Schema,
    infer_schema,
)
from dpviz.tabular.columns import guess_label, suggest_drops
from dpviz.tabular.encode import as_numbers, encode, normalise_numbers, numeric_suspects, read_csv
from tests.page_checks import key, texts

ROOT = Path(__file__).resolve().parent.parent.parent
OWNER = ROOT / "tests" / "data_owner"
CORPUS = ROOT / "tests" / "bad_inputs"
APP = str(ROOT / "app.py")
DATA_KEY, RUN_KEY = "dpviz.data", "dpviz.run"
DROPS = ["PassengerId", "Name", "Ticket", "Cabin"]  # titanic_eu.csv: IDs and free text

# file -> (label a person would pick, columns that must be dropped by default)
FILES = {
    "titanic_eu.csv": ("Survived", {"PassengerId", "Name", "Ticket", "Cabin"}),
    "titanic_r.csv": ("survived", {"rownames"}),
    "penguins_r.csv": ("species", {"rownames"}),
    "islr_default_r.csv": ("default", {"rownames"}),
    "credit_default.csv": ("default.payment.next.month", {"ID"}),
}


def read(name: str) -> pd.DataFrame:
    return read_csv(OWNER / name)


# --- reading: locale and missing-value tokens ---------------------------------------------


def test_decimal_commas_and_thousands_dots_are_read_as_numbers_and_said():
    frame = read("titanic_eu.csv")
    age = pd.to_numeric(frame["Age"])
    fare = pd.to_numeric(frame["Fare"])
    assert age.notna().sum() == 480 and age.isna().sum() == 120  # 20% empty cells
    assert fare.max() > 1000  # "1.234,56" is 1234.56, not 1.234
    raw = pd.read_csv(OWNER / "titanic_eu.csv", sep=";", dtype=str)
    big = raw["Fare"].str.contains(r"\.").idxmax()
    expected = float(raw.loc[big, "Fare"].replace(".", "").replace(",", "."))
    assert fare[big] == pytest.approx(expected)
    notes = frame.attrs["read_notes"]
    assert any("'Age' uses decimal commas" in n for n in notes)
    assert any("'Fare' uses decimal commas" in n for n in notes)
    # text columns are left alone
    assert frame["Name"].iloc[0] == raw["Name"].iloc[0]


def test_comma_thousands_and_r_na_are_read():
    credit = read("credit_default.csv")
    assert pd.to_numeric(credit["LIMIT_BAL"]).min() >= 10_000
    assert any("thousands separators" in n for n in credit.attrs["read_notes"])
    titanic = read("titanic_r.csv")
    assert titanic["age"].isna().sum() == 100 and (titanic["age"] != "NA").all()
    assert any("100 cells 'NA' read as missing" in n for n in titanic.attrs["read_notes"])


@pytest.mark.parametrize(
    ("cells", "delimiter", "expected"),
    [
        (["1,234", "2,5"], ";", ["1.234", "2.5"]),  # `;` file: decimal comma
        (["1,234", "12"], ",", ["1234", "12"]),  # `,` file: "1,234" is a thousands group
        (["1,234.5", "-7"], ",", ["1234.5", "-7"]),
        (["1.234,5", "3,75"], ",", ["1234.5", "3.75"]),
        (["1.5", "2"], ";", ["1.5", "2"]),  # plain numbers: untouched
        (["a,b", "1,5"], ";", ["a,b", "1,5"]),  # text: untouched
        (["NA", "1,5"], ";", [None, "1.5"]),
    ],
)
def test_normalise_numbers_cases(cells, delimiter, expected):
    frame, _ = normalise_numbers(pd.DataFrame({"x": cells}, dtype=object), delimiter)
    got = [None if pd.isna(v) else v for v in frame["x"]]
    assert got == expected


def test_thousands_dots_in_a_decimal_comma_file():
    text = "mass;bill;n\n3.750;39,1;12\n950;40,2;7\n4.025;38,0;3\n"
    frame = read_csv(text.encode())
    assert list(frame["mass"]) == ["3750", "950", "4025"]
    assert list(frame["n"]) == ["12", "7", "3"]
    assert any("'mass' uses dots as thousands separators" in n for n in frame.attrs["read_notes"])
    # without decimal commas elsewhere, 3.750 stays 3.75
    assert list(read_csv(b"mass;n\n3.750;1\n950;2\n")["mass"]) == ["3.750", "950"]


def test_a_column_of_numbers_with_some_text_is_flagged_and_can_be_read_as_numbers():
    values = [str(v) for v in range(80)] + ["12 kg", "unknown"]
    frame = pd.DataFrame({"w": values, "label": ["a", "b"] * 41})
    why = numeric_suspects(frame)
    assert set(why) == {"w"} and "82 distinct values" in why["w"]
    assert "'12 kg'" in why["w"] and "Read it as numbers" in why["w"]
    fixed = as_numbers(frame, ["w"])
    assert fixed["w"].isna().sum() == 2 and numeric_suspects(fixed) == {}
    schema = infer_schema(fixed, "label", warn=False)
    assert schema.features[0].kind == "continuous"


# --- column roles and the label guess -----------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_ids_and_names_are_suggested_drops_and_the_label_is_guessed(name):
    label, drops = FILES[name]
    frame = read(name)
    suggested = suggest_drops(frame)
    assert set(suggested) == drops, suggested
    reasons = ("ID-like", "free text", "mixed", "personal data")
    assert all(why.startswith(reasons) for why in suggested.values())
    assert guess_label(frame, list(suggested)) == label
    assert frame.columns[-1] != label  # the old guess (last column) was wrong


def test_free_text_and_empty_columns_are_suggested_and_the_label_never_is():
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "comment": [f"note {i % 300} {w}" for i, w in enumerate(rng.choice(list("abc"), n))],
            "empty": [np.nan] * n,
            "x": rng.normal(size=n).round(3).astype(str),  # all distinct floats: a feature
            "label": rng.choice(["u", "v"], n),
        }
    )
    suggested = suggest_drops(frame)
    assert suggested["comment"].startswith("free text") and "empty" in suggested
    # identifiers by name, even when not a run of integers or not unique (visits)
    ids = pd.DataFrame(
        {"x": np.arange(n), "customer_id": rng.integers(10_000, 99_999, n), "label": "a"}
    )
    assert suggest_drops(ids)["customer_id"].startswith("ID-like")
    assert "x" in suggest_drops(ids)  # 0..n-1, each once: a row number
    assert "x" not in suggested and "label" not in suggest_drops(frame, "label")


def test_label_guess_names_and_fallbacks():
    assert guess_label(["a", "b", "Class"]) == "Class"
    assert guess_label(["a", "b", "c"]) == "c"
    assert guess_label(["label", "x"]) == "label"
    # a target word inside a longer name, and text before numbers
    frame = pd.DataFrame(
        {"passengerClass": ["1", "2"] * 5, "survived": ["no", "yes"] * 5, "age": range(10)}
    )
    assert guess_label(frame) == "survived"
    # no target name: the last low-cardinality text column, not a continuous last one
    frame = pd.DataFrame({"colour": ["r", "g"] * 10, "size": np.arange(20.0)})
    assert guess_label(frame) == "colour"


# --- schema: inferred marks, declarations, the missing rule -------------------------------


def test_an_inferred_schema_file_stays_inferred_until_every_mark_is_removed(tmp_path):
    frame = read("penguins_r.csv").drop(columns="rownames")
    schema = infer_schema(frame, "species", warn=False)
    doc = json.loads(schema.to_json())
    assert doc["inferred"] is True and all(f["inferred"] for f in doc["features"])
    assert Schema.from_dict(doc).inferred
    doc.pop("inferred")
    assert Schema.from_dict(doc).inferred  # features still marked
    for f in doc["features"]:
        f.pop("inferred")
    assert not Schema.from_dict(doc).inferred
    declared = Schema.from_dict({**doc, "declaration": DECLARED_ON_DATA_PAGE})
    assert declared.declaration == DECLARED_ON_DATA_PAGE
    assert json.loads(declared.to_json())["declaration"] == DECLARED_ON_DATA_PAGE
    # Any other sentence (an older dpviz's, naming the data's min and max) is dropped on
    # reading and refused on building: it would travel into the next model file.
    old = "Declared public by A., warned that 'Age' [0.9, 80] is the data's own min and max."
    assert Schema.from_dict({**doc, "declaration": old}).declaration == ""
    with pytest.raises(ValueError, match="fixed sentences"):
        dataclasses.replace(declared, declaration=old)


def test_missing_rule_is_validated_and_round_trips():
    with pytest.raises(ValueError, match="missing must be one of drop, low"):
        Feature("x", "continuous", 0, 1, missing="median")
    f = Feature("x", "continuous", 0, 1, missing="low")
    assert f.to_dict()["missing"] == "low"
    assert "missing" not in Feature("x", "continuous", 0, 1).to_dict()
    schema = Schema("y", ("a", "b"), (f,))
    assert Schema.from_json(schema.to_json()).features[0].missing == "low"


def test_lower_branch_rule_keeps_rows_and_routes_training_and_prediction_alike():
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    base = infer_schema(frame, "Survived", warn=False)
    assert encode(frame, base).n_records == 480  # the default drops the 120 rows
    schema = app_data.with_missing_rule(base, ["Age"])
    age = next(f for f in schema.features if f.name == "Age")
    encoded = encode(frame, schema)
    assert encoded.n_records == 600 and encoded.report.routed_low == {"Age": 120}
    j = [f.name for f in schema.continuous].index("Age")
    missing = frame["Age"].isna().to_numpy()
    assert (encoded.continuous[missing, j] == age.low).all()
    assert "go to its lower branch" in " ".join(encoded.report.messages())
    with pytest.raises(ValueError, match="not a continuous feature"):
        app_data.with_missing_rule(base, ["Sex"])
    # Prediction applies the same rule: a missing age predicts as the public min does.
    model = DPRandomForestClassifier(
        epsilon=1.0, n_estimators=20, random_state=3, noise_seed=4, schema=schema
    ).fit(frame.drop(columns="Survived"), frame["Survived"])
    rows = frame[missing].head(40).drop(columns="Survived")
    filled = rows.assign(Age=repr(age.low))
    assert np.array_equal(model.predict_proba(rows), model.predict_proba(filled))
    assert encode(rows, schema, training=False).report.routed_low == {"Age": 40}


def test_a_declaration_names_who_declared_and_the_data_check_stays_on_screen():
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    check = app_data.data_check(infer_schema(frame, "Survived", warn=False), frame)
    assert check.startswith(f"Check ({app_data.NOT_PRIVATE_CHECK})")
    assert "'Age' [0.9, 80] (the data's own min and max)" in check
    assert "the class list of 'Survived' (read from the data)" in check
    choice = app_data.choose_schema(frame, "Survived", declared_public=True)
    assert choice.public and "the data's own min and max" in choice.warnings[0]
    assert choice.schema.declaration == DECLARED_ON_DATA_PAGE
    html = decision_report(
        schema=choice.schema,
        algorithm="fletcher_islam",
        parameters={"mechanism": "permute_flip"},
        seeds={},
        chosen_epsilon=1.0,
    )
    assert "Schema declaration." in html and DECLARED_ON_DATA_PAGE in html
    assert "min and max" not in html
    assert "public knowledge by assumption" not in html


def test_an_uploaded_schema_with_data_ranges_is_public_but_reported():
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    exact = json.loads(infer_schema(frame, "Survived", warn=False).to_json())
    marked = Schema.from_dict(exact)
    choice = app_data.choose_schema(frame, "Survived", schema_file=marked, schema_name="s.json")
    assert not choice.public and "marked as inferred" in choice.note
    unmarked = Schema.from_dict(
        {k: v for k, v in exact.items() if k != "inferred"}
        | {
            "features": [
                {k: v for k, v in f.items() if k != "inferred"} for f in exact["features"]
            ]
        }
    )
    choice = app_data.choose_schema(frame, "Survived", schema_file=unmarked, schema_name="s.json")
    assert choice.public and choice.schema.declaration == DECLARED_BY_SCHEMA_UPLOAD
    assert "'Fare' [" in choice.warnings[0] and "Pclass" not in choice.warnings[0]


# --- the CLI ------------------------------------------------------------------------------


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_info_suggests_drops_and_marks_the_schema_it_writes(capsys, tmp_path):
    data = str(OWNER / "titanic_eu.csv")
    code, out, err = run_cli(capsys, "info", "--data", data, "--label", "Survived", "--json")
    assert code == 0
    info = json.loads(out)
    assert set(info["suggested_drops"]) == set(DROPS)
    assert info["suggested_drop_option"] == "--drop PassengerId,Name,Ticket,Cabin"
    assert "decimal commas" in err
    out_path = tmp_path / "s.json"
    code, out, _ = run_cli(
        capsys,
        "info",
        "--data",
        data,
        "--label",
        "Survived",
        "--drop",
        "PassengerId,Name,Ticket,Cabin",
        "--schema-out",
        str(out_path),
        "--json",
    )
    assert code == 0 and json.loads(out)["suggested_drops"] == {}
    assert json.loads(out_path.read_text())["inferred"] is True
    model = tmp_path / "m.json"
    train = [
        "train",
        "--data",
        data,
        "--label",
        "Survived",
        "--drop",
        "PassengerId,Name,Ticket,Cabin",
    ]
    train += ["--schema", str(out_path), "--epsilon", "1", "--trees", "5", "--out", str(model)]
    # A schema still marked inferred lists the records' own values: no export unless the
    # user says those values are public.
    code, out, _ = run_cli(capsys, *train, "--json")
    assert code != 0 and not model.exists()
    code, out, _ = run_cli(capsys, *train, "--values-public", "--json")
    assert code == 0 and json.loads(out)["privacy"]["private"] is False


def test_drop_option_errors_are_one_line(capsys):
    data = str(OWNER / "titanic_eu.csv")
    code, _, err = run_cli(capsys, "info", "--data", data, "--label", "Survived", "--drop", "nope")
    assert code != 0 and "--drop names 'nope'" in err and "Traceback" not in err
    code, _, err = run_cli(
        capsys, "info", "--data", data, "--label", "Survived", "--drop", "Survived"
    )
    assert code != 0 and "--drop names the label" in err


def test_free_text_column_is_left_out_by_default_and_suggested(capsys):
    data = str(CORPUS / "free_text_column.csv")
    code, out, _ = run_cli(capsys, "info", "--data", data, "--label", "label", "--json")
    info = json.loads(out)
    assert code == 0 and info["suggested_drop_option"] == "--drop comment"
    assert "free text" in info["suggested_drops"]["comment"]
    assert "comment" not in info["features"]
    code, out, _ = run_cli(
        capsys, "info", "--data", data, "--label", "label", "--drop", "comment", "--json"
    )
    assert code == 0 and json.loads(out)["n_continuous"] == 1


def test_predict_says_how_missing_values_were_routed(capsys, tmp_path):
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    schema = app_data.with_missing_rule(infer_schema(frame, "Survived", warn=False), ["Age"])
    schema_path = tmp_path / "s.json"
    doc = json.loads(schema.to_json())
    doc.pop("inferred")
    for f in doc["features"]:
        f.pop("inferred")
    schema_path.write_text(json.dumps(doc))
    model = tmp_path / "m.json"
    data = str(OWNER / "titanic_eu.csv")
    code, out, _ = run_cli(
        capsys,
        "train",
        "--data",
        data,
        "--label",
        "Survived",
        "--schema",
        str(schema_path),
        "--epsilon",
        "1",
        "--trees",
        "5",
        "--out",
        str(model),
        "--noise-seed",
        "1",
        "--json",
    )
    assert code == 0 and json.loads(out)["n_records"] == 600
    code, _, err = run_cli(capsys, "predict", "--model", str(model), "--data", data, "--json")
    assert code == 0 and "120 missing values of 'Age' go to its lower branch" in err


# --- the Data page (AppTest) --------------------------------------------------------------


def upload(name: str, data: bytes | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    at.run()
    at.switch_page("pages/data.py").run()
    at.radio(key=key("data.source")).set_value("My own CSV file").run()
    data = (OWNER / name).read_bytes() if data is None else data
    at.file_uploader(key="data.csv").set_value((name, data, "text/csv")).run()
    assert not at.exception, at.exception
    return at


def label_box(at: AppTest):
    return next(s for s in at.selectbox if s.label.startswith("Label column"))


def drop_box(at: AppTest):
    return next(m for m in at.multiselect if m.label == "Leave out these columns")


@pytest.mark.parametrize("name", FILES)
def test_each_owner_file_is_ready_on_upload_with_ids_dropped_and_the_right_label(name):
    label, drops = FILES[name]
    at = upload(name)
    assert not at.error, texts(at.error)
    assert label_box(at).value == label
    assert "guessed — check it" in texts(at.caption)
    assert set(drop_box(at).value) == drops
    data = at.session_state[DATA_KEY]
    assert data.name == name and data.source == "upload"
    assert data.schema.label == label and not drops & set(data.schema.feature_names)
    # the page previews the uploaded file, never the demo
    assert list(at.dataframe[0].value.columns) == list(read(name).columns)


def test_a_dropped_id_can_be_kept_again_and_a_failed_label_clears_the_dataset():
    at = upload("titanic_r.csv")
    drop_box(at).set_value([]).run()
    assert not at.exception
    assert "rownames" in at.session_state[DATA_KEY].schema.feature_names
    drop_box(at).set_value(["rownames"]).run()
    assert "rownames" not in at.session_state[DATA_KEY].schema.feature_names
    label_box(at).set_value("age").run()  # a continuous column: > 100 classes
    assert not at.exception
    assert "at most 100 classes" in texts(at.error)
    assert DATA_KEY not in at.session_state
    assert "No dataset is in use now" in texts(at.warning)
    label_box(at).set_value("survived").run()
    assert at.session_state[DATA_KEY].schema.label == "survived"


def test_too_many_values_error_says_which_column_to_leave_out():
    at = upload("free_text_column.csv", (CORPUS / "free_text_column.csv").read_bytes())
    assert drop_box(at).value == ["comment"] and not at.error
    drop_box(at).set_value([]).run()
    message = texts(at.error)
    assert "'comment' has 1010 values" in message
    assert "To leave 'comment' out, add it to 'Leave out these columns'" in message


def test_numbers_with_some_text_offer_the_fix():
    rows = ["w,label"] + [f"{v},{'ab'[v % 2]}" for v in range(80)] + ["12 kg,a", "n.a.,b"]
    at = upload("weights.csv", "\n".join(rows).encode())
    assert drop_box(at).value == ["w"]  # many rare values: left out by default
    drop_box(at).set_value([]).run()
    assert "Read it as numbers" in texts(at.warning)
    at.button(key="data.numbers.w").click().run()
    assert not at.exception
    assert at.session_state[DATA_KEY].schema.features[0].kind == "continuous"


def test_titanic_eu_trains_with_the_missing_rule_and_an_honest_declaration():
    at = upload("titanic_eu.csv")
    assert "'Age' uses decimal commas" in texts(at.info)
    missing = next(m for m in at.multiselect if m.label.startswith("Keep rows"))
    missing.set_value(["Age"]).run()
    declare = next(c for c in at.checkbox if c.label.startswith("I declare"))
    assert declare.label == app_data.DECLARATION_PROMPT
    assert "'Age' [0.9, 80] (the data's own min and max)" in texts(at.warning)
    assert app_data.NOT_PRIVATE_CHECK in texts(at.warning)
    declare.check().run()
    data = at.session_state[DATA_KEY]
    assert data.schema_public and data.schema.declaration == DECLARED_ON_DATA_PAGE
    assert "go to its lower branch" in texts(at.caption)
    at.switch_page("pages/train.py").run()
    trees = key("train.fletcher_islam.n_estimators")  # "auto" by default: choose 10
    at.selectbox(key=trees).set_value(app_train.FIXED_TREES).run()
    at.number_input(key=trees + ".number").set_value(10)
    at.number_input(key=key("train.folds")).set_value(2)
    at.checkbox(key=key("train.sklearn")).uncheck()
    at.run()
    at.button(key="train.button").click().run()
    assert not at.exception, at.exception
    run = at.session_state[RUN_KEY]
    assert run.model.n_train_records_ == 600  # rows with a missing age were kept
    released = json.loads(run.model_json)
    names = [f["name"] for f in released["schema"]["features"]]
    assert "PassengerId" not in names and "Name" not in names
    assert DECLARED_ON_DATA_PAGE in run.privacy_summary
    assert "min and max" not in run.privacy_summary and "min and max" not in run.model_json


@pytest.mark.parametrize("name", FILES)
def test_info_without_label_guesses_it_and_says_so(capsys, name):
    code, out, err = run_cli(capsys, "info", "--data", str(OWNER / name), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["label"] == FILES[name][0] and info["label_guessed"] is True
    assert "guessed" in err and "check it" in err
    assert set(info["suggested_drops"]) == FILES[name][1]


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_every_algorithm_routes_a_missing_value_as_the_public_min(algorithm):
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    schema = app_data.with_missing_rule(infer_schema(frame, "Survived", warn=False), ["Age"])
    low = next(f.low for f in schema.features if f.name == "Age")
    model = get_algorithm(algorithm).make(1.0, random_state=0, schema=schema, noise_seed=1)
    model.fit_encoded(encode(frame, schema), schema)
    rows = frame[frame["Age"].isna()].drop(columns="Survived")
    same = model.predict_proba(rows.assign(Age=repr(low)))
    assert np.array_equal(model.predict_proba(rows), same)


def test_the_sidebar_carries_the_accepted_declaration():
    frame = read("titanic_eu.csv").drop(columns=DROPS)
    choice = app_data.choose_schema(frame, "Survived", declared_public=True)
    state = AppState({})
    state.set_data(PreparedData("t.csv", frame, choice.schema, choice.note, "t"))
    lines = "\n".join(state.summary())
    assert "Schema: public" in lines and "Schema declaration: Declared public" in lines
    assert "min and max" not in lines  # the data check is on the Data page, not here
    assert state.clear_data() == ["the dataset"] and state.data is None


def test_cli_names_schema_ranges_equal_to_the_data_on_stderr_only(capsys, tmp_path):
    frame = read("penguins_r.csv").drop(columns="rownames")
    doc = json.loads(infer_schema(frame, "species", warn=False).to_json())
    doc.pop("inferred")
    for f in doc["features"]:
        f.pop("inferred")
    schema_path = tmp_path / "p.json"
    schema_path.write_text(json.dumps(doc))
    model = tmp_path / "m.json"
    argv = ["--data", str(OWNER / "penguins_r.csv"), "--label", "species", "--drop", "rownames"]
    code, out, err = run_cli(
        capsys,
        "train",
        *argv,
        "--schema",
        str(schema_path),
        "--epsilon",
        "1",
        "--trees",
        "5",
        "--out",
        str(model),
        "--json",
    )
    assert code == 0, err
    assert "'bill_length_mm' [" in err and "(the data's own min and max)" in err
    assert app_data.NOT_PRIVATE_CHECK in err
    result = json.loads(out)
    assert result["privacy"]["private"]
    assert result["schema_declaration"] == DECLARED_BY_SCHEMA_OPTION
    assert json.loads(model.read_text())["schema"]["declaration"] == DECLARED_BY_SCHEMA_OPTION
    assert "min and max" not in model.read_text() and "min and max" not in out


def test_an_inferred_schema_file_uploaded_in_the_app_stays_inferred_until_unmarked():
    at = upload("titanic_r.csv")
    frame = read("titanic_r.csv").drop(columns="rownames")
    doc = json.loads(infer_schema(frame, "survived", warn=False).to_json())
    marked = json.dumps(doc).encode()
    at.file_uploader(key="data.schema").set_value(("s.json", marked, "application/json")).run()
    assert not at.exception
    assert "marked as inferred" in texts(at.warning)
    assert at.session_state[DATA_KEY].schema.inferred
    doc.pop("inferred")
    for f in doc["features"]:
        f.pop("inferred")
    clean = json.dumps(doc).encode()
    at.file_uploader(key="data.schema").set_value(("t.json", clean, "application/json")).run()
    data = at.session_state[DATA_KEY]
    assert not data.schema.inferred and "the schema file you uploaded (t.json)" in texts(at.info)
    assert "'age' [" in texts(at.warning) and "the data's own min and max" in texts(at.warning)
    assert data.schema.declaration == DECLARED_BY_SCHEMA_UPLOAD
