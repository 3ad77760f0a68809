"""Sample until converged: NUTS draws that stop as soon as the convergence checks pass.

This is what :func:`irtbayes.fit.fit` does with nutpie when ``draws`` is not given (``until_converged=None``;
``True`` asks for it with ``draws`` as the most per chain, ``False`` turns it off). nutpie runs in the
background with the most draws per chain (four times the usual by default); the draws so far are checked
with the fit's own checks (:func:`~irtbayes.sampler_checks.check_convergence`: r-hat, bulk and tail ESS,
divergences, E-BFMI) at draw counts chosen from the last check:

- the first check at :attr:`StopRule.min_draws` draws per chain;
- after a check that fails, the next at the draws where the smallest ESS would reach the threshold if it
  grew in proportion to the draws (with 10% to spare), at least 1.2 and at most 3 times the draws checked;
- divergences do not go away with more draws: once the usual draws (:attr:`StopRule.planned`) are done and
  a check has seen divergences, sampling stops (outcome ``"divergences"``; refit with a higher target
  acceptance).

Sampling stops at the first check that passes, when ``budget_s`` has passed (the draws so far are then kept
and checked as usual: they may fail), or at the most draws. The draws done are read from nutpie's progress
reports, so waiting costs nothing; each check pauses the chains (so it has the CPUs to itself) and reads
the draws so far. Small problems stop early; large ones
get the draws they need. The card records what happened (``until_converged`` in ``Fit.sampler``: the
outcome, the draws kept, each check).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from irtbayes.sampler_checks import check_convergence
from irtbayes.trace import complete_part, completed_draws

if TYPE_CHECKING:
    from irtbayes.verdict import Diagnostics

__all__ = ["StopRule", "sample_until_converged"]

log = logging.getLogger("irtbayes.fit")


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
        largest r-hat, the divergences, the first problems and the draws of the next check.

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
        >>> from irtbayes.verdict import Diagnostics, VariableDiagnostics
        >>> low = VariableDiagnostics("difficulty", 3, 1.004, "difficulty[a]", 200.0, "difficulty[b]", 900.0, "")
        >>> diag = Diagnostics(ok=False, approximate=False, thresholds={}, variables=[low])
        >>> StopRule(ess_min=400).next_check(500, diag)  # ESS 200 of 400: twice the draws, 10% to spare
        1100
        """
        ess = min(diag.min_ess_bulk, diag.min_ess_tail)
        grow = 1.2
        if not np.isfinite(ess) or ess <= 0:
            grow = 3.0
        elif ess < self.ess_min:
            grow = max(grow, 1.1 * self.ess_min / ess)
        if not np.isfinite(diag.max_rhat) or diag.max_rhat > self.rhat_max:
            grow = max(grow, 1.5)
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


def _check(tree: xr.DataTree, length: int, rule: StopRule) -> Diagnostics:
    trimmed = complete_part(tree, length)
    diag = check_convergence(trimmed, rhat_max=rule.rhat_max, ess_min=rule.ess_min, standardised=rule.standardised)
    entry: dict[str, Any] = {"draws": length, "ok": bool(diag.ok)}
    entry.update(
        min_ess=round(float(min(diag.min_ess_bulk, diag.min_ess_tail)), 1),
        max_rhat=round(float(diag.max_rhat), 4),
        divergences=int(diag.divergences),
        problems=[str(p) for p in diag.problems[:3]],
    )
    rule.history.append(entry)
    return diag


def sample_until_converged(
    sampler: Any, rule: StopRule, *, poll: float = 0.5, draws_done: Callable[[], int] | None = None
) -> xr.DataTree:
    """Watch a nutpie background ``sampler``; stop it when ``rule`` says; the draws every chain completed.

    ``draws_done`` returns the kept draws the slowest chain has finished (from nutpie's progress reports);
    without it the draws are counted by reading them at every poll. On Ctrl-C the sampler is stopped and
    the draws so far are returned (as nutpie does when blocking), and ``rule.outcome`` is ``"interrupted"``.
    """
    start = time.perf_counter()
    target = rule.min_draws
    try:
        while not _finished(sampler):
            time.sleep(poll)
            if time.perf_counter() - start > rule.budget_s:
                rule.outcome = "budget"
                log.info("until converged: the budget of %.0f s has passed; stopping", rule.budget_s)
                tree = sampler.abort()
                break
            if draws_done is not None and draws_done() < target:
                continue
            _pause(sampler)  # the check gets the CPUs, and the chains stop where it looks
            snapshot = sampler.inspect()
            length = _common_length(snapshot["posterior"].to_dataset()) if "posterior" in snapshot.children else 0
            if length < target:
                _resume(sampler)
                continue
            rule.checks += 1
            diag = _check(snapshot, length, rule)
            if diag.ok:
                rule.outcome = "converged"
                log.info("until converged: the checks pass after %d draws per chain; stopping", length)
                tree = sampler.abort()
                break
            if diag.divergences and length >= rule.planned:
                rule.outcome = "divergences"
                log.info(
                    "until converged: %d divergences after %d draws per chain; more draws cannot remove them: "
                    "stopping (refit with a higher target acceptance)",
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
    length = _common_length(tree["posterior"].to_dataset()) if "posterior" in tree.children else 0
    rule.draws_done = length
    if rule.outcome == "interrupted":
        return tree
    return complete_part(tree, length)
