"""The BenchFill loop as functions: target, proposal, export, responses, calibration, decisions, before/after.

One round::

    data = load_fit_data(fit)                                   # the bank's responses (checksum checked)
    choice, audit_result = choose_target(fit, data, benchmark="bench01")   # the widest gap's bin
    proposal = propose(fit, data, choice, FileSource("cands.jsonl"))
    write_proposal("out/bf", proposal, choice, fit_dir="models/fit")
    export_proposal("out/bf", "lm-eval")                        # the systems answer the candidates
    new = load_candidate_responses("lm_eval_out/", proposal.candidates, fit=fit)
    result = calibrate_candidates(fit, data, proposal.candidates, new, choice, mode="full")
    write_benchfill(result, "out/bf/round1", candidates=proposal.candidates)

Target
------
By default the target is the bin holding the widest gap of the chosen benchmark (all items when none is
chosen): the audit's ``gap_modal_bin``, the bin in which the midpoint of the widest empty interval falls most
often over the posterior draws. ``gap_interval=True`` takes the interval ``[gap_lo, gap_hi]`` itself (mean end
points over the draws whose gap lies in that bin). A bin number (0-based, of the audit's target) or an
explicit interval ``[L, U)`` may be given instead.

Before / after
--------------
The audit of the original bank is set beside the audit of the extended bank (original items plus the
accepted candidates), with the same target bins. For the full mode the extended audit uses the refit's
posterior (restricted to the original and accepted items). For the fixed-bank mode the accepted items'
draws are appended to the original posterior: draw s of a new item is paired with draw s of the bank
(chains and draws in order; 1PL: the new item shares the bank's discrimination of that draw). Under the
fixed-bank approximation the new items' posterior does not depend on the bank's draw, so any pairing is a
draw from the joint approximation. The original items' results stay separate from the added ones: per bin,
the expected count of original items and of added items; per subject, accuracy on each.
"""

from __future__ import annotations

import json
import logging
import math
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.audit import AuditResult, Target, audit, bin_codes, count_items
from irtbayes.benchfill.acceptance import decide_all
from irtbayes.benchfill.calibration import (
    MIN_DISCRIMINATION_SHARE,
    Prior,
    calibrate_fixed,
    calibrate_full,
    candidate_response_data,
    typical_discrimination,
)
from irtbayes.benchfill.candidates import (
    Candidate,
    CandidateSource,
    FileSource,
    LLMSource,
    Proposal,
    ProposalRequest,
    Rejection,
    load_candidates,
    select_seeds,
)
from irtbayes.benchfill.export import export_csv_template, export_lm_eval, write_atomic
from irtbayes.benchfill.ledger import Ledger, decision_records
from irtbayes.data import ResponseData, json_ready
from irtbayes.errors import DataError, FitError, SpecError
from irtbayes.files import read_json, read_json_lines
from irtbayes.summaries import summarize

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.fit import Fit

__all__ = [
    "BenchfillResult",
    "TargetChoice",
    "before_after",
    "calibrate_candidates",
    "choose_target",
    "export_proposal",
    "load_benchfill_result",
    "load_candidate_responses",
    "load_fit_data",
    "plot_candidate_intervals",
    "plot_coverage_before_after",
    "propose",
    "read_proposal",
    "write_benchfill",
    "write_proposal",
]

log = logging.getLogger(__name__)

Mode = Literal["full", "fixed"]
#: Draws used by the before/after audits for the leaderboard and the information curves.
AUDIT_MAX_DRAWS = 400
AUDIT_INFORMATION_DRAWS = 50
STATS = ("mean", "sd", "ci_low", "ci_high")


# ============================================================================================ data
def load_fit_data(fit: Fit, data: str | os.PathLike[str] | ResponseData | None = None) -> ResponseData:
    """The responses ``fit`` was made from: ``data`` when given, else the source its card records.

    ``data`` may be a :class:`~irtbayes.data.ResponseData`, a path any :func:`irtbayes.io.load` reads, or a
    registered data set name. Its checksum must equal the fit's.

    Raises
    ------
    FitError
        The recorded source is not found, or the data is not what the fit was made from.
    """
    from irtbayes import datasets, io

    if isinstance(data, ResponseData):
        loaded = data
    else:
        source = str(data) if data is not None else str(fit.info.get("source") or "")
        if source and Path(source).exists():
            loaded = io.load(source)
        elif source and source in datasets.list_datasets().index:
            loaded = datasets.load_dataset(source)
        elif data is not None:
            raise DataError(f"{source}: no such file or folder, and not a registered data set")
        else:
            raise FitError(
                f"the data the fit was made from ({source or 'not recorded'}) is not here; give it with --data"
            )
    if loaded.checksum() != fit.data_checksum:
        raise FitError(
            f"{loaded.source}: not the data the fit was made from (checksum {loaded.checksum()[:12]}, the fit "
            f"records {fit.data_checksum[:12]}); give the fit's own data with --data"
        )
    return loaded


# ============================================================================================ target
@dataclass(frozen=True)
class TargetChoice:
    """The target interval ``[lo, hi)``, the audit binning it came from, and how it was chosen.

    Attributes
    ----------
    lo, hi
        The interval on the ability scale (half-open, as in the acceptance rule).
    bin
        0-based bin of ``target`` that is the interval, or ``None`` for an interval that is not one of its bins.
    benchmark
        The benchmark whose gap is filled (``None``: all items).
    how
        One sentence saying how the interval was chosen.
    target
        The audit's target (range, bins, weights), reused for the before/after audits.
    gap
        The audit's widest gap for the scope: ``max_gap`` (mean and interval), ``gap_lo``, ``gap_hi``,
        ``modal_bin``, ``p_modal_bin``.
    """

    lo: float
    hi: float
    bin: int | None
    benchmark: str | None
    how: str
    target: Target
    gap: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """What ``target.json`` holds (plus what the caller adds)."""
        return json_ready(
            {
                "target_lo": self.lo,
                "target_hi": self.hi,
                "target_bin": self.bin,
                "benchmark": self.benchmark,
                "how": self.how,
                "audit_target": self.target.to_dict(),
                "gap": self.gap,
            }
        )

    @classmethod
    def from_dict(cls, record: dict[str, Any], *, where: str = "target.json") -> TargetChoice:
        """Rebuild from :meth:`to_dict` output.

        Raises
        ------
        DataError
            Missing keys or values of the wrong kind (named).
        """
        try:
            spec = record["audit_target"]
            target = Target(
                edges=tuple(float(e) for e in spec["edges"]),
                weights=tuple(float(w) for w in spec["weights"]),
                kind=str(spec.get("kind", "weights")),
                description=str(spec.get("description", "")),
            )
            lo, hi = float(record["target_lo"]), float(record["target_hi"])
            bin_ = record.get("target_bin")
            return cls(
                lo=lo,
                hi=hi,
                bin=None if bin_ is None else int(bin_),
                benchmark=record.get("benchmark"),
                how=str(record.get("how", "")),
                target=target,
                gap=dict(record.get("gap") or {}),
            )
        except (KeyError, TypeError, ValueError, SpecError) as err:
            raise DataError(f"{where}: not a BenchFill target ({type(err).__name__}: {err})") from None

    @property
    def label(self) -> str:
        bin_text = f"bin {self.bin}, " if self.bin is not None else ""
        return f"[{self.lo:.2f}, {self.hi:.2f}) ({bin_text}{self.benchmark or 'all items'})"


def _scope_row(result: AuditResult, benchmark: str | None) -> pd.Series:
    table = result.benchmarks
    kind, name = ("benchmark", benchmark) if benchmark else ("all", "all")
    rows = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)]
    if rows.empty:
        raise SpecError(f"the audit has no scope {kind} '{name}'")
    return rows.iloc[0]


def _matching_bin(lo: float, hi: float, edges: np.ndarray) -> int | None:
    """The bin whose edges are ``lo`` and ``hi`` (to 1e-9), else ``None``."""
    for k in np.arange(len(edges) - 1):
        if math.isclose(edges[k], lo, abs_tol=1e-9) and math.isclose(edges[k + 1], hi, abs_tol=1e-9):
            return int(k)
    return None


def choose_target(
    fit: Fit,
    data: ResponseData,
    *,
    benchmark: str | None = None,
    target_bin: int | None = None,
    interval: Sequence[float] | None = None,
    bins: int | None = None,
    range: Sequence[float] | None = None,
    gap_interval: bool = False,
    ci_prob: float = 0.9,
    audit_result: AuditResult | None = None,
) -> tuple[TargetChoice, AuditResult]:
    """Choose the target interval from an audit of ``fit`` (see the module notes).

    Parameters
    ----------
    fit, data
        The bank's fit and its data.
    benchmark
        Fill this benchmark's widest gap (default: all items together).
    target_bin
        Use this 0-based bin of the audit's target instead of the widest gap's.
    interval
        Use ``[L, U)`` instead.
    bins, range
        The audit's number of bins and range (defaults as in :func:`irtbayes.audit.audit`).
    gap_interval
        Use the widest gap's interval ``[gap_lo, gap_hi]`` rather than its bin.
    audit_result
        A ready audit of ``fit`` (then ``bins`` and ``range`` are not used).

    Returns
    -------
    tuple
        The :class:`TargetChoice` and the audit it came from.

    Raises
    ------
    SpecError
        Both ``target_bin`` and ``interval``, an unknown benchmark, a bin out of range, or a bad interval.
    """
    if target_bin is not None and interval is not None:
        raise SpecError("give a target bin or a target interval, not both")
    if benchmark is not None:
        known = [str(b) for b in data.benchmarks]
        if benchmark not in known:
            raise SpecError(f"benchmark '{benchmark}' is not in {data.source}; its benchmarks are {known[:20]}")
    result = audit_result or audit(
        fit,
        data,
        bins=bins,
        range=range,
        ci_prob=ci_prob,
        max_draws=AUDIT_MAX_DRAWS,
        information_draws=AUDIT_INFORMATION_DRAWS,
        progress=False,
    )
    tgt = result.target
    edges = tgt.edges_array
    row = _scope_row(result, benchmark)
    scope = f"benchmark '{benchmark}'" if benchmark else "all items"
    gap = {
        "scope": scope,
        "max_gap_mean": float(row["max_gap_mean"]),
        "max_gap_ci_low": float(row["max_gap_ci_low"]),
        "max_gap_ci_high": float(row["max_gap_ci_high"]),
        "gap_lo": float(row["gap_lo"]),
        "gap_hi": float(row["gap_hi"]),
        "modal_bin": int(row["gap_modal_bin"]),
        "p_modal_bin": float(row["gap_p_modal_bin"]),
        "ci_prob": result.ci_prob,
    }
    if target_bin is not None:
        if isinstance(target_bin, bool) or not isinstance(target_bin, int | np.integer):
            raise SpecError(f"the target bin must be a whole number, got {target_bin!r}")
        if not 0 <= int(target_bin) < tgt.n_bins:
            raise SpecError(
                f"target bin {target_bin} is out of range: the audit's target has {tgt.n_bins} bins, numbered 0 to "
                f"{tgt.n_bins - 1}, over [{tgt.lo:g}, {tgt.hi:g}]"
            )
        k = int(target_bin)
        lo, hi = float(edges[k]), float(edges[k + 1])
        how = f"bin {k} of the audit's {tgt.n_bins} bins, chosen by the user"
    elif interval is not None:
        if isinstance(interval, str) or len(interval) != 2:
            raise SpecError(f"the target interval must be two numbers L U, got {interval!r}")
        lo, hi = float(interval[0]), float(interval[1])
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise SpecError(f"the target interval needs finite L < U, got L = {lo:g} and U = {hi:g}")
        k = _matching_bin(lo, hi, edges)  # type: ignore[assignment]
        how = f"the interval [{lo:g}, {hi:g}) given by the user"
    else:
        k = int(row["gap_modal_bin"])
        p = float(row["gap_p_modal_bin"])
        if gap_interval:
            lo, hi = float(row["gap_lo"]), float(row["gap_hi"])
            if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
                raise SpecError(f"the audit's widest gap for {scope} has no usable interval ([{lo}, {hi}])")
            how = (
                f"the widest gap of {scope}: its mean interval [{lo:.2f}, {hi:.2f}] over the draws whose gap lies in "
                f"bin {k} (P = {p:.2f})"
            )
        else:
            lo, hi = float(edges[k]), float(edges[k + 1])
            how = f"the bin holding the widest gap of {scope} most often: bin {k} {tgt.bin_label(k)}, P = {p:.2f}"
    choice = TargetChoice(lo=lo, hi=hi, bin=k, benchmark=benchmark, how=how, target=tgt, gap=gap)
    log.info("BenchFill target %s: %s", choice.label, how)
    return choice, result


# ============================================================================================ proposal
def _bank_domain(data: ResponseData, benchmark: str | None) -> str | None:
    if benchmark is None:
        return None
    domains = data.items.loc[data.items["benchmark"] == benchmark, "domain"].dropna().unique()
    return str(domains[0]) if len(domains) == 1 else None


def _modal_options(data: ResponseData, benchmark: str | None) -> int | None:
    if "n_options" not in data.items.columns:
        return None
    items = data.items if benchmark is None else data.items.loc[data.items["benchmark"] == benchmark]
    values = pd.to_numeric(items["n_options"], errors="coerce").dropna()
    values = values[values >= 2]
    return int(values.mode().iloc[0]) if len(values) else None


def propose(
    fit: Fit,
    data: ResponseData,
    choice: TargetChoice,
    source: CandidateSource,
    *,
    n: int | None = None,
    n_choices: int | Literal["auto"] | None = "auto",
    max_seeds: int = 8,
    ci_prob: float = 0.9,
) -> Proposal:
    """Ask ``source`` for candidates aimed at ``choice``; seeds are the bank's items in and next to it.

    Parameters
    ----------
    n
        Candidates wanted (default: every candidate of a :class:`FileSource`, 10 otherwise).
    n_choices
        Options per multiple-choice candidate; ``"auto"``: the most common ``n_options`` of the benchmark's
        items (free response when the data has none); ``None``: free response.
    max_seeds
        Existing items shown to the source (see :func:`~irtbayes.benchfill.candidates.select_seeds`); items
        without text are never shown.

    Returns
    -------
    Proposal
        The candidates, and the rejections (an LLM's unusable items; candidates whose id is a bank item).
    """
    if n is None:
        n = len(source.candidates) if isinstance(source, FileSource) else 10
    if n_choices == "auto":
        n_choices = _modal_options(data, choice.benchmark)
    table = fit.items_table(ci_prob=ci_prob)
    if choice.benchmark is not None:
        table = table.loc[table["benchmark"].astype(str) == choice.benchmark]
    seeds: tuple = ()
    if "text" in data.items.columns and data.items["text"].notna().any():
        seeds = select_seeds(table, target_lo=choice.lo, target_hi=choice.hi, items=data.items, max_seeds=max_seeds)
    else:
        log.info("%s: the items have no text, so no seed items are shown", data.source)
    request = ProposalRequest(
        target_lo=choice.lo,
        target_hi=choice.hi,
        target_bin=-1 if choice.bin is None else choice.bin,
        n=max(int(n), 1),
        benchmark=choice.benchmark,
        domain=_bank_domain(data, choice.benchmark),
        seeds=seeds,
        n_choices=n_choices,
        ci_prob=ci_prob,
    )
    if isinstance(source, LLMSource):
        proposal = source.generate(request)
    else:
        proposal = Proposal(candidates=list(source.propose(request)))
    bank = set(fit.item_ids)
    keep, rejected = [], list(proposal.rejections)
    for candidate in proposal.candidates:
        if candidate.candidate_id in bank:
            rejected.append(
                Rejection(
                    reason=f"candidate_id '{candidate.candidate_id}' is already an item of the bank",
                    source=candidate.source,
                    target_bin=request.target_bin,
                    record=candidate.to_dict(),
                    prompt_hash=candidate.prompt_hash,
                )
            )
        else:
            keep.append(candidate)
    return Proposal(candidates=keep, rejections=rejected)


def write_proposal(
    out_dir: str | os.PathLike[str],
    proposal: Proposal,
    choice: TargetChoice,
    *,
    fit_dir: str | os.PathLike[str] | None = None,
    data_source: str | None = None,
    source: str | None = None,
) -> dict[str, Path]:
    """Write ``candidates.jsonl``, ``target.json`` and ``rejections.jsonl`` into ``out_dir``, each atomically.

    ``target.json`` holds :meth:`TargetChoice.to_dict` plus ``fit`` (the fit folder, absolute), ``data``,
    ``source``, ``n_candidates``, ``n_rejections`` and ``created``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cands = "".join(json.dumps(c.to_dict(), ensure_ascii=False) + "\n" for c in proposal.candidates)
    rejections = "".join(
        json.dumps(
            json_ready(
                {
                    "reason": r.reason,
                    "source": r.source,
                    "target_bin": r.target_bin,
                    "prompt_hash": r.prompt_hash,
                    "record": dict(r.record) if r.record is not None else None,
                }
            ),
            ensure_ascii=False,
            default=str,
        )
        + "\n"
        for r in proposal.rejections
    )
    meta = {
        **choice.to_dict(),
        "fit": str(Path(fit_dir).resolve()) if fit_dir is not None else None,
        "data": data_source,
        "source": source,
        "n_candidates": len(proposal.candidates),
        "n_rejections": len(proposal.rejections),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    paths = {
        "candidates": write_atomic(out / "candidates.jsonl", cands),
        "rejections": write_atomic(out / "rejections.jsonl", rejections),
        "target": write_atomic(out / "target.json", json.dumps(meta, indent=2, allow_nan=False) + "\n"),
    }
    return paths


def read_proposal(folder: str | os.PathLike[str]) -> tuple[list[Candidate], TargetChoice, dict[str, Any]]:
    """The candidates, target and ``target.json`` content of a folder written by :func:`write_proposal`.

    Raises
    ------
    DataError
        A missing or malformed ``candidates.jsonl`` or ``target.json``.
    """
    folder = Path(folder)
    target_path = folder / "target.json"
    if not target_path.is_file():
        raise DataError(f"{target_path}: missing; is {folder} a folder written by `benchfill propose`?")
    meta = read_json(target_path)
    choice = TargetChoice.from_dict(meta, where=str(target_path))
    candidates = load_candidates(folder / "candidates.jsonl")
    return candidates, choice, meta


def export_proposal(
    folder: str | os.PathLike[str],
    fmt: Literal["lm-eval", "csv"],
    *,
    fit: Fit | None = None,
    output_type: Literal["multiple_choice", "generate_until"] | None = None,
    task_name: str = "irtbayes_benchfill",
) -> list[Path]:
    """Write the candidates of a proposal folder for the systems to answer, into ``folder/export/``.

    ``"lm-eval"``: an lm-evaluation-harness task (``<task_name>.jsonl`` and ``.yaml``; ``output_type``
    defaults to multiple choice when every candidate has choices, generation when none has).
    ``"csv"``: ``responses_template.csv``, one blank row per (fit subject, candidate); ``fit`` defaults to
    the fit folder recorded in ``target.json``.

    Raises
    ------
    DataError
        Candidates that mix multiple-choice and free-response items (export them separately), or a
        missing fit for the CSV template.
    """
    from irtbayes.fit import load_fit

    candidates, _, meta = read_proposal(folder)
    out = Path(folder) / "export"
    if fmt == "lm-eval":
        if output_type is None:
            with_choices = sum(c.choices is not None for c in candidates)
            if with_choices not in (0, len(candidates)):
                raise DataError(
                    f"{folder}: {with_choices} of {len(candidates)} candidates are multiple choice and the rest free "
                    "response; lm-eval runs one kind per task: give output_type, or split the candidates"
                )
            output_type = "multiple_choice" if with_choices else "generate_until"
        written = export_lm_eval(candidates, out, task_name=task_name, output_type=output_type)
        return [written.data_path, written.yaml_path]
    if fmt == "csv":
        if fit is None:
            if not meta.get("fit"):
                raise DataError(f"{folder}/target.json names no fit; give the fit folder")
            fit = load_fit(meta["fit"])
        return [export_csv_template(candidates, list(fit.subject_ids), out / "responses_template.csv")]
    raise SpecError(f"export format must be 'lm-eval' or 'csv', got {fmt!r}")


# ============================================================================================ responses
def _samples_files(root: Path) -> list[Path]:
    found: list[Path] = []
    for pattern in ("samples_*.jsonl", "*/samples_*.jsonl", "*/*/samples_*.jsonl"):
        found.extend(p for p in root.glob(pattern) if p.is_file())
    return sorted(found)


def _lm_eval_candidate_responses(
    root: Path, *, metric: str | None, lm_filter: str | None
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Responses of lm-eval logs with items mapped to candidate ids through each doc's ``candidate_id``."""
    import re

    from irtbayes.io.lm_eval import load_lm_eval

    name = re.compile(r"^samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
    mapping: dict[str, str] = {}
    missing: dict[str, list[str]] = {}
    tasks: set[str] = set()
    for path in _samples_files(root):
        match = name.match(path.name)
        task = match.group("task") if match else path.stem.removeprefix("samples_")
        entries = []
        for number, line in read_json_lines(path):
            doc = line.get("doc")
            doc_hash = line.get("doc_hash")
            key = str(doc_hash) if isinstance(doc_hash, str) and doc_hash else str(line.get("doc_id"))
            cid = doc.get("candidate_id") if isinstance(doc, dict) else None
            entries.append((f"{task}/{key}", None if cid is None else str(cid), number))
        if any(cid is not None for _, cid, _ in entries):
            tasks.add(task)
            for item, cid, number in entries:
                if cid is None:
                    missing.setdefault(str(path), []).append(f"line {number}")
                else:
                    mapping[item] = cid
    if not tasks:
        raise DataError(
            f"{root}: no lm-eval sample carries a 'candidate_id' in its doc; answer the task written by "
            "`irtbayes benchfill export --format lm-eval`"
        )
    if missing:
        where = "; ".join(f"{p}: {', '.join(lines[:5])}" for p, lines in missing.items())
        raise DataError(f"lm-eval samples without a 'candidate_id' in a BenchFill task, so of unknown items: {where}")
    loaded = load_lm_eval(root, metric=metric, filter=lm_filter, tasks=sorted(tasks))
    frame = loaded.long_frame()
    frame["item"] = frame["item"].map(mapping)
    if frame["item"].isna().any():
        raise DataError(f"{root}: some lm-eval items could not be mapped to a candidate id")
    if frame.duplicated(["subject", "item"]).any():
        dup = frame.loc[frame.duplicated(["subject", "item"], keep=False)].iloc[0]
        raise DataError(
            f"{root}: subject '{dup['subject']}' answered candidate '{dup['item']}' more than once (in several tasks "
            "or documents); keep one"
        )
    return frame[["subject", "item", "response"]], {"tasks": sorted(tasks)}


def load_candidate_responses(
    path: str | os.PathLike[str],
    candidates: Sequence[Candidate],
    *,
    fit: Fit,
    metric: str | None = None,
    lm_filter: str | None = None,
) -> ResponseData:
    """Read the candidates' responses and check them against the fit and the candidates.

    Parameters
    ----------
    path
        A long CSV/Parquet file ``subject,item,response`` (item = candidate id; blank responses are missing
        cells), or lm-evaluation-harness ``--log_samples`` output of the exported task: each logged doc's
        ``candidate_id`` names the candidate, the subject is the run's model name.
    metric, lm_filter
        lm-eval: the per-sample metric and filter to read (see :func:`irtbayes.io.lm_eval.load_lm_eval`).

    Returns
    -------
    ResponseData
        See :func:`~irtbayes.benchfill.calibration.candidate_response_data`.

    Raises
    ------
    DataError
        A missing or unreadable path, responses from subjects the fit does not know (listed), responses to
        items that are not candidates (listed).
    """
    from irtbayes.io import load_long
    from irtbayes.io.lm_eval import is_lm_eval_folder

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    if path.is_dir():
        if not is_lm_eval_folder(path):
            raise DataError(f"{path}: a folder without lm-evaluation-harness samples_*.jsonl files")
        frame, _ = _lm_eval_candidate_responses(path, metric=metric, lm_filter=lm_filter)
        return candidate_response_data(frame, candidates, fit=fit, source=str(path))
    responses = load_long(path)
    return candidate_response_data(responses, candidates, fit=fit, source=str(path))


# ============================================================================================ before/after
def _draws(var: xr.DataArray, items: Sequence[str]) -> np.ndarray:
    arr = var.sel(item=list(items)).transpose("chain", "draw", "item").values.astype("float64")
    return arr.reshape(arr.shape[0] * arr.shape[1], arr.shape[2])


#: Hyperparameters of the difficulty prior kept with an extended posterior (see ``audit(ensemble=...)``).
HYPER_VARS = ("difficulty_sd", "difficulty_mu", "difficulty_benchmark")


def _append_draws(base: xr.Dataset, new: xr.Dataset, items: Sequence[str], *, kind: str) -> xr.Dataset:
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


def before_after(
    fit: Fit,
    data: ResponseData,
    extended_posterior: xr.Dataset,
    extended_data: ResponseData,
    *,
    added: Sequence[str],
    target: Target,
    benchmark: str | None = None,
    ci_prob: float = 0.9,
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
    """
    added = [str(a) for a in added]
    unknown = [a for a in added if a not in set(extended_data.item_ids)]
    if unknown:
        raise DataError(f"before_after: added item(s) {unknown[:5]} are not in the extended data")
    settings = {
        "target": target,
        "ci_prob": ci_prob,
        "max_draws": AUDIT_MAX_DRAWS,
        "information_draws": AUDIT_INFORMATION_DRAWS,
        "progress": False,
    }
    before = audit(fit, data, **settings)  # type: ignore[arg-type]
    # the added items' draws come from their calibration, not from the bank's prior: they enter as they are
    after = audit(extended_posterior, extended_data, fixed_items=added, **settings)  # type: ignore[arg-type]
    if before.settings["ensemble"] != after.settings["ensemble"]:
        before = audit(fit, data, ensemble="draws", **settings)  # type: ignore[arg-type]
        after = audit(extended_posterior, extended_data, ensemble="draws", **settings)  # type: ignore[arg-type]
    ext_items = extended_data.items
    added_set = set(added)
    scopes: list[tuple[str, str]] = [("all", "all")]
    names = {benchmark} if benchmark else set()
    names |= {str(b) for b in ext_items.loc[ext_items.index.isin(added), "benchmark"].dropna()}
    scopes += [("benchmark", b) for b in sorted(names) if b in set(map(str, data.benchmarks))]

    columns = ["n_items"]
    for prefix in ("ddm_w1", "ddm_tv", "max_gap"):
        columns += [f"{prefix}_{s}" for s in STATS]
    columns += [
        "gap_lo", "gap_hi", "gap_modal_bin", "gap_p_modal_bin", "empty_bins_mean", "mass_below_mean",
        "mass_above_mean",
    ]  # fmt: skip
    comp_rows, bin_rows = [], []
    edges = target.edges_array
    n_bins = target.n_bins
    base_b = fit.posterior["difficulty"]
    ext_b = extended_posterior["difficulty"]
    for kind, name in scopes:
        if kind == "all":
            original = [str(i) for i in data.item_ids]
        else:
            original = [str(i) for i in data.item_ids[data.items["benchmark"].eq(name).fillna(False).to_numpy(bool)]]
        scope_added = [a for a in added if kind == "all" or str(ext_items.loc[a, "benchmark"]) == name]
        for version, result, n_added in (("before", before, 0), ("after", after, len(scope_added))):
            table = result.benchmarks
            row = table.loc[(table["scope_kind"] == kind) & (table["scope"].astype(str) == name)].iloc[0]
            comp_rows.append(
                {"scope_kind": kind, "scope": name, "version": version, "n_added": n_added}
                | {c: row[c] for c in columns}
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
                "p_empty_after": (after_counts == 0).mean(axis=0),
            }
        )
        bin_rows.append(frame)
    comparison = pd.DataFrame(comp_rows)
    bins = pd.concat(bin_rows, ignore_index=True)

    matrix = extended_data.long_frame()
    matrix["added"] = matrix["item"].isin(added_set)
    per = matrix.groupby(["subject", "added"])["response"].agg(["size", "mean"]).unstack("added")
    subjects = pd.DataFrame(index=pd.Index([str(s) for s in data.subject_ids], name="subject"))
    for flag, label in ((False, "original"), (True, "added")):
        size = per["size"][flag] if ("size", flag) in per.columns else pd.Series(dtype=float)
        mean = per["mean"][flag] if ("mean", flag) in per.columns else pd.Series(dtype=float)
        subjects[f"n_{label}"] = size.reindex(subjects.index).fillna(0).astype("int64")
        subjects[f"accuracy_{label}"] = mean.reindex(subjects.index)
    for version, result in (("before", before), ("after", after)):
        ranking = result.ranking.loc[result.ranking["scope_kind"] == "all"].set_index("subject")
        ranking.index = ranking.index.astype(str)
        for col in ("reweighted_mean", "reweighted_ci_low", "reweighted_ci_high", "rank_mean", "rank_ci_low",
                    "rank_ci_high"):  # fmt: skip
            subjects[f"{col.split('_')[0]}_{version}_{col.split('_', 1)[1]}"] = ranking[col].reindex(subjects.index)
    subjects = subjects.reset_index()
    for frame in (comparison, bins, subjects):
        frame.attrs.update(ci_prob=ci_prob, target=target.to_dict())
    return {"comparison": comparison, "bins": bins, "subjects": subjects}


# ============================================================================================ the result
@dataclass
class BenchfillResult:
    """One BenchFill calibration round: decisions, and the bank before and after the accepted items.

    Attributes
    ----------
    decisions
        One row per candidate (index ``candidate_id``): the columns of
        :func:`~irtbayes.benchfill.acceptance.decide_all` plus ``benchmark`` and ``text``.
    comparison, bins, subjects
        The tables of :func:`before_after`.
    target
        The target.
    settings
        ``mode``, ``tau``, ``min_responses``, ``discrimination_prob``, ``min_discrimination``, ``ci_prob``,
        the sampler settings of a full refit, ``n_draws``.
    run_id
        Stamped on the ledger records of this round.
    """

    decisions: pd.DataFrame
    comparison: pd.DataFrame
    bins: pd.DataFrame
    subjects: pd.DataFrame
    target: TargetChoice
    settings: dict[str, Any]
    run_id: str

    @property
    def accepted(self) -> list[str]:
        return [str(i) for i in self.decisions.index[self.decisions["decision"] == "accepted"]]

    @property
    def ci_prob(self) -> float:
        return float(self.settings.get("ci_prob", 0.9))

    def summary_dict(self) -> dict[str, Any]:
        """What ``before_after.json`` holds."""
        reasons = self.decisions["reason"].value_counts()
        return _json_clean(
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
            }
        )

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
                f"Maximum Gap {_fmt(row, 'max_gap')}, DDM {_fmt(row, 'ddm_w1')}"
            )
        return "\n".join(lines)

    def report_section(self, doc: Any, figure: Callable[[str, Any, str], None]) -> None:
        """Add a BenchFill section to a report.

        Parameters
        ----------
        doc
            An :class:`irtbayes.reporting.Document` (``heading``, ``paragraph``, ``bullets``, ``table``).
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
        scope_kind, scope = ("benchmark", t.benchmark) if t.benchmark else ("all", "all")
        shown = self.bins.loc[(self.bins["scope_kind"] == scope_kind) & (self.bins["scope"].astype(str) == scope)]
        if shown.empty:
            shown = self.bins.loc[self.bins["scope_kind"] == "all"]
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


def _fmt(row: pd.Series, prefix: str) -> str:
    return f"{row[f'{prefix}_mean']:.2f} [{row[f'{prefix}_ci_low']:.2f}, {row[f'{prefix}_ci_high']:.2f}]"


def _json_clean(obj: Any) -> Any:
    obj = json_ready(obj)
    if isinstance(obj, dict):
        return {str(k): _json_clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is pd.NA:
        return None
    return obj


def _silent_rows(ids: Sequence[str], *, choice: TargetChoice, min_responses: int) -> pd.DataFrame:
    """Decision rows for candidates nobody answered."""
    rows = [
        {
            "item": cid,
            "decision": "rejected",
            "reason": "not enough responses",
            "detail": f"0 responses, fewer than {min_responses}",
            "failed": "not enough responses",
            "n_responses": 0,
            "target_lo": choice.lo,
            "target_hi": choice.hi,
        }
        for cid in ids
    ]
    return pd.DataFrame(rows).set_index("item")


def calibrate_candidates(
    fit: Fit,
    data: ResponseData,
    candidates: Sequence[Candidate],
    new_data: ResponseData,
    choice: TargetChoice,
    *,
    mode: Mode = "full",
    prior: Prior = "candidates",
    tau: float = 0.8,
    min_responses: int = 10,
    discrimination_prob: float = 0.9,
    min_discrimination: float | None = None,
    ci_prob: float = 0.9,
    chains: int | None = None,
    draws: int | None = None,
    tune: int | None = None,
    seed: int | None = None,
    progress: bool = False,
) -> BenchfillResult:
    """Calibrate the candidates, decide each one, and compare the bank before and after.

    Parameters
    ----------
    fit, data
        The bank's fit and its data.
    candidates
        Every candidate of the round (those without responses are rejected for "not enough responses").
    new_data
        Their responses (:func:`load_candidate_responses`).
    choice
        The target.
    mode
        ``"full"`` refits the bank with the candidates (:func:`~irtbayes.benchfill.calibration.calibrate_full`);
        ``"fixed"`` holds the bank at its posterior (:func:`~irtbayes.benchfill.calibration.calibrate_fixed`).
    prior
        ``"candidates"`` (default): the candidates of a benchmark form their own group in the hierarchy;
        ``"bank"``: each gets the prior of a new item of its benchmark.
    tau, min_responses, discrimination_prob, min_discrimination, ci_prob
        The acceptance rule (:func:`~irtbayes.benchfill.acceptance.decide_all`). ``min_discrimination=None``
        (the default): :data:`~irtbayes.benchfill.calibration.MIN_DISCRIMINATION_SHARE` of the bank's typical
        discrimination (:func:`~irtbayes.benchfill.calibration.typical_discrimination`), recorded in the
        settings as ``min_discrimination`` with ``min_discrimination_rule``.
    chains, draws, tune, seed, progress
        Sampler settings of the refit (default: the fit's own); ``seed`` also seeds the fixed-bank draws.

    Returns
    -------
    BenchfillResult
    """
    if mode not in ("full", "fixed"):
        raise SpecError(f"mode must be 'full' or 'fixed', got {mode!r}")
    ids = [c.candidate_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise DataError(f"candidate id(s) {sorted({i for i in ids if ids.count(i) > 1})} appear more than once")
    extra = sorted(set(map(str, new_data.item_ids)) - set(ids))
    if extra:
        raise DataError(f"{new_data.source}: responses to item(s) that are not candidates: {extra[:20]}")
    rule_text = "given"
    if min_discrimination is None:
        typical = typical_discrimination(fit)
        min_discrimination = MIN_DISCRIMINATION_SHARE * typical
        rule_text = (
            f"{MIN_DISCRIMINATION_SHARE:g} of the bank's typical discrimination {typical:.3g} (median posterior mean)"
        )
    settings: dict[str, Any] = {
        "mode": mode,
        "prior": prior,
        "tau": tau,
        "min_responses": min_responses,
        "discrimination_prob": discrimination_prob,
        "min_discrimination": min_discrimination,
        "min_discrimination_rule": rule_text,
        "ci_prob": ci_prob,
        "kind": fit.spec.kind,
        "bank_sampler": {k: fit.sampler.get(k) for k in ("name", "chains", "draws", "tune", "seed")},
    }
    refit = None
    if mode == "full":
        full = calibrate_full(
            fit, data, new_data, chains=chains, draws=draws, tune=tune, seed=seed, progress=progress, prior=prior
        )
        posterior = full.posterior
        refit = full.refit
        settings["refit"] = {k: refit.sampler.get(k) for k in ("name", "chains", "draws", "tune", "seed")}
        settings["refit_converged"] = bool(refit.diagnostics.ok)
    else:
        if data.checksum() != fit.data_checksum:
            raise FitError(f"{data.source}: not the data the fit was made from")
        posterior = calibrate_fixed(fit, new_data, seed=seed, prior=prior)
        settings["fixed"] = dict(posterior.attrs)
        settings["bank_converged"] = bool(fit.diagnostics.ok)
    answered = [str(i) for i in new_data.item_ids]
    decisions = decide_all(
        posterior,
        target_lo=choice.lo,
        target_hi=choice.hi,
        n_responses=posterior["n_responses"].to_series(),
        items=answered,
        tau=tau,
        min_discrimination=min_discrimination,
        discrimination_prob=discrimination_prob,
        min_responses=min_responses,
        ci_prob=ci_prob,
    )
    silent = [i for i in ids if i not in set(answered)]
    if silent:
        log.info("%d candidate(s) have no responses and are rejected: %s", len(silent), silent[:10])
        decisions = pd.concat([decisions, _silent_rows(silent, choice=choice, min_responses=min_responses)])
    by_id = {c.candidate_id: c for c in candidates}
    decisions = decisions.reindex(ids)
    decisions.index.name = "candidate_id"
    decisions["benchmark"] = [by_id[i].benchmark for i in ids]
    decisions["text"] = [by_id[i].text for i in ids]
    decisions.attrs.update(ci_prob=ci_prob, tau=tau)
    accepted = [i for i in ids if decisions.loc[i, "decision"] == "accepted"]
    if refit is not None:
        keep = [str(i) for i in data.item_ids] + accepted
        names = [
            n for n in ("ability", "difficulty", "discrimination", "guessing", *HYPER_VARS) if n in refit.posterior
        ]
        extended = refit.posterior[names].sel(item=keep)
        extended.attrs = {}
    else:
        extended = _append_draws(fit.posterior, posterior, accepted, kind=fit.spec.kind)
    extended_data = ResponseData.combine([data, new_data.subset(items=accepted)]) if accepted else data
    tables = before_after(
        fit,
        data,
        extended,
        extended_data,
        added=accepted,
        target=choice.target,
        benchmark=choice.benchmark,
        ci_prob=ci_prob,
    )
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:8]
    return BenchfillResult(
        decisions=decisions,
        comparison=tables["comparison"],
        bins=tables["bins"],
        subjects=tables["subjects"],
        target=choice,
        settings=settings,
        run_id=run_id,
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
    ``before_after_bins.csv`` and ``before_after_subjects.csv``. Every file but the ledger is replaced
    atomically; the ledger is appended with one fsynced write.
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
    paths["before_after_csv"] = write_atomic(out / "before_after.csv", result.comparison.to_csv(index=False))
    paths["before_after_bins"] = write_atomic(out / "before_after_bins.csv", result.bins.to_csv(index=False))
    paths["before_after_subjects"] = write_atomic(
        out / "before_after_subjects.csv", result.subjects.to_csv(index=False)
    )
    paths["before_after_json"] = write_atomic(
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
    tables = {k: pd.DataFrame(summary[k]) for k in ("comparison", "bins", "subjects")}
    for frame in tables.values():
        frame.attrs.update(ci_prob=ci_prob, target=choice.target.to_dict())
    return BenchfillResult(
        decisions=decisions,
        comparison=tables["comparison"],
        bins=tables["bins"],
        subjects=tables["subjects"],
        target=choice,
        settings=dict(summary["settings"]),
        run_id=str(summary["run_id"]),
    )


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
