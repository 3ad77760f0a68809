"""Generic tables of posterior draws: an ``arviz.summary``-like summary, the draws in wide form, forest rows.

These functions take plain :mod:`xarray` and :mod:`pandas` objects and know nothing of the result classes;
the result classes (:class:`~irtbayes.fitting.result.Fit`, :class:`~irtbayes.fitting.scoring.Scores`, ...) build their ``summary()``,
``to_dataframe()`` and ``plot_forest()`` on them, and their other tables in their own modules. Every figure is
one of :mod:`irtbayes.core.plots`, so it is bounded in size whatever the data.

Shared vocabulary, as in ``arviz.summary``: a *summary* has one row per scalar parameter with ``mean``,
``sd``, ``ci_low``, ``ci_high`` (an equal-tailed interval, its probability in ``attrs["ci_prob"]``) and, for
posterior draws, ``r_hat``, ``ess_bulk`` and ``ess_tail``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.core.errors import SpecError
from irtbayes.core.summaries import check_ci_prob, spaced, summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "MAX_FOREST_ROWS",
    "SUMMARY_COLUMNS",
    "draws_frame",
    "forest_rows",
    "posterior_summary",
]

#: Columns of :func:`posterior_summary`, after ``variable`` and ``index``.
SUMMARY_COLUMNS = ("mean", "sd", "ci_low", "ci_high", "r_hat", "ess_bulk", "ess_tail")
#: Rows a forest plot of items or subjects shows at most (evenly spaced over the sorted rows beyond that).
MAX_FOREST_ROWS = 40


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
    """One row per scalar parameter: mean, sd, equal-tailed interval, r-hat, bulk and tail ESS.

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
        ``index`` (the element's coordinates as text, ``""`` for a scalar) and :data:`SUMMARY_COLUMNS`.
        R-hat is NaN with one chain. ``attrs["ci_prob"]`` records the interval's probability.

    Examples
    --------
    >>> from irtbayes.core.frames import posterior_summary
    >>> draws = np.random.default_rng(0).normal(size=(2, 500, 3))
    >>> posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b", "c"]})
    >>> table = posterior_summary(posterior)
    >>> list(table.index)
    ['ability[a]', 'ability[b]', 'ability[c]']
    >>> bool(table["r_hat"].lt(1.01).all()), bool(table["ess_bulk"].gt(700).all())
    (True, True)
    """
    from irtbayes.checks.convergence import rank_diagnostics

    ci_prob = check_ci_prob(ci_prob)
    frames = []
    for name in _variables(posterior, var_names):
        var = posterior[name]
        rest = [d for d in var.dims if d not in ("chain", "draw")]
        values = var.transpose("chain", "draw", *rest).to_numpy().astype("float64")
        stats = summarize(values, ci_prob=ci_prob, axis=(0, 1))
        rhat, bulk, tail = rank_diagnostics(values, ci_prob=ci_prob)
        labels = _element_labels(var, rest)
        frame = pd.DataFrame(
            {
                "variable": name,
                "index": labels,
                **{k: np.ravel(v) for k, v in stats.items()},
                "r_hat": np.ravel(rhat),
                "ess_bulk": np.ravel(bulk),
                "ess_tail": np.ravel(tail),
            }
        )
        frame.index = [f"{name}[{label}]" if label else name for label in labels]
        frames.append(frame)
    columns = ["variable", "index", *SUMMARY_COLUMNS]
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
    >>> from irtbayes.core.frames import draws_frame
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
