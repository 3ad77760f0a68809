"""Deconvolved item locations: each benchmark's difficulty distribution without the model's smoothing.

Why
---
The fit's hierarchy gives each benchmark's item difficulties a normal population prior,
``difficulty ~ Normal(loc, difficulty_sd)``. That prior is right for estimating each item, but an ensemble
of posterior draws from it is pulled toward a normal shape: an item next to an empty stretch of the scale
has posterior draws on both sides of its true place, and with many such items, some item falls into the
stretch in almost every draw. Measures of the whole set of difficulties (coverage per bin, P(bin empty),
DDM and above all the Maximum Gap, which is set by the items at a gap's two edges) are then biased toward
"no gaps". With 40 subjects and a true gap of 1.5 logits, the per-draw widest gap came out as 0.53
[0.34, 0.82]; with 150 subjects as 1.02 [0.69, 1.31].

What
----
For each benchmark, irtbayes estimates the population distribution ``g`` of its item difficulties from the
items' likelihoods (Bayesian deconvolution, Efron's "g-modelling") and draws each item's location from
``p(b_i | data, g) ∝ L_i(b_i) g(b_i)`` instead of from the normal prior. An item at the edge of a region
that ``g`` leaves empty then stays on its side. Steps:

1. **Item likelihoods on a grid.** The benchmark's range (the span of its items' draws) is cut into
   ``K`` equal cells (default 200). For item i, ``L_i`` on cell k is estimated from the fit's own draws by
   importance weighting, ``A_ik ∝ Σ_s 1[b_is in cell k] / π_s(b_is)``, where ``π_s`` is the item's normal
   prior under the hyperparameters of draw s. Because the draws come from ``L_i(b) π(b | h) p(h | rest)``,
   dividing by ``π`` leaves ``L_i`` (up to a constant per item, which does not matter). Rows are smoothed
   with a short Gaussian kernel (``smooth_cells``, default 2 cells) against Monte Carlo noise.
2. **Population as a normal times a log-spline.** ``g_k ∝ φ((x_k - m) / s) exp((Q α)_k)``: the fit's own
   normal population (``m`` the mean over draws of the benchmark's prior mean, ``s`` of ``difficulty_sd``)
   times a cubic B-spline deviation (knots every ``knot_spacing`` logits, default 0.25). The deviation has
   the Gaussian prior ``α ~ N(0, (λ Δ₃ᵀΔ₃ + κ I)⁻¹)``: a third-difference smoothness penalty of strength
   ``λ`` and a small ridge ``κ`` (:data:`RIDGE`, 0.01) that keeps the deviation, and so the tails where no
   item lies, anchored to the normal base. A large ``λ`` gives back (nearly) the model's own normal
   population; a small one lets ``g`` show gaps and skew. The marginal log-likelihood is
   ``Σ_i log Σ_k A_ik g_k``; the mode is found by Newton's method with the exact Hessian.
3. **Smoothness from the data.** ``g`` is fitted for each ``λ`` on a grid (``10^-2 ... 10^4``) and the
   Laplace approximation to the marginal likelihood (the evidence) weighs them: a benchmark with few or
   noisy items gets a smooth, near-normal ``g``; one with a clear hole gets a hole.
4. **Uncertainty in g.** Each of ``n_population`` population draws (default 200) takes ``λ`` with
   probability proportional to its evidence (averaging over the smoothness rather than fixing it) and
   ``α`` from that ``λ``'s Laplace posterior ``N(α̂, H⁻¹)``; posterior draw s uses population draw
   ``s mod n_population``.
5. **A support, and at most one hole.** A log-spline has tails everywhere, so a smooth ``g`` falls off
   gradually past a benchmark's hardest item and cannot drop to zero inside an empty stretch; the items
   beside such a region are then read into it (a planted 1.5-logit gap came out 0.2-0.5 too narrow). So
   ``g`` is first refitted on the cells around its likeliest support (the most likely lower and upper cut,
   below, widened by :data:`~irtbayes.auditing.support.SUPPORT_MARGIN`, 0.5 logits), and then each population
   draw is cut at a lower and an upper edge and may leave out one stretch inside, each drawn from the items'
   likelihoods (:mod:`irtbayes.auditing.support`): for a cut or a hole, the items' marginal likelihood under
   ``g`` set to zero there and renormalised is ``Σ_i log(mass of A_i g kept) - n log(mass of g kept)``,
   which is -inf when an item's whole likelihood is removed and grows with the population mass removed
   from where no item is. Priors: each cut uniform over the cells; no hole with probability
   :data:`~irtbayes.auditing.support.P_NO_HOLE` (1/2), otherwise the hole's ends uniform over the pairs of
   cell boundaries inside the support. With no empty region and precise items the cuts fall near the
   outermost items and the holes stay about as narrow as the items' spacing; with few, uncertain items the
   likelihood constrains the hole less and gaps are read wider than they are (``docs/validation.md``:
   ``scripts/gap_small_banks.py``).
6. **Locations.** In posterior draw s, item i's location is drawn from ``A_ik g_k`` with the population
   draw cut as above (the cell), then uniformly within the cell. Locations of different items are drawn
   independently given ``g``.

The result is one location per (draw, item), on the same scale as the difficulties. :func:`audit` uses these
locations for the measures of the whole set (coverage, DDM, Maximum Gap) when ``ensemble="deconvolved"``
(the default when the posterior holds the hierarchy's hyperparameters); each item's own difficulty, the
leaderboard and the information curves use the fit's draws unchanged.

Limits
------
The population is estimated from the benchmark's own items, so a benchmark with fewer than
:data:`MIN_ITEMS` items keeps the fit's draws. Correlation between items' draws (through shared abilities)
is not carried over. One hole per draw: where a benchmark has two wide empty stretches, the narrower one is
read as the smooth part of ``g`` allows, which blurs it as before. ``scripts/gap_calibration.py`` measures
the calibration of the Maximum Gap (the table in ``docs/validation.md``; ``notebooks/results/gap_calibration.csv``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numba
import numpy as np
import xarray as xr
from scipy import linalg
from scipy.interpolate import BSpline
from scipy.ndimage import gaussian_filter1d

from irtbayes.auditing.support import COMPILED, restrict_to_support, support_window
from irtbayes.core.chains import WORKERS
from irtbayes.core.errors import FitError
from irtbayes.core.jit import Warmup

__all__ = [
    "MIN_ITEMS",
    "NUMBA_WARMUP",
    "Population",
    "PriorDraws",
    "deconvolved_locations",
    "fit_population",
    "item_likelihoods",
    "prior_draws",
    "warm_numba_cache",
]

#: Benchmarks with fewer items keep the fit's draws.
MIN_ITEMS = 10
#: Order of the differences the smoothness penalty acts on.
PENALTY_ORDER = 3
#: Precision of each spline coefficient's deviation from the normal base population.
RIDGE = 0.01
#: Candidate smoothing strengths.
SMOOTHING_GRID = tuple(10.0**k for k in np.arange(-2.0, 4.5, 0.5))
SAMPLE_DIMS = ("chain", "draw")


# ============================================================================================ prior
@dataclass(frozen=True)
class PriorDraws:
    """The normal prior of each item's difficulty, per draw.

    Attributes
    ----------
    loc
        (sample, group) prior mean of the items in each group (a benchmark, or one group for a flat fit).
    sd
        (sample,) prior sd (``difficulty_sd``).
    item_group
        (item,) group code of each item, in the data's item order; -1 where the item's prior is unknown
        (its benchmark is not one of the fit's).
    shift
        (sample, item) or None. Graded items are audited at their ``location``, which is their
        ``difficulty`` (the mean threshold, whose prior this is) plus an offset that depends only on the
        item's discrimination and threshold gaps: given those, the location's prior is this normal moved by
        the offset. ``shift`` holds the offsets, so that :meth:`logpdf` of a location is exactly the prior
        density of the difficulty behind it.
    """

    loc: np.ndarray
    sd: np.ndarray
    item_group: np.ndarray
    shift: np.ndarray | None = None

    def logpdf(self, rows: slice | np.ndarray, items: np.ndarray, values: np.ndarray) -> np.ndarray:
        """log π_s(values) for draws ``rows`` and item positions ``items``; ``values`` is (rows, items)."""
        loc = self.loc[rows][:, self.item_group[items]]
        if self.shift is not None:
            loc = loc + self.shift[rows][:, items]
        sd = self.sd[rows][:, None]
        z = (values - loc) / sd
        return -0.5 * z * z - np.log(sd)


def _stack(var: xr.DataArray, keep: Sequence[str]) -> np.ndarray:
    arr = var.transpose(*SAMPLE_DIMS, *keep).to_numpy().astype("float64", copy=False)
    return arr.reshape((-1, *arr.shape[2:]))


def prior_draws(
    posterior: xr.Dataset, item_benchmark: Sequence[object], *, shift: np.ndarray | None = None
) -> PriorDraws | None:
    """The difficulty prior per draw from a fit's hyperparameters, or None when the posterior lacks them.

    Parameters
    ----------
    posterior
        Posterior Dataset of a fit made by :func:`irtbayes.model.build.build_model`.
    item_benchmark
        Each item's benchmark label, in the data's item order (None/NaN for items without one).
    shift
        Graded fits: (sample, item) location minus difficulty per draw (see :class:`PriorDraws`).

    Returns
    -------
    PriorDraws or None
        None when ``difficulty_sd`` is absent, the location variable (``difficulty_benchmark`` with a
        ``benchmark`` coordinate, else ``difficulty_mu``) is absent, or no item's benchmark is in it.
    """
    if "difficulty_sd" not in posterior.data_vars:
        return None
    sd = _stack(posterior["difficulty_sd"], ())
    labels = [None if _missing(v) else str(v) for v in item_benchmark]
    if "difficulty_benchmark" in posterior.data_vars and "benchmark" in posterior["difficulty_benchmark"].dims:
        var = posterior["difficulty_benchmark"]
        names = [str(v) for v in var["benchmark"].to_numpy()]
        index = {name: k for k, name in enumerate(names)}
        group = np.array([index.get(label, -1) if label is not None else -1 for label in labels], dtype=np.int64)
        if np.all(group < 0):
            return None
        return PriorDraws(loc=_stack(var, ("benchmark",)), sd=sd, item_group=group, shift=shift)
    if "difficulty_mu" in posterior.data_vars and posterior["difficulty_mu"].ndim == 2:
        loc = _stack(posterior["difficulty_mu"], ())[:, None]
        return PriorDraws(loc=loc, sd=sd, item_group=np.zeros(len(labels), dtype=np.int64), shift=shift)
    return None


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


# ============================================================================================ likelihoods
def item_likelihoods(
    difficulty: np.ndarray,
    prior: PriorDraws,
    items: np.ndarray,
    edges: np.ndarray,
    *,
    chunks: Iterable[slice] | None = None,
    smooth_cells: float = 2.0,
) -> np.ndarray:
    """Each item's likelihood on the grid cells, from its posterior draws divided by its prior.

    Parameters
    ----------
    difficulty
        (sample, all items) the fit's difficulty draws.
    prior
        From :func:`prior_draws`.
    items
        Positions of the benchmark's items.
    edges
        K + 1 equally spaced cell edges covering every draw of these items.
    chunks
        Slices of draws to process at a time (default: all at once).
    smooth_cells
        Sd, in cells, of the Gaussian kernel applied along each row (0: none).

    Returns
    -------
    numpy.ndarray
        (item, K), each row summing to 1.
    """
    n_samples = difficulty.shape[0]
    n_cells = len(edges) - 1
    lo, width = float(edges[0]), float(edges[1] - edges[0])
    n = len(items)
    total = np.zeros((n, n_cells))
    running = np.full(n, -np.inf)  # running max of log-weights per item, for a stable sum
    offsets = (np.arange(n, dtype=np.int64) * n_cells)[None, :]
    for sl in chunks if chunks is not None else [slice(0, n_samples)]:
        values = difficulty[sl][:, items]
        logw = -prior.logpdf(sl, items, values)
        top = np.maximum(running, logw.max(axis=0))
        total *= np.exp(running - top)[:, None]
        running = top
        cell = np.clip(((values - lo) / width).astype(np.int64), 0, n_cells - 1)
        w = np.exp(logw - top[None, :])
        total += np.bincount((offsets + cell).ravel(), weights=w.ravel(), minlength=n * n_cells).reshape(n, n_cells)
    if smooth_cells > 0:
        total = gaussian_filter1d(total, smooth_cells, axis=1, mode="constant")
    sums = total.sum(axis=1, keepdims=True)
    if np.any(sums <= 0) or not np.all(np.isfinite(sums)):
        raise FitError("an item's difficulty draws give no usable likelihood on the grid (non-finite weights)")
    return total / sums


# ============================================================================================ population
@dataclass(frozen=True)
class Population:
    """A benchmark's estimated difficulty distribution on a grid.

    Attributes
    ----------
    edges
        K + 1 cell edges.
    probs
        (K,) posterior-mode cell probabilities.
    draws
        (n_population, K) cell probabilities drawn from the Laplace posterior.
    smoothing
        The chosen λ.
    log_evidence
        {λ: Laplace log marginal likelihood} over the grid tried.
    """

    edges: np.ndarray
    probs: np.ndarray
    draws: np.ndarray
    smoothing: float
    log_evidence: dict[float, float]


def _basis(centers: np.ndarray, lo: float, hi: float, spacing: float) -> np.ndarray:
    n_inner = max(int(np.ceil((hi - lo) / spacing)), 4)
    step = (hi - lo) / n_inner
    knots = lo + step * np.arange(-3, n_inner + 4)
    return BSpline.design_matrix(centers, knots, 3, extrapolate=False).toarray()


def _softmax(eta: np.ndarray) -> np.ndarray:
    e = np.exp(eta - eta.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Objective:
    """Penalised negative marginal log-likelihood of the population coefficients β (α = Z β)."""

    def __init__(
        self, likelihoods: np.ndarray, design: np.ndarray, penalty: np.ndarray, ridge: np.ndarray, base: np.ndarray
    ) -> None:
        self.A = likelihoods
        self.QZ = design
        self.P = penalty
        self.R = ridge
        self.base = base
        self.n = likelihoods.shape[0]
        self.lam = 1.0

    @property
    def prior_precision(self) -> np.ndarray:
        return self.lam * self.P + self.R

    def value_and_grad(self, beta: np.ndarray) -> tuple[float, np.ndarray]:
        p = _softmax(self.base + self.QZ @ beta)
        r = self.A @ p
        if np.any(r <= 0):
            return np.inf, np.zeros_like(beta)
        with np.errstate(over="ignore", invalid="ignore"):  # a trial step that leaves an item almost no mass
            c = (self.A / r[:, None]).sum(axis=0)
            pen = self.prior_precision @ beta
            value = -np.log(r).sum() + 0.5 * beta @ pen
            grad = -self.QZ.T @ (p * (c - self.n)) + pen
        if not (np.isfinite(value) and np.all(np.isfinite(grad))):
            return np.inf, np.zeros_like(beta)  # rejected by the line search
        return float(value), grad

    def hessian(self, beta: np.ndarray) -> np.ndarray:
        """Exact Hessian of the penalised objective in β.

        With p = softmax(η), r_i = A_i · p, c = Σ_i A_i / r_i and M_ik = A_ik / r_i, the log-likelihood has
        ∂²l / ∂η_k ∂η_j = p_k (δ_kj - p_j)(c_k - n) - p_k p_j ((MᵀM)_kj - c_k).
        """
        p = _softmax(self.base + self.QZ @ beta)
        r = self.A @ p
        m = self.A / r[:, None]
        c = m.sum(axis=0)
        h_eta = np.diag(p * (c - self.n)) - np.outer(p * (c - self.n), p) - np.outer(p, p) * (m.T @ m - c[:, None])
        h = -self.QZ.T @ h_eta @ self.QZ + self.prior_precision
        return (h + h.T) / 2

    def newton(self, beta: np.ndarray, *, max_iter: int = 100, tol: float = 1e-8) -> tuple[np.ndarray, float, bool]:
        """Damped Newton steps with backtracking from ``beta``: (mode, value, converged)."""
        value, grad = self.value_and_grad(beta)
        for _ in range(max_iter):
            hess = self.hessian(beta)
            eigval, eigvec = np.linalg.eigh(hess)
            floor = max(1e-8 * abs(eigval[-1]), 1e-12)
            step = -(eigvec @ ((eigvec.T @ grad) / np.maximum(eigval, floor)))  # Newton on the positive part
            t = 1.0
            while t > 1e-10:
                new_value, new_grad = self.value_and_grad(beta + t * step)
                if new_value <= value + 1e-4 * t * (grad @ step):
                    break
                t /= 2
            else:
                return beta, value, False
            beta, decrease, value, grad = beta + t * step, value - new_value, new_value, new_grad
            if decrease < tol * (1 + abs(value)) and np.max(np.abs(grad)) < 1e-4 * (1 + self.n):
                return beta, value, True
        return beta, value, bool(np.max(np.abs(grad)) < 1e-3 * (1 + self.n))


def fit_population(
    likelihoods: np.ndarray,
    edges: np.ndarray,
    *,
    knot_spacing: float = 0.25,
    smoothing: float | None = None,
    n_population: int = 200,
    penalty_order: int = PENALTY_ORDER,
    ridge: float = RIDGE,
    base: tuple[float, float] | None = None,
    rng: np.random.Generator | None = None,
) -> Population:
    """Estimate a benchmark's difficulty distribution from its items' likelihoods on a grid.

    Parameters
    ----------
    likelihoods
        (item, K) from :func:`item_likelihoods`.
    edges
        K + 1 cell edges.
    knot_spacing
        Distance between the log-spline's knots, in logits.
    smoothing
        λ; None chooses it by the Laplace evidence over :data:`SMOOTHING_GRID`.
    n_population
        Draws of the distribution from its Laplace posterior.
    penalty_order
        Order of the differences the smoothness penalty acts on.
    ridge
        Precision of the spline coefficients' deviation from the base, added to the smoothness penalty.
    base
        (mean, sd) of the normal base population the log-spline deviates from (default: flat).
    rng
        Random generator for those draws.

    Returns
    -------
    Population
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    edges = np.asarray(edges, dtype="float64")
    centers = (edges[:-1] + edges[1:]) / 2
    q = _basis(centers, float(edges[0]), float(edges[-1]), knot_spacing)
    d = q.shape[1]
    z = linalg.null_space(np.ones((1, d)))  # B-splines sum to one: drop the constant shift softmax ignores
    diff3 = np.diff(np.eye(d), penalty_order, axis=0)
    penalty = z.T @ diff3.T @ diff3 @ z
    ridge_m = ridge * np.eye(d - 1)
    log_base = np.zeros(len(centers)) if base is None else -0.5 * ((centers - base[0]) / base[1]) ** 2
    obj = _Objective(likelihoods, q @ z, penalty, ridge_m, log_base)
    grid = [float(smoothing)] if smoothing is not None else sorted(SMOOTHING_GRID, reverse=True)

    beta = np.zeros(d - 1)
    modes: dict[float, tuple[np.ndarray, np.ndarray]] = {}  # lambda -> (mode, H^(-1/2))
    evidence: dict[float, float] = {}
    for lam in grid:  # from smooth to rough, each start from the previous optimum
        obj.lam = lam
        found, value, converged = obj.newton(beta)
        if not converged or not np.isfinite(value):
            continue
        beta = found
        eigval, eigvec = np.linalg.eigh(obj.hessian(beta))
        if not np.all(np.isfinite(eigval)) or eigval[0] <= 0:
            continue
        prior_logdet = np.linalg.slogdet(obj.prior_precision)[1]
        evidence[lam] = -float(value) + 0.5 * prior_logdet - 0.5 * np.log(eigval).sum()
        modes[lam] = (beta.copy(), eigvec / np.sqrt(eigval)[None, :])  # H^(-1/2): beta = mode + root @ z
    if not evidence:
        raise FitError("could not estimate the difficulty distribution (the deconvolution did not converge)")
    lams = np.array(list(evidence))
    log_ev = np.array([evidence[lam] for lam in lams])
    weight = np.exp(log_ev - log_ev.max())
    weight /= weight.sum()
    best = float(lams[int(np.argmax(log_ev))])
    qz = q @ z
    # draws: lambda from its evidence weights (model averaging), then alpha from that lambda's Laplace posterior
    pick = rng.choice(len(lams), size=n_population, p=weight)
    betas = np.empty((n_population, d - 1))
    for k in np.unique(pick):
        beta_hat, root = modes[float(lams[k])]
        rows = np.flatnonzero(pick == k)
        betas[rows] = beta_hat[None, :] + rng.standard_normal((len(rows), d - 1)) @ root.T
    return Population(
        edges=edges,
        probs=_softmax(log_base + qz @ modes[best][0]),
        draws=_softmax(log_base[None, :] + betas @ qz.T),
        smoothing=best,
        log_evidence=evidence,
    )


# ============================================================================================ locations
def deconvolved_locations(
    difficulty: np.ndarray,
    prior: PriorDraws,
    groups: Sequence[np.ndarray],
    *,
    n_cells: int = 200,
    knot_spacing: float = 0.25,
    smooth_cells: float = 2.0,
    n_population: int = 200,
    penalty_order: int = PENALTY_ORDER,
    ridge: float = RIDGE,
    chunks: Sequence[slice] | None = None,
    support: bool = True,
    seed: int = 0,
) -> tuple[np.ndarray, dict[int, Population]]:
    """Item locations per draw under each group's deconvolved difficulty distribution.

    Parameters
    ----------
    difficulty
        (sample, item) the fit's difficulty draws.
    prior
        From :func:`prior_draws`.
    groups
        Item positions of each benchmark; each is deconvolved on its own. Items in no group, items whose
        prior is unknown (``item_group`` -1), and groups with fewer than :data:`MIN_ITEMS` such items keep
        the fit's draws.
    n_cells, knot_spacing, smooth_cells, n_population
        See the module docstring.
    chunks
        Slices of draws to process at a time.
    support
        Give each benchmark's population a support (default): refit it on the cells around its likeliest
        edges (:func:`~irtbayes.auditing.support.support_window`), then cut each population draw at a lowest and a highest difficulty
        and leave out at most one interior stretch, each drawn from the items' likelihoods
        (:func:`~irtbayes.auditing.support.restrict_to_support`). False keeps the log-spline's tails and no holes.
    seed
        Seed of the location and population draws. The locations under each population draw come from their
        own generator, spawned from this seed, so they are drawn on :data:`~irtbayes.core.chains.WORKERS`
        threads with the same result.

    Returns
    -------
    (locations, populations)
        locations: (sample, item) float32; populations: {group index: Population} for the groups deconvolved.
    """
    rng = np.random.default_rng(seed)
    n_samples = difficulty.shape[0]
    out = difficulty.astype(np.float32, copy=True)
    populations: dict[int, Population] = {}
    for gi, items in enumerate(groups):
        items = np.asarray(items, dtype=np.int64)
        items = items[prior.item_group[items] >= 0]
        if len(items) < MIN_ITEMS:
            continue
        lo = float(difficulty[:, items].min())
        hi = float(difficulty[:, items].max())
        pad = (hi - lo) / n_cells
        edges = np.linspace(lo - pad, hi + pad, n_cells + 1)
        lik = item_likelihoods(difficulty, prior, items, edges, chunks=chunks, smooth_cells=smooth_cells)
        codes = np.unique(prior.item_group[items])
        shift = 0.0 if prior.shift is None else float(prior.shift[:, items].mean())
        base = (float(prior.loc[:, codes].mean()) + shift, float(prior.sd.mean()))  # the fit's own population
        estimate = partial(
            fit_population,
            knot_spacing=knot_spacing,
            n_population=n_population,
            penalty_order=penalty_order,
            ridge=ridge,
            base=base,
            rng=rng,
        )
        pop = estimate(lik, edges)
        if support:  # refit on the cells around the likeliest support, so g need not fall to zero by itself
            lo_cell, hi_cell = support_window(lik, pop.probs, float(edges[1] - edges[0]))
            kept = lik[:, lo_cell : hi_cell + 1].sum(axis=1, keepdims=True)
            # refit only where every item keeps some likelihood and the window leaves the spline room (8 cells)
            if np.all(kept > 0) and hi_cell - lo_cell >= 8:
                lik = lik[:, lo_cell : hi_cell + 1] / kept
                edges = edges[lo_cell : hi_cell + 2]
                pop = estimate(lik, edges)
        populations[gi] = pop
        which = np.arange(n_samples) % n_population
        place = partial(_place_items, out, items, lik, edges, support=support)
        streams = rng.spawn(n_population)  # one generator per population draw, so the draws run in parallel
        rows = [np.flatnonzero(which == g) for g in range(n_population)]
        with ThreadPoolExecutor(WORKERS) as pool:  # NumPy releases the GIL in the long array operations
            list(pool.map(place, rows, pop.draws, streams))  # list(): re-raise any error
    return out, populations


def _place_items(
    out: np.ndarray,
    items: np.ndarray,
    lik: np.ndarray,
    edges: np.ndarray,
    rows: np.ndarray,
    probs: np.ndarray,
    rng: np.random.Generator,
    *,
    support: bool,
) -> None:
    """Draw the locations of ``items`` in posterior draws ``rows`` under one population draw ``probs``."""
    if len(rows) == 0:
        return
    if support:
        probs = restrict_to_support(probs, lik, rng)
    u = rng.uniform(size=(len(rows), len(items)))  # the cell
    v = rng.uniform(size=u.shape)  # the place within it
    out[np.ix_(rows, items)] = _draw_locations(lik, probs, u, v, float(edges[0]), float(edges[1] - edges[0]))


@numba.njit(nogil=True, cache=True)
def _draw_locations(
    lik: np.ndarray, probs: np.ndarray, u: np.ndarray, v: np.ndarray, start: float, width: float
) -> np.ndarray:  # pragma: no cover
    """(row, item) locations: item i's cell drawn from ``lik[i] * probs`` by inverting its CDF at ``u`` (its
    likelihood alone where the population leaves it no mass), then ``v`` of the way across the cell."""
    n, k = lik.shape
    out = np.empty((u.shape[0], n))
    cdf = np.empty(k)
    for i in range(n):
        total = 0.0
        for c in range(k):
            total += lik[i, c] * probs[c]
            cdf[c] = total
        if not total > 0.0:
            for c in range(k):
                total += lik[i, c]
                cdf[c] = total
        for r in range(u.shape[0]):
            x = u[r, i] * total
            lo, hi = 0, k - 1  # the first cell whose CDF exceeds x (u < 1, so the last one does)
            while lo < hi:
                mid = (lo + hi) // 2
                if cdf[mid] <= x:
                    lo = mid + 1
                else:
                    hi = mid
            out[r, i] = start + (lo + v[r, i]) * width
    return out


def warm_numba_cache() -> None:
    """Compile the deconvolution's numba code (the support's draws and :func:`_draw_locations`) into numba's disk
    cache, on small inputs of the types :func:`deconvolved_locations` gives it: :data:`NUMBA_WARMUP`."""
    rng = np.random.default_rng(0)
    lik = rng.random((5, 40))
    lik /= lik.sum(axis=1, keepdims=True)
    probs = restrict_to_support(np.full(40, 1 / 40), lik, rng)
    _draw_locations(lik, probs, rng.uniform(size=(3, 5)), rng.uniform(size=(3, 5)), 0.0, 0.1)


#: The deconvolution's numba code, compiled beside the model when ``irtbayes audit`` fits on a first run
#: (:func:`irtbayes.core.jit.want`; else it compiles during the audit, measured on
#: docs/performance.md#memory-the-checks-garbage-and-the-fits-views-2026-12-05-later).
NUMBA_WARMUP = Warmup("irtbayes.auditing.deconvolve:warm_numba_cache", (_draw_locations, *COMPILED))
