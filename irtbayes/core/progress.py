"""Progress of a long sampler run that a person can follow, also where no progress bar can be drawn.

nutpie calls a callback every ``progress_rate`` milliseconds with one record per chain (``finished_draws``,
``total_draws`` counting warm-up, ``divergences``, ``tuning``). :class:`SamplingProgress` turns those calls
into a log line every ``every`` seconds (and one when the run ends):

    sampling: 2,400 of 8,000 draws (30%), 41.2 draws/s, about 2 min 16 s left; 0 divergences

The rate is measured over the run so far; the time left assumes it holds, which makes it pessimistic while
warm-up step sizes are still shrinking and exact once sampling has settled. The same callback records the
phase (tuning or sampling) for the interrupt handling in :mod:`irtbayes.fitting.fit`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["SamplingProgress", "bars_shown", "format_duration"]

log = logging.getLogger(__name__)


def bars_shown(progress: bool) -> bool:
    """Whether to draw progress bars: asked for, and standard error is a terminal (redraws would fill a log file
    or a CI log with lines)."""
    return bool(progress) and sys.stderr.isatty()


def format_duration(seconds: float) -> str:
    """``75`` -> ``"1 min 15 s"``; ``4000`` -> ``"1 h 6 min"`` (whole minutes); under a minute in whole seconds.

    Examples
    --------
    >>> format_duration(12.4), format_duration(75), format_duration(4000), format_duration(float("nan"))
    ('12 s', '1 min 15 s', '1 h 6 min', 'unknown')
    """
    if seconds != seconds or seconds == float("inf"):  # NaN or unbounded: nothing sensible to say
        return "unknown"
    total = max(0, round(seconds))
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class SamplingProgress:
    """A nutpie ``progress_callback`` that logs draws per second and the time left every ``every`` seconds.

    Parameters
    ----------
    every
        Seconds between log lines.
    on_phase
        Called with ``"tuning"`` or ``"sampling"`` whenever the phase is known (all chains' state).
    clock
        A monotonic clock in seconds (tests pass their own).
    logger
        Where the lines go (INFO).
    """

    def __init__(
        self,
        *,
        every: float = 30.0,
        on_phase: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> None:
        self.every = float(every)
        self.on_phase = on_phase
        self.clock = clock
        self.logger = logger
        self.started: float | None = None
        self.last_line: float | None = None
        self.ended = False
        #: The draws asked for are the most (sampling until converged stops earlier): lines say "at most".
        self.most = False
        #: Draws (warm-up included) the slowest chain has finished, at the last report.
        self.least_finished = 0

    def __call__(self, chains: Sequence[Any]) -> None:
        now = self.clock()
        if self.started is None:
            self.started = self.last_line = now
        done = sum(int(c.finished_draws) for c in chains)
        self.least_finished = min((int(c.finished_draws) for c in chains), default=0)
        total = sum(int(c.total_draws) for c in chains)
        phase = "tuning" if any(bool(c.tuning) for c in chains) else "sampling"
        if self.on_phase is not None:
            self.on_phase(phase)
        finished = total > 0 and done >= total
        assert self.last_line is not None
        if self.ended or (not finished and now - self.last_line < self.every):
            return
        self.last_line = now
        self.ended = finished
        self.logger.info("%s", self.line(done, total, now - self.started, phase, chains, most=self.most))

    @staticmethod
    def line(done: int, total: int, elapsed: float, phase: str, chains: Sequence[Any], *, most: bool = False) -> str:
        """The text of one progress line; ``most``: ``total`` is the most draws (sampling until converged)."""
        divergences = sum(int(c.divergences) for c in chains)
        share = done / total if total else 0.0
        if done >= total and total:
            return (
                f"{len(chains)} chains finished {total:,} draws (warm-up included) in {format_duration(elapsed)}; "
                f"{divergences} divergences"
            )
        rate = done / elapsed if elapsed > 0 else float("nan")
        left = (total - done) / rate if rate and rate == rate else float("nan")
        return (
            f"{phase}: {done:,} of {'at most ' if most else ''}{total:,} draws ({share:.0%}), {rate:.1f} draws/s, "
            f"{'at most' if most else 'about'} {format_duration(left)} left; {divergences} divergences"
        )
