"""Generic tables of posterior draws: an ``arviz.summary``-like summary, the draws in wide form, forest rows.

These functions take plain :mod:`xarray` and :mod:`pandas` objects and know nothing of the result classes;
the result classes (:class:`~irtbayes.fitting.result.Fit`, :class:`~irtbayes.fitting.scoring.Scores`, ...) build their ``summary()``,
``to_dataframe()`` and ``plot_forest()`` on them, and their other tables in their own modules. Every figure is
one of :mod:`irtbayes.core.plots`, so it is bounded in size whatever the data.

Shared vocabulary, as in ``arviz.summary`` (arviz-stats 1.x): every result's ``summary()`` names its columns as
ArviZ does: ``mean``, ``sd``, the equal-tailed interval's ends ``eti90_lb`` and ``eti90_ub`` (the number is the
interval's percentage, :func:`interval_columns`; its probability is also in ``attrs["ci_prob"]``) and, for posterior
draws, ``ess_bulk``, ``ess_tail``, ``r_hat`` and ``mcse_mean``. The project's own tables keep ``ci_low`` and
``ci_high`` (``difficulty_ci_low``, ...); :func:`arviz_names` renames them for a summary.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.files import json_ready
from irtbayes.core.summaries import check_ci_prob, spaced, summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "MAX_FOREST_ROWS",
    "arviz_names",
    "draws_frame",
    "forest_rows",
    "interval_columns",
    "posterior_summary",
    "records",
    "summary_columns",
]

#: Rows a forest plot of items or subjects shows at most (evenly spaced over the sorted rows beyond that).
MAX_FOREST_ROWS = 40


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


def arviz_names(table: pd.DataFrame, ci_prob: float) -> pd.DataFrame:
    """A copy of ``table`` with its interval columns under ArviZ's names (:func:`interval_columns`); ``attrs`` kept.

    ``ci_low`` and ``ci_high`` become ``eti{p}_lb`` and ``eti{p}_ub``, ``{x}_ci_low`` and ``{x}_ci_high``
    become ``{x}_eti{p}_lb`` and ``{x}_eti{p}_ub``; other columns and the values are unchanged.

    Examples
    --------
    >>> table = pd.DataFrame({"item": ["q1"], "difficulty_mean": [0.2], "difficulty_ci_low": [-0.1], "difficulty_ci_high": [0.5]})
    >>> list(arviz_names(table, 0.9).columns)
    ['item', 'difficulty_mean', 'difficulty_eti90_lb', 'difficulty_eti90_ub']
    """
    lb, ub = interval_columns(ci_prob)

    def name(column: Hashable) -> Hashable:
        if not isinstance(column, str):
            return column
        for old, new in (("ci_low", lb), ("ci_high", ub)):
            if column == old or column.endswith(f"_{old}"):
                return column[: len(column) - len(old)] + new
        return column

    out = table.rename(columns=name)
    out.attrs = dict(table.attrs)
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
    >>> from irtbayes.checks.summary import posterior_summary
    >>> draws = np.random.default_rng(0).normal(size=(2, 500, 3))
    >>> posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b", "c"]})
    >>> table = posterior_summary(posterior)
    >>> list(table.index)
    ['ability[a]', 'ability[b]', 'ability[c]']
    >>> bool(table["r_hat"].lt(1.01).all()), bool(table["ess_bulk"].gt(700).all())
    (True, True)
    """
    from arviz_stats.base import array_stats

    from irtbayes.checks.convergence import rank_diagnostics

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
    >>> from irtbayes.checks.summary import draws_frame
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


def _spaced(rows: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    if len(rows) <= max_rows:
        return rows
    keep = spaced(len(rows), max_rows)
    return rows.iloc[keep]


def forest_rows(
    table: pd.DataFrame, *, prefix: str, label: str, max_rows: int = MAX_FOREST_ROWS, ax: Axes | None = None
) -> Axes:
    """A forest plot of ``{prefix}_mean`` with its interval, sorted, at most ``max_rows`` rows evenly spaced."""
    from irtbayes.core.plots import plot_forest

    rows = _spaced(table.sort_values(f"{prefix}_mean"), max_rows)
    shown = f" ({len(rows)} of {len(table)}, evenly spaced)" if len(rows) < len(table) else ""
    return plot_forest(
        rows,
        mean=f"{prefix}_mean",
        low=f"{prefix}_ci_low",
        high=f"{prefix}_ci_high",
        label=label,
        colour_by="benchmark" if "benchmark" in rows.columns else None,
        xlabel=f"{prefix} (logits)",
        title=f"{prefix.capitalize()}{shown}",
        sort=False,
        ax=ax,
    )
