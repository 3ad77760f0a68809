"""BenchFill proposals: ask a candidate source for items aimed at the aim (the interval ``[lo, hi)`` the new items
should fill; by default the bin of the widest gap), write and export them."""

from __future__ import annotations

import json
import logging
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from irtbayes.benchfill.aim import AIM_FILE, Aim, read_aim
from irtbayes.benchfill.candidates import Candidate, load_candidates
from irtbayes.benchfill.export import export_csv_template, export_lm_eval
from irtbayes.benchfill.llm import LLMSource
from irtbayes.benchfill.sources import CandidateSource, FileSource, Proposal, ProposalRequest, Rejection, select_seeds
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.files import atomic_write_text, json_ready
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

log = logging.getLogger(__name__)


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
    aim: Aim,
    source: CandidateSource,
    *,
    n: int | None = None,
    n_choices: int | Literal["auto"] | None = "auto",
    max_seeds: int = 8,
    ci_prob: float = 0.9,
) -> Proposal:
    """Ask ``source`` for candidates whose difficulty lies in ``aim``; seeds are the bank's items in and next to it.

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

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> from irtbayes.benchfill.sources import CallableSource
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> from irtbayes.benchfill.proposal import propose
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> source = CallableSource(lambda request: [{"text": f"new item {k}", "answer": "a"} for k in range(request.n)], name="demo")
    >>> proposal = propose(fit, data, aim, source, n=3)
    >>> len(proposal.candidates), proposal.candidates[0].source
    (3, 'callable:demo')
    """
    fit.refuse_if_unsettled("BenchFill propose")
    if n is None:
        n = len(source.candidates) if isinstance(source, FileSource) else 10
    if n_choices == "auto":
        n_choices = _modal_options(data, aim.benchmark)
    table = fit.items_table(ci_prob=ci_prob)
    if "location_mean" in table.columns:  # graded items are placed (and shown to a generator) at their locations
        table = table.assign(**{f"difficulty_{c}": table[f"location_{c}"] for c in ("mean", "ci_low", "ci_high")})
    if aim.benchmark is not None:
        table = table.loc[table["benchmark"].astype(str) == aim.benchmark]
    seeds: tuple = ()
    if "text" in data.items.columns and data.items["text"].notna().any():
        seeds = select_seeds(table, aim_lo=aim.lo, aim_hi=aim.hi, items=data.items, max_seeds=max_seeds)
    else:
        log.info("%s: the items have no text, so no seed items are shown", data.source)
    request = ProposalRequest(
        aim_lo=aim.lo,
        aim_hi=aim.hi,
        aim_bin=-1 if aim.bin is None else aim.bin,
        n=max(int(n), 1),
        benchmark=aim.benchmark,
        domain=_bank_domain(data, aim.benchmark),
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
                    aim_bin=request.aim_bin,
                    record=candidate.to_dict(),
                    prompt_hash=candidate.prompt_hash,
                )
            )
        else:
            keep.append(candidate)
    return Proposal(candidates=keep, rejections=rejected)


def save_proposal(
    out_dir: str | os.PathLike[str],
    proposal: Proposal,
    aim: Aim,
    *,
    fit_dir: str | os.PathLike[str] | None = None,
    data_source: str | None = None,
    source: str | None = None,
    audit_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Path]:
    """Write ``candidates.jsonl``, ``aim.json`` and ``rejections.jsonl`` into ``out_dir``, each atomically.

    ``aim.json`` holds :meth:`Aim.to_dict` plus ``fit`` (the fit folder, absolute), ``audit`` (the saved audit the
    aim came from, absolute, or None), ``data``, ``source``, ``n_candidates``, ``n_rejections`` and ``created``.

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(100, 40, missing=0.0)
    >>> import tempfile
    >>> from irtbayes.benchfill.sources import CallableSource
    >>> from irtbayes.benchfill.aim import choose_aim
    >>> from irtbayes.benchfill.proposal import propose, load_proposal, save_proposal
    >>> aim, _ = choose_aim(fit, data, interval=(0.0, 1.0))
    >>> proposal = propose(fit, data, aim, CallableSource(lambda r: [{"text": "q", "answer": "a"}], name="demo"), n=1)
    >>> folder = tempfile.mkdtemp()
    >>> paths = save_proposal(folder, proposal, aim)
    >>> sorted(p.name for p in paths.values())
    ['aim.json', 'candidates.jsonl', 'rejections.jsonl']

    :func:`load_proposal` reads the folder back; :func:`export_proposal` writes its candidates for the systems
    to answer:

    >>> candidates, again, _ = load_proposal(folder)
    >>> [c.text for c in candidates], (again.lo, again.hi)
    (['q'], (0.0, 1.0))
    >>> from irtbayes.benchfill.proposal import export_proposal
    >>> [p.name for p in export_proposal(folder, "csv", fit=fit)]
    ['responses_template.csv']
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
                    "aim_bin": r.aim_bin,
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
        **aim.to_dict(),
        "fit": str(Path(fit_dir).resolve()) if fit_dir is not None else None,
        "audit": str(Path(audit_dir).resolve()) if audit_dir is not None else None,
        "data": data_source,
        "source": source,
        "n_candidates": len(proposal.candidates),
        "n_rejections": len(proposal.rejections),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    paths = {
        "candidates": atomic_write_text(out / "candidates.jsonl", cands),
        "rejections": atomic_write_text(out / "rejections.jsonl", rejections),
        "aim": atomic_write_text(out / AIM_FILE, json.dumps(meta, indent=2, allow_nan=False) + "\n"),
    }
    return paths


def load_proposal(folder: str | os.PathLike[str]) -> tuple[list[Candidate], Aim, dict[str, Any]]:
    """The candidates, aim and ``aim.json`` content of a folder written by :func:`save_proposal` (whose example
    shows it); a folder written before the aim had its name holds ``target.json`` instead, read alike
    (:func:`~irtbayes.benchfill.aim.read_aim`).

    Raises
    ------
    DataError
        A missing or malformed ``candidates.jsonl`` or ``aim.json``.
    """
    folder = Path(folder)
    aim, meta = read_aim(folder)
    candidates = load_candidates(folder / "candidates.jsonl")
    return candidates, aim, meta


def recorded_fit(folder: str | os.PathLike[str], meta: dict[str, Any] | None = None) -> Fit:
    """The fit a proposal folder's ``aim.json`` records (``meta``: that file's content, when already read),
    loaded; a :class:`~irtbayes.core.errors.DataError` when it names none."""
    from irtbayes.fitting.storage import load_fit

    if meta is None:
        meta = load_proposal(folder)[2]
    if not meta.get("fit"):
        raise DataError(f"{folder}/{AIM_FILE} names no fit; give the fit folder")
    return load_fit(meta["fit"])


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
    the fit folder recorded in ``aim.json``. :func:`save_proposal`'s example shows it.

    Raises
    ------
    DataError
        Candidates that mix multiple-choice and free-response items (export them separately), or a
        missing fit for the CSV template.
    """
    candidates, _, meta = load_proposal(folder)
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
        fit = recorded_fit(folder, meta) if fit is None else fit
        return [export_csv_template(candidates, list(fit.subject_ids), out / "responses_template.csv")]
    raise SpecError(f"export format must be 'lm-eval' or 'csv', got {fmt!r}")


# ============================================================================================ old names
write_proposal = deprecated_alias(save_proposal, "write_proposal")
read_proposal = deprecated_alias(load_proposal, "read_proposal")
