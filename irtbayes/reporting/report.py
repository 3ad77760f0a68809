"""The research report: one folder with ``report.html`` (self-contained), ``report.md``, figures and tables.

:func:`build_report` turns a fit, its data and (optionally) an audit and BenchFill results into a
:class:`~irtbayes.reporting.document.Document`; :func:`report` writes it atomically. The report opens with
"What this audit found" (:func:`irtbayes.reporting.findings.audit_findings`): whether the fit passed its
convergence checks (a fit that did not, or an approximate one, is said so first and every finding is marked
provisional), the findings in plain sentences, largest first, and what to do about them. The key figures follow,
then the data, the model, the settings and the diagnostics; it closes with what the data cannot decide and a
glossary of the measures.

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

from irtbayes.auditing.result import graded_sentence
from irtbayes.core import plots
from irtbayes.core.files import atomic_dir
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.storage import load_fit_data
from irtbayes.reporting.benchfill import benchfill_section
from irtbayes.reporting.document import Document, format_number, format_probability
from irtbayes.reporting.findings import Findings, audit_findings
from irtbayes.reporting.items import item_flags_section
from irtbayes.reporting.tracking import tracking_section

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.benchfill.result import BenchfillResult
    from irtbayes.evaluating.tracking import Tracking
    from irtbayes.fitting.result import Fit

__all__ = [
    "MAX_SCOPES",
    "TOP_BENCHMARKS",
    "TOP_SUBJECTS",
    "build_report",
    "parameter_diagnostics",
    "report",
]

log = logging.getLogger(__name__)

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
    """The report's opening: the fit's verdict, what was audited, the findings and what to do about them."""
    doc.heading("What this audit found")
    doc.paragraph(found.verdict, css="verdict-ok" if found.trusted else "verdict-bad")
    context = (
        f"{data.n_subjects:,} systems answered {data.n_items:,} items"
        + (f" in {len(data.benchmarks)} benchmarks" if len(data.benchmarks) > 1 else "")
        + (f" ({len(data.domains)} domains)" if len(data.domains) > 1 else "")
        + f"; {fit.spec.kind.upper()} IRT fitted with {fit.sampler.get('name')}"
        + (" (approximate)." if fit.approximate else ".")
    )
    if audit is None:
        doc.paragraph(context + " No audit was run, so there are no coverage, mismatch or leaderboard findings; "
                      "the sections below describe the data, the model and its diagnostics.")  # fmt: skip
        return
    doc.paragraph(
        f"{context} Target: {audit.target.description}; intervals are {audit.ci_prob:.0%} credible intervals. "
        "The terms are defined in the glossary at the end."
    )
    doc.bullets(found.found)
    doc.heading("What to do", level=3)
    doc.bullets(found.todo)
    doc.paragraph(
        "What these data cannot decide is listed at the end; the key figures follow, then the data, the model, "
        "the settings and the diagnostics.",
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
    outside = bench.set_index("scope")[["mass_below_mean", "mass_above_mean"]]
    figure(
        "coverage",
        plots.plot_coverage_heatmap(
            shown_bins,
            scope_kind=kind,
            domains=domains.to_dict(),
            colours=colours,
            outside=outside.set_axis(["below", "above"], axis=1),
        ),
        "Coverage: expected share of each benchmark's items per difficulty bin of the range, and below and above "
        "it (the end columns); × marks bins empty with probability ≥ 0.8. Rows are grouped and coloured by domain.",
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
    benchfill: BenchfillResult | None = None,
    tracking: Tracking | None = None,
    title: str | None = None,
    fit_folder: str | None = None,
    item_checks: pd.DataFrame | None = None,
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
    benchfill
        A BenchFill round's :class:`~irtbayes.benchfill.result.BenchfillResult` on this fit, or None.
    tracking
        A :class:`~irtbayes.evaluating.tracking.Tracking` of checkpoints on this fit, or None.
    fit_folder
        Where the fit is saved, for the commands the report suggests (default ``FIT``).
    item_checks
        The item checks of this fit (:attr:`irtbayes.checks.items.ItemChecks.items`, or
        :func:`irtbayes.checks.items.load_item_checks` of its CSV): a section listing the flagged items.

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
        found = audit_findings(fit, audit, ci_prob=ci_prob, fit_folder=fit_folder)
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
        if item_checks is not None:
            excluded = bool(audit is not None and audit.settings.get("excluded_items"))
            item_flags_section(doc, item_checks, excluded=excluded)
        if benchfill is not None:
            benchfill_section(benchfill, doc, figure)
        if tracking is not None:
            tracking_section(tracking, doc)
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
        if found.glossary:
            doc.heading("Glossary")
            doc.bullets([f"{term}: {text}" for term, text in found.glossary])
    return doc


def report(
    fit: Fit,
    out: str | Path,
    *,
    data: ResponseData | None = None,
    audit: AuditResult | None = None,
    benchfill: BenchfillResult | None = None,
    tracking: Tracking | None = None,
    title: str | None = None,
    item_checks: pd.DataFrame | None = None,
    fit_folder: str | None = None,
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
        A BenchFill round's :class:`~irtbayes.benchfill.result.BenchfillResult` on this fit, or None.
    tracking
        A :class:`~irtbayes.evaluating.tracking.Tracking` of checkpoints on this fit (``irt.track``), or None.
    item_checks
        The item checks of this fit (``irt.check_items(...).items``): a section listing the flagged items.
    title
        The report's title (default: ``irtbayes audit of <source>``).
    fit_folder
        Where the fit is saved, for the commands "What to do" gives (default ``FIT``).

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
    doc = build_report(
        fit,
        data,
        audit=audit,
        benchfill=benchfill,
        tracking=tracking,
        title=title,
        item_checks=item_checks,
        fit_folder=fit_folder,
    )
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
