"""The report's section on checkpoints tracked on a bank (:func:`tracking_section`): where each change helped and
where it hurt, by region of difficulty and benchmark."""

from __future__ import annotations

from typing import TYPE_CHECKING

from irtbayes.evaluating.tracking import pair_lines

if TYPE_CHECKING:
    from irtbayes.evaluating.tracking import Tracking
    from irtbayes.reporting.document import Document

__all__ = ["tracking_section"]


def tracking_section(tracking: Tracking, doc: Document) -> None:
    """The report's section on checkpoints: the text per pair, the figure and the abilities."""
    doc.heading("Checkpoints: where a change helped and where it hurt")
    doc.paragraph(
        "Each checkpoint against the one before (or the baseline), by region of difficulty and benchmark: the "
        "change of accuracy with a re-run's spread, what the change of ability alone predicts, and the smallest "
        "change each region could show (docs/tracking.md)."
    )
    for note in tracking.notes:
        doc.paragraph(f"Note: {note}")
    for (a, b), rows in tracking.changes.groupby(["from", "to"], sort=False):
        doc.heading(f"{a} to {b}", level=3)
        doc.bullets([line.strip() for line in pair_lines(rows, tracking.settings.get("effect", 0.10))])
    doc.figure("tracking", tracking.plot(), caption="Ability by step, and each region's change of accuracy (all items)")
    shown = tracking.abilities.round(3)
    doc.table(shown, caption="Each checkpoint's ability and accuracy over the bank's items, with intervals")
