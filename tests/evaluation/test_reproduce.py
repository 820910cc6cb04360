import numpy as np
import pytest

from dpviz.cli import main
from dpviz.evaluation.reproduce import reproduce, to_markdown
from tests.conftest import DATASETS, reference_path


def test_figure_8_table_has_paper_and_ours():
    """Fig. 8 (flip % against tree count, SynthA–G): one generator seed, 2 folds."""
    table = reproduce(
        "8",
        reference_csv=reference_path("fletcher2017_results.csv"),
        datasets_dir=DATASETS,
        folds=2,
        generator_seeds=1,
        noise_seed=0,
    )
    assert len(table) == 35
    assert table.paper.notna().all() and table.ours.notna().all()
    # The paper's effect: more trees → fewer records per leaf → more flips.
    for _, rows in table.groupby("dataset"):
        flips = rows.sort_values("trees").ours.to_numpy()
        assert flips[-1] > flips[0]
    markdown = to_markdown(table)
    assert "NOT DP" in markdown and "permute_flip" in markdown


def test_bad_figure_is_an_error(capsys):
    assert main(["reproduce", "--figure", "10"]) == 2
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("figure", ["4", "5", "6", "7", "11", "12", "13"])
def test_reproduce_figures_run(figure):
    table = reproduce(
        figure,
        reference_csv=reference_path("fletcher2017_results.csv"),
        datasets_dir=DATASETS,
        folds=2,
        generator_seeds=1,
    )
    assert np.isfinite(table.paper).all()
