"""BenchFill's grid posteriors: the priors of a new item under the fitted hierarchy and the two-pass grid.

See :mod:`irtbayes.benchfill.calibration` for the method.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Literal

import numba
import numpy as np
import pandas as pd
import xarray as xr
from scipy.stats import beta as beta_dist

from irtbayes.core.errors import SpecError
from irtbayes.core.irt import grid_draws, grid_probabilities, jitter_cells, sample_cells
from irtbayes.model.spec import NO_FLOOR

log = logging.getLogger(__name__)

#: Which prior candidates' difficulties get (see the module notes).
Prior = Literal["candidates", "bank"]

SAMPLE_DIMS = ("chain", "draw")
#: Default grid: points of b and of log a per pass.
GRID_POINTS = (161, 33)
#: Default range of b in the first pass (ability units; abilities have mean 0 and sd 1).
B_RANGE = (-8.0, 8.0)
#: The first pass covers log a within at least this much of its prior mean (a factor of about 12 either way).
LOG_A_MIN_HALF_WIDTH = 2.5
#: Mass left out on each side when the second pass narrows the grid.
REFINE_TAIL = 1e-6
#: Posterior mass in an outermost grid cell above which a warning says the grid may be too narrow.
EDGE_MASS_WARN = 1e-3
#: 3PL: equal-mass strata of a candidate's guessing prior over which the likelihood is integrated.
GUESSING_POINTS = 11
#: The sign-free slope's prior, Normal(0, SLOPE_PRIOR_SD): wide and symmetric, so its sign comes from the data.
SLOPE_PRIOR_SD = 3.0
#: The intercept's prior in the sign-free model, Normal(0, INTERCEPT_PRIOR_SD), and its first-pass range.
INTERCEPT_PRIOR_SD = 5.0
INTERCEPT_RANGE = (-15.0, 15.0)
#: Points of the intercept and of the slope in each of the two passes of the sign-free grid.
SLOPE_GRID_POINTS = 41
#: Default least slope, as a share of the bank's typical discrimination (see :func:`default_min_discrimination`).
MIN_DISCRIMINATION_SHARE = 0.25


def check_prior(prior: str) -> None:
    if prior not in ("candidates", "bank"):
        raise SpecError(f"prior must be 'candidates' or 'bank', got {prior!r}")


def flatten_samples(var: xr.DataArray, *rest: str) -> np.ndarray:
    arr = var.transpose(*SAMPLE_DIMS, *rest).values.astype("float64")
    return arr.reshape(-1, *arr.shape[2:])


@dataclass(frozen=True)
class _Prior:
    """A mixture of normals, mean over components s of Normal(centre_s, sd_s), weighted by ``weights``."""

    centre: np.ndarray  # (S,)
    sd: np.ndarray  # (S,)
    group: str
    weights: np.ndarray | None = None  # (S,) summing to 1; None: equal

    @property
    def _w(self) -> np.ndarray:
        return np.full(len(self.centre), 1.0 / len(self.centre)) if self.weights is None else self.weights

    @property
    def mean(self) -> float:
        return float(self._w @ self.centre)

    @property
    def total_sd(self) -> float:
        w = self._w
        return float(np.sqrt(w @ self.sd**2 + w @ (self.centre - self.mean) ** 2))


def fixed_benchmark_sd(spec: Any, prefix: str) -> float | None:
    """The sd of the benchmarks' means where the model fixes it (``ModelSpec.benchmark_sd="fixed"``: the prior's
    group scale of ``prefix``), else None.

    >>> from irtbayes.model.spec import ModelSpec
    >>> fixed_benchmark_sd(ModelSpec(benchmark_sd="fixed"), "difficulty"), fixed_benchmark_sd(ModelSpec(), "difficulty")
    (1.0, None)
    """
    if getattr(spec, "benchmark_sd", "sampled") != "fixed":
        return None
    scales = {
        "difficulty": spec.priors.difficulty_group_sd_scale,
        "log_discrimination": spec.priors.log_discrimination_group_sd_scale,
    }
    return scales.get(prefix)


def _between_benchmarks_sd(post: xr.Dataset, prefix: str, rows: np.ndarray, fixed: float | None = None) -> np.ndarray:
    """Per draw, the sd of benchmark means around their centre: the model's ``{prefix}_benchmark_sd``; ``fixed``
    where the model fixes it; or, for an approximate fit (which estimates benchmark means without pooling and has no
    such variable), the spread of its benchmark means in that draw (0 with one benchmark)."""
    if f"{prefix}_benchmark_sd" in post:
        return flatten_samples(post[f"{prefix}_benchmark_sd"])[rows]
    if fixed is not None:
        return np.full(len(rows), float(fixed))
    means = post[f"{prefix}_benchmark"]
    spread = means.std("benchmark", ddof=1) if means.sizes["benchmark"] > 1 else xr.zeros_like(means.isel(benchmark=0))
    return flatten_samples(spread)[rows]


def _domain_level(post: xr.Dataset, prefix: str, hierarchy: str) -> bool:
    """Whether the posterior has the domain level the hierarchy names (an approximate fit leaves it out)."""
    return hierarchy == "benchmark+domain" and f"{prefix}_domain" in post


def level_prior(
    post: xr.Dataset,
    hierarchy: str,
    prefix: str,
    rows: np.ndarray,
    benchmark: str | None,
    domain: str | None,
    *,
    fixed_sd: float | None = None,
    benchmark_sd: float | None = None,
) -> _Prior:
    """The predictive of a new item's ``prefix`` parameter (difficulty or log_discrimination) under the hierarchy.

    ``fixed_sd`` is the item-level sd where the model fixes it instead of sampling it (small banks:
    ``ModelSpec.discrimination_sd="fixed"``), used when the posterior has no ``{prefix}_sd``; ``benchmark_sd`` that of
    the benchmarks' means (:func:`fixed_benchmark_sd`).
    """
    from irtbayes.model.spec import UNLABELLED

    if f"{prefix}_sd" in post or fixed_sd is None:
        item_sd = flatten_samples(post[f"{prefix}_sd"])[rows]
    else:
        item_sd = np.full(len(rows), float(fixed_sd))
    mu = flatten_samples(post[f"{prefix}_mu"])[rows]
    if hierarchy == "none":
        return _Prior(mu, item_sd, "population")
    bench = benchmark if benchmark is not None else UNLABELLED
    benches = [str(b) for b in post[f"{prefix}_benchmark"]["benchmark"].values]
    if bench in benches:
        centre = flatten_samples(post[f"{prefix}_benchmark"].sel(benchmark=bench))[rows]
        return _Prior(centre, item_sd, f"benchmark '{bench}'")
    var = item_sd**2 + _between_benchmarks_sd(post, prefix, rows, benchmark_sd) ** 2
    if _domain_level(post, prefix, hierarchy):
        dom = domain if domain is not None else UNLABELLED
        domains = [str(d) for d in post[f"{prefix}_domain"]["domain"].values]
        if dom in domains:
            centre = flatten_samples(post[f"{prefix}_domain"].sel(domain=dom))[rows]
            return _Prior(centre, np.sqrt(var), f"a new benchmark in domain '{dom}'")
        var = var + flatten_samples(post[f"{prefix}_domain_sd"])[rows] ** 2
        return _Prior(mu, np.sqrt(var), "a new benchmark in a new domain")
    return _Prior(mu, np.sqrt(var), "a new benchmark")


#: Suffix of the benchmark label that candidates get in the hierarchy (``prior="candidates"``).
CANDIDATE_GROUP_SUFFIX = "[candidates]"
#: Points of the common b grid (over ``b_range``) and of log a on which the candidates' group mean is inferred.
POOL_GRID_POINTS = (161, 11)


def candidate_group_label(benchmark: str | None) -> str:
    """The benchmark label candidates of ``benchmark`` get in the hierarchy with ``prior="candidates"``."""
    from irtbayes.model.spec import UNLABELLED

    return f"{benchmark if benchmark is not None else UNLABELLED} {CANDIDATE_GROUP_SUFFIX}"


def group_mean_prior(
    post: xr.Dataset, hierarchy: str, rows: np.ndarray, domain: str | None, *, benchmark_sd: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre, sd) of a new benchmark's mean difficulty and the item-level sd, per hyperparameter draw
    (``benchmark_sd``: the benchmarks' sd where the model fixes it, :func:`fixed_benchmark_sd`)."""
    from irtbayes.model.spec import UNLABELLED

    item_sd = flatten_samples(post["difficulty_sd"])[rows]
    mu = flatten_samples(post["difficulty_mu"])[rows]
    var = _between_benchmarks_sd(post, "difficulty", rows, benchmark_sd) ** 2
    if _domain_level(post, "difficulty", hierarchy):
        dom = domain if domain is not None else UNLABELLED
        if dom in [str(d) for d in post["difficulty_domain"]["domain"].values]:
            return flatten_samples(post["difficulty_domain"].sel(domain=dom))[rows], np.sqrt(var), item_sd
        var = var + flatten_samples(post["difficulty_domain_sd"])[rows] ** 2
    return mu, np.sqrt(var), item_sd


def pooled_priors(
    loglik: np.ndarray,
    b_grid: np.ndarray,
    centre: np.ndarray,
    group_sd: np.ndarray,
    item_sd: np.ndarray,
    *,
    name: str,
    rng: np.random.Generator,
) -> list[_Prior]:
    """Difficulty priors of a group of candidates that share one group mean, inferred from all of them.

    ``loglik`` (item, b) is each candidate's log-likelihood on ``b_grid`` (log a integrated out). For each
    hyperparameter draw s, the group mean is drawn from ``p(mu | s, all candidates) ∝
    Normal(mu; centre_s, group_sd_s) prod_i int L_i(b) Normal(b; mu, item_sd_s) db`` on the grid. Candidate
    i's posterior is then the equal mixture over s of ``p(b | mu_s, item_sd_s, y_i)``, each normalised: a
    mixture prior with component weights proportional to ``1 / Z_is``, ``Z_is = int L_i(b) Normal(b; mu_s,
    item_sd_s) db``, so that no candidate's data count twice.
    """
    lik = np.exp(loglik - loglik.max(axis=1, keepdims=True))  # (n, nb)
    n_s = len(centre)
    mus = np.empty(n_s)
    z = np.empty((n_s, len(lik)))
    for s in range(n_s):
        kernel = np.exp(-0.5 * ((b_grid[:, None] - b_grid[None, :]) / item_sd[s]) ** 2) / item_sd[s]
        m = np.maximum(lik @ kernel, 1e-300)  # (n, mu)
        logpost = np.log(m).sum(axis=0) - 0.5 * ((b_grid - centre[s]) / group_sd[s]) ** 2
        cell = sample_cells(grid_probabilities(logpost)[None, :], 1, rng)
        mus[s] = jitter_cells(b_grid[None, :], cell, rng)[0, 0]
        z[s] = m[:, cell[0, 0]]
    w = 1.0 / z
    w /= w.sum(axis=0, keepdims=True)
    return [_Prior(mus, item_sd, name, weights=w[:, i]) for i in range(len(lik))]


def log_normal_mixture(x: np.ndarray, prior: _Prior) -> np.ndarray:
    """log of sum_s w_s Normal(x; centre_s, sd_s), for each x (any shape)."""
    z = (x.reshape(-1, 1) - prior.centre[None, :]) / prior.sd[None, :]
    terms = -0.5 * z**2 - np.log(prior.sd)[None, :] - 0.5 * math.log(2 * math.pi)
    top = terms.max(axis=1, keepdims=True)
    out = top[:, 0] + np.log(np.exp(terms - top) @ prior._w)
    return out.reshape(x.shape)


@dataclass(frozen=True)
class _Guessing:
    """A 3PL candidate's guessing prior ``Beta(alpha, beta)``, integrated over ``points`` equal-mass strata.

    The likelihood is averaged over the strata's midpoints (the prior's quantiles at (k + 1/2) / K, a
    midpoint rule on the prior's probability scale); a draw in stratum k is the prior's quantile at
    (k + u) / K with u uniform, so the draws follow the posterior of the strata and the prior within each.
    With the default 11 strata, on 30 responses that move c from 0.25 to 0.30, the draws' mean is within
    0.005 and their sd within 6% of exact quadrature (``tests/benchfill/test_benchfill_calibration.py``).
    """

    alpha: float
    beta: float
    points: int
    fixed: float | None = None  # a floor fixed at chance (``ModelSpec(guessing="chance")``): one point

    @property
    def nodes(self) -> np.ndarray:
        if self.fixed is not None:
            return np.full(self.points, self.fixed)
        return np.asarray(beta_dist.ppf((np.arange(self.points) + 0.5) / self.points, self.alpha, self.beta))

    @property
    def mean(self) -> float:
        return self.fixed if self.fixed is not None else self.alpha / (self.alpha + self.beta)

    def draws(self, stratum: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draws given each draw's stratum (n,): the prior's shape within the stratum."""
        if self.fixed is not None:
            return np.full(len(stratum), self.fixed)
        u = (stratum + rng.random(len(stratum))) / self.points
        return np.asarray(beta_dist.ppf(np.clip(u, 1e-12, 1 - 1e-12), self.alpha, self.beta))


def loglik_grid(
    theta: np.ndarray,
    y: np.ndarray,
    b_grid: np.ndarray,
    a_grid: np.ndarray,
    guessing: _Guessing | None,
    *,
    intercept: bool = False,
) -> np.ndarray:
    """(b, a, c) grid of sum_j log p(y_j | a, b, c), p marginalised over the quantile points theta (n_j, Q).

    ``intercept=False``: P = c + (1 - c) sigmoid(a (theta - b)); ``intercept=True`` (the sign-free slope):
    the first grid holds intercepts d and the second slopes s of any sign, P = c + (1 - c) sigmoid(s theta + d).
    The last axis runs over the guessing strata (length 1 without guessing). P and 1 - P are held at 1e-300
    or more. One compiled pass over the grid (:func:`_loglik_kernel`).

    Not :func:`irtbayes.core.irt.log_likelihood` of a linear predictor: P is averaged over each subject's
    ability quantiles before its log is taken. The grid posterior from it is :func:`irtbayes.core.irt.grid_probabilities`.
    """
    nodes = np.zeros(1) if guessing is None else np.asarray(guessing.nodes, dtype=np.float64)
    f64 = np.float64
    return _loglik_kernel(
        np.ascontiguousarray(theta, dtype=f64),
        np.ascontiguousarray(y, dtype=f64),
        np.ascontiguousarray(b_grid, dtype=f64),
        np.ascontiguousarray(a_grid, dtype=f64),
        nodes,
        intercept,
    )


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _loglik_kernel(
    theta: np.ndarray, y: np.ndarray, b_grid: np.ndarray, a_grid: np.ndarray, nodes: np.ndarray, intercept: bool
) -> np.ndarray:  # pragma: no cover
    """See :func:`loglik_grid`. P and 1 - P are each summed from their own sigmoid (no cancellation in
    1 - P near 1). ``exp(-eta)`` factorises as ``exp(-a theta) exp(a b)`` (``exp(-s theta) exp(-d)``): one
    exponential per grid value and per quantile point rather than per pair, where no factor can overflow."""
    n, points = theta.shape
    out = np.zeros((len(b_grid), len(a_grid), len(nodes)))
    reach = np.abs(theta).max() if theta.size else 0.0
    u = np.empty((n, points))
    v = np.empty(len(b_grid))
    for k in range(len(a_grid)):
        a = a_grid[k]
        factorise = abs(a) * reach + (1.0 if intercept else abs(a)) * np.abs(b_grid).max() < 700.0
        if factorise:
            for j in range(n):
                for t in range(points):
                    u[j, t] = np.exp(-a * theta[j, t])
            for i in range(len(b_grid)):
                v[i] = np.exp(-b_grid[i]) if intercept else np.exp(a * b_grid[i])
        for i in range(len(b_grid)):
            b = b_grid[i]
            for j in range(n):
                p_sum = 0.0
                q_sum = 0.0
                for t in range(points):
                    if factorise:
                        e = u[j, t] * v[i]  # exp(-eta)
                        p_t = 1.0 / (1.0 + e)
                        p_sum += p_t
                        q_sum += e * p_t
                    else:
                        eta = a * theta[j, t] + b if intercept else a * (theta[j, t] - b)
                        e = np.exp(-abs(eta))  # exp of a non-positive number only
                        small, large = e / (1.0 + e), 1.0 / (1.0 + e)
                        p_sum += large if eta >= 0 else small
                        q_sum += small if eta >= 0 else large
                for m in range(len(nodes)):
                    c = nodes[m]
                    p = max(c + (1.0 - c) * p_sum / points, 1e-300)
                    q = max((1.0 - c) * q_sum / points, 1e-300)
                    out[i, k, m] += y[j] * np.log(p) + (1.0 - y[j]) * np.log(q)
    return out


def _grid_posterior(
    theta: np.ndarray,
    y: np.ndarray,
    b_grid: np.ndarray,
    la_grid: np.ndarray,
    *,
    prior_b: _Prior | None,
    prior_la: _Prior | None,
    a_fixed: float | None,
    guessing: _Guessing | None,
    slope: bool = False,
) -> np.ndarray:
    """Normalised posterior probabilities on the (b, log a, c) grid (nb, na, nc); na = 1 when ``a_fixed``,
    nc = 1 without guessing; ``prior_b=None``: a flat prior on b. ``slope=True``: the grids are of the
    intercept d and the sign-free slope s (no log), with priors ``prior_b`` and ``prior_la``."""
    if slope:
        a_grid = la_grid
    else:
        a_grid = np.array([a_fixed]) if a_fixed is not None else np.exp(la_grid)
    logp = loglik_grid(theta, y, b_grid, a_grid, guessing, intercept=slope)
    if prior_b is not None:
        logp = logp + log_normal_mixture(b_grid, prior_b)[:, None, None]
    if prior_la is not None and (slope or a_fixed is None):
        logp = logp + log_normal_mixture(la_grid, prior_la)[None, :, None]
    return grid_probabilities(logp)


def two_pass(
    theta: np.ndarray,
    y: np.ndarray,
    prior_b: _Prior | None,
    prior_la: _Prior | None,
    *,
    b_range: tuple[float, float],
    nb: int,
    na: int,
    a_fixed: float | None,
    guessing: _Guessing | None,
    slope: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The grid posterior (see the module notes): a coarse pass to find the mass, then a fine one over it.

    Returns the probabilities (nb, na, nc) and the two grids."""
    b_lo, b_hi = b_range
    free_a = slope or a_fixed is None
    if prior_la is not None:
        half = max(5 * prior_la.total_sd, LOG_A_MIN_HALF_WIDTH)
        la_lo, la_hi = prior_la.mean - half, prior_la.mean + half
    else:
        la_lo, la_hi = 0.0, 1.0
    la_range = (la_lo, la_hi)
    for _pass in range(2):
        # the first pass only finds where the mass is: half the points in each direction
        pb, pa = (max(41, nb // 2 + 1), max(9, na // 2 + 1)) if _pass == 0 else (nb, na)
        b_grid = np.linspace(b_lo, b_hi, pb)
        la_grid = np.linspace(la_lo, la_hi, pa) if free_a else np.zeros(1)
        prob = _grid_posterior(
            theta,
            y,
            b_grid,
            la_grid,
            prior_b=prior_b,
            prior_la=prior_la,
            a_fixed=a_fixed,
            guessing=guessing,
            slope=slope,
        )
        if _pass == 0:
            b_lo, b_hi = _narrowed(b_grid, prob.sum(axis=(1, 2)), lo=b_range[0], hi=b_range[1])
            if free_a:
                la_lo, la_hi = _narrowed(la_grid, prob.sum(axis=(0, 2)), lo=la_range[0], hi=la_range[1])
    return prob, b_grid, la_grid


def _narrowed(grid: np.ndarray, marginal: np.ndarray, *, lo: float, hi: float) -> tuple[float, float]:
    cdf = np.cumsum(marginal)
    first = int(np.searchsorted(cdf, REFINE_TAIL))
    last = int(np.searchsorted(cdf, 1.0 - REFINE_TAIL))
    step = grid[1] - grid[0] if len(grid) > 1 else 1.0
    new_lo = max(lo, grid[max(first, 0)] - step)
    new_hi = min(hi, grid[min(last, len(grid) - 1)] + step)
    return new_lo, new_hi


def guessing_prior(spec: Any, n_options: Any, *, points: int) -> _Guessing:
    """The model's guessing prior for one item (centred on chance when the item gives its options; fixed there,
    or at no floor for an item without options, under ``guessing="chance"``)."""
    priors = spec.priors
    known = n_options is not None and not pd.isna(n_options) and int(n_options) >= 2
    if getattr(spec, "guessing", "pooled") == "chance":
        return _Guessing(0.0, 0.0, 1, fixed=1.0 / int(n_options) if known else NO_FLOOR)
    mean = float(priors.guessing_mean)
    if priors.guessing_chance and n_options is not None and not pd.isna(n_options) and int(n_options) >= 2:
        mean = 1.0 / int(n_options)
    kappa = float(priors.guessing_concentration)
    return _Guessing(mean * kappa, (1.0 - mean) * kappa, int(points))


def grid_slope_draws(
    theta: np.ndarray,
    y: np.ndarray,
    guessing: _Guessing | None,
    *,
    n_draws: int,
    grid_points: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of the sign-free slope s of ``P = c + (1 - c) sigmoid(s theta + d)`` (see the module notes)."""
    prior_s = _Prior(np.zeros(1), np.array([SLOPE_PRIOR_SD]), "slope")
    prior_d = _Prior(np.zeros(1), np.array([INTERCEPT_PRIOR_SD]), "intercept")
    prob, _, s_grid = two_pass(
        theta,
        y,
        prior_d,
        prior_s,
        b_range=INTERCEPT_RANGE,
        nb=grid_points,
        na=grid_points,
        a_fixed=None,
        guessing=guessing,
        slope=True,
    )
    return marginal_draws(prob, s_grid, 1, n_draws=n_draws, rng=rng)


def data_alone_draws(
    theta: np.ndarray,
    y: np.ndarray,
    prior_la: _Prior | None,
    *,
    guessing: _Guessing | None,
    a_fixed: float | None,
    b_range: tuple[float, float],
    nb: int,
    na: int,
    n_draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Draws of b under a flat prior on b (the same likelihood, log a and c with their priors)."""
    flat, flat_grid, _ = two_pass(
        theta, y, None, prior_la, b_range=b_range, nb=nb, na=na, a_fixed=a_fixed, guessing=guessing
    )
    return marginal_draws(flat, flat_grid, 0, n_draws=n_draws, rng=rng)


def marginal_draws(
    prob: np.ndarray, grid: np.ndarray, axis: int, *, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws of one parameter from its marginal on the (b, log a, c) grid ``prob``: ``axis`` 0 (b or the
    intercept) or 1 (log a or the slope), on its evenly spaced ``grid``, jittered within the cell."""
    marg = prob.sum(axis=tuple(k for k in range(prob.ndim) if k != axis))
    (draws,) = grid_draws(marg[None, :], (grid[None, :],), n_draws, rng)
    return draws[0]
