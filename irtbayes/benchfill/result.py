"""BenchFill's result: one round's decisions and before/after tables, written and read back, and its figures.

**Before/after** (:func:`before_after`): the original bank and the extended bank audited side by side.
The audit of the original bank is set beside the audit of the extended bank (original items plus the
accepted candidates), with the same bins of the audit's target. For the full mode the extended audit uses the refit's
posterior (restricted to the original and accepted items). For the fixed-bank mode the accepted items'
draws are appended to the original posterior: draw s of a new item is paired with draw s of the bank
(chains and draws in order; 1PL: the new item shares the bank's discrimination of that draw). Under the
fixed-bank approximation the new items' posterior does not depend on the bank's draw, so any pairing is a
draw from the joint approximation. The original items' results stay separate from the added ones: per bin,
the expected count of original items and of added items; per subject, accuracy on each.

Its figures (:meth:`BenchfillResult.plot_candidates`, :meth:`BenchfillResult.plot_coverage`) are drawn by
:mod:`irtbayes.core.plots`; its report section is :mod:`irtbayes.reporting.benchfill`.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.auditing.coverage import bin_codes, count_items
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.run import audit
from irtbayes.auditing.targets import Target
from irtbayes.benchfill.aim import AUDIT_INFORMATION_DRAWS, AUDIT_MAX_DRAWS, Aim, frame_with_aim_names, with_aim_names
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.grid import candidate_group_label
from irtbayes.benchfill.ledger import Ledger, decision_records
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, FitError, SpecError, listed
from irtbayes.core.files import atomic_write_text, json_ready, read_json
from irtbayes.core.plots import plot_candidate_intervals, plot_coverage_before_after
from irtbayes.core.summaries import format_interval, summarize, summary_table
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.fitting.result import Fit

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
        The tables of :func:`~irtbayes.benchfill.result.before_after`; ``conclusions`` says which conclusions
        changed because of the new composition alone (and, after a full refit, which by re-estimation).
    aim
        The aim: the interval ``[lo, hi)`` the new items should fill (by default the bin of the widest gap), with
        the audit's target it was chosen from.
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
    aim: Aim
    settings: dict[str, Any]
    run_id: str
    conclusions: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def target(self) -> Aim:
        """Deprecated (a :class:`DeprecationWarning`): the old name of :attr:`aim`."""
        warnings.warn("BenchfillResult.target is deprecated: use BenchfillResult.aim", DeprecationWarning, stacklevel=2)
        return self.aim

    @property
    def accepted(self) -> list[str]:
        return [str(i) for i in self.decisions.index[self.decisions["decision"] == "accepted"]]

    @property
    def ci_prob(self) -> float:
        return float(self.settings.get("ci_prob", 0.9))

    def summary(self) -> pd.DataFrame:
        """One row per candidate (index ``candidate_id``): its decision and reason, P(b in aim), slope and
        difficulty with intervals, responses.

        Returns
        -------
        pandas.DataFrame
            Columns ``benchmark``, ``decision``, ``reason``, ``n_responses``, ``p_in_aim``,
            ``p_in_aim_data``, ``slope_{mean,ci_low,ci_high}``, ``difficulty_{mean,ci_low,ci_high}``
            (those present in :attr:`decisions`); ``attrs`` record ``ci_prob``, the
            aim's label and ``run_id``.

        Examples
        --------
        A bank of 100 simulated systems, two candidates aimed at the aim's bin, one of them mis-keyed
        (responses fall with ability), answered by every system and calibrated with the bank held fixed:

        >>> from irtbayes.benchfill.candidates import Candidate
        >>> from irtbayes.benchfill.run import calibrate_candidates
        >>> from irtbayes.benchfill.calibration import candidate_response_data
        >>> from irtbayes.benchfill.aim import choose_aim
        >>> from irtbayes.fitting.result import Fit
        >>> from irtbayes.data.simulate import posterior_near_truth, simulate_responses
        >>> data, truth = simulate_responses(100, 40, missing=0.0, seed=1)
        >>> fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
        >>> aim, _ = choose_aim(fit, data, bins=4, aim_bin=0)  # the bin of the true widest gap
        >>> theta, middle = truth["ability"].values, (aim.lo + aim.hi) / 2
        >>> rng = np.random.default_rng(3)
        >>> answers = pd.concat(
        ...     pd.DataFrame({"subject": data.subject_ids, "item": cid, "response": rng.random(100) < 1 / (1 + np.exp(-slope * (theta - middle)))})
        ...     for cid, slope in [("good", 1.5), ("mis-keyed", -1.5)]
        ... ).astype({"response": float})
        >>> candidates = [Candidate(candidate_id=c, text=t, answer="a") for c, t in [("good", "What is 7 x 6?"), ("mis-keyed", "Name the capital of Peru.")]]
        >>> new = candidate_response_data(answers, candidates, fit=fit)
        >>> result = calibrate_candidates(fit, data, candidates, new, aim, mode="fixed", seed=4)
        >>> result.summary()[["decision", "reason"]]
                       decision     reason
        candidate_id
        good           accepted     in aim
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
            "p_in_aim",
            "p_in_aim_data",
            "slope_mean",
            "slope_ci_low",
            "slope_ci_high",
            "difficulty_mean",
            "difficulty_ci_low",
            "difficulty_ci_high",
        ]
        table = d[[c for c in wanted if c in d.columns]].copy()
        table.attrs.update(ci_prob=self.ci_prob, aim=self.aim.label, run_id=self.run_id)
        return summary_table(table, self.ci_prob)

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
        """Each candidate's posterior difficulty interval against the aim (see the class example)."""
        return plot_candidate_intervals(self.decisions, aim_lo=self.aim.lo, aim_hi=self.aim.hi, ax=ax)

    def plot_coverage(self, *, ax: Axes | None = None) -> Axes:
        """Expected items per bin before and after, for the aim's benchmark (or all items); see the class example."""
        aim = self.aim
        return plot_coverage_before_after(self.shown_bins(), aim_lo=aim.lo, aim_hi=aim.hi, ax=ax)

    def shown_bins(self) -> pd.DataFrame:
        """The bins of the aim's benchmark (all items when it has none, or no rows for it)."""
        benchmark = self.aim.benchmark
        scope_kind, scope = ("benchmark", benchmark) if benchmark else ("all", "all")
        shown = self.bins.loc[(self.bins["scope_kind"] == scope_kind) & (self.bins["scope"].astype(str) == scope)]
        return self.bins.loc[self.bins["scope_kind"] == "all"] if shown.empty else shown

    def summary_dict(self) -> dict[str, Any]:
        """What ``before_after.json`` holds."""
        reasons = self.decisions["reason"].value_counts()
        return json_ready(
            {
                "run_id": self.run_id,
                "aim": self.aim.to_dict(),
                "settings": self.settings,
                "n_candidates": len(self.decisions),
                "accepted": self.accepted,
                "reasons": {str(k): int(v) for k, v in reasons.items()},
                "method": METHODS.get(str(self.settings.get("mode")), ""),
                "comparison": self.comparison.to_dict(orient="records"),
                "bins": self.bins.to_dict(orient="records"),
                "subjects": self.subjects.to_dict(orient="records"),
                "conclusions": self.conclusions.to_dict(orient="records"),
            }
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: :meth:`summary_dict`, what ``before_after.json`` holds."""
        return self.summary_dict()

    def with_every_reason(self) -> pd.DataFrame:
        """The decisions with ``reason`` naming every rule a rejected candidate failed (the ``failed`` column,
        ``"too easy; flat"``), not only the first."""
        table = self.decisions.copy()
        if "failed" in table.columns:
            failed = table["failed"].fillna("").astype(str)
            table["reason"] = table["reason"].where(failed == "", failed)
        return table

    def to_text(self) -> str:
        """A few lines for the terminal: aim, decisions, Maximum Gap and DDM before and after."""
        aim = self.aim
        s = self.settings
        lines = [
            f"BenchFill aim {aim.label}: {aim.how}.",
            f"Rule: P(b in aim) = P({aim.lo:.2f} <= b < {aim.hi:.2f}) >= {s.get('tau')} and P(slope > {s.get('min_discrimination', 0):g}) >= "
            f"{s.get('discrimination_prob')}, at least {s.get('min_responses')} responses; calibration: {s.get('mode')}.",
            f"{len(self.accepted)} of {len(self.decisions)} candidates accepted.",
        ]
        if s.get("kind") in ("grm", "gpcm"):
            lines.append(f"Graded items ({str(s['kind']).upper()}): {GRADED_RULE}")
        unconverged = unconverged_note(s)
        if unconverged:
            lines.append(f"WARNING: {unconverged}")
        shown = self.with_every_reason()[["decision", "reason", "p_in_aim", "difficulty_mean", "difficulty_ci_low",
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


METHODS = {
    "full": "Calibration: the bank was refitted with the candidates' responses (full concurrent calibration); the "
    "after-audit uses the refit.",
    "fixed": "Calibration: fixed bank (the bank held at its posterior, each candidate's difficulty and "
    "discrimination computed on a grid with the responses marginalised over each system's ability posterior and "
    "the fitted hierarchy as prior); the after-audit appends the accepted items' draws to the original posterior.",
}


def unconverged_note(settings: dict[str, Any]) -> str:
    """A sentence when the fit behind the decisions failed its convergence checks or did not record them.

    A missing record counts as a failure: decisions are never presented as resting on a converged fit
    unless the check was made and passed.
    """
    if settings.get("mode") == "full":
        if settings.get("refit_converged") is True:
            return ""
        alternative = "" if settings.get("kind") in ("grm", "gpcm") else ", or use the fixed-bank mode"
        return (
            "the refit did not pass the convergence checks (or they were not recorded); these decisions are not "
            f"reliable: refit with more draws{alternative}."
        )
    if settings.get("bank_converged") is True:
        return ""
    return (
        "the bank's fit did not pass the convergence checks (or they were not recorded); these decisions rest on an "
        "unconverged posterior: refit the bank before relying on them."
    )


# ============================================================================================ files
def save_benchfill(
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
    >>> from irtbayes.benchfill.calibration import candidate_response_data
    >>> from irtbayes.benchfill.run import calibrate_candidates
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> result = calibrate_candidates(fit, data, candidates, candidate_response_data(answers, candidates, fit=fit), aim, mode="fixed", seed=4)
    >>> paths = save_benchfill(result, tempfile.mkdtemp(), candidates=candidates)
    >>> {"ledger", "ledger_csv", "before_after_json", "before_after_csv"} <= set(paths)
    True
    >>> load_benchfill(paths["ledger"].parent).accepted == result.accepted
    True
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(out / "ledger.jsonl", run_id=result.run_id)
    s = result.settings
    records = decision_records(
        result.decisions,
        candidates=candidates,
        aim_bin=result.aim.bin,  # type: ignore[arg-type]
        extra={
            "mode": s.get("mode"),
            "tau": s.get("tau"),
            "min_responses": s.get("min_responses"),
            "discrimination_prob": s.get("discrimination_prob"),
            "ci_prob": s.get("ci_prob"),
            "aim_benchmark": result.aim.benchmark,
            "refit_converged": s.get("refit_converged"),
            "bank_converged": s.get("bank_converged"),
        },
    )
    for record in records:
        record["aim_lo"] = result.aim.lo
        record["aim_hi"] = result.aim.hi
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


def load_benchfill(folder: str | os.PathLike[str]) -> BenchfillResult:
    """Rebuild the :class:`BenchfillResult` of the last round written into ``folder`` by :func:`save_benchfill`.

    The decisions are the ledger records of that round (its ``run_id``).

    Raises
    ------
    DataError
        A missing or malformed ``before_after.json`` or ledger.

    Examples
    --------
    :func:`save_benchfill` has a round written and read back; a folder without one is named:

    >>> import tempfile
    >>> from irtbayes.benchfill.result import load_benchfill
    >>> load_benchfill(tempfile.mkdtemp())
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: ...before_after.json: missing; is ... a folder written by `benchfill calibrate`?
    """
    folder = Path(folder)
    path = folder / "before_after.json"
    if not path.is_file():
        raise DataError(f"{path}: missing; is {folder} a folder written by `benchfill calibrate`?")
    summary = with_aim_names(read_json(path))
    for key in ("run_id", "aim", "settings", "comparison", "bins", "subjects"):
        if key not in summary:
            raise DataError(f"{path}: key '{key}' is missing")
    aim = Aim.from_dict(summary["aim"], where=str(path))
    ledger = Ledger(folder / "ledger.jsonl").read()
    rows = ledger.loc[ledger["run_id"] == summary["run_id"]]
    if rows.empty:
        raise DataError(f"{folder / 'ledger.jsonl'}: no records of run {summary['run_id']}")
    decisions = rows.drop_duplicates("candidate_id", keep="last").set_index("candidate_id")
    ci_prob = float(summary["settings"].get("ci_prob", 0.9))
    decisions.attrs.update(ci_prob=ci_prob, tau=summary["settings"].get("tau"))
    tables = {
        k: frame_with_aim_names(pd.DataFrame(summary.get(k, [])))
        for k in ("comparison", "bins", "subjects", "conclusions")
    }
    for frame in tables.values():
        frame.attrs.update(ci_prob=ci_prob, target=aim.target.to_dict())
    settings, run_id = dict(summary["settings"]), str(summary["run_id"])
    return BenchfillResult(decisions=decisions, aim=aim, settings=settings, run_id=run_id, **tables)


# ======================================================================================================= before/after
STATS = ("mean", "sd", "ci_low", "ci_high")


def _draws(var: xr.DataArray, items: Sequence[str]) -> np.ndarray:
    arr = var.sel(item=list(items)).transpose("chain", "draw", "item").values.astype("float64")
    return arr.reshape(arr.shape[0] * arr.shape[1], arr.shape[2])


#: How the rule reads a graded candidate (said wherever a graded round's decisions are shown).
GRADED_RULE = (
    "b is each candidate's location (the ability at which its expected score is half its maximum), from the full "
    "refit; the data-alone location and the sign-free slope are those of its scores as shares of the maximum."
)

#: Hyperparameters of the difficulty prior kept with an extended posterior (see ``audit(ensemble=...)``).
HYPER_VARS = ("difficulty_sd", "difficulty_mu", "difficulty_benchmark")


def append_draws(base: xr.Dataset, new: xr.Dataset, items: Sequence[str], *, kind: str) -> xr.Dataset:
    """The bank's posterior with the new items' draws appended, draw s of a new item beside draw s of the bank."""
    n_chain, n_draw = int(base.sizes["chain"]), int(base.sizes["draw"])
    n_total = n_chain * n_draw
    n_new = int(new.sizes["chain"] * new.sizes["draw"])
    order = np.arange(n_total) % n_new
    if n_new != n_total:
        log.info("the new items have %d draws and the bank %d; the new items' draws are reused in turn", n_new, n_total)
    out = {"ability": base["ability"]}
    for name in HYPER_VARS:  # the bank's difficulty prior, for the deconvolved audit of the bank's items
        if name in base:
            out[name] = base[name]
    for name in ("difficulty", "discrimination", "guessing"):
        if name not in base:
            continue
        if not items:
            out[name] = base[name]
            continue
        old = base[name].transpose("chain", "draw", "item")
        if name not in new:
            raise FitError(f"the new items' posterior lacks '{name}', which the bank has")
        if name == "discrimination" and kind == "1pl":
            # 1PL: every item, new ones too, has the bank's shared discrimination of the same draw
            values = np.repeat(old.isel(item=0).values[:, :, None], len(items), axis=2)
        else:
            values = _draws(new[name], items)[order].reshape(n_chain, n_draw, len(items))
        added = xr.DataArray(
            values,
            dims=("chain", "draw", "item"),
            coords={"chain": old["chain"].values, "draw": old["draw"].values, "item": list(items)},
        )
        out[name] = xr.concat([old, added], dim="item")
    ds = xr.Dataset(out)
    ds.attrs = {}
    return ds


def _count_stats(counts: np.ndarray, prefix: str, ci_prob: float) -> dict[str, np.ndarray]:
    s = summarize(counts.astype("float64"), ci_prob=ci_prob)
    return {f"{prefix}_{k}": s[k] for k in ("mean", "ci_low", "ci_high")}


#: Versions of the comparison: the original bank as fitted; its items under the extended posterior (a full
#: refit only: what re-estimation alone changed); the added items alone; the extended benchmark.
VERSIONS = ("before", "original", "added", "after")

#: Columns of an audit's benchmark table that the comparison keeps.
COMPARISON_COLUMNS = (
    "n_items",
    *(f"{prefix}_{s}" for prefix in ("ddm_w1", "ddm_tv", "max_gap") for s in STATS),
    "gap_lo", "gap_hi", "gap_modal_bin", "gap_p_modal_bin", "empty_bins_mean", "mass_below_mean", "mass_above_mean",
)  # fmt: skip


def _scope_tables(
    base: xr.Dataset,
    extended: xr.Dataset,
    data: ResponseData,
    ext_items: pd.DataFrame,
    scopes: Sequence[tuple[str, str]],
    added: Sequence[str],
    *,
    versions: dict[str, AuditResult],
    target: Target,
    ci_prob: float,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The comparison rows (scope, version) and the per-bin counts (scope, bin) of :func:`before_after`."""
    comp_rows, bin_rows = [], []
    edges = target.edges_array
    n_bins = target.n_bins
    base_b = base["difficulty"]
    ext_b = extended["difficulty"]
    for kind, name in scopes:
        if kind == "all":
            original = [str(i) for i in data.item_ids]
        else:
            original = [str(i) for i in data.item_ids[data.items["benchmark"].eq(name).fillna(False).to_numpy(bool)]]
        scope_added = [a for a in added if kind == "all" or str(ext_items.loc[a, "benchmark"]) == name]
        for version, result in versions.items():
            table = result.benchmarks
            rows = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)]
            if rows.empty:  # the added items alone may not reach this scope
                continue
            n_added = len(scope_added) if version in ("added", "after") else 0
            comp_rows.append(
                {"scope_kind": kind, "scope": name, "version": version, "n_added": n_added}
                | {c: rows.iloc[0][c] for c in COMPARISON_COLUMNS}
            )
        before_counts = count_items(bin_codes(_draws(base_b, original), edges), n_bins)[:, 1:-1]
        orig_after = count_items(bin_codes(_draws(ext_b, original), edges), n_bins)[:, 1:-1]
        if scope_added:
            added_counts = count_items(bin_codes(_draws(ext_b, scope_added), edges), n_bins)[:, 1:-1]
        else:
            added_counts = np.zeros_like(orig_after)
        after_counts = orig_after + added_counts
        stats = (
            _count_stats(before_counts, "count_before", ci_prob)
            | _count_stats(orig_after, "count_original_after", ci_prob)
            | _count_stats(added_counts, "count_added", ci_prob)
            | _count_stats(after_counts, "count_after", ci_prob)
        )
        frame = pd.DataFrame(
            {
                "scope_kind": kind,
                "scope": name,
                "bin": np.arange(n_bins),
                "lo": edges[:-1],
                "hi": edges[1:],
                "target_weight": target.weights_array,
                **stats,
                "p_empty_before": (before_counts == 0).mean(axis=0),
                "p_empty_original_after": (orig_after == 0).mean(axis=0),
                "p_empty_after": (after_counts == 0).mean(axis=0),
            }
        )
        bin_rows.append(frame)
    return pd.DataFrame(comp_rows), pd.concat(bin_rows, ignore_index=True)


def _subject_table(
    data: ResponseData, extended_data: ResponseData, added: set[str], *, versions: dict[str, AuditResult]
) -> pd.DataFrame:
    """Per subject: raw accuracy on the original and the added items, re-weighted accuracy and rank before/after."""
    matrix = extended_data.long_frame()
    matrix["added"] = matrix["item"].isin(added)
    per = matrix.groupby(["subject", "added"])["response"].agg(["size", "mean"]).unstack("added")
    subjects = pd.DataFrame(index=pd.Index([str(s) for s in data.subject_ids], name="subject"))
    for flag, label in ((False, "original"), (True, "added")):
        size = per["size"][flag] if ("size", flag) in per.columns else pd.Series(dtype=float)
        mean = per["mean"][flag] if ("mean", flag) in per.columns else pd.Series(dtype=float)
        subjects[f"n_{label}"] = size.reindex(subjects.index).fillna(0).astype("int64")
        subjects[f"accuracy_{label}"] = mean.reindex(subjects.index)
    for version, result in versions.items():
        if version == "added":  # ranks on the added items alone say little
            continue
        ranking = result.ranking.loc[result.ranking["scope_kind"] == "all"].set_index("subject")
        ranking.index = ranking.index.astype(str)
        for col in ("reweighted_mean", "reweighted_ci_low", "reweighted_ci_high", "rank_mean", "rank_ci_low",
                    "rank_ci_high"):  # fmt: skip
            subjects[f"{col.split('_')[0]}_{version}_{col.split('_', 1)[1]}"] = ranking[col].reindex(subjects.index)
    return subjects


def before_after(
    fit: Fit,
    data: ResponseData,
    extended_posterior: xr.Dataset,
    extended_data: ResponseData,
    *,
    added: Sequence[str],
    target: Target,
    benchmark: str | None = None,
    aim_bin: int | None = None,
    ci_prob: float = 0.9,
    bank_audit: AuditResult | None = None,
) -> dict[str, pd.DataFrame]:
    """Audit the original bank and the extended bank with the same target, side by side.

    Parameters
    ----------
    fit, data
        The original fit and data.
    extended_posterior, extended_data
        Posterior (with ``ability``, ``difficulty``, ``discrimination``) and data of the original items plus
        the accepted ones.
    added
        The accepted candidates' ids (items of ``extended_data`` that are not in ``data``).
    target
        The audit target (bins) of both audits.
    benchmark
        Besides all items, compare this benchmark (and every benchmark an added item joins).
    aim_bin
        The bin of the aim (the interval the new items should fill): ``conclusions`` says whether it is still
        empty.
    bank_audit
        The saved audit of ``fit`` (:func:`~irtbayes.auditing.folder.load_audit`): it is the ``before`` version,
        not run again, and the other versions are audited with its settings (draws, seed, top-k, intervals). Its
        target must be ``target``. Without it every version is audited with BenchFill's thinned draws.

    Returns
    -------
    dict of pandas.DataFrame
        ``comparison``: one row per (scope, version) with version ``before`` / ``after``: ``scope_kind``,
        ``scope``, ``version``, ``n_items``, ``n_added``, ``ddm_w1_{mean,sd,ci_low,ci_high}``,
        ``ddm_tv_{...}``, ``max_gap_{...}``, ``gap_lo``, ``gap_hi``, ``gap_modal_bin``, ``gap_p_modal_bin``,
        ``empty_bins_mean``, ``mass_below_mean``, ``mass_above_mean``.
        ``bins``: one row per (scope, bin): ``lo``, ``hi``, ``target_weight``, and expected counts with
        intervals: ``count_before_*`` (original items, original fit), ``count_original_after_*`` (original
        items, extended posterior), ``count_added_*`` (added items), ``count_after_*`` (all), plus
        ``p_empty_before``, ``p_empty_after``.
        ``subjects``: one row per subject: ``n_original``, ``n_added``, ``accuracy_original``,
        ``accuracy_added`` (raw), and re-weighted accuracy and rank (all items) before and after with
        intervals. Every table's ``attrs`` record ``ci_prob``.

    Examples
    --------
    With nothing added the two audits agree; :func:`calibrate_candidates` passes the bank extended by the
    accepted candidates:

    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.result import before_after
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> tables = before_after(fit, data, fit.posterior, data, added=[], target=aim.target)
    >>> {"bins", "comparison", "subjects"} <= set(tables)
    True
    >>> comparison = tables["comparison"].query("scope == 'all'").set_index("version")
    >>> bool(np.isclose(comparison.loc["before", "ddm_w1_mean"], comparison.loc["after", "ddm_w1_mean"]))
    True
    """
    added = [str(a) for a in added]
    extended_data = _own_labels(extended_data, data)
    unknown = [a for a in added if a not in set(extended_data.item_ids)]
    if unknown:
        raise DataError(f"before_after: added item(s) {unknown[:5]} are not in the extended data")
    versions = _audits(
        fit, data, extended_posterior, extended_data, added, target=target, ci_prob=ci_prob, bank_audit=bank_audit
    )
    ext_items = extended_data.items
    scopes: list[tuple[str, str]] = [("all", "all")]
    names = {benchmark} if benchmark else set()
    names |= {str(b) for b in ext_items.loc[ext_items.index.isin(added), "benchmark"].dropna()}
    scopes += [("benchmark", b) for b in sorted(names) if b in set(map(str, data.benchmarks))]

    comparison, bins = _scope_tables(
        fit.posterior, extended_posterior, data, ext_items, scopes, added, versions=versions, target=target,
        ci_prob=ci_prob,
    )  # fmt: skip
    subjects = _subject_table(data, extended_data, set(added), versions=versions).reset_index()
    conclusions = composition_conclusions(comparison, bins, subjects, aim_bin=aim_bin)
    for frame in (comparison, bins, subjects, conclusions):
        frame.attrs.update(ci_prob=ci_prob, target=target.to_dict())
    return {"comparison": comparison, "bins": bins, "subjects": subjects, "conclusions": conclusions}


def _own_labels(extended_data: ResponseData, data: ResponseData) -> ResponseData:
    """``extended_data`` with any calibration group label ``"B [candidates]"`` of a bank benchmark B back to B.

    A full refit with ``prior="candidates"`` fits the candidates in their own group; an audit of the extended
    benchmark must count them in their benchmark.
    """
    items = extended_data.items
    if "benchmark" not in items.columns:
        return extended_data
    own = {candidate_group_label(str(b)): str(b) for b in data.benchmarks}
    grouped = items["benchmark"].dropna().astype(str)
    grouped = grouped[grouped.isin(list(own))]
    if grouped.empty:
        return extended_data
    return extended_data.with_benchmarks(grouped.map(own))


def _audits(
    fit: Fit,
    data: ResponseData,
    extended: xr.Dataset,
    extended_data: ResponseData,
    added: list[str],
    *,
    target: Target,
    ci_prob: float,
    bank_audit: AuditResult | None = None,
) -> dict[str, AuditResult]:
    """The audits of the comparison, by version (see :data:`VERSIONS`), all with the same ensemble; with
    ``bank_audit`` (the saved audit of the bank), it is the ``before`` version and the others take its settings."""
    settings = _audit_settings(bank_audit, target=target, ci_prob=ci_prob)
    original = [str(i) for i in data.item_ids]
    refitted = not _same_draws(fit.posterior["difficulty"], extended["difficulty"], original)
    for ensemble in (None, "draws"):
        opts: dict[str, Any] = settings | ({} if ensemble is None else {"ensemble": ensemble})
        reuse = bank_audit is not None and (ensemble is None or bank_audit.settings.get("ensemble") == ensemble)
        before = bank_audit if reuse and bank_audit is not None else audit(fit, data, **opts)
        out = {"before": before}
        if refitted:
            out["original"] = audit(extended.sel(item=original), data, **opts)
        if added:
            # the added items' draws come from their calibration, not from the bank's prior: they enter as they are
            only = extended_data.subset(items=added)
            out["added"] = audit(extended.sel(item=added), only, fixed_items=added, **opts)
        out["after"] = audit(extended, extended_data, fixed_items=added, **opts)
        # the added items alone are all fixed: they enter as they are under either ensemble
        if len({r.settings["ensemble"] for name, r in out.items() if name != "added"}) == 1:
            break
    return {name: out[name] for name in VERSIONS if name in out}


#: The settings a saved audit records (``AuditResult.settings``) that its comparison's audits take over.
SHARED_AUDIT_SETTINGS = (
    "max_draws", "information_draws", "seed", "top_k", "group_threshold", "grid_points", "min_items",
    "resample_items", "calibrated_intervals",
)  # fmt: skip


def _audit_settings(bank_audit: AuditResult | None, *, target: Target, ci_prob: float) -> dict[str, Any]:
    """The settings of the comparison's audits: the saved bank audit's own, or BenchFill's thinned defaults."""
    if bank_audit is None:
        return {
            "target": target,
            "ci_prob": ci_prob,
            "max_draws": AUDIT_MAX_DRAWS,
            "information_draws": AUDIT_INFORMATION_DRAWS,
            "progress": False,
        }
    theirs, ours = bank_audit.target, target
    same = len(theirs.edges) == len(ours.edges) and np.allclose(theirs.edges_array, ours.edges_array)
    if not (same and np.allclose(theirs.weights_array, ours.weights_array)):
        raise SpecError(
            f"the saved audit's target ({bank_audit.target.description}) is not the round's ({target.description}); "
            "choose the round's aim from that audit (`benchfill propose --audit DIR`)"
        )
    recorded = bank_audit.settings
    shared = {k: recorded[k] for k in SHARED_AUDIT_SETTINGS if k in recorded}
    return {"target": bank_audit.target, "ci_prob": bank_audit.ci_prob, "progress": False, **shared}


def _same_draws(base: xr.DataArray, extended: xr.DataArray, items: list[str]) -> bool:
    a, b = _draws(base, items), _draws(extended, items)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _credible_change(old: pd.Series, new: pd.Series, prefix: str) -> str:
    if new[f"{prefix}_ci_high"] < old[f"{prefix}_ci_low"]:
        return "credibly smaller"
    if new[f"{prefix}_ci_low"] > old[f"{prefix}_ci_high"]:
        return "credibly larger"
    return "no credible change"


def _measure_rows(old: pd.Series, new: pd.Series) -> list[dict[str, Any]]:
    rows = []
    for prefix, label in (("max_gap", "Maximum Gap"), ("ddm_w1", "DDM (W1)")):
        verdict = _credible_change(old, new, prefix)
        rows.append(
            {"measure": label, "from": format_interval(old, prefix), "to": format_interval(new, prefix), "verdict": verdict,
             "changed": verdict != "no credible change"}
        )  # fmt: skip
    old_bin, new_bin = int(old["gap_modal_bin"]), int(new["gap_modal_bin"])
    rows.append(
        {"measure": "widest gap's bin", "from": f"bin {old_bin}", "to": f"bin {new_bin}",
         "verdict": "moved" if old_bin != new_bin else "same bin", "changed": old_bin != new_bin}
    )  # fmt: skip
    return rows


def _empty_row(row: pd.Series, aim_bin: int, old_col: str, new_col: str) -> dict[str, Any]:
    p_old, p_new = float(row[old_col]), float(row[new_col])
    changed = (p_old >= 0.5) != (p_new >= 0.5)
    verdict = ("no longer empty" if p_old >= 0.5 else "now empty") if changed else "unchanged"
    return {"measure": f"aim bin {aim_bin} empty", "from": f"P = {p_old:.2f}", "to": f"P = {p_new:.2f}",
            "verdict": verdict, "changed": changed}  # fmt: skip


def _rank_row(subjects: pd.DataFrame, old: str, new: str) -> dict[str, Any] | None:
    cols = [f"rank_{v}_{s}" for v in (old, new) for s in ("mean", "ci_low", "ci_high")]
    if not set(cols) <= set(subjects.columns):
        return None
    moved = subjects.loc[
        (subjects[f"rank_{new}_ci_high"] < subjects[f"rank_{old}_ci_low"])
        | (subjects[f"rank_{new}_ci_low"] > subjects[f"rank_{old}_ci_high"]),
        "subject",
    ].astype(str)
    shown = listed(moved, 5)
    return {"measure": "ranks (all items)", "from": f"{len(subjects)} systems", "to": f"{len(moved)} moved credibly",
            "verdict": f"rank intervals that no longer overlap: {shown}" if len(moved) else "no rank moved credibly",
            "changed": bool(len(moved))}  # fmt: skip


def composition_conclusions(
    comparison: pd.DataFrame,
    bins: pd.DataFrame,
    subjects: pd.DataFrame,
    *,
    aim_bin: int | None = None,
) -> pd.DataFrame:
    """Which conclusions changed, and whether the change comes from the new composition or from re-estimation.

    The composition effect compares the original items and the extended benchmark under the same posterior
    (``original`` against ``after``; in the fixed-bank mode the original items keep their draws, so
    ``before`` against ``after``): only the added items differ. After a full refit, ``before`` against
    ``original`` is the effect of re-estimating the original items, reported as ``re-estimation``.
    A measure changed credibly when the equal-tailed intervals do not overlap; the emptiness of the aim's bin
    changed when its probability of being empty crosses one half; a rank moved when a system's rank intervals
    do not overlap.

    Returns
    -------
    pandas.DataFrame
        One row per (scope, cause, measure): ``scope_kind``, ``scope``, ``cause`` (``"composition"`` or
        ``"re-estimation"``), ``measure``, ``from``, ``to``, ``verdict``, ``changed``.
    """
    rows = []
    refitted = "original" in set(comparison["version"])
    pairs = [("composition", "original" if refitted else "before", "after")]
    if refitted:
        pairs.append(("re-estimation", "before", "original"))
    empty_cols = {"composition": ("p_empty_original_after", "p_empty_after"),
                  "re-estimation": ("p_empty_before", "p_empty_original_after")}  # fmt: skip
    table = comparison.set_index(["scope_kind", "scope", "version"])
    for kind, name in comparison[["scope_kind", "scope"]].drop_duplicates().itertuples(index=False):
        for cause, old, new in pairs:
            if (kind, name, old) not in table.index or (kind, name, new) not in table.index:
                continue
            found: list[dict[str, Any]] = _measure_rows(table.loc[(kind, name, old)], table.loc[(kind, name, new)])
            scope_bins = bins.loc[(bins["scope_kind"] == kind) & (bins["scope"].astype(str) == str(name))]
            if aim_bin is not None and (scope_bins["bin"] == aim_bin).any():
                row = scope_bins.loc[scope_bins["bin"] == aim_bin].iloc[0]
                found.append(_empty_row(row, aim_bin, *empty_cols[cause]))
            ranks = _rank_row(subjects, old, new) if kind == "all" else None
            found += [ranks] if ranks else []
            rows += [{"scope_kind": kind, "scope": name, "cause": cause} | r for r in found]
    columns = ["scope_kind", "scope", "cause", "measure", "from", "to", "verdict", "changed"]
    return pd.DataFrame(rows, columns=columns)


# ============================================================================================ old names
write_benchfill = deprecated_alias(save_benchfill, "write_benchfill")
load_benchfill_result = deprecated_alias(load_benchfill, "load_benchfill_result")
