"""Figures of the notebooks' cross-population audit (notebook 3; not part of the irtbayes package).

Every function takes the rows of ``benchmark_audit.csv`` (one per population and benchmark or sub-benchmark) and
the colours of :func:`irtbayes.core.plots.domain_palette` over all their domains, so a domain looks the same in every
figure. A row whose fit is not ``converged`` carries a mark in its label (:data:`MARK`), and the legend says what
the marks mean: no figure shows such a row unmarked.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from irtbayes.core.plots import plot_forest

#: The mark after a row's label, by its fit's verdict.
MARK = {"converged": "", "approximate": " ≈", "NOT CONVERGED": " †"}
MARK_NOTE = "≈ approximate tier (validated, not NUTS); † NUTS that failed its convergence checks"
GREY = "#555555"
#: Logits beyond the target range that the difficulty figure shows.
WINDOW = 4.0


def marked(label: str, verdict: str) -> str:
    """``label`` followed by its verdict's mark."""
    return f"{label}{MARK.get(verdict, ' ?')}"


def _row_name(row: pd.Series) -> str:
    name = f"  {row['sub_benchmark']}" if row["sub_benchmark"] else str(row["benchmark"])
    return marked(name, row["verdict"])


def _population_title(rows: pd.DataFrame) -> str:
    first = rows.iloc[0]
    return f"{first['population']}: {first['subjects_total']} systems; {first['sampler']}"


def _legend_handles(domains: list[str], colours: Mapping[str, str], markers: Mapping[str, str] | None) -> list:
    return [
        Line2D([], [], color=colours[d], lw=2, marker=(markers or {}).get(d, "o"), label=d) for d in sorted(domains)
    ]


def plot_forests(
    results: pd.DataFrame,
    prefix: str,
    xlabel: str,
    colours: Mapping[str, str],
    markers: Mapping[str, str],
    *,
    reference: str | None = None,
) -> Figure:
    """One forest panel per population (rows sorted by the mean, sub-benchmarks after their benchmark), 90%
    intervals; ``reference``: a column drawn as a black tick on each row."""
    groups = [g for _, g in results.groupby("population", sort=False)]
    heights = [1.2 + 0.24 * len(g) for g in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(8.5, sum(heights)), height_ratios=heights, squeeze=False)
    for ax, rows in zip(axes[:, 0], groups, strict=True):
        rows = rows.sort_values(["level", f"{prefix}_mean"]).copy()
        rows["shown"] = [_row_name(r) for _, r in rows.iterrows()]
        plot_forest(
            rows,
            mean=f"{prefix}_mean",
            low=f"{prefix}_ci_low",
            high=f"{prefix}_ci_high",
            label="shown",
            colour_by="domain",
            sort=False,
            colours=colours,
            markers=markers,
            ax=ax,
        )
        if reference is not None:
            ax.scatter(rows[reference], np.arange(len(rows)), marker="|", color="black", s=40, zorder=4)
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        ax.set_xlabel("")
        ax.set_title(_population_title(rows), fontsize="small", loc="left")
    # one scale for every panel, so a population with one benchmark is not read at a magnified scale
    low = float(results[f"{prefix}_ci_low"].min())
    high = float(max(results[f"{prefix}_ci_high"].max(), results[reference].max() if reference else -np.inf))
    pad = 0.03 * (high - low or 1.0)
    for ax in axes[:, 0]:
        ax.set_xlim(min(low, 0.0) - pad, high + pad)
    axes[-1, 0].set_xlabel(xlabel)
    note = MARK_NOTE + ("; | expected widest gap of as many items spread at random" if reference else "")
    domains = sorted(set(results["domain"]))
    fig.legend(
        handles=_legend_handles(domains, colours, markers),
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize="small",
        title="domain",
    )
    fig.text(0.01, -0.01, note, fontsize="small", va="top")
    fig.tight_layout()
    return fig


def plot_difficulty_vs_ability(
    shapes: Mapping[str, Mapping[str, object]], results: pd.DataFrame, colours: Mapping[str, str]
) -> Figure:
    """Per population: the systems' posterior mean abilities (grey, top) and each benchmark's posterior mean item
    difficulties (violins coloured by domain), with the population's target range shaded."""
    names = list(shapes)
    heights = [1.6 + 0.3 * (shapes[n]["difficulty"]["benchmark"].nunique() + 1) for n in names]  # type: ignore[index]
    fig, axes = plt.subplots(len(names), 1, figsize=(9, sum(heights)), height_ratios=heights, squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        shape = shapes[name]
        items: pd.DataFrame = shape["difficulty"]  # type: ignore[assignment]
        ability = np.asarray(shape["ability"], dtype=float)
        lo, hi = shape["range"]  # type: ignore[misc]
        rows = results.loc[(results["population"] == name) & (results["scope_kind"] == "benchmark")]
        domain_of = dict(zip(rows["scope"].astype(str), rows["domain"].astype(str), strict=True))
        order = items.groupby("benchmark", observed=True)["difficulty_mean"].median().sort_values().index.tolist()
        data = [ability] + [items.loc[items["benchmark"] == b, "difficulty_mean"].to_numpy(float) for b in order]
        labels = ["systems' abilities"] + [f"{b} ({len(d)})" for b, d in zip(order, data[1:], strict=True)]
        y = np.arange(len(data))[::-1]
        # the window: the target range and most items, at most WINDOW logits beyond the range; items past it are
        # counted at the edge (a non-discriminating item's difficulty can lie tens of logits out)
        every = np.concatenate(data)
        x_lo = max(min(lo, float(np.quantile(every, 0.01))) - 0.5, lo - WINDOW)
        x_hi = min(max(hi, float(np.quantile(every, 0.99))) + 0.5, hi + WINDOW)
        ax.axvspan(lo, hi, color="#dddddd", alpha=0.5, zorder=0, lw=0)
        beyond = 0
        for pos, values, i in zip(y, data, range(len(data)), strict=True):
            colour = GREY if i == 0 else colours.get(str(domain_of.get(order[i - 1], "")), GREY)
            left, right = int((values < x_lo).sum()), int((values > x_hi).sum())
            beyond += left + right
            if left:
                ax.text(x_lo, pos + 0.3, f"◀{left}", fontsize="x-small", ha="left", va="center", color=colour)
            if right:
                ax.text(x_hi, pos + 0.3, f"{right}▶", fontsize="x-small", ha="right", va="center", color=colour)
            median = float(np.median(values))
            values = values[(values >= x_lo) & (values <= x_hi)]
            if len(values) >= 3 and np.ptp(values) > 0:
                parts = ax.violinplot(values, positions=[pos], vert=False, widths=0.85, showextrema=False)
                for body in parts["bodies"]:
                    body.set_facecolor(colour)
                    body.set_edgecolor(colour)
                    body.set_alpha(0.55)
            ax.scatter(values, np.full(len(values), pos), s=2, color=colour, alpha=0.25 if len(values) > 200 else 0.6)
            if x_lo <= median <= x_hi:
                ax.plot([median], [pos], marker="|", color="black", ms=10)
        ax.set_yticks(y, labels, fontsize="small")
        ax.set_title(
            f"{name}: {marked(str(shape['sampler']), str(shape['verdict']))}; shaded = target range [{lo:.2f}, {hi:.2f}]"
            + (f"; ◀n / n▶ = items beyond the window ({beyond} in all)" if beyond else ""),
            fontsize="small",
            loc="left",
        )
        ax.set_xlim(x_lo, x_hi)
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.7, len(data) - 0.3)
    axes[-1, 0].set_xlabel("logits (each population on its own scale): posterior means; | = median")
    domains = sorted(set(results["domain"]))
    fig.legend(
        handles=_legend_handles(domains, colours, None),
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize="small",
        title="domain",
    )
    fig.text(0.01, -0.005, MARK_NOTE, fontsize="small", va="top")
    fig.tight_layout()
    return fig


def plot_coverage_with_outside(results: pd.DataFrame, bins: pd.DataFrame, colours: Mapping[str, str]) -> Figure:
    """Heatmap: rows are (population, benchmark) rows, columns the share of the items below the range, in each
    bin, and above it (expected shares of all the row's items); x where a bin is empty with probability >= 0.8."""
    n_bins = int(bins["bin"].max()) + 1
    matrix, empty, labels, row_colours = [], [], [], []
    for _, r in results.iterrows():
        at = (bins["population"] == r["population"]) & (bins["scope_kind"] == r["scope_kind"])
        b = bins.loc[at & (bins["scope"] == r["scope"])]
        b = b.sort_values("bin")
        if len(b) != n_bins:
            continue
        matrix.append([r["mass_below_mean"], *b["share_mean"].to_numpy(float), r["mass_above_mean"]])
        empty.append([False, *(b["p_empty"].to_numpy(float) >= 0.8), False])
        labels.append(marked(str(r["label"]), r["verdict"]))
        row_colours.append(colours.get(str(r["domain"]), GREY))
    values = np.asarray(matrix)
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.2 * len(values)))
    image = ax.imshow(values, aspect="auto", cmap="viridis", vmin=0, vmax=max(float(values.max()), 0.3))
    for i, j in zip(*np.nonzero(np.asarray(empty)), strict=True):
        ax.text(j, i, "x", ha="center", va="center", color="white", fontsize="x-small")
    ax.set_xticks(range(n_bins + 2), ["below", *[str(k + 1) for k in range(n_bins)], "above"], fontsize="small")
    ax.axvline(0.5, color="white", lw=2)
    ax.axvline(n_bins + 0.5, color="white", lw=2)
    ax.set_yticks(range(len(labels)), labels, fontsize="x-small")
    for tick, colour in zip(ax.get_yticklabels(), row_colours, strict=True):
        tick.set_color(colour)
    ax.set_xlabel("below the range | bins of each population's target range (low to high difficulty) | above")
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.01, label="expected share of the row's items")
    ax.set_title(
        "Coverage of each population's range, with the shares outside it (labels coloured by domain)", fontsize="small"
    )
    fig.text(0.01, -0.01, MARK_NOTE + "; x = empty with probability >= 0.8", fontsize="small", va="top")
    fig.tight_layout()
    return fig


def plot_side_by_side(pairs: pd.DataFrame, colours: Mapping[str, str]) -> Figure:
    """Benchmarks taken by two populations: DDM, Maximum Gap share and the shares below/above the range, one
    row per (benchmark, population)."""
    rows = pairs.sort_values(["benchmark", "population"]).reset_index(drop=True)
    labels = [marked(f"{r.benchmark} in {r.population} ({r.items} items)", r.verdict) for r in rows.itertuples()]
    y = np.arange(len(rows))[::-1]
    fig, axes = plt.subplots(1, 3, figsize=(11, 1.2 + 0.35 * len(rows)), sharey=True)
    for ax, (prefix, title) in zip(axes[:2], (("ddm", "DDM"), ("max_gap_rel", "widest gap / (U - L)")), strict=True):
        c = [colours.get(str(d), GREY) for d in rows["domain"]]
        ax.hlines(y, rows[f"{prefix}_ci_low"], rows[f"{prefix}_ci_high"], color=c, lw=2)
        ax.scatter(rows[f"{prefix}_mean"], y, color=c, zorder=3, s=18)
        ax.set_title(title, fontsize="small")
        ax.grid(axis="x", alpha=0.3)
    ax = axes[2]
    ax.barh(y, rows["mass_below_mean"], color="#999999", label="below the range")
    ax.barh(y, rows["mass_above_mean"], left=rows["mass_below_mean"], color="#333333", label="above the range")
    ax.set_xlim(0, 1)
    ax.set_title("share of items outside the range", fontsize="small")
    ax.legend(fontsize="x-small", loc="lower right")
    axes[0].set_yticks(y, labels, fontsize="small")
    fig.text(0.01, -0.02, MARK_NOTE, fontsize="small", va="top")
    fig.tight_layout()
    return fig
