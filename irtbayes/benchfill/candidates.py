"""BenchFill candidates: new or rewritten items aimed at a difficulty bin, and the sources that propose them.

A :class:`Candidate` is one proposed item. Every source (a file, a Python callable, an LLM behind an
OpenAI-compatible API) answers the same :class:`ProposalRequest` through :meth:`CandidateSource.propose`, and
every record it yields passes through the same validation (:func:`candidate_from_record`), so sources are
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import pandas as pd

from irtbayes.errors import DataError, SpecError
from irtbayes.files import read_json_lines

if TYPE_CHECKING:
    from irtbayes.benchfill.client import ChatClient

__all__ = [
    "CANDIDATE_COLUMNS",
    "CallableSource",
    "Candidate",
    "CandidateSource",
    "FileSource",
    "LLMSource",
    "Proposal",
    "ProposalRequest",
    "Rejection",
    "SeedItem",
    "candidate_from_record",
    "candidate_id_for",
    "items_table",
    "load_candidates",
    "select_seeds",
]

log = logging.getLogger(__name__)

#: Columns (CSV) or keys (JSONL) of a candidate file; the first three are required.
CANDIDATE_COLUMNS: tuple[str, ...] = ("candidate_id", "text", "answer", "benchmark", "domain", "seed_item", "choices")
_REQUIRED = ("candidate_id", "text", "answer")


def candidate_id_for(text: str, answer: str) -> str:
    """Deterministic id of a generated candidate: ``bf-`` and the first 10 hex digits of sha256(text, answer).

    Text and answer are joined with a unit separator (U+001F) so that ("ab", "c") and ("a", "bc") differ.
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
        return {
            "candidate_id": self.candidate_id,
            "text": self.text,
            "answer": self.answer,
            "benchmark": self.benchmark,
            "domain": self.domain,
            "seed_item": self.seed_item,
            "choices": None if self.choices is None else list(self.choices),
            "source": self.source,
            "prompt_hash": self.prompt_hash,
        }


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


def _parse_choices(value: Any, *, where: str) -> tuple[str, ...] | None:
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
    """
    if isinstance(record, Candidate):
        record = record.to_dict()
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected a mapping with 'text' and 'answer', got {type(record).__name__}")
    defaults = defaults or {}
    text = _optional_text(record.get("text"), key="text", where=where)
    if text is None:
        raise DataError(f"{where}: the candidate has no text")
    choices = _parse_choices(record.get("choices"), where=where)
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
    out: list[Candidate] = []
    seen: dict[str, str] = {}
    for where, record in records:
        candidate = candidate_from_record(record, where=where, source=f"file:{path}", require_id=True)
        if candidate.candidate_id in seen:
            raise DataError(
                f"{path}: candidate_id '{candidate.candidate_id}' appears twice "
                f"({seen[candidate.candidate_id].removeprefix(f'{path} ')} and {where.removeprefix(f'{path} ')})"
            )
        seen[candidate.candidate_id] = where
        out.append(candidate)
    log.info("%s: %d candidates", path, len(out))
    return out


def items_table(candidates: Sequence[Candidate]) -> pd.DataFrame:
    """Item metadata of candidates, ready for ``ResponseData.from_long(..., items=...)``.

    Returns
    -------
    pandas.DataFrame
        Index ``item`` (the candidate ids); columns ``benchmark``, ``domain``, ``text``, ``answer``,
        ``source``, ``n_options``, ``seed_item``, ``prompt_hash``.
    """
    rows = [
        {
            "item": c.candidate_id,
            "benchmark": c.benchmark,
            "domain": c.domain,
            "text": c.text,
            "answer": c.answer,
            "source": c.source,
            "n_options": c.n_options,
            "seed_item": c.seed_item,
            "prompt_hash": c.prompt_hash,
        }
        for c in candidates
    ]
    table = pd.DataFrame(
        rows,
        columns=["item", "benchmark", "domain", "text", "answer", "source", "n_options", "seed_item", "prompt_hash"],
    )
    table["n_options"] = table["n_options"].astype("Int64")
    return table.set_index("item")


# ---------------------------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class SeedItem:
    """An existing item shown to a generator, with its posterior difficulty.

    ``difficulty_ci_low`` / ``difficulty_ci_high`` bound a credible interval (probability recorded on the
    :class:`ProposalRequest` as ``ci_prob``).
    """

    item: str
    text: str
    difficulty_mean: float
    difficulty_ci_low: float
    difficulty_ci_high: float
    answer: str | None = None
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.choices is not None and not isinstance(self.choices, tuple):
            object.__setattr__(self, "choices", tuple(self.choices))


@dataclass(frozen=True)
class ProposalRequest:
    """What a source is asked for: ``n`` items whose difficulty lies in ``[target_lo, target_hi)``.

    Attributes
    ----------
    target_lo, target_hi
        The target difficulty interval, on the ability scale.
    target_bin
        Index of the target bin in the audit's binning.
    n
        Number of candidates wanted.
    benchmark, domain
        The benchmark and domain the candidates should join (copied onto candidates that carry none).
    seeds
        Existing items in or next to the target bin (see :func:`select_seeds`).
    n_choices
        Ask for multiple-choice items with this many options; ``None`` for free response.
    ci_prob
        Probability of the seeds' difficulty intervals.
    """

    target_lo: float
    target_hi: float
    target_bin: int
    n: int
    benchmark: str | None = None
    domain: str | None = None
    seeds: tuple[SeedItem, ...] = ()
    n_choices: int | None = None
    ci_prob: float = 0.9

    def __post_init__(self) -> None:
        if not (math.isfinite(self.target_lo) and math.isfinite(self.target_hi)) or self.target_lo >= self.target_hi:
            raise SpecError(
                f"ProposalRequest: the target interval [{self.target_lo}, {self.target_hi}) must be finite with lo < hi"
            )
        if int(self.n) != self.n or self.n < 1:
            raise SpecError(f"ProposalRequest: n must be a positive integer, got {self.n!r}")
        if self.n_choices is not None and self.n_choices < 2:
            raise SpecError(f"ProposalRequest: n_choices must be at least 2, got {self.n_choices}")
        if not isinstance(self.seeds, tuple):
            object.__setattr__(self, "seeds", tuple(self.seeds))

    @property
    def defaults(self) -> dict[str, Any]:
        """Labels copied onto candidates that carry none."""
        return {"benchmark": self.benchmark, "domain": self.domain}


def select_seeds(
    table: pd.DataFrame,
    *,
    target_lo: float,
    target_hi: float,
    max_seeds: int = 8,
    items: pd.DataFrame | None = None,
) -> tuple[SeedItem, ...]:
    """Choose existing items to show a generator: those inside the target interval and its nearest neighbours.

    Up to one item just below and one just above the interval are always kept when they exist (so the
    generator sees both an easier and a harder example), the rest of the places go to items inside the
    interval (closest to its centre first), and any places left alternate between the next nearest items
    below and above. Items without text cannot be shown and are passed over.

    Parameters
    ----------
    table
        One row per item (index = item id, or an ``item`` column) with the posterior difficulty as columns
        ``mean``, ``ci_low``, ``ci_high`` or ``difficulty_mean``, ``difficulty_ci_low``,
        ``difficulty_ci_high`` (the layout of ``Fit.items_table()``); ``text`` and optional ``answer`` and
        ``choices`` here or in ``items``.
    items
        Item metadata indexed by item id (e.g. ``ResponseData.items``), supplying ``text``, ``answer``,
        ``choices`` where ``table`` lacks them.

    Returns
    -------
    tuple of SeedItem
        Ordered by posterior mean difficulty.
    """
    if "item" in table.columns:
        table = table.set_index("item")
    table = table.copy()
    table.index = table.index.astype(str)
    if "mean" not in table.columns and "difficulty_mean" in table.columns:
        table = table.rename(columns={f"difficulty_{c}": c for c in ("mean", "ci_low", "ci_high")})
    if items is not None:
        meta = items.set_index("item") if "item" in items.columns else items
        meta = meta.set_axis(meta.index.astype(str))
        for column in ("text", "answer", "choices"):
            if column in meta.columns and column not in table.columns:
                table[column] = meta[column].reindex(table.index)
    missing = [c for c in ("mean", "ci_low", "ci_high", "text") if c not in table.columns]
    if missing:
        raise DataError(f"select_seeds: the difficulty table lacks column(s) {missing}; it has {list(table.columns)}")
    if max_seeds < 1:
        raise SpecError(f"select_seeds: max_seeds must be at least 1, got {max_seeds}")
    shown = table["text"].notna() & (table["text"].astype("string").str.strip() != "")
    if not shown.all():
        log.info("select_seeds: %d item(s) have no text and cannot be shown", int((~shown).sum()))
        table = table.loc[shown.to_numpy()]
    means = table["mean"].astype(float)
    centre = 0.5 * (target_lo + target_hi)
    inside = means[(means >= target_lo) & (means < target_hi)]
    inside = inside.iloc[(inside - centre).abs().argsort(kind="stable")]
    below = means[means < target_lo].sort_values(ascending=False, kind="stable")
    above = means[means >= target_hi].sort_values(kind="stable")
    reserve: list[str] = []
    if max_seeds >= 3:
        if len(below):
            reserve.append(below.index[0])
            below = below.iloc[1:]
        if len(above):
            reserve.append(above.index[0])
            above = above.iloc[1:]
    chosen = [*inside.index[: max_seeds - len(reserve)], *reserve]
    queues = [list(below.index), list(above.index)]
    turn = 0
    while len(chosen) < max_seeds and (queues[0] or queues[1]):
        if queues[turn]:
            chosen.append(queues[turn].pop(0))
        turn = 1 - turn
    seeds = []
    for item in sorted(dict.fromkeys(chosen), key=lambda i: float(means[i])):
        row = table.loc[item]
        answer = row.get("answer") if "answer" in table.columns else None
        choices = row.get("choices") if "choices" in table.columns else None
        seeds.append(
            SeedItem(
                item=str(item),
                text=str(row["text"]),
                difficulty_mean=float(row["mean"]),
                difficulty_ci_low=float(row["ci_low"]),
                difficulty_ci_high=float(row["ci_high"]),
                answer=None if answer is None or pd.isna(answer) else str(answer),
                choices=_parse_choices(choices, where=f"select_seeds item '{item}'") if choices is not None else None,
            )
        )
    return tuple(seeds)


# ---------------------------------------------------------------------------------------------- sources
@dataclass(frozen=True)
class Rejection:
    """A proposed item (or a whole reply) that did not become a candidate, and why."""

    reason: str
    source: str
    target_bin: int
    record: Mapping[str, Any] | None = None
    prompt_hash: str | None = None


@dataclass(frozen=True)
class Proposal:
    """What one :meth:`LLMSource.generate` call produced: candidates and rejections."""

    candidates: list[Candidate]
    rejections: list[Rejection] = field(default_factory=list)


@runtime_checkable
class CandidateSource(Protocol):
    """Anything that proposes candidates for a request."""

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Return candidates aimed at ``request``'s target interval."""
        ...


def _label_matches(candidate: Candidate, request: ProposalRequest) -> bool:
    for key in ("benchmark", "domain"):
        wanted, have = getattr(request, key), getattr(candidate, key)
        if wanted is not None and have is not None and wanted != have:
            return False
    return True


class FileSource:
    """Candidates written by hand or by another tool, read with :func:`load_candidates`.

    The file is a pool: each :meth:`propose` hands out up to ``request.n`` candidates whose benchmark and
    domain fit the request (a candidate without a label fits any) and that this source has not handed out
    before, in file order. :meth:`reset` starts over.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.candidates = load_candidates(self.path)
        self._given: set[str] = set()

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Up to ``request.n`` not yet proposed candidates matching the request's labels."""
        out: list[Candidate] = []
        for candidate in self.candidates:
            if len(out) == request.n:
                break
            if candidate.candidate_id in self._given or not _label_matches(candidate, request):
                continue
            labelled = candidate_from_record(
                candidate, where=str(self.path), source=candidate.source, defaults=request.defaults
            )
            out.append(labelled)
            self._given.add(candidate.candidate_id)
        if len(out) < request.n:
            log.info("%s: %d of the %d candidates asked for are left in the file", self.path, len(out), request.n)
        return out

    def reset(self) -> None:
        """Forget which candidates were handed out."""
        self._given.clear()


class CallableSource:
    """Wrap a Python callable ``fn(request) -> iterable of dicts or Candidates``.

    Each result is validated like a file record (:func:`candidate_from_record`); a record without
    ``candidate_id`` gets the deterministic id from :func:`candidate_id_for`. ``source`` is
    ``"callable:<name>"`` unless a record says otherwise.
    """

    def __init__(
        self, fn: Callable[[ProposalRequest], Iterable[Mapping[str, Any] | Candidate]], *, name: str | None = None
    ) -> None:
        if not callable(fn):
            raise SpecError(f"CallableSource: expected a callable, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Call the function and validate what it returns.

        Raises
        ------
        DataError
            A result that is not a valid candidate, or two results with the same id (both named).
        """
        results = self.fn(request)
        if results is None or isinstance(results, str | bytes | Mapping):
            raise DataError(f"callable '{self.name}': expected a list of candidates, got {type(results).__name__}")
        out: list[Candidate] = []
        seen: dict[str, int] = {}
        for k, record in enumerate(results):
            candidate = candidate_from_record(
                record,
                where=f"callable '{self.name}' result #{k}",
                source=f"callable:{self.name}",
                defaults=request.defaults,
            )
            if candidate.candidate_id in seen:
                raise DataError(
                    f"callable '{self.name}': results #{seen[candidate.candidate_id]} and #{k} have the same "
                    f"candidate_id '{candidate.candidate_id}'"
                )
            seen[candidate.candidate_id] = k
            out.append(candidate)
        return out


class LLMSource:
    """Candidates written by a language model behind an OpenAI-compatible chat API.

    Each :meth:`propose` asks for ``request.n`` items in batches of at most ``n_per_call`` (batches run
    concurrently within the client's limit). A reply that is not the JSON asked for, or holds an invalid item,
    is answered with the error and asked again, up to ``max_attempts`` replies per batch; what still fails is
    recorded in :attr:`rejections` with its reason (and logged), never dropped silently. Items beyond the number
    asked for, and items identical to a seed item or to an earlier candidate, are rejected too. An HTTP failure
    (:class:`~irtbayes.benchfill.client.ChatAPIError`) propagates; replies received before it stay in the
    client's cache, so a rerun resumes at no cost.

    Parameters
    ----------
    client
        A :class:`~irtbayes.benchfill.client.ChatClient`.
    max_attempts
        Replies per batch before giving up on it.
    n_per_call
        Items asked for in one conversation.
    temperature
        Sampling temperature sent with each request.
    system
        Replaces the default system message.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        max_attempts: int = 3,
        n_per_call: int = 10,
        temperature: float = 0.7,
        system: str | None = None,
    ) -> None:
        if max_attempts < 1:
            raise SpecError(f"LLMSource: max_attempts must be at least 1, got {max_attempts}")
        if n_per_call < 1:
            raise SpecError(f"LLMSource: n_per_call must be at least 1, got {n_per_call}")
        self.client = client
        self.max_attempts = max_attempts
        self.n_per_call = n_per_call
        self.temperature = temperature
        self.system = system
        self.rejections: list[Rejection] = []

    @property
    def source(self) -> str:
        return f"llm:{self.client.model}"

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Candidates for ``request``; rejections are added to :attr:`rejections`."""
        return self.generate(request).candidates

    def generate(self, request: ProposalRequest) -> Proposal:
        """Candidates and rejections for ``request`` (the rejections are also added to :attr:`rejections`)."""
        from concurrent.futures import ThreadPoolExecutor

        sizes = [min(self.n_per_call, request.n - start) for start in range(0, request.n, self.n_per_call)]
        batches = [(k, len(sizes), size) for k, size in enumerate(sizes)]
        workers = max(1, min(len(batches), self.client.concurrency))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(lambda b: self._conversation(request, *b), batches))
        candidates: list[Candidate] = []
        rejections: list[Rejection] = []
        seen: dict[str, str] = {}
        seed_texts = {" ".join(s.text.split()).casefold(): s.item for s in request.seeds}
        for found, rejected in results:
            rejections.extend(rejected)
            for candidate in found:
                copy_of = seed_texts.get(" ".join(candidate.text.split()).casefold())
                if copy_of is not None:
                    reason = f"the text repeats seed item '{copy_of}' word for word"
                elif candidate.candidate_id in seen:
                    reason = f"duplicate of candidate '{candidate.candidate_id}' (same text and answer)"
                else:
                    seen[candidate.candidate_id] = candidate.text
                    candidates.append(candidate)
                    continue
                rejections.append(
                    Rejection(
                        reason=reason,
                        source=self.source,
                        target_bin=request.target_bin,
                        record=candidate.to_dict(),
                        prompt_hash=candidate.prompt_hash,
                    )
                )
        for rejection in rejections:
            log.warning(
                "%s: rejected a proposal for bin %d: %s", rejection.source, rejection.target_bin, rejection.reason
            )
        self.rejections.extend(rejections)
        log.info(
            "%s: %d candidates and %d rejections for bin %d",
            self.source,
            len(candidates),
            len(rejections),
            request.target_bin,
        )
        return Proposal(candidates=candidates, rejections=rejections)

    def _conversation(
        self, request: ProposalRequest, batch: int, n_batches: int, size: int
    ) -> tuple[list[Candidate], list[Rejection]]:
        from irtbayes.benchfill import prompts

        messages = prompts.build_messages(request, n=size, batch=batch, n_batches=n_batches, system=self.system)
        problem = ""
        for attempt in range(1, self.max_attempts + 1):
            content = self.client.complete(messages, temperature=self.temperature)
            digest = prompts.prompt_hash(messages)
            try:
                records = prompts.parse_reply(content)
            except prompts.ReplyError as err:
                problem = str(err)
                records = None
            if records is not None:
                good: list[Candidate] = []
                bad: list[tuple[Any, str]] = []
                for k, record in enumerate(records):
                    shape = prompts.check_item(record, index=k, n_choices=request.n_choices)
                    if shape is not None:
                        bad.append((record, shape))
                        continue
                    try:
                        good.append(
                            candidate_from_record(
                                {key: record.get(key) for key in ("text", "answer", "choices", "seed_item")},
                                where=f"item {k}",
                                source=self.source,
                                prompt_hash=digest,
                                defaults=request.defaults,
                            )
                        )
                    except DataError as err:
                        bad.append((record, str(err)))
                if not bad or attempt == self.max_attempts:
                    bad += [(c.to_dict(), f"surplus item ({size} asked for)") for c in good[size:]]
                    rejected = [
                        Rejection(
                            reason=reason
                            if reason.startswith("surplus")
                            else f"invalid item after {attempt} replies: {reason}",
                            source=self.source,
                            target_bin=request.target_bin,
                            record=record if isinstance(record, dict) else {"item": record},
                            prompt_hash=digest,
                        )
                        for record, reason in bad
                    ]
                    good = good[:size]
                    return good, rejected
                problem = "; ".join(reason for _, reason in bad)
            log.info(
                "%s: reply %d of %d for bin %d could not be used (%s)",
                self.source,
                attempt,
                self.max_attempts,
                request.target_bin,
                problem,
            )
            if attempt < self.max_attempts:
                messages = [*messages, {"role": "assistant", "content": content}, prompts.feedback_message(problem)]
        rejection = Rejection(
            reason=f"no usable reply after {self.max_attempts} attempts: {problem}",
            source=self.source,
            target_bin=request.target_bin,
            record={"reply": content},
            prompt_hash=prompts.prompt_hash(messages),
        )
        return [], [rejection]
