"""Deconvolved item locations: likelihoods from draws, the population estimate, and gaps that stay open."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.auditing.deconvolve import (
    PriorDraws,
    deconvolved_locations,
    fit_population,
    item_likelihoods,
    prior_draws,
)
from irtbayes.auditing.gaps import widest_gap
from irtbayes.auditing.run import audit
from irtbayes.auditing.support import (
    _cut_log_likelihood,
    _hole_log_likelihoods,
    _log_hole_sums,
    draw_hole,
    draw_support,
    support_window,
)
from irtbayes.core.errors import SpecError
from irtbayes.data.responses import ResponseData

GAP = (-0.3, 1.2)


def _normal_posterior_draws(
    rng: np.random.Generator, estimate: np.ndarray, se: np.ndarray, loc: np.ndarray, sd: np.ndarray
) -> np.ndarray:
    """(sample, item) exact posterior draws: likelihood Normal(estimate, se), prior Normal(loc_s, sd_s) per draw."""
    prec = 1 / se[None, :] ** 2 + 1 / sd[:, None] ** 2
    mean = (estimate[None, :] / se[None, :] ** 2 + loc[:, None] / sd[:, None] ** 2) / prec
    return mean + rng.standard_normal(mean.shape) / np.sqrt(prec)


@pytest.fixture(scope="module")
def gapped() -> dict[str, np.ndarray]:
    """Items with a planted gap, measured with error, under a normal hierarchical prior (no MCMC)."""
    rng = np.random.default_rng(5)
    truth = np.concatenate([np.linspace(-2.4, GAP[0], 90), np.linspace(GAP[1], 2.4, 60)])
    se = np.full(truth.size, 0.25)
    estimate = truth + rng.normal(0, se)
    n_samples = 2000
    loc = rng.normal(estimate.mean(), 0.08, n_samples)  # the hyperparameters' posterior, roughly
    sd = np.abs(rng.normal(estimate.std(), 0.08, n_samples))
    draws = _normal_posterior_draws(rng, estimate, se, loc, sd)
    return {"truth": truth, "se": se, "estimate": estimate, "loc": loc, "sd": sd, "draws": draws}


def test_item_likelihoods_divide_out_the_prior(gapped: dict[str, np.ndarray]) -> None:
    prior = PriorDraws(loc=gapped["loc"][:, None], sd=gapped["sd"], item_group=np.zeros(150, dtype=np.int64))
    items = np.array([0, 75, 149])
    edges = np.linspace(-4.5, 4.5, 301)
    lik = item_likelihoods(gapped["draws"], prior, items, edges, smooth_cells=0)
    centres = (edges[:-1] + edges[1:]) / 2
    assert np.allclose(lik.sum(axis=1), 1)
    mean = lik @ centres
    sd = np.sqrt(lik @ centres**2 - mean**2)
    # the likelihood is Normal(estimate, 0.25); the posterior draws are pulled toward the prior mean by ~10%
    assert mean == pytest.approx(gapped["estimate"][items], abs=0.04)
    assert sd == pytest.approx(0.25, abs=0.03)
    post_mean = gapped["draws"][:, items].mean(axis=0)
    assert np.all(np.abs(mean - gapped["estimate"][items]) < np.abs(post_mean - gapped["estimate"][items]) + 0.02)


def test_population_shows_the_planted_hole_and_a_normal_one_stays_smooth(gapped: dict[str, np.ndarray]) -> None:
    prior = PriorDraws(loc=gapped["loc"][:, None], sd=gapped["sd"], item_group=np.zeros(150, dtype=np.int64))
    edges = np.linspace(-4.0, 4.0, 201)
    centres = (edges[:-1] + edges[1:]) / 2
    lik = item_likelihoods(gapped["draws"], prior, np.arange(150), edges)
    pop = fit_population(lik, edges, rng=np.random.default_rng(0))
    inside = (centres > GAP[0] + 0.3) & (centres < GAP[1] - 0.3)
    beside = ((centres > -1.5) & (centres < GAP[0] - 0.2)) | ((centres > GAP[1] + 0.2) & (centres < 2.1))
    assert pop.probs[inside].mean() < 0.25 * pop.probs[beside].mean(), pop.smoothing
    assert pop.draws.shape == (200, 200) and np.allclose(pop.draws.sum(axis=1), 1)

    # items from a normal population: the evidence prefers a smooth (near-normal) distribution
    rng = np.random.default_rng(1)
    truth = rng.normal(0, 1, 150)
    estimate = truth + rng.normal(0, 0.25, 150)
    draws = _normal_posterior_draws(rng, estimate, np.full(150, 0.25), gapped["loc"] * 0, gapped["sd"] * 0 + 1)
    flat = PriorDraws(loc=np.zeros((2000, 1)), sd=np.ones(2000), item_group=np.zeros(150, dtype=np.int64))
    smooth = fit_population(item_likelihoods(draws, flat, np.arange(150), edges), edges)
    assert smooth.smoothing > pop.smoothing
    normal = np.exp(-0.5 * centres**2)
    normal /= normal.sum()
    assert np.abs(smooth.probs - normal).sum() < 0.25


def test_deconvolved_gap_covers_the_truth_where_the_draws_do_not(gapped: dict[str, np.ndarray]) -> None:
    prior = PriorDraws(loc=gapped["loc"][:, None], sd=gapped["sd"], item_group=np.zeros(150, dtype=np.int64))
    lo, hi = -2.0, 2.0
    true = widest_gap(gapped["truth"][None, :], lo, hi)
    raw = widest_gap(gapped["draws"], lo, hi)
    loc, pops = deconvolved_locations(gapped["draws"], prior, [np.arange(150)], seed=3)
    assert loc.shape == gapped["draws"].shape and loc.dtype == np.float32 and set(pops) == {0}
    fixed = widest_gap(loc, lo, hi)
    q_raw = np.quantile(raw.width, [0.05, 0.95])
    q_fixed = np.quantile(fixed.width, [0.05, 0.95])
    assert q_raw[1] < true.width[0], f"the fit's draws should understate the gap here: {q_raw} vs {true.width}"
    assert q_fixed[0] <= true.width[0] <= q_fixed[1], f"deconvolved {q_fixed} should cover {true.width[0]}"
    assert GAP[0] - 0.2 < np.median(fixed.lo) and np.median(fixed.hi) < GAP[1] + 0.2


def test_locations_are_the_same_on_one_thread_or_several(
    gapped: dict[str, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each population draw has its own generator, so threads change nothing; another seed changes the draws."""
    from irtbayes.auditing import deconvolve

    prior = PriorDraws(loc=gapped["loc"][:, None], sd=gapped["sd"], item_group=np.zeros(150, dtype=np.int64))
    draws = gapped["draws"][:120]
    runs = {}
    for workers in (1, 3):
        monkeypatch.setattr(deconvolve, "WORKERS", workers)
        runs[workers] = deconvolved_locations(draws, prior, [np.arange(150)], n_population=40, seed=5)[0]
    np.testing.assert_array_equal(runs[1], runs[3])
    other = deconvolved_locations(draws, prior, [np.arange(150)], n_population=40, seed=6)[0]
    assert not np.array_equal(runs[1], other)


# ---------------------------------------------------------------------------------------------- support and holes
def _marginal(lik: np.ndarray, probs: np.ndarray, keep: np.ndarray) -> float:
    """Brute force: the items' likelihood under ``probs`` restricted to ``keep`` and renormalised."""
    g = np.where(keep, probs, 0.0)
    return float(np.prod(lik @ g / g.sum()))


def _frequencies(draw, n: int) -> dict[object, float]:
    seen: dict[object, int] = {}
    for _ in range(n):
        key = draw()
        seen[key] = seen.get(key, 0) + 1
    return {k: v / n for k, v in seen.items()}


def test_support_and_hole_draws_follow_their_exact_posteriors() -> None:
    rng = np.random.default_rng(11)
    k = 6
    lik = rng.uniform(0.0, 1.0, size=(3, k)) * (rng.uniform(size=(3, k)) < 0.7)
    lik[:, 2] += 0.5  # every item possible in cell 2, so some support is always possible
    probs = rng.dirichlet(np.ones(k))
    cells = np.arange(k)

    # (first, last): last ∝ p(A | g cut after last), then first ∝ p(A | g kept on [first, last])
    exact: dict[object, float] = {}
    upper = np.array([_marginal(lik, probs, cells <= u) for u in range(k)])
    for u in range(k):
        lower = np.array([_marginal(lik, probs, (cells >= f) & (cells <= u)) if f <= u else 0.0 for f in range(k)])
        for f in range(u + 1):
            if lower.sum() > 0:
                exact[(f, u)] = exact.get((f, u), 0.0) + upper[u] / upper.sum() * lower[f] / lower.sum()
    seen = _frequencies(lambda: draw_support(lik, probs, rng), 20_000)
    for key in set(exact) | set(seen):
        assert seen.get(key, 0.0) == pytest.approx(exact.get(key, 0.0), abs=0.015), key

    # hole [a, b) inside the support: none with probability 1/2 a priori, else uniform over the pairs
    options: list[object] = [None] + [(a, b) for a in range(1, k) for b in range(a + 1, k)]
    weight = np.array(
        [0.5 * _marginal(lik, probs, cells >= 0)]
        + [0.5 / (len(options) - 1) * _marginal(lik, probs, (cells < a) | (cells >= b)) for a, b in options[1:]]
    )
    seen = _frequencies(lambda: draw_hole(lik, probs, rng), 20_000)
    for option, w in zip(options, weight / weight.sum(), strict=True):
        assert seen.get(option, 0.0) == pytest.approx(w, abs=0.015), option


def test_compiled_cut_and_hole_likelihoods_equal_the_sums_of_logarithms() -> None:
    """The kernels' logged running products against the logarithms summed in long double: 400 items (products
    restart many times), far tails (shares below 2^-52), exact zeros (cuts and holes that remove an item)."""
    rng = np.random.default_rng(5)
    n, k = 400, 120
    centres = np.linspace(-4.0, 4.0, k)
    places, se = rng.normal(0.0, 1.5, n), rng.uniform(0.05, 1.0, n)
    lik = np.exp(-0.5 * ((centres[None, :] - places[:, None]) / se[:, None]) ** 2)
    lik[rng.uniform(size=lik.shape) < 0.05] = 0.0
    lik[np.arange(n), np.argmax(lik, axis=1)] += 0.1  # every item keeps some likelihood
    probs = rng.dirichlet(np.ones(k))
    weights = lik * probs  # the products in float64, as the kernels make them
    cum = np.cumsum(weights.astype(np.longdouble), axis=1)
    cum_g = np.cumsum(probs.astype(np.longdouble))

    def same(compiled: np.ndarray, exact: np.ndarray, atol: float) -> None:
        exact = exact.astype(np.float64)
        weighty = exact > exact.max() - 50.0  # what carries posterior weight
        assert np.all(np.isfinite(compiled[weighty]))
        np.testing.assert_allclose(compiled[weighty], exact[weighty], rtol=0, atol=atol)
        share, truth = np.exp(compiled - compiled.max()), np.exp(exact - exact.max())
        assert np.abs(share / share.sum() - truth / truth.sum()).max() < atol

    with np.errstate(divide="ignore"):
        same(_cut_log_likelihood(lik, probs), np.log(cum).sum(axis=0) - n * np.log(cum_g), atol=1e-9)
        lower = np.cumsum(weights[:, ::-1].astype(np.longdouble), axis=1)
        same(
            _cut_log_likelihood(lik, probs, reverse=True),
            np.log(lower).sum(axis=0) - n * np.log(np.cumsum(probs[::-1].astype(np.longdouble))),
            atol=1e-9,
        )
        bounds = np.arange(1, k, 2)
        a, b = np.triu_indices(len(bounds), k=1)
        start = np.concatenate([np.zeros((n, 1), np.longdouble), cum], axis=1)[:, bounds]
        start_g = np.concatenate([[np.longdouble(0)], cum_g])[bounds]
        rest = cum[:, -1:] - (start[:, b] - start[:, a])
        exact = np.log(np.maximum(rest, 0)).sum(axis=0) - n * np.log(cum_g[-1] - (start_g[b] - start_g[a]))
        ell, ell_none = _hole_log_likelihoods(lik, probs, bounds)
        # a hole's factor 1 - (share below b - share below a) cancels in float64, as T - (C_b - C_a) did in the
        # plain sums (5.6e-5 from long double here, the kernel 8.6e-5): a thousandth is far from a wrong restart
        same(np.append(ell, ell_none), np.append(exact, np.log(cum[:, -1]).sum() - n * np.log(cum_g[-1])), atol=1e-3)
        assert np.isneginf(ell).sum() > 100  # holes that take some item's whole likelihood

    # sums far below the smallest double: 300 items that each keep 2^-40 of their likelihood (products
    # restarted), or 1e-200 of it (a share logged on its own); one that keeps nothing makes the sum -inf
    tiny = np.tile([[2.0**-40, 1.0], [1e-200, 1.0]], (150, 1))
    expected = 150 * (np.log(2.0**-40) + np.log(1e-200))
    assert _cut_log_likelihood(tiny, np.array([0.5, 0.5]))[0] == pytest.approx(expected, rel=1e-12)
    shares = np.stack([np.zeros(300), np.full(300, 1.0 - 2.0**-40)])
    assert _log_hole_sums(shares)[0] == pytest.approx(300 * np.log(2.0**-40), rel=1e-12)
    shares[1, 7] = 1.0
    assert _log_hole_sums(shares)[0] == -np.inf


def test_holes_fall_in_the_empty_stretch_and_not_between_spread_items() -> None:
    rng = np.random.default_rng(12)
    edges = np.linspace(-4.0, 4.0, 161)
    centres = (edges[:-1] + edges[1:]) / 2
    flat = np.full(160, 1 / 160)

    def likelihoods(places: np.ndarray, se: float) -> np.ndarray:
        lik = np.exp(-0.5 * ((centres[None, :] - places[:, None]) / se) ** 2)
        return lik / lik.sum(axis=1, keepdims=True)

    gapped = likelihoods(np.concatenate([np.linspace(-3, -0.5, 40), np.linspace(1.0, 3, 30)]), 0.2)
    holes = [draw_hole(gapped, flat, rng) for _ in range(200)]
    found = [(centres[a] - 0.025, centres[b] - 0.025) for a, b in (h for h in holes if h is not None)]
    assert len(found) > 180  # 1.5 empty logits among 70 items: a hole in nearly every draw
    widths = np.array([hi - lo for lo, hi in found])
    assert np.median(widths) > 1.0
    inside = np.array([lo > -0.9 and hi < 1.4 for lo, hi in found])
    assert inside.mean() > 0.95

    spread = likelihoods(np.linspace(-3, 3, 70), 0.2)  # 0.087 apart: no hole much wider than the spacing
    support = np.where(np.abs(centres) < 3.0, flat, 0.0)  # as cut by draw_support
    holes = [draw_hole(spread, support, rng) for _ in range(200)]
    widths = np.array([(b - a) * 0.05 for a, b in (h for h in holes if h is not None)] or [0.0])
    assert np.quantile(widths, 0.95) < 0.45

    # the support ends at the highest item (give or take its error), however far the grid goes on
    first, last = zip(*(draw_support(gapped, flat, rng) for _ in range(200)), strict=True)
    assert np.all(centres[np.array(last)] > 2.6) and np.quantile(centres[np.array(last)], 0.9) < 3.5
    assert np.all(centres[np.array(first)] < -2.6) and np.quantile(centres[np.array(first)], 0.1) > -3.5
    lo_cell, hi_cell = support_window(gapped, flat, 0.05)
    assert centres[lo_cell] == pytest.approx(-3.0 - 0.5, abs=0.3) and centres[hi_cell] == pytest.approx(3.5, abs=0.3)


def test_small_and_unknown_groups_keep_their_draws() -> None:
    rng = np.random.default_rng(2)
    draws = rng.normal(size=(50, 14))
    prior = PriorDraws(loc=np.zeros((50, 1)), sd=np.ones(50), item_group=np.array([0] * 12 + [-1, -1], dtype=np.int64))
    loc, pops = deconvolved_locations(draws, prior, [np.arange(5), np.arange(5, 14)], n_population=10)
    assert pops == {}  # 5 items, and 7 known + 2 unknown: both below MIN_ITEMS
    assert np.array_equal(loc, draws.astype(np.float32))


# ---------------------------------------------------------------------------------------------- in the audit
def _posterior(draws: np.ndarray, *, hyper: bool, benchmarks: list[str]) -> tuple[xr.Dataset, ResponseData]:
    n_samples, n_items = draws.shape
    rng = np.random.default_rng(0)
    items = [f"q{i:03d}" for i in range(n_items)]
    subjects = [f"s{j}" for j in range(30)]
    ability = rng.normal(size=(n_samples, 30))
    bench = [benchmarks[i % len(benchmarks)] for i in range(n_items)]
    y = (rng.random((30, n_items)) < 0.5).astype(float)
    frame = pd.DataFrame({"subject": np.repeat(subjects, n_items), "item": np.tile(items, 30), "response": y.ravel()})
    data = ResponseData.from_long(frame, items=pd.DataFrame({"item": items, "benchmark": bench}))
    shape = (2, n_samples // 2)
    ds = xr.Dataset(
        {
            "difficulty": (("chain", "draw", "item"), draws.reshape(*shape, n_items)),
            "ability": (("chain", "draw", "subject"), ability.reshape(*shape, 30)),
        },
        coords={"chain": [0, 1], "draw": np.arange(shape[1]), "item": items, "subject": subjects},
    )
    if hyper:
        names = sorted(set(benchmarks))
        ds["difficulty_sd"] = (("chain", "draw"), np.ones(shape))
        ds["difficulty_benchmark"] = (("chain", "draw", "benchmark"), np.zeros((*shape, len(names))))
        ds = ds.assign_coords(benchmark=names)
    return ds, data


def test_audit_deconvolves_when_it_can_and_says_so(gapped: dict[str, np.ndarray]) -> None:
    draws = gapped["draws"][:400]
    with_hyper, data = _posterior(draws, hyper=True, benchmarks=["b"])
    without, _ = _posterior(draws, hyper=False, benchmarks=["b"])
    kw = {"range": (-2.0, 2.0), "max_draws": 50, "information_draws": 10}
    auto = audit(with_hyper, data, **kw)
    assert auto.settings["ensemble"] == "deconvolved" and set(auto.settings["deconvolution_smoothing"]) == {"b"}
    plain = audit(with_hyper, data, ensemble="draws", **kw)
    assert plain.settings["ensemble"] == "draws"
    assert audit(without, data, **kw).settings["ensemble"] == "draws"
    gap_auto = auto.benchmarks.set_index("scope").loc["b", "max_gap_mean"]
    gap_plain = plain.benchmarks.set_index("scope").loc["b", "max_gap_mean"]
    assert gap_auto > gap_plain + 0.2
    # each item's own difficulty stays the fit's
    pd.testing.assert_frame_equal(auto.items, plain.items)
    # items held as they are: all of them, so nothing is deconvolved
    held = audit(with_hyper, data, fixed_items=list(data.item_ids), **kw)
    assert held.settings["ensemble"] == "draws" and held.settings["deconvolution_smoothing"] == {}
    assert held.benchmarks.set_index("scope").loc["b", "max_gap_mean"] == pytest.approx(gap_plain)


def test_audit_ensemble_errors(gapped: dict[str, np.ndarray]) -> None:
    draws = gapped["draws"][:40]
    without, data = _posterior(draws, hyper=False, benchmarks=["b"])
    with pytest.raises(SpecError, match="needs the fit's difficulty prior"):
        audit(without, data, ensemble="deconvolved", range=(-2.0, 2.0))
    with pytest.raises(SpecError, match="ensemble must be one of"):
        audit(without, data, ensemble="smoothed", range=(-2.0, 2.0))
    with_hyper, _ = _posterior(draws, hyper=True, benchmarks=["b"])
    with pytest.raises(SpecError, match="not in the data"):
        audit(with_hyper, data, fixed_items=["nope"], range=(-2.0, 2.0))


def test_prior_draws_maps_items_to_their_benchmark() -> None:
    draws = np.zeros((4, 6))
    ds, data = _posterior(draws, hyper=True, benchmarks=["x", "y"])
    ds["difficulty_benchmark"] = ds["difficulty_benchmark"] + xr.DataArray([1.0, 2.0], dims="benchmark")
    prior = prior_draws(ds, list(data.items["benchmark"]))
    assert prior is not None
    assert list(prior.item_group) == [0, 1, 0, 1, 0, 1]
    assert prior.logpdf(slice(0, 4), np.array([1]), np.full((4, 1), 2.0)) == pytest.approx(np.zeros((4, 1)))
    assert list(prior_draws(ds, ["x", "z", None, "x", "x", "x"]).item_group) == [0, -1, -1, 0, 0, 0]
    assert prior_draws(ds.drop_vars("difficulty_sd"), list(data.items["benchmark"])) is None
