"""Every released byte accounted for: the model files of every algorithm, exported from
the CLI and from the app's Train path, hold only fields the release manifest names, and
the public ones are equal for D and D ∪ {x} with x at a declared bound; the app sizes the
released forest from a noisy count, never from the file's row count."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpviz.app import data as app_data
from dpviz.app import train as app_train
from dpviz.cli import main
from dpviz.models.files.load import release
from dpviz.models.files.manifest import (
    MANIFEST,
    PUBLIC,
    public_fields,
    unaccounted,
)
from dpviz.models.registry import ALGORITHMS
from dpviz.privacy.schema import Feature, Schema
from dpviz.tabular.encode import encode

SCHEMA = Schema(
    "label",
    ("no", "yes", "maybe"),
    (
        Feature("a", "continuous", low=0.0, high=100.0),
        Feature("c", "discrete", values=("u", "v", "w")),
    ),
)


def records(n: int, seed: int = 0) -> pd.DataFrame:
    """n records over SCHEMA, none at a bound of 'a', class 'maybe' absent."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(1.0, 99.0, n).round(2)
    return pd.DataFrame(
        {
            "a": a,
            "c": rng.choice(["u", "v", "w"], n),
            "label": np.where(a + rng.normal(0, 20, n) > 50, "yes", "no"),
        }
    )


# x sits on the declared max of 'a' and holds a class that D lacks: the two checks an
# outsider can read most easily (a data-derived sentence, a class-dependent dtype).
D = records(300)
D_PLUS_X = pd.concat(
    [D, pd.DataFrame({"a": [100.0], "c": ["w"], "label": ["maybe"]})], ignore_index=True
)


def cli_export(
    tmp_path, frame: pd.DataFrame, algorithm: str, name: str, capsys, epsilon: str = "1"
) -> dict:
    data, schema, out = tmp_path / f"{name}.csv", tmp_path / "schema.json", tmp_path / name
    frame.to_csv(data, index=False)
    schema.write_text(SCHEMA.to_json())
    argv = ["train", "--data", str(data), "--label", "label", "--schema", str(schema)]
    argv += ["--epsilon", epsilon, "--algorithm", algorithm, "--out", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    return json.loads(out.read_text())


def app_export(frame: pd.DataFrame, algorithm: str) -> dict:
    upload = app_data.read_upload("upload.csv", frame.to_csv(index=False).encode())
    choice = app_data.choose_schema(upload.frame, "label", schema_file=SCHEMA)
    data = app_data.prepare(upload, choice)
    settings = app_train.TrainSettings(algorithm=algorithm, folds=2, sklearn_reference=False)
    run = app_train.train(data, settings)
    return json.loads(run.model_json)


def assert_accounted_and_public_equal(first: dict, second: dict) -> None:
    assert unaccounted(first) == [] and unaccounted(second) == []
    a, b = public_fields(first), public_fields(second)
    assert a.keys() == b.keys()
    for path in a:
        assert a[path] == b[path], path


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_cli_files_of_neighbours_differ_only_in_released_fields(tmp_path, capsys, algorithm):
    d = cli_export(tmp_path, D, algorithm, "d.json", capsys)
    d_x = cli_export(tmp_path, D_PLUS_X, algorithm, "dx.json", capsys)
    assert_accounted_and_public_equal(d, d_x)


def test_the_floor_check_is_a_released_field_of_neighbours_files(tmp_path, capsys):
    """From ε = 2 the forest books its floor's check: the file carries a noisy gain and
    noisy disagreements, and everything public about it is equal between D and D plus x."""
    d = cli_export(tmp_path, D, "fletcher_islam", "d.json", capsys, epsilon="4")
    d_x = cli_export(tmp_path, D_PLUS_X, "fletcher_islam", "dx.json", capsys, epsilon="4")
    assert d["check_epsilon"] == d_x["check_epsilon"] > 0
    for doc in (d, d_x):
        assert isinstance(doc["floor_check"], int) and isinstance(doc["floor_disagreements"], int)
    assert_accounted_and_public_equal(d, d_x)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_app_files_of_neighbours_differ_only_in_released_fields(algorithm):
    assert_accounted_and_public_equal(app_export(D, algorithm), app_export(D_PLUS_X, algorithm))


def test_the_manifest_names_what_it_does_not_know():
    fitted = ALGORITHMS["fletcher_islam"].make(1.0, schema=SCHEMA, random_state=0)
    document = json.loads(release(fitted.fit(D[["a", "c"]], D["label"])).to_json())
    assert unaccounted(document) == []
    document["schema"]["note"] = "'a' [1.0, 99.0] (the data's own min and max)"
    document["n_records"] = 300
    assert unaccounted(document) == ["/n_records", "/schema/note"]
    assert unaccounted({"format": "pickle"}) == ["/format: 'pickle' is not a dpviz model format"]
    # The leaf outputs and the prior are releases, never public input.
    assert MANIFEST["dpviz-forest"]["/trees/[]/output"].kind != PUBLIC
    assert "/prior_counts" not in public_fields(document)


def released_sizes(n: int, fits: int) -> np.ndarray:
    """(trees, depth) of ``fits`` models the app's Train path releases on n records."""
    frame = records(n, seed=n)
    encoded = encode(frame, SCHEMA, training=True)
    settings = app_train.TrainSettings()
    out = []
    for _ in range(fits):
        model = app_train.fit_release(encoded, SCHEMA, settings)
        out.append((model.n_estimators_, model.depth_))
    return np.array(out)


def test_the_app_sizes_the_released_forest_from_a_noisy_count_not_the_rows():
    """3,749 records give 10 trees by the size rule, 3,750 give 25. The app's release
    reads the booked noisy count (ε = 0.05, scale 20), so both sizes come out at either
    count with about equal probability; reading the rows gave 10 at one and 25 at the
    other every time. 100 fits each: a share's standard error is at most 0.05, so a gap
    of 0.35 (five errors of the difference) is a false alarm with probability < 1e-6."""
    assert app_train.TrainSettings().values["n_estimators"] == "auto"
    fits = 100
    below, above = released_sizes(3_749, fits), released_sizes(3_750, fits)
    for sizes in (below, above):
        assert set(sizes[:, 0]) <= {10, 25}
    share_below, share_above = (np.mean(s[:, 0] == 25) for s in (below, above))
    assert abs(share_below - share_above) < 0.35
    assert 0.15 < share_below < 0.85  # both tree counts occur at 3,749 records
    depths = sorted(set(below[:, 1]) | set(above[:, 1]))
    gap = sum(abs(np.mean(below[:, 1] == d) - np.mean(above[:, 1] == d)) for d in depths)
    assert gap < 0.7  # total variation of the depth below 0.35


def test_dpboost_sizes_that_follow_its_released_prior_are_not_public():
    """DPBoost grows at ε ≥ 5 when its noisy prior counts ≥ 6,000 records, and its file
    then states the sizes it used. Under noise seed 5 the prior's noise sums to −1, so
    6,000 records stay small and the same plus one grow: the two neighbours' files differ
    in those sizes, which the manifest must book as derived from the release, not public."""
    d = records(6000, seed=1)
    d_x = pd.concat([d, d.iloc[:1]], ignore_index=True)
    documents, grown = [], []
    for frame in (d, d_x):
        model = ALGORITHMS["dpboost"].make(10.0, schema=SCHEMA, random_state=0, noise_seed=5)
        model.fit(frame[["a", "c"]], frame["label"])
        grown.append(model.grown_)
        documents.append(json.loads(release(model).to_json()))
    assert grown == [False, True]
    assert documents[0]["params"] != documents[1]["params"]
    assert_accounted_and_public_equal(*documents)
