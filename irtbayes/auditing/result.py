"""The result of an audit: :class:`AuditResult` (tidy tables, the target, the settings) and its texts.

:func:`~irtbayes.auditing.run.audit` makes one; :func:`~irtbayes.auditing.folder.save_audit` writes it to a
folder and :func:`~irtbayes.auditing.folder.load_audit` reads it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from irtbayes.auditing.targets import Target
from irtbayes.core.errors import SpecError
from irtbayes.core.files import json_ready
from irtbayes.core.summaries import format_interval, summary_table

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "AUDIT_SUMMARY_MEASURES",
    "DDM_DEFINITIONS",
    "SELF_CHECKED",
    "STAT_NAMES",
    "STUDIED_ITEMS",
    "STUDIED_SYSTEMS",
    "AuditResult",
    "design_notes",
    "flags_sentence",
    "graded_sentence",
    "self_check_lines",
]

#: What each DDM column measures (recorded in the settings and summary.json; formulas in irtbayes.auditing.mismatch).
DDM_DEFINITIONS = {
    "ddm_w1": "headline: share of items outside [L, U] + share inside x W1(in-range items, target) / (U - L)",
    "ddm_tv": "total variation over the bins plus a below-L and an above-U bin of target mass 0",
    "ddm_shape_w1": "in-range shape: W1(items inside [L, U], target) / (U - L); items outside ignored",
    "ddm_shape_tv": "in-range shape: total variation between the in-range bin shares and the target",
}
STAT_NAMES = ("mean", "sd", "ci_low", "ci_high")
#: The measures of :meth:`AuditResult.summary`, each with its mean and interval, after ``scope_kind``, ``scope``
#: and ``n_items``.
AUDIT_SUMMARY_MEASURES = ("ddm_w1", "ddm_shape_w1", "max_gap", "interior_gap", "edge_gap_low", "edge_gap_high")


@dataclass(frozen=True)
class AuditResult:
    """Tables of an audit, the target, and the settings used.

    Every table's ``attrs`` record ``ci_prob`` and the target (``target.to_dict()``).

    Attributes
    ----------
    bins, benchmarks, ranking, ahead, information, items
        ``bins``: one row per (scope, bin): ``scope_kind``, ``scope``, ``bin`` (0-based), ``lo``, ``hi``,
        ``target_weight``, ``count_{mean,sd,ci_low,ci_high}``, ``share_{...}`` (of all the scope's items),
        ``share_in_range_{...}``, ``p_empty``, ``p_fewer_than_m``, ``p_widest_gap_here``.
        ``benchmarks``: one row per scope: ``scope_kind``, ``scope``, ``n_items``, ``n_subjects``,
        ``raw_accuracy``, ``{mass_below,mass_above,ddm_w1,ddm_tv,ddm_shape_w1,ddm_shape_tv,max_gap,
        interior_gap,edge_gap_low,edge_gap_high,edge_gap_low_inner,edge_gap_high_inner,empty_bins,
        unrepresented}_{mean,sd,ci_low,ci_high}``, ``gap_lo``, ``gap_hi``, ``gap_modal_bin``,
        ``gap_p_modal_bin``, ``gap_lo_all_draws``, ``gap_hi_all_draws``, ``gap_kind``, ``gap_p_edge_low``,
        ``gap_p_edge_high``, ``top_k``, ``saturated_share``, ``unseparating_share``, ``info_peak_theta``,
        ``moves_lo``, ``moves_hi``. ``ddm_w1`` and ``ddm_tv`` are the headline DDM over all the scope's items
        (items outside [L, U] count, see :mod:`irtbayes.auditing.mismatch`); ``ddm_shape_*`` compare only the
        items inside [L, U] with the target. ``max_gap`` is the Maximum Gap, ``interior_gap`` the widest gap
        between two items inside the range, ``edge_gap_low``/``edge_gap_high`` the gaps at L and U and
        ``*_inner`` the same for [L + 0.5, U - 0.5] (NaN when U - L <= 1; see :mod:`irtbayes.auditing.gaps`).
        ``ranking``: one row per (scope, subject): ``scope_kind``, ``scope``, ``subject``, ``n_responses``,
        ``raw_accuracy``, ``raw_rank``, ``reweighted_{mean,sd,ci_low,ci_high}``, ``ability_{...}``,
        ``rank_mean``, ``rank_ci_low``, ``rank_ci_high`` (ranks under the re-weighted accuracy, ability breaking
        ties), ``ability_rank_mean``, ``ability_rank_ci_low``, ``ability_rank_ci_high`` (ranks by the scope's
        ability), ``group``; both rank intervals follow :func:`~irtbayes.auditing.tables.rank_interval` over the leaderboard's draws.
        ``ahead``: P(row subject ahead of column subject) over all items, subjects by mean rank; the first
        :data:`~irtbayes.auditing.ranking.MAX_AHEAD_SUBJECTS` (200) subjects when there are more (``ranking``
        holds every subject).
        ``information``: one row per (scope, theta): ``scope_kind``, ``scope``, ``theta``,
        ``{info,se,score,slope}_{mean,sd,ci_low,ci_high}``.
        ``items``: one row per item: ``item``, ``benchmark``, ``domain``, ``difficulty_{...}``, ``p_below``,
        ``p_above``, ``modal_bin``, ``p_modal_bin``, ``saturated``, ``separates_top_k``, ``accuracy`` (the mean
        response, as a share of the item's most) and ``answered_alike`` (every subject who answered gave the same
        response).
    target
        The target the audit compared with.
    ci_prob
        Probability of the equal-tailed credible intervals.
    settings
        What :func:`~irtbayes.auditing.run.audit` was run with and recorded (source, data checksum, fit identity,
        draws used, seed, ensemble, range rule, DDM definitions, ...): ``summary.json``'s ``settings``.

    Examples
    --------
    >>> from irtbayes.examples import simulated_audit
    >>> result, data = simulated_audit(30, 60, bins=5)
    >>> sorted(result.tables())
    ['ahead', 'benchmarks', 'bins', 'information', 'items', 'ranking']
    >>> result.bins.query("scope == 'all'")[["bin", "lo", "hi", "target_weight"]]
       bin    lo    hi  target_weight
    0    0 -2.20 -1.14            0.2
    1    1 -1.14 -0.08            0.2
    2    2 -0.08  0.98            0.2
    3    3  0.98  2.04            0.2
    4    4  2.04  3.10            0.2
    >>> print(result.to_text().splitlines()[0])
    Audit of simulated 2pl (30 subjects x 60 items): target uniform over [-2.2, 3.1] in 5 bins.
    """

    bins: pd.DataFrame
    benchmarks: pd.DataFrame
    ranking: pd.DataFrame
    ahead: pd.DataFrame
    information: pd.DataFrame
    items: pd.DataFrame
    target: Target
    ci_prob: float
    settings: dict[str, Any]

    def __repr__(self) -> str:
        """One line, the text's first (``result.to_text()`` and :meth:`summary` give the findings)."""
        return f"<AuditResult: {self.to_text().splitlines()[0]}>"

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tables by file stem."""
        return {
            "bins": self.bins,
            "benchmarks": self.benchmarks,
            "ranking": self.ranking,
            "ahead": self.ahead,
            "information": self.information,
            "items": self.items,
        }

    def summary(self) -> pd.DataFrame:
        """One row per scope: the headline DDM, the in-range shape, the Maximum Gap and its parts, with intervals.

        Returns
        -------
        pandas.DataFrame
            Index ``scope_kind:scope`` (``all:all``, ``benchmark:law``, ...); columns ``scope_kind``, ``scope``,
            ``n_items``, ``{m}_mean``, ``{m}_ci_low``, ``{m}_ci_high`` (as in
            :attr:`benchmarks` and ``benchmarks.csv``) for m in :data:`AUDIT_SUMMARY_MEASURES` (``ddm_w1``, ``ddm_shape_w1``, ``max_gap``,
            ``interior_gap``, ``edge_gap_low``, ``edge_gap_high``), then ``gap_kind``, ``mass_below_mean``,
            ``mass_above_mean`` (columns missing from :attr:`benchmarks` are left out). ``attrs`` record
            ``ci_prob`` and the target's description. :meth:`to_text` says the same in prose; :attr:`benchmarks`
            has every column.

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> table = result.summary()
        >>> list(table.index)
        ['all:all', 'benchmark:bench00', 'benchmark:bench01']
        >>> bool((table["ddm_w1_ci_low"] <= table["ddm_w1_mean"]).all() and (table["ddm_w1_mean"] <= 1).all())
        True
        """
        b = self.benchmarks
        columns = ["scope_kind", "scope", "n_items"]
        for m in AUDIT_SUMMARY_MEASURES:
            columns += [f"{m}_mean", f"{m}_ci_low", f"{m}_ci_high"]
        columns += ["gap_kind", "mass_below_mean", "mass_above_mean"]
        table = b[[c for c in columns if c in b.columns]].copy()
        table.index = pd.Index([f"{k}:{s}" for k, s in zip(b["scope_kind"], b["scope"], strict=True)], name="scope_id")
        table.attrs.update(ci_prob=self.ci_prob, target=self.target.description)
        return summary_table(table, self.ci_prob)

    def to_dataframe(self, table: str = "benchmarks") -> pd.DataFrame:
        """One of the tables by name, a copy (``attrs`` kept): ``bins``, ``benchmarks``, ``ranking``, ``ahead``, ``information``, ``items``.

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> result.to_dataframe("ranking").query("scope == 'all'").shape[0]
        30
        """
        tables = self.tables()
        if table not in tables:
            raise SpecError(f"no audit table {table!r}; the tables are {sorted(tables)}")
        return tables[table].copy()

    def plot_coverage(self, *, scope_kind: str = "benchmark", ax: Axes | None = None) -> Axes:
        """Scopes x difficulty bins shaded by the expected share of items, ``×`` where P(empty) is high.

        ``scope_kind`` chooses the rows (``benchmark``, ``domain`` or ``all``; all items when the audit has no
        scope of that kind). See :func:`irtbayes.core.plots.plot_coverage_heatmap`.

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> ax = result.plot_coverage()
        >>> [label.get_text() for label in ax.get_yticklabels()]
        ['bench00', 'bench01']
        """
        from irtbayes.core.plots import plot_coverage_heatmap

        kind = scope_kind if (self.bins["scope_kind"] == scope_kind).any() else "all"
        axes: Axes = plot_coverage_heatmap(self.bins, scope_kind=kind, ax=ax)
        return axes

    def plot_forest(self, *, measure: str = "ddm_w1", scope_kind: str = "benchmark", ax: Axes | None = None) -> Axes:
        """One row per scope with the posterior mean and interval of ``measure`` (``ddm_w1``, ``max_gap``, ...).

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> ax = result.plot_forest(measure="max_gap")
        >>> len(ax.get_yticklabels())
        2
        """
        from irtbayes.core.plots import plot_forest

        if f"{measure}_mean" not in self.benchmarks.columns:
            raise SpecError(f"no measure {measure!r} with an interval in the audit's benchmarks table")
        rows = self.benchmarks.loc[self.benchmarks["scope_kind"] == scope_kind]
        if rows.empty:
            rows = self.benchmarks.loc[self.benchmarks["scope_kind"] == "all"]
        axes: Axes = plot_forest(
            rows,
            mean=f"{measure}_mean",
            low=f"{measure}_ci_low",
            high=f"{measure}_ci_high",
            xlabel=measure,
            title=f"{measure} with {self.ci_prob:.0%} intervals",
            ax=ax,
        )
        return axes

    def plot_leaderboard(self, *, scope: str = "all", top: int = 30, ax: Axes | None = None) -> Axes:
        """Ranks with intervals of the ``top`` subjects of one scope: raw accuracy, re-weighted, IRT ability.

        ``scope`` is ``"all"``, a scope name, or ``"kind:name"`` (``"benchmark:law"``); the subjects shown are
        the ``top`` by mean re-weighted rank (:func:`irtbayes.core.plots.plot_leaderboard`).

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> ax = result.plot_leaderboard(top=10)
        >>> len(ax.get_yticklabels()), ax.get_xlabel()
        (10, 'rank (1 = best)')
        """
        from irtbayes.core.plots import plot_leaderboard

        rows = _scope_rows(self.ranking, scope).sort_values("rank_mean").head(top)
        columns = {
            "raw accuracy": ("raw_rank", "raw_rank", "raw_rank"),
            "re-weighted": ("rank_mean", "rank_ci_low", "rank_ci_high"),
            "IRT ability": ("ability_rank_mean", "ability_rank_ci_low", "ability_rank_ci_high"),
        }
        axes: Axes = plot_leaderboard(rows, columns=columns, sort_by="rank_mean", ax=ax)
        return axes

    def plot_ahead(self, *, top: int = 30, ax: Axes | None = None) -> Axes:
        """P(row subject ahead of column subject) for the ``top`` subjects by mean rank.

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> ax = result.plot_ahead(top=8)
        >>> ax.get_images()[0].get_array().shape
        (8, 8)
        """
        from irtbayes.core.plots import plot_ahead_matrix

        axes: Axes = plot_ahead_matrix(self.ahead.iloc[:top, :top], ax=ax)
        return axes

    def plot_information(self, *, scopes: Sequence[str] | None = None, ax: Axes | None = None) -> Axes:
        """Test information with posterior bands, one line per scope (default: all items and up to five others).

        Examples
        --------
        >>> from irtbayes.examples import simulated_audit
        >>> result, data = simulated_audit(30, 60, bins=5)
        >>> ax = result.plot_information(scopes=["all"])
        >>> len(ax.get_lines())
        1
        """
        from irtbayes.core.plots import plot_test_information

        info = self.information
        if scopes is None:
            names = list(dict.fromkeys(info["scope"].astype(str)))
            scopes = names[:6]
        axes: Axes = plot_test_information(info, scopes=list(scopes), ax=ax)
        return axes

    def summary_dict(self) -> dict[str, Any]:
        """The content of ``summary.json``: target, settings and, per scope, DDM and Maximum Gap with intervals."""

        def stat(row: pd.Series, prefix: str) -> dict[str, Any]:
            return {k: row[f"{prefix}_{k}"] for k in STAT_NAMES}

        def entry(row: pd.Series) -> dict[str, Any]:
            k = int(row["gap_modal_bin"])
            return {
                "n_items": int(row["n_items"]),
                "n_subjects": int(row["n_subjects"]),
                "ddm": {**stat(row, "ddm_w1"), "metric": DDM_DEFINITIONS["ddm_w1"]},
                "ddm_tv": {**stat(row, "ddm_tv"), "metric": DDM_DEFINITIONS["ddm_tv"]},
                "ddm_shape_w1": {**stat(row, "ddm_shape_w1"), "metric": DDM_DEFINITIONS["ddm_shape_w1"]},
                "ddm_shape_tv": {**stat(row, "ddm_shape_tv"), "metric": DDM_DEFINITIONS["ddm_shape_tv"]},
                "max_gap": {
                    **stat(row, "max_gap"),
                    "interval": [row["gap_lo"], row["gap_hi"]],
                    "modal_bin": k,
                    "modal_bin_range": [self.target.edges[k], self.target.edges[k + 1]],
                    "p_modal_bin": row["gap_p_modal_bin"],
                    "interval_all_draws": [row["gap_lo_all_draws"], row["gap_hi_all_draws"]],
                    "kind": row["gap_kind"],
                    "p_edge_low": row["gap_p_edge_low"],
                    "p_edge_high": row["gap_p_edge_high"],
                },
                "interior_gap": stat(row, "interior_gap"),
                "edge_gap_low": {**stat(row, "edge_gap_low"), "inner": stat(row, "edge_gap_low_inner")},
                "edge_gap_high": {**stat(row, "edge_gap_high"), "inner": stat(row, "edge_gap_high_inner")},
                "mass_below": stat(row, "mass_below"),
                "mass_above": stat(row, "mass_above"),
                "empty_bins": stat(row, "empty_bins"),
                "unrepresented_target_mass": stat(row, "unrepresented"),
                "saturation": {
                    "top_k": int(row["top_k"]),
                    "saturated_share": row["saturated_share"],
                    "unseparating_share": row["unseparating_share"],
                },
            } | _self_check_entry(row)

        table = self.benchmarks
        out: dict[str, Any] = {
            "partial": bool(self.settings.get("partial", False)),  # the draws of an interrupted fit
            "converged": self.settings.get("converged"),  # the fit's convergence checks; None: not recorded
            "approximate": bool(self.settings.get("approximate", False)),
            "ci_prob": self.ci_prob,
            "range": [self.target.lo, self.target.hi],
            "bins": self.target.n_bins,
            "edges": list(self.target.edges),
            "target_weights": list(self.target.weights),
            "target": self.target.to_dict(),
            "settings": self.settings,
        }
        for kind, key in (("all", "overall"), ("benchmark", "benchmarks"), ("domain", "domains")):
            rows = table.loc[table["scope_kind"] == kind]
            if kind == "all":
                out[key] = entry(rows.iloc[0])
            else:
                out[key] = {str(r["scope"]): entry(r) for _, r in rows.iterrows()}
        return json_ready(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: :meth:`summary_dict`, what ``summary.json`` holds."""
        return self.summary_dict()

    def to_text(self, *, max_subjects: int = 15) -> str:
        """A compact human summary: one table of the scopes, a sentence per scope, the top of the leaderboard."""
        t = self.target
        pct = f"{self.ci_prob:.0%}"
        s = self.settings
        lines = [
            f"Audit of {s.get('source', '<data>')}: target {t.description}.",
            f"Range [{t.lo:g}, {t.hi:g}] ({s.get('range_rule', '')}); {t.n_bins} bins; {pct} credible intervals; "
            f"{s['n_samples']} posterior draws ({s['n_samples_ranking']} for the leaderboard and information).",
            _ensemble_sentence(s.get("ensemble")),
            *([graded_sentence(str(s["graded"]), s.get("graded_points"))] if s.get("graded") else []),
            _interval_sentence(s.get("calibrated_intervals"), pct),
            *_fit_sentences(s),
            *([flags_sentence(s)] if s.get("item_flags") else []),
            *design_notes(self.benchmarks, s),
            "",
        ]
        table = self.benchmarks
        shown = pd.DataFrame(
            {
                "scope": [
                    f"{k}:{n}" if k != "all" else "all"
                    for k, n in zip(table["scope_kind"], table["scope"], strict=True)
                ],
                "items": table["n_items"],
                "DDM": [format_interval(r, "ddm_w1") for _, r in table.iterrows()],
                "DDM_TV": [format_interval(r, "ddm_tv") for _, r in table.iterrows()],
                "shape_W1": [format_interval(r, "ddm_shape_w1") for _, r in table.iterrows()],
                "max_gap": [format_interval(r, "max_gap") for _, r in table.iterrows()],
                "gap_at": [
                    f"[{r['gap_lo']:.2f}, {r['gap_hi']:.2f}] P={r['gap_p_modal_bin']:.2f} {r['gap_kind']}"
                    for _, r in table.iterrows()
                ],
                "interior_gap": [format_interval(r, "interior_gap") for _, r in table.iterrows()],
                "edge_L": [format_interval(r, "edge_gap_low") for _, r in table.iterrows()],
                "edge_U": [format_interval(r, "edge_gap_high") for _, r in table.iterrows()],
                "below": [f"{v:.0%}" for v in table["mass_below_mean"]],
                "above": [f"{v:.0%}" for v in table["mass_above_mean"]],
            }
        )
        with pd.option_context("display.width", 200, "display.max_colwidth", 40, "display.max_rows", 200):
            lines.append(shown.to_string(index=False))
        lines.append("")
        bins = self.bins
        for _, r in table.iterrows():
            scope_bins = bins.loc[(bins["scope_kind"] == r["scope_kind"]) & (bins["scope"] == r["scope"])]
            likely_empty = int((scope_bins["p_empty"] >= 0.5).sum())
            k = int(r["gap_modal_bin"])
            lines.append(
                f"{r['scope'] if r['scope_kind'] != 'all' else 'All items'}: the widest gap is {format_interval(r, 'max_gap')} "
                f"logits wide; in {r['gap_p_modal_bin']:.0%} of draws it lies in bin {k} {t.bin_label(k)}, on average "
                f"[{r['gap_lo']:.2f}, {r['gap_hi']:.2f}] ({_gap_kind_text(r)}). "
                f"Between two items the widest gap is {format_interval(r, 'interior_gap')}; the edge gaps are "
                f"{format_interval(r, 'edge_gap_low')} at L and {format_interval(r, 'edge_gap_high')} at U. "
                f"DDM {format_interval(r, 'ddm_w1')} (in-range shape {format_interval(r, 'ddm_shape_w1')}). "
                f"{r['mass_below_mean']:.0%} of items lie below the range and {r['mass_above_mean']:.0%} above; "
                f"{likely_empty} of {t.n_bins} bins are more likely empty than not."
            )
        checked = self_check_lines(table, s, pct)
        if checked:
            lines += ["", *checked]
        ranking = self.ranking.loc[self.ranking["scope_kind"] == "all"].sort_values("rank_mean")
        if len(ranking):
            lines += [
                "",
                f"Re-weighted leaderboard (all items; top {min(max_subjects, len(ranking))} of {len(ranking)}):",
            ]
            top = ranking.head(max_subjects)
            board = pd.DataFrame(
                {
                    "rank": [format_interval(r, "rank", digits=1, ends="{:.0f}".format) for _, r in top.iterrows()],
                    "group": top["group"].to_numpy(),
                    "subject": top["subject"].to_numpy(),
                    "reweighted": [format_interval(r, "reweighted") for _, r in top.iterrows()],
                    "raw": [f"{v:.3f}" for v in top["raw_accuracy"]],
                    "raw_rank": top["raw_rank"].to_numpy(),
                }
            )
            with pd.option_context("display.width", 200, "display.max_colwidth", 40):
                lines.append(board.to_string(index=False))
        return "\n".join(lines)


SELF_CHECKED = {
    "max_gap": "Maximum Gap",
    "interior_gap": "interior gap",
    "edge_gap_low": "edge gap at L",
    "edge_gap_high": "edge gap at U",
    "ddm_w1": "DDM",
}


def _self_check_entry(row: pd.Series) -> dict[str, Any]:
    """``summary.json``'s self-check of one scope: per measure, the achieved coverage and calibrated interval."""
    out = {}
    for m in SELF_CHECKED:
        if f"{m}_self_check_coverage" in row.index and pd.notna(row[f"{m}_self_check_coverage"]):
            out[m] = {
                "coverage": row[f"{m}_self_check_coverage"],
                "calibrated_ci_low": row[f"{m}_self_check_ci_low"],
                "calibrated_ci_high": row[f"{m}_self_check_ci_high"],
            }
    return {"self_check": out} if out else {}


def self_check_lines(table: pd.DataFrame, settings: dict[str, Any], pct: str) -> list[str]:
    """The self-check's sentences for the text output and the report (none when the audit ran without one)."""
    check = settings.get("self_check")
    if not isinstance(check, dict):
        return []
    nominal = float(check.get("nominal", 0.9))
    shortfall = float(check.get("shortfall", 0.05))
    lines = [
        f"Self-check on this design: {check.get('n_sets')} data sets simulated from the posterior on the observed "
        f"cells ({check.get('n_failed', 0)} failed), each refitted with the approximate tier and audited alike, "
        f"{float(check.get('seconds', 0.0)):.0f} s. Coverage of the {pct} intervals here, against {nominal:.0%}:"
    ]
    if int(check.get("n_sets", 0)) < 20:
        lines.append(f"(with {check.get('n_sets')} sets the coverage is coarse: use 20 or more)")
    for _, r in table.loc[table["scope_kind"].isin(["all", "benchmark"])].iterrows():
        parts = []
        for m in ("max_gap", "ddm_w1"):
            if f"{m}_self_check_coverage" not in r.index or pd.isna(r[f"{m}_self_check_coverage"]):
                continue
            cov = float(r[f"{m}_self_check_coverage"])
            text = f"{SELF_CHECKED[m]} {format_interval(r, m)} held the truth in {cov:.0%}"
            if cov < nominal - shortfall:
                text += (
                    f", short: self-check calibrated interval [{r[f'{m}_self_check_ci_low']:.2f}, "
                    f"{r[f'{m}_self_check_ci_high']:.2f}]"
                )
            parts.append(text)
        if parts:
            lines.append(f"  {r['scope'] if r['scope_kind'] != 'all' else 'All items'}: " + "; ".join(parts) + ".")
    return lines


def flags_sentence(settings: dict[str, Any]) -> str:
    """How many items were flagged (``settings["item_flags"]``: flag -> count) and whether the measures counted them.

    >>> flags_sentence({"item_flags": {"flat": 2, "reversed": 1}, "excluded_items": []})
    '3 items are flagged (1 reversed, 2 flat) and counted in every measure; exclude_flagged=True (--exclude-flagged) leaves them out.'
    >>> flags_sentence({"item_flags": {"reversed": 1}, "excluded_items": ["q7"]})
    '1 flagged item (1 reversed) is left out of every measure.'
    """
    counts = dict(settings.get("item_flags") or {})
    n = sum(int(v) for v in counts.values())
    order = [k for k in ("reversed", "flat", "dif") if k in counts] + sorted(set(counts) - {"reversed", "flat", "dif"})
    kinds = ", ".join(f"{int(counts[k])} {k}" for k in order)
    if settings.get("excluded_items"):
        return (
            f"{n} flagged item{'s' if n != 1 else ''} ({kinds}) {'are' if n != 1 else 'is'} left out of every measure."
        )
    return (
        f"{n} item{'s are' if n != 1 else ' is'} flagged ({kinds}) and counted in every measure; exclude_flagged=True "
        "(--exclude-flagged) leaves them out."
    )


def _fit_sentences(settings: dict[str, Any]) -> list[str]:
    """What the audit says of the fit it was made from: a failed convergence check, and what sampling until converged
    did about divergences (``settings["fit_remedy"]``).

    >>> _fit_sentences({"converged": True, "fit_remedy": ""})
    []
    >>> _fit_sentences({"converged": False, "fit_remedy": ""})
    ['The fit FAILED its convergence checks: every number below is provisional.']
    """
    out = []
    if settings.get("converged") is False and not settings.get("approximate"):
        out.append("The fit FAILED its convergence checks: every number below is provisional.")
    if settings.get("fit_remedy"):
        out.append(f"Fit: {settings['fit_remedy']}")
    return out


def _gap_kind_text(row: pd.Series) -> str:
    kind = str(row["gap_kind"])
    share = f"the edge gap at L in {row['gap_p_edge_low']:.0%} of draws, at U in {row['gap_p_edge_high']:.0%}"
    if kind == "interior":
        return f"between two items; {share}"
    if kind == "whole range":
        return "no item inside the range"
    return f"an edge gap, set by where the range ends as much as by the items; {share}"


def _scope_rows(table: pd.DataFrame, scope: str) -> pd.DataFrame:
    """The rows of ``scope``: ``"all"``, ``"kind:name"``, or a scope name of any kind; a clear error when none."""
    if scope == "all":
        rows = table.loc[table["scope_kind"] == "all"]
    elif ":" in scope:
        kind, name = scope.split(":", 1)
        rows = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)]
    else:
        rows = table.loc[table["scope"].astype(str) == scope]
    if rows.empty:
        known = sorted(set(table["scope"].astype(str)))
        raise SpecError(f"no scope {scope!r} in the audit; scopes: {known}")
    return rows


def _interval_sentence(calibrated: object, pct: str) -> str:
    """Which intervals the Maximum Gap and the DDM report (see irtbayes.auditing.recalibration)."""
    if calibrated:
        return (
            f"The {pct} intervals of the Maximum Gap (and its interior and edge parts) and of the DDM are recalibrated: "
            "the posterior's own are widened to the coverage measured over nine simulated design families, since "
            "the posterior reads wide gaps too narrow (irtbayes.auditing.recalibration; the posterior's own "
            "intervals are in benchmarks.csv as *_posterior_ci_low/_high)."
        )
    return f"The {pct} intervals are the posterior's own (not recalibrated; see irtbayes.auditing.recalibration)."


#: The calibration study's range of designs (irtbayes.data.designs.FAMILIES): systems, items per benchmark.
STUDIED_SYSTEMS = (30, 300)
STUDIED_ITEMS = (30, 200)


def design_notes(table: pd.DataFrame, settings: dict[str, Any]) -> list[str]:
    """A warning when the audit's design lies outside the calibration study's, or in its weaker part."""
    if not settings.get("calibrated_intervals") or table.empty:
        return []
    n_subjects = int(table["n_subjects"].max())
    bench = table.loc[table["scope_kind"] == "benchmark"]
    small = bench.loc[bench["n_items"] < STUDIED_ITEMS[0], "scope"].astype(str).tolist()
    checked = isinstance(settings.get("self_check"), dict)
    advice = (
        "the self-check below measured their coverage on this design"
        if checked
        else "run the self-check (self_check=20, --self-check 20) to measure their coverage here"
    )
    notes = []
    if n_subjects < STUDIED_SYSTEMS[0] or n_subjects > STUDIED_SYSTEMS[1]:
        notes.append(
            f"{n_subjects} systems lie outside the calibration study's {STUDIED_SYSTEMS[0]}-{STUDIED_SYSTEMS[1]}: "
            f"the recalibrated intervals are unchecked by the study on this design; {advice}."
        )
    elif n_subjects < 80:
        notes.append(
            f"With {n_subjects} systems (under 80) the study's coverage target was not required; its few-systems "
            f"family (30-60 systems) is reported in docs/validation.md; {advice}."
        )
    if small:
        notes.append(
            f"{len(small)} benchmark(s) have fewer than {STUDIED_ITEMS[0]} items ({', '.join(small[:5])}"
            f"{', ...' if len(small) > 5 else ''}), fewer than the calibration study had: their gap and DDM "
            f"intervals are unchecked by the study there; {advice}."
        )
    return notes


def graded_sentence(kind: str, points: str | None = "location") -> str:
    """What an audit of graded items measures, in one sentence (the text summary and the report say it)."""
    name = {"grm": "graded response model", "gpcm": "generalised partial credit model"}.get(kind, kind)
    where = (
        "coverage, DDM and the gaps count each item at each of its thresholds (graded_points='thresholds'), the "
        "items table places it at its location, the ability at which its expected score is half its maximum"
        if points == "thresholds"
        else "each item is placed at its location, the ability at which its expected score is half its maximum"
    )
    return (
        f"Graded items ({name}): {where}; re-weighted scores are mean shares of each item's maximum score, and the "
        "information curves are the graded model's."
    )


def _ensemble_sentence(ensemble: object) -> str:
    """Which item locations the measures of the whole set (coverage, DDM, gaps) were computed from."""
    if ensemble == "deconvolved":
        return (
            "Coverage, DDM and gaps use deconvolved item locations: per draw, each item is placed under its "
            "benchmark's estimated difficulty population (cut to a support, at most one empty stretch; "
            "irtbayes.auditing.deconvolve), not the model's normal prior. Item difficulties and ranks use the fit's draws."
        )
    return "Coverage, DDM and gaps use the fit's difficulty draws as they are."
