"""BenchFill before/after: the original bank and the extended bank audited side by side.

The audit of the original bank is set beside the audit of the extended bank (original items plus the
accepted candidates), with the same target bins. For the full mode the extended audit uses the refit's
posterior (restricted to the original and accepted items). For the fixed-bank mode the accepted items'
draws are appended to the original posterior: draw s of a new item is paired with draw s of the bank
(chains and draws in order; 1PL: the new item shares the bank's discrimination of that draw). Under the
fixed-bank approximation the new items' posterior does not depend on the bank's draw, so any pairing is a
draw from the joint approximation. The original items' results stay separate from the added ones: per bin,
the expected count of original items and of added items; per subject, accuracy on each.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.audit import AuditResult, Target, audit, bin_codes, count_items
from irtbayes.benchfill.target import AUDIT_INFORMATION_DRAWS, AUDIT_MAX_DRAWS
from irtbayes.data import ResponseData
from irtbayes.errors import DataError, FitError
from irtbayes.summaries import summarize

if TYPE_CHECKING:
    from irtbayes.fit import Fit

log = logging.getLogger(__name__)

STATS = ("mean", "sd", "ci_low", "ci_high")


def _draws(var: xr.DataArray, items: Sequence[str]) -> np.ndarray:
    arr = var.sel(item=list(items)).transpose("chain", "draw", "item").values.astype("float64")
    return arr.reshape(arr.shape[0] * arr.shape[1], arr.shape[2])


#: Hyperparameters of the difficulty prior kept with an extended posterior (see ``audit(ensemble=...)``).
HYPER_VARS = ("difficulty_sd", "difficulty_mu", "difficulty_benchmark")


def _append_draws(base: xr.Dataset, new: xr.Dataset, items: Sequence[str], *, kind: str) -> xr.Dataset:
    """The bank's posterior with the new items' draws appended, draw s of a new item beside draw s of the bank."""
    n_chain, n_draw = int(base.sizes["chain"]), int(base.sizes["draw"])
    n_total = n_chain * n_draw
    n_new = int(new.sizes["chain"] * new.sizes["draw"])
    order = np.arange(n_total) % n_new
    if n_new != n_total:
        log.info("the new items have %d draws and the bank %d; the new items' draws are reused in turn", n_new, n_total)
    out = {"ability": base["ability"]}
    for name in HYPER_VARS:  # the bank's difficulty prior, for the deconvolved audit of the bank's items
        if name in base:
            out[name] = base[name]
    for name in ("difficulty", "discrimination", "guessing"):
        if name not in base:
            continue
        if not items:
            out[name] = base[name]
            continue
        old = base[name].transpose("chain", "draw", "item")
        if name not in new:
            raise FitError(f"the new items' posterior lacks '{name}', which the bank has")
        if name == "discrimination" and kind == "1pl":
            # 1PL: every item, new ones too, has the bank's shared discrimination of the same draw
            values = np.repeat(old.isel(item=0).values[:, :, None], len(items), axis=2)
        else:
            values = _draws(new[name], items)[order].reshape(n_chain, n_draw, len(items))
        added = xr.DataArray(
            values,
            dims=("chain", "draw", "item"),
            coords={"chain": old["chain"].values, "draw": old["draw"].values, "item": list(items)},
        )
        out[name] = xr.concat([old, added], dim="item")
    ds = xr.Dataset(out)
    ds.attrs = {}
    return ds


def _count_stats(counts: np.ndarray, prefix: str, ci_prob: float) -> dict[str, np.ndarray]:
    s = summarize(counts.astype("float64"), ci_prob=ci_prob)
    return {f"{prefix}_{k}": s[k] for k in ("mean", "ci_low", "ci_high")}


#: Columns of an audit's benchmark table that the comparison keeps.
COMPARISON_COLUMNS = (
    "n_items",
    *(f"{prefix}_{s}" for prefix in ("ddm_w1", "ddm_tv", "max_gap") for s in STATS),
    "gap_lo", "gap_hi", "gap_modal_bin", "gap_p_modal_bin", "empty_bins_mean", "mass_below_mean", "mass_above_mean",
)  # fmt: skip


def _scope_tables(
    base: xr.Dataset,
    extended: xr.Dataset,
    data: ResponseData,
    ext_items: pd.DataFrame,
    scopes: Sequence[tuple[str, str]],
    added: Sequence[str],
    *,
    versions: tuple[AuditResult, AuditResult],
    target: Target,
    ci_prob: float,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison rows (scope, version) and the per-bin counts (scope, bin) of :func:`before_after`."""
    comp_rows, bin_rows = [], []
    edges = target.edges_array
    n_bins = target.n_bins
    base_b = base["difficulty"]
    ext_b = extended["difficulty"]
    before, after = versions
    for kind, name in scopes:
        if kind == "all":
            original = [str(i) for i in data.item_ids]
        else:
            original = [str(i) for i in data.item_ids[data.items["benchmark"].eq(name).fillna(False).to_numpy(bool)]]
        scope_added = [a for a in added if kind == "all" or str(ext_items.loc[a, "benchmark"]) == name]
        for version, result, n_added in (("before", before, 0), ("after", after, len(scope_added))):
            table = result.benchmarks
            row = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)].iloc[0]
            comp_rows.append(
                {"scope_kind": kind, "scope": name, "version": version, "n_added": n_added}
                | {c: row[c] for c in COMPARISON_COLUMNS}
            )
        before_counts = count_items(bin_codes(_draws(base_b, original), edges), n_bins)[:, 1:-1]
        orig_after = count_items(bin_codes(_draws(ext_b, original), edges), n_bins)[:, 1:-1]
        if scope_added:
            added_counts = count_items(bin_codes(_draws(ext_b, scope_added), edges), n_bins)[:, 1:-1]
        else:
            added_counts = np.zeros_like(orig_after)
        after_counts = orig_after + added_counts
        stats = (
            _count_stats(before_counts, "count_before", ci_prob)
            | _count_stats(orig_after, "count_original_after", ci_prob)
            | _count_stats(added_counts, "count_added", ci_prob)
            | _count_stats(after_counts, "count_after", ci_prob)
        )
        frame = pd.DataFrame(
            {
                "scope_kind": kind,
                "scope": name,
                "bin": np.arange(n_bins),
                "lo": edges[:-1],
                "hi": edges[1:],
                "target_weight": target.weights_array,
                **stats,
                "p_empty_before": (before_counts == 0).mean(axis=0),
                "p_empty_after": (after_counts == 0).mean(axis=0),
            }
        )
        bin_rows.append(frame)
    return pd.DataFrame(comp_rows), pd.concat(bin_rows, ignore_index=True)


def _subject_table(
    data: ResponseData, extended_data: ResponseData, added: set[str], *, versions: tuple[AuditResult, AuditResult]
) -> pd.DataFrame:
    """Per subject: raw accuracy on the original and the added items, re-weighted accuracy and rank before/after."""
    matrix = extended_data.long_frame()
    matrix["added"] = matrix["item"].isin(added)
    per = matrix.groupby(["subject", "added"])["response"].agg(["size", "mean"]).unstack("added")
    subjects = pd.DataFrame(index=pd.Index([str(s) for s in data.subject_ids], name="subject"))
    for flag, label in ((False, "original"), (True, "added")):
        size = per["size"][flag] if ("size", flag) in per.columns else pd.Series(dtype=float)
        mean = per["mean"][flag] if ("mean", flag) in per.columns else pd.Series(dtype=float)
        subjects[f"n_{label}"] = size.reindex(subjects.index).fillna(0).astype("int64")
        subjects[f"accuracy_{label}"] = mean.reindex(subjects.index)
    for version, result in zip(("before", "after"), versions, strict=True):
        ranking = result.ranking.loc[result.ranking["scope_kind"] == "all"].set_index("subject")
        ranking.index = ranking.index.astype(str)
        for col in ("reweighted_mean", "reweighted_ci_low", "reweighted_ci_high", "rank_mean", "rank_ci_low",
                    "rank_ci_high"):  # fmt: skip
            subjects[f"{col.split('_')[0]}_{version}_{col.split('_', 1)[1]}"] = ranking[col].reindex(subjects.index)
    return subjects


def before_after(
    fit: Fit,
    data: ResponseData,
    extended_posterior: xr.Dataset,
    extended_data: ResponseData,
    *,
    added: Sequence[str],
    target: Target,
    benchmark: str | None = None,
    ci_prob: float = 0.9,
) -> dict[str, pd.DataFrame]:
    """Audit the original bank and the extended bank with the same target, side by side.

    Parameters
    ----------
    fit, data
        The original fit and data.
    extended_posterior, extended_data
        Posterior (with ``ability``, ``difficulty``, ``discrimination``) and data of the original items plus
        the accepted ones.
    added
        The accepted candidates' ids (items of ``extended_data`` that are not in ``data``).
    target
        The audit target (bins) of both audits.
    benchmark
        Besides all items, compare this benchmark (and every benchmark an added item joins).

    Returns
    -------
    dict of pandas.DataFrame
        ``comparison``: one row per (scope, version) with version ``before`` / ``after``: ``scope_kind``,
        ``scope``, ``version``, ``n_items``, ``n_added``, ``ddm_w1_{mean,sd,ci_low,ci_high}``,
        ``ddm_tv_{...}``, ``max_gap_{...}``, ``gap_lo``, ``gap_hi``, ``gap_modal_bin``, ``gap_p_modal_bin``,
        ``empty_bins_mean``, ``mass_below_mean``, ``mass_above_mean``.
        ``bins``: one row per (scope, bin): ``lo``, ``hi``, ``target_weight``, and expected counts with
        intervals: ``count_before_*`` (original items, original fit), ``count_original_after_*`` (original
        items, extended posterior), ``count_added_*`` (added items), ``count_after_*`` (all), plus
        ``p_empty_before``, ``p_empty_after``.
        ``subjects``: one row per subject: ``n_original``, ``n_added``, ``accuracy_original``,
        ``accuracy_added`` (raw), and re-weighted accuracy and rank (all items) before and after with
        intervals. Every table's ``attrs`` record ``ci_prob``.

    Examples
    --------
    With nothing added the two audits agree; :func:`calibrate_candidates` passes the bank extended by the
    accepted candidates:

    >>> from irtbayes.fit import Fit
    >>> from irtbayes.simulate import posterior_near_truth, simulate_responses
    >>> data, truth = simulate_responses(100, 40, missing=0.0, seed=1)
    >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
    >>> from irtbayes.benchfill import before_after, choose_target
    >>> choice, _ = choose_target(fit, data, interval=(0.0, 1.0))
    >>> tables = before_after(fit, data, fit.posterior, data, added=[], target=choice.target)
    >>> {"bins", "comparison", "subjects"} <= set(tables)
    True
    >>> comparison = tables["comparison"].query("scope == 'all'").set_index("version")
    >>> bool(np.isclose(comparison.loc["before", "ddm_w1_mean"], comparison.loc["after", "ddm_w1_mean"]))
    True
    """
    added = [str(a) for a in added]
    unknown = [a for a in added if a not in set(extended_data.item_ids)]
    if unknown:
        raise DataError(f"before_after: added item(s) {unknown[:5]} are not in the extended data")
    settings = {
        "target": target,
        "ci_prob": ci_prob,
        "max_draws": AUDIT_MAX_DRAWS,
        "information_draws": AUDIT_INFORMATION_DRAWS,
        "progress": False,
    }
    before = audit(fit, data, **settings)  # type: ignore[arg-type]
    # the added items' draws come from their calibration, not from the bank's prior: they enter as they are
    after = audit(extended_posterior, extended_data, fixed_items=added, **settings)  # type: ignore[arg-type]
    if before.settings["ensemble"] != after.settings["ensemble"]:
        before = audit(fit, data, ensemble="draws", **settings)  # type: ignore[arg-type]
        after = audit(extended_posterior, extended_data, ensemble="draws", **settings)  # type: ignore[arg-type]
    ext_items = extended_data.items
    added_set = set(added)
    scopes: list[tuple[str, str]] = [("all", "all")]
    names = {benchmark} if benchmark else set()
    names |= {str(b) for b in ext_items.loc[ext_items.index.isin(added), "benchmark"].dropna()}
    scopes += [("benchmark", b) for b in sorted(names) if b in set(map(str, data.benchmarks))]

    comparison, bins = _scope_tables(
        fit.posterior, extended_posterior, data, ext_items, scopes, added, versions=(before, after), target=target,
        ci_prob=ci_prob,
    )  # fmt: skip
    subjects = _subject_table(data, extended_data, added_set, versions=(before, after))
    subjects = subjects.reset_index()
    for frame in (comparison, bins, subjects):
        frame.attrs.update(ci_prob=ci_prob, target=target.to_dict())
    return {"comparison": comparison, "bins": bins, "subjects": subjects}
