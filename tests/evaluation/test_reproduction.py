"""Accuracy against the 2017 paper's Fig. 11 / Fig. 4 (SPEC §6), on the real datasets."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dpviz.evaluation.cross_validation import cross_validate
from dpviz.evaluation.synthetic import SYNTH_SPECS, make_synth
from dpviz.privacy.schema import infer_schema
from dpviz.tabular.encode import encode
from tests.conftest import dataset_frame, reference_path

FIG11_NAMES = {
    "adult": "Adult",
    "mushroom": "Mushroom",
    "nursery": "Nursery",
    "magic_gamma": "GammaTele",
    "pendigits": "PenWritten",
    "wall_robot": "WallSensor",
}
# Measured with 5-fold CV, seed 0 (see README "Reproduction"): below the paper minus 2.
SHORT_OF_PAPER = {
    "mushroom": "ours 95.2% vs the paper's 97.3% less 2, 95.3%: at the threshold, 95.0-95.4% "
    "over noise seeds 0-4 (95.4-95.7% with the records dealt to trees by a hash that read "
    "their labels too, before 2026-11-29: another draw of the partition)",
    "magic_gamma": "ours 69.9% vs paper 75.0%: even true majority labels (ε = ∞) give 70.6% "
    "with uniform splits over MAGIC's heavy-tailed [min, max] domains",
    "pendigits": "ours 77.8% vs paper 83.9% (smooth_em, not DP, gives 80.9% here)",
}


def paper_accuracy(dataset: str, series: str) -> float:
    table = pd.read_csv(reference_path("fletcher2017_results.csv"))
    row = table[(table.figure == "Fig11") & (table.series == series)]
    return float(row[row.dataset == dataset].value.iloc[0])


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=SHORT_OF_PAPER[n], strict=True))
        if n in SHORT_OF_PAPER
        else n
        for n in FIG11_NAMES
    ],
)
def test_permute_flip_reaches_fig11_minus_2(name):
    frame = dataset_frame(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema = infer_schema(frame, "label")
    encoded = encode(frame, schema)
    result = cross_validate(
        encoded,
        schema,
        epsilon=1.0,
        n_estimators=100,
        depth="theorem2",  # the paper's depth rule
        mechanism="permute_flip",
        folds=5,
        seed=0,
        noise_seed=0,  # replayable (NOT private) noise: a reproduction, not a release
        prior_share=0.0,  # the paper's forest: no class prior
        split_points="uniform",  # and uniform thresholds
    )
    target = paper_accuracy(FIG11_NAMES[name], "smooth_em") - 2.0
    assert 100 * result["accuracy"]["mean"] >= target


@pytest.mark.slow
def test_synthetic_effects_of_fig4():
    """SynthA–G, 3 generator seeds, 5-fold: permute_flip within 1 point of smooth_em,
    global_em at least 8 points below smooth_em on each dataset."""
    for name in SYNTH_SPECS:
        acc = {m: [] for m in ("smooth_em", "permute_flip", "global_em")}
        for seed in range(3):
            frame, schema = make_synth(name, 30_000, seed=seed)
            encoded = encode(frame, schema)
            for mech in acc:
                result = cross_validate(
                    encoded,
                    schema,
                    epsilon=1.0,
                    mechanism=mech,
                    seed=seed,
                    prior_share=0.0,
                    split_points="uniform",
                )
                acc[mech].append(100 * result["accuracy"]["mean"])
        mean = {m: float(np.mean(v)) for m, v in acc.items()}
        assert abs(mean["permute_flip"] - mean["smooth_em"]) <= 1.0, (name, mean)
        assert mean["smooth_em"] - mean["global_em"] >= 8.0, (name, mean)
