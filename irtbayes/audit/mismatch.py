"""Difficulty Distribution Mismatch (DDM): how far a benchmark's difficulties are from the target, per draw.

In each posterior draw s, the benchmark's difficulty distribution *restricted to [L, U]* is the empirical
measure P_s that puts mass 1/m_s on each of the m_s item difficulties inside [L, U] (items outside the range
are reported as mass below / above, not here). The target Q is piecewise uniform: weight w_k spread evenly
over bin k. Two distances are computed:

``ddm_w1`` (the default, reported as ``ddm``)
    The 1-Wasserstein distance divided by the range width,

        DDM_W1(s) = W1(P_s, Q) / (U - L) = (1 / (U - L)) * integral_L^U |F_s(x) - G(x)| dx,

    with F_s and G the two CDFs. It lies in [0, 1] because |F_s - G| <= 1. W1 is the average distance
    (in ability units, before the division) that difficulty mass must move to turn the benchmark into the
    target; multiply by U - L to read it in logits. It is the default because it counts *how far* the
    mass is off (items piled one bin away from where they are wanted cost less than items at the other end
    of the range) and uses the exact difficulties, so it barely depends on the choice of bins. It is
    computed exactly (F_s is a step function, G piecewise linear; the integral is summed segment by
    segment). A finite set of m points can never equal a continuous target: against the uniform target the
    smallest possible value is 1 / (4 m), reached by items at the midpoints (i - 1/2) / m of the range.

``ddm_tv``
    Total variation over the bins, DDM_TV(s) = (1/2) * sum_k |p_k(s) - w_k|, with p_k(s) the in-range
    share of bin k. In [0, 1]: the share of the benchmark's in-range items that would have to change bin.
    It is 0 exactly when the bin shares equal the target weights; it ignores where inside a bin an item
    lies and how far apart two bins are.

A draw with no item inside [L, U] has DDM 1 on both scales (the benchmark misses the target entirely).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ddm_tv", "ddm_w1"]


def _weights_per_draw(weights: np.ndarray, n_draws: int, n_bins: int) -> np.ndarray:
    w = np.asarray(weights, dtype="float64")
    if w.ndim == 1:
        w = np.broadcast_to(w, (n_draws, n_bins))
    if w.shape != (n_draws, n_bins):
        raise ValueError(f"weights have shape {w.shape}, expected ({n_bins},) or ({n_draws}, {n_bins})")
    return w


def _piece(h0: np.ndarray, h1: np.ndarray, width: np.ndarray) -> np.ndarray:
    """integral of |h| over a piece of ``width`` where h runs linearly from h0 to h1."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(
            h0 * h1 < 0,
            width * (h0 * h0 + h1 * h1) / (2 * np.abs(h0 - h1)),
            width * np.abs(h0 + h1) / 2,
        )


def ddm_w1(
    difficulty: np.ndarray,
    edges: np.ndarray,
    weights: np.ndarray,
    *,
    presorted: bool = False,
    normalise: bool = True,
) -> np.ndarray:
    """Per-draw 1-Wasserstein distance between the in-range difficulties and the piecewise-uniform target.

    Parameters
    ----------
    difficulty
        (draw, item) difficulty draws of one benchmark.
    edges
        K + 1 increasing bin edges, [edges[0], edges[-1]] = [L, U].
    weights
        (K,) target weights, or (draw, K) weights that vary by draw; each row sums to 1.
    presorted
        ``difficulty`` is already sorted along items (saves a sort).
    normalise
        Divide by U - L (the default), so the result lies in [0, 1].

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_W1; 1 in a draw with no item inside [L, U] (U - L when not normalised).

    Notes
    -----
    Within bin k the target CDF is linear, G(x) = G(e_k) + w_k (x - e_k) / (e_{k+1} - e_k), and the
    empirical CDF is constant between consecutive items, so |F - G| is integrated exactly piece by piece:
    between neighbouring items of the same bin, and from each bin's edges to its first and last item
    (the whole bin when it is empty).
    """
    x = np.atleast_2d(np.asarray(difficulty))
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype("float64")
    if not presorted:
        x = np.sort(x, axis=1)
    edges = np.asarray(edges, dtype="float64")
    n_draws, n = x.shape
    n_bins = len(edges) - 1
    lo, hi = edges[0], edges[-1]
    width = np.diff(edges)
    w = _weights_per_draw(weights, n_draws, n_bins)
    cum_w = np.concatenate([np.zeros((n_draws, 1)), np.cumsum(w, axis=1)], axis=1)
    slope = w / width

    # bounds[:, k] = first sorted position in bin k (items < e_k before it); bounds[:, K] = one past the last item <= U
    bounds = np.empty((n_draws, n_bins + 1), dtype=np.int64)
    for k in range(n_bins):
        bounds[:, k] = (x < edges[k]).sum(axis=1)
    bounds[:, n_bins] = (x <= hi).sum(axis=1)
    start, stop = bounds[:, :1], bounds[:, -1:]
    m = (stop - start)[:, 0]
    per_bin = np.diff(bounds, axis=1)
    before = bounds[:, :n_bins] - start  # in-range items in the bins below bin k

    rows = np.arange(n_draws)
    marks = np.zeros((n_draws, n + 1), dtype=np.int32)
    for k in range(1, n_bins):
        marks[rows, bounds[:, k]] += 1
    code = np.cumsum(marks[:, :n], axis=1)  # bin of each sorted position (meaningful inside [L, U])
    fixed = np.ndim(weights) == 1  # the same target in every draw: index small 1-D arrays
    if fixed:
        g = cum_w[0][code] + slope[0][code] * (x - edges[code])
    else:
        g = np.take_along_axis(cum_w, code, axis=1) + np.take_along_axis(slope, code, axis=1) * (x - edges[code])

    with np.errstate(invalid="ignore", divide="ignore"):
        scale = 1.0 / m[:, None]
        # Neighbouring items x_i <= x_{i+1} in the same bin: F = f is constant and u = G - f is linear, so the
        # integral of |u| is width * |u0 + u1| / 2, or width * (u0^2 + u1^2) / (2 |u1 - u0|) where u changes sign.
        pos = np.arange(n - 1)[None, :]
        same = (code[:, :-1] == code[:, 1:]) & (pos >= start) & (pos + 1 < stop)
        f = (pos + 1 - start) * scale
        u0 = g[:, :-1] - f
        u1 = g[:, 1:] - f
        step = np.diff(x, axis=1)
        inner = step * np.abs(u0 + u1) / 2
        crossing = np.nonzero(same & (u0 * u1 < 0))
        if crossing[0].size:
            a, b = u0[crossing], u1[crossing]
            inner[crossing] = step[crossing] * (a * a + b * b) / (2 * np.abs(b - a))
        total = np.where(same, inner, 0.0).sum(axis=1)
        # from each bin's lower edge to its first item, and from its last item to its upper edge
        first = np.take_along_axis(x, np.clip(bounds[:, :n_bins], 0, n - 1), axis=1)
        last = np.take_along_axis(x, np.clip(bounds[:, 1:] - 1, 0, n - 1), axis=1)
        filled = per_bin > 0
        f_left = before * scale
        f_right = (before + per_bin) * scale
        g_lo, g_hi = cum_w[:, :n_bins], cum_w[:, 1:]
        left = np.where(
            filled,
            _piece(f_left - g_lo, f_left - (g_lo + slope * (first - edges[:-1])), first - edges[:-1]),
            _piece(f_left - g_lo, f_left - g_hi, np.broadcast_to(width, per_bin.shape)),
        )
        right = np.where(
            filled, _piece(f_right - (g_lo + slope * (last - edges[:-1])), f_right - g_hi, edges[1:] - last), 0.0
        )
        total = total + left.sum(axis=1) + right.sum(axis=1)
    if normalise:
        return np.where(m > 0, total / (hi - lo), 1.0)
    return np.where(m > 0, total, hi - lo)


def ddm_tv(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-draw total variation between the in-range bin shares and the target weights.

    Parameters
    ----------
    counts
        (draw, K) items per bin (see :func:`irtbayes.audit.coverage.coverage`).
    weights
        (K,) or (draw, K) target weights summing to 1.

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_TV = (1/2) sum_k |counts_k / sum(counts) - w_k|; 1 in a draw with no item in range.
    """
    counts = np.atleast_2d(np.asarray(counts, dtype="float64"))
    w = _weights_per_draw(weights, counts.shape[0], counts.shape[1])
    total = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tv = 0.5 * np.abs(counts / total[:, None] - w).sum(axis=1)
    return np.where(total > 0, tv, 1.0)
