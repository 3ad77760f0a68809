"""Audit measures on hand-built per-draw arrays: coverage, DDM, Maximum Gap and test information."""

from __future__ import annotations

import numpy as np
import pytest

from irtbayes.auditing.coverage import bin_codes, count_items, coverage, coverage_table
from irtbayes.auditing.gaps import EDGE_HIGH, EDGE_LOW, GapDraws, edge_gaps, gap_location, gap_parts, widest_gap
from irtbayes.auditing.mismatch import ddm_shape_tv, ddm_shape_w1, ddm_tv, ddm_w1, ddm_w1_from_shape
from irtbayes.core.information import item_curves, scope_curves, test_information, theta_grid

EDGES = np.linspace(0.0, 1.0, 11)  # [0, 1] in 10 bins
UNIFORM = np.full(10, 0.1)


def w1_by_grid(x: np.ndarray, edges: np.ndarray, weights: np.ndarray, points: int = 400_001) -> float:
    """Reference W1 of one draw by numerical integration of |F - G| on a fine grid (not normalised)."""
    grid = np.linspace(edges[0], edges[-1], points)
    g = np.interp(grid, edges, np.concatenate([[0.0], np.cumsum(weights)]))
    inside = np.sort(x[(x >= edges[0]) & (x <= edges[-1])])
    f = np.searchsorted(inside, grid, side="right") / len(inside)
    return float(np.trapezoid(np.abs(f - g), grid))


# ---------------------------------------------------------------------------------------------- coverage
def test_bin_codes_put_edges_below_above_and_u_where_documented() -> None:
    x = np.array([[-0.1, 0.0, 0.05, 0.1, 0.95, 1.0, 1.2]])
    codes = bin_codes(x, EDGES)
    assert codes.tolist() == [[0, 1, 1, 2, 10, 10, 11]], codes


def test_coverage_counts_shares_and_outside_mass_exact() -> None:
    draw0 = [0.05, 0.06, 0.15, 0.55, -0.5, 1.5, 2.0]
    draw1 = [0.05, 0.15, 0.25, 0.35, 0.45, 0.55, -1.0]
    cov = coverage(np.array([draw0, draw1]), EDGES)
    assert cov.counts[0].tolist() == [2, 1, 0, 0, 0, 1, 0, 0, 0, 0], cov.counts[0]
    assert cov.counts[1].tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 0, 0], cov.counts[1]
    assert cov.below.tolist() == [1, 1] and cov.above.tolist() == [2, 0]
    total = cov.share.sum(axis=1) + cov.mass_below + cov.mass_above
    np.testing.assert_allclose(total, 1.0, err_msg=f"shares + outside mass = {total}")
    np.testing.assert_allclose(cov.share_in_range.sum(axis=1), 1.0)
    # bin 2 ([0.2, 0.3)) is empty in draw 0 only; bin 9 in both
    assert cov.p_empty()[2] == 0.5 and cov.p_empty()[9] == 1.0, cov.p_empty()
    assert cov.p_fewer_than(2)[0] == 0.5, cov.p_fewer_than(2)


def test_count_items_matches_histogram_per_draw() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(0.5, 0.6, size=(50, 300))
    counts = count_items(bin_codes(x, EDGES), 10)
    for s in (0, 17, 49):
        hist, _ = np.histogram(x[s], bins=EDGES)
        assert counts[s, 1:-1].tolist() == hist.tolist(), (counts[s], hist)
        assert counts[s, 0] == (x[s] < 0).sum() and counts[s, -1] == (x[s] > 1).sum()


def test_coverage_table_columns_and_probabilities() -> None:
    x = np.tile(np.linspace(0.02, 0.98, 20), (4, 1))
    table = coverage_table(coverage(x, EDGES), edges=EDGES, target_weights=UNIFORM, ci_prob=0.8, min_items=3)
    assert list(table.columns[:4]) == ["bin", "lo", "hi", "target_weight"]
    assert {"count_mean", "count_ci_low", "share_ci_high", "share_in_range_mean", "p_empty", "p_fewer_than_m"} <= set(
        table.columns
    )
    assert table["count_mean"].tolist() == [2.0] * 10
    assert table["p_fewer_than_m"].tolist() == [1.0] * 10  # 2 < 3 in every draw
    assert table.attrs["ci_prob"] == 0.8 and table.attrs["min_items"] == 3


# ---------------------------------------------------------------------------------------------- DDM
@pytest.mark.parametrize("m", [1, 2, 5, 10, 37])
def test_w1_of_midpoint_quantiles_is_the_floor_one_over_4m(m: int) -> None:
    x = (np.arange(m) + 0.5) / m
    value = float(ddm_shape_w1(x[None, :], EDGES, UNIFORM)[0])
    assert value == pytest.approx(1 / (4 * m), rel=1e-12), f"W1 of {m} midpoints = {value}, expected {1 / (4 * m)}"
    # with every item inside, the headline equals the shape measure
    assert float(ddm_w1(x[None, :], EDGES, UNIFORM)[0]) == pytest.approx(value, rel=1e-12)


def test_w1_matches_numerical_integration_with_uneven_bins_and_weights() -> None:
    rng = np.random.default_rng(1)
    edges = np.array([-1.0, -0.4, 0.0, 0.3, 1.5, 2.0])
    weights = np.array([0.1, 0.0, 0.5, 0.15, 0.25])
    x = rng.normal(0.4, 0.8, size=(6, 25))
    x[0, :5] = edges[:5]  # items exactly on edges
    got = ddm_shape_w1(x, edges, weights, normalise=False)
    want = np.array([w1_by_grid(row, edges, weights) for row in x])
    np.testing.assert_allclose(got, want, atol=2e-5, err_msg=f"exact {got} vs grid {want}")
    per_draw_weights = np.tile(weights, (6, 1))
    np.testing.assert_allclose(ddm_shape_w1(x, edges, per_draw_weights, normalise=False), got, atol=1e-12)
    # the headline, not normalised: each item outside costs U - L, the items inside their share of W1
    inside = ((x >= edges[0]) & (x <= edges[-1])).sum(axis=1)
    headline = ((25 - inside) * 3.0 + inside * got) / 25
    np.testing.assert_allclose(ddm_w1(x, edges, weights, normalise=False), headline, atol=1e-12)
    np.testing.assert_allclose(ddm_w1(x, edges, weights), headline / 3.0, atol=1e-12)


def test_w1_grows_monotonically_as_difficulties_drift_from_the_target() -> None:
    mid = (np.arange(50) + 0.5) / 50
    drift = np.linspace(0, 1, 11)
    x = np.stack([mid * (1 - t) for t in drift])  # squeezed towards L
    values = ddm_shape_w1(x, EDGES, UNIFORM)
    assert np.all(np.diff(values) > 0), f"W1 along the drift: {values}"
    assert values[0] == pytest.approx(1 / 200) and values[-1] == pytest.approx(0.5), values


def test_tv_is_zero_for_exact_bin_shares_and_grows_as_items_move() -> None:
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    counts = np.array([[1, 2, 3, 4], [2, 1, 3, 4], [3, 0, 3, 4], [4, 0, 2, 4], [5, 0, 1, 4]])
    tv = ddm_shape_tv(counts, weights)
    assert tv[0] == 0.0, tv
    assert np.all(np.diff(tv) > 0), f"TV as items move into bin 0: {tv}"
    np.testing.assert_allclose(tv[1], 0.1)
    none = np.zeros(len(counts))
    np.testing.assert_allclose(ddm_tv(counts, weights, below=none, above=none), tv, atol=1e-15)


def test_ddm_is_one_when_no_item_lies_in_range() -> None:
    x = np.array([[-2.0, -1.0, 3.0]])
    cov = coverage(x, EDGES)
    assert ddm_w1(x, EDGES, UNIFORM)[0] == 1.0 and ddm_shape_w1(x, EDGES, UNIFORM)[0] == 1.0
    assert ddm_tv(cov.counts, UNIFORM, below=cov.below, above=cov.above)[0] == 1.0
    assert ddm_shape_tv(cov.counts, UNIFORM)[0] == 1.0


def test_shape_w1_ignores_items_outside_the_range_and_the_headline_counts_them() -> None:
    mid = (np.arange(10) + 0.5) / 10
    with_outside = np.concatenate([mid, [-3.0, -2.0, 4.0]])
    shape = ddm_shape_w1(mid[None], EDGES, UNIFORM)
    np.testing.assert_allclose(ddm_shape_w1(with_outside[None], EDGES, UNIFORM), shape)
    # 3 of 13 outside: 3/13 * 1 + 10/13 * 1/40
    np.testing.assert_allclose(ddm_w1(with_outside[None], EDGES, UNIFORM), 3 / 13 + 10 / 13 / 40, rtol=1e-12)


def test_a_mostly_saturated_benchmark_scores_badly_not_like_a_spread_one() -> None:
    # 990 of 1,000 items below L, 10 at the midpoints of the bins: in range, a perfect spread
    x = np.concatenate([np.full(990, -1.0), (np.arange(10) + 0.5) / 10])[None, :]
    cov = coverage(x, EDGES)
    assert ddm_shape_w1(x, EDGES, UNIFORM)[0] == pytest.approx(1 / 40) and ddm_shape_tv(cov.counts, UNIFORM)[0] == 0
    assert ddm_w1(x, EDGES, UNIFORM)[0] == pytest.approx(0.99 + 0.01 / 40, rel=1e-12)
    # TV: each bin holds 0.001 of the items against 0.1 wanted, and 0.99 sits below with none wanted
    tv = ddm_tv(cov.counts, UNIFORM, below=cov.below, above=cov.above)[0]
    assert tv == pytest.approx(0.5 * (10 * 0.099 + 0.99), rel=1e-12), tv


def test_clipping_onto_the_edges_would_reward_losing_an_item_from_the_range() -> None:
    # why the headline charges items outside in full: W1 of the clipped items falls from 0.375 to 0.25 when
    # the item at 0.75 leaves the range (clipped onto L it fills the empty lower end); the headline rises
    before = np.array([[0.75, 1.0]])
    after = np.array([[-1.0, 1.0]])
    clipped = ddm_shape_w1(np.clip(np.concatenate([before, after]), 0, 1), EDGES, UNIFORM)
    np.testing.assert_allclose(clipped, [0.375, 0.25], rtol=1e-12)
    headline = ddm_w1(np.concatenate([before, after]), EDGES, UNIFORM)
    np.testing.assert_allclose(headline, [0.375, 0.5 + 0.5 * 0.5], rtol=1e-12)


def test_tv_with_tails_exact_on_a_hand_built_case() -> None:
    weights = np.array([0.5, 0.5])
    counts = np.array([[1, 1], [2, 2], [0, 0]])
    below, above = np.array([2, 0, 1]), np.array([0, 0, 2])
    tv = ddm_tv(counts, weights, below=below, above=above)
    # draw 0: n = 4, (|0.25 - 0.5| * 2 + 0.5) / 2 = 0.5; draw 1: matches; draw 2: nothing inside
    np.testing.assert_allclose(tv, [0.5, 0.0, 1.0], rtol=1e-12)


def test_headline_from_shape_checks_its_counts_and_ignores_the_shape_of_an_empty_range() -> None:
    got = ddm_w1_from_shape(np.array([0.2, np.nan, 0.5]), in_range=np.array([4, 0, 2]), n_items=4)
    np.testing.assert_allclose(got, [0.2, 1.0, 0.5 + 0.5 * 0.5])
    with pytest.raises(ValueError, match="in_range"):
        ddm_w1_from_shape(np.array([0.1]), in_range=np.array([5]), n_items=4)


# ---------------------------------------------------------------------------------------------- gaps
def test_planted_empty_region_is_found_with_its_location() -> None:
    spacing = np.round(np.arange(21) * 0.05, 2)
    x = spacing[(spacing <= 0.35) | (spacing >= 0.75)]  # nothing in (0.35, 0.75)
    gaps = widest_gap(x[None, :], 0.0, 1.0)
    assert (
        gaps.width[0] == pytest.approx(0.4) and gaps.lo[0] == pytest.approx(0.35) and gaps.hi[0] == pytest.approx(0.75)
    )


def test_gap_counts_the_range_ends_as_edges_and_no_items_means_the_whole_range() -> None:
    g = widest_gap(np.array([[0.9, 0.95], [-1.0, 2.0]]), 0.0, 1.0)
    assert g.width.tolist() == pytest.approx([0.9, 1.0]) and g.lo.tolist() == [0.0, 0.0], (g.width, g.lo, g.hi)
    assert g.hi.tolist() == pytest.approx([0.9, 1.0])


def test_gap_location_uses_the_modal_bin_when_the_location_is_bimodal() -> None:
    # 6 draws with the widest gap in [0.12, 0.32], 4 with it in [0.72, 0.92]: the all-draw mean is in between
    lo = np.array([0.12] * 6 + [0.72] * 4)
    gaps = GapDraws(width=np.full(10, 0.2), lo=lo, hi=lo + 0.2, edge=np.zeros(10, dtype=np.int8))
    where = gap_location(gaps, EDGES)
    assert where.modal_bin == 2 and where.p_modal_bin == pytest.approx(0.6), where
    assert where.kind == "interior" and where.p_edge_low == 0 and where.p_edge_high == 0, where
    assert where.interval == pytest.approx((0.12, 0.32)), where.interval
    assert where.interval_all_draws == pytest.approx((0.36, 0.56)), where.interval_all_draws
    assert where.p_bins[8] == pytest.approx(0.4) and where.p_bins.sum() == pytest.approx(1.0)


def test_gap_parts_split_interior_and_edge_gaps_exactly() -> None:
    x = np.array(
        [
            [0.1, 0.3, 0.8, -1.0, 2.0],  # interior 0.5 widest; items outside play no part
            [0.5, 0.6, 0.7, 0.9, 0.95],  # the gap at L (0.5) is widest
            [0.05, 0.1, 0.2, 0.25, 0.3],  # the gap at U (0.7) is widest
            [0.4, -1.0, -2.0, 3.0, 4.0],  # one item inside: no interior gap
            [-1.0, -1.0, 2.0, 2.0, 2.0],  # none inside: the whole range, both edges
        ]
    )
    parts = gap_parts(x, 0.0, 1.0)
    np.testing.assert_allclose(parts.interior, [0.5, 0.2, 0.1, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(parts.edge_low, [0.1, 0.5, 0.05, 0.4, 1.0], atol=1e-12)
    np.testing.assert_allclose(parts.edge_high, [0.2, 0.05, 0.7, 0.6, 1.0], atol=1e-12)
    np.testing.assert_allclose(parts.widest.width, [0.5, 0.5, 0.7, 0.6, 1.0], atol=1e-12)
    assert parts.widest.edge.tolist() == [0, EDGE_LOW, EDGE_HIGH, EDGE_HIGH, EDGE_LOW | EDGE_HIGH], parts.widest.edge
    np.testing.assert_allclose(parts.widest.lo, [0.3, 0.0, 0.3, 0.4, 0.0], atol=1e-12)
    where = gap_location(parts.widest, EDGES)
    assert where.p_edge_low == pytest.approx(0.4) and where.p_edge_high == pytest.approx(0.6), where


def test_an_item_exactly_at_l_makes_the_gap_above_it_interior() -> None:
    parts = gap_parts(np.array([[0.0, 0.6, 1.0]]), 0.0, 1.0)
    assert parts.edge_low[0] == 0.0 and parts.edge_high[0] == 0.0 and parts.interior[0] == pytest.approx(0.6)
    assert parts.widest.edge[0] == 0 and parts.widest.width[0] == pytest.approx(0.6)


def test_edge_gaps_move_one_for_one_with_the_range_until_an_item_is_reached() -> None:
    x = np.array([[0.3, 0.5, 0.9]])
    base_low, base_high = edge_gaps(x, 0.0, 1.0)
    for d in (0.1, 0.25, 0.5):
        low, high = edge_gaps(x, -d, 1.0 + d)  # widened: no item in the added stretches
        assert low[0] == pytest.approx(base_low[0] + d) and high[0] == pytest.approx(base_high[0] + d), (d, low, high)
    low, high = edge_gaps(x, 0.2, 0.95)  # narrowed by less than either edge gap: d comes off
    assert low[0] == pytest.approx(0.1) and high[0] == pytest.approx(0.05)
    low, high = edge_gaps(x, 0.4, 0.8)  # narrowed past an item: the gap to the next item inside
    assert low[0] == pytest.approx(0.1) and high[0] == pytest.approx(0.3)


def test_gap_location_says_when_the_widest_gap_is_an_edge_gap() -> None:
    width = np.full(10, 0.3)
    lo = np.array([0.0] * 7 + [0.4] * 3)
    edge = np.array([EDGE_LOW] * 7 + [0] * 3, dtype=np.int8)
    where = gap_location(GapDraws(width=width, lo=lo, hi=lo + 0.3, edge=edge), EDGES)
    assert where.kind == "low edge" and where.p_edge_low == pytest.approx(0.7) and where.p_edge_high == 0.0, where


# ---------------------------------------------------------------------------------------------- information
def test_single_2pl_item_information_peaks_at_b_with_a_squared_over_4() -> None:
    a, b = 1.7, 0.3
    theta = theta_grid(-3.0, 3.6, points=67)  # holds 0.3 exactly (step 0.1)
    info = test_information(theta, np.array([[b]]), np.array([[a]]))[0]
    peak = int(np.argmax(info))
    assert theta[peak] == pytest.approx(b) and info[peak] == pytest.approx(a * a / 4), (theta[peak], info[peak])
    curves = scope_curves(theta, np.array([[b]]), np.array([[a]]))
    assert curves["score"][0, peak, 0] == pytest.approx(0.5) and curves["slope"][0, peak, 0] == pytest.approx(a / 4)
    assert curves["se"][0, peak, 0] == pytest.approx(2 / a)


def test_3pl_information_matches_its_definition_and_known_peak() -> None:
    a, b, c = 1.4, -0.2, 0.25
    theta = np.linspace(-3, 3, 60001)
    p, slope, info = item_curves(theta, np.array([[b]]), np.array([[a]]), np.array([[c]]))
    p, slope, info = p[0, :, 0], slope[0, :, 0], info[0, :, 0]
    np.testing.assert_allclose(slope[1:-1], np.gradient(p, theta)[1:-1], atol=1e-7)
    np.testing.assert_allclose(info, slope**2 / (p * (1 - p)), rtol=1e-10)
    peak = b + np.log((1 + np.sqrt(1 + 8 * c)) / 2) / a  # Birnbaum's location of the 3PL maximum
    assert theta[np.argmax(info)] == pytest.approx(peak, abs=1e-3), (theta[np.argmax(info)], peak)


def test_scope_curves_sum_over_each_scope_and_1pl_means_a_equals_one() -> None:
    rng = np.random.default_rng(2)
    b = rng.normal(size=(3, 12))
    a = np.exp(rng.normal(0, 0.3, size=(3, 12)))
    theta = np.linspace(-2, 2, 9)
    member = np.zeros((12, 3))
    member[:, 0] = 1
    member[:5, 1] = 1
    member[5:, 2] = 1
    out = scope_curves(theta, b, a, membership=member)
    p, slope, info = item_curves(theta, b, a)
    np.testing.assert_allclose(out["info"][..., 1], info[..., :5].sum(axis=2))
    np.testing.assert_allclose(out["score"][..., 2], p[..., 5:].mean(axis=2))
    np.testing.assert_allclose(out["slope"][..., 0], slope.mean(axis=2))
    np.testing.assert_allclose(test_information(theta, b), test_information(theta, b, np.ones_like(b)))


# ---------------------------------------------------------------------------------------------- summaries
def test_summarize_draws_gives_a_tidy_labelled_table() -> None:
    import xarray as xr

    from irtbayes.core.errors import SpecError
    from irtbayes.core.summaries import summarize_draws

    values = np.arange(2 * 50 * 3, dtype=float).reshape(2, 50, 3)
    da = xr.DataArray(values, dims=("chain", "draw", "item"), coords={"item": ["x", "y", "z"]})
    table = summarize_draws(da, ci_prob=0.5, prefix="difficulty_")
    assert list(table.index) == ["x", "y", "z"] and table.index.name == "item"
    assert list(table.columns) == ["difficulty_mean", "difficulty_sd", "difficulty_ci_low", "difficulty_ci_high"]
    pooled = values[:, :, 0].ravel()
    assert table.loc["x", "difficulty_mean"] == pytest.approx(pooled.mean())
    assert table.loc["x", "difficulty_ci_low"] == pytest.approx(np.quantile(pooled, 0.25))
    assert table.attrs["ci_prob"] == 0.5
    with pytest.raises(SpecError, match="ci_prob"):
        summarize_draws(da, ci_prob=1.0)


@pytest.mark.parametrize("shape", [(1, 3), (2, 4), (7, 5), (1001, 2, 3), (4000, 300), (500,), (500, 1)])
def test_quantiles_equal_numpy_to_the_bit(shape: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    """The sort-based quantiles of summaries equal ``np.quantile`` exactly, across chunk boundaries, with ties."""
    from irtbayes.core import summaries

    monkeypatch.setattr(summaries, "QUANTILE_CHUNK", 64)
    rng = np.random.default_rng(len(shape))
    draws = rng.normal(size=shape)
    draws[: shape[0] // 2] = np.round(draws[: shape[0] // 2], 1)  # ties
    kept = draws.copy()
    single = draws.astype("float32")  # a fit's item draws: sorted as float32, the same bits as in float64
    for probs in [(0.05, 0.95), (0.0, 1.0), (0.5,), (0.3333, 0.6667), (0.11, 0.89)]:
        np.testing.assert_array_equal(summaries.quantiles(draws, probs), np.quantile(draws, probs, axis=0))
        widened = np.quantile(single.astype("float64"), probs, axis=0)
        np.testing.assert_array_equal(summaries.quantiles(single, probs), widened)
    np.testing.assert_array_equal(draws, kept)  # the draws are not sorted in place (one column is contiguous)
