"""BenchFill's result: one round's decisions and before/after tables, written and read back."""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.figures import plot_candidate_intervals, plot_coverage_before_after
from irtbayes.benchfill.ledger import Ledger, decision_records
from irtbayes.benchfill.target import TargetChoice
from irtbayes.checks.summary import arviz_names
from irtbayes.core.errors import DataError
from irtbayes.core.files import atomic_write_text, json_ready, read_json
from irtbayes.core.summaries import format_interval

if TYPE_CHECKING:
    from matplotlib.axes import Axes

log = logging.getLogger(__name__)


@dataclass
class BenchfillResult:
    """One BenchFill calibration round: decisions, and the bank before and after the accepted items.

    Attributes
    ----------
    decisions
        One row per candidate (index ``candidate_id``): the columns of
        :func:`~irtbayes.benchfill.acceptance.decide_all` plus ``benchmark`` and ``text``.
    comparison, bins, subjects, conclusions
        The tables of :func:`~irtbayes.benchfill.compare.before_after`; ``conclusions`` says which conclusions
        changed because of the new composition alone (and, after a full refit, which by re-estimation).
    target
        The target.
    settings
        ``mode``, ``tau``, ``min_responses``, ``discrimination_prob``, ``min_discrimination``, ``ci_prob``,
        the sampler settings of a full refit, ``n_draws``.
    run_id
        Stamped on the ledger records of this round.

    Examples
    --------
    :meth:`summary` runs a whole round on a hand-built bank; the tables of a round are:

    >>> import dataclasses
    >>> from irtbayes.benchfill.result import BenchfillResult
    >>> [f.name for f in dataclasses.fields(BenchfillResult)][:4]
    ['decisions', 'comparison', 'bins', 'subjects']
    """

    decisions: pd.DataFrame
    comparison: pd.DataFrame
    bins: pd.DataFrame
    subjects: pd.DataFrame
    target: TargetChoice
    settings: dict[str, Any]
    run_id: str
    conclusions: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def accepted(self) -> list[str]:
        return [str(i) for i in self.decisions.index[self.decisions["decision"] == "accepted"]]

    @property
    def ci_prob(self) -> float:
        return float(self.settings.get("ci_prob", 0.9))

    def summary(self) -> pd.DataFrame:
        """One row per candidate (index ``candidate_id``): its decision and reason, P(in target), slope and
        difficulty with intervals, responses.

        Returns
        -------
        pandas.DataFrame
            Columns ``benchmark``, ``decision``, ``reason``, ``n_responses``, ``p_in_target``,
            ``p_in_target_data``, ``slope_{mean,eti90_lb,eti90_ub}``, ``difficulty_{mean,eti90_lb,eti90_ub}``
            (those present in :attr:`decisions`, where the interval's ends are ``*_ci_low`` and ``*_ci_high``;
            ArviZ's names, :func:`irtbayes.checks.summary.interval_columns`); ``attrs`` record ``ci_prob``, the
            target's label and ``run_id``.

        Examples
        --------
        A bank of 100 simulated systems, two candidates aimed at the target bin, one of them mis-keyed
        (responses fall with ability), answered by every system and calibrated with the bank held fixed:

        >>> from irtbayes.benchfill.candidates import Candidate
        >>> from irtbayes.benchfill.run import calibrate_candidates
        >>> from irtbayes.benchfill.responses import candidate_response_data
        >>> from irtbayes.benchfill.target import choose_target
        >>> from irtbayes.fitting.result import Fit
        >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
        >>> data, truth = simulate_responses(100, 40, missing=0.0, seed=1)
        >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
        >>> choice, _ = choose_target(fit, data, bins=4, target_bin=0)  # the bin of the true widest gap
        >>> theta, middle = truth["ability"].values, (choice.lo + choice.hi) / 2
        >>> rng = np.random.default_rng(3)
        >>> answers = pd.concat(
        ...     pd.DataFrame({"subject": data.subject_ids, "item": cid, "response": rng.random(100) < 1 / (1 + np.exp(-slope * (theta - middle)))})
        ...     for cid, slope in [("good", 1.5), ("mis-keyed", -1.5)]
        ... ).astype({"response": float})
        >>> candidates = [Candidate(candidate_id=c, text=t, answer="a") for c, t in [("good", "What is 7 x 6?"), ("mis-keyed", "Name the capital of Peru.")]]
        >>> new = candidate_response_data(answers, candidates, fit=fit)
        >>> result = calibrate_candidates(fit, data, candidates, new, choice, mode="fixed", seed=4)
        >>> result.summary()[["decision", "reason"]]
                       decision     reason
        candidate_id
        good           accepted  in target
        mis-keyed      rejected  mis-keyed
        >>> result.to_dataframe("comparison").set_index("version").loc[["before", "after"], "n_items"].tolist()
        [40, 41]
        >>> result.plot_candidates().get_xlabel(), result.plot_coverage().get_ylabel()
        ('difficulty (ability scale)', 'expected items')
        """
        d = self.decisions
        wanted = [
            "benchmark",
            "decision",
            "reason",
            "n_responses",
            "p_in_target",
            "p_in_target_data",
            "slope_mean",
            "slope_ci_low",
            "slope_ci_high",
            "difficulty_mean",
            "difficulty_ci_low",
            "difficulty_ci_high",
        ]
        table = d[[c for c in wanted if c in d.columns]].copy()
        table.attrs.update(ci_prob=self.ci_prob, target=self.target.label, run_id=self.run_id)
        return arviz_names(table, self.ci_prob)

    def to_dataframe(self, table: str = "decisions") -> pd.DataFrame:
        """One of the round's tables by name, a copy: ``decisions``, ``comparison``, ``bins`` or ``subjects``.

        See the class example.
        """
        tables = {
            "decisions": self.decisions,
            "comparison": self.comparison,
            "bins": self.bins,
            "subjects": self.subjects,
        }
        if table not in tables:
            raise DataError(f"no BenchFill table {table!r}; the tables are {sorted(tables)}")
        return tables[table].copy()

    def plot_candidates(self, *, ax: Axes | None = None) -> Axes:
        """Each candidate's posterior difficulty interval against the target interval (see the class example)."""
        return plot_candidate_intervals(self.decisions, target_lo=self.target.lo, target_hi=self.target.hi, ax=ax)

    def plot_coverage(self, *, ax: Axes | None = None) -> Axes:
        """Expected items per bin before and after, for the target's benchmark (or all items); see the class example."""
        t = self.target
        return plot_coverage_before_after(self._shown_bins(), target_lo=t.lo, target_hi=t.hi, ax=ax)

    def _shown_bins(self) -> pd.DataFrame:
        """The bins of the target's benchmark (all items when it has none, or no rows for it)."""
        t = self.target
        scope_kind, scope = ("benchmark", t.benchmark) if t.benchmark else ("all", "all")
        shown = self.bins.loc[(self.bins["scope_kind"] == scope_kind) & (self.bins["scope"].astype(str) == scope)]
        return self.bins.loc[self.bins["scope_kind"] == "all"] if shown.empty else shown

    def summary_dict(self) -> dict[str, Any]:
        """What ``before_after.json`` holds."""
        reasons = self.decisions["reason"].value_counts()
        return json_ready(
            {
                "run_id": self.run_id,
                "target": self.target.to_dict(),
                "settings": self.settings,
                "n_candidates": len(self.decisions),
                "accepted": self.accepted,
                "reasons": {str(k): int(v) for k, v in reasons.items()},
                "method": _METHODS.get(str(self.settings.get("mode")), ""),
                "comparison": self.comparison.to_dict(orient="records"),
                "bins": self.bins.to_dict(orient="records"),
                "subjects": self.subjects.to_dict(orient="records"),
                "conclusions": self.conclusions.to_dict(orient="records"),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: :meth:`summary_dict`, what ``before_after.json`` holds."""
        return self.summary_dict()

    def to_text(self) -> str:
        """A few lines for the terminal: target, decisions, Maximum Gap and DDM before and after."""
        t = self.target
        s = self.settings
        lines = [
            f"BenchFill target {t.label}: {t.how}.",
            f"Rule: P({t.lo:.2f} <= b < {t.hi:.2f}) >= {s.get('tau')} and P(slope > {s.get('min_discrimination', 0):g}) >= "
            f"{s.get('discrimination_prob')}, at least {s.get('min_responses')} responses; calibration: {s.get('mode')}.",
            f"{len(self.accepted)} of {len(self.decisions)} candidates accepted.",
        ]
        unconverged = _unconverged_note(s)
        if unconverged:
            lines.append(f"WARNING: {unconverged}")
        shown = self.decisions[["decision", "reason", "p_in_target", "difficulty_mean", "difficulty_ci_low",
                                "difficulty_ci_high", "n_responses"]]  # fmt: skip
        with pd.option_context("display.width", 160, "display.max_rows", 100, "display.precision", 3):
            lines += ["", shown.to_string()]
        lines.append("")
        for _, row in self.comparison.iterrows():
            lines.append(
                f"{row['scope']:>12} {row['version']:<6} items {int(row['n_items']):4d} (+{int(row['n_added'])}): "
                f"Maximum Gap {format_interval(row, 'max_gap')}, DDM {format_interval(row, 'ddm_w1')}"
            )
        if not self.conclusions.empty:
            changed = self.conclusions.loc[self.conclusions["changed"].astype(bool)]
            lines.append("")
            lines += [
                f"changed by {row['cause']}: {row['scope']} {row['measure']} {row['verdict']} ({row['from']} to "
                f"{row['to']})"
                for _, row in changed.iterrows()
            ] or ["no conclusion changed credibly"]
        return "\n".join(lines)

    def report_section(self, doc: Any, figure: Callable[[str, Any, str], None]) -> None:
        """Add a BenchFill section to a report.

        Parameters
        ----------
        doc
            An :class:`irtbayes.reporting.document.Document` (``heading``, ``paragraph``, ``bullets``, ``table``).
        figure
            ``figure(name, ax, caption)`` embeds a matplotlib Axes.
        """
        t = self.target
        s = self.settings
        ci = self.ci_prob
        doc.heading("BenchFill: new items for the widest gap")
        doc.paragraph(
            f"Target interval [{t.lo:.2f}, {t.hi:.2f}) on the ability scale: {t.how}. A candidate is accepted when "
            f"the posterior puts its difficulty in the interval with probability at least {s.get('tau')}, its "
            f"sign-free slope above {s.get('min_discrimination', 0):g} with probability at least "
            f"{s.get('discrimination_prob')}, and at least {s.get('min_responses')} systems answered it. "
            f"{_METHODS.get(str(s.get('mode')), '')}"
        )
        reasons = self.decisions["reason"].value_counts()
        doc.paragraph(
            "A candidate must also be new (not a near-verbatim copy of a bank item or of another candidate, and "
            "not an unasked rewrite of a bank item), on-construct (its responses fit the model; with several "
            "ability dimensions, its own domain's ability carries it) and correctly keyed (the slope screen)."
        )
        doc.bullets(
            [f"{len(self.decisions)} candidates, {len(self.accepted)} accepted."]
            + [f"{int(v)} {k}" for k, v in reasons.items() if k != "in target"]
            + ([_unconverged_note(s)] if _unconverged_note(s) else [])
        )
        figure(
            "benchfill_candidates",
            plot_candidate_intervals(self.decisions, target_lo=t.lo, target_hi=t.hi),
            f"Each candidate's posterior difficulty (mean and {ci:.0%} interval) against the target interval "
            "(shaded); accepted candidates in colour.",
        )
        cols = ["decision", "reason", "p_in_target", "difficulty_mean", "difficulty_ci_low", "difficulty_ci_high",
                "discrimination_mean", "n_responses"]  # fmt: skip
        doc.table(self.decisions[[c for c in cols if c in self.decisions.columns]].reset_index(), caption="Candidates")
        shown = self._shown_bins()
        figure(
            "benchfill_coverage",
            plot_coverage_before_after(shown, target_lo=t.lo, target_hi=t.hi),
            f"Coverage of {t.benchmark or 'all items'} before and after: expected items per bin, the original "
            f"items and the added ones stacked, with {ci:.0%} intervals of the totals.",
        )
        comp_cols = ["scope", "version", "n_items", "n_added", "max_gap_mean", "max_gap_ci_low", "max_gap_ci_high",
                     "ddm_w1_mean", "ddm_w1_ci_low", "ddm_w1_ci_high", "gap_lo", "gap_hi"]  # fmt: skip
        doc.table(self.comparison[comp_cols], caption="Maximum Gap and DDM before and after (original items kept)")
        doc.paragraph(
            "Every original item stays in the extended benchmark; the table below gives each system's raw "
            "accuracy on the original and on the added items separately, and its re-weighted rank (all items) "
            "before and after, so a change in rank can be traced to the new items."
        )
        sub_cols = ["subject", "accuracy_original", "accuracy_added", "rank_before_mean", "rank_after_mean",
                    "reweighted_before_mean", "reweighted_after_mean"]  # fmt: skip
        doc.table(self.subjects[[c for c in sub_cols if c in self.subjects.columns]], caption="Systems")
        editorial_section(self, doc)


_METHODS = {
    "full": "Calibration: the bank was refitted with the candidates' responses (full concurrent calibration); the "
    "after-audit uses the refit.",
    "fixed": "Calibration: fixed bank (the bank held at its posterior, each candidate's difficulty and "
    "discrimination computed on a grid with the responses marginalised over each system's ability posterior and "
    "the fitted hierarchy as prior); the after-audit appends the accepted items' draws to the original posterior.",
}


def _unconverged_note(settings: dict[str, Any]) -> str:
    """A sentence when the fit behind the decisions failed its convergence checks or did not record them.

    A missing record counts as a failure: decisions are never presented as resting on a converged fit
    unless the check was made and passed.
    """
    if settings.get("mode") == "full":
        if settings.get("refit_converged") is True:
            return ""
        return (
            "the refit did not pass the convergence checks (or they were not recorded); these decisions are not "
            "reliable: refit with more draws, or use the fixed-bank mode."
        )
    if settings.get("bank_converged") is True:
        return ""
    return (
        "the bank's fit did not pass the convergence checks (or they were not recorded); these decisions rest on an "
        "unconverged posterior: refit the bank before relying on them."
    )


# ============================================================================================ files
def write_benchfill(
    result: BenchfillResult,
    out_dir: str | os.PathLike[str],
    *,
    candidates: Sequence[Candidate] | None = None,
) -> dict[str, Path]:
    """Append the decisions to ``ledger.jsonl`` and write the tables of a round into ``out_dir``.

    Files: ``ledger.jsonl`` (appended; a rerun continues it), ``ledger.csv`` (every record so far),
    ``before_after.csv`` (the comparison table), ``before_after.json`` (:meth:`BenchfillResult.summary_dict`),
    ``before_after_bins.csv``, ``before_after_subjects.csv`` and ``before_after_conclusions.csv``. Every file but the ledger is replaced
    atomically; the ledger is appended with one fsynced write.

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> import tempfile
    >>> from irtbayes.benchfill.responses import candidate_response_data
    >>> from irtbayes.benchfill.run import calibrate_candidates
    >>> from irtbayes.benchfill.target import choose_target
    >>> choice, _ = choose_target(fit, data, interval=(0.0, 1.0))
    >>> result = calibrate_candidates(fit, data, candidates, candidate_response_data(answers, candidates, fit=fit), choice, mode="fixed", seed=4)
    >>> paths = write_benchfill(result, tempfile.mkdtemp(), candidates=candidates)
    >>> {"ledger", "ledger_csv", "before_after_json", "before_after_csv"} <= set(paths)
    True
    >>> load_benchfill_result(paths["ledger"].parent).accepted == result.accepted
    True
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out / "ledger.jsonl", run_id=result.run_id)
    s = result.settings
    records = decision_records(
        result.decisions,
        candidates=candidates,
        target_bin=result.target.bin,  # type: ignore[arg-type]
        extra={
            "mode": s.get("mode"),
            "tau": s.get("tau"),
            "min_responses": s.get("min_responses"),
            "discrimination_prob": s.get("discrimination_prob"),
            "ci_prob": s.get("ci_prob"),
            "benchmark_target": result.target.benchmark,
            "refit_converged": s.get("refit_converged"),
            "bank_converged": s.get("bank_converged"),
        },
    )
    for record in records:
        record["target_lo"] = result.target.lo
        record["target_hi"] = result.target.hi
    ledger.append(records)
    paths = {"ledger": ledger.path, "ledger_csv": ledger.to_csv(out / "ledger.csv")}
    tables = {
        "csv": ("", result.comparison),
        "bins": ("_bins", result.bins),
        "subjects": ("_subjects", result.subjects),
    }
    tables["conclusions"] = ("_conclusions", result.conclusions)
    for key, (suffix, frame) in tables.items():
        paths[f"before_after_{key}"] = atomic_write_text(out / f"before_after{suffix}.csv", frame.to_csv(index=False))
    paths["before_after_json"] = atomic_write_text(
        out / "before_after.json", json.dumps(result.summary_dict(), indent=2, allow_nan=False) + "\n"
    )
    return paths


def load_benchfill_result(folder: str | os.PathLike[str]) -> BenchfillResult:
    """Rebuild the :class:`BenchfillResult` of the last round written into ``folder`` by :func:`write_benchfill`.

    The decisions are the ledger records of that round (its ``run_id``).

    Raises
    ------
    DataError
        A missing or malformed ``before_after.json`` or ledger.

    Examples
    --------
    :func:`write_benchfill` has a round written and read back; a folder without one is named:

    >>> import tempfile
    >>> from irtbayes.benchfill.result import load_benchfill_result
    >>> load_benchfill_result(tempfile.mkdtemp())
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: ...before_after.json: missing; is ... a folder written by `benchfill calibrate`?
    """
    folder = Path(folder)
    path = folder / "before_after.json"
    if not path.is_file():
        raise DataError(f"{path}: missing; is {folder} a folder written by `benchfill calibrate`?")
    summary = read_json(path)
    for key in ("run_id", "target", "settings", "comparison", "bins", "subjects"):
        if key not in summary:
            raise DataError(f"{path}: key '{key}' is missing")
    choice = TargetChoice.from_dict(summary["target"], where=str(path))
    ledger = Ledger(folder / "ledger.jsonl").read()
    rows = ledger.loc[ledger["run_id"] == summary["run_id"]]
    if rows.empty:
        raise DataError(f"{folder / 'ledger.jsonl'}: no records of run {summary['run_id']}")
    decisions = rows.drop_duplicates("candidate_id", keep="last").set_index("candidate_id")
    ci_prob = float(summary["settings"].get("ci_prob", 0.9))
    decisions.attrs.update(ci_prob=ci_prob, tau=summary["settings"].get("tau"))
    tables = {k: pd.DataFrame(summary.get(k, [])) for k in ("comparison", "bins", "subjects", "conclusions")}
    for frame in tables.values():
        frame.attrs.update(ci_prob=ci_prob, target=choice.target.to_dict())
    settings, run_id = dict(summary["settings"]), str(summary["run_id"])
    return BenchfillResult(decisions=decisions, target=choice, settings=settings, run_id=run_id, **tables)


#: Characters of an item's text shown in the report's tables.
TEXT_SHOWN = 160


def _short(value: object) -> str:
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    return text if len(text) <= TEXT_SHOWN else text[: TEXT_SHOWN - 1] + "…"


def editorial_section(result: BenchfillResult, doc: Any) -> None:
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
                "candidate text": [_short(x) for x in acc["text"]],
                "closest bank item": acc["closest_item"].to_numpy(),
                "its text": [_short(x) for x in acc.get("closest_text", pd.Series(None, index=acc.index))],
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
