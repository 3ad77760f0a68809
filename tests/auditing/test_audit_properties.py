"""Properties of the audit measures that must hold for any posterior draws (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from irtbayes.auditing.coverage import bin_codes, count_items, coverage
from irtbayes.auditing.gaps import edge_gaps, gap_parts, widest_gap
from irtbayes.auditing.mismatch import ddm_shape_tv, ddm_shape_w1, ddm_tv, ddm_w1
from irtbayes.auditing.ranking import draw_ranks, reweighted_accuracy
from irtbayes.core.summaries import summarize

finite = st.floats(-4, 4, allow_nan=False, allow_infinity=False, width=64)
# values on a coarse grid hit the edges and tie often, which is where bookkeeping goes wrong
gridded = st.integers(-40, 40).map(lambda k: k / 10)


@st.composite
def draws_and_edges(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_draws = draw(st.integers(1, 6))
    n_items = draw(st.integers(1, 30))
    values = draw(arrays(np.float64, (n_draws, n_items), elements=st.one_of(finite, gridded)))
    n_bins = draw(st.integers(1, 8))
    cuts = draw(st.lists(st.integers(-30, 30), min_size=n_bins + 1, max_size=n_bins + 1, unique=True))
    edges = np.sort(np.array(cuts, dtype=float) / 10)
    weights = np.array(draw(st.lists(st.floats(0, 1), min_size=n_bins, max_size=n_bins)))
    weights = np.ones(n_bins) if weights.sum() <= 0 else weights
    return values, edges, weights / weights.sum()


@settings(max_examples=150, deadline=None)
@given(draws_and_edges())
def test_shares_and_outside_mass_sum_to_one(case: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    x, edges, _ = case
    cov = coverage(x, edges)
    total = cov.share.sum(axis=1) + cov.mass_below + cov.mass_above
    np.testing.assert_allclose(total, 1.0, err_msg=f"{total}")
    assert np.array_equal(cov.in_range, ((x >= edges[0]) & (x <= edges[-1])).sum(axis=1))


@settings(max_examples=150, deadline=None)
@given(draws_and_edges())
def test_max_gap_is_at_least_the_even_spacing_and_holds_no_item(
    case: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, edges, _ = case
    lo, hi = edges[0], edges[-1]
    gaps = widest_gap(x, lo, hi)
    inside = ((x >= lo) & (x <= hi)).sum(axis=1)
    assert np.all(gaps.width >= (hi - lo) / (inside + 1) - 1e-12), (gaps.width, inside)
    assert np.all(gaps.width <= hi - lo + 1e-12)
    for s in range(x.shape[0]):
        strictly_inside = (x[s] > gaps.lo[s]) & (x[s] < gaps.hi[s])
        assert not strictly_inside.any(), (x[s], gaps.lo[s], gaps.hi[s])
        assert lo <= gaps.lo[s] <= gaps.hi[s] <= hi


@settings(max_examples=150, deadline=None)
@given(draws_and_edges())
def test_ddm_lies_in_unit_interval_and_w1_is_zero_only_when_tv_can_be(
    case: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, edges, weights = case
    cov = coverage(x, edges)
    for w1 in (ddm_w1(x, edges, weights), ddm_shape_w1(x, edges, weights)):
        assert np.all((w1 >= 0) & (w1 <= 1 + 1e-12)), w1
    for tv in (ddm_tv(cov.counts, weights, below=cov.below, above=cov.above), ddm_shape_tv(cov.counts, weights)):
        assert np.all((tv >= 0) & (tv <= 1 + 1e-12)), tv
    # sorting the items first changes nothing (the presorted path is the same computation)
    for measure in (ddm_w1, ddm_shape_w1):
        np.testing.assert_allclose(
            measure(np.sort(x, axis=1), edges, weights, presorted=True), measure(x, edges, weights), atol=1e-12
        )


@settings(max_examples=120, deadline=None)
@given(draws_and_edges())
def test_headline_ddm_bounds_outside_share_clipped_w1_and_shape(
    case: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, edges, weights = case
    lo, hi = edges[0], edges[-1]
    cov = coverage(x, edges)
    outside = cov.mass_below + cov.mass_above
    w1 = ddm_w1(x, edges, weights)
    tv = ddm_tv(cov.counts, weights, below=cov.below, above=cov.above)
    shape_w1, shape_tv = ddm_shape_w1(x, edges, weights), ddm_shape_tv(cov.counts, weights)
    np.testing.assert_allclose(w1, outside + (1 - outside) * np.where(cov.in_range > 0, shape_w1, 0), atol=1e-12)
    assert np.all(w1 >= outside - 1e-12) and np.all(tv >= outside - 1e-12), (w1, tv, outside)
    assert np.all(tv <= outside + (1 - outside) * shape_tv + 1e-12), (tv, outside, shape_tv)
    # never below W1 of the difficulties clipped onto [L, U]
    clipped = ddm_shape_w1(np.clip(x, lo, hi), edges, weights)
    assert np.all(w1 >= clipped - 1e-12), (w1, clipped)


@st.composite
def one_item_leaves(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A draw of difficulties with at least one item inside [L, U], and the same draw with one of them outside."""
    values, edges, weights = draw(draws_and_edges())
    x = values[0]
    lo, hi = edges[0], edges[-1]
    spot = draw(st.integers(0, len(x) - 1))
    x[spot] = draw(st.one_of(st.floats(lo, hi), st.sampled_from([lo, hi])))  # make sure one is inside
    inside = np.flatnonzero((x >= lo) & (x <= hi))
    leaving = inside[draw(st.integers(0, len(inside) - 1))]
    distance = draw(st.one_of(st.floats(1e-6, 3.0), st.just(1e-9)))
    moved = x.copy()
    moved[leaving] = lo - distance if draw(st.booleans()) else hi + distance
    return x[None, :], moved[None, :], edges, weights


@settings(max_examples=150, deadline=None)
@given(one_item_leaves())
def test_moving_an_item_out_of_the_range_never_lowers_the_headline_ddm(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    before, after, edges, weights = case
    w1 = ddm_w1(np.concatenate([before, after]), edges, weights)
    assert w1[1] >= w1[0] - 1e-12, f"W1 headline fell from {w1[0]} to {w1[1]}: {before} -> {after}, edges {edges}"
    cov = coverage(np.concatenate([before, after]), edges)
    tv = ddm_tv(cov.counts, weights, below=cov.below, above=cov.above)
    assert tv[1] >= tv[0] - 1e-12, f"TV headline fell from {tv[0]} to {tv[1]}: {before} -> {after}, edges {edges}"


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 12),
    st.floats(-3, 0),
    st.floats(0.2, 4),
    st.integers(0, 10_000),
)
def test_eighty_percent_below_l_scores_at_least_point_three_under_the_uniform_target(
    n_fifths: int, n_bins: int, lo: float, width: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    hi = lo + width
    edges = np.linspace(lo, hi, n_bins + 1)
    weights = np.full(n_bins, 1 / n_bins)
    below = lo - rng.exponential(1.0, size=(3, 4 * n_fifths)) - 1e-9
    rest = rng.uniform(lo - 0.5, hi + 0.5, size=(3, n_fifths))  # anywhere, mostly inside
    x = np.concatenate([below, rest], axis=1)
    cov = coverage(x, edges)
    w1 = ddm_w1(x, edges, weights)
    tv = ddm_tv(cov.counts, weights, below=cov.below, above=cov.above)
    assert np.all(w1 >= 0.3) and np.all(tv >= 0.3), (w1, tv)


@settings(max_examples=100, deadline=None)
@given(draws_and_edges())
def test_the_maximum_gap_is_the_widest_of_its_interior_and_edge_parts(
    case: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, edges, _ = case
    lo, hi = edges[0], edges[-1]
    parts = gap_parts(x, lo, hi)
    low, high = edge_gaps(x, lo, hi)
    assert np.array_equal(low, parts.edge_low) and np.array_equal(high, parts.edge_high), (low, high, parts)
    np.testing.assert_allclose(
        parts.widest.width, np.maximum.reduce([parts.edge_low, parts.interior, parts.edge_high]), atol=1e-12
    )
    for s in range(x.shape[0]):
        inside = np.sort(x[s][(x[s] >= lo) & (x[s] <= hi)])
        want_low = inside[0] - lo if len(inside) else hi - lo
        want_interior = np.diff(inside).max() if len(inside) > 1 else 0.0
        assert parts.edge_low[s] == want_low and parts.interior[s] == want_interior, (x[s], parts)
        assert bool(parts.widest.edge[s] & 1) == (parts.widest.lo[s] == lo and parts.widest.width[s] == want_low)


@settings(max_examples=100, deadline=None)
@given(draws_and_edges(), st.floats(0.01, 2.0))
def test_widening_the_range_adds_its_width_to_an_edge_gap_when_no_item_is_in_the_added_stretch(
    case: tuple[np.ndarray, np.ndarray, np.ndarray], d: float
) -> None:
    x, edges, _ = case
    lo, hi = edges[0], edges[-1]
    low, high = edge_gaps(x, lo, hi)
    wide_low, wide_high = edge_gaps(x, lo - d, hi + d)
    clear_low = ~((x >= lo - d) & (x < lo)).any(axis=1)
    clear_high = ~((x > hi) & (x <= hi + d)).any(axis=1)
    none_inside = ~((x >= lo) & (x <= hi)).any(axis=1)
    # with no item inside at all both edge gaps are the whole range, which widens by 2d
    grow = np.where(none_inside, 2 * d, d)
    np.testing.assert_allclose(wide_low[clear_low & clear_high], (low + grow)[clear_low & clear_high], atol=1e-9)
    ok = clear_low & ~none_inside
    np.testing.assert_allclose(wide_low[ok], low[ok] + d, atol=1e-9)
    ok = clear_high & ~none_inside
    np.testing.assert_allclose(wide_high[ok], high[ok] + d, atol=1e-9)
    assert np.all(wide_low[~clear_low] <= low[~clear_low] + d + 1e-9)  # an item in the added stretch shortens it


@settings(max_examples=150, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 12)), elements=st.one_of(gridded, st.just(np.nan))),
    st.booleans(),
)
def test_ranks_are_a_permutation_in_every_draw(scores: np.ndarray, with_tiebreak: bool) -> None:
    tiebreak = np.random.default_rng(0).normal(size=scores.shape) if with_tiebreak else None
    ranks = draw_ranks(scores, tiebreak=tiebreak)
    expected = np.arange(1, scores.shape[1] + 1)
    for row, score in zip(ranks, scores, strict=True):
        assert sorted(row.tolist()) == expected.tolist(), row
        finite_rows = ~np.isnan(score)
        if finite_rows.any() and (~finite_rows).any():
            assert row[finite_rows].max() < row[~finite_rows].min(), (row, score)  # NaN ranks last
        order = np.argsort(row)
        ordered = np.where(np.isnan(score[order]), -1e9, score[order])
        assert np.all(np.diff(ordered) <= 0), (score, row)  # higher scores rank first


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 6), st.integers(1, 25), st.integers(1, 6))
def test_own_distribution_reweighting_is_raw_accuracy(seed: int, n_draws: int, n_items: int, n_bins: int) -> None:
    rng = np.random.default_rng(seed)
    edges = np.linspace(-1, 1, n_bins + 1)
    x = rng.uniform(-1, 1, size=(n_draws, n_items))
    responses = rng.integers(0, 3, size=(3, n_items)) / 2
    codes = bin_codes(x, edges)
    counts = count_items(codes, n_bins)[:, 1:-1]
    got = reweighted_accuracy(codes, responses, counts / counts.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, np.broadcast_to(responses.mean(axis=1), got.shape), atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 60), st.integers(1, 3)), elements=finite), st.floats(0.05, 0.99))
def test_intervals_are_ordered_and_hold_the_median(values: np.ndarray, ci_prob: float) -> None:
    s = summarize(values, ci_prob=ci_prob)
    median = np.median(values, axis=0)
    assert np.all(s["ci_low"] <= median + 1e-12) and np.all(median <= s["ci_high"] + 1e-12), (s, median)
    assert np.all(values.min(axis=0) <= s["ci_low"] + 1e-12) and np.all(s["ci_high"] <= values.max(axis=0) + 1e-12)
    assert np.all(values.min(axis=0) - 1e-12 <= s["mean"]) and np.all(s["mean"] <= values.max(axis=0) + 1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.5, 0.95))
def test_intervals_contain_the_mean_for_the_audits_bounded_measures(seed: int, ci_prob: float) -> None:
    # in-range W1 and gap posteriors from scattered difficulties are unimodal and not extremely skewed: there
    # the equal-tailed interval holds the mean (it need not for arbitrary draws, see irtbayes.core.summaries). The
    # headline DDM is left out: it jumps by 1/n whenever an item crosses L or U, so with items scattered across
    # the edges its posterior is a lumpy mixture whose mean can leave a 50% interval.
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, 40) + rng.uniform(0.05, 0.4) * rng.normal(size=(400, 40))
    edges = np.linspace(-1, 1, 9)
    for values in (ddm_shape_w1(x, edges, np.full(8, 1 / 8)), widest_gap(x, -1, 1).width):
        s = summarize(values, ci_prob=ci_prob)
        assert s["ci_low"] <= s["mean"] <= s["ci_high"], (s, ci_prob)
