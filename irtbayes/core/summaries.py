"""Posterior summaries, written once for every result: mean, sd and an equal-tailed credible interval of draws
(:func:`summarize`), an ``arviz.summary``-like table of a posterior (:func:`posterior_summary`), the draws in wide
form (:func:`draws_frame`), forest rows and the text of an interval (:func:`format_interval`).

The interval is *equal-tailed*: its ends are the ``(1 - ci_prob) / 2`` and ``(1 + ci_prob) / 2`` quantiles of the
draws (linear interpolation between order statistics). It is invariant to monotone transformations (the interval of
``1 / sqrt(I)`` is the transform of the interval of ``I``), which matters for the audit's standard errors. It always
contains the median; for a very skewed posterior it need not contain the mean. NaN draws are ignored; a quantity
with no finite draw is NaN.

**The interval's column names.** Each interval is named after its quantity, in every table from a result's
``summary()`` to its CSV files: ``ci_low`` and ``ci_high`` for the row's one quantity, ``difficulty_ci_low``,
``ddm_w1_ci_high``, ... otherwise, with the probability in ``attrs["ci_prob"]`` and in the folder's
``summary.json`` (:func:`summary_table`). A fit's own parameter table, :func:`posterior_summary` (``Fit.summary()``),
is ``arviz.summary``'s (arviz-stats 1.x): ``mean``, ``sd``, ``eti90_lb`` and ``eti90_ub`` (the number is the
interval's percentage, :func:`interval_columns`), ``ess_bulk``, ``ess_tail``, ``r_hat`` and ``mcse_mean``.
These functions take plain :mod:`xarray` and :mod:`pandas` objects and know nothing of the result classes; every
figure of them is in :mod:`irtbayes.core.plots` (bounded in size whatever the data).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.files import json_ready

__all__ = [
    "check_ci_prob",
    "draws_frame",
    "format_interval",
    "interval_columns",
    "interval_quantiles",
    "posterior_summary",
    "quantiles",
    "records",
    "spaced",
    "summarize",
    "summarize_draws",
    "summary_columns",
    "summary_table",
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


def format_interval(
    row: Mapping[str, Any] | pd.Series,
    prefix: str,
    *,
    digits: int = 2,
    fmt: Callable[[float], str] | None = None,
    ends: Callable[[float], str] | None = None,
) -> str:
    """``"mean [ci_low, ci_high]"`` from the ``{prefix}_mean``, ``{prefix}_ci_low``, ``{prefix}_ci_high`` fields
    (``mean``, ``ci_low``, ``ci_high`` for an empty prefix).

    The one way intervals are written in text (summaries, reports, command output); ``fmt`` writes each number
    (default: ``digits`` decimals), ``ends`` the interval's ends when they differ (whole ranks).

    Examples
    --------
    >>> format_interval({"gap_mean": 1.234, "gap_ci_low": 0.5, "gap_ci_high": 2.0}, "gap")
    '1.23 [0.50, 2.00]'
    >>> format_interval({"s_mean": 0.171, "s_ci_low": 0.15, "s_ci_high": 0.19}, "s", fmt=lambda v: f"{v:.0%}")
    '17% [15%, 19%]'
    >>> format_interval({"rank_mean": 3.4, "rank_ci_low": 2, "rank_ci_high": 5}, "rank", digits=1, ends="{:.0f}".format)
    '3.4 [2, 5]'
    """
    write = fmt or (lambda value: f"{value:.{digits}f}")
    end = ends or write
    name = f"{prefix}_" if prefix else ""
    return f"{write(row[f'{name}mean'])} [{end(row[f'{name}ci_low'])}, {end(row[f'{name}ci_high'])}]"


def spaced(n_total: int, n: int) -> np.ndarray:
    """At most ``n`` evenly spaced indices of ``range(n_total)``, the first and the last included: how draws,
    rows or subjects are thinned wherever the package shows or uses fewer of them.

    >>> spaced(10, 4)
    array([0, 3, 6, 9])
    """
    return np.unique(np.linspace(0, n_total - 1, min(n, n_total)).round().astype(np.int64))


def interval_columns(ci_prob: float) -> tuple[str, str]:
    """ArviZ's names of the two ends of an equal-tailed ``ci_prob`` interval: ``eti{p}_lb``, ``eti{p}_ub``.

    ``p`` is ``int(ci_prob * 100)``, as ``arviz_stats.summary`` computes it, so the names are ArviZ's for every
    ``ci_prob`` (0.9 gives ``eti90``, 0.89 ``eti89``; a probability just under a whole percentage truncates as
    in ArviZ: 0.29 gives ``eti28``).

    Examples
    --------
    >>> interval_columns(0.9), interval_columns(0.5)
    (('eti90_lb', 'eti90_ub'), ('eti50_lb', 'eti50_ub'))
    """
    perc = int(check_ci_prob(ci_prob) * 100)
    return f"eti{perc}_lb", f"eti{perc}_ub"


def summary_columns(ci_prob: float = 0.9) -> tuple[str, ...]:
    """The columns of :func:`posterior_summary` after ``variable`` and ``index``, in ``arviz.summary``'s order.

    Examples
    --------
    >>> summary_columns(0.9)
    ('mean', 'sd', 'eti90_lb', 'eti90_ub', 'ess_bulk', 'ess_tail', 'r_hat', 'mcse_mean')
    """
    return ("mean", "sd", *interval_columns(ci_prob), "ess_bulk", "ess_tail", "r_hat", "mcse_mean")


def summary_table(table: pd.DataFrame, ci_prob: float) -> pd.DataFrame:
    """A copy of ``table`` for a result's ``summary()``: the same columns and values (intervals as ``ci_low`` and
    ``ci_high``, ``{x}_ci_low`` and ``{x}_ci_high``, as in the result's CSV files and its other tables), ``attrs``
    kept, with ``attrs["ci_prob"]`` the interval's probability.

    Examples
    --------
    >>> table = pd.DataFrame({"item": ["q1"], "difficulty_mean": [0.2], "difficulty_ci_low": [-0.1], "difficulty_ci_high": [0.5]})
    >>> out = summary_table(table, 0.9)
    >>> list(out.columns), out.attrs["ci_prob"]
    (['item', 'difficulty_mean', 'difficulty_ci_low', 'difficulty_ci_high'], 0.9)
    """
    out = table.copy()
    out.attrs = {**table.attrs, "ci_prob": float(check_ci_prob(ci_prob))}
    return out


def records(table: pd.DataFrame) -> list[dict[str, object]]:
    """The rows of ``table`` as JSON-ready dicts (NaN and missing values as ``None``; :func:`~irtbayes.core.files.json_ready`).

    Examples
    --------
    >>> records(pd.DataFrame({"item": ["q1", "q2"], "mean": [0.5, np.nan]}))
    [{'item': 'q1', 'mean': 0.5}, {'item': 'q2', 'mean': None}]
    """
    rows: list[dict[str, object]] = json_ready(table.to_dict(orient="records"))
    return rows


def _element_labels(var: xr.DataArray, rest: Sequence[Hashable]) -> np.ndarray:
    if not rest:
        return np.array([""], dtype=object)
    index = pd.MultiIndex.from_product([var[d].values.astype(str) for d in rest])
    return np.asarray([",".join(t) for t in index], dtype=object)


def _variables(posterior: xr.Dataset, var_names: Sequence[str] | None) -> list[str]:
    if var_names is None:
        return [str(v) for v in posterior.data_vars if not str(v).endswith("_z")]
    names = [var_names] if isinstance(var_names, str) else list(var_names)
    missing = [v for v in names if v not in posterior.data_vars]
    if missing:
        raise SpecError(f"no posterior variable {missing}; the posterior holds {sorted(map(str, posterior.data_vars))}")
    return names


def posterior_summary(
    posterior: xr.Dataset, *, var_names: Sequence[str] | None = None, ci_prob: float = 0.9
) -> pd.DataFrame:
    """One row per scalar parameter, as ``arviz.summary``: mean, sd, equal-tailed interval, ESS, r-hat, MCSE.

    Parameters
    ----------
    posterior
        Draws with dims (chain, draw, ...).
    var_names
        Variables to summarise (default: all but the raw ``*_z`` sampling coordinates).
    ci_prob
        Probability of the interval; tail ESS is taken at its two ends.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``variable[index]`` labels (``difficulty[item3]``, the real ids); columns ``variable``,
        ``index`` (the element's coordinates as text, ``""`` for a scalar) and :func:`summary_columns`:
        ``mean``, ``sd``, ``eti90_lb``, ``eti90_ub`` (for ``ci_prob=0.9``), ``ess_bulk``, ``ess_tail``, ``r_hat``
        and ``mcse_mean`` (arviz-stats' Monte Carlo standard error of the mean). R-hat is NaN with one chain.
        ``attrs["ci_prob"]`` records the interval's probability.

    Examples
    --------
    >>> from irtbayes.core.summaries import posterior_summary
    >>> draws = np.random.default_rng(0).normal(size=(2, 500, 3))
    >>> posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b", "c"]})
    >>> table = posterior_summary(posterior)
    >>> list(table.index)
    ['ability[a]', 'ability[b]', 'ability[c]']
    >>> bool(table["r_hat"].lt(1.01).all()), bool(table["ess_bulk"].gt(700).all())
    (True, True)
    """
    from arviz_stats.base import array_stats

    from irtbayes.core.chains import rank_diagnostics

    ci_prob = check_ci_prob(ci_prob)
    lb, ub = interval_columns(ci_prob)
    frames = []
    for name in _variables(posterior, var_names):
        var = posterior[name]
        rest = [d for d in var.dims if d not in ("chain", "draw")]
        values = var.transpose("chain", "draw", *rest).to_numpy().astype("float64")
        stats = summarize(values, ci_prob=ci_prob, axis=(0, 1))
        rhat, bulk, tail = rank_diagnostics(values, ci_prob=ci_prob)
        mcse = array_stats.mcse(values, chain_axis=0, draw_axis=1, method="mean")
        labels = _element_labels(var, rest)
        frame = pd.DataFrame(
            {
                "variable": name,
                "index": labels,
                "mean": np.ravel(stats["mean"]),
                "sd": np.ravel(stats["sd"]),
                lb: np.ravel(stats["ci_low"]),
                ub: np.ravel(stats["ci_high"]),
                "ess_bulk": np.ravel(bulk),
                "ess_tail": np.ravel(tail),
                "r_hat": np.ravel(rhat),
                "mcse_mean": np.ravel(mcse),
            }
        )
        frame.index = [f"{name}[{label}]" if label else name for label in labels]
        frames.append(frame)
    columns = ["variable", "index", *summary_columns(ci_prob)]
    table = pd.concat(frames) if frames else pd.DataFrame(columns=columns)
    table.attrs["ci_prob"] = ci_prob
    return table


def draws_frame(posterior: xr.Dataset, *, var_names: Sequence[str] | None = None) -> pd.DataFrame:
    """The draws in wide form: one row per (chain, draw), one column per scalar parameter.

    Parameters
    ----------
    posterior
        Draws with dims (chain, draw, ...).
    var_names
        Variables to include (default: all but the raw ``*_z`` sampling coordinates).

    Returns
    -------
    pandas.DataFrame
        Index (``chain``, ``draw``); columns ``variable[index]`` as in :func:`posterior_summary`.

    Examples
    --------
    >>> from irtbayes.core.summaries import draws_frame
    >>> posterior = xr.Dataset(
    ...     {"difficulty": (("chain", "draw", "item"), np.arange(12.0).reshape(2, 3, 2))}, coords={"item": ["q1", "q2"]}
    ... )
    >>> draws_frame(posterior)
                difficulty[q1]  difficulty[q2]
    chain draw
    0     0                0.0             1.0
          1                2.0             3.0
          2                4.0             5.0
    1     0                6.0             7.0
          1                8.0             9.0
          2               10.0            11.0
    """
    names = _variables(posterior, var_names)
    chains = posterior.sizes.get("chain", 1)
    draws = posterior.sizes.get("draw", 1)
    columns: dict[str, np.ndarray] = {}
    for name in names:
        var = posterior[name]
        rest = [d for d in var.dims if d not in ("chain", "draw")]
        values = var.transpose("chain", "draw", *rest).to_numpy().reshape(chains * draws, -1)
        for k, label in enumerate(_element_labels(var, rest)):
            columns[f"{name}[{label}]" if label else name] = values[:, k]
    index = pd.MultiIndex.from_product([np.arange(chains), np.arange(draws)], names=["chain", "draw"])
    return pd.DataFrame(columns, index=index)
