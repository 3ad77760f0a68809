"""The report's section on flagged items (:func:`item_flags_section`): how many items ``irtbayes check-items`` flagged
reversed, flat or DIF, and the flagged ones ranked, each with its statistic, interval, probability and text."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from irtbayes.core.summaries import format_interval
from irtbayes.reporting.document import format_probability, shortened

if TYPE_CHECKING:
    from irtbayes.reporting.document import Document

__all__ = ["MAX_FLAGGED", "item_flags_section"]

#: Flagged items listed in the report (all are in item_flags.csv).
MAX_FLAGGED = 25


def item_flags_section(doc: Document, table: pd.DataFrame, *, excluded: bool = False) -> None:
    """Add the flagged items to a report.

    Parameters
    ----------
    doc
        The report being built.
    table
        :attr:`irtbayes.checks.items.ItemChecks.items` (or :func:`irtbayes.checks.items.load_item_checks` of its CSV).
    excluded
        Whether the audit left the flagged items out of its measures.

    Examples
    --------
    >>> from irtbayes.reporting.document import Document
    >>> table = pd.DataFrame({"item": ["q1", "q2"], "benchmark": ["b", "b"], "flag": ["reversed", ""],
    ...                       "slope_mean": [-1.2, 0.9], "slope_ci_low": [-2.0, 0.5], "slope_ci_high": [-0.4, 1.3],
    ...                       "local_false_flag": [0.01, float("nan")], "text": ["<b>2+2</b>", "x"]})
    >>> doc = Document(title="t")
    >>> item_flags_section(doc, table)
    >>> "1 of 2 items flagged: 1 reversed" in doc.to_markdown(), "&lt;b&gt;2+2&lt;/b&gt;" in doc.to_html()
    (True, True)
    """
    flagged = table.loc[table["flag"].astype(str) != ""]
    counts = flagged["flag"].value_counts()
    kinds = ", ".join(f"{int(counts[k])} {k}" for k in ("reversed", "flat", "dif") if k in counts)
    doc.heading("Flagged items")
    where = "left out of every measure above" if excluded else "counted in every measure above"
    doc.paragraph(
        f"{len(flagged):,} of {len(table):,} items flagged: {kinds or 'none'} (`irtbayes check-items`; {where}). "
        "Reversed: responses fall as ability rises (a wrong key); flat: no relation to ability; dif: one group "
        "answers far above (a leak) or below what its ability predicts. Read each before dropping it."
    )
    if flagged.empty:
        return
    shown = flagged.head(MAX_FLAGGED)
    rows = pd.DataFrame(
        {
            "item": shown["item"].astype(str).to_numpy(),
            "benchmark": shown["benchmark"].astype(str).to_numpy() if "benchmark" in shown else "",
            "flag": shown["flag"].to_numpy(),
            "slope": [format_interval(r, "slope") for _, r in shown.iterrows()],
            "P(flag)": [
                format_probability(1 - float(v)) for v in shown.get("local_false_flag", pd.Series(dtype=float))
            ],
            "group": [_group(r) for _, r in shown.iterrows()],
            "text": [shortened(v) for v in shown["text"]] if "text" in shown else "",
        }
    )
    more = f" (the first {MAX_FLAGGED}; all in item_flags.csv)" if len(flagged) > MAX_FLAGGED else ""
    doc.table(rows, caption=f"Flagged items, most certain first{more}", max_rows=MAX_FLAGGED)


def _group(row: pd.Series) -> str:
    """The group of a DIF flag and its effect: ``g2 above, 2.03 [1.01, 2.97]``; "" for the other flags."""
    if row["flag"] != "dif":
        return ""
    return f"{row['dif_group']} {row['dif_direction']}, {format_interval(row, 'dif_effect')}"
