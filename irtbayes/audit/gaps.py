"""Maximum Gap: the widest stretch of [L, U] that holds no item difficulty, per posterior draw.

In draw s, sort the difficulties inside [L, U] and put L and U at the ends:
L = v_0 <= v_1 <= ... <= v_m <= v_{m+1} = U. The gaps are v_{j+1} - v_j (m + 1 of them, summing to U - L),
and

    MaxGap(s) = max_j (v_{j+1} - v_j),     location(s) = [v_j*, v_{j*+1}] for the widest j*

(the lowest one when several are equally wide). Items outside [L, U] play no part. Because the m + 1 gaps
fill the range, MaxGap(s) >= (U - L) / (m + 1); with no item inside, MaxGap(s) = U - L.

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
- ``interval_all_draws``: the posterior mean of the end points over all draws, for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from irtbayes.audit.coverage import bin_codes

__all__ = ["GapDraws", "GapLocation", "gap_location", "widest_gap"]


@dataclass(frozen=True)
class GapDraws:
    """The widest gap in each draw: ``width``, ``lo`` and ``hi``, each (draw,)."""

    width: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @property
    def midpoint(self) -> np.ndarray:
        """(draw,) the middle of the widest gap."""
        return (self.lo + self.hi) / 2


def widest_gap(difficulty: np.ndarray, lo: float, hi: float, *, presorted: bool = False) -> GapDraws:
    """Per-draw widest interval inside [lo, hi] without an item difficulty, counting lo and hi as edges.

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
    GapDraws
        width, lo, hi: (draw,) arrays.
    """
    x = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    if not presorted:
        x = np.sort(x, axis=1)
    n_draws = x.shape[0]
    ends = np.empty((n_draws, x.shape[1] + 2))
    ends[:, 0] = lo
    ends[:, -1] = hi
    np.clip(x, lo, hi, out=ends[:, 1:-1])  # items outside collapse onto L or U: zero-width gaps
    steps = np.diff(ends, axis=1)
    j = np.argmax(steps, axis=1)
    rows = np.arange(n_draws)
    return GapDraws(width=steps[rows, j], lo=ends[rows, j], hi=ends[rows, j + 1])


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
    """

    p_bins: np.ndarray
    modal_bin: int
    p_modal_bin: float
    interval: tuple[float, float]
    interval_all_draws: tuple[float, float]


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
    """
    edges = np.asarray(edges, dtype="float64")
    n_bins = len(edges) - 1
    k = np.clip(bin_codes(gaps.midpoint, edges).astype(np.int64) - 1, 0, n_bins - 1)
    p_bins = np.bincount(k, minlength=n_bins) / max(len(k), 1)
    modal = int(np.argmax(p_bins))
    chosen = k == modal
    return GapLocation(
        p_bins=p_bins,
        modal_bin=modal,
        p_modal_bin=float(p_bins[modal]),
        interval=(float(gaps.lo[chosen].mean()), float(gaps.hi[chosen].mean())),
        interval_all_draws=(float(gaps.lo.mean()), float(gaps.hi.mean())),
    )
