"""The rows of an audit's tables, per scope: leaderboard, P(ahead), the benchmark row, the items table.

The one quantile rule for ranks (:func:`rank_interval`) is here; every other summary goes through
:func:`irtbayes.core.summaries.summarize`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.auditing.coverage import CoverageDraws
from irtbayes.auditing.gaps import GapDraws, GapLocation
from irtbayes.auditing.mismatch import ddm_shape_tv, ddm_tv, ddm_w1_from_shape
from irtbayes.auditing.ranking import (
    MAX_AHEAD_SUBJECTS,
    ahead_probability,
    ranked_groups,
    saturation,
    unrepresented_mass,
)
from irtbayes.auditing.recalibration import CALIBRATED, calibrated_interval
from irtbayes.auditing.result import STAT_NAMES
from irtbayes.auditing.scopes import Scope
from irtbayes.auditing.settings import AuditSettings
from irtbayes.auditing.targets import Target
from irtbayes.core.summaries import summarize
from irtbayes.data.responses import ResponseData

__all__ = ["ahead_table", "benchmark_row", "items_table", "rank_interval", "ranking_table"]


def _stats(values: np.ndarray, prefix: str, ci_prob: float) -> dict[str, float]:
    s = summarize(values, ci_prob=ci_prob)
    return {f"{prefix}_{k}": float(v) for k, v in s.items()}


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

    Examples
    --------
    Ranks are whole numbers, so the interval's ends are ranks that occur:

    >>> from irtbayes.auditing.tables import rank_interval
    >>> ranks = np.array([[1, 2], [1, 2], [2, 1], [1, 2]])  # (draw, subject)
    >>> rank_interval(ranks, ci_prob=0.5)
    (array([1, 1]), array([2, 2]))
    """
    q_low, q_high = (1 - ci_prob) / 2, (1 + ci_prob) / 2
    low = np.quantile(ranks, q_low, axis=0, method="lower")
    high = np.quantile(ranks, q_high, axis=0, method="higher")
    return low.astype(np.int64), high.astype(np.int64)


def half_max_region(theta: np.ndarray, curve: np.ndarray) -> tuple[float, float]:
    if not np.any(np.isfinite(curve)) or np.nanmax(curve) <= 0:
        return math.nan, math.nan
    above = np.flatnonzero(curve >= np.nanmax(curve) / 2)
    return float(theta[above[0]]), float(theta[above[-1]])


def ranking_table(
    scope: Scope, data: ResponseData, s: AuditSettings
) -> tuple[pd.DataFrame, dict[str, np.ndarray], int]:
    """One scope's leaderboard rows, the saturation of its items among its top subjects, and how many top."""
    racc = np.concatenate(scope.racc, axis=0)
    ranks = np.concatenate(scope.ranks, axis=0)
    subj_ids = data.subject_ids[scope.subjects].astype(str)
    ability = scope.ability[:, scope.subjects]
    n_top = min(s.top_k, len(scope.subjects))
    top = np.argsort(-ability.mean(axis=0), kind="stable")[:n_top]
    sat = saturation(scope.responses, top)
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
        for k, v in summarize(values, ci_prob=s.ci_prob).items():
            rk[f"{prefix}_{k}"] = v
    rk["rank_mean"] = ranks.mean(axis=0)
    rk["rank_ci_low"], rk["rank_ci_high"] = rank_interval(ranks, ci_prob=s.ci_prob)
    ability_ranks = np.concatenate(scope.ability_ranks, axis=0)
    rk["ability_rank_mean"] = ability_ranks.mean(axis=0)
    rk["ability_rank_ci_low"], rk["ability_rank_ci_high"] = rank_interval(ability_ranks, ci_prob=s.ci_prob)
    rk["group"] = ranked_groups(ranks, threshold=float(s.group_threshold))
    return rk, sat, n_top


def ahead_table(scope: Scope, data: ResponseData) -> pd.DataFrame:
    """P(row subject ahead of column subject), the first :data:`MAX_AHEAD_SUBJECTS` subjects by mean rank."""
    ranks = np.concatenate(scope.ranks, axis=0)
    subj_ids = data.subject_ids[scope.subjects].astype(str)
    order = np.argsort(ranks.mean(axis=0), kind="stable")[:MAX_AHEAD_SUBJECTS]
    return pd.DataFrame(
        ahead_probability(ranks[:, order]),
        index=pd.Index(subj_ids[order], name="subject"),
        columns=pd.Index(subj_ids[order], name="behind"),
    )


def benchmark_row(
    scope: Scope,
    tgt: Target,
    cov: CoverageDraws,
    gaps: GapDraws,
    where: GapLocation,
    sat: dict[str, np.ndarray],
    n_top: int,
    info: pd.DataFrame,
    ci_prob: float,
    *,
    calibrated: bool = True,
) -> dict[str, Any]:
    """One scope's row of the ``benchmarks`` table.

    With ``calibrated`` (the default), the measures of :data:`~irtbayes.auditing.recalibration.CALIBRATED`
    report their recalibrated interval as ``{m}_ci_low``/``{m}_ci_high`` and the posterior's own as
    ``{m}_posterior_ci_low``/``{m}_posterior_ci_high`` (:mod:`irtbayes.auditing.recalibration`).
    """
    width = tgt.hi - tgt.lo

    def stats(values: np.ndarray, prefix: str) -> dict[str, float]:
        out = _stats(values, prefix, ci_prob)
        if prefix in CALIBRATED:
            out[f"{prefix}_posterior_ci_low"] = out[f"{prefix}_ci_low"]
            out[f"{prefix}_posterior_ci_high"] = out[f"{prefix}_ci_high"]
            if calibrated:
                lo, hi = calibrated_interval(values, prefix, ci_prob, range_width=width)
                out[f"{prefix}_ci_low"], out[f"{prefix}_ci_high"] = lo, hi
        return out

    weights = tgt.weights_array
    shape_w1 = np.concatenate(scope.shape_w1)
    row: dict[str, Any] = {
        "scope_kind": scope.kind,
        "scope": scope.name,
        "n_items": len(scope.items),
        "n_subjects": len(scope.subjects),
        "raw_accuracy": float(np.nanmean(scope.responses)),
    }
    row |= _stats(cov.mass_below, "mass_below", ci_prob)
    row |= _stats(cov.mass_above, "mass_above", ci_prob)
    row |= stats(ddm_w1_from_shape(shape_w1, in_range=cov.in_range, n_items=cov.n_items), "ddm_w1")
    row |= stats(ddm_tv(cov.counts, weights, below=cov.below, above=cov.above), "ddm_tv")
    row |= _stats(shape_w1, "ddm_shape_w1", ci_prob)
    row |= _stats(ddm_shape_tv(cov.counts, weights), "ddm_shape_tv", ci_prob)
    row |= stats(gaps.width, "max_gap")
    row |= _gap_columns(where)
    for part in ("interior_gap", "edge_gap_low", "edge_gap_high", "edge_gap_low_inner", "edge_gap_high_inner"):
        values = getattr(scope, part)
        row |= stats(np.concatenate(values), part) if values else _nan_stats(part)
    row |= _stats((cov.counts == 0).sum(axis=1), "empty_bins", ci_prob)
    row |= _stats(unrepresented_mass(cov.counts, weights), "unrepresented", ci_prob)
    theta = info["theta"].to_numpy()
    moves_lo, moves_hi = half_max_region(theta, info["slope_mean"].to_numpy())
    n_answered = max(int(sat["answered"].sum()), 1)
    row |= {
        "top_k": n_top,
        "saturated_share": float(sat["saturated"].sum() / n_answered),
        "unseparating_share": float((sat["answered"] & ~sat["separates"]).sum() / n_answered),
        "info_peak_theta": float(theta[int(np.nanargmax(info["info_mean"].to_numpy()))]),
        "moves_lo": moves_lo,
        "moves_hi": moves_hi,
    }
    return row


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
    out = {f"{prefix}_{k}": math.nan for k in STAT_NAMES}
    if prefix in CALIBRATED:
        out |= {f"{prefix}_posterior_ci_low": math.nan, f"{prefix}_posterior_ci_high": math.nan}
    return out


def items_table(
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
            # labels as text with NaN where missing, as the saved audit reads them back (not pd.NA in objects)
            "benchmark": pd.array(data.items["benchmark"].to_numpy(), dtype="str"),
            "domain": pd.array(data.items["domain"].to_numpy(), dtype="str"),
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
    table["accuracy"], table["answered_alike"] = _answers(data)
    return table


def _answers(data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
    """Each item's mean response as a share of its most (NaN when nobody answered it), and whether every subject
    who answered it gave the same response."""
    codes = data.item_codes
    answered = np.bincount(codes, minlength=data.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.bincount(codes, weights=data.shares, minlength=data.n_items) / answered
    alike = np.asarray(data.item_ids.astype(str).isin(data.uninformative_items().index.astype(str)))
    return accuracy, alike
