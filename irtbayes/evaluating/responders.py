"""Responders: where an adaptive test gets a new system's answers.

A *responder* is any callable ``responder(item_id) -> float`` that returns the system's response to one item of
the bank: 1.0 correct, 0.0 wrong, or a score in [0, 1]. Two are given here:

- :func:`file_responder`: answers already collected, looked up in a response file (or a
  :class:`~irtbayes.data.responses.ResponseData`), for replaying a test on a system that answered the whole bank;
- :class:`EndpointResponder`: a model behind an OpenAI-compatible chat API, asked each item as a question through
  :class:`~irtbayes.benchfill.llm.ChatClient` (with its cache and retries) and graded on its reply.

Grading (:class:`EndpointResponder`): a multiple-choice item is graded on the letter of the reply
(:func:`parse_letter`) against the key; a free-form item on a normalised exact match (:func:`normalise_answer`).
Item text is only ever sent to the model as text: nothing in an items file or a reply is evaluated.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from irtbayes.benchfill.candidates import parse_choices
from irtbayes.benchfill.llm import ChatClient, prompt_hash
from irtbayes.core.errors import DataError, listed
from irtbayes.core.files import read_json_lines
from irtbayes.data.columns import clean_ids
from irtbayes.data.io import load
from irtbayes.data.io.tabular import read_table
from irtbayes.data.responses import ResponseData

__all__ = [
    "EndpointResponder",
    "Exchange",
    "Responder",
    "file_responder",
    "normalise_answer",
    "parse_letter",
]

log = logging.getLogger(__name__)

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MC_INSTRUCTION = "Answer with the letter of the correct choice only."
_FREE_INSTRUCTION = "Answer with the short answer only, with no explanation."


class Responder(Protocol):
    """What an adaptive test asks for answers: ``responder(item_id) -> float``.

    The call returns the system's response to the item with that id: 1.0 correct, 0.0 wrong, or a score in
    [0, 1] for items scored by fractions. Any function or object with that call fits: :func:`file_responder`,
    :class:`EndpointResponder`, or a plain function of your own.

    Examples
    --------
    >>> from irtbayes.evaluating.responders import Responder
    >>> key = {"q1": 1.0, "q2": 0.0}
    >>> responder: Responder = key.__getitem__
    >>> responder("q1"), responder("q2")
    (1.0, 0.0)
    """

    def __call__(self, item_id: str, /) -> float: ...


# ================================================================================================ collected answers
def file_responder(source: str | Path | ResponseData, subject: str | None = None) -> Callable[[str], float]:
    """A responder that looks answers up in responses already collected.

    Parameters
    ----------
    source
        A response file that :func:`irtbayes.data.io.load` reads (a long or wide CSV or Parquet table, ...) or
        a :class:`~irtbayes.data.responses.ResponseData`.
    subject
        The subject (system) whose answers to give; ``None`` when ``source`` holds exactly one subject.

    Returns
    -------
    callable
        ``responder(item_id) -> float``: the subject's response to that item, in [0, 1].

    Raises
    ------
    DataError
        At once: an unreadable file, an unknown ``subject``, no ``subject`` when the file holds several, or
        several responses of the subject to one item (several conditions: take one with
        ``ResponseData.subset(conditions=[...])``). When called: an item the subject has no response to.
        Every message names the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.evaluating.responders import file_responder
    >>> path = Path(tempfile.mkdtemp()) / "answers.csv"
    >>> _ = path.write_text("subject,item,response\\nnew-model,q1,1\\nnew-model,q2,0\\n")
    >>> responder = file_responder(path)
    >>> responder("q1"), responder("q2")
    (1.0, 0.0)
    >>> responder("q9")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.DataError: ...answers.csv: subject 'new-model' has no response to item 'q9' (the file has no such item)
    """
    data = source if isinstance(source, ResponseData) else load(source)
    where = data.source if isinstance(source, ResponseData) else str(source)
    frame = data.responses
    present = [str(s) for s in pd.unique(frame["subject"].astype(str))]
    if subject is None:
        if len(present) != 1:
            raise DataError(
                f"{where}: holds {len(present)} subjects ({listed(present, 10)}); name the one to answer with "
                "(subject=...)"
            )
        subject = present[0]
    subject = str(subject)
    if subject not in present:
        raise DataError(f"{where}: no subject '{subject}'; the subjects are {listed(present, 10)}")
    own = frame.loc[(frame["subject"] == subject).to_numpy()]
    items = own["item"].astype(str)
    if items.duplicated().any():
        twice = items[items.duplicated()].iloc[0]
        raise DataError(
            f"{where}: subject '{subject}' has more than one response to item '{twice}' (conditions "
            f"{listed(data.conditions, 10)}); keep one condition with ResponseData.subset(conditions=[...])"
        )
    answers = dict(zip(items.tolist(), own["response"].astype(float).tolist(), strict=True))
    known_items = {str(i) for i in data.item_ids}
    log.info("%s: answers of subject '%s' to %d items", where, subject, len(answers))

    def respond(item_id: str) -> float:
        try:
            return answers[str(item_id)]
        except KeyError:
            hint = "" if str(item_id) in known_items else " (the file has no such item)"
            raise DataError(f"{where}: subject '{subject}' has no response to item '{item_id}'{hint}") from None

    return respond


# ========================================================================================================== grading
@functools.lru_cache(maxsize=32)
def _letter_patterns(n_choices: int | None) -> tuple[re.Pattern[str], re.Pattern[str]]:
    last = _LETTERS[(n_choices or 26) - 1]
    explicit = re.compile(r"(?i:\banswer)(?:\s+(?i:is))?\s*[:=\-]?\s*[(\[]?\**([A-Z])(?![A-Za-z0-9'’])")
    standalone = re.compile(rf"(?<![A-Za-z0-9'’])([A-{last}])(?![A-Za-z0-9'’])")
    return explicit, standalone


def parse_letter(reply: str, *, n_choices: int | None = None) -> str | None:
    """The letter of the choice a reply names, or ``None`` when it names none.

    Tried in turn: a reply that is one letter with only punctuation around it (``"c"``, ``"(C)"``, ``"C."``,
    ``"**C**"``); a letter stated as the answer (``"Answer: C"``, ``"the answer is (C)"``); else the first
    capital letter standing alone that is one of the choices' letters (A to the ``n_choices``-th letter; any of
    A-Z when ``n_choices`` is None), so a pronoun "I" is not read as choice I of a four-choice item.

    Parameters
    ----------
    reply
        The model's reply.
    n_choices
        Number of choices of the item (1 to 26).

    Returns
    -------
    str or None
        An upper-case letter.

    Examples
    --------
    >>> from irtbayes.evaluating.responders import parse_letter
    >>> [parse_letter(r) for r in ["B", "(c)", "D.", "Answer: A", "The answer is **C**.", "no idea"]]
    ['B', 'C', 'D', 'A', 'C', None]
    >>> parse_letter("I think it is B, not C", n_choices=4)
    'B'
    """
    text = reply.strip()
    alone = re.fullmatch(r"[^A-Za-z0-9]*([A-Za-z])[^A-Za-z0-9]*", text)
    if alone:
        return alone.group(1).upper()
    explicit, standalone = _letter_patterns(n_choices)
    for pattern in (explicit, standalone):
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_ANSWER_PREFIX = re.compile(r"^\s*(?:the\s+)?(?:final\s+)?answer\s*(?:is\b\s*:?|:)", re.IGNORECASE)


def normalise_answer(text: str) -> str:
    """A free-form answer reduced for an exact match: case folded, punctuation and the articles a/an/the
    removed, runs of white space made one space.

    Examples
    --------
    >>> from irtbayes.evaluating.responders import normalise_answer
    >>> normalise_answer("  The Eiffel   Tower! "), normalise_answer("U.S.A.")
    ('eiffel tower', 'usa')
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))
    return " ".join(_ARTICLES.sub(" ", text).split())


# ==================================================================================================== the items file
@dataclass(frozen=True)
class _Item:
    item: str
    text: str
    choices: tuple[str, ...] | None
    key: str  # the correct letter of a multiple-choice item, the normalised answer of a free-form one
    row: pd.Series


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _scalar_text(value: Any) -> str | None:
    """A cell as stripped text (an integral float without its ``.0``), or None when it is missing or not a scalar."""
    if isinstance(value, np.generic):
        value = value.item()
    if _missing(value) or isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    return str(int(value) if isinstance(value, float) and value.is_integer() else value).strip()


def _choices(value: Any, *, where: str) -> tuple[str, ...] | None:
    if isinstance(value, np.ndarray):  # a Parquet list
        value = value.tolist()
    if _missing(value):
        return None
    choices = parse_choices(value, where=where)
    if choices is not None and len(choices) > len(_LETTERS):
        raise DataError(f"{where}: {len(choices)} choices, more than the {len(_LETTERS)} letters A-Z")
    return choices


def _key(answer: Any, choices: tuple[str, ...] | None, *, where: str) -> str:
    text = _scalar_text(answer)
    if not text:
        raise DataError(
            f"{where}: column 'answer' is empty" + ("" if _missing(answer) else f" or not text ({answer!r})")
        )
    if choices is None:
        key = normalise_answer(text)
        if not key:
            raise DataError(f"{where}: answer {text!r} is empty once normalised (case, punctuation, articles)")
        return key
    if text in choices:
        return _LETTERS[choices.index(text)]
    if len(text) == 1 and text.upper() in _LETTERS[: len(choices)]:
        return text.upper()
    raise DataError(
        f"{where}: answer {text!r} is not among the choices {list(choices)} (nor one of the letters "
        f"A-{_LETTERS[len(choices) - 1]})"
    )


def _checked_items(frame: pd.DataFrame, *, source: str, places: Sequence[str]) -> dict[str, _Item]:
    """The items of a table, each checked; errors name ``source`` and the row's place (``line 3``, ``row 0``)."""
    missing = [c for c in ("item", "text", "answer") if c not in frame.columns]
    if missing:
        raise DataError(f"{source}: missing column(s) {missing}; the columns are {list(map(str, frame.columns))}")
    if len(frame) == 0:
        raise DataError(f"{source}: no items (the table is empty)")
    ids = clean_ids(frame["item"], column="item", source=source, row=lambda i: places[i])
    items: dict[str, _Item] = {}
    seen: dict[str, str] = {}
    for k, item_id in enumerate(ids.tolist()):
        where = f"{source} {places[k]}"
        if item_id in seen:
            raise DataError(f"{source}: item '{item_id}' appears twice ({seen[item_id]} and {places[k]})")
        seen[item_id] = places[k]
        row = frame.iloc[k]
        text = _scalar_text(row["text"])
        if not text:
            raise DataError(f"{where}: column 'text' is empty (item '{item_id}')")
        choices = _choices(row["choices"] if "choices" in frame.columns else None, where=f"{where}, column 'choices'")
        key = _key(row["answer"], choices, where=where)
        items[item_id] = _Item(item=item_id, text=text, choices=choices, key=key, row=row)
    return items


def _read_items(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """An items file as a table of text cells, and how messages name each row."""
    if not path.is_file():
        raise DataError(f"{path}: no such file" if not path.exists() else f"{path}: is a folder, expected a file")
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".jsonlines", ".ndjson"}:
        records = read_json_lines(path)
        if not records:
            raise DataError(f"{path}: the file is empty (no items)")
        return pd.DataFrame([record for _, record in records]), [f"line {number}" for number, _ in records]
    if suffix in {".parquet", ".pq"}:
        frame = read_table(path)
        return frame, [f"row {k}" for k in range(len(frame))]
    if suffix not in {".csv", ".tsv"}:
        raise DataError(f"{path}: unknown file type '{suffix}' (expected .csv, .tsv, .parquet or .jsonl)")
    try:  # every cell as text, so that an answer "3.50" stays "3.50"
        frame = pd.read_csv(
            path, sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False, encoding="utf-8-sig"
        )
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as err:
        raise DataError(f"{path}: could not read the file as a table ({err})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    frame = frame.where(frame.ne(""), None)
    return frame, [f"line {k + 2}" for k in range(len(frame))]


# ================================================================================================ the chat endpoint
@dataclass(frozen=True)
class Exchange:
    """One question put to the endpoint and its grading.

    Attributes
    ----------
    item
        The item id.
    prompt_hash
        sha256 of the messages sent (:func:`irtbayes.benchfill.llm.prompt_hash`).
    reply
        The model's reply text.
    parsed
        The letter read from the reply (multiple choice; ``None`` if none) or the normalised reply (free form).
    response
        The graded response in [0, 1].

    Examples
    --------
    :attr:`EndpointResponder.log` holds these; as a table:

    >>> from dataclasses import asdict
    >>> from irtbayes.evaluating.responders import Exchange
    >>> exchanges = [Exchange(item="q1", prompt_hash="9f2c", reply="Answer: B", parsed="B", response=1.0)]
    >>> pd.DataFrame([asdict(e) for e in exchanges])[["item", "parsed", "response"]]
      item parsed  response
    0   q1      B       1.0
    """

    item: str
    prompt_hash: str
    reply: str
    parsed: str | None
    response: float


class EndpointResponder:
    """A responder that asks a model behind an OpenAI-compatible chat API each item and grades its reply.

    Each call sends one user message (after an optional system message): the question, then its choices
    lettered ``A. ...``, ``B. ...`` and an instruction to answer with the letter only; or, for a free-form item,
    an instruction to give the short answer only. The request is ``client.complete(messages, temperature=0)``,
    so the client's cache makes a rerun free and its retries absorb transient failures (a failure that
    remains raises :class:`~irtbayes.benchfill.llm.ChatAPIError`). The reply is graded by :meth:`grade` and
    every exchange is appended to :attr:`log`.

    Parameters
    ----------
    client
        The :class:`~irtbayes.benchfill.llm.ChatClient` of the system under test.
    items
        One row per item: ``item`` (the id; or the index, when it is named ``item``), ``text`` (the question),
        optional ``choices`` (a list of strings, a string holding a JSON list, or options separated by ``|``;
        empty for a free-form item) and ``answer`` (the correct choice's text or letter, or the answer text of a
        free-form item). ``ResponseData.items`` with a ``choices`` column fits.
    system_prompt
        A system message sent before each question; ``None`` sends none.
    grader
        ``grader(reply, row) -> float`` replacing the grading (``row`` is the item's row of ``items``); it must
        return a value in [0, 1].
    source, rows
        How messages name ``items`` (a file path, for :meth:`from_file`) and each of its rows (default
        ``"row 0"``, ``"row 1"``, ...; file lines, for :meth:`from_file`).

    Attributes
    ----------
    log : list of Exchange
        Every exchange so far, in order.

    Raises
    ------
    DataError
        A missing column, a duplicate or empty id, an empty question, malformed choices or an answer not among
        the choices; each message names ``source`` and the row.

    Examples
    --------
    Building the prompt sends nothing; only a call asks the server:

    >>> from irtbayes.benchfill.llm import ChatClient
    >>> from irtbayes.evaluating.responders import EndpointResponder
    >>> items = pd.DataFrame(
    ...     {
    ...         "item": ["q1", "q2"],
    ...         "text": ["What is the capital of France?", "What is 7 x 6?"],
    ...         "choices": ["Rome|Paris|Madrid", None],
    ...         "answer": ["Paris", "42"],
    ...     }
    ... )
    >>> responder = EndpointResponder(ChatClient("http://127.0.0.1:8000/v1", "new-model", api_key_env=None), items)
    >>> print(responder.messages("q1")[-1]["content"])
    What is the capital of France?
    <BLANKLINE>
    A. Rome
    B. Paris
    C. Madrid
    <BLANKLINE>
    Answer with the letter of the correct choice only.
    >>> responder.grade("q1", "Answer: B"), responder.grade("q1", "(A)"), responder.grade("q2", "42.")
    (1.0, 0.0, 1.0)
    """

    def __init__(
        self,
        client: ChatClient,
        items: pd.DataFrame,
        *,
        system_prompt: str | None = None,
        grader: Callable[[str, pd.Series], float] | None = None,
        source: str = "<items table>",
        rows: Sequence[str] | None = None,
    ) -> None:
        if not isinstance(items, pd.DataFrame):
            raise DataError(f"{source}: expected a pandas DataFrame of items, got {type(items).__name__}")
        if "item" not in items.columns and items.index.name == "item":
            items = items.reset_index()
        items = items.reset_index(drop=True)
        if rows is None:
            rows = [f"row {k}" for k in range(len(items))]
        elif len(rows) != len(items):
            raise DataError(f"{source}: {len(rows)} row names for {len(items)} rows")
        self.client = client
        self.system_prompt = system_prompt
        self.grader = grader
        self.source = source
        self._items = _checked_items(items, source=source, places=rows)
        self.log: list[Exchange] = []

    @classmethod
    def from_file(
        cls,
        client: ChatClient,
        path: str | Path,
        *,
        system_prompt: str | None = None,
        grader: Callable[[str, pd.Series], float] | None = None,
    ) -> EndpointResponder:
        """Read the items from a CSV, TSV, Parquet or JSON Lines file (columns or keys as ``items`` of the class).

        Every cell of a CSV is read as text. Errors name the file and the line (CSV, JSONL; the header is line 1)
        or the row (Parquet, from 0).

        Examples
        --------
        >>> import tempfile
        >>> from pathlib import Path
        >>> from irtbayes.benchfill.llm import ChatClient
        >>> from irtbayes.evaluating.responders import EndpointResponder
        >>> path = Path(tempfile.mkdtemp()) / "items.csv"
        >>> _ = path.write_text('item,text,choices,answer\\nq1,Pick the prime.,"[""4"", ""6"", ""7""]",C\\n')
        >>> client = ChatClient("http://127.0.0.1:8000/v1", "new-model", api_key_env=None)
        >>> EndpointResponder.from_file(client, path).item_ids
        ('q1',)
        """
        path = Path(path)
        frame, rows = _read_items(path)
        responder = cls(client, frame, system_prompt=system_prompt, grader=grader, source=str(path), rows=rows)
        log.info("%s: %d items to ask %s", path, len(responder.item_ids), client.model)
        return responder

    def __repr__(self) -> str:
        return f"EndpointResponder({self.client!r}, {len(self._items)} items from {self.source})"

    @property
    def item_ids(self) -> tuple[str, ...]:
        """The ids of the items this responder can ask, in table order."""
        return tuple(self._items)

    def _item(self, item_id: str) -> _Item:
        try:
            return self._items[str(item_id)]
        except KeyError:
            raise DataError(
                f"{self.source}: unknown item '{item_id}'; the {len(self._items)} items are {listed(self._items, 10)}"
            ) from None

    def messages(self, item_id: str) -> list[dict[str, str]]:
        """The chat messages that ask item ``item_id``.

        Returns
        -------
        list of dict
            ``[{"role": "system", ...}]`` (when there is a system prompt) and ``{"role": "user", ...}``.
        """
        item = self._item(item_id)
        parts = [item.text]
        if item.choices is not None:
            parts.append("\n".join(f"{_LETTERS[k]}. {choice}" for k, choice in enumerate(item.choices)))
            parts.append(_MC_INSTRUCTION)
        else:
            parts.append(_FREE_INSTRUCTION)
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*messages, {"role": "user", "content": "\n\n".join(parts)}]

    def _graded(self, item: _Item, reply: str) -> tuple[str | None, float]:
        if item.choices is not None:
            parsed = parse_letter(reply, n_choices=len(item.choices))
            right = parsed == item.key
        else:
            parsed = normalise_answer(_ANSWER_PREFIX.sub("", reply, count=1))
            right = parsed == item.key
        if self.grader is None:
            return parsed, float(right)
        value = self.grader(reply, item.row)
        try:
            response = float(value)
        except (TypeError, ValueError):
            response = math.nan
        if not 0.0 <= response <= 1.0:
            raise DataError(f"grader: returned {value!r} for item '{item.item}'; a response must be in [0, 1]")
        return parsed, response

    def grade(self, item_id: str, reply: str) -> float:
        """The response (in [0, 1]) that ``reply`` earns on item ``item_id``.

        Multiple choice: 1.0 when the letter read by :func:`parse_letter` is the key's. Free form: 1.0 when the
        reply, less a leading ``Answer:`` or ``The answer is``, equals the answer once both are normalised by
        :func:`normalise_answer`. A ``grader`` given to the responder decides instead.
        """
        return self._graded(self._item(item_id), reply)[1]

    def __call__(self, item_id: str) -> float:
        """Ask item ``item_id``, grade the reply, record the exchange in :attr:`log` and return the response."""
        item = self._item(item_id)
        messages = self.messages(item.item)
        reply = self.client.complete(messages, temperature=0)
        parsed, response = self._graded(item, reply)
        self.log.append(
            Exchange(item=item.item, prompt_hash=prompt_hash(messages), reply=reply, parsed=parsed, response=response)
        )
        log.debug("%s: item '%s' answered %r, graded %g", self.client.model, item.item, parsed, response)
        return response
