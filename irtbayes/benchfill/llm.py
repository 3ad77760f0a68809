"""BenchFill's LLM source: candidates written by a language model behind an OpenAI-compatible chat API."""

from __future__ import annotations

import logging
from typing import Any

from irtbayes.benchfill import prompts
from irtbayes.benchfill.candidates import Candidate, candidate_from_record
from irtbayes.benchfill.client import ChatClient
from irtbayes.benchfill.sources import Proposal, ProposalRequest, Rejection
from irtbayes.core.errors import DataError, SpecError

log = logging.getLogger(__name__)


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

    Examples
    --------
    >>> from irtbayes.benchfill.client import ChatClient
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
