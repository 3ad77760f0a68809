"""The whole audit: every measure, per posterior draw, per benchmark, per domain and overall; tidy tables.

:func:`audit` takes a posterior (a DataTree with a ``posterior`` group, or that group as a Dataset) and the
:class:`~irtbayes.data.ResponseData` it was fitted to, and returns an :class:`AuditResult`;
:func:`~irtbayes.audit.folder.write_audit` writes it to a folder and
:func:`~irtbayes.audit.folder.load_audit` reads it back.

Scopes
------
Each benchmark (``scope_kind="benchmark"``), each domain (``"domain"``) and all items together
(``"all"``, scope name ``"all"``) is audited as one benchmark: its own bins, DDM, gaps, information and
leaderboard. Items without a benchmark (domain) label belong to no benchmark (domain) scope, only to
``"all"``. A scope's subjects are those with at least one response to its items.

Draws
-----
Coverage, DDM and gaps use every posterior draw (for W1 and the gap, each benchmark's difficulties are
sorted in single precision, which moves them by less than 1e-6 logits and halves the sorting time). The
leaderboard costs (draws x items x subjects) and uses at most ``max_draws`` draws (default 1,000); the
information curves cost (draws x items x grid points) and use at most ``information_draws`` (default 200).
Both are taken evenly spaced over the stacked (chain, draw) sequence. Work is done in chunks of draws
(about 2 million array elements each), so memory stays bounded whatever the number of draws.

Locations
---------
Coverage, DDM and the Maximum Gap describe the whole set of a benchmark's difficulties. By default they
use *deconvolved* locations (:mod:`irtbayes.audit.deconvolve`): per draw, each item's location is drawn
under its benchmark's estimated difficulty distribution instead of the model's normal prior, which would
otherwise fill gaps with the scatter of neighbouring items. Each item's own difficulty (the items table),
the leaderboard and the information curves use the fit's draws. ``ensemble="draws"`` uses the fit's draws
everywhere; a posterior without the hierarchy's hyperparameters (a hand-built one) always does.

Ability
-------
One-dimensional fits: the ``ability`` variable. Multidimensional fits (``ability`` with a ``dim`` axis,
one dimension per domain, each item loading on its domain's dimension): a domain scope uses its own
dimension, a benchmark scope the dimension of its domain when all its items share one, and the ``"all"``
scope (or a benchmark spread over several domains) the mean over dimensions; ``ability_dim`` forces one
dimension everywhere. The default range pools every dimension (each is standardised to mean 0, sd 1).
Top subjects for saturation are chosen by the scope's ability.

Responses under several conditions are averaged per (subject, item) for raw and re-weighted accuracy.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from tqdm.auto import tqdm

from irtbayes.audit.coverage import DEFAULT_MIN_ITEMS, CoverageDraws, bin_codes, count_items, coverage_table
from irtbayes.audit.deconvolve import deconvolved_locations, prior_draws
from irtbayes.audit.gaps import GapDraws, GapLocation, edge_gaps, gap_location, gap_parts
from irtbayes.audit.information import DEFAULT_GRID_POINTS, curves_by_blocks, item_blocks, theta_grid
from irtbayes.audit.mismatch import ddm_shape_tv, ddm_shape_w1, ddm_tv, ddm_w1_from_shape
from irtbayes.audit.ranking import (
    DEFAULT_GROUP_THRESHOLD,
    DEFAULT_TOP_K,
    MAX_AHEAD_SUBJECTS,
    ahead_probability,
    draw_ranks,
    ranked_groups,
    reweighted_accuracy,
    saturation,
    unrepresented_mass,
)
from irtbayes.audit.targets import (
    DEFAULT_BINS,
    RANGE_PROBS,
    RANGE_ROUND,
    RANGE_WIDEN,
    Target,
    check_range_holds_subjects,
    default_range,
    group_target,
    read_target,
    uniform_target,
    weights_target,
)
from irtbayes.data import ResponseData, json_ready
from irtbayes.errors import FitError, SpecError
from irtbayes.summaries import check_ci_prob, summarize

__all__ = ["DEFAULT_MAX_DRAWS", "AuditResult", "audit", "fit_identity", "rank_interval"]

log = logging.getLogger(__name__)

#: Default cap on the draws used for the leaderboard.
DEFAULT_MAX_DRAWS = 1000
#: Default cap on the draws used for the information curves.
DEFAULT_INFORMATION_DRAWS = 200
#: About this many array elements per chunk of draws.
CHUNK_ELEMENTS = 1 << 21
SAMPLE_DIMS = ("chain", "draw")
#: Edge gaps are also reported for [L + margin, U - margin]: the default range's widening on each side.
EDGE_GAP_MARGIN = RANGE_WIDEN
#: What each DDM column measures (recorded in the settings and summary.json; formulas in irtbayes.audit.mismatch).
DDM_DEFINITIONS = {
    "ddm_w1": "headline: share of items outside [L, U] + share inside x W1(in-range items, target) / (U - L)",
    "ddm_tv": "total variation over the bins plus a below-L and an above-U bin of target mass 0",
    "ddm_shape_w1": "in-range shape: W1(items inside [L, U], target) / (U - L); items outside ignored",
    "ddm_shape_tv": "in-range shape: total variation between the in-range bin shares and the target",
}
#: How the edge gaps move with the range (derivation in irtbayes.audit.gaps).
EDGE_GAP_RULE = (
    "moving L down (U up) by d adds exactly d to the low (high) edge gap in every draw with no item in the added "
    "stretch: derivative 1 per unit of widening; the *_inner columns are the edge gaps of "
    f"[L + {EDGE_GAP_MARGIN:g}, U - {EDGE_GAP_MARGIN:g}]"
)
STAT_NAMES = ("mean", "sd", "ci_low", "ci_high")


# ============================================================================================ posterior
@dataclass(frozen=True)
class _Draws:
    """Posterior draws as (sample, item) / (sample, subject[, dim]) arrays in the data's order."""

    difficulty: np.ndarray
    discrimination: np.ndarray | None
    guessing: np.ndarray | None
    ability: np.ndarray  # (sample, subject, dim) — dim 1 for a one-dimensional fit
    dims: list[str]  # coordinate labels of the ability dimensions ([] when one-dimensional)
    n_chains: int
    n_draws: int


def _posterior_dataset(obj: Any) -> xr.Dataset:
    if isinstance(obj, xr.DataTree):
        if "posterior" in obj.children:
            return obj["posterior"].to_dataset()
        ds = obj.to_dataset()
        if "difficulty" in ds.data_vars:
            return ds
        raise FitError(f"the DataTree has no 'posterior' group (groups: {sorted(obj.children)})")
    if isinstance(obj, xr.Dataset):
        return obj
    inner = getattr(obj, "posterior", None)
    if inner is not None and inner is not obj:
        return _posterior_dataset(inner)
    raise FitError(f"expected a posterior (xarray DataTree or Dataset), got {type(obj).__name__}")


def _recorded_checksum(obj: Any, posterior: xr.Dataset) -> str | None:
    """The data checksum a fit recorded (on a Fit, its DataTree or the posterior), if any."""
    direct = getattr(obj, "data_checksum", None)
    if isinstance(direct, str) and direct:
        return direct
    tree = getattr(obj, "idata", obj)
    for attrs in (getattr(tree, "attrs", None) or {}, posterior.attrs):
        value = attrs.get("data_checksum")
        if value:
            return str(value)
    return None


def _aligned(var: xr.DataArray, *, dim: str, ids: pd.Index, name: str) -> xr.DataArray:
    """``var`` reordered along ``dim`` to ``ids``; a different set of ids is a fit from other data."""
    if dim not in var.dims:
        raise FitError(f"posterior variable '{name}' has no '{dim}' dimension (dims {list(var.dims)})")
    have = pd.Index(np.asarray(var[dim].to_numpy()).astype(str))
    want = pd.Index(ids.astype(str))
    missing, extra = want.difference(have), have.difference(want)
    if len(missing) or len(extra) or len(have) != len(want):
        raise FitError(
            f"the posterior's {dim} ids do not match the data's: {len(missing)} {dim}(s) in the data are not in "
            f"'{name}' (e.g. {list(missing[:3])}), {len(extra)} in '{name}' are not in the data "
            f"(e.g. {list(extra[:3])}); this looks like a fit from a different data set"
        )
    position = have.get_indexer(want)
    return var.isel({dim: position})


def _stacked(var: xr.DataArray, name: str, *, keep: Sequence[str]) -> np.ndarray:
    missing = [d for d in SAMPLE_DIMS if d not in var.dims]
    if missing:
        raise FitError(f"posterior variable '{name}' lacks the sample dimension(s) {missing} (dims {list(var.dims)})")
    arr = var.transpose(*SAMPLE_DIMS, *keep).to_numpy().astype("float64", copy=False)
    arr = arr.reshape((-1, *arr.shape[2:]))
    if not np.all(np.isfinite(arr)):
        raise FitError(f"posterior variable '{name}' holds non-finite draws (NaN or inf); the fit is broken")
    return arr


def _extract(posterior: xr.Dataset, data: ResponseData) -> _Draws:
    if "difficulty" not in posterior.data_vars:
        raise FitError(f"the posterior has no 'difficulty' (variables: {sorted(map(str, posterior.data_vars))})")
    if "ability" not in posterior.data_vars:
        raise FitError(f"the posterior has no 'ability' (variables: {sorted(map(str, posterior.data_vars))})")
    item_vars: dict[str, np.ndarray | None] = {}
    for name in ("difficulty", "discrimination", "guessing"):
        if name not in posterior.data_vars:
            item_vars[name] = None
            continue
        var = _aligned(posterior[name], dim="item", ids=data.item_ids, name=name)
        extra = [str(d) for d in var.dims if d not in (*SAMPLE_DIMS, "item")]
        if name == "discrimination" and len(extra) == 1:
            var = ((var**2).sum(extra[0])) ** 0.5  # multidimensional: Reckase's MDISC
        elif extra:
            raise FitError(f"posterior variable '{name}' has unexpected dimension(s) {extra}")
        item_vars[name] = _stacked(var, name, keep=("item",))
    ability = _aligned(posterior["ability"], dim="subject", ids=data.subject_ids, name="ability")
    extra = [str(d) for d in ability.dims if d not in (*SAMPLE_DIMS, "subject")]
    if len(extra) > 1:
        raise FitError(f"posterior variable 'ability' has more than one extra dimension: {extra}")
    dims: list[str] = []
    if extra:
        dims = [str(v) for v in ability[extra[0]].to_numpy()]
        ability_arr = _stacked(ability, "ability", keep=("subject", extra[0]))
    else:
        ability_arr = _stacked(ability, "ability", keep=("subject",))[:, :, None]
    difficulty = item_vars["difficulty"]
    assert difficulty is not None
    return _Draws(
        difficulty=difficulty,
        discrimination=item_vars["discrimination"],
        guessing=item_vars["guessing"],
        ability=ability_arr,
        dims=dims if len(dims) > 1 else [],
        n_chains=int(posterior.sizes["chain"]),
        n_draws=int(posterior.sizes["draw"]),
    )


# ============================================================================================ scopes
@dataclass
class _Scope:
    kind: str
    name: str
    items: np.ndarray  # item positions
    subjects: np.ndarray  # subject positions with a response to the scope's items
    ability: np.ndarray  # (sample, subject) — the scope's ability, all subjects
    responses: np.ndarray  # (scope subject, scope item), NaN where missing
    # per-draw results, filled in as chunks are processed
    counts: list[np.ndarray] = field(default_factory=list)
    shape_w1: list[np.ndarray] = field(default_factory=list)
    gap_width: list[np.ndarray] = field(default_factory=list)
    gap_lo: list[np.ndarray] = field(default_factory=list)
    gap_hi: list[np.ndarray] = field(default_factory=list)
    gap_edge: list[np.ndarray] = field(default_factory=list)
    interior_gap: list[np.ndarray] = field(default_factory=list)
    edge_gap_low: list[np.ndarray] = field(default_factory=list)
    edge_gap_high: list[np.ndarray] = field(default_factory=list)
    edge_gap_low_inner: list[np.ndarray] = field(default_factory=list)
    edge_gap_high_inner: list[np.ndarray] = field(default_factory=list)
    racc: list[np.ndarray] = field(default_factory=list)
    ranks: list[np.ndarray] = field(default_factory=list)
    ability_ranks: list[np.ndarray] = field(default_factory=list)


def _scope_ability(
    draws: _Draws, data: ResponseData, kind: str, name: str, items: np.ndarray, ability_dim: str | None
) -> np.ndarray:
    if not draws.dims:
        return draws.ability[:, :, 0]
    if ability_dim is not None:
        return draws.ability[:, :, draws.dims.index(ability_dim)]
    label = None
    if kind == "domain":
        label = name
    elif kind == "benchmark":
        domains = data.items["domain"].iloc[items].dropna().unique()
        label = str(domains[0]) if len(domains) == 1 else None
    if label is not None and label in draws.dims:
        return draws.ability[:, :, draws.dims.index(label)]
    return draws.ability.mean(axis=2)


def _response_matrix(data: ResponseData) -> np.ndarray:
    frame = data.responses
    if "condition" in frame.columns and frame.duplicated(["subject", "item"]).any():
        log.info("%s: responses under several conditions are averaged per (subject, item)", data.source)
        frame = frame.groupby(["subject", "item"], observed=True, as_index=False)["response"].mean()
    matrix = np.full((data.n_subjects, data.n_items), np.nan)
    matrix[frame["subject"].cat.codes.to_numpy(), frame["item"].cat.codes.to_numpy()] = frame["response"].to_numpy()
    return matrix


def _scopes(data: ResponseData, draws: _Draws, matrix: np.ndarray, ability_dim: str | None) -> list[_Scope]:
    specs: list[tuple[str, str, np.ndarray]] = [("all", "all", np.arange(data.n_items))]
    for kind, column, labels in (("benchmark", "benchmark", data.benchmarks), ("domain", "domain", data.domains)):
        values = data.items[column]
        for label in labels:
            specs.append((kind, str(label), np.flatnonzero(values.eq(label).fillna(False).to_numpy(dtype=bool))))
    out = []
    for kind, name, items in specs:
        sub = matrix[:, items]
        subjects = np.flatnonzero((~np.isnan(sub)).any(axis=1))
        out.append(
            _Scope(
                kind=kind,
                name=name,
                items=items,
                subjects=subjects,
                ability=_scope_ability(draws, data, kind, name, items, ability_dim),
                responses=sub[subjects],
            )
        )
    return out


# ============================================================================================ target
def _resolve_target(
    target: Any,
    *,
    bins: int | Sequence[float] | None,
    target_range: Sequence[float] | None,
    group: Sequence[str] | None,
    ability: np.ndarray,
    data: ResponseData,
) -> tuple[Target, str]:
    """The target, and a sentence saying how its range was chosen."""
    if target_range is not None:
        if isinstance(target_range, (str, bytes)) or len(target_range) != 2:
            raise SpecError(f"range must be two numbers (L, U), got {target_range!r}")
        lo, hi = float(target_range[0]), float(target_range[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the target range needs finite L < U, got L = {lo:g} and U = {hi:g}")
        range_rule = f"given: [{lo:g}, {hi:g}]"
    elif bins is not None and not isinstance(bins, (int, np.integer)):
        edges = np.asarray(bins, dtype="float64")
        lo, hi = float(edges[0]), float(edges[-1])
        range_rule = f"the given bin edges: [{lo:g}, {hi:g}]"
    else:
        lo, hi = default_range(ability)
        range_rule = (
            f"default: the pooled posterior {RANGE_PROBS[0]:.1%}-{RANGE_PROBS[1]:.1%} quantiles of the subjects' "
            f"abilities, widened by {RANGE_WIDEN:g} on each side and rounded outward to {RANGE_ROUND:g}: [{lo:g}, {hi:g}]"
        )

    if group is not None:
        if target is not None:
            raise SpecError("give either target= or group=, not both")
        names = [group] if isinstance(group, str) else [str(g) for g in group]
        if not names:
            raise SpecError("group= names no subject")
        unknown = [g for g in names if g not in set(data.subject_ids)]
        if unknown:
            raise SpecError(f"group= names unknown subject(s) {unknown[:5]}; known: {list(data.subject_ids[:10])}")
        positions = data.subject_ids.get_indexer(names)
        return group_target(
            ability[:, positions], lo=lo, hi=hi, bins=DEFAULT_BINS if bins is None else bins, names=names
        ), range_rule

    if isinstance(target, Target):
        if target_range is not None or bins is not None:
            raise SpecError("a Target carries its own range and bins; do not also give range= or bins=")
        return target, f"from the target: [{target.lo:g}, {target.hi:g}]"
    if target is None or (isinstance(target, str) and target.strip().lower() == "uniform"):
        return uniform_target(lo, hi, bins=DEFAULT_BINS if bins is None else bins), range_rule
    if isinstance(target, (str, os.PathLike)):
        if target_range is not None or bins is not None:
            raise SpecError("a target file carries its own range and bins; do not also give range= or bins=")
        loaded = read_target(target)
        return loaded, f"from the target file: [{loaded.lo:g}, {loaded.hi:g}]"
    if isinstance(target, (Sequence, np.ndarray)):
        return weights_target(list(target), lo=lo, hi=hi, bins=bins), range_rule
    raise SpecError(
        f"target must be None, 'uniform', a Target, a CSV path or a list of weights, got {type(target).__name__}"
    )


# ============================================================================================ helpers
def _chunks(n_draws: int, per_draw: int) -> Iterator[slice]:
    size = max(1, CHUNK_ELEMENTS // max(per_draw, 1))
    for start in range(0, n_draws, size):
        yield slice(start, min(start + size, n_draws))


def _stats(values: np.ndarray, prefix: str, ci_prob: float) -> dict[str, float]:
    s = summarize(values, ci_prob=ci_prob)
    return {f"{prefix}_{k}": float(v) for k, v in s.items()}


def _thin(n_samples: int, max_draws: int | None) -> np.ndarray:
    if max_draws is None or n_samples <= max_draws:
        return np.arange(n_samples)
    return np.unique(np.linspace(0, n_samples - 1, max_draws).round().astype(np.int64))


def rank_interval(ranks: np.ndarray, *, ci_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """The equal-tailed rank interval of each subject: the one quantile rule for ranks.

    Ranks are whole numbers, so the interval's ends are ranks that occur: the lower end rounds down
    (``method="lower"``) and the upper end rounds up (``method="higher"``), and the interval holds at least
    ``ci_prob`` of the draws.

    Parameters
    ----------
    ranks
        (draw, subject) ranks, 1 = best.
    ci_prob
        Probability of the interval.

    Returns
    -------
    (low, high)
        Two (subject,) int64 arrays.
    """
    q_low, q_high = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    low = np.quantile(ranks, q_low, axis=0, method="lower")
    high = np.quantile(ranks, q_high, axis=0, method="higher")
    return low.astype(np.int64), high.astype(np.int64)


def _half_max_region(theta: np.ndarray, curve: np.ndarray) -> tuple[float, float]:
    if not np.any(np.isfinite(curve)) or np.nanmax(curve) <= 0:
        return math.nan, math.nan
    above = np.flatnonzero(curve >= np.nanmax(curve) / 2)
    return float(theta[above[0]]), float(theta[above[-1]])


def _check_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise SpecError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


# ============================================================================================ result
@dataclass(frozen=True)
class AuditResult:
    """Tables of an audit (see :func:`audit` for their columns), the target, and the settings used.

    Every table's ``attrs`` record ``ci_prob`` and the target (``target.to_dict()``).
    """

    bins: pd.DataFrame
    benchmarks: pd.DataFrame
    ranking: pd.DataFrame
    ahead: pd.DataFrame
    information: pd.DataFrame
    items: pd.DataFrame
    target: Target
    ci_prob: float
    settings: dict[str, Any]

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by file stem."""
        return {
            "bins": self.bins,
            "benchmarks": self.benchmarks,
            "ranking": self.ranking,
            "ahead": self.ahead,
            "information": self.information,
            "items": self.items,
        }

    def summary_dict(self) -> dict[str, Any]:
        """The content of ``summary.json``: target, settings and, per scope, DDM and Maximum Gap with intervals."""

        def stat(row: pd.Series, prefix: str) -> dict[str, Any]:
            return {k: row[f"{prefix}_{k}"] for k in STAT_NAMES}

        def entry(row: pd.Series) -> dict[str, Any]:
            k = int(row["gap_modal_bin"])
            return {
                "n_items": int(row["n_items"]),
                "n_subjects": int(row["n_subjects"]),
                "ddm": {**stat(row, "ddm_w1"), "metric": DDM_DEFINITIONS["ddm_w1"]},
                "ddm_tv": {**stat(row, "ddm_tv"), "metric": DDM_DEFINITIONS["ddm_tv"]},
                "ddm_shape_w1": {**stat(row, "ddm_shape_w1"), "metric": DDM_DEFINITIONS["ddm_shape_w1"]},
                "ddm_shape_tv": {**stat(row, "ddm_shape_tv"), "metric": DDM_DEFINITIONS["ddm_shape_tv"]},
                "max_gap": {
                    **stat(row, "max_gap"),
                    "interval": [row["gap_lo"], row["gap_hi"]],
                    "modal_bin": k,
                    "modal_bin_range": [self.target.edges[k], self.target.edges[k + 1]],
                    "p_modal_bin": row["gap_p_modal_bin"],
                    "interval_all_draws": [row["gap_lo_all_draws"], row["gap_hi_all_draws"]],
                    "kind": row["gap_kind"],
                    "p_edge_low": row["gap_p_edge_low"],
                    "p_edge_high": row["gap_p_edge_high"],
                },
                "interior_gap": stat(row, "interior_gap"),
                "edge_gap_low": {**stat(row, "edge_gap_low"), "inner": stat(row, "edge_gap_low_inner")},
                "edge_gap_high": {**stat(row, "edge_gap_high"), "inner": stat(row, "edge_gap_high_inner")},
                "mass_below": stat(row, "mass_below"),
                "mass_above": stat(row, "mass_above"),
                "empty_bins": stat(row, "empty_bins"),
                "unrepresented_target_mass": stat(row, "unrepresented"),
                "saturation": {
                    "top_k": int(row["top_k"]),
                    "saturated_share": row["saturated_share"],
                    "unseparating_share": row["unseparating_share"],
                },
            }

        table = self.benchmarks
        out: dict[str, Any] = {
            "partial": bool(self.settings.get("partial", False)),  # the draws of an interrupted fit
            "converged": self.settings.get("converged"),  # the fit's convergence checks; None: not recorded
            "approximate": bool(self.settings.get("approximate", False)),
            "ci_prob": self.ci_prob,
            "range": [self.target.lo, self.target.hi],
            "bins": self.target.n_bins,
            "edges": list(self.target.edges),
            "target_weights": list(self.target.weights),
            "target": self.target.to_dict(),
            "settings": self.settings,
        }
        for kind, key in (("all", "overall"), ("benchmark", "benchmarks"), ("domain", "domains")):
            rows = table.loc[table["scope_kind"] == kind]
            if kind == "all":
                out[key] = entry(rows.iloc[0])
            else:
                out[key] = {str(r["scope"]): entry(r) for _, r in rows.iterrows()}
        return _json_clean(out)

    def to_text(self, *, max_subjects: int = 15) -> str:
        """A compact human summary: one table of the scopes, a sentence per scope, the top of the leaderboard."""
        t = self.target
        pct = f"{self.ci_prob:.0%}"
        s = self.settings
        lines = [
            f"Audit of {s.get('source', '<data>')}: target {t.description}.",
            f"Range [{t.lo:g}, {t.hi:g}] ({s.get('range_rule', '')}); {t.n_bins} bins; {pct} credible intervals; "
            f"{s['n_samples']} posterior draws ({s['n_samples_ranking']} for the leaderboard and information).",
            "",
        ]
        table = self.benchmarks
        shown = pd.DataFrame(
            {
                "scope": [
                    f"{k}:{n}" if k != "all" else "all"
                    for k, n in zip(table["scope_kind"], table["scope"], strict=True)
                ],
                "items": table["n_items"],
                "DDM": [_fmt_ci(r, "ddm_w1") for _, r in table.iterrows()],
                "DDM_TV": [_fmt_ci(r, "ddm_tv") for _, r in table.iterrows()],
                "shape_W1": [_fmt_ci(r, "ddm_shape_w1") for _, r in table.iterrows()],
                "max_gap": [_fmt_ci(r, "max_gap") for _, r in table.iterrows()],
                "gap_at": [
                    f"[{r['gap_lo']:.2f}, {r['gap_hi']:.2f}] P={r['gap_p_modal_bin']:.2f} {r['gap_kind']}"
                    for _, r in table.iterrows()
                ],
                "interior_gap": [_fmt_ci(r, "interior_gap") for _, r in table.iterrows()],
                "edge_L": [_fmt_ci(r, "edge_gap_low") for _, r in table.iterrows()],
                "edge_U": [_fmt_ci(r, "edge_gap_high") for _, r in table.iterrows()],
                "below": [f"{v:.0%}" for v in table["mass_below_mean"]],
                "above": [f"{v:.0%}" for v in table["mass_above_mean"]],
            }
        )
        with pd.option_context("display.width", 200, "display.max_colwidth", 40, "display.max_rows", 200):
            lines.append(shown.to_string(index=False))
        lines.append("")
        bins = self.bins
        for _, r in table.iterrows():
            scope_bins = bins.loc[(bins["scope_kind"] == r["scope_kind"]) & (bins["scope"] == r["scope"])]
            likely_empty = int((scope_bins["p_empty"] >= 0.5).sum())
            k = int(r["gap_modal_bin"])
            lines.append(
                f"{r['scope'] if r['scope_kind'] != 'all' else 'All items'}: the widest gap is {_fmt_ci(r, 'max_gap')} "
                f"logits wide; in {r['gap_p_modal_bin']:.0%} of draws it lies in bin {k} {t.bin_label(k)}, on average "
                f"[{r['gap_lo']:.2f}, {r['gap_hi']:.2f}] ({_gap_kind_text(r)}). "
                f"Between two items the widest gap is {_fmt_ci(r, 'interior_gap')}; the edge gaps are "
                f"{_fmt_ci(r, 'edge_gap_low')} at L and {_fmt_ci(r, 'edge_gap_high')} at U. "
                f"DDM {_fmt_ci(r, 'ddm_w1')} (in-range shape {_fmt_ci(r, 'ddm_shape_w1')}). "
                f"{r['mass_below_mean']:.0%} of items lie below the range and {r['mass_above_mean']:.0%} above; "
                f"{likely_empty} of {t.n_bins} bins are more likely empty than not."
            )
        ranking = self.ranking.loc[self.ranking["scope_kind"] == "all"].sort_values("rank_mean")
        if len(ranking):
            lines += [
                "",
                f"Re-weighted leaderboard (all items; top {min(max_subjects, len(ranking))} of {len(ranking)}):",
            ]
            top = ranking.head(max_subjects)
            board = pd.DataFrame(
                {
                    "rank": [
                        f"{r['rank_mean']:.1f} [{r['rank_ci_low']:.0f}, {r['rank_ci_high']:.0f}]"
                        for _, r in top.iterrows()
                    ],
                    "group": top["group"].to_numpy(),
                    "subject": top["subject"].to_numpy(),
                    "reweighted": [_fmt_ci(r, "reweighted") for _, r in top.iterrows()],
                    "raw": [f"{v:.3f}" for v in top["raw_accuracy"]],
                    "raw_rank": top["raw_rank"].to_numpy(),
                }
            )
            with pd.option_context("display.width", 200, "display.max_colwidth", 40):
                lines.append(board.to_string(index=False))
        return "\n".join(lines)


def _gap_kind_text(row: pd.Series) -> str:
    kind = str(row["gap_kind"])
    share = f"the edge gap at L in {row['gap_p_edge_low']:.0%} of draws, at U in {row['gap_p_edge_high']:.0%}"
    if kind == "interior":
        return f"between two items; {share}"
    if kind == "whole range":
        return "no item inside the range"
    return f"an edge gap, set by where the range ends as much as by the items; {share}"


def _fmt_ci(row: pd.Series, prefix: str) -> str:
    return f"{row[f'{prefix}_mean']:.2f} [{row[f'{prefix}_ci_low']:.2f}, {row[f'{prefix}_ci_high']:.2f}]"


def _json_clean(obj: Any) -> Any:
    obj = json_ready(obj)
    if isinstance(obj, dict):
        return {k: _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


# ============================================================================================ audit
def audit(
    posterior: Any,
    data: ResponseData,
    *,
    target: Target | str | os.PathLike[str] | Sequence[float] | None = None,
    bins: int | Sequence[float] | None = None,
    range: Sequence[float] | None = None,
    group: Sequence[str] | None = None,
    ci_prob: float = 0.9,
    min_items: int = DEFAULT_MIN_ITEMS,
    max_draws: int | None = DEFAULT_MAX_DRAWS,
    information_draws: int | None = DEFAULT_INFORMATION_DRAWS,
    resample_items: bool = True,
    top_k: int = DEFAULT_TOP_K,
    group_threshold: float = DEFAULT_GROUP_THRESHOLD,
    grid_points: int = DEFAULT_GRID_POINTS,
    ability_dim: str | None = None,
    seed: int = 0,
    progress: bool = False,
    ensemble: str = "auto",
    fixed_items: Sequence[str] | None = None,
) -> AuditResult:
    """Audit benchmarks against a target: coverage, DDM, Maximum Gap, information, re-weighted leaderboard.

    Parameters
    ----------
    posterior
        The fit's DataTree (its ``posterior`` group is used), the posterior Dataset, or an object with a
        ``posterior`` attribute. Needs ``difficulty`` (chain, draw, item) and ``ability`` (chain, draw,
        subject[, dim]); ``discrimination`` (absent: 1) and ``guessing`` (absent: 0) are optional.
    data
        The responses the posterior was fitted to (item and subject ids must match the coords).
    target
        None or ``"uniform"`` (default), a :class:`~irtbayes.audit.targets.Target`, a CSV path
        (:func:`~irtbayes.audit.targets.read_target`), or a list of weights per bin.
    bins
        Number of bins K (default 10) or explicit edges.
    range
        (L, U); default from the subjects' abilities (see :mod:`irtbayes.audit.targets`).
    group
        Subject ids whose pooled ability distribution is the target (instead of ``target``).
    ci_prob
        Probability of the equal-tailed credible intervals.
    min_items
        m in P(bin holds fewer than m items).
    max_draws
        At most this many draws (evenly spaced) for the leaderboard; None: all.
    information_draws
        At most this many draws (evenly spaced) for the information curves; None: all.
    resample_items
        Bayesian bootstrap over items in the re-weighted accuracy (see :mod:`irtbayes.audit.ranking`).
    top_k, group_threshold
        Saturation's top subjects; P(ahead) that separates leaderboard groups.
    grid_points
        Points of the information grid over [L, U].
    ability_dim
        Multidimensional fits: use this ability dimension everywhere.
    seed
        Seed of the Bayesian bootstrap and of the deconvolved locations.
    progress
        Show a progress bar over chunks of draws.
    ensemble
        Item locations for the measures of the whole set of difficulties (coverage, DDM, Maximum Gap):
        ``"deconvolved"`` draws them under each benchmark's estimated difficulty distribution
        (:mod:`irtbayes.audit.deconvolve`), which removes the normal prior's pull toward "no gaps";
        ``"draws"`` uses the fit's difficulty draws as they are; ``"auto"`` (default) deconvolves when the
        posterior holds the hierarchy's hyperparameters (``difficulty_sd`` and the item's prior mean), else
        uses the draws. ``settings["ensemble"]`` records the choice.
    fixed_items
        Items whose draws enter the ensemble measures as they are, even when deconvolving (items whose
        prior is not the bank's, such as BenchFill's added candidates).

    Returns
    -------
    AuditResult
        ``bins``: one row per (scope, bin): ``scope_kind``, ``scope``, ``bin`` (0-based), ``lo``, ``hi``,
        ``target_weight``, ``count_{mean,sd,ci_low,ci_high}``, ``share_{...}`` (of all the scope's items),
        ``share_in_range_{...}``, ``p_empty``, ``p_fewer_than_m``, ``p_widest_gap_here``.
        ``benchmarks``: one row per scope: ``scope_kind``, ``scope``, ``n_items``, ``n_subjects``,
        ``raw_accuracy``, ``{mass_below,mass_above,ddm_w1,ddm_tv,ddm_shape_w1,ddm_shape_tv,max_gap,
        interior_gap,edge_gap_low,edge_gap_high,edge_gap_low_inner,edge_gap_high_inner,empty_bins,
        unrepresented}_{mean,sd,ci_low,ci_high}``, ``gap_lo``, ``gap_hi``, ``gap_modal_bin``,
        ``gap_p_modal_bin``, ``gap_lo_all_draws``, ``gap_hi_all_draws``, ``gap_kind``, ``gap_p_edge_low``,
        ``gap_p_edge_high``, ``top_k``, ``saturated_share``, ``unseparating_share``, ``info_peak_theta``,
        ``moves_lo``, ``moves_hi``. ``ddm_w1`` and ``ddm_tv`` are the headline DDM over all the scope's items
        (items outside [L, U] count, see :mod:`irtbayes.audit.mismatch`); ``ddm_shape_*`` compare only the
        items inside [L, U] with the target. ``max_gap`` is the Maximum Gap, ``interior_gap`` the widest gap
        between two items inside the range, ``edge_gap_low``/``edge_gap_high`` the gaps at L and U and
        ``*_inner`` the same for [L + 0.5, U - 0.5] (NaN when U - L <= 1; see :mod:`irtbayes.audit.gaps`).
        ``ranking``: one row per (scope, subject): ``scope_kind``, ``scope``, ``subject``, ``n_responses``,
        ``raw_accuracy``, ``raw_rank``, ``reweighted_{mean,sd,ci_low,ci_high}``, ``ability_{...}``,
        ``rank_mean``, ``rank_ci_low``, ``rank_ci_high`` (ranks under the re-weighted accuracy, ability breaking
        ties), ``ability_rank_mean``, ``ability_rank_ci_low``, ``ability_rank_ci_high`` (ranks by the scope's
        ability), ``group``; both rank intervals follow :func:`rank_interval` over the leaderboard's draws.
        ``ahead``: P(row subject ahead of column subject) over all items, subjects by mean rank; the first
        :data:`~irtbayes.audit.ranking.MAX_AHEAD_SUBJECTS` (200) subjects when there are more (``ranking``
        holds every subject).
        ``information``: one row per (scope, theta): ``scope_kind``, ``scope``, ``theta``,
        ``{info,se,score,slope}_{mean,sd,ci_low,ci_high}``.
        ``items``: one row per item: ``item``, ``benchmark``, ``domain``, ``difficulty_{...}``, ``p_below``,
        ``p_above``, ``modal_bin``, ``p_modal_bin``, ``saturated``, ``separates_top_k``.

    Raises
    ------
    FitError
        The posterior lacks variables, holds non-finite draws, or its ids do not match ``data``.
    SpecError
        Invalid settings: K < 1, L >= U, a range holding no subject, bad weights, unknown group subjects.
    """
    started = time.perf_counter()
    if not isinstance(data, ResponseData):
        raise SpecError(f"data must be a ResponseData, got {type(data).__name__}")
    ci_prob = check_ci_prob(ci_prob)
    min_items = _check_int(min_items, "min_items", 1)
    top_k = _check_int(top_k, "top_k", 1)
    grid_points = _check_int(grid_points, "grid_points", 2)
    if max_draws is not None:
        max_draws = _check_int(max_draws, "max_draws", 1)
    if information_draws is not None:
        information_draws = _check_int(information_draws, "information_draws", 1)
    if not 0.5 < float(group_threshold) <= 1:
        raise SpecError(f"group_threshold must be in (0.5, 1], got {group_threshold!r}")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool) and bins < 1:
        raise SpecError(f"the number of bins must be at least 1, got {bins}")

    post = _posterior_dataset(posterior)
    recorded = _recorded_checksum(posterior, post)
    if recorded is not None and recorded != data.checksum():
        raise FitError(
            f"the posterior records data checksum {recorded[:12]}... but {data.source} has {data.checksum()[:12]}...; "
            "this looks like a fit from a different data set"
        )
    draws = _extract(post, data)
    if ability_dim is not None and ability_dim not in draws.dims:
        raise SpecError(
            f"ability_dim={ability_dim!r} is not an ability dimension of the fit ({draws.dims or 'one-dimensional'})"
        )
    matrix = _response_matrix(data)
    scopes = _scopes(data, draws, matrix, ability_dim)
    overall_ability = scopes[0].ability  # the "all" scope's ability (see the module docstring)
    range_ability = draws.ability if ability_dim is None else overall_ability
    tgt, range_rule = _resolve_target(
        target, bins=bins, target_range=range, group=group, ability=range_ability, data=data
    )
    check_range_holds_subjects(tgt, overall_ability.mean(axis=0), list(data.subject_ids))
    edges, weights, n_bins = tgt.edges_array, tgt.weights_array, tgt.n_bins
    n_samples, n_items = draws.difficulty.shape
    # edge gaps are reported again for the range without the default's margin (see irtbayes.audit.gaps)
    inner_range = (
        (tgt.lo + EDGE_GAP_MARGIN, tgt.hi - EDGE_GAP_MARGIN) if tgt.hi - tgt.lo > 2 * EDGE_GAP_MARGIN else None
    )
    chunks = list(_chunks(n_samples, n_items))
    locations, ensemble_used, smoothing = _ensemble_locations(
        post, data, draws.difficulty, ensemble=ensemble, fixed_items=fixed_items, chunks=chunks, seed=seed
    )
    t_ensemble = time.perf_counter() - started

    # ---- coverage, DDM, gaps: every draw
    item_codes = np.zeros((n_items, n_bins + 2), dtype=np.int64)
    for sl in tqdm(chunks, desc="audit: coverage and gaps", disable=not progress):
        own = bin_codes(draws.difficulty[sl], edges)  # each item's own difficulty: the fit's draws
        flat = (np.arange(n_items, dtype=np.int64)[None, :] * (n_bins + 2) + own).ravel()
        item_codes += np.bincount(flat, minlength=n_items * (n_bins + 2)).reshape(n_items, n_bins + 2)
        block = locations[sl]
        codes = own if locations is draws.difficulty else bin_codes(block, edges)
        for scope in scopes:
            # single-precision sort (twice as fast); W1 and the gap move by < 1e-6 logits
            x = np.sort(block[:, scope.items].astype(np.float32), axis=1)
            scope.counts.append(count_items(codes[:, scope.items], n_bins))
            scope.shape_w1.append(ddm_shape_w1(x, edges, weights, presorted=True))
            parts = gap_parts(x, tgt.lo, tgt.hi, presorted=True)
            scope.gap_width.append(parts.widest.width)
            scope.gap_lo.append(parts.widest.lo)
            scope.gap_hi.append(parts.widest.hi)
            scope.gap_edge.append(parts.widest.edge)
            scope.interior_gap.append(parts.interior)
            scope.edge_gap_low.append(parts.edge_low)
            scope.edge_gap_high.append(parts.edge_high)
            if inner_range is not None:
                low, high = edge_gaps(x, *inner_range, presorted=True)
                scope.edge_gap_low_inner.append(low)
                scope.edge_gap_high_inner.append(high)
    t_coverage = time.perf_counter() - started

    # ---- leaderboard and information: thinned draws
    keep = _thin(n_samples, max_draws)
    rng = np.random.default_rng(seed)
    theta = theta_grid(tgt.lo, tgt.hi, points=grid_points)
    membership = np.zeros((n_items, len(scopes)))
    for j, scope in enumerate(scopes):
        membership[scope.items, j] = 1.0
    for sl in tqdm(list(_chunks(len(keep), n_items)), desc="audit: leaderboard", disable=not progress):
        rows = keep[sl]
        codes = bin_codes(draws.difficulty[rows], edges)
        g = rng.standard_exponential(codes.shape) if resample_items else None
        for scope in scopes:
            racc = reweighted_accuracy(
                codes[:, scope.items],
                scope.responses,
                weights,
                item_weights=None if g is None else g[:, scope.items],
            )
            scope.racc.append(racc)
            scope.ranks.append(draw_ranks(racc, tiebreak=scope.ability[rows][:, scope.subjects]))
            scope.ability_ranks.append(draw_ranks(scope.ability[rows][:, scope.subjects]))
    t_ranking = time.perf_counter() - started - t_coverage

    curves: dict[str, list[np.ndarray]] = {"info": [], "se": [], "score": [], "slope": []}
    keep_info = _thin(n_samples, information_draws)
    blocks = item_blocks(membership)
    for sl in tqdm(
        list(_chunks(len(keep_info), n_items * grid_points)), desc="audit: information", disable=not progress
    ):
        rows = keep_info[sl]
        out = curves_by_blocks(
            theta,
            draws.difficulty[rows],
            None if draws.discrimination is None else draws.discrimination[rows],
            None if draws.guessing is None else draws.guessing[rows],
            blocks=blocks,
        )
        for key in curves:
            curves[key].append(out[key])
    curve_draws = {k: np.concatenate(v, axis=0) for k, v in curves.items()}  # (sample, grid, scope)
    t_information = time.perf_counter() - started - t_coverage - t_ranking

    # ---- tables
    bins_rows, bench_rows, rank_rows, info_rows = [], [], [], []
    saturation_by_scope: dict[tuple[str, str], dict[str, np.ndarray]] = {}
    ahead_frame = pd.DataFrame()
    for j, scope in enumerate(scopes):
        cov = CoverageDraws.from_counts(np.concatenate(scope.counts, axis=0), len(scope.items))
        gaps = GapDraws(
            width=np.concatenate(scope.gap_width),
            lo=np.concatenate(scope.gap_lo),
            hi=np.concatenate(scope.gap_hi),
            edge=np.concatenate(scope.gap_edge),
        )
        where = gap_location(gaps, edges)
        shape_w1 = np.concatenate(scope.shape_w1)
        w1 = ddm_w1_from_shape(shape_w1, in_range=cov.in_range, n_items=cov.n_items)
        tv = ddm_tv(cov.counts, weights, below=cov.below, above=cov.above)
        shape_tv = ddm_shape_tv(cov.counts, weights)
        unrep = unrepresented_mass(cov.counts, weights)

        table = coverage_table(cov, edges=edges, target_weights=weights, ci_prob=ci_prob, min_items=min_items)
        table.insert(0, "scope", scope.name)
        table.insert(0, "scope_kind", scope.kind)
        table["p_widest_gap_here"] = where.p_bins
        bins_rows.append(table)

        # leaderboard
        racc = np.concatenate(scope.racc, axis=0)
        ranks = np.concatenate(scope.ranks, axis=0)
        subj_ids = data.subject_ids[scope.subjects].astype(str)
        ability = scope.ability[:, scope.subjects]
        ability_mean = ability.mean(axis=0)
        n_top = min(top_k, len(scope.subjects))
        top = np.argsort(-ability_mean, kind="stable")[:n_top]
        sat = saturation(scope.responses, top)
        saturation_by_scope[(scope.kind, scope.name)] = {k: v for k, v in sat.items()} | {"items": scope.items}
        n_answered = max(int(sat["answered"].sum()), 1)
        mean_rank = ranks.mean(axis=0)
        groups = ranked_groups(ranks, threshold=float(group_threshold))
        raw = np.nanmean(scope.responses, axis=1)
        rk = pd.DataFrame(
            {
                "scope_kind": scope.kind,
                "scope": scope.name,
                "subject": subj_ids.to_numpy(dtype=object),
                "n_responses": (~np.isnan(scope.responses)).sum(axis=1),
                "raw_accuracy": raw,
                "raw_rank": pd.Series(raw).rank(ascending=False, method="min").to_numpy(dtype=np.int64),
            }
        )
        for prefix, values in (("reweighted", racc), ("ability", ability)):
            for k, v in summarize(values, ci_prob=ci_prob).items():
                rk[f"{prefix}_{k}"] = v
        rk["rank_mean"] = mean_rank
        rk["rank_ci_low"], rk["rank_ci_high"] = rank_interval(ranks, ci_prob=ci_prob)
        ability_ranks = np.concatenate(scope.ability_ranks, axis=0)
        rk["ability_rank_mean"] = ability_ranks.mean(axis=0)
        rk["ability_rank_ci_low"], rk["ability_rank_ci_high"] = rank_interval(ability_ranks, ci_prob=ci_prob)
        rk["group"] = groups
        rank_rows.append(rk.sort_values("rank_mean", kind="stable"))
        if scope.kind == "all":
            order = np.argsort(mean_rank, kind="stable")[:MAX_AHEAD_SUBJECTS]
            ahead_frame = pd.DataFrame(
                ahead_probability(ranks[:, order]),
                index=pd.Index(subj_ids[order], name="subject"),
                columns=pd.Index(subj_ids[order], name="behind"),
            )

        # information
        info = pd.DataFrame({"scope_kind": scope.kind, "scope": scope.name, "theta": theta})
        for key in ("info", "se", "score", "slope"):
            for k, v in summarize(curve_draws[key][:, :, j], ci_prob=ci_prob).items():
                info[f"{key}_{k}"] = v
        info_rows.append(info)
        moves_lo, moves_hi = _half_max_region(theta, info["slope_mean"].to_numpy())

        row: dict[str, Any] = {
            "scope_kind": scope.kind,
            "scope": scope.name,
            "n_items": len(scope.items),
            "n_subjects": len(scope.subjects),
            "raw_accuracy": float(np.nanmean(scope.responses)),
        }
        row |= _stats(cov.mass_below, "mass_below", ci_prob)
        row |= _stats(cov.mass_above, "mass_above", ci_prob)
        row |= _stats(w1, "ddm_w1", ci_prob)
        row |= _stats(tv, "ddm_tv", ci_prob)
        row |= _stats(shape_w1, "ddm_shape_w1", ci_prob)
        row |= _stats(shape_tv, "ddm_shape_tv", ci_prob)
        row |= _stats(gaps.width, "max_gap", ci_prob)
        row |= _gap_columns(where)
        for part in ("interior_gap", "edge_gap_low", "edge_gap_high", "edge_gap_low_inner", "edge_gap_high_inner"):
            values = getattr(scope, part)
            row |= _stats(np.concatenate(values), part, ci_prob) if values else _nan_stats(part)
        row |= _stats((cov.counts == 0).sum(axis=1), "empty_bins", ci_prob)
        row |= _stats(unrep, "unrepresented", ci_prob)
        row |= {
            "top_k": n_top,
            "saturated_share": float(sat["saturated"].sum() / n_answered),
            "unseparating_share": float((sat["answered"] & ~sat["separates"]).sum() / n_answered),
            "info_peak_theta": float(theta[int(np.nanargmax(info["info_mean"].to_numpy()))]),
            "moves_lo": moves_lo,
            "moves_hi": moves_hi,
        }
        bench_rows.append(row)

    items = _items_table(data, draws.difficulty, item_codes, n_samples, saturation_by_scope, ci_prob)
    settings = {
        "source": data.source,
        # what the audit was made from, checked when a saved audit is read back with its fit (load_audit)
        "data_checksum": data.checksum(),
        "fit_identity": _draws_identity(draws, data),
        "fit_created": _fit_created(posterior),
        "partial": bool(getattr(posterior, "partial", False) or getattr(posterior, "attrs", {}).get("partial", 0)),
        # None when the draws come without a fit's checks (a bare posterior): never read as a pass
        "converged": getattr(getattr(posterior, "diagnostics", None), "ok", None),
        "approximate": bool(getattr(posterior, "approximate", False)),
        "n_chains": draws.n_chains,
        "n_draws": draws.n_draws,
        "n_samples": n_samples,
        "n_samples_ranking": len(keep),
        "n_samples_information": len(curve_draws["info"]),
        "max_draws": max_draws,
        "information_draws": information_draws,
        "resample_items": bool(resample_items),
        "seed": int(seed),
        "group": None if group is None else ([str(group)] if isinstance(group, str) else [str(g) for g in group]),
        "n_fixed_items": 0 if fixed_items is None else len(fixed_items),
        "min_items": min_items,
        "top_k": top_k,
        "group_threshold": float(group_threshold),
        "ahead_max_subjects": MAX_AHEAD_SUBJECTS,
        "grid_points": grid_points,
        "ability_dims": draws.dims,
        "ability_dim": ability_dim,
        "range_rule": range_rule,
        "ensemble": ensemble_used,
        "deconvolution_smoothing": smoothing,
        "interval": "equal-tailed",
        "ddm_default": DDM_DEFINITIONS["ddm_w1"],
        "ddm_definitions": DDM_DEFINITIONS,
        "edge_gap_inner_range": None if inner_range is None else list(inner_range),
        "edge_gap_rule": EDGE_GAP_RULE,
    }
    tables = {
        "bins": pd.concat(bins_rows, ignore_index=True),
        "benchmarks": pd.DataFrame(bench_rows),
        "ranking": pd.concat(rank_rows, ignore_index=True),
        "ahead": ahead_frame,
        "information": pd.concat(info_rows, ignore_index=True),
        "items": items,
    }
    for frame in tables.values():
        frame.attrs.update(ci_prob=ci_prob, target=tgt.to_dict())
    total = time.perf_counter() - started
    log.info(
        "audit of %d items x %d subjects, %d draws (%d for the leaderboard), %d scopes: %.1fs "
        "(%s locations %.1fs, coverage/DDM/gaps %.1fs, leaderboard %.1fs, information %.1fs)",
        n_items,
        data.n_subjects,
        n_samples,
        len(keep),
        len(scopes),
        total,
        ensemble_used,
        t_ensemble,
        t_coverage - t_ensemble,
        t_ranking,
        t_information,
    )
    return AuditResult(target=tgt, ci_prob=ci_prob, settings=settings, **tables)


ENSEMBLES = ("auto", "deconvolved", "draws")


def _ensemble_locations(
    post: xr.Dataset,
    data: ResponseData,
    difficulty: np.ndarray,
    *,
    ensemble: str,
    fixed_items: Sequence[str] | None,
    chunks: list[slice],
    seed: int,
) -> tuple[np.ndarray, str, dict[str, float]]:
    """The item locations the ensemble measures use, the mode used, and the smoothing chosen per benchmark."""
    if ensemble not in ENSEMBLES:
        raise SpecError(f"ensemble must be one of {ENSEMBLES}, got {ensemble!r}")
    if ensemble == "draws":
        return difficulty, "draws", {}
    from irtbayes.model import UNLABELLED

    labels = [UNLABELLED if pd.isna(b) else str(b) for b in data.items["benchmark"]]
    prior = prior_draws(post, labels)
    if prior is None:
        if ensemble == "deconvolved":
            raise SpecError(
                "ensemble='deconvolved' needs the fit's difficulty prior (posterior variables 'difficulty_sd' and "
                "'difficulty_benchmark' or 'difficulty_mu'), which this posterior lacks; use ensemble='draws'"
            )
        log.info("the posterior has no difficulty hyperparameters: ensemble measures use the fit's draws")
        return difficulty, "draws", {}
    fixed = set() if fixed_items is None else {str(i) for i in fixed_items}
    unknown = sorted(fixed - set(map(str, data.item_ids)))
    if unknown:
        raise SpecError(f"fixed_items: {len(unknown)} item(s) are not in the data: {unknown[:10]}")
    keep = ~np.isin(data.item_ids.astype(str), list(fixed))
    names = sorted(set(labels))
    groups = [np.flatnonzero(keep & (np.asarray(labels) == name)) for name in names]
    locations, populations = deconvolved_locations(difficulty, prior, groups, chunks=chunks, seed=seed)
    if not populations:  # every benchmark too small (or held as it is): nothing was deconvolved
        log.info("no benchmark has enough items to deconvolve: ensemble measures use the fit's draws")
        return difficulty, "draws", {}
    smoothing = {names[g]: float(pop.smoothing) for g, pop in populations.items()}
    return locations, "deconvolved", smoothing


def _gap_columns(where: GapLocation) -> dict[str, Any]:
    return {
        "gap_lo": where.interval[0],
        "gap_hi": where.interval[1],
        "gap_modal_bin": where.modal_bin,
        "gap_p_modal_bin": where.p_modal_bin,
        "gap_lo_all_draws": where.interval_all_draws[0],
        "gap_hi_all_draws": where.interval_all_draws[1],
        "gap_kind": where.kind,
        "gap_p_edge_low": where.p_edge_low,
        "gap_p_edge_high": where.p_edge_high,
    }


def _nan_stats(prefix: str) -> dict[str, float]:
    return {f"{prefix}_{k}": math.nan for k in STAT_NAMES}


def _items_table(
    data: ResponseData,
    difficulty: np.ndarray,
    item_codes: np.ndarray,
    n_samples: int,
    saturation_by_scope: dict[tuple[str, str], dict[str, np.ndarray]],
    ci_prob: float,
) -> pd.DataFrame:
    probs = item_codes / n_samples
    inner = probs[:, 1:-1]
    table = pd.DataFrame(
        {
            "item": data.item_ids.astype(str).to_numpy(dtype=object),
            "benchmark": data.items["benchmark"].to_numpy(),
            "domain": data.items["domain"].to_numpy(),
        }
    )
    for k, v in summarize(difficulty, ci_prob=ci_prob).items():
        table[f"difficulty_{k}"] = v
    table["p_below"] = probs[:, 0]
    table["p_above"] = probs[:, -1]
    table["modal_bin"] = inner.argmax(axis=1)
    table["p_modal_bin"] = inner.max(axis=1)
    saturated = np.zeros(data.n_items, dtype=bool)
    separates = np.zeros(data.n_items, dtype=bool)
    filled = np.zeros(data.n_items, dtype=bool)
    # an item's saturation is judged among its benchmark's top subjects (all items' for unlabelled items)
    for (kind, _), sat in sorted(saturation_by_scope.items(), key=lambda kv: kv[0][0] != "benchmark"):
        if kind not in ("benchmark", "all"):
            continue
        idx = sat["items"]
        fresh = ~filled[idx]
        saturated[idx[fresh]] = sat["saturated"][fresh]
        separates[idx[fresh]] = sat["separates"][fresh]
        filled[idx] = True
    table["saturated"] = saturated
    table["separates_top_k"] = separates
    return table


# ============================================================================================ identity
def _draws_identity(draws: _Draws, data: ResponseData) -> str:
    """SHA-256 of the draws the audit reads (in the data's order) and of their ids: the fit's identity."""
    digest = hashlib.sha256()
    header = {
        "items": [str(i) for i in data.item_ids],
        "subjects": [str(j) for j in data.subject_ids],
        "dims": draws.dims,
        "chains": draws.n_chains,
        "draws": draws.n_draws,
    }
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name in ("difficulty", "discrimination", "guessing", "ability"):
        values = getattr(draws, name)
        digest.update(name.encode())
        if values is not None:
            # single precision: a saved fit may store its draws as float32 (see irtbayes.fit.save_fit)
            digest.update(np.ascontiguousarray(values, dtype="<f4").tobytes())
    return digest.hexdigest()


def _fit_created(posterior: Any) -> str | None:
    """When the fit was made (``Fit.info["created"]``), if the posterior comes with it."""
    info = getattr(posterior, "info", None)
    created = info.get("created") if isinstance(info, dict) else None
    return None if created is None else str(created)


def fit_identity(posterior: Any, data: ResponseData) -> str:
    """The identity :func:`audit` records for a fit (``settings["fit_identity"]``).

    A SHA-256 over the posterior draws of ``difficulty``, ``discrimination``, ``guessing`` and ``ability`` in
    the data's item and subject order, rounded to single precision, with the ids and the numbers of chains
    and draws: the same fit, in memory or saved (in float32 or float64) and loaded again, has the same
    identity; any other fit (other draws, seed or data) another.

    Parameters
    ----------
    posterior
        A fit, its DataTree or its posterior Dataset (as :func:`audit` takes).
    data
        The data the fit was made from.

    Returns
    -------
    str
        64 hexadecimal digits.
    """
    return _draws_identity(_extract(_posterior_dataset(posterior), data), data)
