"""Re-weighted leaderboard maths on hand-built codes and responses: exact values, ranks, groups, saturation."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.auditing.coverage import bin_codes, count_items
from irtbayes.auditing.ranking import (
    ahead_probability,
    draw_ranks,
    indistinguishable_groups,
    reweighted_accuracy,
    saturation,
    unrepresented_mass,
)


def test_target_equal_to_the_benchmarks_own_distribution_returns_raw_accuracy() -> None:
    rng = np.random.default_rng(0)
    edges = np.linspace(-2, 2, 6)
    difficulty = rng.uniform(-1.99, 1.99, size=(7, 40))  # every item inside the range, varying bins per draw
    responses = rng.uniform(size=(5, 40)).round(1)  # fractional scores too
    responses[:2] = (responses[:2] > 0.5).astype(float)
    codes = bin_codes(difficulty, edges)
    counts = count_items(codes, 5)[:, 1:-1]
    own = counts / counts.sum(axis=1, keepdims=True)  # (draw, bin): the benchmark's own binned distribution
    got = reweighted_accuracy(codes, responses, own)
    raw = responses.mean(axis=1)
    np.testing.assert_allclose(got, np.broadcast_to(raw, got.shape), atol=1e-12, err_msg=f"{got[0]} vs {raw}")


def test_reweighting_by_hand_with_missing_responses_and_items_outside() -> None:
    # bins: 0 holds items 0, 1; bin 1 holds item 2; item 3 lies above the range (weight 0)
    codes = np.array([[1, 1, 2, 3]])
    weights = np.array([0.25, 0.75])
    responses = np.array(
        [
            [1.0, 0.0, 1.0, 0.0],  # 0.25 * 0.5 + 0.75 * 1 = 0.875
            [1.0, np.nan, 0.0, 1.0],  # answered item 0 only in bin 0: 0.25 * 1 + 0.75 * 0 = 0.25
            [np.nan, 1.0, np.nan, 1.0],  # nothing in bin 1: renormalised to bin 0 alone -> 1.0
            [np.nan, np.nan, np.nan, 1.0],  # nothing in range -> NaN
        ]
    )
    got = reweighted_accuracy(codes, responses, weights)[0]
    np.testing.assert_allclose(got[:3], [0.875, 0.25, 1.0])
    assert np.isnan(got[3]), got


def test_empty_bins_carry_unrepresented_target_mass_and_the_rest_is_renormalised() -> None:
    codes = np.array([[1, 1, 3]])  # bin 1 (of 3) holds nothing
    weights = np.array([0.2, 0.5, 0.3])
    responses = np.array([[1.0, 1.0, 0.0]])
    assert reweighted_accuracy(codes, responses, weights)[0, 0] == pytest.approx(0.2 / 0.5)
    counts = count_items(codes, 3)[:, 1:-1]
    assert unrepresented_mass(counts, weights)[0] == pytest.approx(0.5)


def test_item_weights_of_one_change_nothing_and_bootstrap_weights_stay_in_range() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 7, size=(20, 30))
    responses = rng.integers(0, 2, size=(4, 30)).astype(float)
    w = np.full(5, 0.2)
    plain = reweighted_accuracy(codes, responses, w)
    np.testing.assert_allclose(reweighted_accuracy(codes, responses, w, item_weights=np.ones((20, 30))), plain)
    boot = reweighted_accuracy(codes, responses, w, item_weights=rng.standard_exponential((20, 30)))
    assert np.all((boot >= 0) & (boot <= 1)), boot


def test_ranks_break_ties_by_ability_and_put_nan_last() -> None:
    scores = np.array([[0.5, 0.9, 0.5, np.nan], [0.1, 0.2, 0.3, 0.4]])
    ability = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    ranks = draw_ranks(scores, tiebreak=ability)
    assert ranks.tolist() == [[3, 1, 2, 4], [4, 3, 2, 1]], ranks


def test_ahead_probability_and_groups_by_hand() -> None:
    ranks = np.array([[1, 2, 3], [2, 1, 3], [1, 2, 3], [1, 3, 2]])
    ahead = ahead_probability(ranks)
    assert ahead[0, 1] == pytest.approx(0.75) and ahead[1, 0] == pytest.approx(0.25)
    assert ahead[0, 2] == pytest.approx(1.0) and ahead[1, 2] == pytest.approx(0.75)
    assert np.isnan(ahead[0, 0])
    groups = indistinguishable_groups(ahead, ranks.mean(axis=0), threshold=0.9)
    # subject 1 is not credibly behind leader 0 (0.75 < 0.9); subject 2 is (1.0) and starts group 2
    assert groups.tolist() == [1, 1, 2], groups


def test_saturation_of_the_top_subjects() -> None:
    responses = np.array(
        [
            [1, 1, 0, 1, np.nan],
            [1, 0, 0, 1, np.nan],
            [1, 1, 0, np.nan, np.nan],
            [0, 0, 1, 0, 1],  # not in the top
        ]
    )
    out = saturation(responses, np.array([0, 1, 2]))
    assert out["answered"].tolist() == [True, True, True, True, False]
    assert out["saturated"].tolist() == [True, False, False, True, False]
    assert out["separates"].tolist() == [False, True, False, False, False]
