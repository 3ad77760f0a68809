"""A small client for OpenAI-compatible chat APIs (OpenAI, vLLM, llama.cpp, Ollama, LiteLLM, ...).

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
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from irtbayes.core.errors import IrtbayesError, SpecError
from irtbayes.core.files import atomic_write_text

__all__ = ["ChatAPIError", "ChatClient"]

log = logging.getLogger(__name__)

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
    >>> from irtbayes.benchfill.client import ChatAPIError
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

    >>> from irtbayes.benchfill.client import ChatClient
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
