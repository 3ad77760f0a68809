"""The report of the robustness checks (:func:`report_robustness`): condition sensitivity with its flagged items and
systems, population dependence of each conclusion, and a revised benchmark against the original, with their
figures, written beside :func:`irtbayes.robustness.run.check_robustness`'s tables."""

from __future__ import annotations

import os
from pathlib import Path

from irtbayes.core.files import atomic_write_bytes, atomic_write_text
from irtbayes.reporting.document import Document
from irtbayes.robustness.run import RobustnessResult, convergence_problem

__all__ = ["report_robustness"]


def report_robustness(result: RobustnessResult, out: str | os.PathLike[str], *, top_k: int = 30) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and ``figures/*.png|svg`` of ``result`` into ``out``.

    Item and system names are escaped (HTML and Markdown); each figure shows at most ``top_k`` rows.

    Returns
    -------
    dict
        ``"report_html"``, ``"report_md"`` -> the paths written.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.robustness.run import RobustnessResult
    >>> sorted(report_robustness(RobustnessResult(), tempfile.mkdtemp()))
    ['report_html', 'report_md']
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(out)
    doc = Document(title="Robustness of the audit's conclusions")
    if result.conditions is not None:
        c = result.conditions
        doc.heading("Format and condition sensitivity")
        doc.paragraph(
            f"Conditions: {', '.join(c.conditions)} (reference {c.reference}). Effects are flagged when the set of "
            f"flagged effects has a posterior expected false-flag share of at most {c.fdr:g} (Bayesian FDR over "
            f"local false sign rates{'' if c.min_effect == 0 else f', beyond {c.min_effect:g} logits'}; "
            f"{'effects against the condition' + chr(39) + 's common shift' if c.against == 'shift' else 'effects against 0'}). "
            f"{int(c.items['flagged'].sum())} of {len(c.items)} items and {int(c.subjects['flagged'].sum())} of "
            f"{len(c.subjects)} systems are flagged (rule: {c.fdr_rule})."
        )
        if not c.sampler.get("converged", True):
            doc.paragraph(
                f"**The condition-effects fit did not pass its convergence checks** ({convergence_problem(c.sampler)}): "
                "every number in this section is provisional; rerun with more draws (--draws, --tune)."
            )
        doc.table(c.agreement, caption=f"Rank agreement between conditions ({c.ci_prob:.0%} intervals over draws)")
        doc.table(c.shifts, caption="Common difficulty shift of each condition (positive: every item harder)")
        for cond in c.conditions[1:]:
            fig, ax = plt.subplots(figsize=(6.5, 6))
            result.plot_rank_shifts(condition=cond, top_k=top_k, ax=ax)
            doc.figure(f"rank_shifts_{_slug(cond)}", fig, caption=f"Ranks under {c.reference} and {cond}")
            fig, ax = plt.subplots(figsize=(6.5, 6))
            result.plot_condition_effects(condition=cond, top_k=top_k, ax=ax)
            doc.figure(f"condition_effects_{_slug(cond)}", fig, caption=f"Effects of {cond} on item difficulty")
        flagged = c.items.loc[c.items["flagged"]].head(top_k)
        if len(flagged):
            doc.table(flagged, caption="Flagged items (the first rows; all in conditions_items.csv)", max_rows=top_k)
    if result.population is not None:
        p = result.population
        doc.heading("Population dependence")
        doc.paragraph(
            f"{len(result.refits)} refits on other populations of systems. A conclusion is stable when at least "
            f"{p.agreement:.0%} of the refits agree with the reference (rule in robustness.json)."
        )
        doc.table(p.conclusions, caption="Stability of each conclusion per benchmark", max_rows=200)
        for scope in p.conclusions["scope"].drop_duplicates().head(6):
            fig, ax = plt.subplots(figsize=(6.5, 4))
            result.plot_gap_locations(scope=str(scope), ax=ax)
            doc.figure(f"gap_locations_{_slug(str(scope))}", fig, caption=f"Widest gap of {scope} across populations")
    if result.revision is not None:
        doc.heading("Revised against original")
        doc.bullets(result.revision.summary)
        doc.table(result.revision.versions, caption="The two versions on one scale")
        doc.table(
            result.revision.subjects.head(top_k), caption="Largest rank changes (positive: worse on the revision)"
        )
    written = {
        "report_html": atomic_write_text(folder / "report.html", doc.to_html()),
        "report_md": atomic_write_text(folder / "report.md", doc.to_markdown()),
    }
    for name, (png, svg) in doc.figures.items():
        atomic_write_bytes(folder / "figures" / f"{name}.png", png)
        atomic_write_bytes(folder / "figures" / f"{name}.svg", svg)
    return written


def _slug(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text)[:40] or "x"
