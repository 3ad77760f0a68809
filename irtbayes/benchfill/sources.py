"""BenchFill candidate sources: the request a source answers, seed items, a file and a Python callable."""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from irtbayes.benchfill.candidates import (
    Candidate,
    candidate_from_record,
    distinct_candidates,
    load_candidates,
    parse_choices,
)
from irtbayes.core.errors import DataError, SpecError

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class SeedItem:
    """An existing item shown to a generator, with its posterior difficulty.

    ``difficulty_ci_low`` / ``difficulty_ci_high`` bound a credible interval (probability recorded on the
    :class:`ProposalRequest` as ``ci_prob``).

    Examples
    --------
    >>> from irtbayes.benchfill.sources import SeedItem
    >>> seed = SeedItem(item="q7", text="What is 7 x 6?", difficulty_mean=0.4, difficulty_ci_low=0.1, difficulty_ci_high=0.7, answer="42")
    >>> seed.item, seed.difficulty_mean
    ('q7', 0.4)
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
    """What a source is asked for: ``n`` items whose difficulty lies in ``[aim_lo, aim_hi)``.

    Attributes
    ----------
    aim_lo, aim_hi
        The aim: the difficulty interval the new items should fill, on the ability scale.
    aim_bin
        Index of the aim's bin in the audit's binning (-1: an aim that is no bin).
    n
        Number of candidates wanted.
    benchmark, domain
        The benchmark and domain the candidates should join (copied onto candidates that carry none).
    seeds
        Existing items in or next to the aim (see :func:`select_seeds`).
    n_choices
        Ask for multiple-choice items with this many options; ``None`` for free response.
    ci_prob
        Probability of the seeds' difficulty intervals.

    Examples
    --------
    >>> from irtbayes.benchfill.sources import ProposalRequest
    >>> request = ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=3, benchmark="arith")
    >>> request.n, (request.aim_lo, request.aim_hi)
    (3, (0.0, 1.0))
    """

    aim_lo: float
    aim_hi: float
    aim_bin: int
    n: int
    benchmark: str | None = None
    domain: str | None = None
    seeds: tuple[SeedItem, ...] = ()
    n_choices: int | None = None
    ci_prob: float = 0.9

    def __post_init__(self) -> None:
        if not (math.isfinite(self.aim_lo) and math.isfinite(self.aim_hi)) or self.aim_lo >= self.aim_hi:
            raise SpecError(f"ProposalRequest: the aim [{self.aim_lo}, {self.aim_hi}) must be finite with lo < hi")
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

    # the old names, read by sources written before the aim had its name: they warn, for a release
    @property
    def target_lo(self) -> float:
        """Deprecated (a :class:`DeprecationWarning`): the old name of :attr:`aim_lo`."""
        return self._renamed("target_lo", "aim_lo")

    @property
    def target_hi(self) -> float:
        """Deprecated (a :class:`DeprecationWarning`): the old name of :attr:`aim_hi`."""
        return self._renamed("target_hi", "aim_hi")

    @property
    def target_bin(self) -> int:
        """Deprecated (a :class:`DeprecationWarning`): the old name of :attr:`aim_bin`."""
        return self._renamed("target_bin", "aim_bin")

    def _renamed(self, old: str, new: str) -> Any:
        warnings.warn(
            f"ProposalRequest.{old} is deprecated: use ProposalRequest.{new}", DeprecationWarning, stacklevel=3
        )
        return getattr(self, new)


def select_seeds(
    table: pd.DataFrame,
    *,
    aim_lo: float,
    aim_hi: float,
    max_seeds: int = 8,
    items: pd.DataFrame | None = None,
) -> tuple[SeedItem, ...]:
    """Choose existing items to show a generator: those inside the aim and its nearest neighbours.

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

    Examples
    --------
    >>> from irtbayes.benchfill.sources import select_seeds
    >>> table = pd.DataFrame(
    ...     {"item": ["q1", "q2", "q3", "q4", "q5"], "text": ["t1", "t2", "t3", "t4", "t5"], "difficulty_mean": [-1.0, -0.3, 0.4, 0.6, 2.0]}
    ... ).assign(difficulty_ci_low=lambda t: t.difficulty_mean - 0.3, difficulty_ci_high=lambda t: t.difficulty_mean + 0.3)
    >>> [s.item for s in select_seeds(table, aim_lo=0.0, aim_hi=1.0, max_seeds=3)]  # one below, one above, the rest inside
    ['q2', 'q3', 'q5']
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
    centre = 0.5 * (aim_lo + aim_hi)
    inside = means[(means >= aim_lo) & (means < aim_hi)]
    inside = inside.iloc[(inside - centre).abs().argsort(kind="stable")]
    below = means[means < aim_lo].sort_values(ascending=False, kind="stable")
    above = means[means >= aim_hi].sort_values(kind="stable")
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
                choices=parse_choices(choices, where=f"select_seeds item '{item}'") if choices is not None else None,
            )
        )
    return tuple(seeds)


# ---------------------------------------------------------------------------------------------- sources
@dataclass(frozen=True)
class Rejection:
    """A proposed item (or a whole reply) that did not become a candidate, and why.

    Examples
    --------
    >>> from irtbayes.benchfill.sources import Rejection
    >>> rejection = Rejection(reason="duplicate of an existing item", source="file:list.csv", aim_bin=3)
    >>> rejection.reason, rejection.aim_bin
    ('duplicate of an existing item', 3)
    """

    reason: str
    source: str
    aim_bin: int
    record: Mapping[str, Any] | None = None
    prompt_hash: str | None = None


@dataclass(frozen=True)
class Proposal:
    """What one :meth:`LLMSource.generate` call produced: candidates and rejections.

    Examples
    --------
    >>> from irtbayes.benchfill.candidates import Candidate
    >>> from irtbayes.benchfill.sources import Proposal, Rejection
    >>> proposal = Proposal([Candidate(candidate_id="c1", text="q", answer="a")], [Rejection(reason="no answer", source="llm:m", aim_bin=5)])
    >>> len(proposal.candidates), proposal.rejections[0].reason
    (1, 'no answer')
    """

    candidates: list[Candidate]
    rejections: list[Rejection] = field(default_factory=list)


@runtime_checkable
class CandidateSource(Protocol):
    """Anything that proposes candidates for a request.

    Examples
    --------
    Any object with a ``propose(request)`` method is a source:

    >>> from irtbayes.benchfill.candidates import Candidate
    >>> from irtbayes.benchfill.sources import CandidateSource, ProposalRequest
    >>> class Fixed:
    ...     def propose(self, request):
    ...         return [Candidate(candidate_id=f"c{k}", text="q", answer="a") for k in range(request.n)]
    >>> isinstance(Fixed(), CandidateSource)
    True
    >>> len(Fixed().propose(ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=2)))
    2
    """

    def propose(self, request: ProposalRequest) -> list[Candidate]:
        """Return candidates aimed at ``request``'s aim."""
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

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from irtbayes.benchfill.sources import FileSource, ProposalRequest
    >>> path = Path(tempfile.mkdtemp()) / "candidates.csv"
    >>> _ = path.write_text("candidate_id,text,answer\\nc1,q1,a\\nc2,q2,b\\nc3,q3,c\\n")
    >>> source = FileSource(path)
    >>> request = ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=2)
    >>> [c.candidate_id for c in source.propose(request)], [c.candidate_id for c in source.propose(request)]
    (['c1', 'c2'], ['c3'])
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

    Examples
    --------
    >>> from irtbayes.benchfill.sources import CallableSource, ProposalRequest
    >>> def write_items(request):
    ...     return [{"text": f"Question {k} near {request.aim_lo:g}", "answer": "a"} for k in range(request.n)]
    >>> source = CallableSource(write_items, name="mine")
    >>> items = source.propose(ProposalRequest(aim_lo=0.0, aim_hi=1.0, aim_bin=5, n=2))
    >>> [c.text for c in items], items[0].source
    (['Question 0 near 0', 'Question 1 near 0'], 'callable:mine')
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
        placed = (
            (
                f"result #{k}",
                candidate_from_record(
                    record,
                    where=f"callable '{self.name}' result #{k}",
                    source=f"callable:{self.name}",
                    defaults=request.defaults,
                ),
            )
            for k, record in enumerate(results)
        )
        return distinct_candidates(placed, where=f"callable '{self.name}'")
