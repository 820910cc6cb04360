"""The attacker of the privacy audit: public code, public seed and a released file.

Each attack is first shown to WORK against a model whose noise is replayable (the
NOT-private opt-in), so a failure against the default model means the secret noise
stopped it, not that the attack was broken.
"""

import json
import pickle

import numpy as np
import pytest

from dpviz import PrivateRDTClassifier, ReleasedForest
from dpviz.cli import main
from dpviz.evaluation.synthetic import make_synth
from dpviz.models.forest.estimator import DPRandomForestClassifier, space_for, tree_root_keys
from dpviz.models.forest.estimator import _seeds as public_seeds
from dpviz.models.trees.full import build_full
from dpviz.privacy.noise import KeyedLeafNoise, NoiseSource

PUBLIC_SEED = 0  # the CLI default: the attacker knows it
CANDIDATE_SEEDS = range(64)  # a user-chosen noise seed is a small integer


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A jpw model trained by the CLI with secret noise, one with replayable noise, and
    the true leaf counts (which the attacker wants)."""
    folder = tmp_path_factory.mktemp("attack")
    frame, schema = make_synth("SynthA", 1500, seed=0)
    frame.to_csv(folder / "d.csv", index=False)
    (folder / "s.json").write_text(schema.to_json())
    train = ["train", "--data", str(folder / "d.csv"), "--label", "label"]
    train += ["--schema", str(folder / "s.json"), "--algorithm", "jpw", "--epsilon", "1"]
    train += ["--param", "declared_n=1500", "--seed", str(PUBLIC_SEED)]
    assert main([*train, "--out", str(folder / "secret.json")]) == 0
    assert main([*train, "--noise-seed", "17", "--out", str(folder / "replay.json")]) == 0
    truth = PrivateRDTClassifier(schema=schema, random_state=PUBLIC_SEED, declared_n=1500)
    truth.fit(frame.drop(columns="label"), frame["label"])
    return folder, schema, truth


def _leaf_keys(model: ReleasedForest, schema) -> tuple[np.ndarray, np.ndarray]:
    """The attacker rebuilds every node key from the public seed and the file's depth."""
    structure_seed, _ = public_seeds(PUBLIC_SEED)
    space = space_for(schema, int(model.meta["depth"]))
    full = build_full(space, tree_root_keys(structure_seed, len(model.trees)), 10**6)
    leaf = full.feature < 0
    return full.key[leaf], full.tree[leaf]


def _released_counts(model: ReleasedForest) -> np.ndarray:
    return np.asarray(
        [o for tree in model.trees for o in tree["output"] if o is not None], dtype=np.int64
    )


def _recover(model: ReleasedForest, schema, noise_seed: int) -> np.ndarray | None:
    """Subtract the noise a replayable model with ``noise_seed`` would have drawn; keep
    the guess if it is consistent: every count ≥ 0 and every tree holding the same n."""
    keys, tree = _leaf_keys(model, schema)
    guess_model = PrivateRDTClassifier(
        epsilon=model.meta["epsilon"], noise_seed=noise_seed, declared_n=1500
    )
    source = guess_model._release_source(0)
    per_tree = model.meta["tree_epsilon"]  # the file states each tree's leaf budget
    noise = KeyedLeafNoise(source, keys).discrete_laplace(len(model.classes_), per_tree)
    counts = _released_counts(model) - noise
    sizes = np.bincount(tree, weights=counts.sum(axis=1))
    if (counts < 0).any() or len(set(sizes.tolist())) != 1:
        return None
    return counts


def test_the_attack_recovers_exact_counts_from_a_replayable_model(released):
    folder, schema, truth = released
    model = ReleasedForest.load(folder / "replay.json")
    assert "NOT private" in model.meta["noise"]
    found = {s: c for s in CANDIDATE_SEEDS if (c := _recover(model, schema, s)) is not None}
    assert list(found) == [17]
    # Every exact leaf count of every tree, trained leaves and empty ones.
    keys, _ = _leaf_keys(model, schema)
    exact = np.zeros_like(found[17])
    at = np.searchsorted(keys, truth.leaf_keys_)
    order = np.argsort(keys)
    exact[order[np.searchsorted(keys[order], truth.leaf_keys_)]] = truth.leaf_counts_
    assert np.array_equal(found[17], exact) and len(at) > 0


def test_the_same_attack_finds_nothing_in_a_model_with_secret_noise(released):
    folder, schema, _ = released
    model = ReleasedForest.load(folder / "secret.json")
    assert model.meta["noise"] == "secret" and model.meta["privacy"]["private"]
    assert not any(_recover(model, schema, s) is not None for s in CANDIDATE_SEEDS)
    # Nor does guessing that the noise came from the public seed itself.
    assert _recover(model, schema, PUBLIC_SEED) is None


def test_no_key_survives_a_fit(monkeypatch):
    """Record every secret key made during a fit; none may be reachable afterwards from
    the estimator, its pickle or its export."""
    made: list[bytes] = []
    fresh = NoiseSource.fresh.__func__

    def spy(cls):
        source = fresh(cls)
        made.append(source._key)
        return source

    monkeypatch.setattr(NoiseSource, "fresh", classmethod(spy))
    frame, schema = make_synth("SynthA", 600, seed=1)
    X, y = frame.drop(columns="label"), frame["label"]
    for model in (
        DPRandomForestClassifier(n_estimators=5, schema=schema, random_state=0),
        PrivateRDTClassifier(schema=schema, random_state=0),
    ):
        model.fit(X, y).predict(X)
        exported = ReleasedForest.from_estimator(model).to_json().encode()
        stored = pickle.dumps(model)
        assert made
        for key in made:
            assert key not in stored and key not in exported
        assert not any(isinstance(v, NoiseSource) for v in vars(model).values())
        assert json.loads(exported)["noise"] == "secret"
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(NoiseSource.fresh())
