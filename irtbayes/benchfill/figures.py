"""BenchFill's figures: candidates against the target, coverage before and after."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes


log = logging.getLogger(__name__)

# ============================================================================================ plots
_ACCEPTED = "#009E73"
_REJECTED = "#999999"
_BEFORE = "#0072B2"
_ADDED = "#E69F00"


def plot_candidate_intervals(
    decisions: pd.DataFrame, *, target_lo: float, target_hi: float, ax: Axes | None = None
) -> Axes:
    """Each candidate's posterior difficulty interval against the target interval.

    Parameters
    ----------
    decisions
        One row per candidate (index or column ``candidate_id``) with ``difficulty_mean``,
        ``difficulty_ci_low``, ``difficulty_ci_high`` and ``decision``; rows without numbers (no responses)
        are listed without an interval.
    target_lo, target_hi
        The target interval, shaded.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from irtbayes.benchfill.figures import plot_candidate_intervals
    >>> decisions = pd.DataFrame(
    ...     {"difficulty_mean": [0.4, 2.1], "difficulty_ci_low": [0.1, 1.6], "difficulty_ci_high": [0.7, 2.6],
    ...      "decision": ["accepted", "rejected"]},
    ...     index=pd.Index(["c1", "c2"], name="candidate_id"),
    ... )
    >>> ax = plot_candidate_intervals(decisions, target_lo=0.0, target_hi=1.0)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['c1', 'c2']
    """
    import matplotlib.pyplot as plt

    table = decisions.reset_index() if "candidate_id" not in decisions.columns else decisions.copy()
    table = table.sort_values("difficulty_mean", na_position="first", kind="stable").reset_index(drop=True)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, max(2.0, 0.28 * len(table) + 1.0)))
    ax.axvspan(target_lo, target_hi, color=_ACCEPTED, alpha=0.12, lw=0, label="target interval")
    for y, row in table.iterrows():
        accepted = row["decision"] == "accepted"
        colour = _ACCEPTED if accepted else _REJECTED
        mean = row.get("difficulty_mean")
        if mean is None or pd.isna(mean):
            ax.text(target_lo, y, " no responses", va="center", fontsize=7, color=_REJECTED)
            continue
        ax.plot([row["difficulty_ci_low"], row["difficulty_ci_high"]], [y, y], color=colour, lw=2)
        ax.plot([mean], [y], "o", color=colour, ms=4)
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels([str(c)[:28] for c in table["candidate_id"]], fontsize=7)
    ax.set_xlabel("difficulty (ability scale)")
    ax.set_title("Candidates: posterior difficulty against the target")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(color=_ACCEPTED, alpha=0.12, label="target"),
            Line2D([], [], color=_ACCEPTED, lw=2, label="accepted"),
            Line2D([], [], color=_REJECTED, lw=2, label="rejected"),
        ],
        fontsize=7,
        loc="best",
    )
    return ax


def plot_coverage_before_after(
    bins: pd.DataFrame, *, target_lo: float | None = None, target_hi: float | None = None, ax: Axes | None = None
) -> Axes:
    """Expected items per bin before and after: original items and added items stacked.

    Parameters
    ----------
    bins
        One scope's rows of the ``bins`` table of :func:`before_after` (``lo``, ``hi``,
        ``count_before_{mean,ci_low,ci_high}``, ``count_original_after_mean``, ``count_added_mean``,
        ``count_after_{ci_low,ci_high}``).
    target_lo, target_hi
        Mark the target interval.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from irtbayes.benchfill.figures import plot_coverage_before_after
    >>> bins = pd.DataFrame(
    ...     {"lo": [-1.0, 0.0], "hi": [0.0, 1.0], "count_before_mean": [5.0, 0.2], "count_before_ci_low": [4.0, 0.0],
    ...      "count_before_ci_high": [6.0, 1.0], "count_original_after_mean": [5.0, 0.2], "count_added_mean": [0.0, 2.9],
    ...      "count_after_ci_low": [4.0, 2.0], "count_after_ci_high": [6.0, 4.0]}
    ... )
    >>> plot_coverage_before_after(bins, target_lo=0.0, target_hi=1.0).get_ylabel()
    'expected items'
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7.0, 3.2))
    table = bins.sort_values("lo").reset_index(drop=True)
    x = np.arange(len(table))
    w = 0.38
    before = table["count_before_mean"].to_numpy(float)
    orig = table["count_original_after_mean"].to_numpy(float)
    added = table["count_added_mean"].to_numpy(float)
    ax.bar(x - w / 2, before, w, color=_BEFORE, alpha=0.55, label="before")
    ax.errorbar(
        x - w / 2,
        before,
        yerr=[before - table["count_before_ci_low"], table["count_before_ci_high"] - before],
        fmt="none",
        ecolor="black",
        lw=0.8,
    )
    ax.bar(x + w / 2, orig, w, color=_BEFORE, label="after: original items")
    ax.bar(x + w / 2, added, w, bottom=orig, color=_ADDED, label="after: added items")
    total = orig + added
    ax.errorbar(
        x + w / 2,
        total,
        yerr=[np.maximum(total - table["count_after_ci_low"], 0), np.maximum(table["count_after_ci_high"] - total, 0)],
        fmt="none",
        ecolor="black",
        lw=0.8,
    )
    if target_lo is not None and target_hi is not None:
        inside = (table["lo"] < target_hi) & (table["hi"] > target_lo)
        for k in np.flatnonzero(inside.to_numpy()):
            ax.axvspan(k - 0.5, k + 0.5, color=_ACCEPTED, alpha=0.1, lw=0)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{lo:.1f}–{hi:.1f}" for lo, hi in zip(table["lo"], table["hi"], strict=True)], rotation=45,
                       fontsize=7, ha="right")  # fmt: skip
    ax.set_xlabel("difficulty bin")
    ax.set_ylabel("expected items")
    ax.set_title("Coverage before and after BenchFill")
    ax.legend(fontsize=7)
    return ax
