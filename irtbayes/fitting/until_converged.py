"""Sample until converged: NUTS draws that stop as soon as the convergence checks pass.

This is what :func:`irtbayes.fitting.fit.fit` does with nutpie when ``draws`` is not given (``until_converged=None``;
``True`` asks for it with ``draws`` as the most per chain, ``False`` turns it off). nutpie runs in the
background with the most draws per chain (four to ten times the usual: :func:`most_draws`); the draws so far are
checked with the fit's own checks (:func:`~irtbayes.fitting.diagnostics.sampler.check_convergence`: r-hat, bulk
and tail ESS, divergences, E-BFMI) at draw counts chosen from the last check:

- the first check at :attr:`StopRule.min_draws` draws per chain;
- after a check that fails, the next at the draws where the smallest ESS would reach the threshold if it
  grew in proportion to the draws (with 10% to spare), at least 1.2 and at most 3 times the draws checked; an
  r-hat over its threshold asks for the draws where ``r-hat - 1`` would be 10% under it if it shrank as
  ``1 / draws``, at most :data:`RHAT_GROW` times the draws checked;
- divergences do not go away with more draws: once the usual draws (:attr:`StopRule.planned`) are done and
  a check has seen divergences, sampling stops (outcome ``"divergences"``), and :func:`irtbayes.fitting.fit.fit`
  samples again with the next remedy (:data:`irtbayes.fitting.fit.REMEDIES`) while the budget lasts.

Sampling stops at the first check that passes, when ``budget_s`` has passed (the draws so far are then kept
and checked as usual: they may fail), or at the most draws. The draws done are read from nutpie's progress
reports, so waiting costs nothing; each check pauses the chains (so it has the CPUs to itself) and reads
the draws so far, of which it checks exactly the planned number (the chains may have run a few draws past
it, as many as timing allows), so each check's draw count is set by the checks before it. Small problems
stop early; large ones get the draws they need. The card records what happened (``until_converged`` in
``Fit.sampler``: the outcome, the draws kept, each check).

Screens. A check over every parameter costs about as much as a few hundred draws at leaderboard sizes
(tens of seconds at 29 x 12,032), and most checks fail. So each check first *screens*: every variable of at
most :data:`SCREEN_ELEMENTS` elements in full, and of each larger one an evenly spaced sample of about that
many elements (shifted at every check) together with the :data:`WATCH` elements that were worst at the last
check. A screen that fails is a failed check (a failure among some parameters is a failure among all); only
a screen that passes is followed by the check of every parameter, which alone can stop sampling. Decisions
are therefore those of the full check; a screen only makes the schedule's ESS estimate optimistic (the
smallest ESS among the screened parameters), which at worst adds a check. A trace in a Zarr store (large fits,
:func:`~irtbayes.fitting.sampling.run_sampler`) is read for every parameter, since each of its chunks spans
every parameter, and the screen is cut from what was read; the draws read are kept, so each check reads only
the draws since the last. The full check that passes is
made on the draws as the fit keeps them (``prepare``: the same variables, derived ones included), so the
fit reuses it instead of checking the same draws again.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
import xarray as xr

from irtbayes.fitting.diagnostics.sampler import check_convergence, checked_variables
from irtbayes.fitting.trace import (
    complete_part,
    completed_draws,
    nutpie_trace,
    read_nutpie_draws,
    read_stored_draws,
    stored_draw_chunk,
)

if TYPE_CHECKING:
    from irtbayes.fitting.diagnostics.verdict import Diagnostics

__all__ = [
    "MOST_DRAWS",
    "MOST_DRAWS_BYTES",
    "MOST_DRAWS_SMALL",
    "RHAT_GROW",
    "SCREEN_ELEMENTS",
    "WATCH",
    "StopRule",
    "most_draws",
    "sample_until_converged",
]

#: The most draws per chain of a run until converged, as a multiple of the usual draws.
MOST_DRAWS = 4
#: ... and up to this multiple where the trace of that many draws stays under :data:`MOST_DRAWS_BYTES`: a small
#: model whose slowest parameter (a hierarchy's sd) mixes slowly can then reach the ESS threshold, at a cost of
#: seconds, where it used to stop at four times the usual draws a little short of it.
MOST_DRAWS_SMALL = 10
#: Bytes of the stored draws (every chain, float64) that the draws past :data:`MOST_DRAWS` times the usual may take.
MOST_DRAWS_BYTES = 1 << 30


def most_draws(planned: int, *, values_per_draw: int, chains: int) -> int:
    """The most draws per chain of a run until converged whose usual draws are ``planned``: :data:`MOST_DRAWS` times
    them, or up to :data:`MOST_DRAWS_SMALL` times where ``chains`` x that many draws x ``values_per_draw`` (the
    values stored per draw) stay within :data:`MOST_DRAWS_BYTES` in float64.

    >>> most_draws(1000, values_per_draw=2_000, chains=4)  # 4 x 10,000 draws x 2,000 values: 640 MB
    10000
    >>> most_draws(1000, values_per_draw=20_000, chains=4)  # 4 x 4,000 draws x 20,000 values: 2.6 GB
    4000
    >>> most_draws(1000, values_per_draw=5_000, chains=4)
    6000
    """
    affordable = MOST_DRAWS_BYTES // max(1, 8 * chains * planned * values_per_draw)
    return int(planned * min(MOST_DRAWS_SMALL, max(MOST_DRAWS, affordable)))


#: After a check whose largest r-hat is over the threshold, the next check comes at most this many times the
#: draws later (fewer when r-hat is close to the threshold; see :meth:`StopRule.next_check`).
RHAT_GROW = 1.5

log = logging.getLogger("irtbayes.fitting.fit")

#: A screen checks variables of at most this many elements in full, and about this many of each larger one.
SCREEN_ELEMENTS = 1024
#: Elements per large variable that were worst at the last check (by ESS and by r-hat), always screened.
WATCH = 32


@dataclass
class StopRule:
    """When to stop sampling early, and (after the run) what happened.

    Attributes
    ----------
    rhat_max, ess_min
        The fit's convergence thresholds.
    budget_s
        Stop after this many seconds of tuning and sampling, whatever the checks say.
    min_draws
        Draws per chain at the first check.
    planned
        The usual draws per chain (what a fit with fixed draws would take): a run with divergences stops
        once it has these.
    standardised
        Abilities standardised in every draw (passed to the checks).
    outcome, draws_done, checks
        Filled by :func:`sample_until_converged`: ``"converged"``, ``"budget"``, ``"divergences"``,
        ``"most draws"`` or ``"interrupted"``; the draws per chain kept; the number of checks run.
    history
        One entry per check: the draws per chain checked, whether the checks passed, the smallest ESS, the
        largest r-hat, the divergences, the first problems, the draws of the next check, ``seconds`` (how long
        the chains waited for the check: reading the draws and checking them) and, for a check that ended at its
        screen, ``screened`` (the parameters screened) and ``parameters`` (all of them).
    prepare
        Turns the draws so far into the DataTree the fit will keep (set by :func:`irtbayes.fitting.fit.fit`); the full
        checks are made on it.
    passed
        The diagnostics of the check that passed (outcome ``"converged"``), made on exactly the draws kept;
        those draws (as ``prepare`` made them) are what :func:`sample_until_converged` returns then.

    Examples
    --------
    >>> rule = StopRule(budget_s=60.0, min_draws=100)
    >>> record = rule.record()  # what the card keeps; empty until sample_until_converged has run
    >>> record["outcome"], record["draws_done"], record["budget_s"], record["min_draws"]
    ('', 0, 60.0, 100)
    """

    rhat_max: float = 1.01
    ess_min: float = 400.0
    budget_s: float = 900.0
    min_draws: int = 200
    planned: int = 1000
    standardised: bool = True
    outcome: str = ""
    draws_done: int = 0
    checks: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    remedies: list[dict[str, Any]] = field(default_factory=list)
    prepare: Callable[[xr.DataTree], xr.DataTree] | None = field(default=None, repr=False)
    passed: Diagnostics | None = field(default=None, repr=False)
    kept: xr.DataTree | None = field(default=None, repr=False)  # the draws of the passing check
    watch: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # per dim: positions a screen keeps
    sizes: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)  # checked variables' dims
    labels: dict[str, pd.Index] = field(default_factory=dict, repr=False)  # each dim's labels

    def again(self, budget_s: float) -> None:
        """Ready the rule for another run of the same model (a remedy, :func:`irtbayes.fitting.fit.fit`) with
        ``budget_s`` seconds: what the last run filled in is cleared; its thresholds, ``planned`` and ``prepare``
        stay."""
        self.budget_s = float(budget_s)
        self.outcome, self.draws_done, self.checks = "", 0, 0
        self.history, self.watch = [], {}
        self.passed = self.kept = None

    def record(self) -> dict[str, Any]:
        """What the card keeps."""
        return {
            "outcome": self.outcome,
            "draws_done": self.draws_done,
            "checks": self.checks,
            "budget_s": self.budget_s,
            "min_draws": self.min_draws,
            "planned": self.planned,
            "history": self.history[-10:],
        }

    def next_check(self, draws: int, diag: Diagnostics) -> int:
        """The draws per chain of the next check after a failed one at ``draws`` (see the module docstring).

        Examples
        --------
        >>> from irtbayes.fitting.diagnostics.verdict import Diagnostics, VariableDiagnostics
        >>> low = VariableDiagnostics("difficulty", 3, 1.004, "difficulty[a]", 200.0, "difficulty[b]", 900.0, "")
        >>> diag = Diagnostics(ok=False, approximate=False, thresholds={}, variables=[low])
        >>> StopRule(ess_min=400).next_check(500, diag)  # ESS 200 of 400: twice the draws, 10% to spare
        1100
        >>> near = VariableDiagnostics("difficulty", 3, 1.011, "difficulty[a]", 900.0, "difficulty[b]", 900.0, "")
        >>> StopRule().next_check(900, Diagnostics(ok=False, approximate=False, thresholds={}, variables=[near]))
        1089
        """
        ess = min(diag.min_ess_bulk, diag.min_ess_tail)
        grow = 1.2
        if not np.isfinite(ess) or ess <= 0:
            grow = 3.0
        elif ess < self.ess_min:
            grow = max(grow, 1.1 * self.ess_min / ess)
        if not np.isfinite(diag.max_rhat):
            grow = max(grow, RHAT_GROW)
        elif diag.max_rhat > self.rhat_max:
            # r-hat - 1 shrinks about as 1 / draws once the chains mix: the draws where it would be 10% under the
            # threshold, at most RHAT_GROW times (a larger r-hat is often the chains still settling)
            grow = max(grow, min(RHAT_GROW, 1.1 * (diag.max_rhat - 1) / (self.rhat_max - 1)))
        target = int(np.ceil(draws * min(grow, 3.0)))
        if diag.divergences:
            target = max(target, self.planned)
        return target


def _finished(sampler: Any) -> bool:
    try:
        return bool(sampler.is_finished)
    except TimeoutError:  # nutpie answers "not finished" this way
        return False


def _pause(sampler: Any) -> None:
    if hasattr(sampler, "pause"):
        sampler.pause()


def _resume(sampler: Any) -> None:
    if hasattr(sampler, "resume"):
        sampler.resume()


def _common_length(posterior: xr.Dataset) -> int:
    """Draws that every chain has completed (nutpie pads unfinished draws with NaN)."""
    n_draws = int(posterior.sizes.get("draw", 0))
    if n_draws == 0:
        return 0
    return int(completed_draws(posterior, draws=n_draws).min(initial=n_draws))


def _layout(posterior: xr.Dataset) -> tuple[dict[str, dict[str, int]], dict[str, pd.Index]]:
    """The sizes of each checked variable's dims (besides chain and draw), and each dim's labels as text."""
    names = checked_variables(posterior)
    sizes = {n: {str(d): int(k) for d, k in posterior[n].sizes.items() if d not in ("chain", "draw")} for n in names}
    dims = {d for rest in sizes.values() for d in rest}
    labels = {d: pd.Index(np.asarray(posterior[d].values).astype(str)) for d in dims if d in posterior.coords}
    return sizes, labels


def _screen_positions(
    sizes: dict[str, dict[str, int]], watch: dict[str, np.ndarray], shift: int
) -> dict[str, np.ndarray]:
    """Where a screen cuts (see the module docstring): per dim, the positions kept. Each variable larger than
    :data:`SCREEN_ELEMENTS` is cut along its longest dim, at the same positions for every variable along one dim
    (an evenly spaced sample and the positions ``watch`` holds for the dim)."""
    picked: dict[str, np.ndarray] = {}
    for rest in sizes.values():
        total = int(np.prod(list(rest.values()), dtype=np.int64))
        if total <= SCREEN_ELEMENTS:
            continue
        dim = max(rest, key=lambda d: rest[d])
        step = max(1, rest[dim] // max(1, SCREEN_ELEMENTS // (total // rest[dim])))
        sample = np.arange(shift % step, rest[dim], step)
        picked[dim] = np.union1d(sample, watch.get(dim, np.array([], dtype=np.int64)))
    return picked


def _elements(posterior: xr.Dataset, sizes: Mapping[Any, int]) -> int:
    """The checked elements of ``posterior`` with its dims at ``sizes``."""
    names = checked_variables(posterior)
    return sum(int(np.prod([sizes[d] for d in posterior[n].dims if d not in ("chain", "draw")])) for n in names)


def _update_watch(rule: StopRule, checked: xr.Dataset, diag: Diagnostics) -> None:
    """Remember where the worst elements of each one-dimensional variable larger than a screen were: per dim,
    their positions in the draws uncut; ``checked`` is what ``diag`` was made from."""
    table = diag.parameters
    if table is None or table.empty:
        return
    rule.watch = {}
    for name, rows in table.groupby("variable", sort=False):
        dims = [str(d) for d in checked[str(name)].dims if d not in ("chain", "draw")]
        if len(dims) != 1 or dims[0] not in rule.labels or len(rule.labels[dims[0]]) <= SCREEN_ELEMENTS:
            continue
        dim = dims[0]
        ess = np.nan_to_num(np.fmin(rows["ess_bulk"].to_numpy(float), rows["ess_tail"].to_numpy(float)), nan=-np.inf)
        rhat = np.nan_to_num(rows["r_hat"].to_numpy(float), nan=np.inf)
        worst = np.concatenate([np.argsort(ess)[:WATCH], np.argsort(-rhat)[:WATCH]])
        positions = rule.labels[dim].get_indexer(rows["index"].to_numpy()[worst].astype(str))
        earlier = rule.watch.get(dim, np.array([], dtype=np.int64))
        rule.watch[dim] = np.union1d(earlier, positions[positions >= 0]).astype(np.int64)


Reader = Callable[[Mapping[str, np.ndarray] | None], xr.DataTree]


def _cut(tree: xr.DataTree, positions: Mapping[str, np.ndarray]) -> xr.DataTree:
    return xr.DataTree.from_dict(
        {k: tree[k].to_dataset().isel(positions, missing_dims="ignore") for k in tree.children}
    )


#: Draws of at least this many bytes read for a check are collected right after it (see
#: :func:`sample_until_converged`).
COLLECT_BYTES = 256 * 2**20


def _checked_bytes(rule: StopRule, tree: xr.DataTree) -> int:
    """About the bytes of every checked draw (float32) at ``tree``'s chains and draws, screened or not."""
    elements = sum(int(np.prod(list(rest.values()), dtype=np.int64)) for rest in rule.sizes.values())
    sizes = tree["posterior"].sizes if "posterior" in tree.children else {}
    return 4 * elements * int(sizes.get("chain", 0)) * int(sizes.get("draw", 0))


def _length(tree: xr.DataTree) -> int:
    return int(tree["posterior"].sizes.get("draw", 0)) if "posterior" in tree.children else 0


class _Reader:
    """Reads the draws every chain has completed so far, cut at ``positions`` when given: straight from nutpie's
    Arrow trace (:func:`~irtbayes.fitting.trace.read_nutpie_draws`), else from ``sampler.inspect()``. The trace is
    copied from the sampler once (the chains are paused while it is read); :meth:`release` frees the copy."""

    def __init__(
        self, sampler: Any, cache: dict[tuple[str, str], np.ndarray] | None = None, most: int | None = None
    ) -> None:
        self.sampler = sampler
        self.trace: list[Any] = []  # nutpie's Arrow trace, or the inspected DataTree, once read
        self.cache = cache  # a stored trace's draws read by earlier checks (read_stored_draws)
        self.most = most  # draws per chain to read at most: the check's

    def _trace(self) -> Any:
        if not self.trace:
            arrow = nutpie_trace(self.sampler)
            self.trace.append(self.sampler.inspect() if arrow is None else arrow)
        return self.trace[0]

    def stored_chunk(self) -> int:
        """Draws per chunk of a trace nutpie writes to a Zarr store (a chunk reaches the store once all its
        draws are done; each spans every parameter, so reading a few parameters costs about as much as reading
        all); 0 for a trace in memory."""
        trace = self._trace()
        if not isinstance(trace, xr.DataTree):
            return 0
        energy = trace["sample_stats"].to_dataset().get("energy")
        return 1 if energy is None else stored_draw_chunk(energy)

    def __call__(self, positions: Mapping[str, np.ndarray] | None = None) -> xr.DataTree:
        trace = self._trace()
        if isinstance(trace, xr.DataTree):  # a trace nutpie writes to a Zarr store (read lazily)
            return read_stored_draws(trace, positions, cache=self.cache, most=self.most)
        return cast(xr.DataTree, read_nutpie_draws(self.sampler, positions, trace=trace, most=self.most))

    def release(self) -> None:
        self.trace.clear()


def _check(first: xr.DataTree, read: Reader, rule: StopRule, positions: dict[str, np.ndarray]) -> Diagnostics:
    """One check of the draws so far: a screen, then (if it passes) every parameter; see the module docstring.

    ``first`` is what was read for the screen: cut at ``positions`` or, when there are none (the first check,
    before the variables' sizes are known, and every check of a trace in a Zarr store), every draw, from which
    the screen is cut; ``read`` reads the draws again, uncut. Both checks are made on the draws as the fit keeps
    them (``rule.prepare``).
    """
    length = _length(first)
    prepare = rule.prepare if rule.prepare is not None else (lambda t: t)
    cut = bool(positions)
    if not rule.sizes:
        rule.sizes, rule.labels = _layout(first["posterior"].to_dataset())
    if not cut:
        positions = _screen_positions(rule.sizes, rule.watch, shift=len(rule.history))
    entry: dict[str, Any] = {"draws": length}
    diag = None
    if positions:
        screen = prepare(first if cut else _cut(first, positions))
        # standardised=False: the note on few standardised subjects concerns the model; the full check gives it
        diag = check_convergence(screen, rhat_max=rule.rhat_max, ess_min=rule.ess_min, standardised=False)
        if not diag.ok:
            posterior = screen["posterior"].to_dataset()
            full = {d: len(labels) for d, labels in rule.labels.items()}
            entry.update(screened=_elements(posterior, posterior.sizes), parameters=_elements(posterior, full))
            _update_watch(rule, posterior, diag)
    if diag is None or diag.ok:
        every = complete_part(read(None) if cut else first, length)
        if isinstance(read, _Reader):
            read.release()  # the copy of nutpie's trace: its draws are all in ``every`` now
        kept = prepare(every)
        diag = check_convergence(kept, rhat_max=rule.rhat_max, ess_min=rule.ess_min, standardised=rule.standardised)
        _update_watch(rule, kept["posterior"].to_dataset(), diag)
        rule.kept = kept if diag.ok else None
    entry.update(
        ok=bool(diag.ok),
        min_ess=round(float(min(diag.min_ess_bulk, diag.min_ess_tail)), 1),
        max_rhat=round(float(diag.max_rhat), 4),
        divergences=int(diag.divergences),
        problems=[str(p) for p in diag.problems[:3]],
    )
    rule.history.append(entry)
    return diag


def sample_until_converged(
    sampler: Any,
    rule: StopRule,
    *,
    poll: float = 0.5,
    draws_done: Callable[[], int] | None = None,
    stored: bool = False,
) -> xr.DataTree:
    """Watch a nutpie background ``sampler``; stop it when ``rule`` says; the draws every chain completed.

    ``draws_done`` returns the kept draws the slowest chain has finished (from nutpie's progress reports);
    without it the draws are counted by reading them at every poll. ``stored``: the sampler writes its trace
    to a Zarr store, whose chunks of draws a check waits for. On Ctrl-C the sampler is stopped and the draws so
    far are returned (as nutpie does when blocking), and ``rule.outcome`` is ``"interrupted"``.
    """
    start = time.perf_counter()
    target = rule.min_draws
    chunk = 0  # draws per chunk of a trace in a Zarr store, once known
    cache: dict[tuple[str, str], np.ndarray] = {}  # a stored trace's draws read so far: each check reads the rest
    first: xr.DataTree | None = None
    try:
        while not _finished(sampler):
            time.sleep(poll)
            if time.perf_counter() - start > rule.budget_s:
                rule.outcome = "budget"
                log.info("until converged: the budget of %.0f s has passed; stopping", rule.budget_s)
                tree = sampler.abort()
                break
            # a Zarr store holds the target draw once the chunk it falls in is done: reading earlier finds the
            # chains short and reads again
            if draws_done is not None and draws_done() < (-(-target // chunk) * chunk if chunk else target):
                continue
            if stored and not chunk:  # the store's chunks, learned once (opening it reads no draws)
                probe = _Reader(sampler)
                chunk = probe.stored_chunk()
                probe.release()
                continue
            _pause(sampler)  # the check gets the CPUs, and the chains stop where it looks
            paused = time.perf_counter()
            # the check's draws exactly, read as such: cut afterwards, the fit's arrays would be views of longer
            # ones, which the audit copied (docs/performance.md#memory-the-checks-garbage-and-the-fits-views-2026-12-05-later)
            read = _Reader(sampler, cache, most=target)
            chunk = read.stored_chunk()
            # a stored trace is read whole once (reading the screen's parameters costs nearly as much), and
            # the screen is cut from it; a trace in memory gives the screen's parameters alone
            screened = rule.sizes and not chunk
            positions = _screen_positions(rule.sizes, rule.watch, shift=len(rule.history)) if screened else {}
            first = None  # the last check's draws, which the cache holds too: each replaced as it is read again
            first = read(positions)
            if _length(first) < target:
                read.release()
                _resume(sampler)
                continue
            # exactly the planned draws: how far the chains ran past them depends on timing
            first, length = complete_part(first, target), target
            rule.checks += 1
            try:
                diag = _check(first, read, rule, positions)
            finally:
                read.release()  # the copy of the trace (a gigabyte at leaderboard sizes) is not kept while sampling
                # the check's trees (DataTree nodes refer to their parents: cycles) would wait for the
                # collector's rare full pass, holding their draws under the next check's peak; a full pass costs
                # little but not nothing, so only for large draws (docs/performance.md, memory 2026-12-05 later)
                if _checked_bytes(rule, first) > COLLECT_BYTES:
                    gc.collect()
            rule.history[-1]["seconds"] = round(time.perf_counter() - paused, 1)
            if diag.ok:
                rule.outcome, rule.passed = "converged", diag
                log.info("until converged: the checks pass after %d draws per chain; stopping", length)
                getattr(sampler, "cancel", sampler.abort)()
                tree, rule.kept = rule.kept, None  # the draws checked, as the fit keeps them: no second read
                break
            if diag.divergences and length >= rule.planned:
                rule.outcome = "divergences"
                log.info(
                    "until converged: %d divergences after %d draws per chain; more draws cannot remove them: stopping",
                    diag.divergences,
                    length,
                )
                tree = sampler.abort()
                break
            target = rule.next_check(length, diag)
            rule.history[-1]["next"] = target
            _resume(sampler)
            log.info("until converged: not yet after %d draws per chain; next check at %d", length, target)
        else:
            rule.outcome = "most draws"
            tree = sampler.wait()
    except KeyboardInterrupt:
        rule.outcome = "interrupted"
        tree = sampler.abort()
    if rule.outcome != "converged" and "posterior" in tree.children and "sample_stats" in tree.children:
        # the draws so far, read into memory (a trace in a Zarr store is read lazily, and its folder goes)
        tree = read_stored_draws(tree, every_stat=True, cut=rule.outcome != "interrupted")
    length = _common_length(tree["posterior"].to_dataset()) if "posterior" in tree.children else 0
    rule.draws_done = length
    if rule.outcome == "interrupted":
        return tree
    _last_divergences(rule, tree, length)
    return complete_part(tree, length)


def _last_divergences(rule: StopRule, tree: xr.DataTree, length: int) -> None:
    """A run that used all its draws (``"most draws"``: it ended before a check could stop it, as a small model
    does) with divergences among them: the outcome is ``"divergences"`` (which a remedy answers,
    :func:`irtbayes.fitting.fit.fit`), recorded as a last entry of the history. Other outcomes are left as they are."""
    if rule.outcome != "most draws":
        return
    stats = tree["sample_stats"].to_dataset() if "sample_stats" in tree.children else None
    if stats is None or "diverging" not in stats:
        return
    divergences = int(stats["diverging"].isel(draw=slice(0, length)).sum())
    if divergences:
        rule.outcome = "divergences"
        rule.history.append({"draws": length, "divergences": divergences, "ok": False, "at": "the last draw"})
        log.info("until converged: the run used all %d draws per chain with %d divergences", length, divergences)
