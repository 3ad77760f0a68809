"""BenchFill's LLM source: candidates written by a language model behind an OpenAI-compatible chat API.

Three pieces: the chat client (:class:`ChatClient`), the prompt and the parsing of its reply
(:func:`build_messages`, :func:`parse_reply`), and the source that joins them (:class:`LLMSource`).

**The client**: a small client for OpenAI-compatible chat APIs (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, ...).
It POSTs ``{base_url}/chat/completions`` with ``{"model", "messages", **params}`` using only the standard
library, and adds what a long BenchFill run needs:

- the API key is read from an environment variable at call time and sent as ``Authorization: Bearer``; it is
  never logged, cached, or put in an exception message (server text is scrubbed of it);
- retries with exponential back-off and jitter on timeouts, connection errors, HTTP 408, 429 and 5xx, waiting
  as long as a ``Retry-After`` header asks; other 4xx fail at once with the status and the server's message;
- an on-disk response cache keyed by sha256 of (base_url, model, messages, params), written atomically, so a
  rerun makes no requests;
- at most ``concurrency`` requests in flight, also across threads (:meth:`ChatClient.complete_many`).

Requests to a loopback host (127.0.0.1, ::1, localhost) bypass any proxy set in the environment.

**The prompt**: rewrite seed items toward the aim (the difficulty interval the new items should fill), and parse the
reply. The user message states the aim in words and numbers, shows existing items whose posterior difficulty lies in
or next to it, each with its difficulty and whether it is easier or harder than the aim, and asks for items in a
strict JSON format::

    {"items": [{"text": "...", "answer": "...", "choices": ["...", "..."], "seed_item": "..."}]}

:func:`parse_reply` accepts that object, bare or inside a Markdown code fence (```json ... ```). A reply it
cannot use raises :class:`ReplyError`, whose message is fed back to the model by
:class:`LLMSource` (:func:`feedback_message`).

The difficulty scale is the ability scale of the fitted model, on which the evaluated systems' abilities have
mean 0 and standard deviation 1: a system whose ability equals an item's difficulty answers it correctly with
probability 1/2.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from irtbayes.benchfill.candidates import Candidate, candidate_from_record
from irtbayes.benchfill.sources import Proposal, ProposalRequest, Rejection
from irtbayes.core.errors import DataError, IrtbayesError, SpecError
from irtbayes.core.files import atomic_write_text

if TYPE_CHECKING:
    from irtbayes.benchfill.sources import SeedItem

__all__ = [
    "SYSTEM_PROMPT",
    "ChatAPIError",
    "ChatClient",
    "LLMSource",
    "ReplyError",
    "build_messages",
    "check_item",
    "describe_difficulty",
    "feedback_message",
    "parse_reply",
    "prompt_hash",
]

log = logging.getLogger(__name__)


# ==================================================================================================== the chat client
_RETRY_STATUS = frozenset({408, 429})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
#: Longest wait a ``Retry-After`` header can impose, in seconds.
MAX_RETRY_AFTER = 600.0

Message = Mapping[str, Any]


class ChatAPIError(IrtbayesError):
    """A chat request failed: a non-retryable HTTP error, retries exhausted, or an unusable response.

    ``status`` is the HTTP status when there was one.

    Examples
    --------
    >>> from irtbayes.benchfill.llm import ChatAPIError
    >>> err = ChatAPIError("HTTP 401: invalid key", status=401)
    >>> err.status, isinstance(err, Exception)
    (401, True)
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _retry_after(value: str | None) -> float | None:
    """Seconds asked for by a ``Retry-After`` header (delta-seconds or an HTTP date), or ``None``."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _server_message(raw: bytes) -> str:
    """The error message in an OpenAI-style error body, or the body itself (shortened)."""
    text = raw.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text[:500] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:500]
        if isinstance(error, str):
            return error[:500]
    return text[:500]


class ChatClient:
    """Client for ``POST {base_url}/chat/completions`` of an OpenAI-compatible server.

    Parameters
    ----------
    base_url
        For example ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8000/v1"``.
    model
        The generator model's name as the server knows it.
    api_key_env
        Environment variable holding the API key, read at each call; ``None`` (or an unset variable) sends
        no key, as local servers usually want.
    timeout
        Seconds to wait for a response before retrying.
    max_retries
        Retries after the first attempt.
    backoff, max_backoff
        The k-th retry waits ``min(max_backoff, backoff * 2**k)`` seconds times a random factor in
        [0.5, 1), unless the server sends ``Retry-After``.
    concurrency
        Most requests in flight at once.
    cache_dir
        Folder of the response cache; ``None`` disables it.
    params
        Default request parameters (``temperature``, ``max_tokens``, ...), overridden per call.

    Examples
    --------
    Nothing is sent until a request is made; a loopback server needs no key:

    >>> from irtbayes.benchfill.llm import ChatClient
    >>> client = ChatClient("http://127.0.0.1:8000/v1", "my-local-model", api_key_env=None)
    >>> client
    ChatClient('http://127.0.0.1:8000/v1', 'my-local-model', api_key_env=None)
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        concurrency: int = 4,
        cache_dir: str | Path | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in {"http", "https"} or not parsed.netloc:
            raise SpecError(f"ChatClient: base_url must be an http(s) URL, got {base_url!r}")
        if not model:
            raise SpecError("ChatClient: model is empty")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or concurrency < 1:
            raise SpecError(
                f"ChatClient: need timeout > 0, max_retries >= 0, backoff >= 0 and concurrency >= 1; got "
                f"timeout={timeout}, max_retries={max_retries}, backoff={backoff}, concurrency={concurrency}"
            )
        self.base_url = base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = int(concurrency)
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.params = dict(params or {})
        self.n_requests = 0
        self.n_cache_hits = 0
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._random = random.Random()
        self._sleep: Callable[[float], None] = time.sleep
        if parsed.hostname in _LOOPBACK:
            self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        else:
            self._opener = urllib.request.build_opener()

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r}, {self.model!r}, api_key_env={self.api_key_env!r})"

    # ------------------------------------------------------------------ public
    def cache_key(self, messages: Sequence[Message], **params: Any) -> str:
        """sha256 (hex) of (base_url, model, messages, params): the name of the cache entry."""
        merged = {**self.params, **params}
        canonical = json.dumps(
            {"base_url": self.base_url, "model": self.model, "messages": list(messages), "params": merged},
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()

    def request(self, messages: Sequence[Message], **params: Any) -> dict[str, Any]:
        """The server's JSON response to one chat request (from the cache when there is an entry).

        Raises
        ------
        ChatAPIError
            A 4xx other than 408/429, retries exhausted, or a response that is not a chat completion.
        """
        if not messages:
            raise SpecError("ChatClient: no messages to send")
        merged = {**self.params, **params}
        key = self.cache_key(messages, **params)
        cached = self._cache_get(key)
        if cached is not None:
            with self._lock:
                self.n_cache_hits += 1
            log.debug("%s: cache hit %s", self.url, key[:12])
            return cached
        body = {**merged, "model": self.model, "messages": list(messages)}
        response = self._post(json.dumps(body, ensure_ascii=False).encode())
        self._content(response)
        self._cache_put(
            key,
            {"base_url": self.base_url, "model": self.model, "messages": list(messages), "params": merged},
            response,
        )
        return response

    def complete(self, messages: Sequence[Message], **params: Any) -> str:
        """The text of the first choice of the reply to ``messages``."""
        return self._content(self.request(messages, **params))

    def complete_many(self, conversations: Sequence[Sequence[Message]], **params: Any) -> list[str]:
        """Replies to many conversations, at most ``concurrency`` in flight, in the order given.

        Every conversation is attempted; if any failed, the first failure (in input order) is raised after
        the others finished, and the successful replies are in the cache.
        """
        if not conversations:
            return []
        workers = min(self.concurrency, len(conversations))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.complete, messages, **params) for messages in conversations]
        errors = [f.exception() for f in futures]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            failed = sum(e is not None for e in errors)
            log.warning("%s: %d of %d requests failed", self.url, failed, len(conversations))
            raise first
        return [f.result() for f in futures]

    # ------------------------------------------------------------------ internals
    def _key(self) -> str | None:
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def _scrub(self, text: str) -> str:
        key = self._key()
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        return text

    def _content(self, response: Mapping[str, Any]) -> str:
        try:
            content = response["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ChatAPIError(
                f"{self.url}: the response is not a chat completion (no choices[0].message.content); "
                f"its keys are {sorted(response) if isinstance(response, dict) else type(response).__name__}"
            ) from None
        if not isinstance(content, str):
            raise ChatAPIError(f"{self.url}: the reply has no text content (got {type(content).__name__})")
        return content

    def _delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return retry_after
        return min(self.max_backoff, self.backoff * 2**retry) * (0.5 + 0.5 * self._random.random())

    def _post(self, payload: bytes) -> dict[str, Any]:
        attempts = self.max_retries + 1
        problem = ""
        for attempt in range(attempts):
            headers = {"Content-Type": "application/json", "Accept": "application/json"}
            key = self._key()
            if key:
                headers["Authorization"] = f"Bearer {key}"
            request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
            retry_after = None
            try:
                with self._slots:
                    with self._lock:
                        self.n_requests += 1
                    log.debug("POST %s (attempt %d of %d)", self.url, attempt + 1, attempts)
                    with self._opener.open(request, timeout=self.timeout) as reply:
                        raw = reply.read()
            except urllib.error.HTTPError as err:
                try:
                    detail = _server_message(err.read())
                except (OSError, http.client.HTTPException):
                    detail = "(no body)"
                finally:
                    err.close()
                detail = self._scrub(detail)
                status = err.code
                if status not in _RETRY_STATUS and status < 500:
                    raise ChatAPIError(f"{self.url}: HTTP {status} {err.reason}: {detail}", status=status) from None
                retry_after = _retry_after(err.headers.get("Retry-After") if err.headers else None)
                problem = f"HTTP {status} {err.reason}: {detail}"
            except (TimeoutError, urllib.error.URLError, ConnectionError, http.client.HTTPException) as err:
                reason = getattr(err, "reason", err)
                if isinstance(reason, TimeoutError) or isinstance(err, TimeoutError):
                    problem = f"no response within {self.timeout:g} s"
                else:
                    problem = self._scrub(f"connection failed ({type(reason).__name__}: {reason})")
            else:
                try:
                    data = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise ChatAPIError(
                        f"{self.url}: the response is not JSON: {self._scrub(raw[:200].decode(errors='replace'))!r}"
                    ) from None
                if not isinstance(data, dict):
                    raise ChatAPIError(f"{self.url}: the response is a JSON {type(data).__name__}, not an object")
                return data
            if attempt + 1 == attempts:
                break
            delay = self._delay(attempt, retry_after)
            log.warning("%s: %s; retry %d of %d in %.2f s", self.url, problem, attempt + 1, self.max_retries, delay)
            self._sleep(delay)
        raise ChatAPIError(f"{self.url}: gave up after {attempts} attempts; last problem: {problem}")

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / f"{key}.json"

    def _cache_get(self, key: str) -> dict[str, Any] | None:
        path = self._cache_path(key)
        if path is None or not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            response = entry["response"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
            log.warning("%s: unreadable cache entry, asking the server again (%s)", path, err)
            return None
        return response if isinstance(response, dict) else None

    def _cache_put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        path = self._cache_path(key)
        if path is None:
            return
        entry = {"key": key, "created": datetime.now(UTC).isoformat(), "request": request, "response": response}
        text = self._scrub(json.dumps(entry, ensure_ascii=False, indent=1))
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)


# =========================================================================================== the prompt and its reply
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
    >>> from irtbayes.benchfill.llm import ReplyError, parse_reply
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
    """The aim (a difficulty interval) in words and numbers.

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
        return "easier than the aim"
    if seed.difficulty_mean >= hi:
        return "harder than the aim"
    return "inside the aim"


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
    """Chat messages asking for ``n`` items (default ``request.n``) aimed at the request's aim.

    Returns
    -------
    list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]``; hash them with :func:`prompt_hash`.

    Examples
    --------
    >>> from irtbayes.benchfill.sources import ProposalRequest
    >>> from irtbayes.benchfill.llm import build_messages
    >>> messages = build_messages(ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=3))
    >>> [m["role"] for m in messages]
    ['system', 'user']
    """
    n = request.n if n is None else n
    lo, hi = request.aim_lo, request.aim_hi
    parts = []
    where = []
    if request.benchmark:
        where.append(f"benchmark '{request.benchmark}'")
    if request.domain:
        where.append(f"domain '{request.domain}'")
    if where:
        parts.append(f"The new items join {' in '.join(where)}; keep its subject matter and style.")
    parts.append(f"Aim (the difficulty the new items should have): {describe_difficulty(lo, hi)}.")
    if request.seeds:
        parts.append(
            "Existing items near the aim, with their estimated difficulty on the same scale "
            "(higher is harder):\n\n"
            + "\n\n".join(_seed_block(s, lo=lo, hi=hi, ci_prob=request.ci_prob) for s in request.seeds)
        )
        parts.append(
            f"Write {n} new items whose difficulty lies inside the aim. You may rewrite the items "
            "above: make those easier than the aim harder and those harder than the aim easier, and name "
            'the item you rewrote in "seed_item". Do not repeat an existing item.'
        )
    else:
        parts.append(f"Write {n} new items whose difficulty lies inside the aim.")
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
    >>> from irtbayes.benchfill.llm import prompt_hash
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
    >>> from irtbayes.benchfill.llm import parse_reply
    >>> parse_reply('{"items": [{"text": "What is 7 x 6?", "answer": "42"}]}')
    [{'text': 'What is 7 x 6?', 'answer': '42'}]
    >>> parse_reply("not json")
    Traceback (most recent call last):
        ...
    irtbayes.benchfill.llm.ReplyError: the reply is not JSON (Expecting value at line 1, column 1)
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


# ===================================================================================================== the LLM source
class LLMSource:
    """Candidates written by a language model behind an OpenAI-compatible chat API.

    Each :meth:`propose` asks for ``request.n`` items in batches of at most ``n_per_call`` (batches run
    concurrently within the client's limit). A reply that is not the JSON asked for, or holds an invalid item,
    is answered with the error and asked again, up to ``max_attempts`` replies per batch; what still fails is
    recorded in :attr:`rejections` with its reason (and logged), never dropped silently. Items beyond the number
    asked for, and items identical to a seed item or to an earlier candidate, are rejected too. An HTTP failure
    (:class:`~irtbayes.benchfill.llm.ChatAPIError`) propagates; replies received before it stay in the
    client's cache, so a rerun resumes at no cost.

    Parameters
    ----------
    client
        A :class:`~irtbayes.benchfill.llm.ChatClient`.
    max_attempts
        Replies per batch before giving up on it.
    n_per_call
        Items asked for in one conversation.
    temperature
        Sampling temperature sent with each request.
    system
        Replaces the default system message.

    Examples
    --------
    >>> from irtbayes.benchfill.llm import ChatClient
    >>> from irtbayes.benchfill.llm import LLMSource
    >>> source = LLMSource(ChatClient("http://127.0.0.1:8000/v1", "my-local-model", api_key_env=None), n_per_call=5)
    >>> source.n_per_call, source.rejections
    (5, [])
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
                        aim_bin=request.aim_bin,
                        record=candidate.to_dict(),
                        prompt_hash=candidate.prompt_hash,
                    )
                )
        for rejection in rejections:
            log.warning("%s: rejected a proposal for bin %d: %s", rejection.source, rejection.aim_bin, rejection.reason)
        self.rejections.extend(rejections)
        log.info(
            "%s: %d candidates and %d rejections for bin %d",
            self.source,
            len(candidates),
            len(rejections),
            request.aim_bin,
        )
        return Proposal(candidates=candidates, rejections=rejections)

    def _conversation(
        self, request: ProposalRequest, batch: int, n_batches: int, size: int
    ) -> tuple[list[Candidate], list[Rejection]]:
        messages = build_messages(request, n=size, batch=batch, n_batches=n_batches, system=self.system)
        problem = ""
        for attempt in range(1, self.max_attempts + 1):
            content = self.client.complete(messages, temperature=self.temperature)
            digest = prompt_hash(messages)
            try:
                records = parse_reply(content)
            except ReplyError as err:
                problem = str(err)
                records = None
            if records is not None:
                good: list[Candidate] = []
                bad: list[tuple[Any, str]] = []
                for k, record in enumerate(records):
                    shape = check_item(record, index=k, n_choices=request.n_choices)
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
                            aim_bin=request.aim_bin,
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
                request.aim_bin,
                problem,
            )
            if attempt < self.max_attempts:
                messages = [*messages, {"role": "assistant", "content": content}, feedback_message(problem)]
        rejection = Rejection(
            reason=f"no usable reply after {self.max_attempts} attempts: {problem}",
            source=self.source,
            aim_bin=request.aim_bin,
            record={"reply": content},
            prompt_hash=prompt_hash(messages),
        )
        return [], [rejection]
