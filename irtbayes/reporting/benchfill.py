"""BenchFill's section of the report (:func:`benchfill_section`): the aim and the acceptance rule, every
candidate with the rules it failed, coverage and the Maximum Gap and DDM before and after, each system's accuracy
on the original and the added items, and the editorial screens (:func:`editorial_section`).

Texts go to the :class:`~irtbayes.reporting.document.Document` as plain strings; it escapes them (HTML and
Markdown), so an item's text cannot inject markup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pandas as pd

from irtbayes.benchfill.result import GRADED_RULE, METHODS, unconverged_note
from irtbayes.core.plots import plot_candidate_intervals, plot_coverage_before_after
from irtbayes.reporting.document import shortened

if TYPE_CHECKING:
    from irtbayes.benchfill.result import BenchfillResult
    from irtbayes.reporting.document import Document

__all__ = ["benchfill_section", "editorial_section"]


def benchfill_section(result: BenchfillResult, doc: Document, figure: Callable[[str, Any, str], None]) -> None:
    """Add BenchFill's section to a report: the aim and the rule, the candidates, coverage and the measures
    before and after, each system's accuracy on the original and the added items, and the editorial screens.

    Parameters
    ----------
    result
        The round's result.
    doc
        The report being built.
    figure
        ``figure(name, ax, caption)`` embeds a matplotlib Axes.
    """
    aim = result.aim
    s = result.settings
    ci = result.ci_prob
    doc.heading("BenchFill: new items for the widest gap")
    doc.paragraph(
        f"The aim, the interval the new items should fill, is [{aim.lo:.2f}, {aim.hi:.2f}) on the ability scale: "
        f"{aim.how}. A candidate is accepted when the posterior puts its difficulty in the aim with probability at "
        f"least {s.get('tau')} (P(b in aim) >= tau), its "
        f"sign-free slope above {s.get('min_discrimination', 0):g} with probability at least "
        f"{s.get('discrimination_prob')}, and at least {s.get('min_responses')} systems answered it. "
        f"{METHODS.get(str(s.get('mode')), '')}"
        + (f" Graded items ({str(s['kind']).upper()}): {GRADED_RULE}" if s.get("kind") in ("grm", "gpcm") else "")
    )
    reasons = result.decisions["reason"].value_counts()
    doc.paragraph(
        "A candidate must also be new (not a near-verbatim copy of a bank item or of another candidate, and "
        "not an unasked rewrite of a bank item), on-construct (its responses fit the model; with several "
        "ability dimensions, its own domain's ability carries it) and correctly keyed (the slope screen)."
    )
    doc.bullets(
        [f"{len(result.decisions)} candidates, {len(result.accepted)} accepted."]
        + [f"{int(v)} {k}" for k, v in reasons.items() if k != "in aim"]
        + ([unconverged_note(s)] if unconverged_note(s) else [])
    )
    figure(
        "benchfill_candidates",
        plot_candidate_intervals(result.decisions, aim_lo=aim.lo, aim_hi=aim.hi),
        f"Each candidate's posterior difficulty (mean and {ci:.0%} interval) against the aim "
        "(shaded); accepted candidates in colour.",
    )
    cols = ["decision", "reason", "p_in_aim", "difficulty_mean", "difficulty_ci_low", "difficulty_ci_high",
            "discrimination_mean", "n_responses"]  # fmt: skip
    table = result.with_every_reason()
    doc.table(table[[c for c in cols if c in table.columns]].reset_index(), caption="Candidates")
    shown = result.shown_bins()
    figure(
        "benchfill_coverage",
        plot_coverage_before_after(shown, aim_lo=aim.lo, aim_hi=aim.hi),
        f"Coverage of {aim.benchmark or 'all items'} before and after: expected items per bin, the original "
        f"items and the added ones stacked, with {ci:.0%} intervals of the totals.",
    )
    comp_cols = ["scope", "version", "n_items", "n_added", "max_gap_mean", "max_gap_ci_low", "max_gap_ci_high",
                 "ddm_w1_mean", "ddm_w1_ci_low", "ddm_w1_ci_high", "gap_lo", "gap_hi"]  # fmt: skip
    doc.table(result.comparison[comp_cols], caption="Maximum Gap and DDM before and after (original items kept)")
    doc.paragraph(
        "Every original item stays in the extended benchmark; the table below gives each system's raw "
        "accuracy on the original and on the added items separately, and its re-weighted rank (all items) "
        "before and after, so a change in rank can be traced to the new items."
    )
    sub_cols = ["subject", "accuracy_original", "accuracy_added", "rank_before_mean", "rank_after_mean",
                "reweighted_before_mean", "reweighted_after_mean"]  # fmt: skip
    doc.table(result.subjects[[c for c in sub_cols if c in result.subjects.columns]], caption="Systems")
    editorial_section(result, doc)


def editorial_section(result: BenchfillResult, doc: Document) -> None:
    """The editorial part of the BenchFill report section: every decision with each screen's verdict, each
    accepted item beside its closest bank item, and which conclusions changed by composition alone.

    Texts go to ``doc`` as plain strings; :class:`irtbayes.reporting.document.Document` escapes them (HTML and
    Markdown), so an item's text cannot inject markup.
    """
    d = result.decisions
    novelty = result.settings.get("novelty") or {}
    screens = ["decision", "reason", "bin_check", "key_check", "novelty", "construct"]
    if set(screens) <= set(d.columns):
        doc.table(d[screens].reset_index(), caption="Every decision with its reasons: bin, key, novelty, construct")
    if novelty.get("bank_texts", 1) == 0:
        doc.paragraph(
            "The bank's items have no text (no 'text' column in the data), so the candidates were not compared with "
            "the bank: their novelty is unchecked against it (they were compared with one another)."
        )
    if "closest_item" in d.columns and result.accepted:
        acc = d.loc[result.accepted]
        table = pd.DataFrame(
            {
                "candidate_id": acc.index,
                "candidate text": [shortened(x) for x in acc["text"]],
                "closest bank item": acc["closest_item"].to_numpy(),
                "its text": [shortened(x) for x in acc.get("closest_text", pd.Series(None, index=acc.index))],
                "word similarity": acc["closest_word_similarity"].to_numpy(),
                "content similarity": acc["closest_content_similarity"].to_numpy(),
                "novelty": acc["novelty"].to_numpy(),
            }
        )
        doc.table(table, caption="Accepted items beside their closest bank item")
    c = result.conclusions
    if not c.empty:
        changed = c.loc[c["changed"].astype(bool)]
        lines = [
            f"{row['scope']}: {row['measure']} {row['verdict']} ({row['from']} to {row['to']}), by {row['cause']}"
            for _, row in changed.iterrows()
        ]
        doc.paragraph(
            "Conclusions that changed because of the new composition alone compare the original items with the "
            "extended benchmark under the same posterior; after a full refit, changes of the original items' "
            "own estimates are reported as re-estimation."
        )
        doc.bullets(lines or ["No conclusion changed credibly."])
        doc.table(c.drop(columns=["scope_kind"]), caption="Conclusions before and after, and why they changed")
