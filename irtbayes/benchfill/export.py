"""Hand candidates to the evaluated systems: an lm-evaluation-harness task, or a CSV template to fill in.

:func:`export_lm_eval` writes a custom task in the layout of lm-evaluation-harness's own YAML tasks
(``dataset_path: json`` with a local JSONL file, as in ``lm_eval --include_path``). Every JSONL document
carries the candidate id twice, as ``id`` and ``candidate_id``; lm-eval copies each document verbatim into the
``doc`` field of its ``--log_samples`` output, so ``doc["candidate_id"]`` (or ``doc["id"]``) maps a sample
back to its candidate, and ``doc_id`` (the 0-based row of the JSONL file) does too, through
:attr:`LmEvalExport.doc_ids`. Run it with::

    lm_eval run --model ... --tasks irtbayes_benchfill --include_path <out_dir> --log_samples --output_path <dir>

:func:`export_csv_template` writes a long ``subject,item,response`` table with the response left blank, for
systems evaluated by other means; load it back with :func:`irtbayes.data.io.tabular.load_long` once filled in.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from irtbayes.core.errors import DataError, SpecError
from irtbayes.core.files import atomic_write_text

if TYPE_CHECKING:
    from irtbayes.benchfill.candidates import Candidate

__all__ = ["LmEvalExport", "export_csv_template", "export_lm_eval"]

OutputType = Literal["multiple_choice", "generate_until"]
_TASK_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True)
class LmEvalExport:
    """Paths written by :func:`export_lm_eval` and the JSONL row (lm-eval ``doc_id``) of each candidate.

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> from irtbayes.benchfill.export import export_lm_eval
    >>> export = export_lm_eval([Candidate(candidate_id="c1", text="q", answer="a", choices=("a", "b"))], tempfile.mkdtemp())
    >>> export.data_path.name, export.doc_ids["c1"]
    ('irtbayes_benchfill.jsonl', 0)
    """

    task_name: str
    yaml_path: Path
    data_path: Path
    doc_ids: dict[str, int]


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _task_yaml(task_name: str, data_file: str, output_type: OutputType) -> str:
    lines = [
        f"task: {task_name}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {_q(data_file)}",
        f"output_type: {output_type}",
        "test_split: test",
        f"doc_to_text: {_q('Question: {{question}}' + chr(10) + 'Answer:')}",
    ]
    if output_type == "multiple_choice":
        lines += [
            f"doc_to_choice: {_q('{{choices}}')}",
            "doc_to_target: answer",
            "metric_list:",
            "  - metric: acc",
            "    aggregation: mean",
            "    higher_is_better: true",
            "  - metric: acc_norm",
            "    aggregation: mean",
            "    higher_is_better: true",
        ]
    else:
        lines += [
            "num_fewshot: 0",
            f"doc_to_target: {_q('{{answer}}')}",
            "metric_list:",
            "  - metric: exact_match",
            "    aggregation: mean",
            "    higher_is_better: true",
            "    ignore_case: true",
            "    ignore_punctuation: false",
            "    regexes_to_ignore:",
            f"      - {_q(r'^\s+')}",
            f"      - {_q(r'\s+$')}",
            f"      - {_q(r'\.$')}",
            "generation_kwargs:",
            "  until:",
            f"    - {_q('Question:')}",
            f"    - {_q(chr(10) + chr(10))}",
            "  do_sample: false",
            "  temperature: 0.0",
            "  max_gen_toks: 64",
        ]
    lines += ["metadata:", "  version: 1.0", ""]
    return "\n".join(lines)


def export_lm_eval(
    candidates: Sequence[Candidate],
    out_dir: str | Path,
    *,
    task_name: str = "irtbayes_benchfill",
    output_type: OutputType = "multiple_choice",
    data_file: str | None = None,
) -> LmEvalExport:
    """Write an lm-evaluation-harness custom task: ``<task_name>.jsonl`` and ``<task_name>.yaml``.

    Documents are ``{"id", "candidate_id", "question", "choices", "answer"}`` with ``answer`` the index of the
    correct choice (multiple choice, metrics ``acc`` and ``acc_norm``), or ``{"id", "candidate_id",
    "question", "answer"}`` with the answer text (``generate_until``, metric ``exact_match`` ignoring case,
    surrounding white space and a final full stop).

    Parameters
    ----------
    candidates
        In the order of the JSONL rows.
    out_dir
        Created if needed.
    task_name
        The lm-eval task name (letters, digits, ``_``, ``.``, ``-``).
    output_type
        ``"multiple_choice"`` needs every candidate to have choices; ``"generate_until"`` refuses candidates
        with choices.
    data_file
        How the YAML names the JSONL file; default its absolute path. lm-eval resolves a relative path
        against its working directory, not against the YAML.

    Raises
    ------
    DataError
        No candidates, duplicate ids, or a candidate that does not fit ``output_type`` (named).

    Examples
    --------
    >>> import tempfile
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> from irtbayes.benchfill.export import export_lm_eval
    >>> items = [Candidate(candidate_id="c1", text="7 x 6 = ?", answer="42", choices=("41", "42", "43"))]
    >>> export = export_lm_eval(items, tempfile.mkdtemp())
    >>> export.task_name, export.yaml_path.name, export.doc_ids
    ('irtbayes_benchfill', 'irtbayes_benchfill.yaml', {'c1': 0})
    """
    if output_type not in ("multiple_choice", "generate_until"):
        raise SpecError(
            f"export_lm_eval: output_type must be 'multiple_choice' or 'generate_until', got {output_type!r}"
        )
    if not _TASK_NAME.match(task_name):
        raise SpecError(f"export_lm_eval: task name {task_name!r} may hold only letters, digits, '_', '.' and '-'")
    if not candidates:
        raise DataError("export_lm_eval: no candidates to export")
    docs = []
    doc_ids: dict[str, int] = {}
    for row, candidate in enumerate(candidates):
        cid = candidate.candidate_id
        if cid in doc_ids:
            raise DataError(f"export_lm_eval: candidate '{cid}' appears twice (positions {doc_ids[cid]} and {row})")
        doc_ids[cid] = row
        doc: dict[str, object] = {"id": cid, "candidate_id": cid, "question": candidate.text}
        if output_type == "multiple_choice":
            if candidate.choices is None:
                raise DataError(
                    f"export_lm_eval: candidate '{cid}' has no choices; export free-response candidates with "
                    "output_type='generate_until'"
                )
            doc["choices"] = list(candidate.choices)
            doc["answer"] = candidate.answer_index
        else:
            if candidate.choices is not None:
                raise DataError(
                    f"export_lm_eval: candidate '{cid}' is multiple choice; export it with "
                    "output_type='multiple_choice' (its choices would not be shown under 'generate_until')"
                )
            doc["answer"] = candidate.answer
        docs.append(doc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data_path = out / f"{task_name}.jsonl"
    yaml_path = out / f"{task_name}.yaml"
    atomic_write_text(data_path, "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs))
    reference = data_file if data_file is not None else str(data_path.resolve())
    atomic_write_text(yaml_path, _task_yaml(task_name, reference, output_type))
    return LmEvalExport(task_name=task_name, yaml_path=yaml_path, data_path=data_path, doc_ids=doc_ids)


def export_csv_template(candidates: Sequence[Candidate], subjects: Sequence[str], path: str | Path) -> Path:
    """Write a long CSV ``subject,item,response``: one row per (subject, candidate), the response blank.

    Fill in 1/0 (or a score in [0, 1]); rows left blank are read as missing responses.

    Raises
    ------
    DataError
        No candidates or subjects, or a duplicate or blank id.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> from irtbayes.benchfill.export import export_csv_template
    >>> items = [Candidate(candidate_id="c1", text="q", answer="a"), Candidate(candidate_id="c2", text="q", answer="b")]
    >>> path = export_csv_template(items, ["m1", "m2"], Path(tempfile.mkdtemp()) / "answers.csv")
    >>> print(path.read_text())
    subject,item,response
    m1,c1,
    m1,c2,
    m2,c1,
    m2,c2,
    """
    if not candidates:
        raise DataError("export_csv_template: no candidates")
    subject_ids = [str(s).strip() for s in subjects]
    if not subject_ids:
        raise DataError("export_csv_template: no subjects")
    for name, ids in (("subject", subject_ids), ("candidate", [c.candidate_id for c in candidates])):
        if any(not i for i in ids):
            raise DataError(f"export_csv_template: a blank {name} id")
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise DataError(f"export_csv_template: {name} id(s) {twice} appear more than once")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["subject", "item", "response"])
    for subject in subject_ids:
        for candidate in candidates:
            writer.writerow([subject, candidate.candidate_id, ""])
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, buffer.getvalue())
