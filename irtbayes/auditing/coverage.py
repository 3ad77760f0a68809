"""Coverage: how many of a benchmark's items fall in each difficulty bin, per posterior draw.

For draw s and bin k = [e_k, e_{k+1}) (last bin closed),

    count_k(s)  = #{i : e_k <= b_i(s) < e_{k+1}}
    share_k(s)  = count_k(s) / n                    (n = all items of the benchmark)
    below(s)    = #{i : b_i(s) < L} / n,   above(s) = #{i : b_i(s) > U} / n

so that sum_k share_k(s) + below(s) + above(s) = 1 in every draw. The *in-range share*
count_k(s) / sum_k count_k(s) is the benchmark's difficulty distribution restricted to [L, U], the one the
in-range shape measures (``ddm_shape_w1``, ``ddm_shape_tv``) compare with the target; the headline DDM also
counts below(s) and above(s) (:mod:`irtbayes.auditing.mismatch`). From the draws: P(bin k empty) =
mean_s [count_k(s) = 0] and P(bin k holds fewer than m items) = mean_s [count_k(s) < m].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from irtbayes.core.errors import SpecError
from irtbayes.core.summaries import summarize

__all__ = ["DEFAULT_MIN_ITEMS", "CoverageDraws", "bin_codes", "count_items", "coverage", "coverage_table"]

#: Default m in P(bin holds fewer than m items): below 5 items a bin's accuracy is too coarse to read.
DEFAULT_MIN_ITEMS = 5


def bin_codes(difficulty: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Where each difficulty falls: 0 below L, k + 1 in bin k (0 <= k < K), K + 1 above U.

    Parameters
    ----------
    difficulty
        Difficulty draws, any shape (typically (draw, item)).
    edges
        K + 1 increasing bin edges.

    Returns
    -------
    numpy.ndarray
        int16 codes, the shape of ``difficulty``.

    Examples
    --------
    >>> from irtbayes.auditing.coverage import bin_codes
    >>> bin_codes(np.array([-3.0, -1.0, 0.5, 2.0, 3.0]), np.array([-2.0, 0.0, 2.0]))
    array([0, 1, 2, 2, 3], dtype=int16)
    """
    edges = np.asarray(edges, dtype="float64")
    x = np.asarray(difficulty)
    n_bins = len(edges) - 1
    if n_bins > 32:
        codes = np.searchsorted(edges, x, side="right").astype(np.int16)
    else:  # a few vectorised comparisons beat a binary search per element
        codes = np.zeros(x.shape, dtype=np.int16)
        for edge in edges:
            codes += x >= edge
    codes[x == edges[-1]] = n_bins  # number of edges <= b, except that U itself belongs to the last bin
    return codes


def count_items(codes: np.ndarray, n_bins: int) -> np.ndarray:
    """Count items per code and draw.

    Parameters
    ----------
    codes
        (draw, item) codes from :func:`bin_codes`.
    n_bins
        K.

    Returns
    -------
    numpy.ndarray
        (draw, K + 2) int64: column 0 below L, columns 1..K the bins, column K + 1 above U.

    Examples
    --------
    >>> from irtbayes.auditing.coverage import bin_codes, count_items
    >>> codes = bin_codes(np.array([[-3.0, -1.0, 0.5, 1.5], [-1.0, -0.5, 0.5, 3.0]]), np.array([-2.0, 0.0, 2.0]))
    >>> count_items(codes, 2)  # below L, bin 0, bin 1, above U
    array([[1, 1, 2, 0],
           [0, 2, 1, 1]])
    """
    codes = np.asarray(codes)
    n_draws = codes.shape[0]
    width = n_bins + 2
    flat = (np.arange(n_draws, dtype=np.int64)[:, None] * width + codes).ravel()
    return np.bincount(flat, minlength=n_draws * width).reshape(n_draws, width)


@dataclass(frozen=True)
class CoverageDraws:
    """Per-draw coverage of one benchmark.

    Attributes
    ----------
    counts
        (draw, bin) items per bin.
    below, above
        (draw,) items below L and above U.
    n_items
        Items in the benchmark.

    Examples
    --------
    >>> from irtbayes.auditing.coverage import coverage
    >>> draws = coverage(np.array([[-3.0, -1.0, 0.5, 1.5], [-1.0, -0.5, 0.5, 3.0]]), np.array([-2.0, 0.0, 2.0]))
    >>> draws.counts, draws.below, draws.above
    (array([[1, 2],
           [2, 1]]), array([1, 0]), array([0, 1]))
    >>> draws.share_in_range
    array([[0.33333333, 0.66666667],
           [0.66666667, 0.33333333]])
    >>> draws.p_empty()
    array([0., 0.])
    """

    counts: np.ndarray
    below: np.ndarray
    above: np.ndarray
    n_items: int

    @property
    def share(self) -> np.ndarray:
        """(draw, bin) share of all the benchmark's items in each bin."""
        return self.counts / max(self.n_items, 1)

    @property
    def in_range(self) -> np.ndarray:
        """(draw,) number of items inside [L, U]."""
        return self.counts.sum(axis=1)

    @property
    def share_in_range(self) -> np.ndarray:
        """(draw, bin) share among the items inside [L, U] (NaN in a draw with none inside)."""
        total = self.in_range[:, None].astype("float64")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, self.counts / total, np.nan)

    @property
    def mass_below(self) -> np.ndarray:
        """(draw,) share of the items below L."""
        return self.below / max(self.n_items, 1)

    @property
    def mass_above(self) -> np.ndarray:
        """(draw,) share of the items above U."""
        return self.above / max(self.n_items, 1)

    def p_empty(self) -> np.ndarray:
        """(bin,) posterior probability that the bin holds no item."""
        return (self.counts == 0).mean(axis=0)

    def p_fewer_than(self, m: int) -> np.ndarray:
        """(bin,) posterior probability that the bin holds fewer than ``m`` items."""
        return (self.counts < m).mean(axis=0)

    @classmethod
    def from_counts(cls, counts: np.ndarray, n_items: int) -> CoverageDraws:
        """From (draw, K + 2) counts as returned by :func:`count_items`."""
        counts = np.asarray(counts)
        return cls(counts=counts[:, 1:-1], below=counts[:, 0], above=counts[:, -1], n_items=int(n_items))


def coverage(difficulty: np.ndarray, edges: np.ndarray) -> CoverageDraws:
    """Items per bin in each draw.

    Parameters
    ----------
    difficulty
        (draw, item) difficulty draws of one benchmark's items.
    edges
        K + 1 increasing bin edges.

    Returns
    -------
    CoverageDraws
        counts (draw, bin), below and above (draw,).

    Examples
    --------
    >>> from irtbayes.auditing.coverage import coverage
    >>> difficulty = np.array([[-1.5, -0.5, 0.2, 0.4], [-1.2, 0.1, 0.3, 2.5]])  # 2 draws x 4 items
    >>> draws = coverage(difficulty, np.array([-2.0, 0.0, 2.0]))
    >>> draws.counts  # items per bin, per draw
    array([[2, 2],
           [1, 2]])
    >>> draws.mass_above  # share of the items above U
    array([0.  , 0.25])
    """
    difficulty = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    n_bins = len(edges) - 1
    return CoverageDraws.from_counts(count_items(bin_codes(difficulty, edges), n_bins), difficulty.shape[1])


def coverage_table(
    draws: CoverageDraws,
    *,
    edges: np.ndarray,
    target_weights: np.ndarray | None = None,
    ci_prob: float = 0.9,
    min_items: int = DEFAULT_MIN_ITEMS,
) -> pd.DataFrame:
    """Tidy coverage: one row per bin.

    Returns
    -------
    pandas.DataFrame
        Columns ``bin`` (0-based), ``lo``, ``hi``, ``target_weight``, ``count_{mean,sd,ci_low,ci_high}``,
        ``share_{...}``, ``share_in_range_{...}``, ``p_empty``, ``p_fewer_than_m``; ``attrs`` record
        ``ci_prob`` and ``min_items``.

    Examples
    --------
    >>> from irtbayes.auditing.coverage import coverage
    >>> from irtbayes.auditing.coverage import coverage_table
    >>> rng = np.random.default_rng(0)
    >>> difficulty = rng.normal(0.0, 1.0, size=(200, 30))  # 200 draws x 30 items
    >>> edges = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    >>> table = coverage_table(coverage(difficulty, edges), edges=edges, target_weights=np.full(4, 0.25))
    >>> table[["bin", "lo", "hi", "count_mean", "p_empty"]].round(2)
       bin   lo   hi  count_mean  p_empty
    0    0 -2.0 -1.0        4.17     0.02
    1    1 -1.0  0.0       10.50     0.00
    2    2  0.0  1.0        9.88     0.00
    3    3  1.0  2.0        4.14     0.02
    """
    if int(min_items) < 1:
        raise SpecError(f"min_items must be at least 1, got {min_items}")
    edges = np.asarray(edges, dtype="float64")
    n_bins = len(edges) - 1
    weights = np.full(n_bins, np.nan) if target_weights is None else np.asarray(target_weights, dtype="float64")
    out: dict[str, np.ndarray] = {
        "bin": np.arange(n_bins),
        "lo": edges[:-1],
        "hi": edges[1:],
        "target_weight": weights,
    }
    for name, values in (("count", draws.counts), ("share", draws.share), ("share_in_range", draws.share_in_range)):
        for stat, v in summarize(values, ci_prob=ci_prob).items():
            out[f"{name}_{stat}"] = v
    out["p_empty"] = draws.p_empty()
    out["p_fewer_than_m"] = draws.p_fewer_than(int(min_items))
    table = pd.DataFrame(out)
    table.attrs.update(ci_prob=ci_prob, min_items=int(min_items))
    return table
