"""BenchFill candidates: new or rewritten items aimed at a difficulty bin, validated and loaded.

A :class:`Candidate` is one proposed item. Every source (a file, a Python callable, an LLM behind an
OpenAI-compatible API) answers the same :class:`ProposalRequest` through :meth:`CandidateSource.propose`, and
(:mod:`~irtbayes.benchfill.sources`, :mod:`~irtbayes.benchfill.llm`) every record it yields passes through the same
validation (:func:`candidate_from_record`), so sources are
interchangeable.

Answers of multiple-choice candidates are stored as the exact text of the correct choice. A record may give
the answer as that text, as a letter (``"B"``) or as a 0-based index (``1``); the text is tried first, then the
letter, then the index.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from irtbayes.core.errors import DataError
from irtbayes.core.files import read_json_lines

__all__ = [
    "CANDIDATE_COLUMNS",
    "Candidate",
    "candidate_from_record",
    "candidate_id_for",
    "distinct_candidates",
    "items_table",
    "load_candidates",
]

log = logging.getLogger(__name__)

#: Columns (CSV) or keys (JSONL) of a candidate file; the first three are required.
CANDIDATE_COLUMNS: tuple[str, ...] = ("candidate_id", "text", "answer", "benchmark", "domain", "seed_item", "choices")
_REQUIRED = ("candidate_id", "text", "answer")


def candidate_id_for(text: str, answer: str) -> str:
    """Deterministic id of a generated candidate: ``bf-`` and the first 10 hex digits of sha256(text, answer).

    Text and answer are joined with a unit separator (U+001F) so that ("ab", "c") and ("a", "bc") differ.

    Examples
    --------
    The same question and answer always get the same id:

    >>> from irtbayes.benchfill.candidates import candidate_id_for
    >>> candidate_id_for("2 + 2 = ?", "4") == candidate_id_for("2 + 2 = ?", "4"), candidate_id_for("2 + 2 = ?", "4")[:3]
    (True, 'bf-')
    """
    digest = hashlib.sha256(f"{text}\x1f{answer}".encode()).hexdigest()
    return f"bf-{digest[:10]}"


@dataclass(frozen=True)
class Candidate:
    """One proposed item.

    Attributes
    ----------
    candidate_id
        Unique id; becomes the item id once the evaluated systems have answered it.
    text
        The question as shown to the systems.
    answer
        The reference answer; for multiple choice, the exact text of the correct choice.
    benchmark, domain
        Labels of the benchmark and domain the candidate is meant to join.
    seed_item
        Id of the existing item the candidate rewrites or was modelled on.
    choices
        The options of a multiple-choice item (a tuple, so the candidate stays hashable), else ``None``.
    source
        Where it came from: ``"file:<path>"``, ``"llm:<model>"``, ``"callable:<name>"``.
    prompt_hash
        sha256 of the exact chat messages that produced it (LLM sources), else ``None``.

    Examples
    --------
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> item = Candidate(candidate_id="bf-1", text="2 + 2 = ?", answer="4", benchmark="arith", choices=("3", "4", "5"))
    >>> item.to_dict()["choices"], item.benchmark
    (['3', '4', '5'], 'arith')
    """

    candidate_id: str
    text: str
    answer: str
    benchmark: str | None = None
    domain: str | None = None
    seed_item: str | None = None
    choices: tuple[str, ...] | None = None
    source: str = ""
    prompt_hash: str | None = None

    def __post_init__(self) -> None:
        if self.choices is not None and not isinstance(self.choices, tuple):
            object.__setattr__(self, "choices", tuple(self.choices))

    @property
    def n_options(self) -> int | None:
        """Number of choices of a multiple-choice candidate, else ``None``."""
        return None if self.choices is None else len(self.choices)

    @property
    def answer_index(self) -> int | None:
        """0-based position of the answer among the choices, or ``None`` for a free-response candidate."""
        if self.choices is None:
            return None
        if self.answer not in self.choices:
            raise DataError(f"candidate '{self.candidate_id}': answer {self.answer!r} is not one of its choices")
        return self.choices.index(self.answer)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``choices`` as a list)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**out, "choices": None if self.choices is None else list(self.choices)}


# ---------------------------------------------------------------------------------------------- validation
def _optional_text(value: Any, *, key: str, where: str) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise DataError(f"{where}: '{key}' must be text, got {type(value).__name__} {value!r}")
    text = str(value).strip()
    return text or None


def _scalar_text(value: Any) -> str:
    """An answer or id given as a JSON number keeps its written form (``3`` not ``3.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def parse_choices(value: Any, *, where: str) -> tuple[str, ...] | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        raw = value.strip()
        if not raw:
            return None
        if raw.startswith("["):
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as err:
                raise DataError(f"{where}: 'choices' looks like a JSON list but does not parse ({err.msg})") from None
        else:
            value = raw.split("|")
    if not isinstance(value, list | tuple):
        raise DataError(f"{where}: 'choices' must be a list of options, got {type(value).__name__}")
    options = []
    for k, option in enumerate(value):
        if isinstance(option, bool) or not isinstance(option, str | int | float):
            raise DataError(f"{where}: choice {k} must be text, got {option!r}")
        text = _scalar_text(option).strip()
        if not text:
            raise DataError(f"{where}: choice {k} is blank")
        options.append(text)
    if len(options) < 2:
        raise DataError(f"{where}: a multiple-choice candidate needs at least 2 choices, got {len(options)}")
    if len(set(options)) != len(options):
        twice = sorted({o for o in options if options.count(o) > 1})
        raise DataError(f"{where}: choices repeat {twice}")
    return tuple(options)


def _resolve_answer(answer: Any, choices: tuple[str, ...] | None, *, where: str) -> str:
    if answer is None or (isinstance(answer, float) and math.isnan(answer)) or isinstance(answer, bool):
        raise DataError(f"{where}: the candidate has no answer")
    if isinstance(answer, list | dict):
        raise DataError(f"{where}: 'answer' must be text or a number, got {type(answer).__name__}")
    if choices is None:
        text = _scalar_text(answer).strip()
        if not text:
            raise DataError(f"{where}: the candidate has no answer")
        return text
    if isinstance(answer, int):
        if 0 <= answer < len(choices):
            return choices[answer]
        raise DataError(f"{where}: answer index {answer} is outside the {len(choices)} choices")
    text = _scalar_text(answer).strip()
    if not text:
        raise DataError(f"{where}: the candidate has no answer")
    if text in choices:
        return text
    if len(text) == 1 and text.isalpha() and text.upper() < chr(ord("A") + len(choices)):
        return choices[ord(text.upper()) - ord("A")]
    if text.isdigit() and int(text) < len(choices):
        return choices[int(text)]
    raise DataError(f"{where}: answer {text!r} is not one of the choices {list(choices)} (nor a letter or an index)")


def candidate_from_record(
    record: Mapping[str, Any] | Candidate,
    *,
    where: str,
    source: str,
    prompt_hash: str | None = None,
    defaults: Mapping[str, Any] | None = None,
    require_id: bool = False,
) -> Candidate:
    """Validate one record (a dict from a file, a callable or an LLM reply) and build a :class:`Candidate`.

    Parameters
    ----------
    record
        Keys from :data:`CANDIDATE_COLUMNS`; unknown keys are ignored. A :class:`Candidate` is re-validated.
    where
        How messages name the record (``"cands.csv line 4"``, ``"my_fn() result #2"``).
    source, prompt_hash
        Recorded on the candidate unless the record carries its own.
    defaults
        Values for ``benchmark`` / ``domain`` when the record has none.
    require_id
        Refuse a record without ``candidate_id`` (files); otherwise the id is derived with
        :func:`candidate_id_for`.

    Raises
    ------
    DataError
        No text, no answer, an answer that is not among the choices, malformed choices, a blank id.

    Examples
    --------
    >>> from irtbayes.benchfill.candidates import candidate_from_record
    >>> record = {"text": "Name the capital of France.", "answer": "Paris", "benchmark": "geo"}
    >>> item = candidate_from_record(record, where="my list, item 1", source="file:my_list")
    >>> item.candidate_id.startswith("bf-"), item.benchmark, item.source
    (True, 'geo', 'file:my_list')
    >>> candidate_from_record({"text": "No answer"}, where="my list, item 2", source="file:my_list")
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: my list, item 2: the candidate has no answer
    """
    if isinstance(record, Candidate):
        record = record.to_dict()
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected a mapping with 'text' and 'answer', got {type(record).__name__}")
    defaults = defaults or {}
    text = _optional_text(record.get("text"), key="text", where=where)
    if text is None:
        raise DataError(f"{where}: the candidate has no text")
    choices = parse_choices(record.get("choices"), where=where)
    answer = _resolve_answer(record.get("answer"), choices, where=where)
    raw_id = record.get("candidate_id")
    if raw_id is None or (isinstance(raw_id, float) and math.isnan(raw_id)) or str(raw_id).strip() == "":
        if require_id:
            raise DataError(f"{where}: the candidate has no candidate_id")
        candidate_id = candidate_id_for(text, answer)
    else:
        candidate_id = _scalar_text(raw_id).strip()
        if "\n" in candidate_id or "\r" in candidate_id:
            raise DataError(f"{where}: candidate_id {candidate_id!r} contains a line break")

    def pick(key: str) -> str | None:
        value = _optional_text(record.get(key), key=key, where=where)
        return value if value is not None else _optional_text(defaults.get(key), key=key, where=where)

    return Candidate(
        candidate_id=candidate_id,
        text=text,
        answer=answer,
        benchmark=pick("benchmark"),
        domain=pick("domain"),
        seed_item=pick("seed_item"),
        choices=choices,
        source=_optional_text(record.get("source"), key="source", where=where) or source,
        prompt_hash=_optional_text(record.get("prompt_hash"), key="prompt_hash", where=where) or prompt_hash,
    )


# ---------------------------------------------------------------------------------------------- files
def _read_csv_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames
        if not header:
            raise DataError(f"{path}: the file is empty")
        columns = [h.strip() if h else "" for h in header]
        missing = [c for c in _REQUIRED if c not in columns]
        if missing:
            raise DataError(f"{path}: missing column(s) {missing}; the columns are {columns}")
        reader.fieldnames = columns
        records = []
        last = reader.line_num
        for row in reader:
            first = last + 1
            last = reader.line_num
            if None in row:
                raise DataError(f"{path} line {first}: more fields than the {len(columns)} columns of the header")
            if all((v or "").strip() == "" for v in row.values()):
                continue
            records.append((f"{path} line {first}", {k: (v if v != "" else None) for k, v in row.items()}))
    return records


def _read_jsonl_records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    records = [(f"{path} line {number}", record) for number, record in read_json_lines(path)]
    if records:
        missing = [c for c in _REQUIRED if all(c not in r for _, r in records)]
        if missing:
            raise DataError(f"{path}: no record has the key(s) {missing}; each line needs {list(_REQUIRED)}")
    return records


def distinct_candidates(placed: Iterable[tuple[str, Candidate]], *, where: str) -> list[Candidate]:
    """The candidates of ``(place, candidate)`` pairs, in order; a ``candidate_id`` seen twice raises
    DataError naming ``where`` and both places.

    Examples
    --------
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> same = Candidate(candidate_id="c1", text="Q", answer="A")
    >>> distinct_candidates([("line 2", same), ("line 4", same)], where="bank.csv")
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: bank.csv: candidate_id 'c1' appears twice (line 2 and line 4)
    """
    out: list[Candidate] = []
    seen: dict[str, str] = {}
    for place, candidate in placed:
        cid = candidate.candidate_id
        if cid in seen:
            raise DataError(f"{where}: candidate_id '{cid}' appears twice ({seen[cid]} and {place})")
        seen[cid] = place
        out.append(candidate)
    return out


def load_candidates(path: str | Path) -> list[Candidate]:
    """Read candidates from a CSV or JSONL file.

    Columns (CSV) or keys (JSONL): ``candidate_id``, ``text``, ``answer`` (required); ``benchmark``,
    ``domain``, ``seed_item``, ``choices`` (optional). In a CSV, ``choices`` is a JSON list
    (``["Paris", "Rome"]``) or options separated by ``|``.

    Returns
    -------
    list of Candidate
        In file order, each with ``source="file:<path>"``.

    Raises
    ------
    DataError
        Missing file or columns, empty file, a candidate without text or answer, duplicate ids (both lines
        named), a broken JSONL line; every message names the file and the line.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.candidates import load_candidates
    >>> path = Path(tempfile.mkdtemp()) / "candidates.csv"
    >>> _ = path.write_text("candidate_id,text,answer,benchmark\\nc1,What is 7 x 6?,42,arith\\nc2,What is 9 - 4?,5,arith\\n")
    >>> [(c.candidate_id, c.answer) for c in load_candidates(path)]
    [('c1', '42'), ('c2', '5')]
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a folder, expected a CSV or JSONL file of candidates")
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        records = _read_jsonl_records(path)
    elif suffix == ".csv":
        records = _read_csv_records(path)
    else:
        raise DataError(f"{path}: unknown file type '{suffix}' (expected .csv or .jsonl)")
    if not records:
        raise DataError(f"{path}: the file is empty (no candidates)")
    source = f"file:{path}"
    placed = (
        (where.removeprefix(f"{path} "), candidate_from_record(record, where=where, source=source, require_id=True))
        for where, record in records
    )
    out = distinct_candidates(placed, where=str(path))
    log.info("%s: %d candidates", path, len(out))
    return out


def items_table(candidates: Sequence[Candidate]) -> pd.DataFrame:
    """Item metadata of candidates, ready for ``ResponseData.from_long(..., items=...)``.

    Returns
    -------
    pandas.DataFrame
        Index ``item`` (the candidate ids); columns ``benchmark``, ``domain``, ``text``, ``answer``,
        ``source``, ``n_options``, ``seed_item``, ``prompt_hash``.

    Examples
    --------
    >>> from irtbayes.benchfill.candidates import Candidate, items_table
    >>> items_table([Candidate(candidate_id="c1", text="q", answer="a", benchmark="arith")])[["benchmark", "text", "answer"]]
         benchmark text answer
    item
    c1       arith    q      a
    """
    columns = ("benchmark", "domain", "text", "answer", "source", "n_options", "seed_item", "prompt_hash")
    rows = [{"item": c.candidate_id, **{k: getattr(c, k) for k in columns}} for c in candidates]
    table = pd.DataFrame(rows, columns=["item", *columns])
    table["n_options"] = table["n_options"].astype("Int64")
    return table.set_index("item")
