"""Issue 26: a schema declaration writes only who declared the schema public, never a
sentence read from the records. D and D ∪ {x}, with x at a declared bound, release
byte-identical schema sections (every algorithm, CLI and app), while the check that
names ranges equal to the data's own min and max still reaches the user (stderr, the
Data page's warnings)."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.app import data as app_data
from dpviz.app.report import decision_report
from dpviz.cli import main
from dpviz.models.files.load import release
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.schema import (
    DECLARED_BY_SCHEMA_OPTION,
    DECLARED_BY_SCHEMA_UPLOAD,
    DECLARED_ON_DATA_PAGE,
    Feature,
    PrivacyLeakWarning,
    Schema,
)
from dpviz.tabular.encode import encode

CHECK = "'a' [0, 100] (the data's own min and max)"
STALE = f"Declared public by the user, whose ranges equal the data's own values: {CHECK}."
DECLARED = Schema(
    "y",
    ("no", "yes"),
    (Feature("a", "continuous", 0.0, 100.0), Feature("c", "discrete", values=("u", "v", "w"))),
)


def frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """D (a in [0, 95], touching the declared min only) and D ∪ {x}, x at the declared
    max: only D ∪ {x} has the data's own min and max equal to the declared range."""
    rng = np.random.default_rng(26)  # fixed seed: the same D in every run
    n = 240
    a = np.concatenate([[0], rng.integers(1, 96, n - 1)])
    d = pd.DataFrame(
        {
            "a": a.astype(str),
            "c": rng.choice(["u", "v", "w"], n),
            "y": np.where(a + rng.integers(-20, 20, n) > 50, "yes", "no"),
        }
    )
    x = pd.DataFrame({"a": ["100"], "c": ["u"], "y": ["yes"]})
    return d, pd.concat([d, x], ignore_index=True)


def schema_section(model_json: str) -> str:
    """The model file's schema section, as the file's compact JSON writes it."""
    return json.dumps(json.loads(model_json)["schema"], separators=(",", ":"))


def train_cli(capsys, tmp_path, frame, algorithm, schema_doc) -> tuple[str, str, dict]:
    tag = f"{algorithm}{len(frame)}"
    data, schema, out = (tmp_path / f"{tag}.{e}" for e in ("csv", "schema.json", "json"))
    frame.to_csv(data, index=False)
    schema.write_text(json.dumps(schema_doc))
    argv = ["train", "--data", str(data), "--label", "y", "--schema", str(schema)]
    argv += ["--algorithm", algorithm, "--epsilon", "1", "--out", str(out), "--json"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return out.read_text(), captured.err, json.loads(captured.out)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_cli_model_files_of_neighbours_have_the_same_schema_bytes(capsys, tmp_path, algorithm):
    d, dx = frames()
    # A stale data-derived sentence in the file (an older dpviz's) must not travel on.
    doc = {**DECLARED.to_dict(), "declaration": STALE}
    file_d, err_d, out_d = train_cli(capsys, tmp_path, d, algorithm, doc)
    file_dx, err_dx, out_dx = train_cli(capsys, tmp_path, dx, algorithm, doc)
    assert schema_section(file_d) == schema_section(file_dx)
    assert json.loads(file_d)["schema"]["declaration"] == DECLARED_BY_SCHEMA_OPTION
    assert out_d["schema_declaration"] == out_dx["schema_declaration"]
    for released in (file_d, file_dx, json.dumps(out_d), json.dumps(out_dx)):
        assert "min and max" not in released and "own values" not in released
    # the check still reaches the user, on stderr, labelled
    assert CHECK in err_dx and app_data.NOT_PRIVATE_CHECK in err_dx
    assert CHECK not in err_d


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_app_releases_of_neighbours_have_the_same_schema_bytes(algorithm):
    d, dx = frames()
    table = app_data.schema_table(DECLARED)
    released, choices = [], []
    for frame in (d, dx):
        choice = app_data.choose_schema(
            frame, "y", edits=table, classes="no, yes", declared_public=True
        )
        assert choice.public and choice.schema.declaration == DECLARED_ON_DATA_PAGE
        model = get_algorithm(algorithm).make(1.0, random_state=0, schema=choice.schema)
        model.fit_encoded(encode(frame, choice.schema), choice.schema)
        released.append(release(model, algorithm).to_json())
        choices.append(choice)
    assert schema_section(released[0]) == schema_section(released[1])
    assert all("min and max" not in text for text in released)
    # the Data page (and Train page) still show the check, labelled, for D ∪ {x} only
    assert choices[0].warnings == ()
    assert CHECK in choices[1].warnings[0]
    assert choices[1].warnings[0].startswith(f"Check ({app_data.NOT_PRIVATE_CHECK})")


def test_app_reports_and_uploaded_schemas_of_neighbours_are_identical():
    d, dx = frames()
    stale = Schema.from_dict({**DECLARED.to_dict(), "declaration": STALE})
    assert stale.declaration == ""  # dropped on reading
    html = []
    for frame in (d, dx):
        choice = app_data.choose_schema(frame, "y", schema_file=stale, schema_name="s.json")
        assert choice.public and choice.schema.declaration == DECLARED_BY_SCHEMA_UPLOAD
        html.append(
            decision_report(
                schema=choice.schema,
                algorithm="fletcher_islam",
                parameters={"mechanism": "permute_flip"},
                seeds={},
                chosen_epsilon=1.0,
            )
        )
    # plotly gives each embedded figure a random element id: the rest is identical
    same = [re.sub(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", "ID", h) for h in html]
    assert same[0] == same[1] and DECLARED_BY_SCHEMA_UPLOAD in html[0]
    assert "min and max" not in html[0]


def test_an_info_schema_then_declared_cannot_smuggle_a_sentence_into_the_model(capsys, tmp_path):
    d, dx = frames()
    data = tmp_path / "dx.csv"
    dx.to_csv(data, index=False)
    drafted = tmp_path / "inferred.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert (
            main(["info", "--data", str(data), "--label", "y", "--schema-out", str(drafted)]) == 0
        )
    doc = json.loads(drafted.read_text())
    assert doc["inferred"] is True  # the data owner's draft keeps what it read
    # The owner "declares" it by deleting the marks, and pastes a data-derived sentence.
    doc.pop("inferred")
    for feature in doc["features"]:
        feature.pop("inferred")
    doc["declaration"] = STALE
    capsys.readouterr()
    text, err, _ = train_cli(capsys, tmp_path, dx, "fletcher_islam", doc)
    assert json.loads(text)["schema"]["declaration"] == DECLARED_BY_SCHEMA_OPTION
    assert "min and max" not in text and "the data's own min and max" in err
    # Still marked inferred and exported with --values-public: no declaration at all.
    marked = json.loads(drafted.read_text()) | {"declaration": STALE}
    path = tmp_path / "marked.json"
    path.write_text(json.dumps(marked))
    out = tmp_path / "m.json"
    argv = ["train", "--data", str(data), "--label", "y", "--schema", str(path)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        code = main([*argv, "--epsilon", "1", "--values-public", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "declaration" not in json.loads(out.read_text())["schema"]
