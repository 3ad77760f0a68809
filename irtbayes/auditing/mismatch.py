"""Difficulty Distribution Mismatch (DDM): how far a benchmark's difficulties are from the target, per draw.

Notation for one posterior draw s of a benchmark with n items: m_s items lie inside [L, U], b_s below L and
a_s above U; o_s = (b_s + a_s) / n is the share outside the range. P_s is the empirical measure putting mass
1/m_s on each in-range difficulty (the benchmark *restricted* to [L, U]); F_s its CDF. The target Q is
piecewise uniform on [L, U] (weight w_k spread evenly over bin k), G its CDF; p_k(s) = c_k(s) / m_s is the
in-range share of bin k and c_k(s) its count.

The headline: the whole distribution
------------------------------------
Items outside [L, U] measure nobody the audit is about, so the headline DDM counts them. A benchmark whose
items mostly lie below L is the extreme case of measure mismatch and scores near 1, whatever the few in-range
items look like.

``ddm_w1`` (the default, reported as ``ddm``)
    The share outside counts in full, the share inside by how far its shape is from the target::

        DDM_W1(s) = o_s * 1 + (1 - o_s) * W1(P_s, Q) / (U - L)
                  = o_s + (1 - o_s) * DDM_shape_W1(s).

    Each item outside is charged U - L, the farthest any item inside can be from any target mass (so the
    charge is 1 on the normalised scale); the items inside are charged their share of the in-range W1. In
    [0, 1]; 1 when no item lies inside; at least o_s, so a benchmark with 80% of its items outside scores at
    least 0.8. With every item inside it equals the shape measure below.

    *Why not clip.* Clipping out-of-range difficulties onto L or U and taking W1 of the clipped set
    (the first idea for counting them) can *lower* the DDM when an item leaves the range: with [L, U] = [0, 1],
    the uniform target and items at 0.75 and 1, W1 = 0.375; moving the item at 0.75 below L clips it to 0 and
    W1 drops to 0.25, because the clipped item now fills the empty lower end. That rewards a benchmark for
    losing an item from the range. The definition above never does: moving an item from inside to outside
    changes n * DDM_W1 by 1 - [T(S) - T(S minus i)], with T(S) = m W1(P_S, Q) / (U - L) for the in-range set S,
    and in one dimension T(S) <= T(S minus i) + W1(delta_i, Q) / (U - L) <= T(S minus i) + 1 (the triangle
    inequality on integral |m F_S - m G|, splitting m G = (m - 1) G + G). It is also never below the clipped W1
    (the same splitting, with each clipped item's W1(delta_L, Q) or W1(delta_U, Q) at most U - L). The price is
    a jump at the edges: an item just inside L costs what its place in the shape costs, one just outside
    costs 1. Posterior means over draws smooth the jump.

``ddm_tv``
    Total variation over K + 2 bins, the K bins plus a "below" and an "above" bin where the target has mass 0::

        DDM_TV(s) = (1/2) * [ sum_k |c_k(s) / n - w_k| + b_s / n + a_s / n ].

    In [0, 1]: the share of all the benchmark's items that would have to change bin (or enter the range) to
    match the target. It lies between o_s and o_s + (1 - o_s) * DDM_shape_TV(s); moving an item from a bin to
    outside changes one |c_k / n - w_k| by at most 1/n and adds 1/n to the outside terms, so it never falls.

The in-range shape
------------------
The distribution of the items *inside* [L, U] compared with the target, ignoring how many lie outside:

``ddm_shape_w1``
    The 1-Wasserstein distance divided by the range width,

        DDM_shape_W1(s) = W1(P_s, Q) / (U - L) = (1 / (U - L)) * integral_L^U |F_s(x) - G(x)| dx.

    It lies in [0, 1] because |F_s - G| <= 1. W1 is the average distance (in ability units, before the
    division) that difficulty mass must move to turn the in-range items into the target. It counts *how far*
    the mass is off (items piled one bin away from where they are wanted cost less than items at the other end
    of the range) and uses the exact difficulties, so it barely depends on the choice of bins. It is computed
    exactly (F_s is a step function, G piecewise linear; the integral is summed segment by segment). A finite
    set of m points can never equal a continuous target: against the uniform target the smallest possible value
    is 1 / (4 m), reached by items at the midpoints (i - 1/2) / m of the range.

``ddm_shape_tv``
    DDM_shape_TV(s) = (1/2) * sum_k |p_k(s) - w_k|. In [0, 1]: the share of the in-range items that would have
    to change bin. It is 0 exactly when the in-range bin shares equal the target weights; it ignores where
    inside a bin an item lies and how far apart two bins are.

A draw with no item inside [L, U] has DDM 1 on every scale (the benchmark misses the target entirely).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ddm_shape_tv", "ddm_shape_w1", "ddm_tv", "ddm_w1", "ddm_w1_from_shape"]


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


def ddm_shape_w1(
    difficulty: np.ndarray,
    edges: np.ndarray,
    weights: np.ndarray,
    *,
    presorted: bool = False,
    normalise: bool = True,
) -> np.ndarray:
    """Per-draw in-range shape DDM_shape_W1: W1 between the in-range difficulties and the target.

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
        (draw,) DDM_shape_W1; 1 in a draw with no item inside [L, U] (U - L when not normalised). Items
        outside [L, U] play no part.

    Notes
    -----
    Within bin k the target CDF is linear, G(x) = G(e_k) + w_k (x - e_k) / (e_{k+1} - e_k), and the
    empirical CDF is constant between consecutive items, so |F - G| is integrated exactly piece by piece:
    between neighbouring items of the same bin, and from each bin's edges to its first and last item
    (the whole bin when it is empty).

    Examples
    --------
    The example of the module notes, items at 0.75 and 1 on [0, 1] against the uniform target, and m items at the
    midpoints, which reach the least possible value 1 / (4 m):

    >>> from irtbayes.auditing.mismatch import ddm_shape_w1
    >>> edges, weights = np.array([0.0, 0.5, 1.0]), np.array([0.5, 0.5])
    >>> ddm_shape_w1(np.array([[0.75, 1.0]]), edges, weights)
    array([0.375])
    >>> ddm_shape_w1(np.array([[0.125, 0.375, 0.625, 0.875]]), edges, weights)  # 1 / (4 * 4)
    array([0.0625])
    """
    x = np.atleast_2d(np.asarray(difficulty))
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype("float64")
    if not presorted:
        x = np.sort(x, axis=1)
    edges = np.asarray(edges, dtype="float64")
    n_draws = x.shape[0]
    n_bins = len(edges) - 1
    lo, hi = edges[0], edges[-1]
    w = _weights_per_draw(weights, n_draws, n_bins)
    cum_w = np.concatenate([np.zeros((n_draws, 1)), np.cumsum(w, axis=1)], axis=1)
    slope = w / np.diff(edges)

    bounds = _bin_bounds(x, edges)
    start, stop = bounds[:, :1], bounds[:, -1:]
    m = (stop - start)[:, 0]
    fixed = np.ndim(weights) == 1  # the same target in every draw: index small 1-D arrays
    code, g = _target_cdf_at_items(x, edges, bounds, cum_w, slope, fixed=fixed)

    with np.errstate(invalid="ignore", divide="ignore"):
        scale = 1.0 / m[:, None]
        total = _between_items(x, code, g, start, stop, scale)
        left, right = _bin_ends(x, edges, bounds, cum_w, slope, scale)
        total = total + left.sum(axis=1) + right.sum(axis=1)
    if normalise:
        return np.where(m > 0, total / (hi - lo), 1.0)
    return np.where(m > 0, total, hi - lo)


def _bin_bounds(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(draw, K + 1) sorted positions where the bins start; the last column is one past the last item <= U."""
    n_bins = len(edges) - 1
    # bounds[:, k] = first sorted position in bin k (items < e_k before it); bounds[:, K] = one past the last item <= U
    bounds = np.empty((x.shape[0], n_bins + 1), dtype=np.int64)
    for k in range(n_bins):
        bounds[:, k] = (x < edges[k]).sum(axis=1)
    bounds[:, n_bins] = (x <= edges[-1]).sum(axis=1)
    return bounds


def _target_cdf_at_items(
    x: np.ndarray, edges: np.ndarray, bounds: np.ndarray, cum_w: np.ndarray, slope: np.ndarray, *, fixed: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The bin of each sorted position (meaningful inside [L, U]) and the target CDF G at each item."""
    n_draws, n = x.shape
    rows = np.arange(n_draws)
    marks = np.zeros((n_draws, n + 1), dtype=np.int32)
    for k in range(1, len(edges) - 1):
        marks[rows, bounds[:, k]] += 1
    code = np.cumsum(marks[:, :n], axis=1)  # bin of each sorted position (meaningful inside [L, U])
    if fixed:
        g = cum_w[0][code] + slope[0][code] * (x - edges[code])
    else:
        g = np.take_along_axis(cum_w, code, axis=1) + np.take_along_axis(slope, code, axis=1) * (x - edges[code])
    return code, g


def _between_items(
    x: np.ndarray, code: np.ndarray, g: np.ndarray, start: np.ndarray, stop: np.ndarray, scale: np.ndarray
) -> np.ndarray:
    """(draw,) integral of |F - G| between neighbouring in-range items of the same bin (call under np.errstate)."""
    n = x.shape[1]
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
    return np.where(same, inner, 0.0).sum(axis=1)


def _bin_ends(
    x: np.ndarray, edges: np.ndarray, bounds: np.ndarray, cum_w: np.ndarray, slope: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(draw, K) integrals of |F - G| from each bin's edges to its items (call under np.errstate)."""
    n = x.shape[1]
    n_bins = len(edges) - 1
    width = np.diff(edges)
    per_bin = np.diff(bounds, axis=1)
    before = bounds[:, :n_bins] - bounds[:, :1]  # in-range items in the bins below bin k
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
    return left, right


def ddm_shape_tv(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per-draw in-range shape DDM_shape_TV: total variation between the in-range bin shares and the target.

    Parameters
    ----------
    counts
        (draw, K) items per bin (see :func:`irtbayes.auditing.coverage.coverage`).
    weights
        (K,) or (draw, K) target weights summing to 1.

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_shape_TV = (1/2) sum_k |counts_k / sum(counts) - w_k|; 1 in a draw with no item in range.

    Examples
    --------
    >>> from irtbayes.auditing.mismatch import ddm_shape_tv
    >>> ddm_shape_tv(np.array([[3, 1], [2, 2], [0, 0]]), np.array([0.5, 0.5]))  # the last draw has no item in range
    array([0.25, 0.  , 1.  ])
    """
    counts = np.atleast_2d(np.asarray(counts, dtype="float64"))
    w = _weights_per_draw(weights, counts.shape[0], counts.shape[1])
    total = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tv = 0.5 * np.abs(counts / total[:, None] - w).sum(axis=1)
    return np.where(total > 0, tv, 1.0)


def ddm_w1_from_shape(
    shape: np.ndarray, *, in_range: np.ndarray, n_items: int, outside_cost: float = 1.0
) -> np.ndarray:
    """The headline DDM_W1 from the in-range shape measure: o + (1 - o) * shape (see the module docstring).

    Parameters
    ----------
    shape
        (draw,) DDM_shape_W1 (:func:`ddm_shape_w1`).
    in_range
        (draw,) number of items inside [L, U].
    n_items
        Number of items of the benchmark (inside and outside).
    outside_cost
        What one item outside costs on the scale of ``shape``: 1 when ``shape`` is normalised, U - L when not.

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_W1; ``outside_cost`` in a draw with no item inside (and for a benchmark with no items).

    Examples
    --------
    Half of the items outside: DDM = 0.5 + 0.5 * shape.

    >>> from irtbayes.auditing.mismatch import ddm_w1_from_shape
    >>> ddm_w1_from_shape(np.array([0.2, 0.2]), in_range=np.array([4, 2]), n_items=4)
    array([0.2, 0.6])
    """
    shape = np.asarray(shape, dtype="float64")
    inside = np.asarray(in_range, dtype="float64")
    if n_items < 1:
        return np.full(shape.shape, float(outside_cost))
    if np.any((inside < 0) | (inside > n_items)):
        raise ValueError(f"in_range must lie in [0, {n_items}], got values in [{inside.min():g}, {inside.max():g}]")
    share_in = inside / n_items
    # a draw with no item inside has share_in 0: the (undefined) shape does not enter
    return (1.0 - share_in) * outside_cost + share_in * np.where(inside > 0, shape, 0.0)


def ddm_w1(
    difficulty: np.ndarray,
    edges: np.ndarray,
    weights: np.ndarray,
    *,
    presorted: bool = False,
    normalise: bool = True,
) -> np.ndarray:
    """Per-draw headline DDM_W1 over the whole difficulty distribution, items outside [L, U] included.

    The arguments are those of :func:`ddm_shape_w1`, with all of the benchmark's items in ``difficulty``.

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_W1 = o + (1 - o) * DDM_shape_W1, with o the share of items outside [L, U]; 1 in a draw
        with no item inside (U - L when not normalised).

    Examples
    --------
    Items at 0.75 and 1 on [0, 1]: the in-range W1 is 0.375. Moving the first below L makes one item of two
    outside, and the DDM rises to 0.5 + 0.5 * W1(item at 1) = 0.5 + 0.5 * 0.5:

    >>> from irtbayes.auditing.mismatch import ddm_w1
    >>> edges, weights = np.array([0.0, 0.5, 1.0]), np.array([0.5, 0.5])
    >>> ddm_w1(np.array([[0.75, 1.0], [-0.5, 1.0]]), edges, weights)
    array([0.375, 0.75 ])
    """
    x = np.atleast_2d(np.asarray(difficulty))
    edges = np.asarray(edges, dtype="float64")
    lo, hi = edges[0], edges[-1]
    shape = ddm_shape_w1(x, edges, weights, presorted=presorted, normalise=normalise)
    in_range = ((x >= lo) & (x <= hi)).sum(axis=1)
    return ddm_w1_from_shape(shape, in_range=in_range, n_items=x.shape[1], outside_cost=1.0 if normalise else hi - lo)


def ddm_tv(counts: np.ndarray, weights: np.ndarray, *, below: np.ndarray, above: np.ndarray) -> np.ndarray:
    """Per-draw headline DDM_TV: total variation over the K bins plus a "below" and an "above" bin of target mass 0.

    ``counts`` and ``weights`` are those of :func:`ddm_shape_tv`; ``below`` and ``above`` are (draw,) counts of
    the items below L and above U.

    Returns
    -------
    numpy.ndarray
        (draw,) DDM_TV = (1/2) [sum_k |counts_k / n - w_k| + (below + above) / n], n = all items;
        1 in a draw with no item at all.

    Examples
    --------
    >>> from irtbayes.auditing.mismatch import ddm_tv
    >>> counts = np.array([[2, 2], [1, 1]])  # two draws, two bins
    >>> ddm_tv(counts, np.array([0.5, 0.5]), below=np.array([0, 2]), above=np.array([0, 0]))
    array([0. , 0.5])
    """
    counts = np.atleast_2d(np.asarray(counts, dtype="float64"))
    n_draws = counts.shape[0]
    w = _weights_per_draw(weights, n_draws, counts.shape[1])
    outside = np.broadcast_to(np.asarray(below, dtype="float64") + np.asarray(above, dtype="float64"), (n_draws,))
    total = counts.sum(axis=1) + outside
    with np.errstate(invalid="ignore", divide="ignore"):
        tv = 0.5 * (np.abs(counts / total[:, None] - w).sum(axis=1) + outside / total)
    return np.where(total > 0, tv, 1.0)
