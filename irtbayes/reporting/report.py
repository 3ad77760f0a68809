"""The research report: one folder with ``report.html`` (self-contained), ``report.md``, figures and tables.

:func:`build_report` turns a fit, its data and (optionally) an audit and BenchFill results into a
:class:`~irtbayes.reporting.document.Document`; :func:`write_report` writes it atomically. The closing section,
"What this supports and what it does not", is generated from the numbers: which coverage gaps are
credible, which rank differences the posterior cannot resolve, which conclusions depend on the target.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from irtbayes.core import plots
from irtbayes.core.files import atomic_dir
from irtbayes.core.summaries import format_interval
from irtbayes.data.responses import ResponseData
from irtbayes.reporting.document import Document, format_number

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.fitting.result import Fit

__all__ = [
    "MAX_SCOPES",
    "TOP_BENCHMARKS",
    "TOP_SUBJECTS",
    "build_report",
    "parameter_diagnostics",
    "supported_claims",
    "write_report",
]

log = logging.getLogger(__name__)

#: P(bin empty) at or above which a gap is called credible, and the band where the data cannot decide.
CREDIBLE_EMPTY = 0.9
UNDECIDED_EMPTY = 0.5
#: Subjects shown in the leaderboard figure, the P(ahead) matrix and the leaderboard table.
TOP_SUBJECTS = 30
#: Benchmarks shown in the coverage and forest figures (those with the largest DDM).
TOP_BENCHMARKS = 40
#: Ability scopes (all items, then the domains) drawn in the information figure.
MAX_SCOPES = 8


def parameter_diagnostics(fit: Fit) -> pd.DataFrame:
    """R-hat and bulk/tail ESS of every checked parameter: one row per scalar parameter.

    The fit's own table when it was just fitted (:attr:`~irtbayes.checks.verdict.Diagnostics.parameters`),
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
    from irtbayes.checks.convergence import parameter_table, rank_diagnostics_datasets
    from irtbayes.checks.sampler import checked_variables

    cached = getattr(fit.diagnostics, "parameters", None)
    if cached is not None:  # computed by the fit's own convergence check
        return cached
    posterior = fit.posterior
    names = checked_variables(posterior)
    rhat, bulk, tail = rank_diagnostics_datasets(posterior[names])
    return parameter_table(rhat, bulk, tail, names)


def supported_claims(fit: Fit, audit: AuditResult | None, *, ci_prob: float) -> tuple[list[str], list[str]]:
    """Sentences for the closing section, generated from the numbers.

    Returns
    -------
    (supported, not_supported)
        Two lists of plain sentences.
    """
    supported: list[str] = []
    unsupported: list[str] = []
    pct = f"{ci_prob:.0%}"
    _convergence_claims(fit, supported, unsupported)
    if audit is None:
        return supported, unsupported

    _gap_claims(audit, supported, unsupported)
    _ddm_claims(audit, pct, supported, unsupported)
    _ranking_claims(audit, pct, supported, unsupported)
    target = audit.target
    unsupported.append(
        f"Conclusions about weighting hold for the chosen target ({target.kind}: {target.description}); "
        "another target (the workload a decision is about) can give another DDM and another re-weighted order."
    )
    unsupported.append(_gap_width_caveat(fit, audit))
    return supported, unsupported


def _convergence_claims(fit: Fit, supported: list[str], unsupported: list[str]) -> None:
    """Whether the sampler converged (or the posterior is approximate): one sentence in either list."""
    if fit.approximate:
        unsupported.append(
            "The posterior is an approximation (variational/Pathfinder): intervals may be too narrow; "
            "refit with NUTS before relying on any interval below."
        )
    elif fit.diagnostics.ok:
        supported.append(
            f"The sampler converged by the stated thresholds (max r-hat {fit.diagnostics.max_rhat:.3f}, "
            f"min bulk ESS {fit.diagnostics.min_ess_bulk:.0f}, {fit.diagnostics.divergences} divergences)."
        )
    else:
        unsupported.append(
            "Convergence checks failed (" + "; ".join(fit.diagnostics.problems[:3]) + "): every number below "
            "is provisional until a longer or better-conditioned fit passes."
        )


def _gap_claims(audit: AuditResult, supported: list[str], unsupported: list[str]) -> None:
    """Credible coverage gaps (supported) and bins the data cannot call empty or not (unsupported)."""
    bins = audit.bins.loc[audit.bins["scope_kind"] == "benchmark"]
    credible = bins.loc[bins["p_empty"] >= CREDIBLE_EMPTY]
    undecided = bins.loc[(bins["p_empty"] >= UNDECIDED_EMPTY) & (bins["p_empty"] < CREDIBLE_EMPTY)]
    for scope, rows in credible.groupby("scope", sort=False):
        spans = ", ".join(f"[{r.lo:.2f}, {r.hi:.2f})" for r in rows.itertuples())
        supported.append(
            f"{scope}: no items in {spans} with probability ≥ {CREDIBLE_EMPTY:g} (credible coverage gap: "
            "progress of systems at those abilities is invisible to this benchmark's score)."
        )
    for scope, rows in undecided.groupby("scope", sort=False):
        spans = ", ".join(f"[{r.lo:.2f}, {r.hi:.2f}) (P(empty) {r.p_empty:.2f})" for r in rows.itertuples())
        unsupported.append(f"{scope}: whether {spans} is empty; the difficulty estimates are too uncertain to say.")


def _ddm_claims(audit: AuditResult, pct: str, supported: list[str], unsupported: list[str]) -> None:
    """Whether the benchmarks' DDM intervals separate the closest from the furthest, and which overlap the best."""
    bench = audit.benchmarks.loc[audit.benchmarks["scope_kind"] == "benchmark"]
    if len(bench) < 2:
        return
    order = bench.sort_values("ddm_w1_mean")
    best, worst = order.iloc[0], order.iloc[-1]
    if worst["ddm_w1_ci_low"] > best["ddm_w1_ci_high"]:
        supported.append(
            f"{worst['scope']} is further from the target than {best['scope']} (DDM "
            f"{format_interval(worst, 'ddm_w1')} vs {format_interval(best, 'ddm_w1')}, {pct} intervals)."
        )
    else:
        unsupported.append(
            "That any benchmark matches the target better than another: the DDM intervals of the closest "
            f"({best['scope']}) and furthest ({worst['scope']}) overlap."
        )
    overlaps = bench.loc[bench["ddm_w1_ci_low"] <= best["ddm_w1_ci_high"], "scope"].tolist()
    if len(overlaps) > 1:
        unsupported.append(
            f"An order among {', '.join(map(str, overlaps))} by DDM: their intervals overlap the best one's."
        )


def _ranking_claims(audit: AuditResult, pct: str, supported: list[str], unsupported: list[str]) -> None:
    """Groups of subjects the posterior cannot order, and whether re-weighting credibly moves anyone."""
    ranking = audit.ranking.loc[audit.ranking["scope_kind"] == "all"]
    if not len(ranking):
        return
    groups = ranking.groupby("group")["subject"].apply(list)
    ties = [g for g in groups if len(g) > 1]
    if ties:
        shown = "; ".join(", ".join(map(str, g[:6])) + (" …" if len(g) > 6 else "") for g in ties[:4])
        unsupported.append(
            f"Orderings within these groups of subjects under the re-weighted score ({len(ties)} group(s) the "
            f"posterior cannot separate at P(ahead) < {audit.settings.get('group_threshold', 0.9)}): {shown}."
        )
    moved = ranking.loc[
        (ranking["raw_rank"] < ranking["rank_ci_low"]) | (ranking["raw_rank"] > ranking["rank_ci_high"])
    ]
    if len(moved):
        names = ", ".join(
            f"{r.subject} (raw {int(r.raw_rank)}, re-weighted {r.rank_ci_low:.0f}–{r.rank_ci_high:.0f})"
            for r in moved.head(8).itertuples()
        )
        supported.append(
            f"Re-weighting to the target moves {len(moved)} subject(s) outside their {pct} rank interval: "
            f"{names}. The difficulty weighting of the raw score changes their standing."
        )
    else:
        supported.append(
            "Every subject's raw rank lies inside its re-weighted rank interval: the benchmark's difficulty "
            "weighting does not credibly change the leaderboard under this target."
        )


def _gap_width_caveat(fit: Fit, audit: AuditResult) -> str:
    """Why the exact width of a gap is not supported, for the item locations the audit used."""
    difficulty_sd = float(fit.posterior["difficulty"].std(dim=("chain", "draw")).mean())
    if audit.settings.get("ensemble") == "deconvolved":
        return (
            "The exact width of a gap. Gaps are measured on deconvolved item locations (each benchmark's estimated "
            "difficulty population, cut to a support with at most one empty stretch), which keep items beside an "
            "empty region out of it; a gap's edges are still blurred by the items' uncertainty (mean posterior sd "
            f"of a difficulty here: {difficulty_sd:.2f}). In simulations (60 items, 30-200 systems) the 90% "
            "interval covered the true widest gap in 94% of 240 data sets, a planted gap was read 0.1-0.2 logits "
            "narrow on average and, with 30-80 systems, a benchmark without one 0.1-0.2 wide; small benchmarks with "
            "uncertain items read gaps wider than they are. Read the interval as the range of plausible widths."
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
        f"{'binary' if summary.binary else 'fractional'} scores. Checksum {summary.checksum[:16]}."
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
    doc.paragraph(f"Verdict: {'PASS' if diag.ok else 'FAIL'}. " + " ".join(head[:2]), css=css)
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


def _audit_section(
    doc: Document, data: ResponseData, audit: AuditResult, figure: Callable[[str, Any, str], None]
) -> None:
    target = audit.target
    labelled = data.items.dropna(subset=["benchmark"]).drop_duplicates("benchmark")
    domains = pd.Series(
        plots.text_labels(labelled["domain"]), index=plots.text_labels(labelled["benchmark"]), dtype=object
    )
    # one colour (and marker) per domain in every figure of the report
    colours, markers = plots.domain_palette(plots.text_labels(data.items["domain"]))
    _audit_introduction(doc, audit)
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
    _benchmark_figures(doc, audit, domains, colours, markers, figure)
    _information_figure(audit, domains, figure)
    columns = [
        "scope", "n_items", "ddm_w1_mean", "ddm_w1_ci_low", "ddm_w1_ci_high", "ddm_tv_mean",
        "max_gap_mean", "max_gap_ci_low", "max_gap_ci_high", "gap_lo", "gap_hi", "gap_kind", "interior_gap_mean",
        "edge_gap_low_mean", "edge_gap_high_mean", "mass_below_mean", "mass_above_mean", "saturated_share",
        "ddm_shape_w1_mean",
    ]  # fmt: skip
    doc.table(
        audit.benchmarks[[c for c in columns if c in audit.benchmarks.columns]],
        caption="Per benchmark" + _first_of(len(audit.benchmarks), TOP_BENCHMARKS),
        max_rows=TOP_BENCHMARKS,
    )


def _audit_introduction(doc: Document, audit: AuditResult) -> None:
    """The audit section's heading and the paragraphs on its target, item locations and settings."""
    target = audit.target
    doc.heading("Audit: coverage, mismatch and gaps")
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
    ci = audit.ci_prob
    # the audit's own ranks and rank intervals (irtbayes.auditing.tables.rank_interval): nothing is recomputed here
    ranking = audit.ranking.loc[audit.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")
    scorings = {
        "raw accuracy": ("raw_rank", "raw_rank", "raw_rank"),
        "re-weighted accuracy": ("rank_mean", "rank_ci_low", "rank_ci_high"),
    }
    ability_columns = ("ability_rank_mean", "ability_rank_ci_low", "ability_rank_ci_high")
    if set(ability_columns) <= set(ranking.columns):  # audits written before ability ranks were recorded lack them
        scorings["ability"] = ability_columns
    shown = min(TOP_SUBJECTS, len(ranking))
    top = ranking.head(shown)
    doc.heading("Leaderboard with rank intervals")
    doc.paragraph(
        "Raw accuracy weights items as the benchmark happens to hold them; the re-weighted accuracy gives each "
        "difficulty bin its target weight; ability is the IRT estimate. Ranks are per posterior draw."
    )
    if shown < len(ranking):
        doc.paragraph(_left_out_sentence(ranking, shown, ci))
    label = f"the top {shown} of {len(ranking):,} subjects" if shown < len(ranking) else "every subject"
    figure(
        "leaderboard",
        plots.plot_leaderboard(
            top,
            columns=scorings,
            sort_by="rank_mean",
        ),
        f"Ranks (1 = best) under three scorings, with {ci:.0%} intervals: {label}.",
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
    title: str | None = None,
) -> Document:
    """Compose the report (no files written).

    Parameters
    ----------
    fit, data
        The fit and the data it was fitted to.
    audit
        An :class:`~irtbayes.auditing.result.AuditResult` of the same fit.
    benchfill
        An object with a ``report_section(doc, figure)`` method (BenchFill results), or None.

    Examples
    --------
    >>> import re
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, draws=50)
    >>> doc = build_report(fit, data)
    >>> re.findall(r"^## (.*)", doc.to_markdown(), flags=re.MULTILINE)[:4]
    ['Summary', 'Data', 'Model and settings', 'Diagnostics']
    >>> sorted(doc.figures)
    ['diagnostics']
    """
    import matplotlib.pyplot as plt

    doc = Document(title=title or f"irtbayes audit of {Path(str(data.source)).name}")
    ci_prob = audit.ci_prob if audit is not None else 0.9

    def figure(name: str, ax: Any, caption: str) -> None:
        doc.figure(name, ax.figure, caption=caption)

    with plt.rc_context({"figure.dpi": 100, "font.size": 9, "svg.fonttype": "none"}):
        supported, unsupported = supported_claims(fit, audit, ci_prob=ci_prob)
        doc.heading("Summary")
        doc.paragraph(
            f"{data.n_subjects} subjects, {data.n_items} items in {max(len(data.benchmarks), 1)} benchmark(s) and "
            f"{max(len(data.domains), 1)} domain(s); {fit.spec.kind.upper()} IRT fitted with {fit.sampler.get('name')}"
            f"{' (approximate)' if fit.approximate else ''}; convergence {'PASS' if fit.diagnostics.ok else 'FAIL'}."
        )
        if fit.partial:
            doc.paragraph(f"Warning: {fit.partial_text()} Every number below is provisional.", css="verdict-bad")
        if audit is not None:
            doc.paragraph(audit.to_text().split("\n\n")[0])
        _data_section(doc, data)
        _model_section(doc, fit)
        _diagnostics_section(doc, fit, figure)
        _items_section(doc, fit, data)
        if audit is not None:
            # summarised once (seconds at leaderboard sizes): the audit's figures use them, write_report_files
            # writes them
            doc.data_tables.update(items=fit.items_table(ci_prob), subjects=fit.subjects_table(ci_prob))
            _audit_section(doc, data, audit, figure)
            _leaderboard_section(doc, audit, figure)
        if benchfill is not None:
            benchfill.report_section(doc, figure)
        doc.heading("What this supports and what it does not")
        doc.heading("Supported by the evidence", level=3)
        doc.bullets(supported or ["Nothing beyond the descriptive tables above."])
        doc.heading("Not supported, or not decidable from these data", level=3)
        doc.bullets(unsupported)
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


def write_report(
    fit: Fit,
    data: ResponseData,
    out: str | Path,
    *,
    audit: AuditResult | None = None,
    benchfill: Any = None,
    title: str | None = None,
) -> Path:
    """Write ``out/report.html``, ``out/report.md``, ``out/figures/`` and ``out/tables/`` atomically.

    Returns
    -------
    pathlib.Path
        The path of ``report.html``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30, draws=50)
    >>> html = write_report(fit, data, Path(tempfile.mkdtemp()) / "report")
    >>> sorted(path.name for path in html.parent.iterdir())
    ['figures', 'report.html', 'report.md', 'tables']
    >>> sorted(path.name for path in (html.parent / "tables").iterdir())
    ['items.csv', 'subjects.csv']
    >>> "<title>irtbayes audit of simulated 2pl (20 subjects x 30 items)</title>" in html.read_text()
    True
    """
    doc = build_report(fit, data, audit=audit, benchfill=benchfill, title=title)
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
