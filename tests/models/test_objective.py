"""The decision rule for imbalanced data (issue 28): ``objective`` on every algorithm.

The rule itself on hand-made arrays (exact), then on a generated 6%-positive binary set
where the majority's macro-F1 is about 0.485: ``macro_f1`` must beat it for every
algorithm at ε = 1, while ``accuracy`` keeps today's predictions exactly. Then the
model file, the CLI option and the Train page's widget.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.cli import main
from dpviz.evaluation.cross_validation import cross_validate
from dpviz.models.files.load import model_from_json, release
from dpviz.models.files.manifest import unaccounted
from dpviz.models.objective import EXPONENTS, OBJECTIVES, class_weights, decide
from dpviz.models.registry import ALGORITHMS, get_algorithm
from dpviz.privacy.schema import infer_schema
from dpviz.tabular.encode import encode

FAST = {"dpboost": {"n_estimators": 10}}


def test_rule_on_hand_made_arrays():
    scores = np.array([[0.9, 0.1], [0.7, 0.3], [0.96, 0.04], [0.5, 0.5]])
    prior = np.array([0.8, 0.2])
    # accuracy: the plain argmax, ties to the lowest index
    assert decide(scores, prior, "accuracy").tolist() == [0, 0, 0, 0]
    # balanced: p/π → row 1: 0.875 vs 1.5; row 0: 1.125 vs 0.5; row 2: 1.2 vs 0.2
    assert decide(scores, prior, "balanced_accuracy").tolist() == [0, 1, 0, 1]
    a = EXPONENTS["macro_f1"]
    expected = np.argmax(scores * prior**-a, axis=1)
    assert decide(scores, prior, "macro_f1").tolist() == expected.tolist()
    np.testing.assert_array_equal(class_weights("balanced_accuracy", prior), [1.25, 5.0])
    np.testing.assert_array_equal(class_weights("accuracy", prior), [1.0, 1.0])
    # a uniform (public) prior changes nothing
    uniform = np.full(2, 0.5)
    for objective in OBJECTIVES:
        assert decide(scores, uniform, objective).tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="objective must be one of"):
        decide(scores, prior, "recall")


def imbalanced(n: int = 3000, seed: int = 7) -> pd.DataFrame:
    """6% positives, two continuous features shifted by 2 sd for them, a noise feature
    and a discrete one that leans positive (fixed seed)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.06
    return pd.DataFrame(
        {
            "x1": rng.normal(0, 1, n) + 2.0 * y,
            "x2": rng.normal(0, 1, n) + 2.0 * y,
            "x3": rng.normal(0, 1, n),
            "c": np.where(rng.random(n) < 0.3 + 0.4 * y, "a", "b"),
            "label": np.where(y, "yes", "no"),
        }
    )


@pytest.fixture(scope="module")
def data():
    frame = imbalanced()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = infer_schema(frame, "label", warn=False)
    return frame, schema, encode(frame, schema)


# DPBoost passes since issue 28's small macro_f1 model (3,000 records: one depth-2 tree
# and its leaves' noisy class counts); before it, its rule predicted the majority here
# (0.485 with noise seed 1; its scores reach E[y|x] less evenly than its reach κ says).
@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_macro_f1_beats_the_majority_on_imbalanced_data(data, algorithm):
    frame, schema, encoded = data
    params = {**FAST.get(algorithm, {}), "objective": "macro_f1"}
    result = cross_validate(
        encoded, schema, epsilon=1.0, algorithm=algorithm, seed=0, noise_seed=1, **params
    )
    majority = result["majority"]["macro_f1"]["mean"]
    # The majority scores F1 0 on the positives and ~0.97 on the negatives: ~0.485.
    assert majority == pytest.approx(0.485, abs=0.01)
    # Fixed seeds make the numbers exact; the margin of 0.05 (measured gains 0.2–0.3)
    # is about one fold's standard deviation of macro-F1 with ~36 positives a test
    # fold, so that another seed would not undo the claim.
    assert result["macro_f1"]["mean"] > majority + 0.05, result["macro_f1"]


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_accuracy_keeps_todays_predictions(data, algorithm):
    frame, schema, encoded = data
    X = frame.drop(columns="label")
    fit = {"random_state": 0, "noise_seed": 3, "schema": schema, **FAST.get(algorithm, {})}
    plain = get_algorithm(algorithm).make(1.0, **fit).fit(X, frame["label"])
    chosen = get_algorithm(algorithm).make(1.0, objective="accuracy", **fit)
    chosen.fit(X, frame["label"])
    today = plain.classes_[np.argmax(plain.predict_proba(X), axis=1)]
    np.testing.assert_array_equal(plain.predict(X), today)
    np.testing.assert_array_equal(chosen.predict(X), today)
    # The objective is post-processing: the same release answers every objective,
    # and predict_proba does not move.
    np.testing.assert_array_equal(chosen.predict_proba(X), plain.predict_proba(X))
    plain.set_params(objective="balanced_accuracy")
    np.testing.assert_array_equal(plain.predict_proba(X), chosen.predict_proba(X))
    assert (plain.predict(X) == "yes").sum() >= (today == "yes").sum()


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_a_model_file_keeps_the_objective(data, algorithm):
    frame, schema, _ = data
    X = frame.drop(columns="label")
    model = get_algorithm(algorithm).make(
        1.0, schema=schema, objective="balanced_accuracy", **FAST.get(algorithm, {})
    )
    model.fit(X, frame["label"])
    text = release(model, algorithm, values_public=True).to_json()
    doc = json.loads(text)
    assert doc["objective"] == "balanced_accuracy"
    assert unaccounted(doc) == []
    loaded = model_from_json(text)
    assert loaded.objective == "balanced_accuracy"
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(
        loaded.predict(X, "accuracy"), model.classes_[np.argmax(model.predict_proba(X), 1)]
    )
    # A file without the field (written before objectives) predicts as accuracy.
    del doc["objective"], doc["signature"]
    older = model_from_json(json.dumps(doc))
    assert older.objective == "accuracy"
    doc["objective"] = "recall"
    with pytest.raises(ValueError, match="objective must be one of"):
        model_from_json(json.dumps(doc))


def test_every_algorithm_has_the_parameter():
    for algorithm in ALGORITHMS.values():
        (param,) = [p for p in algorithm.parameters if p.name == "objective"]
        assert param.default == "accuracy" and param.choices == OBJECTIVES
        with pytest.raises(ValueError, match="objective must be one of"):
            algorithm.make(1.0, objective="recall")


def test_the_cli_option(tmp_path, capsys):
    frame = imbalanced(1500)
    path = tmp_path / "imb.csv"
    frame.to_csv(path, index=False)
    model = tmp_path / "m.json"
    base = ("--data", path, "--label", "label", "--epsilon", 1)
    # Replayable noise (NOT private, a test): a fixed tree, so that the two rules are
    # compared on one release rather than on whatever fresh noise drew.
    argv = ("train", *base, "--algorithm", "friedman_schuster", "--objective", "macro_f1")
    argv += ("--noise-seed", 1)
    assert main([str(a) for a in (*argv, "--values-public", "--out", model)]) == 0
    assert json.loads(model.read_text())["objective"] == "macro_f1"
    preds, plain = tmp_path / "p.csv", tmp_path / "q.csv"
    assert main(["predict", "--model", str(model), "--data", str(path), "--out", str(preds)]) == 0
    argv = ["predict", "--model", str(model), "--data", str(path), "--out", str(plain)]
    assert main([*argv, "--objective", "accuracy"]) == 0
    weighed = pd.read_csv(preds)["prediction"]
    argmax = pd.read_csv(plain)["prediction"]
    assert (weighed == "yes").sum() > (argmax == "yes").sum()
    capsys.readouterr()
    argv = ["evaluate", *map(str, base), "--algorithm", "fletcher_islam"]
    argv += ["--objective", "macro_f1", "--noise-seed", "1"]
    assert main([*argv, "--folds", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["macro_f1"]["mean"] > 0.5
    out = tmp_path / "sweep.csv"
    argv = ["sweep", *map(str, base[:4]), "--epsilons", "1", "--algorithm", "jpw", "--folds", "2"]
    assert (
        main(
            [*argv, "--objective", "balanced_accuracy", "--no-references", "--noise-seed", "1"]
            + ["--out", str(out)]
        )
        == 0
    )
    # The majority's macro-F1 is about 0.485 here; one replayable release per fold.
    assert pd.read_csv(out)["macro_f1"].mean() > 0.5
    argv = ["predict", "--model", str(model), "--data", str(path), "--objective", "recall"]
    assert main(argv) != 0
    assert "invalid choice: 'recall'" in capsys.readouterr().err


def test_the_train_page_offers_the_objective():
    """The Train page builds its widgets from the registry: each algorithm gets an
    objective selectbox at "accuracy" with the three choices."""
    from tests.app.test_algorithms_app import open_train
    from tests.page_checks import key

    at = open_train()
    for algorithm in ALGORITHMS:
        at.selectbox(key=key("train.algorithm")).set_value(algorithm).run()
        box = at.selectbox(key=key(f"train.{algorithm}.objective"))
        assert box.value == "accuracy" and tuple(box.options) == OBJECTIVES
