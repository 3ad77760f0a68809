"""The design families' LLM-leaderboard features: model families, chance floors, block-missing results, extremes."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.core.errors import SpecError
from irtbayes.data.designs import FAMILIES, Design, simulate_design


def test_model_families_cluster_the_abilities():
    sim = simulate_design(Design("c", systems=(300, 300), clusters=(6, 6)), seed=1)
    assert sim.drawn["clusters"] == 6
    ability, family = sim.truth["ability"].values, sim.truth["family"].values
    assert len(np.unique(family)) == 6
    means = np.array([ability[family == f].mean() for f in family])
    assert float(np.var(means)) / float(np.var(ability)) > 0.6  # most of the spread lies between families
    plain = simulate_design(Design("p", systems=(300, 300)), seed=1)
    assert "clusters" not in plain.drawn and (plain.truth["family"].values == 0).all()


def test_a_chance_floor_raises_the_lowest_accuracy_to_one_over_the_options():
    design = Design("mc", systems=(400, 400), items=(200, 200), choices=(4,), extremes=(0.2, 0.2))
    sim = simulate_design(design, seed=2)
    assert (sim.data.items["n_options"] == 4).all() and sim.drawn["chance_floor"] == [0.25]
    accuracy = sim.data.to_matrix().mean(axis=0)
    impossible = sim.truth["difficulty"].values > 4  # no system's ability reaches them: only guesses
    assert impossible.sum() >= 15
    assert abs(float(accuracy[impossible].mean()) - 0.25) < 0.03
    trivial = sim.truth["difficulty"].values < -4
    assert float(accuracy[trivial].mean()) > 0.97


def test_block_missing_leaves_whole_benchmarks_unrun_for_some_systems():
    design = Design("blocks", systems=(200, 200), benchmarks=(4, 4), items=(30, 30), block_missing=(0.3, 0.3))
    sim = simulate_design(design, seed=3)
    matrix = sim.data.to_matrix()
    bench = sim.data.items.loc[sim.data.item_ids, "benchmark"].to_numpy()
    run = np.stack([~np.isnan(matrix[:, bench == b]).all(axis=1) for b in np.unique(bench)], axis=1)
    observed_within = [~np.isnan(matrix[j, bench == b]) for j, b in zip(*np.nonzero(run), strict=False)]
    assert all(cells.all() for cells in observed_within)  # a benchmark run is run whole (no cell-level missing here)
    assert 0.2 < 1 - run.mean() < 0.4 and run.any(axis=1).all()


def test_the_earlier_families_draw_the_same_data_as_before():
    """Features switched off draw no random numbers, so the calibration study's data sets are unchanged."""
    sim = simulate_design(FAMILIES["leaderboard"], seed=1)
    assert sim.data.checksum() == "d3b0420cfa693646fee54274e6fc56d4c38af5bd0e893d0bafb144731fcd0a38"


def test_llm_families_are_registered_and_bad_settings_refused():
    assert {"llm_leaderboard", "llm_multiple_choice"} <= set(FAMILIES)
    with pytest.raises(SpecError, match="choices"):
        Design("bad", systems=(10, 10), choices=(1,))
    with pytest.raises(SpecError, match="block_missing"):
        Design("bad", systems=(10, 10), block_missing=(0.5, 0.95))
