"""Figures of a robustness report: rank shifts between conditions, condition effects per item, gap locations.

Each takes a precomputed table, draws a bounded number of rows (``top_k``) whatever the data's size, on ``ax``
when given one (else on a new figure), and returns the Axes. The ``plot_*`` methods of
:class:`~irtbayes.robustness.run.RobustnessResult` call them with the result's tables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_condition_effects", "plot_gap_locations", "plot_rank_shifts"]

_BLUE, _ORANGE, _GREY = "#0072B2", "#D55E00", "#999999"


def _axes(ax: Axes | None, *, width: float, height: float) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=(width, height))
    axes: Axes = new
    return axes


def plot_rank_shifts(
    subjects: pd.DataFrame, *, reference: str, condition: str, top_k: int = 30, ax: Axes | None = None
) -> Axes:
    """Each system's rank under ``reference`` and under ``condition`` with intervals; the ``top_k`` that move most.

    Parameters
    ----------
    subjects
        :attr:`~irtbayes.robustness.conditions.ConditionEffects.subjects` (``rank_{c}_mean``, ``rank_{c}_ci_low``,
        ``rank_{c}_ci_high``, ``flagged``).

    Examples
    --------
    >>> subjects = pd.DataFrame(
    ...     {
    ...         "subject": ["m1", "m2", "m3"],
    ...         "rank_original_mean": [1.0, 2.0, 3.0],
    ...         "rank_original_ci_low": [1, 1, 2],
    ...         "rank_original_ci_high": [2, 3, 3],
    ...         "rank_paraphrased_mean": [3.0, 2.0, 1.0],
    ...         "rank_paraphrased_ci_low": [2, 1, 1],
    ...         "rank_paraphrased_ci_high": [3, 3, 2],
    ...         "flagged": [True, False, True],
    ...     }
    ... )
    >>> ax = plot_rank_shifts(subjects, reference="original", condition="paraphrased", top_k=2)
    >>> [label.get_text() for label in ax.get_yticklabels()]  # m2 does not move
    ['m1 *', 'm3 *']
    """
    moved = (subjects[f"rank_{condition}_mean"] - subjects[f"rank_{reference}_mean"]).abs()
    rows = subjects.assign(_moved=moved).nlargest(top_k, "_moved").sort_values(f"rank_{reference}_mean")
    ax = _axes(ax, width=6.5, height=max(2.5, 0.9 + 0.28 * len(rows)))
    y = np.arange(len(rows))
    for offset, cond, colour in ((-0.15, reference, _GREY), (0.15, condition, _BLUE)):
        ax.hlines(y + offset, rows[f"rank_{cond}_ci_low"], rows[f"rank_{cond}_ci_high"], color=colour, lw=2)
        ax.scatter(rows[f"rank_{cond}_mean"], y + offset, color=colour, s=16, zorder=3, label=cond)
    flagged = rows["flagged"].to_numpy(dtype=bool)
    ax.set_yticks(y)
    ax.set_yticklabels([f"{s}{' *' if f else ''}"[:32] for s, f in zip(rows["subject"], flagged, strict=True)])
    ax.invert_xaxis()
    ax.set_xlabel("rank (1 = best; intervals over posterior draws)")
    extra = f", the {len(rows)} that move most" if len(rows) < len(subjects) else ""
    ax.set_title(f"Ranks under {reference} and {condition}{extra} (* flagged)", fontsize="medium")
    ax.legend(loc="best", fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_condition_effects(
    items: pd.DataFrame, *, condition: str, shift: float | None = None, top_k: int = 30, ax: Axes | None = None
) -> Axes:
    """Each item's effect of ``condition`` on difficulty with its interval; the ``top_k`` largest, flagged in orange.

    Parameters
    ----------
    items
        :attr:`~irtbayes.robustness.conditions.ConditionEffects.items` (``{c}_median``, ``{c}_ci_low``, ``{c}_ci_high``,
        ``{c}_flagged``); the point is the posterior median.
    shift
        The condition's common shift, drawn as a dashed line (items are flagged against it by default).

    Examples
    --------
    >>> items = pd.DataFrame(
    ...     {
    ...         "item": ["q1", "q2", "q3"],
    ...         "paraphrased_median": [0.1, 1.2, -0.2],
    ...         "paraphrased_ci_low": [-0.2, 0.8, -0.5],
    ...         "paraphrased_ci_high": [0.4, 1.6, 0.1],
    ...         "paraphrased_flagged": [False, True, False],
    ...     }
    ... )
    >>> ax = plot_condition_effects(items, condition="paraphrased", shift=0.1)
    >>> [label.get_text() for label in ax.get_yticklabels()], ax.get_legend().get_texts()[0].get_text()
    (['q3', 'q1', 'q2'], 'common shift 0.10')
    """
    point = f"{condition}_median" if f"{condition}_median" in items.columns else f"{condition}_mean"
    centre = 0.0 if shift is None else float(shift)
    rows = items.assign(_abs=(items[point] - centre).abs()).nlargest(top_k, "_abs")
    rows = rows.sort_values(point)
    ax = _axes(ax, width=6.5, height=max(2.5, 0.9 + 0.26 * len(rows)))
    y = np.arange(len(rows))
    colours = np.where(rows[f"{condition}_flagged"].to_numpy(dtype=bool), _ORANGE, _BLUE)
    ax.hlines(y, rows[f"{condition}_ci_low"], rows[f"{condition}_ci_high"], color=colours, lw=2)
    ax.scatter(rows[point], y, color=colours, s=16, zorder=3)
    ax.axvline(0, color=_GREY, lw=1)
    if shift is not None:
        ax.axvline(centre, color=_GREY, lw=1, ls="--", label=f"common shift {centre:.2f}")
        ax.legend(loc="best", fontsize="small")
    ax.set_yticks(y)
    ax.set_yticklabels([str(i)[:32] for i in rows["item"]], fontsize="small")
    ax.set_xlabel(f"effect of {condition} on difficulty (logits; median and interval; positive = harder)")
    extra = f": {len(rows)} of {len(items)} items, farthest from the shift" if len(rows) < len(items) else ""
    ax.set_title(f"Effects of {condition} per item{extra}; flagged in orange", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    return ax


def plot_gap_locations(
    refits: pd.DataFrame, *, reference: tuple[float, float], scope: str, ax: Axes | None = None
) -> Axes:
    """The widest gap of ``scope`` in every refit (own scale and linked) beside the reference's.

    Parameters
    ----------
    refits
        :attr:`~irtbayes.robustness.population.PopulationStability.refits`.
    reference
        The reference gap interval.

    Examples
    --------
    >>> refits = pd.DataFrame(
    ...     {
    ...         "scope": "all",
    ...         "population": ["half A", "half B"],
    ...         "gap_lo": [0.2, 0.3],
    ...         "gap_hi": [1.0, 1.1],
    ...         "gap_lo_linked": [0.25, 0.3],
    ...         "gap_hi_linked": [1.05, 1.0],
    ...     }
    ... )
    >>> ax = plot_gap_locations(refits, reference=(0.3, 1.2), scope="all")
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['reference', 'half A', 'half B']
    """
    rows = refits.loc[refits["scope"] == scope].head(40)
    ax = _axes(ax, width=6.5, height=max(2.5, 1.2 + 0.26 * (len(rows) + 1)))
    y = np.arange(len(rows) + 1)
    ax.hlines(y[0], *reference, color=_GREY, lw=5, label="reference")
    ax.hlines(y[1:] - 0.12, rows["gap_lo"], rows["gap_hi"], color=_BLUE, lw=2, label="refit (own scale)")
    ax.hlines(y[1:] + 0.12, rows["gap_lo_linked"], rows["gap_hi_linked"], color=_ORANGE, lw=2, label="refit (linked)")
    ax.set_yticks(y)
    ax.set_yticklabels(["reference", *[str(p)[:28] for p in rows["population"]]], fontsize="small")
    ax.set_xlabel("ability / difficulty (logits)")
    ax.set_title(f"Widest gap of {scope} across populations", fontsize="medium")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    return ax
