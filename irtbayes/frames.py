"""Tables and figures of the result objects, behind their ``summary()``, ``to_dataframe()`` and ``plot_*`` methods.

The result classes (:class:`~irtbayes.fit.Fit`, :class:`~irtbayes.fit.Scores`,
:class:`~irtbayes.diagnostics.Diagnostics`, :class:`~irtbayes.audit.AuditResult`,
:class:`~irtbayes.benchfill.BenchfillResult`) call these functions; computing a table is kept apart from
drawing it, and every figure is one of :mod:`irtbayes.plots`, so it is bounded in size whatever the data.

Shared vocabulary, as in ``arviz.summary``: a *summary* has one row per scalar parameter (or per scope) with
``mean``, ``sd``, ``ci_low``, ``ci_high`` (an equal-tailed interval, its probability in ``attrs["ci_prob"]``)
and, for posterior draws, ``r_hat``, ``ess_bulk`` and ``ess_tail``; ``to_dataframe()`` gives the draws or
the full tables.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.errors import SpecError
from irtbayes.summaries import check_ci_prob, summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.audit.run import AuditResult
    from irtbayes.benchfill.result import BenchfillResult
    from irtbayes.fitresult import Fit
    from irtbayes.sampler_checks import Diagnostics
    from irtbayes.scoring import Scores

__all__ = [
    "DIAGNOSTIC_COLUMNS",
    "SUMMARY_COLUMNS",
    "audit_summary",
    "draws_frame",
    "posterior_summary",
]

#: Columns of :func:`posterior_summary`, after ``variable`` and ``index``.
SUMMARY_COLUMNS = ("mean", "sd", "ci_low", "ci_high", "r_hat", "ess_bulk", "ess_tail")
#: Columns of a per-variable convergence summary (:meth:`Diagnostics.summary`).
DIAGNOSTIC_COLUMNS = (
    "variable",
    "size",
    "n_checked",
    "max_rhat",
    "worst_rhat",
    "min_ess_bulk",
    "worst_ess_bulk",
    "min_ess_tail",
    "worst_ess_tail",
    "ok",
)
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
    >>> from irtbayes.frames import posterior_summary
    >>> draws = np.random.default_rng(0).normal(size=(2, 500, 3))
    >>> posterior = xr.Dataset({"ability": (("chain", "draw", "subject"), draws)}, coords={"subject": ["a", "b", "c"]})
    >>> table = posterior_summary(posterior)
    >>> list(table.index)
    ['ability[a]', 'ability[b]', 'ability[c]']
    >>> bool(table["r_hat"].lt(1.01).all()), bool(table["ess_bulk"].gt(700).all())
    (True, True)
    """
    from irtbayes.convergence import rank_diagnostics

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
    >>> from irtbayes.frames import draws_frame
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
    keep = np.unique(np.linspace(0, len(rows) - 1, max_rows).round().astype(int))
    return rows.iloc[keep]


def forest_rows(
    table: pd.DataFrame, *, prefix: str, label: str, max_rows: int = MAX_FOREST_ROWS, ax: Axes | None = None
) -> Axes:
    """A forest plot of ``{prefix}_mean`` with its interval, sorted, at most ``max_rows`` rows evenly spaced."""
    from irtbayes.plots import plot_forest

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


# --------------------------------------------------------------------------------------------- fits
def fit_summary(fit: Fit, *, var_names: Sequence[str] | None = None, ci_prob: float = 0.9) -> pd.DataFrame:
    """:func:`posterior_summary` of a fit's posterior, its ``attrs`` recording ``approximate`` and ``sampler``."""
    table = posterior_summary(fit.posterior, var_names=var_names, ci_prob=ci_prob)
    table.attrs.update(approximate=fit.approximate, sampler=fit.sampler.get("name"), kind=fit.spec.kind)
    return table


def item_curves_table(fit: Fit, *, items: Sequence[str], points: int = 61, ci_prob: float = 0.9) -> pd.DataFrame:
    """P(correct) of ``items`` over an ability grid spanning the subjects' abilities, with intervals.

    Returns one row per (item, theta): ``item``, ``theta``, ``p_mean``, ``p_sd``, ``p_ci_low``, ``p_ci_high``.
    """
    from irtbayes.audit.information import item_curves, theta_grid

    post = fit.posterior
    known = set(fit.item_ids)
    missing = [i for i in items if i not in known]
    if missing:
        raise SpecError(f"no item {missing} in the fit")
    sel = post.sel(item=list(items))
    stack = ("chain", "draw")
    b = sel["difficulty"].stack(sample=stack).transpose("sample", "item").to_numpy()
    a = sel["discrimination"].stack(sample=stack).transpose("sample", "item").to_numpy()
    c = sel["guessing"].stack(sample=stack).transpose("sample", "item").to_numpy() if "guessing" in sel else None
    ability = post["ability"].to_numpy()
    theta = theta_grid(float(np.nanmin(ability)), float(np.nanmax(ability)), points=points)
    p = item_curves(theta, b, a, c)[0]  # (sample, grid, item)
    stats = summarize(p, ci_prob=ci_prob, axis=0)
    rows = []
    for k, item in enumerate(items):
        rows.append(pd.DataFrame({"item": item, "theta": theta, **{f"p_{s}": v[:, k] for s, v in stats.items()}}))
    table = pd.concat(rows, ignore_index=True)
    table.attrs["ci_prob"] = ci_prob
    return table


# -------------------------------------------------------------------------------------- diagnostics
def diagnostics_summary(diagnostics: Diagnostics) -> pd.DataFrame:
    """One row per checked variable: worst r-hat and ESS with the parameters attaining them, and ``ok``.

    ``ok`` is True when the variable's worst r-hat and ESS meet the thresholds (NaN never passes); divergences,
    E-BFMI and tree depth concern the whole fit and are in ``attrs`` (``divergences``, ``ok``, ``thresholds``).
    """
    t = diagnostics.thresholds
    rows = []
    for v in diagnostics.variables:
        row: dict[str, object] = {"variable": v.name, "size": v.size, "n_checked": v.n_checked}
        row.update({k: getattr(v, k) for k in DIAGNOSTIC_COLUMNS[3:-1]})
        finite = np.isfinite([v.max_rhat, v.min_ess_bulk, v.min_ess_tail]).all()
        row["ok"] = bool(
            finite
            and v.max_rhat <= t.get("rhat_max", np.inf)
            and min(v.min_ess_bulk, v.min_ess_tail) >= t.get("ess_min", 0)
        )
        rows.append(row)
    table = pd.DataFrame(rows, columns=list(DIAGNOSTIC_COLUMNS))
    table.attrs.update(
        ok=diagnostics.ok,
        approximate=diagnostics.approximate,
        divergences=diagnostics.divergences,
        thresholds=dict(t),
    )
    return table


def diagnostics_parameters(diagnostics: Diagnostics) -> pd.DataFrame:
    """The per-parameter table kept after :func:`~irtbayes.diagnostics.check_convergence`, or a clear error."""
    if diagnostics.parameters is None:
        raise SpecError(
            "per-parameter diagnostics are kept only in memory after the checks and are not saved with a fit; "
            "use Fit.summary() (it computes r-hat and ESS from the draws) or check_convergence(fit.idata)"
        )
    return diagnostics.parameters.copy()


# -------------------------------------------------------------------------------------------- scores
def scores_frame(scores: Scores) -> pd.DataFrame:
    """The ability draws of scored subjects: index (``chain``, ``draw``), one column per subject (and dim)."""
    return draws_frame(xr.Dataset({"ability": scores.draws}))


# --------------------------------------------------------------------------------------------- audits
#: The columns of :func:`audit_summary`, after ``scope_kind``, ``scope`` and ``n_items``.
AUDIT_SUMMARY_MEASURES = ("ddm_w1", "ddm_shape_w1", "max_gap", "interior_gap", "edge_gap_low", "edge_gap_high")


def audit_summary(result: AuditResult) -> pd.DataFrame:
    """One row per scope: the headline DDM, the in-range shape, the Maximum Gap and its parts, with intervals.

    Returns
    -------
    pandas.DataFrame
        Index ``scope_kind:scope`` (``all:all``, ``benchmark:law``, ...); columns ``scope_kind``, ``scope``,
        ``n_items``, then ``{m}_mean``, ``{m}_ci_low``, ``{m}_ci_high`` for m in
        :data:`AUDIT_SUMMARY_MEASURES`, then ``gap_kind``, ``mass_below_mean``, ``mass_above_mean``.
        ``attrs`` records ``ci_prob`` and the target's description.
    """
    b = result.benchmarks
    columns = ["scope_kind", "scope", "n_items"]
    for m in AUDIT_SUMMARY_MEASURES:
        columns += [f"{m}_mean", f"{m}_ci_low", f"{m}_ci_high"]
    columns += ["gap_kind", "mass_below_mean", "mass_above_mean"]
    table = b[[c for c in columns if c in b.columns]].copy()
    table.index = pd.Index([f"{k}:{s}" for k, s in zip(b["scope_kind"], b["scope"], strict=True)], name="scope_id")
    table.attrs.update(ci_prob=result.ci_prob, target=result.target.description)
    return table


def audit_table(result: AuditResult, name: str) -> pd.DataFrame:
    """One of the audit's tables by name, a copy (``attrs`` kept)."""
    tables = result.tables()
    if name not in tables:
        raise SpecError(f"no audit table {name!r}; the tables are {sorted(tables)}")
    return tables[name].copy()


def _scope_rows(table: pd.DataFrame, scope: str) -> pd.DataFrame:
    if scope == "all":
        rows = table.loc[table["scope_kind"] == "all"]
    elif ":" in scope:
        kind, name = scope.split(":", 1)
        rows = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)]
    else:
        rows = table.loc[table["scope"].astype(str) == scope]
    if rows.empty:
        known = sorted(set(table["scope"].astype(str)))
        raise SpecError(f"no scope {scope!r} in the audit; scopes: {known}")
    return rows


def plot_audit_leaderboard(result: AuditResult, *, scope: str = "all", top: int = 30, ax: Axes | None = None) -> Axes:
    """Ranks with intervals of the top ``top`` subjects of one scope: raw accuracy, re-weighted, ability."""
    from irtbayes.plots import plot_leaderboard

    rows = _scope_rows(result.ranking, scope).sort_values("rank_mean").head(top)
    columns = {
        "raw accuracy": ("raw_rank", "raw_rank", "raw_rank"),
        "re-weighted": ("rank_mean", "rank_ci_low", "rank_ci_high"),
        "IRT ability": ("ability_rank_mean", "ability_rank_ci_low", "ability_rank_ci_high"),
    }
    return plot_leaderboard(rows, columns=columns, sort_by="rank_mean", ax=ax)


def plot_audit_information(result: AuditResult, *, scopes: Sequence[str] | None = None, ax: Axes | None = None) -> Axes:
    """Test information with bands; by default all items and at most five benchmarks."""
    from irtbayes.plots import plot_test_information

    info = result.information
    if scopes is None:
        names = list(dict.fromkeys(info["scope"].astype(str)))
        scopes = names[:6]
    return plot_test_information(info, scopes=list(scopes), ax=ax)


# -------------------------------------------------------------------------------------------- benchfill
def benchfill_summary(result: BenchfillResult) -> pd.DataFrame:
    """One row per candidate: decision, reason, and its difficulty posterior against the target."""
    d = result.decisions
    wanted = [
        "benchmark",
        "decision",
        "reason",
        "n_responses",
        "p_in_target",
        "p_in_target_data",
        "slope_mean",
        "slope_ci_low",
        "slope_ci_high",
        "difficulty_mean",
        "difficulty_ci_low",
        "difficulty_ci_high",
    ]
    table = d[[c for c in wanted if c in d.columns]].copy()
    table.attrs.update(ci_prob=result.ci_prob, target=result.target.label, run_id=result.run_id)
    return table
