"""Simulated graded responses (simulate_responses with kind 'grm' / 'gpcm'): the data contract, the truth,
the category frequencies against the model, and the binary kinds left as they were."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from irtbayes.core import irt
from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import graded_thresholds, simulate_responses

KINDS = ("grm", "gpcm")


@pytest.mark.parametrize("kind", KINDS)
def test_data_follow_the_graded_contract(kind: str) -> None:
    n_cat = [2, 3, 4, 5, 5, 4, 3, 2, 6]
    data, _ = simulate_responses(300, 9, kind=kind, n_categories=n_cat, n_benchmarks=3, seed=5)
    assert data.response_kind == "ordinal"
    assert data.items["n_categories"].tolist() == n_cat
    assert data.n_categories.dtype == np.int64 and data.n_categories.tolist() == n_cat
    values = data.values
    assert values.dtype == np.float64 and np.all(values == np.round(values)) and values.min() == 0
    own_k = data.n_categories[data.item_codes]
    assert np.all(values <= own_k - 1), "a code past its item's categories"
    for i, k in enumerate(n_cat):  # 300 subjects use every category of every item
        assert set(values[data.item_codes == i].astype(int).tolist()) == set(range(k)), (i, k)
    assert abs(data.n_responses / (300 * 9) - 0.9) < 0.02  # the default 10% missing


@pytest.mark.parametrize("kind", KINDS)
def test_truth_holds_thresholds_difficulty_and_location(kind: str) -> None:
    n_cat = np.array([2, 5, 3, 4, 5, 2, 3, 4])
    data, truth = simulate_responses(40, 8, kind=kind, n_categories=n_cat.tolist(), seed=2)
    assert {"ability", "discrimination", "difficulty", "threshold", "intercept", "location"} == set(truth.data_vars)
    assert truth["threshold"].dims == ("item", "boundary") and truth["intercept"].dims == ("item", "boundary")
    assert truth["boundary"].values.tolist() == ["1", "2", "3", "4"]
    assert truth["item"].values.tolist() == data.item_ids.tolist()
    b = truth["threshold"].values
    own = np.arange(4)[None, :] < (n_cat - 1)[:, None]
    assert np.all(np.isfinite(b[own])) and np.all(np.isnan(b[~own]))
    np.testing.assert_allclose(truth["difficulty"].values, np.nanmean(b, axis=1), atol=1e-12)
    a = truth["discrimination"].values
    np.testing.assert_allclose(truth["intercept"].values, -a[:, None] * b)
    np.testing.assert_allclose(truth["location"].values, irt.graded_location(a, b, kind=kind), atol=1e-12)
    score = irt.graded_expected_score(truth["location"].values, a, b, kind=kind)
    np.testing.assert_allclose(score, (n_cat - 1) / 2, atol=1e-9)
    binary = n_cat == 2
    np.testing.assert_allclose(truth["location"].values[binary], b[binary, 0], atol=1e-9)
    assert truth.attrs["kind"] == kind


def test_grm_thresholds_increase_and_gpcm_steps_sometimes_reverse() -> None:
    location = np.zeros(2000)
    n_cat = np.full(2000, 5)
    grm = graded_thresholds(np.random.default_rng(1), location, n_cat, kind="grm")
    gpcm = graded_thresholds(np.random.default_rng(1), location, n_cat, kind="gpcm")
    assert np.all(np.diff(grm, axis=1) > 0)
    reversed_share = float((np.diff(gpcm, axis=1) < 0).mean())
    assert 0.02 < reversed_share < 0.1, reversed_share  # P(N(0.8, 0.5) < 0) = 0.055
    np.testing.assert_allclose(grm.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(gpcm.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.median(np.diff(grm, axis=1)), 1.0, atol=0.02)


@pytest.mark.parametrize("kind", KINDS)
def test_seeded_and_reproducible(kind: str) -> None:
    first = simulate_responses(30, 10, kind=kind, n_categories=3, seed=7)
    again = simulate_responses(30, 10, kind=kind, n_categories=3, seed=7)
    other = simulate_responses(30, 10, kind=kind, n_categories=3, seed=8)
    assert first[0].checksum() == again[0].checksum() != other[0].checksum()
    assert first[1].identical(again[1])
    assert not np.array_equal(first[1]["threshold"].values, other[1]["threshold"].values)


@pytest.mark.parametrize("kind", KINDS)
def test_category_frequencies_match_the_model(kind: str) -> None:
    """Pearson's chi-square of each item's category counts against the model's probabilities summed over the
    simulated abilities (the counts' expectation given the abilities), pooled over items."""
    n_subjects, n_cat = 4000, [2, 3, 4, 5, 6, 4]
    data, truth = simulate_responses(n_subjects, 6, kind=kind, n_categories=n_cat, missing=0.0, seed=11)
    matrix = data.to_matrix()
    assert not np.isnan(matrix).any()
    p = irt.graded_probabilities(
        truth["ability"].values[:, None], truth["discrimination"].values, truth["threshold"].values, kind=kind
    )  # (subject, item, Kmax)
    expected = p.sum(axis=0)  # (item, Kmax)
    statistic, df = 0.0, 0
    for i, k in enumerate(n_cat):
        observed = np.bincount(matrix[:, i].astype(int), minlength=6)
        assert observed[k:].sum() == 0 and expected[i, k:].sum() < 1e-9
        assert expected[i, :k].min() > 20, expected[i]  # enough for the chi-square approximation
        statistic += float(((observed[:k] - expected[i, :k]) ** 2 / expected[i, :k]).sum())
        df += k - 1
        # and each share within 4 binomial standard errors of its expectation
        share, want = observed[:k] / n_subjects, expected[i, :k] / n_subjects
        assert np.all(np.abs(share - want) < 4 * np.sqrt(want * (1 - want) / n_subjects)), (i, share, want)
    p_value = float(stats.chi2.sf(statistic, df))
    assert p_value > 1e-3, f"chi-square {statistic:.1f} on {df} df, p = {p_value:.2g}"


def test_domain_abilities_and_benchmarks_work_with_graded_kinds() -> None:
    data, truth = simulate_responses(
        60, 12, kind="gpcm", n_categories=4, n_benchmarks=4, n_domains=2, dims="domain", seed=3
    )
    assert truth["ability"].dims == ("subject", "dim") and data.response_kind == "ordinal"
    assert sorted(set(data.items["benchmark"].tolist())) == ["bench00", "bench01", "bench02", "bench03"]
    assert data.n_categories.tolist() == [4] * 12
    assert "n_options" not in data.items.columns  # graded items have categories, not options


def test_default_is_four_categories_and_all_binary_banks_are_binary_data() -> None:
    data, truth = simulate_responses(20, 5, kind="grm", seed=1)
    assert data.n_categories.tolist() == [4] * 5 and truth.sizes["boundary"] == 3
    data, truth = simulate_responses(50, 5, kind="grm", n_categories=2, seed=1)
    assert data.response_kind == "binary" and truth.sizes["boundary"] == 1
    np.testing.assert_allclose(truth["location"].values, truth["difficulty"].values, atol=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "grm", "n_trials": 3}, "n_trials=3 gives k successes of n trials"),
        ({"kind": "2pl", "n_categories": 3}, "n_categories is for the graded kinds"),
        ({"kind": "gpcm", "n_categories": 1}, "at least 2 categories"),
        ({"kind": "gpcm", "n_categories": [3, 4]}, "one per item"),
        ({"kind": "grm", "n_categories": 2.5}, "one integer or a sequence"),
        ({"kind": "rasch"}, "'grm' or 'gpcm'"),
    ],
)
def test_bad_graded_settings(kwargs: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        simulate_responses(10, 6, seed=0, **kwargs)


#: Binary kinds as they were before graded kinds were added (simulate_responses(50, 40, seed=3, ...)):
#: observed cells, sum of responses, sum of responses times item position, and the truth's sums.
_BINARY_PINS = [
    ({"kind": "1pl"}, 1768, 916.0, 17967.0, -0.15276399, 36.59552492),
    ({"kind": "2pl"}, 1767, 878.0, 16568.0, -0.15276399, 40.926180028),
    ({"kind": "3pl", "n_trials": 5}, 1771, 1116.8, 21596.6, -0.15276399, 40.926180028),
    (
        {"kind": "2pl", "n_benchmarks": 4, "n_domains": 2, "dims": "domain"},
        1770,
        961.0,
        22142.0,
        -10.119687719,
        43.73298082,
    ),
]


@pytest.mark.parametrize(("kwargs", "n_cells", "total", "weighted", "difficulty", "discrimination"), _BINARY_PINS)
def test_binary_kinds_are_unchanged(
    kwargs: dict, n_cells: int, total: float, weighted: float, difficulty: float, discrimination: float
) -> None:
    data, truth = simulate_responses(50, 40, seed=3, **kwargs)
    matrix = data.to_matrix()
    assert int(np.isfinite(matrix).sum()) == n_cells
    assert float(np.nansum(matrix)) == pytest.approx(total, abs=1e-9)
    assert float((np.nan_to_num(matrix) * np.arange(40)).sum()) == pytest.approx(weighted, abs=1e-9)
    assert float(truth["difficulty"].sum()) == pytest.approx(difficulty, abs=1e-8)
    assert float(truth["discrimination"].sum()) == pytest.approx(discrimination, abs=1e-8)
    assert "threshold" not in truth and "n_categories" not in data.items.columns
    assert data.items["n_options"].tolist() == [4] * 40
