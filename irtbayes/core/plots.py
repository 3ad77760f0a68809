"""Figures. Each ``plot_*`` takes a precomputed table (from a fit or an audit) and returns the Axes it drew on.

Colours come from the Okabe-Ito palette (safe for the common forms of colour blindness); long names are
shortened in the middle so 25+ benchmarks and 30+ subjects stay legible at paper size.

Sizes are bounded whatever the data: figures grow with the number of rows up to :data:`MAX_WIDTH` x
:data:`MAX_HEIGHT` inches; past :data:`MAX_LABELS` rows the row labels are left out; legends list at most
:data:`MAX_LEGEND` entries; scatters of more than :data:`RASTER_POINTS` points are rasterised in vector
output; the item-person map draws at most ``max_subjects`` subjects. Choosing *which* rows to show (the
top-k subjects, say) is the caller's: :mod:`irtbayes.reporting.report` passes the top of each table.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import matplotlib.ticker
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.lines import Line2D

from irtbayes.core.summaries import spaced

__all__ = [
    "MAX_FOREST_ROWS",
    "MAX_HEIGHT",
    "MAX_LABELS",
    "MAX_LEGEND",
    "MAX_WIDTH",
    "OKABE_ITO",
    "domain_colours",
    "domain_palette",
    "forest_rows",
    "plot_ahead_matrix",
    "plot_candidate_intervals",
    "plot_coverage_before_after",
    "plot_coverage_heatmap",
    "plot_error_curves",
    "plot_expected_error",
    "plot_forest",
    "plot_item_curves",
    "plot_item_person_map",
    "plot_leaderboard",
    "plot_rhat_ess",
    "plot_test_information",
    "plot_test_trace",
    "shorten",
    "text_labels",
    "unloaded_lazy_modules_hidden",
]

#: Rows a forest plot of items or subjects shows at most (evenly spaced over the sorted rows beyond that).
MAX_FOREST_ROWS = 40

#: Okabe & Ito (2008) colour-blind-safe palette, black last.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
#: For more than 8 domains: matplotlib's ``tab20``, its ten strong colours first and then their light partners, so
#: up to 20 domains get distinct colours.
WIDE_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)  # fmt: skip
#: Largest figure, in inches (at the report's 150 dpi: 1,950 x 2,100 pixels before the tight bounding box).
MAX_WIDTH, MAX_HEIGHT = 13.0, 14.0
#: Rows beyond which tick labels are left out (they would overlap).
MAX_LABELS = 80
#: Legend entries beyond which the rest are counted in one entry.
MAX_LEGEND = 12
#: Points beyond which a scatter is rasterised in SVG/PDF output.
RASTER_POINTS = 2000
SHADE = LinearSegmentedColormap.from_list("irtbayes_blues", ["#FFFFFF", "#56B4E9", "#0072B2", "#00304F"])


def shorten(name: object, width: int = 28) -> str:
    """Shorten a long label in the middle: ``'Meta-Llama-3_1-70B-Instruct'`` stays, longer ones get '…'.

    Examples
    --------
    >>> shorten("Meta-Llama-3_1-70B-Instruct"), shorten("abcdefghij", width=7)
    ('Meta-Llama-3_1-70B-Instruct', 'abc…hij')
    """
    text = str(name)
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: (keep + 1) // 2] + "…" + text[-(keep // 2) :]


def _palette(n: int) -> tuple[str, ...]:
    return OKABE_ITO if n <= len(OKABE_ITO) else WIDE_PALETTE


def domain_colours(domains: Sequence[object]) -> dict[str, str]:
    """One colour per distinct domain, in order of first appearance: the colour-blind-safe Okabe-Ito palette for up
    to 8 domains, :data:`WIDE_PALETTE` for up to 20 (cycling past 20).

    Examples
    --------
    >>> domain_colours(["law", "maths", "law"])
    {'law': '#0072B2', 'maths': '#E69F00'}
    >>> len(set(domain_colours([f"d{i}" for i in range(16)]).values()))
    16
    """
    distinct = list(dict.fromkeys(str(d) for d in domains))
    palette = _palette(len(distinct))
    return {d: palette[i % len(palette)] for i, d in enumerate(distinct)}


MARKERS = ("o", "s", "^", "D", "v", "P")


def domain_markers(domains: Sequence[object]) -> dict[str, str]:
    """A marker per distinct domain that changes each time the colours cycle (past 20 domains), so they stay distinct."""
    distinct = list(dict.fromkeys(str(d) for d in domains))
    n = len(_palette(len(distinct)))
    return {d: MARKERS[(i // n) % len(MARKERS)] for i, d in enumerate(distinct)}


def domain_palette(domains: Sequence[object]) -> tuple[dict[str, str], dict[str, str]]:
    """(colours, markers) for every domain a report shows, in sorted order, so that a domain looks the same in
    every figure whichever of its benchmarks a figure draws.

    Examples
    --------
    >>> colours, markers = domain_palette(["maths", "law"])
    >>> colours, markers
    ({'law': '#0072B2', 'maths': '#E69F00'}, {'law': 'o', 'maths': 'o'})
    """
    distinct = sorted({str(d) for d in domains})
    return domain_colours(distinct), domain_markers(distinct)


def _shared(
    given: Mapping[str, str] | None, make: Callable[[Sequence[object]], dict[str, str]], keys: Sequence[object]
) -> dict[str, str]:
    """``given`` with any key it lacks filled from ``make(keys)``, or ``make(keys)`` alone."""
    own = make(keys)
    return own if given is None else {**own, **given}


def text_labels(values: pd.Series | Sequence[object], *, missing: str = "") -> list[str]:
    """Labels as text, with missing values (None, NaN, pandas.NA) as ``missing``.

    Examples
    --------
    >>> text_labels(["x", None, float("nan"), pd.NA, 3], missing="?")
    ['x', '?', '?', '?', '3']
    """
    return [missing if v is None or (not isinstance(v, str) and bool(pd.isna(v))) else str(v) for v in values]


def _axes(ax: Axes | None, *, width: float, height: float) -> Axes:
    if ax is not None:
        return ax
    _, new = plt.subplots(figsize=(min(width, MAX_WIDTH), min(height, MAX_HEIGHT)), layout="constrained")
    return new


def _row_labels(ax: Axes, axis: str, labels: Sequence[object], *, width: int = 30, **kwargs: Any) -> None:
    """Tick labels for ``len(labels)`` rows (``axis`` "x" or "y"), or none past :data:`MAX_LABELS`."""
    ticks = range(len(labels))
    setter = ax.set_yticks if axis == "y" else ax.set_xticks
    if len(labels) <= MAX_LABELS:
        setter(ticks, [shorten(v, width) for v in labels], **kwargs)
    else:
        setter([])
        (ax.set_ylabel if axis == "y" else ax.set_xlabel)(f"{len(labels):,} rows (labels left out)")


def _pad_flat_limits(ax: Axes, values: np.ndarray, *, axis: str) -> None:
    """Give an axis whose data all share one value a small range around it (matplotlib would warn)."""
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0 or finite.min() < finite.max():
        return
    centre = float(finite[0])
    pad = max(abs(centre) * 0.05, 0.5)
    (ax.set_xlim if axis == "x" else ax.set_ylim)(centre - pad, centre + pad)


def _legend(ax: Axes, handles: Sequence[Any] | None = None, **kwargs: Any) -> None:
    """A legend outside the axes, right, with at most :data:`MAX_LEGEND` entries."""
    if handles is None:
        handles = ax.get_legend_handles_labels()[0]
    handles = list(handles)
    if len(handles) > MAX_LEGEND:
        rest = len(handles) - (MAX_LEGEND - 1)
        handles = [*handles[: MAX_LEGEND - 1], Line2D([], [], ls="", label=f"… and {rest} more")]
    if handles:
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False, **kwargs
        )


def _mark_target(ax: Axes, lo: float, hi: float, edges: Sequence[float] | None, *, vertical: bool) -> None:
    span = ax.axhspan if vertical else ax.axvspan
    line = ax.axhline if vertical else ax.axvline
    span(lo, hi, color="#E69F00", alpha=0.08, zorder=0)
    for edge in edges if edges is not None else (lo, hi):
        line(edge, color="#E69F00", lw=0.6, alpha=0.7, zorder=0)


def plot_item_person_map(
    subjects: pd.DataFrame,
    items: pd.DataFrame,
    *,
    target_range: tuple[float, float] | None = None,
    edges: Sequence[float] | None = None,
    group: str = "benchmark",
    max_subjects: int = 200,
    colours: Mapping[str, str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Item-person (Wright) map: subjects' abilities beside each group's item difficulties.

    Parameters
    ----------
    subjects
        One row per subject with ``ability_mean``, ``ability_ci_low``, ``ability_ci_high`` (index or column
        ``subject``).
    items
        One row per item with ``difficulty_mean`` and the ``group`` column (default ``benchmark``); an
        optional ``domain`` column colours the groups.
    target_range, edges
        The audit's target range and bin edges, shaded and ruled across the plot.
    max_subjects
        With more subjects, this many are drawn, evenly spaced in the order of ability (the legend says so).
    colours
        Domain -> colour, shared by every figure of a report (default: :func:`domain_colours` of the items').

    Examples
    --------
    >>> subjects = pd.DataFrame(
    ...     {
    ...         "subject": ["a", "b"],
    ...         "ability_mean": [-1.0, 1.0],
    ...         "ability_ci_low": [-1.5, 0.5],
    ...         "ability_ci_high": [-0.5, 1.5],
    ...     }
    ... )
    >>> items = pd.DataFrame(
    ...     {"difficulty_mean": [-0.5, 0.2, 1.5], "benchmark": ["x", "x", "y"], "domain": ["maths", "maths", "law"]}
    ... )
    >>> ax = plot_item_person_map(subjects, items)
    >>> ax.get_ylabel(), [label.get_text() for label in ax.get_xticklabels()]
    ('ability / difficulty (logits)', ['subjects', 'x', 'y'])
    """
    labels = text_labels(items[group]) if group in items.columns else [""] * len(items)
    groups = list(dict.fromkeys(labels))
    ax = _axes(ax, width=max(6.0, 1.2 + 0.38 * (len(groups) + 3)), height=5.2)
    subj = subjects.sort_values("ability_mean")
    n_subjects = len(subj)
    if n_subjects > max_subjects:
        subj = subj.iloc[spaced(n_subjects, max_subjects)]
    subject_label = "subject (interval)"
    if len(subj) < n_subjects:
        subject_label = f"subject (interval): {len(subj)} of {n_subjects:,}, evenly spaced by ability"
    x_subj = np.linspace(-0.9, 0.9, len(subj)) if len(subj) > 1 else np.zeros(1)
    ax.errorbar(
        x_subj,
        subj["ability_mean"],
        yerr=[subj["ability_mean"] - subj["ability_ci_low"], subj["ability_ci_high"] - subj["ability_mean"]],
        fmt="o",
        ms=3,
        lw=0.8,
        color=OKABE_ITO[7],
        label=subject_label,
    )
    domain_of = text_labels(items["domain"]) if "domain" in items.columns else [""] * len(items)
    colours = _shared(colours, domain_colours, domain_of)
    rng = np.random.default_rng(0)
    in_group = np.asarray(labels, dtype=object)
    domains = np.asarray(domain_of, dtype=object)
    difficulty = items["difficulty_mean"].to_numpy(dtype=float)
    for k, name in enumerate(groups, start=2):
        at = in_group == name
        jitter = rng.uniform(-0.3, 0.3, int(at.sum()))
        colour = colours[str(domains[at][0])]
        ax.scatter(
            k + jitter, difficulty[at], s=4, alpha=0.35, color=colour, lw=0, rasterized=len(items) > RASTER_POINTS
        )
        ax.hlines(np.median(difficulty[at]), k - 0.35, k + 0.35, color="black", lw=1)
    if target_range is not None:
        _mark_target(ax, target_range[0], target_range[1], edges, vertical=True)
    names = [g or ("items" if len(groups) == 1 else "(no benchmark)") for g in groups]
    if len(groups) <= MAX_LABELS:
        ax.set_xticks([0, *range(2, len(groups) + 2)], ["subjects", *[shorten(g, 22) for g in names]])
    else:
        ax.set_xticks([0], ["subjects"])
        ax.set_xlabel(f"{len(groups):,} {group} groups (labels left out)")
    ax.tick_params(axis="x", labelrotation=60)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right")
    ax.set_ylabel("ability / difficulty (logits)")
    ax.set_title("Item-person map: abilities beside item difficulties (posterior means)")
    handles = [Line2D([], [], color=OKABE_ITO[7], marker="o", ls="", label=subject_label)]
    handles += [Line2D([], [], color=c, marker="o", ls="", label=d or "items") for d, c in colours.items()]
    if target_range is not None:  # the legend names only what is drawn
        handles.append(Line2D([], [], color="#E69F00", lw=6, alpha=0.3, label="target range"))
    _legend(ax, handles)
    return ax


def plot_coverage_heatmap(
    bins: pd.DataFrame,
    *,
    scope_kind: str = "benchmark",
    value: str = "share_mean",
    p_empty: str = "p_empty",
    empty_threshold: float = 0.8,
    domains: dict[str, str] | None = None,
    colours: Mapping[str, str] | None = None,
    outside: pd.DataFrame | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Benchmarks x difficulty bins, shaded by the expected share of items; ``×`` where P(empty) is high.

    Parameters
    ----------
    bins
        The audit's bin table: one row per (scope, bin) with ``scope_kind``, ``scope``, ``bin``, ``lo``,
        ``hi``, ``value`` and ``p_empty`` columns.
    outside
        The expected shares of each scope's items below and above the range (index ``scope``, columns
        ``below`` and ``above``), drawn as a column at each end, set apart, so that a benchmark whose items lie
        mostly outside the range does not read as merely pale.
    domains
        Benchmark -> domain, to group rows by domain (rows keep their order within a domain).
    colours
        Domain -> colour of the row labels, shared by every figure of a report.

    Examples
    --------
    >>> bins = pd.DataFrame(
    ...     {
    ...         "scope_kind": "benchmark",
    ...         "scope": ["x", "x", "y", "y"],
    ...         "bin": [0, 1, 0, 1],
    ...         "lo": [-1.0, 0.0, -1.0, 0.0],
    ...         "hi": [0.0, 1.0, 0.0, 1.0],
    ...         "share_mean": [0.6, 0.4, 0.1, 0.9],
    ...         "p_empty": [0.0, 0.1, 0.9, 0.0],
    ...     }
    ... )
    >>> ax = plot_coverage_heatmap(bins)
    >>> [label.get_text() for label in ax.get_yticklabels()], ax.images[0].get_array().shape
    (['x', 'y'], (2, 2))
    >>> ax.collections[0].get_offsets().tolist()  # one cross: benchmark y (row 1), bin 0 (column 0)
    [[0.0, 1.0]]
    >>> ends = pd.DataFrame({"below": [0.0, 0.3], "above": [0.1, 0.0]}, index=["x", "y"])
    >>> ax = plot_coverage_heatmap(bins, outside=ends)  # a column at each end: below and above the range
    >>> [label.get_text() for label in ax.get_xticklabels()], ax.collections[0].get_offsets().tolist()
    (['below -1.0', '[-1.0, 0.0)', '[0.0, 1.0)', 'above 1.0'], [[1.0, 1.0]])
    """
    table = bins.loc[bins["scope_kind"] == scope_kind] if "scope_kind" in bins.columns else bins
    table = table.assign(scope=text_labels(table["scope"]))
    scopes = list(dict.fromkeys(table["scope"]))
    domain_of = {str(k): text_labels([v])[0] for k, v in (domains or {}).items()}
    if domain_of:
        order = {d: i for i, d in enumerate(dict.fromkeys(domain_of.get(s, "") for s in scopes))}
        scopes = sorted(scopes, key=lambda s: order[domain_of.get(s, "")])
    grid = table.pivot_table(index="scope", columns="bin", values=value, aggfunc="first").reindex(scopes)
    empty = table.pivot_table(index="scope", columns="bin", values=p_empty, aggfunc="first").reindex(scopes)
    edges = table.drop_duplicates("bin").sort_values("bin")
    labels = [f"[{lo:.1f}, {hi:.1f})" for lo, hi in zip(edges["lo"], edges["hi"], strict=False)]
    shift = 0
    if outside is not None:
        ends = outside.set_axis(text_labels(outside.index), axis=0).reindex(scopes)
        grid.insert(0, "below", ends["below"].to_numpy(dtype=float))
        grid["above"] = ends["above"].to_numpy(dtype=float)
        labels = [f"below {float(edges['lo'].iloc[0]):.1f}", *labels, f"above {float(edges['hi'].iloc[-1]):.1f}"]
        shift = 1
    ax = _axes(ax, width=max(6.0, 2.5 + 0.55 * grid.shape[1]), height=max(3.0, 1.2 + 0.28 * len(scopes)))
    image = ax.imshow(grid.to_numpy(dtype=float), aspect="auto", cmap=SHADE, vmin=0, interpolation="nearest")
    if shift:
        for x in (0.5, grid.shape[1] - 1.5):
            ax.axvline(x, color="white", lw=4)
    rows, cols = np.nonzero(empty.to_numpy(dtype=float) >= empty_threshold)
    ax.scatter(cols + shift, rows, marker="x", color="#D55E00", s=22, lw=1.2)
    _row_labels(ax, "y", scopes, fontsize="small")
    _row_labels(ax, "x", labels, rotation=60, ha="right", fontsize="small")
    if domain_of and len(scopes) <= MAX_LABELS:
        shown = _shared(colours, domain_colours, [domain_of.get(s, "") for s in scopes])
        for tick, scope in zip(ax.get_yticklabels(), scopes, strict=False):
            tick.set_color(shown[domain_of.get(scope, "")])
    ax.figure.colorbar(image, ax=ax, label="expected share of items", shrink=0.8)
    ax.set_xlabel("difficulty bin (ability scale)")
    ax.set_title(f"Coverage: where each benchmark's items sit (× = P(bin empty) ≥ {empty_threshold:g})")
    return ax


def plot_forest(
    table: pd.DataFrame,
    *,
    mean: str,
    low: str,
    high: str,
    label: str = "scope",
    colour_by: str | None = "domain",
    xlabel: str = "",
    title: str = "",
    sort: bool = True,
    colours: Mapping[str, str] | None = None,
    markers: Mapping[str, str] | None = None,
    observed: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Forest plot: one row per benchmark (or other scope) with its posterior mean and interval.

    ``colours`` and ``markers`` (domain -> colour, marker) keep a domain's look the same across a report's
    figures; by default they follow the rows' first appearance (:func:`domain_colours`). ``observed`` names a
    column drawn as a black ``×`` on each row (an observed value beside its predicted interval).

    Examples
    --------
    >>> table = pd.DataFrame(
    ...     {"scope": ["x", "y"], "mean": [0.1, -0.3], "low": [-0.2, -0.6], "high": [0.4, 0.0], "domain": ["a", "b"]}
    ... )
    >>> ax = plot_forest(table, mean="mean", low="low", high="high", xlabel="difficulty")
    >>> ax.get_xlabel(), [label.get_text() for label in ax.get_yticklabels()]  # sorted by the mean
    ('difficulty', ['y', 'x'])
    """
    rows = table.sort_values(mean) if sort else table
    ax = _axes(ax, width=6.5, height=max(2.5, 0.9 + 0.26 * len(rows)))
    y = np.arange(len(rows))
    keys = text_labels(rows[colour_by]) if colour_by and colour_by in rows.columns else ["" for _ in range(len(rows))]
    colours = _shared(colours, domain_colours, keys) if any(keys) else {}
    markers = _shared(markers, domain_markers, keys) if colours else {}
    c = [colours.get(k, OKABE_ITO[0]) for k in keys]
    ax.hlines(y, rows[low], rows[high], color=c, lw=2)
    for key in dict.fromkeys(keys):
        at = np.array([k == key for k in keys])
        ax.scatter(
            rows[mean].to_numpy()[at],
            y[at],
            color=colours.get(key, OKABE_ITO[0]),
            marker=markers.get(key, "o"),
            s=18,
            zorder=3,
        )
    if observed is not None:
        ax.scatter(rows[observed].to_numpy(dtype=float), y, marker="x", color=OKABE_ITO[-1], s=24, zorder=4)
    _row_labels(ax, "y", text_labels(rows[label]), fontsize="small")
    ax.set_xlabel(xlabel or mean)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    _pad_flat_limits(ax, rows[[low, high]].to_numpy(dtype=float), axis="x")
    if colours:
        _legend(ax, [Line2D([], [], color=col, lw=2, marker=markers[d], label=d or "–") for d, col in colours.items()])
    return ax


def plot_test_information(
    information: pd.DataFrame,
    *,
    scopes: Sequence[str] | None = None,
    theta: str = "theta",
    value: str = "info",
    subjects: pd.DataFrame | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Test information (or SE) over the ability range with posterior bands, one line per scope.

    ``information`` has one row per (scope, theta) with ``{value}_mean``, ``{value}_ci_low`` and
    ``{value}_ci_high``; ``subjects`` (optional, with ``ability_mean``) adds a rug of abilities.

    Examples
    --------
    >>> theta = np.linspace(-3, 3, 7)
    >>> info = np.exp(-(theta**2) / 2)
    >>> information = pd.DataFrame(
    ...     {"scope": "all", "theta": theta, "info_mean": info, "info_ci_low": 0.8 * info, "info_ci_high": 1.2 * info}
    ... )
    >>> ax = plot_test_information(information, subjects=pd.DataFrame({"ability_mean": [-0.5, 0.5]}))
    >>> ax.get_ylabel(), [line.get_label() for line in ax.get_lines()]
    ('test information', ['all', 'subjects'])
    """
    ax = _axes(ax, width=6.5, height=4.0)
    scope_of = np.asarray(text_labels(information["scope"]), dtype=object)
    names = list(scopes) if scopes is not None else list(dict.fromkeys(scope_of))
    for k, name in enumerate(names):
        rows = information.loc[scope_of == name].sort_values(theta)
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        ax.plot(rows[theta], rows[f"{value}_mean"], color=colour, lw=1.5, label=shorten(name, 28))
        ax.fill_between(rows[theta], rows[f"{value}_ci_low"], rows[f"{value}_ci_high"], color=colour, alpha=0.2, lw=0)
    if subjects is not None:
        ax.plot(
            subjects["ability_mean"],
            np.zeros(len(subjects)),
            "|",
            color="black",
            ms=10,
            label="subjects",
            rasterized=len(subjects) > RASTER_POINTS,
        )
    ax.set_xlabel("ability (logits)")
    ax.set_ylabel({"info": "test information", "se": "standard error of ability"}.get(value, value))
    _legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_item_curves(curves: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """Item characteristic curves with posterior bands.

    ``curves`` has one row per (item, theta) with ``p_mean``, ``p_ci_low``, ``p_ci_high``.

    Examples
    --------
    >>> theta = np.linspace(-3, 3, 7)
    >>> p = 1 / (1 + np.exp(-theta))
    >>> curves = pd.DataFrame({"item": "q1", "theta": theta, "p_mean": p, "p_ci_low": 0.9 * p, "p_ci_high": p ** 0.9})
    >>> ax = plot_item_curves(curves)
    >>> ax.get_ylabel(), [float(y) for y in ax.get_ylim()], [line.get_label() for line in ax.get_lines()]
    ('P(correct)', [0.0, 1.0], ['q1'])
    """
    ax = _axes(ax, width=6.5, height=4.0)
    for k, (item, rows) in enumerate(curves.groupby("item", sort=False)):
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        ax.plot(rows["theta"], rows["p_mean"], color=colour, label=shorten(item, 24))
        ax.fill_between(rows["theta"], rows["p_ci_low"], rows["p_ci_high"], color=colour, alpha=0.2, lw=0)
    ax.set_xlabel("ability (logits)")
    ax.set_ylabel("P(correct)")
    ax.set_ylim(0, 1)
    _legend(ax)
    ax.grid(alpha=0.3)
    return ax


def plot_leaderboard(
    ranking: pd.DataFrame,
    *,
    columns: dict[str, tuple[str, str, str]],
    label: str = "subject",
    sort_by: str | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Ranks with intervals under several scorings, side by side (1 = best).

    ``columns`` maps a scoring's display name to its (mean, low, high) rank columns, e.g.
    ``{"raw accuracy": ("raw_rank", "raw_rank", "raw_rank"), "re-weighted": ("rank_mean", ...)}``.

    Examples
    --------
    >>> ranking = pd.DataFrame(
    ...     {
    ...         "subject": ["m1", "m2", "m3"],
    ...         "raw_rank": [1, 2, 3],
    ...         "rank_mean": [1.2, 2.5, 2.3],
    ...         "rank_low": [1, 1, 2],
    ...         "rank_high": [2, 3, 3],
    ...     }
    ... )
    >>> columns = {"raw accuracy": ("raw_rank",) * 3, "re-weighted": ("rank_mean", "rank_low", "rank_high")}
    >>> ax = plot_leaderboard(ranking, columns=columns)
    >>> [text.get_text() for text in ax.get_legend().get_texts()]
    ['raw accuracy', 're-weighted']
    >>> [label.get_text() for label in ax.get_yticklabels()]
    ['m1', 'm2', 'm3']
    """
    first = next(iter(columns.values()))[0]
    rows = ranking.sort_values(sort_by or first)
    ax = _axes(ax, width=7.0, height=max(3.0, 1.0 + 0.26 * len(rows)))
    y = np.arange(len(rows))
    offsets = np.linspace(-0.25, 0.25, len(columns)) if len(columns) > 1 else [0.0]
    for k, ((name, (m, lo, hi)), dy) in enumerate(zip(columns.items(), offsets, strict=False)):
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        ax.hlines(y + dy, rows[lo], rows[hi], color=colour, lw=2, alpha=0.8)
        ax.scatter(rows[m], y + dy, color=colour, s=14, zorder=3, label=name)
    _row_labels(ax, "y", text_labels(rows[label]), fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("rank (1 = best)")
    _pad_flat_limits(ax, rows[[c for cols in columns.values() for c in cols]].to_numpy(dtype=float), axis="x")
    _legend(ax)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Leaderboard with rank intervals")
    return ax


def plot_ahead_matrix(ahead: pd.DataFrame, *, ax: Axes | None = None) -> Axes:
    """P(row subject ahead of column subject), a square matrix ordered as given.

    Examples
    --------
    >>> ahead = pd.DataFrame([[0.5, 0.9], [0.1, 0.5]], index=["m1", "m2"], columns=["m1", "m2"])
    >>> ax = plot_ahead_matrix(ahead)
    >>> ax.images[0].get_array().tolist(), [label.get_text() for label in ax.get_yticklabels()]
    ([[0.5, 0.9], [0.1, 0.5]], ['m1', 'm2'])
    """
    n = ahead.shape[0]
    size = max(4.5, 1.5 + 0.22 * n)
    ax = _axes(ax, width=size + 1.2, height=size)
    cmap = LinearSegmentedColormap.from_list("ahead", ["#D55E00", "#FFFFFF", "#0072B2"])
    image = ax.imshow(ahead.to_numpy(dtype=float), vmin=0, vmax=1, cmap=cmap, interpolation="nearest")
    labels = text_labels(ahead.index)
    fs = "small" if n <= 30 else "x-small"
    _row_labels(ax, "x", labels, width=24, rotation=90, fontsize=fs)
    _row_labels(ax, "y", labels, width=24, fontsize=fs)
    ax.figure.colorbar(image, ax=ax, label="P(row ahead of column)", shrink=0.8)
    ax.set_title("Posterior probability that one subject is ahead of another")
    return ax


def plot_rhat_ess(diagnostics: pd.DataFrame, *, rhat_max: float = 1.01, ess_min: float = 400, ax: Any = None) -> Any:
    """R-hat against bulk ESS for every parameter, thresholds marked; ``diagnostics`` has ``r_hat``,
    ``ess_bulk`` and ``variable`` columns. Returns the Axes.

    Examples
    --------
    >>> diagnostics = pd.DataFrame(
    ...     {
    ...         "variable": ["difficulty", "difficulty", "ability"],
    ...         "r_hat": [1.0, 1.02, 1.001],
    ...         "ess_bulk": [900.0, 300.0, 1500.0],
    ...     }
    ... )
    >>> ax = plot_rhat_ess(diagnostics)
    >>> ax.get_xlabel(), ax.get_ylabel(), [len(points.get_offsets()) for points in ax.collections]
    ('bulk ESS', 'R-hat', [2, 1])
    """
    ax = _axes(ax, width=6.0, height=4.0)
    names = text_labels(diagnostics["variable"])
    colours = domain_colours(names)
    raster = len(diagnostics) > RASTER_POINTS
    variable = np.asarray(names, dtype=object)
    ess = diagnostics["ess_bulk"].to_numpy(dtype=float)
    rhat = diagnostics["r_hat"].to_numpy(dtype=float)
    for name, colour in colours.items():
        at = variable == name
        ax.scatter(ess[at], rhat[at], s=6, alpha=0.6, color=colour, label=name, rasterized=raster)
    ax.axhline(rhat_max, color="#D55E00", lw=1, ls="--")
    ax.axvline(ess_min, color="#D55E00", lw=1, ls="--")
    ax.set_xscale("log")
    known = np.append(ess, ess_min)
    known = known[np.isfinite(known) & (known > 0)]
    if known.size:
        ax.set_xlim(known.min() / 2, known.max() * 2)
    _pad_flat_limits(ax, np.append(rhat, rhat_max), axis="y")
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("bulk ESS")
    ax.set_ylabel("R-hat")
    ax.set_title(f"Convergence: want R-hat ≤ {rhat_max:g} and ESS ≥ {ess_min:g}")
    _legend(ax)
    return ax


def plot_expected_error(
    table: pd.DataFrame, *, label: str, value: str, xlabel: str = "", title: str = "", ax: Axes | None = None
) -> Axes:
    """Horizontal bars of ``value`` per row of ``table`` (labelled by ``label``), sorted.

    Examples
    --------
    >>> table = pd.DataFrame({"benchmark": ["a", "b"], "expected_error": [0.02, 0.01]})
    >>> ax = plot_expected_error(table, label="benchmark", value="expected_error", xlabel="error")
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['b', 'a']
    """
    rows = table.sort_values(value)
    ax = _axes(ax, width=6.5, height=max(2.5, 0.9 + 0.26 * len(rows)))
    ax.barh(np.arange(len(rows)), rows[value].to_numpy(dtype=float), color=OKABE_ITO[0])
    _row_labels(ax, "y", rows[label].tolist())
    ax.set_xlabel(xlabel or value)
    ax.set_title(title)
    return ax


def plot_test_trace(
    log: pd.DataFrame,
    *,
    mean: str,
    low: str,
    high: str,
    truth: float | None = None,
    title: str = "",
    ax: Axes | None = None,
) -> Axes:
    """An adaptive test step by step: the score's posterior mean and interval after each answer (``step``), each
    answer marked (filled: correct; open: wrong), and the truth as a line where known.

    Examples
    --------
    >>> log = pd.DataFrame({"step": [1, 2], "response": [1.0, 0.0], "m": [0.6, 0.55], "lo": [0.4, 0.45], "hi": [0.8, 0.65]})
    >>> ax = plot_test_trace(log, mean="m", low="lo", high="hi", truth=0.5)
    >>> ax.get_xlabel()
    'items answered'
    """
    ax = _axes(ax, width=6.5, height=3.5)
    x = log["step"].to_numpy(dtype=float)
    ax.fill_between(x, log[low].to_numpy(dtype=float), log[high].to_numpy(dtype=float), color=OKABE_ITO[4], alpha=0.4)
    ax.plot(x, log[mean].to_numpy(dtype=float), color=OKABE_ITO[0], lw=1.5, label="posterior mean")
    right = log["response"].to_numpy(dtype=float) >= 0.5
    y = log[mean].to_numpy(dtype=float)
    ax.scatter(x[right], y[right], s=12, color=OKABE_ITO[2], zorder=3, label="correct")
    ax.scatter(x[~right], y[~right], s=12, facecolors="none", edgecolors=OKABE_ITO[5], zorder=3, label="wrong")
    if truth is not None:
        ax.axhline(truth, color="black", lw=1, ls="--", label="truth")
    ax.set_xlabel("items answered")
    ax.set_ylabel("score")
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_error_curves(
    table: pd.DataFrame,
    *,
    x: str,
    y: str,
    method: str = "method",
    panel: str | None = None,
    ylabel: str = "",
    reference: float | None = None,
    reference_label: str = "reference",
    colours: Mapping[str, str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """One line per ``method`` of ``y`` against ``x`` (log scale, ticks at the values of ``x``), for one panel (the
    rows are the caller's); ``colours`` keeps each method's colour the same across panels.

    Examples
    --------
    >>> table = pd.DataFrame({"method": ["a", "a", "b", "b"], "k": [10, 30, 10, 30], "mae": [0.05, 0.03, 0.08, 0.06]})
    >>> ax = plot_error_curves(table, x="k", y="mae", reference=0.015)
    >>> len(ax.get_lines())
    3
    """
    ax = _axes(ax, width=5.0, height=3.5)
    for k, (name, rows) in enumerate(table.groupby(method, sort=False)):
        rows = rows.sort_values(x)
        colour = (colours or {}).get(str(name), OKABE_ITO[k % len(OKABE_ITO)])
        ax.plot(rows[x], rows[y], marker="o", ms=4, color=colour, label=str(name))
    if reference is not None:
        ax.axhline(reference, color="black", lw=1, ls=":", label=f"{reference_label} {reference:g}")
    ax.set_xscale("log")
    ticks = sorted(pd.unique(table[x]))
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or y)
    ax.set_title("" if panel is None else panel)
    ax.legend(fontsize="small")
    return ax


#: Array libraries matplotlib looks up in ``sys.modules`` for every array it is given (to convert their arrays).
_PROBED_MODULES = ("jax", "torch", "tensorflow", "mlx.core")


@contextlib.contextmanager
def unloaded_lazy_modules_hidden() -> Iterator[None]:
    """Within this block, array libraries registered for a lazy import but not loaded are out of ``sys.modules``.

    matplotlib asks ``sys.modules["jax"].Array`` of every array it plots. Where jax is installed, arviz-base registers
    it for a lazy import, so that question imports it, in a report that never uses it (its cost measured on
    docs/performance.md#checks-that-read-only-the-new-draws-the-save-beside-the-report-2026-12-05-evening). The entries
    are put back on leaving, unless the module was imported for real meanwhile.
    """
    lazy = getattr(importlib.util, "_LazyModule", None)  # the class of a module not loaded yet (CPython's)
    hidden = {
        name: module
        for name in _PROBED_MODULES
        if lazy is not None and isinstance(module := sys.modules.get(name), lazy)
    }
    for name in hidden:
        del sys.modules[name]
    try:
        yield
    finally:
        for name, module in hidden.items():
            sys.modules.setdefault(name, module)


def _spaced(rows: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    if len(rows) <= max_rows:
        return rows
    keep = spaced(len(rows), max_rows)
    return rows.iloc[keep]


def forest_rows(
    table: pd.DataFrame, *, prefix: str, label: str, max_rows: int = MAX_FOREST_ROWS, ax: Axes | None = None
) -> Axes:
    """A forest plot of ``{prefix}_mean`` with its interval, sorted, at most ``max_rows`` rows evenly spaced."""
    rows = _spaced(table.sort_values(f"{prefix}_mean"), max_rows)
    shown = f" ({len(rows)} of {len(table)}, evenly spaced)" if len(rows) < len(table) else ""
    return plot_forest(
        rows,
        mean=f"{prefix}_mean",
        low=f"{prefix}_ci_low",
        high=f"{prefix}_ci_high",
        label=label,
        colour_by="benchmark" if "benchmark" in rows.columns else None,
        xlabel=f"{prefix} (logits)",
        title=f"{prefix.capitalize()}{shown}",
        sort=False,
        ax=ax,
    )


# ------------------------------------------------------------------------------------------ BenchFill
_BF_ACCEPTED = "#009E73"
_BF_REJECTED = "#999999"
_BF_BEFORE = "#0072B2"
_BF_ADDED = "#E69F00"


def plot_candidate_intervals(decisions: pd.DataFrame, *, aim_lo: float, aim_hi: float, ax: Axes | None = None) -> Axes:
    """Each candidate's posterior difficulty interval against the aim, the interval ``[aim_lo, aim_hi)`` new items should fill.

    Parameters
    ----------
    decisions
        One row per candidate (index or column ``candidate_id``) with ``difficulty_mean``,
        ``difficulty_ci_low``, ``difficulty_ci_high`` and ``decision``; rows without numbers (no responses)
        are listed without an interval.
    aim_lo, aim_hi
        The aim, shaded.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from irtbayes.core.plots import plot_candidate_intervals
    >>> decisions = pd.DataFrame(
    ...     {"difficulty_mean": [0.4, 2.1], "difficulty_ci_low": [0.1, 1.6], "difficulty_ci_high": [0.7, 2.6],
    ...      "decision": ["accepted", "rejected"]},
    ...     index=pd.Index(["c1", "c2"], name="candidate_id"),
    ... )
    >>> ax = plot_candidate_intervals(decisions, aim_lo=0.0, aim_hi=1.0)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['c1', 'c2']
    """
    import matplotlib.pyplot as plt

    table = decisions.reset_index() if "candidate_id" not in decisions.columns else decisions.copy()
    table = table.sort_values("difficulty_mean", na_position="first", kind="stable").reset_index(drop=True)
    if ax is None:
        _, ax = plt.subplots(figsize=(6.5, max(2.0, 0.28 * len(table) + 1.0)))
    ax.axvspan(aim_lo, aim_hi, color=_BF_ACCEPTED, alpha=0.12, lw=0, label="aim")
    for y, row in table.iterrows():
        accepted = row["decision"] == "accepted"
        colour = _BF_ACCEPTED if accepted else _BF_REJECTED
        mean = row.get("difficulty_mean")
        if mean is None or pd.isna(mean):
            ax.text(aim_lo, y, " no responses", va="center", fontsize=7, color=_BF_REJECTED)
            continue
        ax.plot([row["difficulty_ci_low"], row["difficulty_ci_high"]], [y, y], color=colour, lw=2)
        ax.plot([mean], [y], "o", color=colour, ms=4)
    ax.set_yticks(range(len(table)))
    ax.set_yticklabels([str(c)[:28] for c in table["candidate_id"]], fontsize=7)
    ax.set_xlabel("difficulty (ability scale)")
    ax.set_title("Candidates: posterior difficulty against the aim")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax.legend(
        handles=[
            Patch(color=_BF_ACCEPTED, alpha=0.12, label="aim"),
            Line2D([], [], color=_BF_ACCEPTED, lw=2, label="accepted"),
            Line2D([], [], color=_BF_REJECTED, lw=2, label="rejected"),
        ],
        fontsize=7,
        loc="best",
    )
    return ax


def plot_coverage_before_after(
    bins: pd.DataFrame, *, aim_lo: float | None = None, aim_hi: float | None = None, ax: Axes | None = None
) -> Axes:
    """Expected items per bin before and after: original items and added items stacked.

    Parameters
    ----------
    bins
        One scope's rows of the ``bins`` table of :func:`irtbayes.benchfill.result.before_after` (``lo``, ``hi``,
        ``count_before_{mean,ci_low,ci_high}``, ``count_original_after_mean``, ``count_added_mean``,
        ``count_after_{ci_low,ci_high}``).
    aim_lo, aim_hi
        Shade the bins of the aim, the interval new items should fill.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from irtbayes.core.plots import plot_coverage_before_after
    >>> bins = pd.DataFrame(
    ...     {"lo": [-1.0, 0.0], "hi": [0.0, 1.0], "count_before_mean": [5.0, 0.2], "count_before_ci_low": [4.0, 0.0],
    ...      "count_before_ci_high": [6.0, 1.0], "count_original_after_mean": [5.0, 0.2], "count_added_mean": [0.0, 2.9],
    ...      "count_after_ci_low": [4.0, 2.0], "count_after_ci_high": [6.0, 4.0]}
    ... )
    >>> plot_coverage_before_after(bins, aim_lo=0.0, aim_hi=1.0).get_ylabel()
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
    ax.bar(x - w / 2, before, w, color=_BF_BEFORE, alpha=0.55, label="before")
    ax.errorbar(
        x - w / 2,
        before,
        yerr=[before - table["count_before_ci_low"], table["count_before_ci_high"] - before],
        fmt="none",
        ecolor="black",
        lw=0.8,
    )
    ax.bar(x + w / 2, orig, w, color=_BF_BEFORE, label="after: original items")
    ax.bar(x + w / 2, added, w, bottom=orig, color=_BF_ADDED, label="after: added items")
    total = orig + added
    ax.errorbar(
        x + w / 2,
        total,
        yerr=[np.maximum(total - table["count_after_ci_low"], 0), np.maximum(table["count_after_ci_high"] - total, 0)],
        fmt="none",
        ecolor="black",
        lw=0.8,
    )
    if aim_lo is not None and aim_hi is not None:
        inside = (table["lo"] < aim_hi) & (table["hi"] > aim_lo)
        for k in np.flatnonzero(inside.to_numpy()):
            ax.axvspan(k - 0.5, k + 0.5, color=_BF_ACCEPTED, alpha=0.1, lw=0)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{lo:.1f}–{hi:.1f}" for lo, hi in zip(table["lo"], table["hi"], strict=True)], rotation=45,
                       fontsize=7, ha="right")  # fmt: skip
    ax.set_xlabel("difficulty bin")
    ax.set_ylabel("expected items")
    ax.set_title("Coverage before and after BenchFill")
    ax.legend(fontsize=7)
    return ax
