"""BenchFill responses: the candidates' responses read, checked against the fit and labelled for calibration."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from irtbayes.benchfill.candidates import Candidate, items_table
from irtbayes.core.errors import DataError, listed
from irtbayes.data.responses import ResponseData

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

log = logging.getLogger(__name__)


def _bank_labels(fit: Fit) -> pd.DataFrame:
    cd = fit.constant_data
    frame = pd.DataFrame(
        {
            "benchmark": cd["item_benchmark"].values.astype(str),
            "domain": cd["item_domain"].values.astype(str),
        },
        index=fit.item_ids,
    )
    return frame.where(frame != "", None)


def _response_frame(responses: ResponseData | pd.DataFrame, source: str | None) -> tuple[pd.DataFrame, str]:
    """The long frame of ``responses`` and the name messages give it."""
    if isinstance(responses, ResponseData):
        frame = responses.long_frame()
        name = source or responses.source
        if "condition" in frame.columns and frame["condition"].nunique() > 1:
            raise DataError(
                f"{name}: responses under {frame['condition'].nunique()} conditions; calibrate one condition at a "
                "time (data.subset(conditions=[...]))"
            )
    elif isinstance(responses, pd.DataFrame):
        name = source or "<responses>"
        missing = [c for c in ("subject", "item", "response") if c not in responses.columns]
        if missing:
            raise DataError(f"{name}: missing column(s) {missing}; the columns are {list(map(str, responses.columns))}")
        frame = responses
    else:
        raise DataError(f"expected responses as ResponseData or a data frame, got {type(responses).__name__}")
    return frame, name


def _with_bank_domains(meta: pd.DataFrame, fit: Fit) -> pd.DataFrame:
    """Candidates' item metadata with the bank's domain filled in for a bank benchmark (a contradiction raises)."""
    bank = _bank_labels(fit)
    domain_of = bank.dropna(subset=["benchmark"]).drop_duplicates("benchmark").set_index("benchmark")["domain"]
    for cid, row in meta.iterrows():
        bench = row["benchmark"]
        if bench is None or pd.isna(bench) or bench not in domain_of.index:
            continue
        bank_domain = domain_of[bench]
        bank_domain = None if bank_domain is None or pd.isna(bank_domain) else str(bank_domain)
        if row["domain"] is None or pd.isna(row["domain"]):
            meta.loc[cid, "domain"] = bank_domain
        elif bank_domain is not None and str(row["domain"]) != bank_domain:
            raise DataError(
                f"candidate '{cid}': domain '{row['domain']}' but its benchmark '{bench}' is in domain "
                f"'{bank_domain}' in the fitted bank"
            )
    return meta


def candidate_response_data(
    responses: ResponseData | pd.DataFrame,
    candidates: Sequence[Candidate],
    *,
    fit: Fit,
    source: str | None = None,
) -> ResponseData:
    """Check the candidates' responses against the fit and the candidates, and label them for calibration.

    Parameters
    ----------
    responses
        The candidates' responses: a :class:`~irtbayes.data.responses.ResponseData` (any loader) or a long frame with
        ``subject``, ``item`` (the candidate id) and ``response`` columns.
    candidates
        The candidates (their ids, labels and choices become the item metadata).
    fit
        The bank's fit: every responding subject must be one of its subjects.
    source
        How messages name the responses (default: the data's own source).

    Returns
    -------
    ResponseData
        The responses with item metadata from the candidates (``benchmark``, ``domain``, ``text``,
        ``answer``, ``n_options``, ...). A candidate whose benchmark is in the bank and that names no domain
        gets the benchmark's domain. Candidates without responses are not in it.

    Raises
    ------
    DataError
        Responses from subjects the fit does not know (all listed), responses to items that are not
        candidates (all listed), a candidate id that is already a bank item, a candidate whose domain
        contradicts its benchmark's domain in the bank, or malformed responses.

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> from irtbayes.benchfill.responses import candidate_response_data
    >>> new = candidate_response_data(answers, candidates, fit=fit)
    >>> new.n_subjects, list(new.item_ids)
    (100, ['good', 'mis-keyed'])
    >>> candidate_response_data(answers.assign(subject="stranger"), candidates, fit=fit)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: <responses>: 1 subject(s) are not among the fit's 100 subjects: stranger. Candidates are calibrated against the systems the bank was fitted to; evaluate them with those systems (check the spelling of the names), or fit the bank again with the new systems first
    """
    frame, name = _response_frame(responses, source)
    frame = frame[["subject", "item", "response"]].copy()
    frame["subject"] = frame["subject"].astype(str).str.strip()
    frame["item"] = frame["item"].astype(str).str.strip()
    by_id = {c.candidate_id: c for c in candidates}
    if len(by_id) != len(candidates):
        ids = [c.candidate_id for c in candidates]
        raise DataError(f"candidate id(s) {sorted({i for i in ids if ids.count(i) > 1})} appear more than once")
    bank_items = set(fit.item_ids)
    clash = sorted(set(by_id) & bank_items)
    if clash:
        raise DataError(f"candidate id(s) {clash[:10]} are already items of the fitted bank; give candidates new ids")
    unknown_items = sorted(set(frame["item"]) - set(by_id))
    if unknown_items:
        raise DataError(
            f"{name}: responses to {len(unknown_items)} item(s) that are not candidates: {listed(unknown_items)}; "
            f"the item column must hold candidate ids (e.g. {list(by_id)[:3]})"
        )
    known_subjects = set(fit.subject_ids)
    unknown_subjects = sorted(set(frame["subject"]) - known_subjects)
    if unknown_subjects:
        raise DataError(
            f"{name}: {len(unknown_subjects)} subject(s) are not among the fit's {len(known_subjects)} subjects: "
            f"{listed(unknown_subjects)}. Candidates are calibrated against the systems the bank was fitted to; "
            "evaluate them with those systems (check the spelling of the names), or fit the bank again with the new systems first"
        )
    answered = [c for c in candidates if c.candidate_id in set(frame["item"])]
    if not answered:
        raise DataError(f"{name}: no responses to any candidate")
    meta = _with_bank_domains(items_table(answered), fit)
    return ResponseData.from_long(frame, items=meta.reset_index(), source=name)


def check_new_data(fit: Fit, new_data: ResponseData) -> None:
    if not isinstance(new_data, ResponseData):
        raise DataError(f"expected the candidates' responses as ResponseData, got {type(new_data).__name__}")
    unknown = new_data.subject_ids.difference(fit.subject_ids)
    if len(unknown):
        raise DataError(
            f"{new_data.source}: {len(unknown)} subject(s) are not among the fit's subjects: {list(unknown[:20])}"
        )
    clash = new_data.item_ids.intersection(fit.item_ids)
    if len(clash):
        raise DataError(f"{new_data.source}: item(s) {list(clash[:10])} are already items of the fitted bank")


def response_counts(new_data: ResponseData) -> np.ndarray:
    return np.bincount(new_data.item_codes, minlength=new_data.n_items).astype("int64")


def _lm_eval_candidate_responses(
    root: Path, candidates: Sequence[Candidate], *, metric: str | None, lm_filter: str | None
) -> pd.DataFrame:
    """Responses of lm-eval logs of the exported task, each item mapped to the candidate whose text it asks.

    The logs are read by :func:`irtbayes.data.io.lm_eval.load_lm_eval` (its item ids, documents and checks). A
    logged document's question is the candidate's text (:func:`~irtbayes.benchfill.export.export_lm_eval`);
    where several candidates share a text, the document's position in the task (``doc_id``) names the one
    exported there.
    """
    from irtbayes.data.io.lm_eval import load_lm_eval

    loaded = load_lm_eval(root, metric=metric, filter=lm_filter)
    by_text: dict[str, list[int]] = {}
    for k, candidate in enumerate(candidates):
        by_text.setdefault(candidate.text.strip(), []).append(k)
    items = loaded.items
    mapping: dict[str, str] = {}
    unknown: dict[str, list[str]] = {}
    for item, row in items.iterrows():
        text = "" if pd.isna(row.get("text")) else str(row["text"]).strip()
        matches = by_text.get(text, [])
        doc_id = pd.to_numeric(row.get("doc_id"), errors="coerce")
        if len(matches) > 1 and pd.notna(doc_id) and int(doc_id) in matches:
            matches = [int(doc_id)]
        if len(matches) == 1:
            mapping[str(item)] = candidates[matches[0]].candidate_id
        else:
            unknown.setdefault(str(row["benchmark"]), []).append(str(item))
    tasks = sorted({str(items.loc[i, "benchmark"]) for i in mapping})
    if not tasks:
        raise DataError(
            f"{root}: no lm-eval document asks the text of a candidate; answer the task written by "
            "`irtbayes benchfill export --format lm-eval` with these candidates"
        )
    stray = {task: ids for task, ids in unknown.items() if task in tasks}
    if stray:
        where = "; ".join(f"task {task}: {', '.join(ids[:5])}" for task, ids in stray.items())
        raise DataError(
            f"{root}: lm-eval documents of a BenchFill task whose question is not the text of exactly one candidate, "
            f"so of unknown items: {where}"
        )
    frame = loaded.long_frame()
    frame = frame.loc[frame["item"].astype(str).isin(mapping)].copy()
    frame["item"] = frame["item"].astype(str).map(mapping)
    if frame.duplicated(["subject", "item"]).any():
        dup = frame.loc[frame.duplicated(["subject", "item"], keep=False)].iloc[0]
        raise DataError(
            f"{root}: subject '{dup['subject']}' answered candidate '{dup['item']}' more than once (in several tasks "
            "or documents); keep one"
        )
    return frame[["subject", "item", "response"]]


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
        cells), or lm-evaluation-harness ``--log_samples`` output of the exported task, read by
        :func:`irtbayes.data.io.lm_eval.load_lm_eval`: each logged document's question names its candidate, the
        subject is the run's model name. Other tasks in the folder are read too (give ``lm_filter`` or
        ``metric`` where they need one) and left out.
    metric, lm_filter
        lm-eval: the per-sample metric and filter to read (see :func:`irtbayes.data.io.lm_eval.load_lm_eval`).

    Returns
    -------
    ResponseData
        See :func:`~irtbayes.benchfill.responses.candidate_response_data`.

    Raises
    ------
    DataError
        A missing or unreadable path, responses from subjects the fit does not know (listed), responses to
        items that are not candidates (listed).

    Examples
    --------
    >>> from irtbayes.examples import simulated_candidates
    >>> fit, data, candidates, answers = simulated_candidates()
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.responses import load_candidate_responses
    >>> path = Path(tempfile.mkdtemp()) / "answers.csv"
    >>> answers.to_csv(path, index=False)
    >>> load_candidate_responses(path, candidates, fit=fit).n_responses
    200
    """
    from irtbayes.data.io.lm_eval import is_lm_eval_folder
    from irtbayes.data.io.tabular import load_long

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    if path.is_dir():
        if not is_lm_eval_folder(path):
            raise DataError(f"{path}: a folder without lm-evaluation-harness samples_*.jsonl files")
        frame = _lm_eval_candidate_responses(path, candidates, metric=metric, lm_filter=lm_filter)
        return candidate_response_data(frame, candidates, fit=fit, source=str(path))
    responses = load_long(path)
    return candidate_response_data(responses, candidates, fit=fit, source=str(path))
