"""What an audit found, in plain sentences: :func:`audit_findings` -> :class:`Findings`.

The report and ``audit.txt`` open with them. Each finding is one sentence (or two) with its number and interval;
they come largest first, ranked by the share of items, of the target's weight or of systems they concern
(:class:`Finding`): items outside the systems' range, items every system answers alike, leaders who solve nearly
everything, the benchmark furthest from the target, a credible gap, a re-ordered leaderboard. Then what to do about
them (where new items count most, with the command; which items separate nobody; which leaderboard to report);
then what these data cannot decide. Each measure is defined once, in :func:`glossary`, not in every sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from irtbayes.auditing.result import design_notes, flags_sentence, self_check_lines
from irtbayes.core.summaries import format_interval
from irtbayes.fitting.diagnostics.divergences import remedy_text
from irtbayes.reporting.document import format_probability, format_share

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.fitting.result import Fit

__all__ = [
    "CREDIBLE_EMPTY",
    "CREDIBLE_GAP",
    "Finding",
    "Findings",
    "audit_findings",
    "glossary",
]

#: P(bin empty) at or above which a bin is called empty, and the band where the data cannot decide.
CREDIBLE_EMPTY = 0.9
UNDECIDED_EMPTY = 0.5
#: A gap is credible when the lower end of its Maximum Gap interval exceeds this many logits: the audit's false-gap
#: threshold (scripts/gap_calibration.py; no simulated benchmark without a gap had its lower end above it).
CREDIBLE_GAP = 0.5
#: Benchmarks or systems named in one finding; the rest are counted (every one is in the tables).
MAX_NAMED = 5
#: Against the target, a bin whose share of the in-range items is below this fraction of its weight is thin.
THIN = 0.8
#: The leaders' saturation worth a finding, and worth an action.
SATURATED_FINDING = 0.1
SATURATED_ACTION = 0.5
#: The share of items outside the range worth an action.
OUTSIDE_ACTION = 0.1


@dataclass(frozen=True)
class Finding:
    """One finding: its sentence and its size, the share (of items, of the target's weight, of systems) it concerns;
    the findings are listed largest first."""

    size: float
    text: str


@dataclass(frozen=True)
class Findings:
    """What the report and ``audit.txt`` lead with, written from the numbers.

    Attributes
    ----------
    verdict
        One sentence on the fit's convergence checks (or that the posterior is approximate or partial).
    trusted
        The fit passed its checks and is neither approximate nor partial. When False every finding opens with
        ``PROVISIONAL`` and the reason.
    found
        The findings, largest effect first. Empty without an audit.
    todo
        What to do about them: where new items count most (with the command), which items to leave out, which
        leaderboard to report.
    open
        What these data cannot decide (the report's closing section).
    glossary
        ``(term, definition)`` of every measure the sentences use.
    """

    verdict: str
    trusted: bool
    found: list[str]
    todo: list[str] = field(default_factory=list)
    open: list[str] = field(default_factory=list)
    glossary: list[tuple[str, str]] = field(default_factory=list)

    def to_text(self) -> str:
        """The findings as plain text: the verdict, the findings, what to do, what is not decided, the glossary."""
        lines = ["What this audit found", "", self.verdict, ""]
        lines += [f"- {s}" for s in self.found]
        if self.todo:
            lines += ["", "What to do", ""] + [f"- {s}" for s in self.todo]
        if self.open:
            lines += ["", "Not decided by these data", ""] + [f"- {s}" for s in self.open]
        if self.glossary:
            lines += ["", "Glossary", ""] + [f"- {term}: {text}" for term, text in self.glossary]
        return "\n".join(lines)


def audit_findings(
    fit: Fit, audit: AuditResult | None, *, ci_prob: float | None = None, fit_folder: str | None = None
) -> Findings:
    """The findings, what to do about them and what is not decided, from a fit and its audit.

    Parameters
    ----------
    fit
        The fit; its convergence checks decide whether the findings are marked provisional.
    audit
        Its audit, or None (then only the verdict).
    ci_prob
        Probability of the intervals the sentences name (default the audit's, else 0.9).
    fit_folder
        Where the fit is saved, for the commands the actions give (default ``FIT``).

    Examples
    --------
    >>> from irtbayes.examples import simulated_audit, simulated_fit
    >>> fit, data = simulated_fit(30, 60, n_benchmarks=2)
    >>> result, _ = simulated_audit(30, 60, bins=5)
    >>> findings = audit_findings(fit, result)
    >>> findings.trusted, findings.verdict.startswith("The fit FAILED its convergence checks")
    (False, True)
    >>> all(sentence.startswith("PROVISIONAL") for sentence in findings.found)
    True
    >>> [term for term, _ in findings.glossary][:3]
    ['Logit', 'Ability range', 'Target']
    """
    verdict, reason = _verdict(fit, audit)
    if audit is None:
        return Findings(verdict=verdict, trusted=not reason, found=[])
    pct = f"{(ci_prob if ci_prob is not None else audit.ci_prob):.0%}"
    unsupported: list[str] = []
    effects = [
        *_flagged(audit),
        *_outside(audit),
        *_answered_alike(audit),
        *_saturation(audit),
        *_mismatch(audit, unsupported, _floor_caveat(fit)),
        *_gaps(audit, unsupported),
        *_ranking(audit, pct, unsupported),
    ]
    found = [e.text for e in sorted(effects, key=lambda e: -e.size)]
    checked = self_check_lines(audit.benchmarks, audit.settings, pct)
    if checked:
        found.append(" ".join(line.strip() for line in checked))
    target = audit.target
    unsupported.append(
        f"Conclusions about weighting hold for the chosen target ({target.description}); another target (the "
        "workload a decision is about) can give another DDM and another re-weighted order."
    )
    unsupported.append(_gap_width_caveat(fit, audit))
    unsupported += design_notes(audit.benchmarks, audit.settings)
    mark = f"PROVISIONAL ({reason}): " if reason else ""
    todo = _todo(audit, reason, fit_folder or "FIT")
    return Findings(
        verdict=verdict,
        trusted=not reason,
        found=[mark + s for s in found],
        todo=todo,
        open=unsupported,
        glossary=glossary(audit, pct),
    )


# ------------------------------------------------------------------------------------------------ the verdict


def _verdict(fit: Fit, audit: AuditResult | None) -> tuple[str, str]:
    """Whether the fit passed its convergence checks, in one sentence, and why its numbers are provisional
    (empty when they are not)."""
    diag = fit.diagnostics
    if fit.partial:
        return (
            f"Warning: {fit.partial_text()} An unfinished run has not converged: every number in this report is "
            "provisional.",
            "partial fit",
        )
    if fit.approximate:
        return (
            f"The posterior is an approximation ({fit.sampler.get('name')}): MCMC convergence checks do not apply "
            "and its intervals may be too narrow. Every number in this report is provisional; refit with NUTS "
            "before relying on it.",
            "approximate posterior",
        )
    if not diag.ok:
        more = f"; {len(diag.problems) - 3} more" if len(diag.problems) > 3 else ""
        remedy = remedy_text(list(fit.sampler.get("remedies") or []))
        return (
            "The fit FAILED its convergence checks (" + "; ".join(diag.problems[:3]) + more + "): every number in "
            "this report is provisional until a longer or better-conditioned fit passes."
            + (f" {remedy}" if remedy else ""),
            "failed convergence checks",
        )
    if audit is not None and audit.settings.get("converged") is False:
        return ("The audit records that the draws it was made from failed their convergence checks: every "
                "number in this report is provisional.", "failed convergence checks")  # fmt: skip
    remedy = remedy_text(list(fit.sampler.get("remedies") or []))
    divergences = f"{diag.divergences} divergences" if diag.divergences else "no divergences"
    return (
        f"The fit passed its convergence checks (max r-hat {diag.max_rhat:.3f}, min bulk ESS "
        f"{diag.min_ess_bulk:.0f}, {divergences})." + (f" {remedy}" if remedy else ""),
        "",
    )


# ------------------------------------------------------------------------------------------------ the findings


def _benchmarks(audit: AuditResult) -> pd.DataFrame:
    """The scopes the findings compare: the benchmarks, or all items when the items carry no benchmark labels."""
    kind = "benchmark" if (audit.benchmarks["scope_kind"] == "benchmark").any() else "all"
    return audit.benchmarks.loc[audit.benchmarks["scope_kind"] == kind]


def _everything(audit: AuditResult) -> pd.Series:
    """The row of all items together."""
    rows = audit.benchmarks.loc[audit.benchmarks["scope_kind"] == "all"]
    return rows.iloc[0] if len(rows) else _benchmarks(audit).iloc[0]


def _name(row: pd.Series) -> str:
    return "all items" if row["scope_kind"] == "all" else str(row["scope"])


def _listed(names: list[str], n: int | None = None) -> str:
    """``a, b and c``; ``a, b, c and 4 more`` past :data:`MAX_NAMED` (``n``: how many there are in all)."""
    n = len(names) if n is None else n
    shown = names[:MAX_NAMED]
    if n > len(shown):
        return ", ".join(shown) + f" and {n - len(shown):,} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _share(row: pd.Series, prefix: str) -> str:
    """A share with its interval, ``17% [15%, 19%]``."""
    return format_interval(row, prefix, fmt=format_share)


def _range(audit: AuditResult) -> str:
    return f"[{audit.target.lo:.1f}, {audit.target.hi:.1f}]"


def _outside(audit: AuditResult) -> list[Finding]:
    """Items outside the systems' ability range: the share above and below, and the benchmarks with the most."""
    row = _everything(audit)
    below, above = float(row["mass_below_mean"]), float(row["mass_above_mean"])
    if below + above < 0.005:
        return [Finding(0.0, f"Nearly every item lies inside the systems' ability range {_range(audit)}.")]
    parts = []
    if above >= 0.005:
        parts.append(f"{_share(row, 'mass_above')} above it, too hard for nearly every system")
    if below >= 0.005:
        parts.append(f"{_share(row, 'mass_below')} below it, too easy for nearly every system")
    text = (
        f"{format_share(below + above)} of the items lie outside the systems' ability range {_range(audit)}: "
        + ", and ".join(parts)
        + "."
    )
    bench = _benchmarks(audit)
    if row["scope_kind"] == "all" and len(bench) > 1:
        outside = (bench["mass_below_mean"] + bench["mass_above_mean"]).to_numpy()
        order = np.argsort(-outside, kind="stable")[: min(3, len(bench))]
        named = [f"{bench['scope'].iloc[i]} ({format_share(outside[i])})" for i in order if outside[i] >= 0.005]
        if named:
            text += f" Most outside: {_listed(named)}."
    return [Finding(below + above, text)]


def _flagged(audit: AuditResult) -> list[Finding]:
    """Items flagged as reversed, flat or showing DIF (``irtbayes check-items``), counted or left out."""
    counts = audit.settings.get("item_flags") or {}
    n = sum(int(v) for v in counts.values())
    if not n:
        return []
    total = len(audit.items) + len(audit.settings.get("excluded_items") or [])
    return [Finding(n / max(total, 1), flags_sentence(audit.settings))]


def _answered_alike(audit: AuditResult) -> list[Finding]:
    """Items every system answered the same way: they separate no system."""
    items = audit.items
    if "answered_alike" not in items.columns:  # audits written before the column was recorded
        return []
    alike = items.loc[items["answered_alike"].astype(bool)]
    if alike.empty:
        return []
    solved = int((alike["accuracy"] >= 1).sum())
    failed = int((alike["accuracy"] <= 0).sum())
    how = [f"{solved:,} solved by all" if solved else "", f"{failed:,} by none" if failed else ""]
    rest = len(alike) - solved - failed
    how.append(f"{rest:,} with one shared partial score" if rest else "")
    share = len(alike) / max(len(items), 1)
    return [
        Finding(
            share,
            f"{len(alike):,} items ({format_share(share)}) were answered alike by every system "
            f"({', '.join(h for h in how if h)}): they separate no system.",
        )
    ]


def _saturation(audit: AuditResult) -> list[Finding]:
    """How much of the benchmark the leading systems all solve."""
    row = _everything(audit)
    if "saturated_share" not in row.index or pd.isna(row["saturated_share"]):
        return []
    saturated, unseparating = float(row["saturated_share"]), float(row["unseparating_share"])
    if saturated < SATURATED_FINDING:
        return []
    k = int(row["top_k"])
    return [
        Finding(
            saturated,
            f"Of the items the {k} leading systems answered, they all solved {format_share(saturated)}, and "
            f"{format_share(unseparating)} separate none of them (all solved or all failed).",
        )
    ]


def _floor_caveat(fit: Fit) -> str:
    """For a 1PL or 2PL fit of multiple-choice items: a sentence saying its DDM intervals are too narrow; else ""."""
    chosen = fit.info.get("multiple_choice")
    if fit.spec.kind not in ("1pl", "2pl") or not isinstance(chosen, dict):
        return ""
    return (
        f" These DDM intervals are too narrow: the {fit.spec.kind.upper()} leaves out the chance floor of the "
        f"{chosen.get('items')} multiple-choice items, and on simulated data with such floors its intervals held the "
        "true DDM less often than they claim (docs/validation.md#multiple-choice-floors); the 3PL with the floors at "
        "chance (`--model 3pl --guessing chance`) gives calibrated ones."
    )


def _mismatch(audit: AuditResult, unsupported: list[str], caveat: str = "") -> list[Finding]:
    """How far the benchmarks are from the target: the furthest, the closest, and which are credibly further; then
    ``caveat`` (:func:`_floor_caveat`)."""
    bench = _benchmarks(audit).sort_values("ddm_w1_mean", kind="stable")
    worst = bench.iloc[-1]
    if len(bench) == 1:
        return [Finding(float(worst["ddm_w1_mean"]), f"The items' DDM from the target is {_ddm(worst)}.{caveat}")]
    best = bench.iloc[0]
    text = f"{worst['scope']} is furthest from the target, DDM {_ddm(worst)}; {best['scope']} is closest, {_ddm(best)}."
    further = bench.loc[bench["ddm_w1_ci_low"] > best["ddm_w1_ci_high"], "scope"].astype(str).tolist()
    if further:
        text += (
            f" {len(further)} of {len(bench)} benchmarks are credibly further than {best['scope']} (their DDM "
            f"intervals lie wholly above {best['scope']}'s): {_listed(further[::-1])}."
        )
    else:
        unsupported.append(
            f"That any benchmark matches the target better than another: the DDM intervals of the closest "
            f"({best['scope']}) and the furthest ({worst['scope']}) overlap."
        )
    text += caveat
    overlaps = bench.loc[bench["ddm_w1_ci_low"] <= best["ddm_w1_ci_high"], "scope"].astype(str).tolist()
    if len(overlaps) > 1:
        unsupported.append(f"An order among {_listed(overlaps)} by DDM: their intervals overlap the closest one's.")
    return [Finding(float(worst["ddm_w1_mean"]), text)]


def _ddm(row: pd.Series) -> str:
    """A DDM with its interval, saying so when the mean lies outside it (a skewed posterior)."""
    text = format_interval(row, "ddm_w1")
    if not row["ddm_w1_ci_low"] <= row["ddm_w1_mean"] <= row["ddm_w1_ci_high"]:
        text += " (the mean lies outside the interval: its draws are skewed)"
    return text


def _gaps(audit: AuditResult, unsupported: list[str]) -> list[Finding]:
    """Credible coverage gaps and where they lie, or the widest gap when none is credible; bins credibly empty
    in a benchmark whose widest gap is not credible; bins whose emptiness the data cannot decide."""
    bench = _benchmarks(audit)
    kind = str(bench["scope_kind"].iloc[0])
    bins = audit.bins.loc[audit.bins["scope_kind"] == kind]
    empty = bins.loc[bins["p_empty"] >= CREDIBLE_EMPTY]
    width = audit.target.hi - audit.target.lo
    credible = bench.loc[bench["max_gap_ci_low"] > CREDIBLE_GAP].sort_values("max_gap_mean", ascending=False)
    found: list[Finding] = []
    if credible.empty:
        widest = bench.sort_values("max_gap_mean", kind="stable").iloc[-1]
        which = "No benchmark has" if kind == "benchmark" and len(bench) > 1 else f"{_name(widest).capitalize()} have"
        whose = f"{_name(widest)}'s" if len(bench) > 1 else "it"
        found.append(
            Finding(
                0.0,
                f"{which} a credible coverage gap. The widest is {whose}: {format_interval(widest, 'max_gap')} logits.",
            )
        )
    else:
        named = [_name(r) for _, r in credible.iterrows()]
        if len(bench) > 1:
            found.append(
                Finding(
                    float(credible["max_gap_mean"].iloc[0]) / width,
                    f"{len(credible)} of {len(bench)} benchmarks have a credible coverage gap: {_listed(named)}.",
                )
            )
        for _, row in credible.head(MAX_NAMED).iterrows():
            found.append(Finding(float(row["max_gap_mean"]) / width, _gap_sentence(audit, row, empty)))
    by_scope = bench.set_index("scope")
    narrow = empty.loc[~empty["scope"].isin(credible["scope"])]
    for scope, rows in list(narrow.groupby("scope", sort=False))[:MAX_NAMED]:
        row = by_scope.loc[scope]
        found.append(
            Finding(
                0.0,
                f"{'All items have' if kind == 'all' else f'{scope} has'} no item in {_spans(rows)} "
                f"(P ≥ {CREDIBLE_EMPTY:g}), a stretch too narrow for a credible gap: its Maximum Gap is "
                f"{format_interval(row, 'max_gap')} logits.",
            )
        )
    undecided = bins.loc[(bins["p_empty"] >= UNDECIDED_EMPTY) & (bins["p_empty"] < CREDIBLE_EMPTY)]
    for scope, rows in list(undecided.groupby("scope", sort=False))[:MAX_NAMED]:
        spans = ", ".join(
            f"[{r.lo:.2f}, {r.hi:.2f}) (P(empty) {format_probability(r.p_empty)})" for r in rows.itertuples()
        )
        unsupported.append(f"{scope}: whether {spans} is empty; the difficulty estimates are too uncertain to say.")
    return found


def _gap_sentence(audit: AuditResult, row: pd.Series, empty: pd.DataFrame) -> str:
    """Where one credible gap lies and of which kind, with the margin an edge gap may be."""
    target = audit.target
    kind = str(row["gap_kind"])
    where = {"interior": "between two items", "whole range": "no item inside the range"}.get(kind, f"at the {kind}")
    text = (
        f"{_name(row)} has a credible coverage gap: {format_interval(row, 'max_gap')} logits wide, around "
        f"[{row['gap_lo']:.2f}, {row['gap_hi']:.2f}] ({where}; in bin {int(row['gap_modal_bin'])} "
        f"{target.bin_label(int(row['gap_modal_bin']))} in {format_share(row['gap_p_modal_bin'])} of draws)."
    )
    inner = audit.settings.get("edge_gap_inner_range")
    side = {"low edge": "low", "high edge": "high"}.get(kind)
    if side is not None and inner is not None and pd.notna(row.get(f"edge_gap_{side}_inner_mean")):
        text += (
            f" Up to {float(inner[0]) - target.lo:.2f} logits of it can be the margin beyond the systems' "
            f"abilities; inside [{float(inner[0]):.2f}, {float(inner[1]):.2f}] it is "
            f"{format_interval(row, f'edge_gap_{side}_inner')} logits."
        )
    rows = empty.loc[empty["scope"] == row["scope"]]
    if len(rows):
        text += f" No item in {_spans(rows)} (P ≥ {CREDIBLE_EMPTY:g})."
    return text


def _spans(rows: pd.DataFrame) -> str:
    """The bins of ``rows`` as intervals, adjacent bins joined: ``[-0.26, 2.80)``."""
    spans: list[list[float]] = []
    for r in rows.sort_values("lo").itertuples():
        if spans and abs(spans[-1][1] - float(r.lo)) < 1e-9:
            spans[-1][1] = float(r.hi)
        else:
            spans.append([float(r.lo), float(r.hi)])
    return ", ".join(f"[{lo:.2f}, {hi:.2f})" for lo, hi in spans)


def _board(audit: AuditResult) -> pd.DataFrame:
    """The leaderboard of all items, by posterior mean re-weighted rank."""
    return audit.ranking.loc[audit.ranking["scope_kind"] == "all"].sort_values("rank_mean", kind="stable")


def _moved(ranking: pd.DataFrame) -> pd.DataFrame:
    """Systems whose raw rank (any of the ranks a tie shares) lies outside their re-weighted rank interval, the
    furthest moved first, with ``raw_last``, ``moved_up`` and ``moved_by``."""
    raw_last = ranking["raw_accuracy"].rank(ascending=False, method="max").to_numpy()
    up = ranking["raw_rank"].to_numpy() > ranking["rank_ci_high"].to_numpy()
    down = raw_last < ranking["rank_ci_low"].to_numpy()
    distance = np.where(up, ranking["raw_rank"] - ranking["rank_ci_high"], ranking["rank_ci_low"] - raw_last)
    moved = ranking.assign(raw_last=raw_last, moved_up=up, moved_by=distance).loc[up | down]
    return moved.sort_values("moved_by", ascending=False, kind="stable")


def _ranking(audit: AuditResult, pct: str, unsupported: list[str]) -> list[Finding]:
    """What weighting the items to the target does to the leaderboard, and who leads it."""
    ranking = _board(audit)
    if not len(ranking):
        return []
    ahead = audit.ahead
    ahead = ahead.set_axis(ahead.index.astype(str), axis=0).set_axis(ahead.columns.astype(str), axis=1)
    raw = pd.Series(ranking["raw_rank"].to_numpy(), index=ranking["subject"].astype(str))
    moved = _moved(ranking)
    if len(moved):
        parts = [
            f"{r.subject} from raw rank {_raw_ranks(int(r.raw_rank), int(r.raw_last))} to "
            f"{_rank_interval(int(r.rank_ci_low), int(r.rank_ci_high))}"
            f"{_overtakes(str(r.subject), int(r.raw_rank), up=bool(r.moved_up), raw=raw, ahead=ahead)}"
            for r in moved.head(MAX_NAMED).itertuples()
        ]
        more = f"; and {len(moved) - MAX_NAMED:,} more (ranking.csv)" if len(moved) > MAX_NAMED else ""
        text = (
            f"Weighting the items to the target moves {len(moved)} of {len(ranking)} systems beyond their {pct} "
            f"rank intervals: " + "; ".join(parts) + more + "."
        )
    else:
        text = (
            f"Weighting the items to the target keeps every one of the {len(ranking)} systems within its {pct} rank "
            "interval of its raw rank."
        )
    if len(ranking) > 1:
        text += " " + _leader(audit, ranking, ahead)
    groups = ranking.groupby("group")["subject"].apply(list)
    ties = [g for g in groups if len(g) > 1]
    if ties:
        shown = "; ".join(_listed([str(s) for s in g]) for g in ties[:4])
        unsupported.append(
            f"The order within {len(ties)} group(s) of systems the posterior cannot separate under the re-weighted "
            f"score (P(ahead) < {audit.settings.get('group_threshold', 0.9)}): {shown}."
        )
    return [Finding(len(moved) / len(ranking), text)]


def _leader(audit: AuditResult, ranking: pd.DataFrame, ahead: pd.DataFrame) -> str:
    """Who leads the re-weighted leaderboard, and how surely."""
    first, second = (str(s) for s in ranking["subject"].iloc[:2])
    lead = ranking.iloc[0]
    p = ahead.at[first, second] if first in ahead.index and second in ahead.columns else float("nan")
    text = (
        f"{first} leads, rank {_rank_interval(int(lead['rank_ci_low']), int(lead['rank_ci_high']))}, ahead of "
        f"{second} with P = {format_probability(p)}"
    )
    group = int((ranking["group"] == lead["group"]).sum())
    if group > 1:
        text += (
            f"; the posterior cannot order the first {group} systems (P(ahead) < "
            f"{format_probability(audit.settings.get('group_threshold', 0.9))})"
        )
    return text + "."


def _rank_interval(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}–{high}"


def _raw_ranks(first: int, last: int) -> str:
    """A raw rank, or the ranks a group tied on raw accuracy shares: ``3`` or ``1–308 (tied)``."""
    return str(first) if first == last else f"{first}–{last} (tied)"


def _overtakes(subject: str, raw_rank: int, *, up: bool, raw: pd.Series, ahead: pd.DataFrame) -> str:
    """``, ahead of B (raw rank 2) with P = 0.97`` for a system moved up past another (the most probable, the best
    raw rank among equals); ``, behind B ...`` for one moved down; empty when none is more probably passed."""
    if subject not in ahead.index:
        return ""
    others = raw.loc[(raw < raw_rank) if up else (raw > raw_rank)].index
    others = [o for o in others if o in ahead.columns and o != subject]
    if not others:
        return ""
    p = (ahead.loc[subject, others] if up else ahead.loc[others, subject]).astype(float)
    order = pd.DataFrame({"p": p.to_numpy(), "raw": raw.loc[others].to_numpy()}, index=others)
    best = str(order.sort_values(["p", "raw"], ascending=[False, True], kind="stable").index[0])
    value = float(order.at[best, "p"])
    if value < 0.5:
        return ""
    return f", {'ahead of' if up else 'behind'} {best} (raw rank {int(raw[best])}) with P = {format_probability(value)}"


def _gap_width_caveat(fit: Fit, audit: AuditResult) -> str:
    """Why the exact width of a gap is not supported, for the item locations the audit used."""
    difficulty_sd = float(fit.posterior["difficulty"].std(dim=("chain", "draw")).mean())
    if audit.settings.get("ensemble") == "deconvolved":
        intervals = (
            "the intervals here are recalibrated across simulated design families, which makes them wide: read "
            "the interval as the range of plausible widths, and the posterior mean as likely too low."
            if audit.settings.get("calibrated_intervals")
            else "the intervals here are the posterior's own (calibrated_intervals=False): read their upper ends, "
            "not their means."
        )
        return (
            "The exact width of a gap. Gaps are measured on deconvolved item locations, which keep items beside an "
            "empty region out of it, but a gap's edges are still blurred by the items' uncertainty (mean posterior "
            f"sd of a difficulty here: {difficulty_sd:.2f}), and on simulated designs the posterior mean reads the "
            "widest gap too narrow (docs/validation.md); " + intervals
        )
    return (
        f"The exact width of a gap: per-draw Maximum Gaps scatter items into gaps by the difficulty "
        f"uncertainty (mean posterior sd of a difficulty here: {difficulty_sd:.2f}), so gaps narrower than "
        "about twice that are understated; the location of the widest gap is the more reliable reading."
    )


# ------------------------------------------------------------------------------------------------ what to do


def _todo(audit: AuditResult, reason: str, fit_folder: str) -> list[str]:
    """The actions the findings call for, most useful first."""
    todo: list[str] = []
    if reason:
        todo.append(
            f"Act on none of this until a fit passes its convergence checks ({reason}): `irtbayes fit` with NUTS "
            "(the default) and the remedy the verdict names."
        )
    todo.append(_where_to_add(audit, fit_folder))
    flagged = sum(int(v) for v in (audit.settings.get("item_flags") or {}).values())
    if not audit.settings.get("item_flags"):
        todo.append(
            f"Check the items for mis-keyed, flat or leaked ones (`irtbayes check-items --fit {fit_folder} --out "
            "flags`); the audit counts every item until told otherwise."
        )
    elif flagged and not audit.settings.get("excluded_items"):
        todo.append(
            f"Read the {flagged:,} flagged item{'s' if flagged != 1 else ''} (item_flags.csv) and, where the flag "
            "holds, audit again with `--exclude-flagged` to leave them out of every measure."
        )
    items = audit.items
    if "answered_alike" in items.columns and items["answered_alike"].astype(bool).any():
        n = int(items["answered_alike"].astype(bool).sum())
        todo.append(
            f"Leave out or replace the {n:,} items every system answered alike (answered_alike in items.csv): they "
            "lengthen the benchmark without separating any system."
        )
    row = _everything(audit)
    outside = float(row["mass_below_mean"] + row["mass_above_mean"])
    if outside >= OUTSIDE_ACTION:
        todo.append(
            f"Compare these systems on the re-weighted accuracy (ranking.csv), or on the items inside their range: "
            f"the {format_share(outside)} of items outside it move every system's score alike."
        )
    if "saturated_share" in row.index and float(row["saturated_share"]) >= SATURATED_ACTION:
        todo.append(
            f"To separate the leading systems, add items harder than they solve (difficulty near or above "
            f"{audit.target.hi:.1f}): the top {int(row['top_k'])} all solved {format_share(row['saturated_share'])} "
            "of theirs."
        )
    ranking = _board(audit)
    if len(ranking) > 1:
        moved = len(_moved(ranking))
        todo.append(
            f"Report the re-weighted leaderboard beside the raw one (ranking.csv): under this target {moved} "
            f"system{'s' if moved != 1 else ''} change rank beyond {'their' if moved != 1 else 'its'} interval."
            if moved
            else "The raw leaderboard's order holds for this target: the re-weighted one moves no system beyond "
            "its interval."
        )
    return todo


def _where_to_add(audit: AuditResult, fit_folder: str) -> str:
    """Where new items count most: a credible gap's bin, else the bin thinnest against the target."""
    bench = _benchmarks(audit)
    target = audit.target
    credible = bench.loc[bench["max_gap_ci_low"] > CREDIBLE_GAP].sort_values("max_gap_mean", ascending=False)
    command = f"irtbayes benchfill propose --fit {fit_folder} --candidates items.csv --out benchfill"
    if len(credible):
        row = credible.iloc[0]
        k = int(row["gap_modal_bin"])
        option = f" --benchmark {row['scope']}" if row["scope_kind"] == "benchmark" else ""
        return (
            f"New items count most in {_name(row)}'s gap, difficulty {target.bin_label(k)}: `{command}{option}` "
            "writes candidates for it and accepts those the refit places there."
        )
    bins = audit.bins.loc[audit.bins["scope_kind"] == "all"]
    if bins.empty or "share_in_range_mean" not in bins.columns:
        return "No gap needs filling."
    ratio = (bins["share_in_range_mean"] / bins["target_weight"].where(bins["target_weight"] > 0)).to_numpy()
    if not np.isfinite(ratio).any() or np.nanmin(ratio) >= THIN:
        return "No gap needs filling, and inside the range the items follow the target: new items are not needed for coverage."
    at = int(np.nanargmin(ratio))
    row = bins.iloc[at]
    k = int(row["bin"])
    return (
        f"No gap needs filling. Against the target the items are thinnest at difficulty {target.bin_label(k)}: "
        f"{_share(row, 'share_in_range')} of the items inside the range, for {format_share(row['target_weight'])} "
        f"of the target's weight. New items count most there: `{command} --aim-bin {k}`."
    )


# ------------------------------------------------------------------------------------------------ the glossary


def glossary(audit: AuditResult, pct: str = "90%") -> list[tuple[str, str]]:
    """Each measure the findings use, defined once, with the audit's own range, target and rules."""
    t = audit.target
    calibrated = (
        " The gap and DDM intervals are recalibrated: widened to the coverage measured over nine simulated design "
        "families, in which at most 1% of the benchmarks whose true widest gap was under "
        f"{CREDIBLE_GAP:g} logits had the lower end of their interval above it (docs/validation.md)."
        if audit.settings.get("calibrated_intervals")
        else ""
    )
    terms = [
        ("Logit", "the unit of the ability scale: a system one logit above an item's difficulty solves it with "
                  "odds e (about 73%) for an item of discrimination 1."),
        ("Ability range", f"the stretch {_range(audit)} of the ability scale the audit is about: "
                          f"{audit.settings.get('range_rule') or 'as given'}."),
        ("Target", f"the weight the audit asks for in each difficulty bin of the range, here {t.description}; it "
                   "comes from the decision at hand (the workload that matters), not from the benchmark."),
        ("Outside the range", "an item whose difficulty lies below or above the range: nearly every system "
                              "solves it, or nearly none."),
        ("DDM", "Difficulty Distribution Mismatch, in [0, 1]: the share of items outside the range plus, for the "
                "rest, their Wasserstein-1 distance from the target over the range's width; 0 when the items follow "
                "the target."),
        ("Maximum Gap", "the widest stretch of the range with no item (between two items or at an edge), in "
                        "logits, per posterior draw."),
        ("Credible gap", f"a Maximum Gap whose {pct} interval starts above {CREDIBLE_GAP:g} logits.{calibrated}"),
        ("Interval", f"the {pct} equal-tailed credible interval, written after the estimate: 0.19 [0.11, 0.48] is "
                     f"a mean of 0.19 with the middle {pct} of the posterior between 0.11 and 0.48."),
        ("Re-weighted accuracy", "a system's expected accuracy with each difficulty bin weighted as the target "
                                 "weights it; its rank interval is the interval of its rank over the posterior "
                                 "draws, and P(A ahead of B) the share of draws in which A ranks above B."),
        ("Saturated", "an item that every one of the leading systems (the top five by ability) who answered it "
                      "solved."),
        ("Answered alike", "an item that every system who answered it answered the same way."),
    ]  # fmt: skip
    return terms
