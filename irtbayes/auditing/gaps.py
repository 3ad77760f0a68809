"""Maximum Gap: the widest stretch of [L, U] that holds no item difficulty, per posterior draw; its parts.

In draw s, sort the difficulties inside [L, U] and put L and U at the ends:
L = v_0 <= v_1 <= ... <= v_m <= v_{m+1} = U. The gaps are v_{j+1} - v_j (m + 1 of them, summing to U - L),
and

    MaxGap(s) = max_j (v_{j+1} - v_j),     location(s) = [v_j*, v_{j*+1}] for the widest j*

(the lowest one when several are equally wide). Items outside [L, U] play no part. Because the m + 1 gaps
fill the range, MaxGap(s) >= (U - L) / (m + 1); with no item inside, MaxGap(s) = U - L.

Interior and edge gaps
----------------------
The m + 1 gaps are of two kinds, reported apart (:func:`gap_parts`):

- the *edge gaps* EdgeLow(s) = v_1 - L (from L to the lowest item inside) and EdgeHigh(s) = U - v_m (from the
  highest item inside to U); both are U - L when no item lies inside;
- the *interior gap* Interior(s) = max_{1 <= j < m} (v_{j+1} - v_j), the widest gap between two items inside
  the range; 0 when fewer than two items lie inside (there is no gap between two items).

MaxGap(s) = max(EdgeLow(s), Interior(s), EdgeHigh(s)). The interior gap depends on the range only through which
items are inside; the edge gaps depend on where the range ends. *How the edge gaps move with the range*: moving
L down by d (widening the range on that side) adds exactly d to EdgeLow(s), per unit of widening, in every
draw with no item in [L - d, L); moving L up by d (narrowing) takes exactly d off it in every draw with
EdgeLow(s) > d, and otherwise it becomes the gap from L + d to the next item. The same holds for U and
EdgeHigh. So an edge gap is set by the range's margin as much as by the benchmark: with the default range,
widened by 0.5 beyond the subjects' abilities, an edge gap of 0.5 or less can be all margin.
:func:`edge_gaps` gives the edge gaps of any sub-range (the audit reports them again for the range narrowed
by that 0.5 on each side).

Where the widest gap lies
-------------------------
Across draws the widest gap can sit in different places (two similar holes trade places), so the mean
of its end points over all draws can describe a stretch that is not a gap in any draw. irtbayes therefore
reports:

- ``p_bins``: P(the widest gap's midpoint falls in bin k), for every bin;
- the *modal bin*: the bin with the largest such probability, and that probability;
- ``interval`` = [lo, hi]: the posterior mean of the widest gap's end points over the draws whose midpoint
  falls in the modal bin. When the location is unimodal (``p_modal_bin`` near 1) this is the plain
  posterior mean location; when it is not, it is the mean location of the most probable gap, and
  ``p_modal_bin`` says how much of the posterior it represents;
- ``interval_all_draws``: the posterior mean of the end points over all draws, for comparison;
- whether it is an edge gap: ``p_edge_low`` = P(the widest gap is the edge gap at L), ``p_edge_high`` the
  same at U, and ``kind``, the most common kind ("interior", "low edge", "high edge" or "whole range" when no
  item lies inside) among the draws of the modal bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irtbayes.auditing.coverage import bin_codes

__all__ = [
    "EDGE_HIGH",
    "EDGE_LOW",
    "GAP_KINDS",
    "GapDraws",
    "GapLocation",
    "GapParts",
    "edge_gaps",
    "gap_location",
    "gap_parts",
    "widest_gap",
]

#: Flag in :attr:`GapDraws.edge`: the gap starts at L (from L to the lowest item inside).
EDGE_LOW = 1
#: Flag in :attr:`GapDraws.edge`: the gap ends at U (from the highest item inside to U).
EDGE_HIGH = 2
#: Names of the gap kinds by :attr:`GapDraws.edge` code (3 = both flags: no item inside, the whole range).
GAP_KINDS = ("interior", "low edge", "high edge", "whole range")


@dataclass(frozen=True)
class GapDraws:
    """The widest gap in each draw: ``width``, ``lo``, ``hi`` and ``edge``, each (draw,).

    ``edge`` holds bit flags: 0 for a gap between two items inside the range, :data:`EDGE_LOW` for the gap from
    L to the lowest item inside, :data:`EDGE_HIGH` for the gap from the highest item inside to U, both (3) when
    no item lies inside and the gap is the whole range.

    Examples
    --------
    >>> from irtbayes.auditing.gaps import widest_gap
    >>> gaps = widest_gap(np.array([[-1.0, 0.5, 1.0]]), -2.0, 2.0)
    >>> gaps.width, gaps.lo, gaps.hi, gaps.edge
    (array([1.5]), array([-1.]), array([0.5]), array([0], dtype=int8))
    >>> gaps.midpoint
    array([-0.25])
    """

    width: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    edge: np.ndarray

    @property
    def midpoint(self) -> np.ndarray:
        """(draw,) the middle of the widest gap."""
        return (self.lo + self.hi) / 2


@dataclass(frozen=True)
class GapParts:
    """Per-draw gaps of one benchmark (definitions in the module docstring).

    Attributes
    ----------
    widest
        The Maximum Gap, edges included.
    interior
        (draw,) widest gap between two items inside [L, U]; 0 with fewer than two items inside.
    edge_low, edge_high
        (draw,) the gaps from L to the lowest item inside and from the highest item inside to U.

    Examples
    --------
    >>> from irtbayes.auditing.gaps import gap_parts
    >>> parts = gap_parts(np.array([[-1.0, 0.5, 1.0], [-1.8, -1.5, 1.9]]), -2.0, 2.0)
    >>> parts.widest.width, parts.interior, parts.edge_low, parts.edge_high
    (array([1.5, 3.4]), array([1.5, 3.4]), array([1. , 0.2]), array([1. , 0.1]))
    """

    widest: GapDraws
    interior: np.ndarray
    edge_low: np.ndarray
    edge_high: np.ndarray


def gap_parts(difficulty: np.ndarray, lo: float, hi: float, *, presorted: bool = False) -> GapParts:
    """Per-draw widest gap, widest interior gap and the two edge gaps inside [lo, hi].

    Parameters
    ----------
    difficulty
        (draw, item) difficulty draws of one benchmark.
    lo, hi
        The range [L, U].
    presorted
        ``difficulty`` is already sorted along items.

    Returns
    -------
    GapParts
        widest (GapDraws), interior, edge_low, edge_high: (draw,) arrays.

    Examples
    --------
    Items at -1, 0.5 and 1 in [-2, 2]: edge gaps 1 and 1, interior gap 1.5, so the Maximum Gap is the interior one.

    >>> from irtbayes.auditing.gaps import gap_parts
    >>> parts = gap_parts(np.array([[-1.0, 0.5, 1.0]]), -2.0, 2.0)
    >>> parts.interior, parts.edge_low, parts.edge_high, parts.widest.width
    (array([1.5]), array([1.]), array([1.]), array([1.5]))
    """
    x = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    if not presorted:
        x = np.sort(x, axis=1)
    n_draws, n = x.shape
    below = (x < lo).sum(axis=1)
    inside = ((x >= lo) & (x <= hi)).sum(axis=1)
    ends = np.empty((n_draws, n + 2))
    ends[:, 0] = lo
    ends[:, -1] = hi
    np.clip(x, lo, hi, out=ends[:, 1:-1])  # items outside collapse onto L or U: zero-width gaps
    steps = np.diff(ends, axis=1)
    rows = np.arange(n_draws)
    # ends[below] = L and ends[below + 1] = the lowest item inside (U when none); likewise at the top
    first_step, last_step = below, below + inside
    j = np.argmax(steps, axis=1)
    edge = np.where(j == first_step, EDGE_LOW, 0) | np.where(j == last_step, EDGE_HIGH, 0)
    position = np.arange(n + 1)[None, :]
    between_items = (position > first_step[:, None]) & (position < last_step[:, None])
    return GapParts(
        widest=GapDraws(width=steps[rows, j], lo=ends[rows, j], hi=ends[rows, j + 1], edge=edge.astype(np.int8)),
        interior=np.where(between_items, steps, 0.0).max(axis=1),
        edge_low=steps[rows, first_step],
        edge_high=steps[rows, last_step],
    )


def widest_gap(difficulty: np.ndarray, lo: float, hi: float, *, presorted: bool = False) -> GapDraws:
    """Per-draw widest interval inside [lo, hi] without an item difficulty, counting lo and hi as edges.

    The arguments are those of :func:`gap_parts`; returns its ``widest``, a :class:`GapDraws` of (draw,) arrays.

    Examples
    --------
    >>> from irtbayes.auditing.gaps import widest_gap
    >>> gaps = widest_gap(np.array([[-1.0, 0.5, 1.0], [0.0, 0.2, 3.0]]), -2.0, 2.0)
    >>> gaps.width  # the second draw: from L = -2 to the item at 0 (3.0 is outside)
    array([1.5, 2. ])
    >>> gaps.edge  # 0 interior, 1 edge at L (EDGE_LOW)
    array([0, 1], dtype=int8)
    """
    return gap_parts(difficulty, lo, hi, presorted=presorted).widest


def edge_gaps(
    difficulty: np.ndarray, lo: float, hi: float, *, presorted: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per-draw edge gaps of the range [lo, hi]: from lo to the lowest item inside, from the highest to hi.

    The arguments are those of :func:`gap_parts`; ``lo, hi`` may be any range (for example the audit's
    range narrowed by its margin).

    Returns
    -------
    tuple of numpy.ndarray
        (edge_low, edge_high), each (draw,); both hi - lo in a draw with no item inside.

    Examples
    --------
    Widening the range by 0.5 on each side adds exactly 0.5 to each edge gap:

    >>> from irtbayes.auditing.gaps import edge_gaps
    >>> difficulty = np.array([[-1.0, 0.5, 1.0]])
    >>> edge_gaps(difficulty, -2.0, 2.0)
    (array([1.]), array([1.]))
    >>> edge_gaps(difficulty, -2.5, 2.5)
    (array([1.5]), array([1.5]))
    """
    x = np.atleast_2d(np.asarray(difficulty))
    if not presorted:
        x = np.sort(x, axis=1)
    n_draws, n = x.shape
    if n == 0:
        whole = np.full(n_draws, float(hi - lo))
        return whole, whole.copy()
    rows = np.arange(n_draws)
    start = (x < lo).sum(axis=1)  # the lowest item inside sits here, if any
    stop = (x <= hi).sum(axis=1)  # one past the highest item inside
    inside = stop > start
    first = x[rows, np.minimum(start, n - 1)].astype("float64")
    last = x[rows, np.maximum(stop - 1, 0)].astype("float64")
    return np.where(inside, first - lo, hi - lo), np.where(inside, hi - last, hi - lo)


@dataclass(frozen=True)
class GapLocation:
    """Where the widest gap lies (definitions in the module docstring).

    Attributes
    ----------
    p_bins
        (bin,) P(widest gap's midpoint in bin k).
    modal_bin
        0-based bin with the largest probability.
    p_modal_bin
        That probability.
    interval
        (lo, hi): mean end points over the draws whose midpoint is in the modal bin.
    interval_all_draws
        (lo, hi): mean end points over all draws.
    p_edge_low, p_edge_high
        P(the widest gap is the edge gap at L), P(... at U), over all draws (a draw with no item inside counts
        for both).
    kind
        The most common kind among the draws of the modal bin: "interior", "low edge", "high edge" or
        "whole range".

    Examples
    --------
    >>> from irtbayes.auditing.gaps import gap_location, widest_gap
    >>> difficulty = np.array([[-1.0, 0.5, 1.0], [-1.0, 0.6, 1.0], [-1.5, -1.0, 1.8]])
    >>> where = gap_location(widest_gap(difficulty, -2.0, 2.0), np.array([-2.0, 0.0, 2.0]))
    >>> where.p_bins, where.modal_bin, where.kind
    (array([0.66666667, 0.33333333]), 0, 'interior')
    """

    p_bins: np.ndarray
    modal_bin: int
    p_modal_bin: float
    interval: tuple[float, float]
    interval_all_draws: tuple[float, float]
    p_edge_low: float
    p_edge_high: float
    kind: str


def gap_location(gaps: GapDraws, edges: np.ndarray) -> GapLocation:
    """Summarise where the widest gap lies across draws.

    Parameters
    ----------
    gaps
        From :func:`widest_gap`.
    edges
        K + 1 bin edges.

    Returns
    -------
    GapLocation

    Examples
    --------
    In two draws of three the widest gap lies between the items at -1 and about 0.5 (midpoint in bin 0), in the third
    between -1 and 1.8 (midpoint in bin 1):

    >>> from irtbayes.auditing.gaps import gap_location, widest_gap
    >>> difficulty = np.array([[-1.0, 0.5, 1.0], [-1.0, 0.6, 1.0], [-1.5, -1.0, 1.8]])
    >>> where = gap_location(widest_gap(difficulty, -2.0, 2.0), np.array([-2.0, 0.0, 2.0]))
    >>> where.modal_bin, round(where.p_modal_bin, 3), where.interval, where.kind
    (0, 0.667, (-1.0, 0.55), 'interior')
    """
    edges = np.asarray(edges, dtype="float64")
    n_bins = len(edges) - 1
    k = np.clip(bin_codes(gaps.midpoint, edges).astype(np.int64) - 1, 0, n_bins - 1)
    p_bins = np.bincount(k, minlength=n_bins) / max(len(k), 1)
    modal = int(np.argmax(p_bins))
    chosen = k == modal
    edge = np.asarray(gaps.edge, dtype=np.int64)
    kinds = np.bincount(edge[chosen], minlength=len(GAP_KINDS))
    return GapLocation(
        p_bins=p_bins,
        modal_bin=modal,
        p_modal_bin=float(p_bins[modal]),
        interval=(float(gaps.lo[chosen].mean()), float(gaps.hi[chosen].mean())),
        interval_all_draws=(float(gaps.lo.mean()), float(gaps.hi.mean())),
        p_edge_low=float(((edge & EDGE_LOW) > 0).mean()),
        p_edge_high=float(((edge & EDGE_HIGH) > 0).mean()),
        kind=GAP_KINDS[int(np.argmax(kinds))],
    )
