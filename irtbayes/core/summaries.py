"""Posterior summaries shared by the fit and audit modules: mean, sd and an equal-tailed credible interval.

The interval is *equal-tailed*: ``ci_low`` and ``ci_high`` are the ``(1 - ci_prob) / 2`` and
``(1 + ci_prob) / 2`` quantiles of the draws (linear interpolation between order statistics). It is
invariant to monotone transformations (the interval of ``1 / sqrt(I)`` is the transform of the interval of
``I``), which matters for the audit's standard errors. It always contains the median; for a very skewed
posterior it need not contain the mean. NaN draws are ignored; a quantity with no finite draw is NaN.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import SpecError

__all__ = [
    "check_ci_prob",
    "format_interval",
    "interval_quantiles",
    "quantiles",
    "spaced",
    "summarize",
    "summarize_draws",
]

#: The four summary columns, in order.
SUMMARY_COLUMNS: tuple[str, ...] = ("mean", "sd", "ci_low", "ci_high")


def check_ci_prob(ci_prob: float) -> float:
    """Return ``ci_prob`` as a float, or raise :class:`SpecError` unless 0 < ci_prob < 1.

    Examples
    --------
    >>> check_ci_prob(0.9)
    0.9
    >>> check_ci_prob(90)
    Traceback (most recent call last):
    ...
    irtbayes.core.errors.SpecError: ci_prob must be strictly between 0 and 1, got 90
    """
    try:
        value = float(ci_prob)
    except (TypeError, ValueError):
        raise SpecError(f"ci_prob must be a number strictly between 0 and 1, got {ci_prob!r}") from None
    if not 0 < value < 1:
        raise SpecError(f"ci_prob must be strictly between 0 and 1, got {value:g}")
    return value


def interval_quantiles(ci_prob: float) -> tuple[float, float]:
    """The two quantile levels of the equal-tailed interval with probability ``ci_prob``.

    Examples
    --------
    >>> [round(q, 6) for q in interval_quantiles(0.9)]
    [0.05, 0.95]
    """
    p = check_ci_prob(ci_prob)
    return (1 - p) / 2, (1 + p) / 2


def summarize(values: np.ndarray, *, ci_prob: float = 0.9, axis: int | tuple[int, ...] = 0) -> dict[str, np.ndarray]:
    """Mean, sd (ddof 1) and equal-tailed interval of draws along ``axis``.

    Parameters
    ----------
    values
        Draws; ``axis`` indexes them (one axis, or several that are pooled, e.g. (chain, draw)).
    ci_prob
        Probability of the interval.
    axis
        The draw axis or axes.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``ci_low``, ``ci_high``: arrays with ``axis`` removed.

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(loc=1.0, size=(4, 1000, 3))  # (chain, draw, item)
    >>> out = summarize(draws, ci_prob=0.9, axis=(0, 1))
    >>> sorted(out), out["mean"].shape
    (['ci_high', 'ci_low', 'mean', 'sd'], (3,))
    >>> bool(np.allclose(out["mean"], 1.0, atol=0.05)), bool(np.allclose(out["ci_high"] - out["mean"], 1.645, atol=0.1))
    (True, True)
    """
    q_low, q_high = interval_quantiles(ci_prob)
    arr = np.asarray(values)
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype("float64")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % arr.ndim for a in axes)
    rest = [arr.shape[a] for a in range(arr.ndim) if a not in axes]
    flat = np.moveaxis(arr, axes, range(len(axes))).reshape((-1, int(np.prod(rest, dtype=np.int64))))
    n, m = flat.shape
    out = {name: np.empty(m) for name in ("mean", "sd", "ci_low", "ci_high")}
    # quantities in blocks, each in float64: the temporaries stay near SUMMARY_CHUNK_ELEMENTS whatever the size
    # (a float32 (draw, item) array of 5,400 x 12,000 draws no longer takes a float64 copy and a squared copy)
    step = max(1, SUMMARY_CHUNK_ELEMENTS // max(n, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices give NaN, which is the answer
        for start in range(0, m, step):
            cols = slice(start, min(start + step, m))
            own = flat[:, cols]
            block = np.asarray(own, dtype="float64")
            if np.isnan(block).any():
                out["mean"][cols] = np.nanmean(block, axis=0)
                out["sd"][cols] = np.nanstd(block, axis=0, ddof=1) if n > 1 else 0.0
                out["ci_low"][cols], out["ci_high"][cols] = np.nanquantile(block, [q_low, q_high], axis=0)
            else:
                out["mean"][cols] = block.mean(axis=0)
                out["sd"][cols] = block.std(axis=0, ddof=1) if n > 1 else 0.0
                out["ci_low"][cols], out["ci_high"][cols] = quantiles(own, (q_low, q_high))
    return {name: values.reshape(rest)[()] if not rest else values.reshape(rest) for name, values in out.items()}


#: About this many draws (float64) are summarised at a time by :func:`summarize` (32 MB).
SUMMARY_CHUNK_ELEMENTS = 1 << 22


#: Quantities sorted together by :func:`quantiles` (bounds the copy: 256 x 5,600 draws is 11 MB).
QUANTILE_CHUNK = 256


def quantiles(flat: np.ndarray, probs: Sequence[float]) -> np.ndarray:
    """``np.quantile(flat, probs, axis=0)`` for finite draws along axis 0, the same values to the bit as for the
    draws in float64 (float32 draws are sorted as they are and interpolated in float64).

    Each quantity's draws are sorted once (NumPy's vectorised sort), and its quantiles read off the order
    statistics with NumPy's linear interpolation; ``np.quantile`` itself takes several times as long for
    thousands of quantities (it selects each quantile with a partition and an indexed lerp over all of them).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(1001, 3))
    >>> bool(np.array_equal(quantiles(draws, (0.05, 0.95)), np.quantile(draws, [0.05, 0.95], axis=0)))
    True
    >>> quantiles(np.empty((0, 2)), (0.05, 0.95)).tolist()  # no draws
    [[nan, nan], [nan, nan]]
    """
    n = flat.shape[0]
    rest = flat.shape[1:]
    if n == 0:  # no draws: no quantile (np.quantile raises an IndexError here)
        return np.full((len(probs), *rest), np.nan)
    columns = flat.reshape(n, int(np.prod(rest, dtype=np.int64)))
    out = np.empty((len(probs), columns.shape[1]))
    positions = []
    for q in probs:  # NumPy's "linear" method: virtual index (n - 1) q, its neighbours clipped to the draws
        virtual = (n - 1) * q
        below = float(np.floor(virtual))
        lo, hi = (min(max(int(below) + k, 0), n - 1) for k in (0, 1))
        positions.append((lo, hi, virtual - below))
    for start in range(0, columns.shape[1], QUANTILE_CHUNK):
        # a copy even where .T is contiguous, sorted in the draws' own precision: widening float32 draws keeps
        # their order, and NumPy sorts float32 about twice as fast; the interpolation is in float64
        block = columns[:, start : start + QUANTILE_CHUNK].T.copy()
        block.sort(axis=1)
        for row, (lo, hi, gamma) in enumerate(positions):
            a, b = block[:, lo].astype("float64"), block[:, hi].astype("float64")
            diff = b - a
            out[row, start : start + len(block)] = b - diff * (1.0 - gamma) if gamma >= 0.5 else a + diff * gamma
    return out.reshape((len(probs), *rest))


def summarize_draws(
    values: xr.DataArray,
    *,
    ci_prob: float = 0.9,
    sample_dims: Sequence[str] = ("chain", "draw"),
    prefix: str = "",
) -> pd.DataFrame:
    """Tidy summary of a labelled posterior quantity: one row per combination of its other dims.

    Parameters
    ----------
    values
        A DataArray with the ``sample_dims`` (any that are absent are ignored).
    ci_prob
        Probability of the equal-tailed interval; recorded in ``attrs["ci_prob"]`` of the result.
    sample_dims
        The dims that index draws.
    prefix
        Put before each column name (``"difficulty_"`` gives ``difficulty_mean`` ...).

    Returns
    -------
    pandas.DataFrame
        Indexed by the remaining dims (their coordinates; a one-row frame when none remain), columns
        ``mean``, ``sd``, ``ci_low``, ``ci_high`` (prefixed).

    Examples
    --------
    >>> draws = np.random.default_rng(0).normal(size=(2, 500, 2)) + np.array([0.0, 2.0])
    >>> values = xr.DataArray(draws, dims=("chain", "draw", "item"), coords={"item": ["q1", "q2"]})
    >>> table = summarize_draws(values, prefix="difficulty_")
    >>> table.index.tolist(), table.columns.tolist()
    (['q1', 'q2'], ['difficulty_mean', 'difficulty_sd', 'difficulty_ci_low', 'difficulty_ci_high'])
    >>> table["difficulty_mean"].round(1).tolist(), table.attrs["ci_prob"]
    ([-0.0, 2.0], 0.9)
    """
    dims = [d for d in sample_dims if d in values.dims]
    rest = [d for d in values.dims if d not in dims]
    arr = values.transpose(*dims, *rest).to_numpy()
    stats = summarize(arr, ci_prob=ci_prob, axis=tuple(range(len(dims))) if dims else ())
    if rest:
        index = pd.MultiIndex.from_product([values[d].to_numpy() for d in rest], names=rest)
        if len(rest) == 1:
            index = index.get_level_values(0)
        frame = pd.DataFrame({f"{prefix}{k}": np.ravel(v) for k, v in stats.items()}, index=index)
    else:
        frame = pd.DataFrame({f"{prefix}{k}": [float(v)] for k, v in stats.items()})
    frame.attrs["ci_prob"] = check_ci_prob(ci_prob)
    return frame


def format_interval(row: Mapping[str, Any] | pd.Series, prefix: str, *, digits: int = 2) -> str:
    """``"mean [ci_low, ci_high]"`` from the ``{prefix}_mean``, ``{prefix}_ci_low``, ``{prefix}_ci_high`` fields.

    The one way intervals are written in text (summaries, reports, command output).

    Examples
    --------
    >>> format_interval({"gap_mean": 1.234, "gap_ci_low": 0.5, "gap_ci_high": 2.0}, "gap")
    '1.23 [0.50, 2.00]'
    """
    return (
        f"{row[f'{prefix}_mean']:.{digits}f} "
        f"[{row[f'{prefix}_ci_low']:.{digits}f}, {row[f'{prefix}_ci_high']:.{digits}f}]"
    )


def spaced(n_total: int, n: int) -> np.ndarray:
    """At most ``n`` evenly spaced indices of ``range(n_total)``, the first and the last included: how draws,
    rows or subjects are thinned wherever the package shows or uses fewer of them.

    >>> spaced(10, 4)
    array([0, 3, 6, 9])
    """
    return np.unique(np.linspace(0, n_total - 1, min(n, n_total)).round().astype(np.int64))
