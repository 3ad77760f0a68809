"""The BenchFill prompt: rewrite seed items toward a target difficulty, and parse the reply.

The user message shows existing items whose posterior difficulty lies in or next to the target interval,
each with its difficulty and whether it is easier or harder than the target, states the target in words and
numbers, and asks for items in a strict JSON format::

    {"items": [{"text": "...", "answer": "...", "choices": ["...", "..."], "seed_item": "..."}]}

:func:`parse_reply` accepts that object, bare or inside a Markdown code fence (```json ... ```). A reply it
cannot use raises :class:`ReplyError`, whose message is fed back to the model by
:class:`~irtbayes.benchfill.llm.LLMSource` (:func:`feedback_message`).

The difficulty scale is the ability scale of the fitted model, on which the evaluated systems' abilities have
mean 0 and standard deviation 1: a system whose ability equals an item's difficulty answers it correctly with
probability 1/2.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from irtbayes.core.errors import IrtbayesError

if TYPE_CHECKING:
    from irtbayes.benchfill.sources import ProposalRequest, SeedItem

__all__ = [
    "SYSTEM_PROMPT",
    "ReplyError",
    "build_messages",
    "check_item",
    "describe_difficulty",
    "feedback_message",
    "parse_reply",
    "prompt_hash",
]

SYSTEM_PROMPT = (
    "You write test items for evaluating AI systems. Each item has exactly one correct answer, which you "
    "state. You aim items at a stated difficulty, judged by how capable a system must be to answer correctly. "
    "You reply with JSON only."
)

#: Verbal labels of difficulty bands (upper edges on the ability scale).
_BANDS: tuple[tuple[float, str], ...] = (
    (-1.5, "very easy"),
    (-0.5, "easy"),
    (0.5, "medium"),
    (1.5, "hard"),
    (math.inf, "very hard"),
)


class ReplyError(IrtbayesError, ValueError):
    """A model's reply is not the JSON object asked for.

    Examples
    --------
    >>> from irtbayes.benchfill.prompts import ReplyError, parse_reply
    >>> try:
    ...     parse_reply('{"answer": 42}')
    ... except ReplyError as err:
    ...     print(type(err).__name__)
    ReplyError
    """


def _band(value: float) -> str:
    return next(label for edge, label in _BANDS if value < edge)


def _share_below(value: float) -> float:
    """Share of a standard normal population below ``value``."""
    return 0.5 * (1.0 + math.erf(value / math.sqrt(2.0)))


def describe_difficulty(lo: float, hi: float) -> str:
    """The target interval in words and numbers.

    Examples
    --------
    >>> describe_difficulty(0.5, 1.0)  # doctest: +ELLIPSIS
    'hard: difficulty between 0.50 and 1.00 ...'
    """
    low_band, high_band = _band(lo), _band(hi - 1e-9)
    words = low_band if low_band == high_band else f"{low_band} to {high_band}"
    return (
        f"{words}: difficulty between {lo:.2f} and {hi:.2f} on the ability scale, i.e. a system needs an ability "
        f"between {lo:.2f} and {hi:.2f} to answer correctly half the time. Abilities are scaled to mean 0 and "
        f"standard deviation 1, so with normally spread abilities about {100 * _share_below(lo):.0f}% to "
        f"{100 * _share_below(hi):.0f}% of systems would be less able than that"
    )


def _relation(seed: SeedItem, lo: float, hi: float) -> str:
    if seed.difficulty_mean < lo:
        return "easier than the target"
    if seed.difficulty_mean >= hi:
        return "harder than the target"
    return "inside the target interval"


def _seed_block(seed: SeedItem, *, lo: float, hi: float, ci_prob: float) -> str:
    lines = [
        f"[{seed.item}] difficulty {seed.difficulty_mean:.2f} ({100 * ci_prob:.0f}% interval "
        f"{seed.difficulty_ci_low:.2f} to {seed.difficulty_ci_high:.2f}): {_relation(seed, lo, hi)}",
        f"Question: {seed.text}",
    ]
    if seed.choices:
        lines.append("Choices: " + json.dumps(list(seed.choices), ensure_ascii=False))
    if seed.answer is not None:
        lines.append(f"Answer: {seed.answer}")
    return "\n".join(lines)


def build_messages(
    request: ProposalRequest,
    *,
    n: int | None = None,
    batch: int = 0,
    n_batches: int = 1,
    system: str | None = None,
) -> list[dict[str, str]]:
    """Chat messages asking for ``n`` items (default ``request.n``) aimed at the request's target interval.

    Returns
    -------
    list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]``; hash them with :func:`prompt_hash`.

    Examples
    --------
    >>> from irtbayes.benchfill.sources import ProposalRequest
    >>> from irtbayes.benchfill.prompts import build_messages
    >>> messages = build_messages(ProposalRequest(target_lo=0.0, target_hi=1.0, target_bin=5, n=3))
    >>> [m["role"] for m in messages]
    ['system', 'user']
    """
    n = request.n if n is None else n
    lo, hi = request.target_lo, request.target_hi
    parts = []
    where = []
    if request.benchmark:
        where.append(f"benchmark '{request.benchmark}'")
    if request.domain:
        where.append(f"domain '{request.domain}'")
    if where:
        parts.append(f"The new items join {' in '.join(where)}; keep its subject matter and style.")
    parts.append(f"Target: {describe_difficulty(lo, hi)}.")
    if request.seeds:
        parts.append(
            "Existing items near the target, with their estimated difficulty on the same scale "
            "(higher is harder):\n\n"
            + "\n\n".join(_seed_block(s, lo=lo, hi=hi, ci_prob=request.ci_prob) for s in request.seeds)
        )
        parts.append(
            f"Write {n} new items whose difficulty lies inside the target interval. You may rewrite the items "
            "above: make those easier than the target harder and those harder than the target easier, and name "
            'the item you rewrote in "seed_item". Do not repeat an existing item.'
        )
    else:
        parts.append(f"Write {n} new items whose difficulty lies inside the target interval.")
    if n_batches > 1:
        parts.append(f"This is request {batch + 1} of {n_batches}: cover different topics from the other requests.")
    if request.n_choices:
        choice_rule = (
            f'"choices" is a list of exactly {request.n_choices} distinct options and "answer" is the exact '
            "text of the correct option."
        )
        example = (
            '{"items": [{"text": "<question>", "answer": "<correct option>", "choices": ["<option>", ...], '
            '"seed_item": "<id of the item rewritten, or null>"}]}'
        )
    else:
        choice_rule = (
            'Leave out "choices": the items are free response, and "answer" is the short exact answer a grader '
            "compares the response with."
        )
        example = (
            '{"items": [{"text": "<question>", "answer": "<correct answer>", '
            '"seed_item": "<id of the item rewritten, or null>"}]}'
        )
    parts.append(
        "Each item needs exactly one correct answer. Reply with only a JSON object of this form, with no other "
        f"text:\n{example}\n{choice_rule}"
    )
    return [
        {"role": "system", "content": system or SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def feedback_message(problem: str) -> dict[str, str]:
    """The user message that answers an unusable reply with what was wrong."""
    return {
        "role": "user",
        "content": (
            f"Your reply could not be used: {problem}. Reply again with only the JSON object "
            '{"items": [...]} described above, every item with "text" and "answer".'
        ),
    }


def prompt_hash(messages: Sequence[dict[str, Any]]) -> str:
    """sha256 (hex) of the exact messages, serialised as canonical JSON (sorted keys, no spaces).

    Examples
    --------
    >>> from irtbayes.benchfill.prompts import prompt_hash
    >>> h = prompt_hash([{"role": "user", "content": "Write 3 items."}])
    >>> len(h), h == prompt_hash([{"content": "Write 3 items.", "role": "user"}])  # key order does not matter
    (64, True)
    """
    canonical = json.dumps(list(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)


def _load_json(content: str) -> Any:
    text = content.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as bare_error:
        for block in _FENCE.findall(text):
            try:
                return json.loads(block)
            except json.JSONDecodeError as err:
                raise ReplyError(
                    f"the JSON inside the code fence does not parse ({err.msg} at line {err.lineno}, "
                    f"column {err.colno})"
                ) from None
        raise ReplyError(
            f"the reply is not JSON ({bare_error.msg} at line {bare_error.lineno}, column {bare_error.colno})"
        ) from None


def parse_reply(content: str | None) -> list[Any]:
    """The item records of a reply: the list under ``"items"`` of a JSON object (bare or in a code fence).

    Each record is checked afterwards with :func:`check_item`, then validated as a candidate, so one bad item
    does not sink the others.

    Raises
    ------
    ReplyError
        Empty, not JSON, not an object with a non-empty list ``items``.

    Examples
    --------
    >>> from irtbayes.benchfill.prompts import parse_reply
    >>> parse_reply('{"items": [{"text": "What is 7 x 6?", "answer": "42"}]}')
    [{'text': 'What is 7 x 6?', 'answer': '42'}]
    >>> parse_reply("not json")
    Traceback (most recent call last):
        ...
    irtbayes.benchfill.prompts.ReplyError: the reply is not JSON (Expecting value at line 1, column 1)
    """
    if content is None or not content.strip():
        raise ReplyError("the reply is empty")
    data = _load_json(content)
    if not isinstance(data, dict) or "items" not in data:
        got = f"an object with keys {sorted(data)}" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise ReplyError(f'expected an object {{"items": [...]}}, got {got}')
    items = data["items"]
    if not isinstance(items, list) or not items:
        raise ReplyError('"items" must be a non-empty list')
    return items


def check_item(record: Any, *, index: int, n_choices: int | None = None) -> str | None:
    """What is wrong with one item record of a reply, or ``None`` when its shape is right.

    The record must be an object with ``text`` and ``answer``, and ``choices`` with exactly ``n_choices``
    options when that is set.
    """
    if not isinstance(record, dict):
        return f"item {index} is a JSON {type(record).__name__}, not an object"
    missing = [key for key in ("text", "answer") if record.get(key) is None or record.get(key) == ""]
    if missing:
        return f"item {index} has no {' and no '.join(repr(m) for m in missing)}"
    if n_choices is not None:
        choices = record.get("choices")
        if not isinstance(choices, list) or len(choices) != n_choices:
            count = len(choices) if isinstance(choices, list) else "no"
            return f"item {index} has {count} choices, {n_choices} were asked for"
    return None
