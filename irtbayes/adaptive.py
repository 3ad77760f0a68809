"""Sample until converged: NUTS draws that stop as soon as the convergence checks pass.

With ``fit(..., until_converged=True)`` (CLI ``--until-converged``) nutpie runs in the background with
``draws`` as the most draws per chain. Once every chain has :attr:`StopRule.min_draws` draws, the draws so
far are checked every :attr:`StopRule.check_every` seconds (or three times as long as a check takes, when
that is longer) with the fit's own checks (:func:`~irtbayes.sampler_checks.check_convergence`: r-hat,
bulk and tail ESS, divergences, E-BFMI); sampling stops at the first pass, or when ``budget_s`` has passed
(the draws so far are then kept and checked as usual: they may fail), or at the most draws. Small problems
stop early; large ones get the draws they need. The card records what happened (``until_converged`` in
``Fit.sampler``: the outcome, the draws kept, the checks run).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import xarray as xr

from irtbayes.sampler_checks import check_convergence
from irtbayes.trace import complete_part, completed_draws

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
        Draws per chain before the first check.
    check_every
        Seconds between checks (at least three times the time a check takes).
    standardised
        Abilities standardised in every draw (passed to the checks).
    outcome, draws_done, checks
        Filled by :func:`sample_until_converged`: ``"converged"``, ``"budget"``, ``"most draws"`` or
        ``"interrupted"``; the draws per chain kept; the number of checks run.
    history
        One entry per check: the draws per chain checked, whether the checks passed, the first problems.

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
    check_every: float = 10.0
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
            "history": self.history[-10:],
        }


def _finished(sampler: Any) -> bool:
    try:
        return bool(sampler.is_finished)
    except TimeoutError:  # nutpie answers "not finished" this way
        return False


def _common_length(posterior: xr.Dataset) -> int:
    """Draws that every chain has completed (nutpie pads unfinished draws with NaN)."""
    n_draws = int(posterior.sizes.get("draw", 0))
    if n_draws == 0:
        return 0
    return int(completed_draws(posterior, draws=n_draws).min(initial=n_draws))


def _passes(tree: xr.DataTree, length: int, rule: StopRule) -> bool:
    trimmed = complete_part(tree, length)
    diag = check_convergence(trimmed, rhat_max=rule.rhat_max, ess_min=rule.ess_min, standardised=rule.standardised)
    rule.history.append({"draws": length, "ok": bool(diag.ok), "problems": [str(p) for p in diag.problems[:3]]})
    return bool(diag.ok)


def sample_until_converged(sampler: Any, rule: StopRule, *, poll: float = 0.5) -> xr.DataTree:
    """Watch a nutpie background ``sampler``; stop it when ``rule`` says; the draws every chain completed.

    On Ctrl-C the sampler is stopped and the draws so far are returned (as nutpie does when blocking), and
    ``rule.outcome`` is ``"interrupted"``.
    """
    start = time.perf_counter()
    next_check = 0.0
    try:
        while not _finished(sampler):
            time.sleep(poll)
            elapsed = time.perf_counter() - start
            if elapsed > rule.budget_s:
                rule.outcome = "budget"
                log.info("until converged: the budget of %.0f s has passed; stopping", rule.budget_s)
                tree = sampler.abort()
                break
            if elapsed < next_check:
                continue
            began = time.perf_counter()
            snapshot = sampler.inspect()
            length = _common_length(snapshot["posterior"].to_dataset()) if "posterior" in snapshot.children else 0
            if length >= rule.min_draws:
                rule.checks += 1
                if _passes(snapshot, length, rule):
                    rule.outcome = "converged"
                    log.info("until converged: the checks pass after %d draws per chain; stopping", length)
                    tree = sampler.abort()
                    break
                log.info("until converged: not yet after %d draws per chain", length)
            cost = time.perf_counter() - began
            soon = min(2.0, rule.check_every)  # before min_draws: look again soon
            wait = max(rule.check_every if length >= rule.min_draws else soon, 3 * cost)
            next_check = time.perf_counter() - start + wait
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
