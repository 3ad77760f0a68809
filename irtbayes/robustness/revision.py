"""Revised against original: two versions of a benchmark on one scale, through the systems they share.

The two versions are fitted together (concurrent calibration: one model, one ability per system, each version
a benchmark), so their items lie on one scale; :func:`revision_data` builds such data from two separate sets of
responses. :func:`compare_revision` then reads one :func:`irtbayes.auditing.run.audit` of that fit and says what the
revision changed:

- **gaps filled**: the original's widest gap ``[gap_lo, gap_hi]`` is *filled* when the revised version holds at
  least ``min_items`` items whose posterior mean difficulty lies inside it;
- **DDM** and **Maximum Gap**: each version's posterior mean and interval, and whether the intervals are
  disjoint (a credible change);
- **saturation**: the share of each version's items that do not separate the top systems;
- **rank changes**: each system's re-weighted rank on each version; a system **regresses** when its rank
  interval on the revised version lies entirely below (worse than) its interval on the original.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData

__all__ = ["RevisionComparison", "compare_revision", "revision_data"]


def revision_data(
    original: ResponseData,
    revised: ResponseData,
    *,
    original_name: str = "original",
    revised_name: str = "revised",
) -> ResponseData:
    """One data set holding both versions as two benchmarks, for the systems that answered both.

    Item ids are prefixed with the version's name (``original:q1``) so the two versions never share an item.

    Raises
    ------
    DataError
        Fewer than 3 common systems.

    Examples
    --------
    >>> from irtbayes.data.responses import ResponseData
    >>> from irtbayes.robustness.revision import revision_data
    >>> old = ResponseData.from_long(pd.DataFrame({"subject": list("abcd"), "item": "q1", "response": [1, 0, 1, 1]}))
    >>> new = ResponseData.from_long(pd.DataFrame({"subject": list("abcde"), "item": "q1", "response": [1, 0, 0, 1, 1]}))
    >>> both = revision_data(old, new)
    >>> list(both.benchmarks), list(both.subject_ids)  # only the systems that answered both versions
    (['original', 'revised'], ['a', 'b', 'c', 'd'])
    """
    if original_name == revised_name:
        raise SpecError("the two versions need different names")
    common = original.subject_ids.intersection(revised.subject_ids, sort=False)
    if len(common) < 3:
        raise DataError(
            f"{original.source} and {revised.source} share {len(common)} systems; at least 3 are needed to put "
            "the two versions on one scale"
        )
    frames, metas = [], []
    for data, name in ((original, original_name), (revised, revised_name)):
        if len(data.conditions) > 1:
            raise DataError(f"{data.source}: choose one condition before comparing versions")
        frame = data.long_frame()
        kept = ["subject", "item", "response", *(["trials"] if "trials" in frame.columns else [])]
        frame = frame.loc[frame["subject"].isin(common), kept].copy()
        frame["item"] = name + ":" + frame["item"].astype(str)
        frames.append(frame)
        meta = data.items.reset_index()
        meta["item"] = name + ":" + meta["item"].astype(str)
        meta["benchmark"] = name
        metas.append(meta)
    items = pd.concat(metas, ignore_index=True)
    long = pd.concat(frames, ignore_index=True)
    items = items.loc[items["item"].isin(long["item"].unique())]
    if "trials" in long.columns:
        long["trials"] = long["trials"].fillna(1).astype("int64")
    return ResponseData.from_long(
        long,
        trials="trials" if "trials" in long.columns else None,
        items=items,
        source=f"{original_name} vs {revised_name}",
    )


@dataclass(frozen=True)
class RevisionComparison:
    """Result of :func:`compare_revision` (see its example).

    Attributes
    ----------
    versions
        One row per version (``original`` then ``revised``): ``version``, ``benchmark``, ``n_items``,
        ``raw_accuracy``, ``ddm_w1_{mean,ci_low,ci_high}``, ``max_gap_{mean,ci_low,ci_high}``, ``gap_lo``,
        ``gap_hi``, ``saturated_share``.
    changes
        One row per measure (``ddm_w1``, ``max_gap``, ``saturated_share``, ``raw_accuracy``): ``measure``,
        ``original``, ``revised``, ``change``, ``credible`` (the intervals are disjoint; NaN where a measure
        has none).
    subjects
        One row per common system: ``subject``, ``rank_original_{mean,ci_low,ci_high}``,
        ``rank_revised_{mean,ci_low,ci_high}``, ``rank_change`` (revised - original; positive is worse),
        ``raw_accuracy_original``, ``raw_accuracy_revised``, ``regresses``.
    gap
        ``original_gap`` [lo, hi], ``revised_items_inside`` (count), ``filled`` (bool), ``min_items``.
    summary
        One sentence per finding.
    """

    versions: pd.DataFrame
    changes: pd.DataFrame
    subjects: pd.DataFrame
    gap: dict[str, Any]
    summary: list[str]


def compare_revision(result: Any, *, original: str, revised: str, min_items: int = 1) -> RevisionComparison:
    """What a revision changed, from one audit of a fit holding both versions as benchmarks.

    Parameters
    ----------
    result
        An :class:`~irtbayes.auditing.result.AuditResult` whose scopes include both benchmarks.
    original, revised
        The two benchmarks' names.
    min_items
        Revised items inside the original's gap needed to call it filled.

    Returns
    -------
    RevisionComparison

    Examples
    --------
    The original and revised versions audited together, as two benchmarks of one fit (here two simulated
    benchmarks stand in for them):

    >>> from irtbayes.examples import simulated_audit
    >>> from irtbayes.robustness.revision import compare_revision
    >>> result, data = simulated_audit(30, 60, bins=5)
    >>> comparison = compare_revision(result, original="bench00", revised="bench01")
    >>> comparison.versions["version"].tolist()
    ['original', 'revised']
    >>> isinstance(comparison.summary, list), sorted(comparison.gap)[:2]
    (True, ['filled', 'min_items'])
    >>> compare_revision(result, original="bench00", revised="bench07")
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: benchmark 'bench07' is not in the audit; its scopes are ['all', 'bench00', 'bench01']
    """
    bench = result.benchmarks.set_index("scope")
    for name in (original, revised):
        if name not in bench.index:
            raise DataError(f"benchmark '{name}' is not in the audit; its scopes are {list(bench.index)}")
    if original == revised:
        raise SpecError("compare_revision: original and revised must differ")
    versions = _versions_table(bench, original, revised)
    o, r = versions.iloc[0], versions.iloc[1]
    changes = _changes(o, r)
    items = result.items
    revised_items = items.loc[items["benchmark"].astype(str) == revised, "difficulty_mean"].to_numpy(dtype=float)
    inside = int(np.sum((revised_items >= o["gap_lo"]) & (revised_items <= o["gap_hi"])))
    gap = {
        "original_gap": [float(o["gap_lo"]), float(o["gap_hi"])],
        "revised_gap": [float(r["gap_lo"]), float(r["gap_hi"])],
        "revised_items_inside": inside,
        "filled": inside >= min_items,
        "min_items": int(min_items),
    }
    subjects = _rank_changes(result.ranking, original, revised)
    summary = _summary(o, r, changes, subjects, gap, original=original, revised=revised, min_items=min_items)
    return RevisionComparison(
        versions=versions, changes=pd.DataFrame(changes), subjects=subjects, gap=gap, summary=summary
    )


def _versions_table(bench: pd.DataFrame, original: str, revised: str) -> pd.DataFrame:
    """The ``versions`` table: one row per version, from the audit's benchmark table (indexed by scope)."""
    rows = []
    for version, name in (("original", original), ("revised", revised)):
        b = bench.loc[name]
        row = {"version": version, "benchmark": name, "n_items": int(b["n_items"]), "raw_accuracy": b["raw_accuracy"]}
        for m in ("ddm_w1", "max_gap"):
            for k in ("mean", "ci_low", "ci_high"):
                row[f"{m}_{k}"] = float(b[f"{m}_{k}"])
        row.update(gap_lo=float(b["gap_lo"]), gap_hi=float(b["gap_hi"]), saturated_share=float(b["saturated_share"]))
        rows.append(row)
    return pd.DataFrame(rows)


def _changes(o: pd.Series, r: pd.Series) -> list[dict[str, Any]]:
    """The rows of the ``changes`` table: each measure on both versions, and whether the change is credible."""
    changes = []
    for m in ("ddm_w1", "max_gap", "saturated_share", "raw_accuracy"):
        key = f"{m}_mean" if m in ("ddm_w1", "max_gap") else m
        credible: float | bool = float("nan")
        if m in ("ddm_w1", "max_gap"):
            credible = bool(o[f"{m}_ci_high"] < r[f"{m}_ci_low"] or r[f"{m}_ci_high"] < o[f"{m}_ci_low"])
        changes.append(
            {
                "measure": m,
                "original": float(o[key]),
                "revised": float(r[key]),
                "change": float(r[key]) - float(o[key]),
                "credible": credible,
            }
        )
    return changes


def _rank_changes(ranking: pd.DataFrame, original: str, revised: str) -> pd.DataFrame:
    """The ``subjects`` table: each common system's ranks on both versions, largest rank change first."""
    parts = {}
    for version, name in (("original", original), ("revised", revised)):
        part = ranking.loc[ranking["scope"] == name].set_index("subject")
        parts[version] = part[["rank_mean", "rank_ci_low", "rank_ci_high", "raw_accuracy"]].rename(
            columns={
                "rank_mean": f"rank_{version}_mean",
                "rank_ci_low": f"rank_{version}_ci_low",
                "rank_ci_high": f"rank_{version}_ci_high",
                "raw_accuracy": f"raw_accuracy_{version}",
            }
        )
    subjects = parts["original"].join(parts["revised"], how="inner")
    subjects["rank_change"] = subjects["rank_revised_mean"] - subjects["rank_original_mean"]
    subjects["regresses"] = subjects["rank_revised_ci_low"] > subjects["rank_original_ci_high"]
    subjects = subjects.reset_index().sort_values("rank_change", ascending=False, kind="stable")
    return subjects.reset_index(drop=True)


def _summary(
    o: pd.Series,
    r: pd.Series,
    changes: list[dict[str, Any]],
    subjects: pd.DataFrame,
    gap: dict[str, Any],
    *,
    original: str,
    revised: str,
    min_items: int,
) -> list[str]:
    """One sentence per finding of :func:`compare_revision`."""
    inside = gap["revised_items_inside"]
    summary = [
        f"{revised} has {int(r['n_items'])} items against {int(o['n_items'])} in {original}.",
        f"The widest gap of {original}, [{o['gap_lo']:.2f}, {o['gap_hi']:.2f}], holds {inside} of {revised}'s "
        f"items: {'filled' if gap['filled'] else 'not filled'} (rule: at least {min_items}).",
    ]
    for change in changes[:2]:
        verdict = "a credible change" if change["credible"] else "intervals overlap"
        summary.append(f"{change['measure']}: {change['original']:.3f} -> {change['revised']:.3f} ({verdict}).")
    summary.append(
        f"Saturated items: {o['saturated_share']:.0%} -> {r['saturated_share']:.0%}; raw accuracy "
        f"{o['raw_accuracy']:.3f} -> {r['raw_accuracy']:.3f}."
    )
    regress = subjects.loc[subjects["regresses"], "subject"].tolist()
    summary.append(
        f"{len(regress)} of {len(subjects)} systems regress (rank interval on {revised} entirely below the one on "
        f"{original})"
        + (f": {', '.join(map(str, regress[:10]))}" + (" ..." if len(regress) > 10 else "") + "." if regress else ".")
    )
    return summary
