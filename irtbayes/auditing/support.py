"""A benchmark population's support and its one hole, drawn given the items' likelihoods.

Step 5 of the deconvolution (:mod:`irtbayes.auditing.deconvolve`): a log-spline population ``g`` on a grid of
cells has tails everywhere, so each population draw is cut at a lower and an upper edge
(:func:`draw_support`) and may leave out one stretch inside (:func:`draw_hole`), each drawn from the items'
marginal likelihood under ``g`` so cut and renormalised. ``likelihoods`` is (item, cell) (``A_ik``), ``probs``
the population's cell probabilities (``g_k``).

Both likelihoods are sums over items of logarithms, for every cut or every pair of a hole's ends: up to
millions of logarithms per population draw. Compiled kernels (numba, no GIL, so the population draws run on
every CPU) take them as logarithms of running products: each item's factor is its share of ``A_i g`` kept,
in [0, 1]; a product is logged and restarted before it can underflow, and a factor too small for that
(below 2^-52) is logged on its own, so the sums equal the plain ones to rounding (tests compare them with
brute force).
"""

from __future__ import annotations

from collections.abc import Callable

import numba
import numpy as np

__all__ = [
    "COMPILED",
    "HOLE_PAIR_BUDGET",
    "P_NO_HOLE",
    "SUPPORT_MARGIN",
    "draw_hole",
    "draw_support",
    "restrict_to_support",
    "support_window",
]

#: How far beyond its most likely edges a benchmark's population is refitted, in logits.
SUPPORT_MARGIN = 0.5
#: Prior probability that a population's support has no interior hole.
P_NO_HOLE = 0.5
#: Most (item, hole) pairs evaluated per population draw; holes' ends are put on a coarser grid beyond it.
HOLE_PAIR_BUDGET = 2_000_000

# A running product of factors in [2^-53, 1] is logged and restarted once below _RESTART, checked every
# _EVERY factors: it stays above 1e-180 * 2^-212, about 1e-244, far from underflow.
_RESTART = 1e-180
_EVERY = 4
_TINY = 2.0**-52


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _log_cut_sums(likelihoods: np.ndarray, probs: np.ndarray, reverse: bool) -> np.ndarray:  # pragma: no cover
    """``Σ_i log C_ij`` for every cell j, ``C_ij`` item i's ``A_ik g_k`` summed over cells up to j (from the
    last cell down when ``reverse``)."""
    n, k = likelihoods.shape
    acc = np.zeros(k)
    prod = np.ones(k)
    running = np.empty(k)
    log_totals = 0.0
    for i in range(n):
        total = 0.0
        for j in range(k):
            c = k - 1 - j if reverse else j
            total += likelihoods[i, c] * probs[c]
            running[j] = total
        if not total > 0.0:
            acc[:] = -np.inf  # an item with no likelihood under g: no cut is possible
            continue
        for j in range(k):
            share = running[j] / total
            if share < _TINY:
                acc[j] += np.log(share)
            else:
                prod[j] *= share
        if i % _EVERY == _EVERY - 1 or i == n - 1:
            for j in range(k):
                if prod[j] < _RESTART:
                    acc[j] += np.log(prod[j])
                    prod[j] = 1.0
        log_totals += np.log(total)
    return acc + np.log(prod) + log_totals


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _kept_shares(
    likelihoods: np.ndarray, probs: np.ndarray, bounds: np.ndarray
) -> tuple[np.ndarray, float]:  # pragma: no cover
    """(bound, item): the share of item i's ``A_i g`` below each cell boundary; and ``Σ_i log T_i`` (totals)."""
    n, k = likelihoods.shape
    shares = np.empty((len(bounds), n))
    running = np.empty(k + 1)
    log_totals = 0.0
    for i in range(n):
        total = 0.0
        running[0] = 0.0
        for c in range(k):
            total += likelihoods[i, c] * probs[c]
            running[c + 1] = total
        if not total > 0.0:
            return shares, -np.inf
        for b in range(len(bounds)):
            shares[b, i] = min(running[bounds[b]] / total, 1.0)
        log_totals += np.log(total)
    return shares, log_totals


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _log_hole_sums(shares: np.ndarray) -> np.ndarray:  # pragma: no cover
    """``Σ_i log(1 - (s_ib - s_ia))`` for every pair of boundaries a < b, in row order (all b for the first a).

    A factor is 0 (the stretch holds the item's whole likelihood) or at least 2^-53 (the shares are at most 1).
    """
    n_bounds, n = shares.shape
    out = np.empty(n_bounds * (n_bounds - 1) // 2)
    t = 0
    for a in range(n_bounds - 1):
        low = shares[a]
        for b in range(a + 1, n_bounds):
            high = shares[b]
            acc = 0.0
            prod = 1.0
            for i in range(n):
                prod *= max(1.0 - (high[i] - low[i]), 0.0)
                if i % _EVERY == _EVERY - 1 and prod < _RESTART:
                    if prod == 0.0:
                        break
                    acc += np.log(prod)
                    prod = 1.0
            out[t] = acc + np.log(prod)
            t += 1
    return out


#: This module's numba code (compiled ahead on a first run: :data:`irtbayes.auditing.deconvolve.NUMBA_WARMUP`).
COMPILED = (_log_cut_sums, _kept_shares, _log_hole_sums)


def _cut_log_likelihood(likelihoods: np.ndarray, probs: np.ndarray, *, reverse: bool = False) -> np.ndarray:
    """Marginal log-likelihood of each upper cut of the population: cells 0..j kept, the rest set to zero.

    With ``w_ik = A_ik g_k``, ``C_ij = Σ_{k≤j} w_ik`` and ``G_j = Σ_{k≤j} g_k``, the items' marginal
    log-likelihood under ``g`` cut after cell j and renormalised is ``Σ_i log C_ij - n log G_j`` (-inf where
    some item has no likelihood below the cut). ``reverse``: the lower cuts, cells j.. kept, with cells
    counted from the last (the same as reversing both arrays).
    """
    n = likelihoods.shape[0]
    g = probs[::-1] if reverse else probs
    with np.errstate(divide="ignore", invalid="ignore"):  # -inf - -inf where no mass is kept yet
        ell = _log_cut_sums(likelihoods, probs, reverse) - n * np.log(np.cumsum(g))
    ell[~np.isfinite(ell)] = -np.inf
    return ell


def _draw_index(log_weights: np.ndarray, rng: np.random.Generator) -> int:
    weights = np.exp(log_weights - log_weights.max())
    return int(rng.choice(len(weights), p=weights / weights.sum()))


def draw_support(likelihoods: np.ndarray, probs: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """First and last cell of a population's support, drawn given the items' likelihoods.

    A benchmark's items come from a population with a lowest and a highest difficulty; the log-spline
    ``g`` has neither (it has tails everywhere). Cutting ``g`` at an upper edge u and a lower edge l and
    renormalising gives the items the marginal likelihood of :func:`_cut_log_likelihood`; with a uniform
    prior over the cells, u is drawn in proportion to it, then l in proportion to the likelihood of the
    lower cut of ``g`` already cut at u (one exact draw from p(u | g, A) p(l | u, g, A)). A cut far beyond
    the items costs nothing and one inside them is impossible, so u lands from the highest items' place
    outwards, over a stretch that shrinks as the items' likelihoods sharpen.

    Returns
    -------
    (first, last)
        Cell indices, first <= last; cells outside [first, last] get no mass.
    """
    return _cuts(likelihoods, probs, lambda ell: _draw_index(ell, rng))


def _cuts(likelihoods: np.ndarray, probs: np.ndarray, choose: Callable[[np.ndarray], int]) -> tuple[int, int]:
    """(first, last): the upper cut chosen from its log-likelihoods, then the lower cut given it."""
    likelihoods = np.ascontiguousarray(likelihoods, dtype=np.float64)
    probs = np.ascontiguousarray(probs, dtype=np.float64)
    last = choose(_cut_log_likelihood(likelihoods, probs))
    kept = probs.copy()
    kept[last + 1 :] = 0.0
    first = len(probs) - 1 - choose(_cut_log_likelihood(likelihoods, kept, reverse=True))
    return min(first, last), last


def _hole_log_likelihoods(likelihoods: np.ndarray, probs: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, float]:
    """The items' marginal log-likelihood with each stretch [a, b) of ``bounds`` removed (pairs in row order:
    all b for the first a, then the next a), and with nothing removed."""
    n = likelihoods.shape[0]
    probs = np.ascontiguousarray(probs, dtype=np.float64)
    shares, log_totals = _kept_shares(np.ascontiguousarray(likelihoods, dtype=np.float64), probs, bounds)
    if not np.isfinite(log_totals):  # an item with no likelihood under this population: nothing is possible
        return np.full(len(bounds) * (len(bounds) - 1) // 2, -np.inf), -np.inf
    cum_g = np.concatenate([[0.0], np.cumsum(probs)])
    a, b = np.triu_indices(len(bounds), k=1)
    # log(T_i - (C_ib - C_ia)) = log T_i + log(1 - (share below b - share below a))
    with np.errstate(divide="ignore", invalid="ignore"):
        left = np.maximum(cum_g[-1] - (cum_g[bounds[b]] - cum_g[bounds[a]]), 0.0)
        ell = log_totals + _log_hole_sums(shares) - n * np.log(left)
        ell_none = float(log_totals - n * np.log(cum_g[-1]))
    ell[~np.isfinite(ell)] = -np.inf
    return ell, ell_none


def draw_hole(
    likelihoods: np.ndarray,
    probs: np.ndarray,
    rng: np.random.Generator,
    *,
    p_none: float = P_NO_HOLE,
    pair_budget: int = HOLE_PAIR_BUDGET,
) -> tuple[int, int] | None:
    """An empty stretch inside a population's support, drawn given the items' likelihoods, or None.

    The support (the cells where ``probs`` is positive, an interval) may leave out one stretch of cells
    [a, b): none with prior probability ``p_none``, otherwise a and b uniform over the pairs of cell
    boundaries inside the support. Removing [a, b) and renormalising gives the items the marginal
    log-likelihood ``Σ_i log(T_i - (C_ib - C_ia)) - n log(1 - (G_b - G_a))`` (cumulative sums of
    ``A_ik g_k`` and of ``g``, ``T_i`` the total), which is -inf when the stretch holds an item's whole
    likelihood and grows with the mass the stretch takes from ``g`` when it holds little of any item's. The
    hole is drawn from the posterior over "no hole" and every (a, b). Where the items times the pairs exceed
    ``pair_budget``, the ends are put on every s-th boundary.
    """
    n = likelihoods.shape[0]
    inside = np.flatnonzero(probs > 0)
    first, last = int(inside[0]), int(inside[-1])
    n_bounds = last - first  # boundaries strictly inside the support
    if n_bounds < 2:
        return None
    step = max(1, int(np.ceil(np.sqrt(n * n_bounds * n_bounds / 2 / pair_budget))))
    bounds = np.arange(first + 1, last + 1, step)
    ell, ell_none = _hole_log_likelihoods(likelihoods, probs, bounds)
    a, b = np.triu_indices(len(bounds), k=1)  # pairs in row order: all b for the first a, then the next a
    a, b = bounds[a], bounds[b]
    log_post = np.concatenate([[np.log(p_none) + ell_none], np.log1p(-p_none) - np.log(len(a)) + ell])
    if not np.isfinite(log_post.max()):
        return None
    pick = _draw_index(log_post, rng)
    return None if pick == 0 else (int(a[pick - 1]), int(b[pick - 1]))


def support_window(likelihoods: np.ndarray, probs: np.ndarray, cell_width: float) -> tuple[int, int]:
    """Cells [first, last] around the most likely support edges of ``probs``, widened by :data:`SUPPORT_MARGIN`."""
    first, last = _cuts(likelihoods, probs, lambda ell: int(np.argmax(ell)))
    margin = int(np.ceil(SUPPORT_MARGIN / cell_width))
    return max(first - margin, 0), min(last + margin, len(probs) - 1)


def restrict_to_support(probs: np.ndarray, likelihoods: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``probs`` cut to a support drawn by :func:`draw_support`, less a hole drawn by :func:`draw_hole`."""
    first, last = draw_support(likelihoods, probs, rng)
    out = np.zeros_like(probs)
    out[first : last + 1] = probs[first : last + 1]
    hole = draw_hole(likelihoods, out, rng)
    if hole is not None:
        out[hole[0] : hole[1]] = 0.0
    return out
