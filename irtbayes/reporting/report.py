"""The research report: one folder with ``report.html`` (self-contained), ``report.md``, figures and tables.

:func:`build_report` turns a fit, its data and (optionally) an audit and BenchFill results into a
:class:`~irtbayes.reporting.document.Document`; :func:`report` writes it atomically. The report opens with
"What this audit found", generated from the numbers (:func:`audit_findings`): whether the fit passed its
convergence checks (a fit that did not, or an approximate one, is said so first and every finding is marked
provisional), which benchmarks have credible gaps and where, how far each is from the target, and what the
target does to the leaderboard. The key figures follow, then the data, the model, the settings and the
diagnostics; the closing section says what the data cannot decide.

The report's size is bounded whatever the number of subjects, items and benchmarks: the leaderboard figure,
the P(ahead) matrix and the leaderboard table show the top :data:`TOP_SUBJECTS` subjects by posterior mean
rank, the benchmark figures at most :data:`TOP_BENCHMARKS` benchmarks, and a sentence says how many were left
out and summarises them; the full tables are the CSV files in ``tables/``. Figure sizes are capped in
:mod:`irtbayes.core.plots`.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.auditing.result import design_notes, graded_sentence, self_check_lines
from irtbayes.core import plots
from irtbayes.core.files import atomic_dir
from irtbayes.core.summaries import format_interval
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.diagnostics.divergences import remedy_text
from irtbayes.fitting.storage import load_fit_data
from irtbayes.reporting.document import Document, format_number, format_probability, format_share

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.fitting.result import Fit

__all__ = [
    "CREDIBLE_GAP",
    "MAX_SCOPES",
    "TOP_BENCHMARKS",
    "TOP_SUBJECTS",
    "Findings",
    "audit_findings",
    "build_report",
    "parameter_diagnostics",
    "report",
]

log = logging.getLogger(__name__)

#: P(bin empty) at or above which a gap is called credible, and the band where the data cannot decide.
CREDIBLE_EMPTY = 0.9
UNDECIDED_EMPTY = 0.5
#: A gap is credible when the lower end of its Maximum Gap interval exceeds this many logits: the audit's false-gap
#: threshold (scripts/gap_calibration.py; no simulated benchmark without a gap had its lower end above it).
CREDIBLE_GAP = 0.5
#: Benchmarks or systems named in one finding; the rest are counted (every one is in tables/).
MAX_NAMED = 8
#: Benchmarks named at each end of the DDM finding (the closest and the furthest).
DDM_NAMED = 3
#: Subjects shown in the leaderboard figure, the P(ahead) matrix and the leaderboard table.
TOP_SUBJECTS = 30
#: Benchmarks shown in the coverage and forest figures (those with the largest DDM).
TOP_BENCHMARKS = 40
#: Ability scopes (all items, then the domains) drawn in the information figure.
MAX_SCOPES = 8


def parameter_diagnostics(fit: Fit) -> pd.DataFrame:
    """R-hat and bulk/tail ESS of every checked parameter: one row per scalar parameter.

    The fit's own table when it was just fitted (:attr:`~irtbayes.fitting.diagnostics.verdict.Diagnostics.parameters`),
    else computed from the posterior.

    Returns
    -------
    pandas.DataFrame
        Columns ``variable``, ``index`` (the coordinates as text), ``r_hat``, ``ess_bulk``, ``ess_tail``.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, draws=50)
    >>> table = parameter_diagnostics(fit)
    >>> table.columns.tolist()
    ['variable', 'index', 'r_hat', 'ess_bulk', 'ess_tail']
    >>> int((table["variable"] == "ability").sum()), int((table["variable"] == "difficulty").sum())
    (20, 30)
    """
    from irtbayes.fitting.diagnostics.convergence import parameter_table, rank_diagnostics_datasets
    from irtbayes.fitting.diagnostics.sampler import checked_variables

    cached = getattr(fit.diagnostics, "parameters", None)
    if cached is not None:  # computed by the fit's own convergence check
        return cached
    posterior = fit.posterior
    names = checked_variables(posterior)
    rhat, bulk, tail = rank_diagnostics_datasets(posterior[names])
    return parameter_table(rhat, bulk, tail, names)


@dataclass(frozen=True)
class Findings:
    """What the report leads with, generated from the numbers.

    Attributes
    ----------
    verdict
        One sentence on the fit's convergence checks (or that the posterior is approximate or partial).
    trusted
        The fit passed its checks and is neither approximate nor partial. When False every sentence of
        ``found`` opens with ``PROVISIONAL`` and the reason.
    found
        The findings: credible gaps and where, each benchmark's distance from the target, what the target
        does to the leaderboard. Empty without an audit.
    open
        What the data cannot decide or the report does not support (the closing section).
    """

    verdict: str
    trusted: bool
    found: list[str]
    open: list[str]


def audit_findings(fit: Fit, audit: AuditResult | None, *, ci_prob: float | None = None) -> Findings:
    """The findings the report opens with and the open questions it closes with.

    Parameters
    ----------
    fit
        The fit; its convergence checks decide whether the findings are marked provisional.
    audit
        Its audit, or None (then only the verdict).
    ci_prob
        Probability of the intervals the sentences name (default the audit's, else 0.9).

    Examples
    --------
    >>> from irtbayes.examples import simulated_audit, simulated_fit
    >>> fit, data = simulated_fit(30, 60, n_benchmarks=2)
    >>> result, _ = simulated_audit(30, 60, bins=5)
    >>> findings = audit_findings(fit, result)
    >>> findings.trusted, findings.verdict.startswith("The fit FAILED its convergence checks")
    (False, True)
    >>> all(sentence.startswith("PROVISIONAL") for sentence in findings.found)
    True
    """
    verdict, reason = _verdict(fit, audit)
    found: list[str] = []
    unsupported: list[str] = []
    if audit is not None:
        pct = f"{(ci_prob if ci_prob is not None else audit.ci_prob):.0%}"
        found += _gap_findings(audit, pct, unsupported)
        found += _ddm_findings(audit, pct, unsupported)
        found += _ranking_findings(audit, pct, unsupported)
        target = audit.target
        unsupported.append(
            f"Conclusions about weighting hold for the chosen target ({target.kind}: {target.description}); "
            "another target (the workload a decision is about) can give another DDM and another re-weighted order."
        )
        unsupported.append(_gap_width_caveat(fit, audit))
        unsupported += design_notes(audit.benchmarks, audit.settings)
        checked = self_check_lines(audit.benchmarks, audit.settings, pct)
        if checked:
            found.append(" ".join(line.strip() for line in checked))
    mark = f"PROVISIONAL ({reason}): " if reason else ""
    return Findings(verdict=verdict, trusted=not reason, found=[mark + s for s in found], open=unsupported)


def _verdict(fit: Fit, audit: AuditResult | None) -> tuple[str, str]:
    """Whether the fit passed its convergence checks, in one sentence, and why its numbers are provisional
    (empty when they are not)."""
    diag = fit.diagnostics
    if fit.partial:
        return (
            f"Warning: {fit.partial_text()} An unfinished run has not converged: every number in this report is "
            "provisional.",
            "partial fit",
        )
    if fit.approximate:
        return (
            f"The posterior is an approximation ({fit.sampler.get('name')}): MCMC convergence checks do not apply "
            "and its intervals may be too narrow. Every number in this report is provisional; refit with NUTS "
            "before relying on it.",
            "approximate posterior",
        )
    if not diag.ok:
        more = f"; {len(diag.problems) - 3} more" if len(diag.problems) > 3 else ""
        remedy = remedy_text(list(fit.sampler.get("remedies") or []))
        return (
            "The fit FAILED its convergence checks (" + "; ".join(diag.problems[:3]) + more + "): every number in "
            "this report is provisional until a longer or better-conditioned fit passes."
            + (f" {remedy}" if remedy else ""),
            "failed convergence checks",
        )
    if audit is not None and audit.settings.get("converged") is False:
        return ("The audit records that the draws it was made from failed their convergence checks: every "
                "number in this report is provisional.", "failed convergence checks")  # fmt: skip
    remedy = remedy_text(list(fit.sampler.get("remedies") or []))
    return (
        f"The fit passed its convergence checks (max r-hat {diag.max_rhat:.3f}, min bulk ESS "
        f"{diag.min_ess_bulk:.0f}, {diag.divergences} divergences)." + (f" {remedy}" if remedy else ""),
        "",
    )


def _scope_kind(audit: AuditResult) -> str:
    """The scopes the findings speak of: the benchmarks, or all items when the items carry no benchmark labels."""
    return "benchmark" if (audit.benchmarks["scope_kind"] == "benchmark").any() else "all"


def _scope_name(row: pd.Series) -> str:
    return "all items" if row["scope_kind"] == "all" else str(row["scope"])


def _more(n: int, what: str) -> str:
    return f" … and {n:,} more {what} (tables/benchmarks.csv)." if n > 0 else ""


def _gap_findings(audit: AuditResult, pct: str, unsupported: list[str]) -> list[str]:
    """Which benchmarks have a credible gap, where, and how wide its interior and edge parts are."""
    kind = _scope_kind(audit)
    bench = audit.benchmarks.loc[audit.benchmarks["scope_kind"] == kind]
    bins = audit.bins.loc[audit.bins["scope_kind"] == kind]
    empty = bins.loc[bins["p_empty"] >= CREDIBLE_EMPTY]
    rule = (
        f"the lower end of the {pct} interval of the Maximum Gap above {CREDIBLE_GAP:g} logits; in the audit's "
        "calibration study (nine design families, docs/validation.md) at most 1% of the benchmarks whose true "
        "widest gap was under that had their lower end there"
    )
    credible = bench.loc[bench["max_gap_ci_low"] > CREDIBLE_GAP].sort_values("max_gap_ci_low", ascending=False)
    found: list[str] = []
    if credible.empty:
        widest = bench.sort_values("max_gap_ci_low", kind="stable").iloc[-1]
        where = f"any of the {len(bench)} benchmarks" if kind == "benchmark" and len(bench) > 1 else _scope_name(widest)
        found.append(
            f"No credible coverage gap ({rule}) in {where}: the highest lower end is {_scope_name(widest)}'s, "
            f"Maximum Gap {format_interval(widest, 'max_gap')} logits."
        )
    else:
        names = ", ".join(_scope_name(r) for _, r in credible.head(MAX_NAMED).iterrows())
        found.append(
            f"Credible coverage gap ({rule}) in {names}."
            if len(bench) == 1
            else f"Credible coverage gaps ({rule}) in {len(credible)} of {len(bench)} benchmarks: {names}"
            + (_more(len(credible) - MAX_NAMED, "benchmarks") if len(credible) > MAX_NAMED else ".")
        )
        for _, row in credible.head(MAX_NAMED).iterrows():
            found.append(_gap_sentence(audit, row, empty))
    # bins credibly empty in benchmarks whose widest gap is not credible (bins narrower than the threshold)
    narrow = empty.loc[~empty["scope"].isin(credible["scope"])]
    by_scope = bench.set_index("scope")
    for scope, rows in list(narrow.groupby("scope", sort=False))[:MAX_NAMED]:
        row = by_scope.loc[scope]
        found.append(
            f"{'all items' if kind == 'all' else scope}: no item in {_spans(rows)} with P ≥ {CREDIBLE_EMPTY:g}, "
            f"but its Maximum Gap, {format_interval(row, 'max_gap')} logits, does not clear the "
            f"{CREDIBLE_GAP:g}-logit threshold: a narrow empty stretch, not counted as a credible gap."
        )
    undecided = bins.loc[(bins["p_empty"] >= UNDECIDED_EMPTY) & (bins["p_empty"] < CREDIBLE_EMPTY)]
    for scope, rows in list(undecided.groupby("scope", sort=False))[:MAX_NAMED]:
        spans = ", ".join(
            f"[{r.lo:.2f}, {r.hi:.2f}) (P(empty) {format_probability(r.p_empty)})" for r in rows.itertuples()
        )
        unsupported.append(f"{scope}: whether {spans} is empty; the difficulty estimates are too uncertain to say.")
    return found


def _spans(rows: pd.DataFrame) -> str:
    """The bins of ``rows`` as intervals, adjacent bins joined: ``[-0.26, 2.80)``."""
    spans: list[list[float]] = []
    for r in rows.sort_values("lo").itertuples():
        if spans and abs(spans[-1][1] - float(r.lo)) < 1e-9:
            spans[-1][1] = float(r.hi)
        else:
            spans.append([float(r.lo), float(r.hi)])
    return ", ".join(f"[{lo:.2f}, {hi:.2f})" for lo, hi in spans)


def _gap_sentence(audit: AuditResult, row: pd.Series, empty: pd.DataFrame) -> str:
    """Where one benchmark's credible gap lies, its interior and edge parts, and the bins credibly empty."""
    target = audit.target
    k = int(row["gap_modal_bin"])
    kind = str(row["gap_kind"])
    where = {"interior": "between two items", "whole range": "no item inside the range"}.get(kind, f"at the {kind}")
    text = (
        f"{_scope_name(row)}: Maximum Gap {format_interval(row, 'max_gap')} logits, around "
        f"[{row['gap_lo']:.2f}, {row['gap_hi']:.2f}] ({where}; in bin {k} {target.bin_label(k)} in "
        f"{format_share(row['gap_p_modal_bin'])} of draws). Interior gap {format_interval(row, 'interior_gap')}; "
        f"edge gaps {format_interval(row, 'edge_gap_low')} at L = {target.lo:.2f} and "
        f"{format_interval(row, 'edge_gap_high')} at U = {target.hi:.2f}."
    )
    inner = audit.settings.get("edge_gap_inner_range")
    side = {"low edge": "low", "high edge": "high"}.get(kind)
    if side is not None and inner is not None and pd.notna(row.get(f"edge_gap_{side}_inner_mean")):
        margin = float(inner[0]) - target.lo
        text += (
            f" Up to {margin:.2f} logits of an edge gap can be the range's margin beyond the systems' abilities; "
            f"inside [{float(inner[0]):.2f}, {float(inner[1]):.2f}] this edge gap is "
            f"{format_interval(row, f'edge_gap_{side}_inner')}."
        )
    rows = empty.loc[empty["scope"] == row["scope"]]
    if len(rows):
        text += f" No item in {_spans(rows)} with P ≥ {CREDIBLE_EMPTY:g}."
    return text


def _ddm_findings(audit: AuditResult, pct: str, unsupported: list[str]) -> list[str]:
    """How far each benchmark is from the target (DDM with intervals), and which are credibly further."""
    kind = _scope_kind(audit)
    bench = audit.benchmarks.loc[audit.benchmarks["scope_kind"] == kind].sort_values("ddm_w1_mean", kind="stable")
    target = audit.target
    shown = bench if len(bench) <= 2 * DDM_NAMED else pd.concat([bench.head(DDM_NAMED), bench.tail(DDM_NAMED)])
    listed = ", ".join(f"{_scope_name(r)} {format_interval(r, 'ddm_w1')}" for _, r in shown.iterrows())
    which = (
        f" (the {DDM_NAMED} closest and the {DDM_NAMED} furthest of {len(bench):,})" if len(shown) < len(bench) else ""
    )
    found = [
        f"Distance from the target ({target.description}), DDM with {pct} intervals (0: the items follow the "
        f"target; items outside [{target.lo:.2f}, {target.hi:.2f}] count in full){which}: {listed}."
    ]
    worst = bench.iloc[-1]
    found.append(
        f"{_scope_name(worst)}{' (the furthest)' if len(bench) > 1 else ''}: {format_share(worst['mass_below_mean'])} "
        f"of its items lie below the range and {format_share(worst['mass_above_mean'])} above; "
        f"{format_share(worst['unrepresented_mean'])} of the target's weight (interval "
        f"{format_share(worst['unrepresented_ci_low'])} to {format_share(worst['unrepresented_ci_high'])}) falls in "
        "bins where it has no item."
    )
    if len(bench) < 2:
        return found
    best = bench.iloc[0]
    if worst["ddm_w1_ci_low"] > best["ddm_w1_ci_high"]:
        further = bench.loc[bench["ddm_w1_ci_low"] > best["ddm_w1_ci_high"], "scope"].astype(str).tolist()
        names = ", ".join(further[:MAX_NAMED]) + (
            f" and {len(further) - MAX_NAMED:,} more" if len(further) > MAX_NAMED else ""
        )
        found.append(
            f"Credibly further from the target than the closest benchmark, {best['scope']} (DDM interval entirely "
            f"above its): {names}."
        )
    else:
        unsupported.append(
            "That any benchmark matches the target better than another: the DDM intervals of the closest "
            f"({best['scope']}) and furthest ({worst['scope']}) overlap."
        )
    overlaps = bench.loc[bench["ddm_w1_ci_low"] <= best["ddm_w1_ci_high"], "scope"].tolist()
    if len(overlaps) > 1:
        names = ", ".join(map(str, overlaps[:MAX_NAMED])) + (" …" if len(overlaps) > MAX_NAMED else "")
        unsupported.append(f"An order among {names} by DDM: their intervals overlap the best one's.")
    return found


def _ranking_findings(audit: AuditResult, pct: str, unsupported: list[str]) -> list[str]:
    """What re-weighting to the target does to the leaderboard: who moves, and with what P(ahead)."""
    ranking = audit.ranking.loc[audit.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    if not len(ranking):
        return []
    found: list[str] = []
    ahead = audit.ahead
    ahead = ahead.set_axis(ahead.index.astype(str), axis=0).set_axis(ahead.columns.astype(str), axis=1)
    subjects = ranking["subject"].astype(str)
    raw = pd.Series(ranking["raw_rank"].to_numpy(), index=subjects)
    # systems tied on raw accuracy share the raw ranks from raw_rank (the best of them) to raw_last
    raw_last = ranking["raw_accuracy"].rank(ascending=False, method="max").to_numpy()
    up = ranking["raw_rank"].to_numpy() > ranking["rank_ci_high"].to_numpy()
    down = raw_last < ranking["rank_ci_low"].to_numpy()
    distance = np.where(up, ranking["raw_rank"] - ranking["rank_ci_high"], ranking["rank_ci_low"] - raw_last)
    moved = ranking.assign(raw_last=raw_last, moved_up=up, moved_by=distance).loc[up | down]
    moved = moved.sort_values("moved_by", ascending=False, kind="stable")
    if len(moved):
        parts = [
            f"{r.subject} (raw rank {_raw_ranks(int(r.raw_rank), int(r.raw_last))}, re-weighted "
            f"{int(r.rank_ci_low)}–{int(r.rank_ci_high)}"
            f"{_overtakes(str(r.subject), int(r.raw_rank), up=bool(r.moved_up), raw=raw, ahead=ahead)})"
            for r in moved.head(MAX_NAMED).itertuples()
        ]
        n_up = int(moved["moved_up"].sum())
        found.append(
            f"Re-weighting to the target moves {len(moved)} of {len(ranking)} systems outside their {pct} rank "
            f"interval ({n_up} up, {len(moved) - n_up} down; the furthest moved first): "
            + "; ".join(parts)
            + (" …" if len(moved) > MAX_NAMED else "")
            + "."
        )
    else:
        found.append(
            f"Re-weighting to the target moves no system credibly: the raw rank of each of the {len(ranking)} systems "
            f"(for ties, one of the ranks it shares) lies inside its {pct} re-weighted rank interval."
        )
    if len(ranking) > 1:
        first, second = subjects.iloc[0], subjects.iloc[1]
        lead = ranking.iloc[0]
        group = int((ranking["group"] == lead["group"]).sum())
        p = ahead.at[first, second] if first in ahead.index and second in ahead.columns else float("nan")
        found.append(
            f"{first} leads the re-weighted leaderboard (rank interval {int(lead['rank_ci_low'])}–"
            f"{int(lead['rank_ci_high'])}); P({first} ahead of {second}) = {format_probability(p)}"
            + (
                f"; the posterior cannot order the first {group} systems (P(ahead) < "
                f"{format_probability(audit.settings.get('group_threshold', 0.9))})."
                if group > 1
                else "."
            )
        )
    groups = ranking.groupby("group")["subject"].apply(list)
    ties = [g for g in groups if len(g) > 1]
    if ties:
        shown = "; ".join(", ".join(map(str, g[:6])) + (" …" if len(g) > 6 else "") for g in ties[:4])
        unsupported.append(
            f"Orderings within these groups of systems under the re-weighted score ({len(ties)} group(s) the "
            f"posterior cannot separate at P(ahead) < {audit.settings.get('group_threshold', 0.9)}): {shown}."
        )
    return found


def _raw_ranks(first: int, last: int) -> str:
    """A raw rank, or the ranks a group tied on raw accuracy shares: ``3`` or ``1–308 (tied)``."""
    return str(first) if first == last else f"{first}–{last} (tied)"


def _overtakes(subject: str, raw_rank: int, *, up: bool, raw: pd.Series, ahead: pd.DataFrame) -> str:
    """``; ahead of B, raw rank 2, with P = 0.97`` for a system moved up past another (the most probable, the best
    raw rank among equals); ``; behind B, ...`` for one moved down; empty when none is more probably passed."""
    if subject not in ahead.index:
        return ""
    others = raw.loc[(raw < raw_rank) if up else (raw > raw_rank)].index
    others = [o for o in others if o in ahead.columns and o != subject]
    if not others:
        return ""
    p = (ahead.loc[subject, others] if up else ahead.loc[others, subject]).astype(float)
    # the most probable; among equals, the one with the best raw rank
    order = pd.DataFrame({"p": p.to_numpy(), "raw": raw.loc[others].to_numpy()}, index=others)
    best = str(order.sort_values(["p", "raw"], ascending=[False, True], kind="stable").index[0])
    value = float(order.at[best, "p"])
    if value < 0.5:
        return ""
    if up:
        return f"; ahead of {best}, raw rank {int(raw[best])}, with P = {format_probability(value)}"
    return f"; behind {best}, raw rank {int(raw[best])}, with P = {format_probability(value)}"


def _gap_width_caveat(fit: Fit, audit: AuditResult) -> str:
    """Why the exact width of a gap is not supported, for the item locations the audit used."""
    difficulty_sd = float(fit.posterior["difficulty"].std(dim=("chain", "draw")).mean())
    if audit.settings.get("ensemble") == "deconvolved":
        return (
            "The exact width of a gap. Gaps are measured on deconvolved item locations (each benchmark's estimated "
            "difficulty population, cut to a support with at most one empty stretch), which keep items beside an "
            "empty region out of it; a gap's edges are still blurred by the items' uncertainty (mean posterior sd "
            f"of a difficulty here: {difficulty_sd:.2f}). Over nine simulated design families the posterior mean "
            "read the widest gap 0.1-0.6 logits narrow (0.23 on average) and the posterior's own 90% interval held "
            "it in only 75% of the benchmarks; "
            + (
                "the intervals reported here are therefore recalibrated across those families (they held it in "
                "93-100% of each family on held-out seeds), which makes them wide: read the interval as the range "
                "of plausible widths, and the posterior mean as likely too low."
                if audit.settings.get("calibrated_intervals")
                else "the intervals reported here are the posterior's own (calibrated_intervals=False): read their "
                "upper ends, not their means."
            )
        )
    return (
        f"The exact width of a gap: per-draw Maximum Gaps scatter items into gaps by the difficulty "
        f"uncertainty (mean posterior sd of a difficulty here: {difficulty_sd:.2f}), so gaps narrower than "
        "about twice that are understated; the location of the widest gap is the more reliable reading."
    )


def _first_of(n: int, shown: int) -> str:
    """`` (first 40 of 120)`` for a caption when a table is cut, else nothing."""
    return f" (first {shown} of {n:,})" if n > shown else ""


def _data_section(doc: Document, data: ResponseData) -> None:
    summary = data.summary()
    doc.heading("Data")
    doc.paragraph(
        f"Source: {summary.source}. {summary.n_subjects} subjects × {summary.n_items} items, {summary.n_responses:,} "
        f"responses; {summary.missing_share:.1%} of cells missing; "
        f"responses: {summary.kind_text}. Checksum {summary.checksum[:16]}."
    )
    benchmarks = summary.benchmarks.reset_index()
    doc.table(
        benchmarks,
        caption="Benchmarks: items, subjects and accuracy" + _first_of(len(benchmarks), TOP_BENCHMARKS),
        max_rows=TOP_BENCHMARKS,
    )
    n_u = len(summary.uninformative)
    if n_u:
        kinds = summary.uninformative["kind"].value_counts().to_dict()
        doc.paragraph(
            f"{n_u} items got the same response from every subject ({kinds}); they carry no information about "
            "differences between these subjects, and their difficulties rest on the prior and the pooling."
        )


def _model_section(doc: Document, fit: Fit) -> None:
    card = fit.card()
    doc.heading("Model and settings")
    spec = card["spec"]
    sampler = card["sampler"]
    label = " — APPROXIMATE: intervals may be too narrow" if fit.approximate else ""
    doc.paragraph(
        f"{spec.get('kind', '?').upper()} IRT, hierarchy {spec.get('hierarchy')}, abilities {spec.get('dims')}, "
        f"identification {spec.get('identification')}{label}."
    )
    doc.paragraph(
        f"Sampler {sampler.get('name')}: {sampler.get('chains')} chains × {sampler.get('draws')} draws after "
        f"{sampler.get('tune')} tuning steps, seed {sampler.get('seed')}, wall time "
        f"{format_number(sampler.get('wall_time_s'), digits=1)} s."
    )
    priors = spec.get("priors", {})
    if priors:
        doc.table(pd.DataFrame({"prior": list(priors), "value": [str(v) for v in priors.values()]}), caption="Priors")
    versions = card.get("package_versions", {})
    if versions:
        versions = {**versions, "python": platform.python_version()}
        doc.paragraph("Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".")


def _diagnostics_section(doc: Document, fit: Fit, figure: Callable[[str, Any, str], None]) -> None:
    diag = fit.diagnostics
    doc.heading("Diagnostics")
    css = "verdict-ok" if diag.ok else "verdict-bad"
    head = diag.to_text().split("\n")
    if fit.approximate:  # the MCMC checks neither pass nor fail an approximation
        verdict = "Verdict: approximate, MCMC checks do not apply. "
        css = "verdict-bad"
    else:
        verdict = f"Verdict: {'PASS' if diag.ok else 'FAIL'}. "
    doc.paragraph(verdict + " ".join(head[:2]), css=css)
    if diag.variables:
        doc.table(
            pd.DataFrame([v.to_dict() for v in diag.variables]),
            caption="Per variable: the largest r-hat and the smallest bulk and tail ESS, with where they occur",
        )
    if diag.problems:
        shown = diag.problems[:10]
        doc.bullets(shown + ([f"… and {len(diag.problems) - 10} more"] if len(diag.problems) > 10 else []))
    if fit.approximate:
        return
    table = parameter_diagnostics(fit)
    th = diag.thresholds
    figure(
        "diagnostics",
        plots.plot_rhat_ess(table, rhat_max=th.get("rhat_max", 1.01), ess_min=th.get("ess_min", 400)),
        "R-hat against bulk ESS for every parameter; dashed lines are the thresholds.",
    )
    worst = table.sort_values("r_hat", ascending=False).head(8)
    doc.table(worst, caption="Parameters with the largest r-hat")


def _items_section(doc: Document, fit: Fit, data: ResponseData, *, max_rows: int = 25) -> None:
    """Items that measure little (solved by all or none, near-zero discrimination), with their text."""
    flagged = fit.flagged_items()
    doc.heading("Items that measure little")
    if not len(flagged):
        doc.paragraph(
            "No item is solved by every subject or by none, and none has a credibly near-zero discrimination."
        )
        return
    counts = flagged["flags"].str.split(";").explode().value_counts().to_dict()
    doc.paragraph(
        f"{len(flagged)} items are flagged ({counts}). Items every subject solves (or none does) cannot separate "
        "these subjects; a negative item-rest correlation often means a wrong answer key."
    )
    table = flagged.copy()
    if "text" in data.items.columns:
        text = data.items["text"].astype(object).reindex(table["item"].astype(str)).fillna("")
        table.insert(1, "text", [t if len(t) <= 120 else t[:119] + "…" for t in map(str, text)])
    doc.table(table.head(max_rows), caption=f"Flagged items (first {min(max_rows, len(table))} of {len(table)})")


def _palette(data: ResponseData) -> tuple[pd.Series, dict[str, str], dict[str, str]]:
    """Each benchmark's domain, and one colour (and marker) per domain for every figure of the report."""
    labelled = data.items.dropna(subset=["benchmark"]).drop_duplicates("benchmark")
    domains = pd.Series(
        plots.text_labels(labelled["domain"]), index=plots.text_labels(labelled["benchmark"]), dtype=object
    )
    colours, markers = plots.domain_palette(plots.text_labels(data.items["domain"]))
    return domains, colours, markers


def _findings_section(doc: Document, fit: Fit, data: ResponseData, audit: AuditResult | None, found: Findings) -> None:
    """The report's opening: the fit's verdict, what was audited, and the findings."""
    doc.heading("What this audit found")
    doc.paragraph(found.verdict, css="verdict-ok" if found.trusted else "verdict-bad")
    context = (
        f"{data.n_subjects} systems, {data.n_items} items in {max(len(data.benchmarks), 1)} benchmark(s) and "
        f"{max(len(data.domains), 1)} domain(s); {fit.spec.kind.upper()} IRT fitted with {fit.sampler.get('name')}"
        f"{' (approximate)' if fit.approximate else ''}."
    )
    if audit is None:
        doc.paragraph(context + " No audit was run, so there are no coverage, mismatch or leaderboard findings; "
                      "the sections below describe the data, the model and its diagnostics.")  # fmt: skip
        return
    t = audit.target
    doc.paragraph(
        f"{context} Target: {t.description} on the ability scale; intervals are {audit.ci_prob:.0%} equal-tailed "
        "credible intervals."
    )
    doc.bullets(found.found)
    doc.paragraph(
        "What these data cannot decide is listed at the end (What this does not support); the key figures follow, "
        "then the data, the model, the settings and the diagnostics.",
        css="note",
    )


def _key_figures(
    doc: Document, data: ResponseData, audit: AuditResult, figure: Callable[[str, Any, str], None]
) -> None:
    """Coverage, the Maximum Gap and DDM forests, and the leaderboard's ranks: the figures the findings rest on."""
    domains, colours, markers = _palette(data)
    doc.heading("Key figures")
    _benchmark_figures(doc, audit, domains, colours, markers, figure)
    ranking = audit.ranking.loc[audit.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    if not len(ranking):
        return
    scorings = {
        "raw accuracy": ("raw_rank", "raw_rank", "raw_rank"),
        "re-weighted accuracy": ("rank_mean", "rank_ci_low", "rank_ci_high"),
    }
    ability_columns = ("ability_rank_mean", "ability_rank_ci_low", "ability_rank_ci_high")
    if set(ability_columns) <= set(ranking.columns):  # audits written before ability ranks were recorded lack them
        scorings["ability"] = ability_columns
    shown = min(TOP_SUBJECTS, len(ranking))
    if shown < len(ranking):
        doc.paragraph(_left_out_sentence(ranking, shown, audit.ci_prob))
    figure(
        "leaderboard",
        plots.plot_leaderboard(ranking.head(shown), columns=scorings, sort_by="rank_mean"),
        f"Ranks (1 = best) under three scorings, with {audit.ci_prob:.0%} intervals: {_board_label(shown, len(ranking))}. "
        "Raw accuracy weights items as the benchmark happens to hold them; the re-weighted accuracy gives each "
        "difficulty bin its target weight; ability is the IRT estimate.",
    )


def _board_label(shown: int, n: int) -> str:
    return f"the top {shown} of {n:,} subjects" if shown < n else "every subject"


def _audit_settings_section(doc: Document, audit: AuditResult) -> None:
    """The audit's target (with its weights per bin), its item locations and its settings."""
    _audit_introduction(doc, audit)
    t = audit.target
    edges = list(t.edges_array)
    doc.table(
        pd.DataFrame(
            {"bin": range(t.n_bins), "lo": edges[:-1], "hi": edges[1:], "target_weight": list(t.weights_array)}
        ),
        caption="Target: the weight of each difficulty bin",
        digits=2,
        max_rows=TOP_BENCHMARKS,
    )


def _audit_details(
    doc: Document, data: ResponseData, audit: AuditResult, figure: Callable[[str, Any, str], None]
) -> None:
    """The item-person map, the information curves and the per-benchmark table."""
    target = audit.target
    domains, colours, _ = _palette(data)
    doc.heading("Audit details: items, information and every benchmark")
    figure(
        "item_person_map",
        plots.plot_item_person_map(
            doc.data_tables["subjects"].groupby("subject", as_index=False).mean(numeric_only=True),
            doc.data_tables["items"],
            target_range=(target.lo, target.hi),
            edges=list(target.edges_array),
            colours=colours,
        ),
        "Item-person map: subjects' abilities (with intervals) beside each benchmark's item difficulties; the "
        "target range is shaded and its bins ruled.",
    )
    _information_figure(audit, domains, figure)
    columns = [
        "scope", "n_items", "ddm_w1_mean", "ddm_w1_ci_low", "ddm_w1_ci_high", "ddm_tv_mean",
        "max_gap_mean", "max_gap_ci_low", "max_gap_ci_high", "gap_lo", "gap_hi", "gap_kind", "interior_gap_mean",
        "edge_gap_low_mean", "edge_gap_high_mean", "mass_below_mean", "mass_above_mean", "unrepresented_mean",
        "saturated_share", "ddm_shape_w1_mean",
    ]  # fmt: skip
    doc.table(
        audit.benchmarks[[c for c in columns if c in audit.benchmarks.columns]],
        caption="Per benchmark" + _first_of(len(audit.benchmarks), TOP_BENCHMARKS),
        max_rows=TOP_BENCHMARKS,
    )


def _audit_introduction(doc: Document, audit: AuditResult) -> None:
    """The audit section's heading and the paragraphs on its target, item locations and settings."""
    target = audit.target
    doc.heading("Audit target and settings")
    doc.paragraph(
        f"Target: {target.kind} over [{target.lo:.2f}, {target.hi:.2f}] on the ability scale, {target.n_bins} bins "
        f"({target.description}). Every number is computed per posterior draw; intervals are {audit.ci_prob:.0%} "
        "equal-tailed credible intervals. "
        + (
            "Coverage, DDM and the Maximum Gap use deconvolved item locations: in each draw, each item is placed "
            "under its benchmark's estimated difficulty distribution rather than the model's normal prior, so "
            "that empty regions are not filled by the scatter of their neighbours. Each item's own difficulty, "
            "the leaderboard and the information curves use the fit's draws."
            if audit.settings.get("ensemble") == "deconvolved"
            else "Coverage, DDM and the Maximum Gap use the fit's difficulty draws as they are."
        )
        + (
            f" {graded_sentence(str(audit.settings['graded']), audit.settings.get('graded_points'))}"
            if audit.settings.get("graded")
            else ""
        )
    )
    doc.paragraph(_audit_settings_sentence(audit))


def _benchmark_figures(
    doc: Document,
    audit: AuditResult,
    domains: pd.Series,
    colours: dict[str, str],
    markers: dict[str, str],
    figure: Callable[[str, Any, str], None],
) -> None:
    """The coverage heatmap and the DDM and Maximum Gap forests of the benchmarks with the largest DDM."""
    ci = audit.ci_prob
    kind = "benchmark" if (audit.benchmarks["scope_kind"] == "benchmark").any() else "all"  # unlabelled items
    bench = audit.benchmarks.loc[audit.benchmarks["scope_kind"] == kind].copy()
    bench["domain"] = [domains.get(s, "") for s in plots.text_labels(bench["scope"])]
    if len(bench) > TOP_BENCHMARKS:
        n_bench = len(bench)
        bench = bench.sort_values("ddm_w1_mean", ascending=False, kind="stable").head(TOP_BENCHMARKS)
        doc.paragraph(
            f"The coverage and benchmark figures show the {TOP_BENCHMARKS} of {n_bench:,} benchmarks with the "
            f"largest DDM; the other {n_bench - TOP_BENCHMARKS:,} are in tables/benchmarks.csv and tables/bins.csv."
        )
    shown_bins = audit.bins.loc[(audit.bins["scope_kind"] == kind) & audit.bins["scope"].isin(bench["scope"])]
    figure(
        "coverage",
        plots.plot_coverage_heatmap(shown_bins, scope_kind=kind, domains=domains.to_dict(), colours=colours),
        "Coverage: expected share of each benchmark's items per difficulty bin; × marks bins empty with "
        "probability ≥ 0.8. Rows are grouped and coloured by domain.",
    )
    forests = (
        ("ddm", "ddm_w1", "DDM (share outside [L, U] + share inside × W1 / (U − L))",
         "Difficulty distribution mismatch with the target",
         f"DDM per benchmark with {ci:.0%} intervals (0 = the items follow the target; items outside the range "
         "count in full)."),
        ("max_gap", "max_gap", "widest empty interval (logits)", "Maximum Gap inside the target range",
         f"Maximum Gap per benchmark with {ci:.0%} intervals."),
    )  # fmt: skip
    for name, column, xlabel, title, caption in forests:
        low, high = f"{column}_ci_low", f"{column}_ci_high"
        ax = plots.plot_forest(
            bench,
            mean=f"{column}_mean",
            low=low,
            high=high,
            colours=colours,
            markers=markers,
            xlabel=xlabel,
            title=title,
        )
        figure(name, ax, caption)


def _information_figure(audit: AuditResult, domains: pd.Series, figure: Callable[[str, Any, str], None]) -> None:
    """The standard error of ability across the range, overall and for the first :data:`MAX_SCOPES` domains."""
    info_scope = pd.Series(plots.text_labels(audit.information["scope"]), index=audit.information.index)
    scopes = [s for s in ["all", *dict.fromkeys(domains.tolist())] if s and s in set(info_scope)]
    left_out = max(len(scopes) - MAX_SCOPES, 0)
    scopes = scopes[:MAX_SCOPES]
    figure(
        "information",
        plots.plot_test_information(audit.information.loc[info_scope.isin(scopes)], scopes=scopes, value="se"),
        "Standard error of ability across the range (1/√information), with bands: where the benchmark measures "
        "precisely and where it does not."
        + (f" {left_out} domain(s) left out; all are in tables/information.csv." if left_out else ""),
    )


def _audit_settings_sentence(audit: AuditResult) -> str:
    """The settings the audit ran with, as it recorded them (a saved audit is reported as it was made)."""
    s = audit.settings
    group = s.get("group")
    return (
        f"Audit settings: {s.get('n_samples', '?')} posterior draws ({s.get('n_samples_ranking', '?')} for the "
        f"leaderboard, {s.get('n_samples_information', '?')} for the information curves), seed {s.get('seed', '?')}, "
        f"top {s.get('top_k', '?')} subjects for saturation, leaderboard groups at P(ahead) < "
        f"{s.get('group_threshold', '?')}, item locations: {s.get('ensemble', '?')}"
        + (f"; target from the group {', '.join(map(str, group))}" if group else "")
        + "."
    )


def _left_out_sentence(ranking: pd.DataFrame, shown: int, ci_prob: float) -> str:
    """How many subjects the leaderboard figures leave out, and what their ranks look like."""
    rest = ranking.iloc[shown:]
    widths = rest["rank_ci_high"] - rest["rank_ci_low"]
    last_group = ranking["group"].iloc[shown - 1]
    tied = int((rest["group"] == last_group).sum())
    return (
        f"The leaderboard figure, the P(ahead) matrix and the table show the top {shown} of {len(ranking):,} "
        f"subjects by posterior mean rank under the re-weighted score; {len(rest):,} subjects are left out of "
        "them (every subject is in tables/ranking.csv). The left-out subjects have mean ranks "
        f"{rest['rank_mean'].min():.1f} to {rest['rank_mean'].max():.1f}, with {ci_prob:.0%} rank intervals "
        f"{widths.median():.0f} places wide (median); {tied:,} of them share a group with the last subject shown "
        "(the posterior cannot tell them apart from it)."
    )


def _leaderboard_section(doc: Document, audit: AuditResult, figure: Callable[[str, Any, str], None]) -> None:
    """P(ahead) among the top subjects and the leaderboard table (its rank figure is among the key figures)."""
    # the audit's own ranks and rank intervals (irtbayes.auditing.tables.rank_interval): nothing is recomputed here
    ranking = audit.ranking.loc[audit.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    shown = min(TOP_SUBJECTS, len(ranking))
    top = ranking.head(shown)
    label = _board_label(shown, len(ranking))
    doc.heading("Leaderboard with rank intervals")
    doc.paragraph(
        "Ranks are per posterior draw under the re-weighted accuracy (ability breaking ties); a group holds "
        "subjects the posterior cannot order at P(ahead) < "
        f"{format_probability(audit.settings.get('group_threshold', 0.9))}."
    )
    if len(audit.ahead):
        k = min(shown, len(audit.ahead))
        figure(
            "ahead",
            plots.plot_ahead_matrix(audit.ahead.iloc[:k, :k]),
            f"P(row subject ahead of column subject), re-weighted: {label}.",
        )
    cols = [
        "subject", "raw_accuracy", "raw_rank", "reweighted_mean", "reweighted_ci_low", "reweighted_ci_high",
        "rank_mean", "rank_ci_low", "rank_ci_high", "ability_mean", "ability_ci_low", "ability_ci_high", "group",
    ]  # fmt: skip
    doc.table(top[[c for c in cols if c in top.columns]], caption=f"Leaderboard: {label}", max_rows=TOP_SUBJECTS)


def build_report(
    fit: Fit,
    data: ResponseData,
    *,
    audit: AuditResult | None = None,
    benchfill: Any = None,
    tracking: Any = None,
    title: str | None = None,
) -> Document:
    """Compose the report (no files written).

    The report opens with what the audit found (:func:`audit_findings`: the fit's verdict, credible gaps, each
    benchmark's distance from the target, what the target does to the leaderboard), then the key figures, then
    the data, the model, the settings and the diagnostics, then the details; it closes with what the data do not
    support.

    Parameters
    ----------
    fit, data
        The fit and the data it was fitted to.
    audit
        An :class:`~irtbayes.auditing.result.AuditResult` of the same fit.
    benchfill, tracking
        Objects with a ``report_section(doc, figure)`` method (BenchFill results; a
        :class:`~irtbayes.evaluating.tracking.Tracking` of checkpoints on this fit), or None.

    Examples
    --------
    >>> import re
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, draws=50)
    >>> doc = build_report(fit, data)
    >>> re.findall(r"^## (.*)", doc.to_markdown(), flags=re.MULTILINE)[:4]
    ['What this audit found', 'Data', 'Model and settings', 'Diagnostics']
    >>> sorted(doc.figures)
    ['diagnostics']
    """
    import matplotlib.pyplot as plt

    doc = Document(title=title or f"irtbayes audit of {Path(str(data.source)).name}")
    ci_prob = audit.ci_prob if audit is not None else 0.9

    def figure(name: str, ax: Any, caption: str) -> None:
        doc.figure(name, ax.figure, caption=caption)

    with (
        plt.rc_context({"figure.dpi": 100, "font.size": 9, "svg.fonttype": "none"}),
        plots.unloaded_lazy_modules_hidden(),  # matplotlib would import jax only to ask whether an array is one of its
    ):
        found = audit_findings(fit, audit, ci_prob=ci_prob)
        _findings_section(doc, fit, data, audit, found)
        if audit is not None:
            _key_figures(doc, data, audit, figure)
        _data_section(doc, data)
        _model_section(doc, fit)
        if audit is not None:
            _audit_settings_section(doc, audit)
        _diagnostics_section(doc, fit, figure)
        _items_section(doc, fit, data)
        if audit is not None:
            # summarised once (seconds at leaderboard sizes): the audit's figures use them, write_report_files
            # writes them
            doc.data_tables.update(items=fit.items_table(ci_prob), subjects=fit.subjects_table(ci_prob))
            _audit_details(doc, data, audit, figure)
            _leaderboard_section(doc, audit, figure)
        if benchfill is not None:
            benchfill.report_section(doc, figure)
        if tracking is not None:
            tracking.report_section(doc, figure)
        doc.heading("What this does not support")
        if not found.trusted:
            doc.paragraph(found.verdict, css="verdict-bad")
        doc.heading("Not supported, or not decidable from these data", level=3)
        doc.bullets(found.open or ["Nothing beyond the conditions below."])
        doc.heading("Conditions and limits", level=3)
        doc.bullets(
            [
                "Abilities and difficulties are on the scale set by these subjects (mean 0, sd 1); another population "
                "of systems gives another scale.",
                "Difficulty is measured only by how these systems answered; framing effects (answer order, prompt "
                "format, metric choice) need separate evidence and are not captured by the difficulty measure.",
                "The target distribution is a choice about the decision at hand, not a property of the benchmark.",
            ]
        )
    return doc


def report(
    fit: Fit,
    out: str | Path,
    *,
    data: ResponseData | None = None,
    audit: AuditResult | None = None,
    benchfill: Any = None,
    tracking: Any = None,
    title: str | None = None,
) -> Path:
    """Write the report: ``out/report.html``, ``out/report.md``, ``out/figures/`` and ``out/tables/``, atomically.

    Parameters
    ----------
    fit
        The fit.
    out
        The report's folder (replaced as a whole, or left as it was if writing fails).
    data
        The data the fit was made from; by default read from the source the fit records (a file that is still
        there, or a registered data set), checked against the fit's checksum.
    audit
        An :class:`~irtbayes.auditing.result.AuditResult` of the same fit: the findings, figures and tables of
        the audit.
    benchfill
        BenchFill results (an object with a ``report_section(doc, figure)`` method), or None.
    tracking
        A :class:`~irtbayes.evaluating.tracking.Tracking` of checkpoints on this fit (``irt.track``), or None.
    title
        The report's title (default: ``irtbayes audit of <source>``).

    Returns
    -------
    pathlib.Path
        The path of ``report.html``.

    Raises
    ------
    irtbayes.core.errors.FitError
        ``data`` is not the data the fit was made from, or it was not given and the fit's source is not here.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, draws=50)
    >>> html = report(fit, Path(tempfile.mkdtemp()) / "report", data=data)
    >>> sorted(path.name for path in html.parent.iterdir())
    ['figures', 'report.html', 'report.md', 'tables']
    >>> sorted(path.name for path in (html.parent / "tables").iterdir())
    ['items.csv', 'subjects.csv']
    >>> "<title>irtbayes audit of simulated 2pl (20 subjects x 30 items)</title>" in html.read_text()
    True
    """
    fit.refuse_if_unsettled("report")
    data = load_fit_data(fit, data, hint="give it as data=")
    doc = build_report(fit, data, audit=audit, benchfill=benchfill, tracking=tracking, title=title)
    with atomic_dir(out) as tmp:
        write_report_files(doc, fit, tmp, audit=audit)
    return Path(out) / "report.html"


def write_report_files(doc: Document, fit: Fit, folder: Path, *, audit: AuditResult | None = None) -> None:
    """Write the document and its tables into an existing (temporary) folder."""
    doc.write(folder)
    tables = folder / "tables"
    tables.mkdir(exist_ok=True)
    ci = audit.ci_prob if audit is not None else 0.9
    from_audit = audit.tables() if audit is not None else {}
    built = doc.data_tables  # the tables build_report summarised, where they are for this interval
    for name, compute in (("items", fit.items_table), ("subjects", fit.subjects_table)):
        if name in from_audit:
            continue  # the audit's table of that name is written instead
        table = built.get(name)
        if table is None or table.attrs.get("ci_prob") != ci:
            table = compute(ci)
        table.to_csv(tables / f"{name}.csv", index=False)
    for name, table in from_audit.items():
        table.to_csv(tables / f"{name}.csv", index=name == "ahead")
