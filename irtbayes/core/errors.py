"""Exceptions raised by irtbayes.

Every error a user can cause derives from :class:`IrtbayesError`; the command line turns it into a one-line
message and a non-zero exit code instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class IrtbayesError(Exception):
    """Base class of the errors that irtbayes raises on purpose.

    Examples
    --------
    Catch every error irtbayes raises on purpose, whatever its kind:

    >>> from irtbayes.core.errors import IrtbayesError
    >>> from irtbayes.data.responses import ResponseData
    >>> try:
    ...     ResponseData.from_long(pd.DataFrame({"subject": ["a"], "item": ["q1"], "response": [2.0]}))
    ... except IrtbayesError as err:
    ...     print(type(err).__name__)
    DataError
    """


class DataError(IrtbayesError, ValueError):
    """Input data is malformed: the message names the file and the row, column or key.

    Examples
    --------
    >>> from irtbayes.core.errors import DataError
    >>> from irtbayes.data.responses import ResponseData
    >>> frame = pd.DataFrame({"subject": ["a", "a"], "item": ["q1", "q1"], "response": [1.0, 0.0]})
    >>> try:
    ...     ResponseData.from_long(frame)
    ... except DataError as err:
    ...     print(err)
    <data frame>: subject 'a' and item 'q1' appear 2 times (row 0, row 1) with different values [0.0, 1.0]; each (subject, item) pair must appear once (name a condition column if these are different prompts or judges); if they are repeated trials of one item, read them as k successes of n trials with repeats='trials' (--repeats trials on the command line)
    """


class FitError(IrtbayesError):
    """A saved fit is missing, corrupt, or does not match the data it is used with.

    Examples
    --------
    >>> from irtbayes.core.errors import FitError
    >>> from irtbayes.fitting.storage import load_fit
    >>> try:
    ...     load_fit("no/such/folder")
    ... except FitError as err:
    ...     print(err)
    no/such/folder: no saved fit here (not a folder)
    """


class SpecError(IrtbayesError, ValueError):
    """A model, audit or BenchFill setting is invalid.

    Examples
    --------
    >>> from irtbayes.core.errors import SpecError
    >>> from irtbayes.data.simulate import simulate_responses
    >>> try:
    ...     simulate_responses(2, 5)
    ... except SpecError as err:
    ...     print(err)
    simulate_responses: need at least 3 subjects and 2 items, got 2 x 5
    """


class FitInterrupted(KeyboardInterrupt):
    """A fit was interrupted (Ctrl-C) before every chain had all its draws.

    It derives from :class:`KeyboardInterrupt`, not :class:`IrtbayesError`, so that code which catches
    errors in general never swallows a Ctrl-C.

    Attributes
    ----------
    phase
        ``"compile"`` (building and compiling the model), ``"tuning"`` (warm-up, no draw kept yet),
        ``"sampling"`` (some draws kept), ``"optimisation"`` (ADVI, Pathfinder) or ``"running"`` (a sampler
        that reports no progress, e.g. numpyro).
    draws_done, draws_requested
        Draws per chain kept so far (in ``chains_done`` chains) and asked for.
    chains_done, chains_requested
        Chains that have ``draws_done`` draws, and chains asked for.
    partial
        With ``fit(..., keep_partial=True)`` and at least one draw: the draws so far as a
        :class:`~irtbayes.fitting.result.Fit` marked partial (``fit.partial``; its convergence checks fail). Else None.
        (Typed ``Any`` here: this module is imported by every other and imports none of them.)
    """

    def __init__(
        self,
        phase: str,
        *,
        draws_done: int = 0,
        draws_requested: int = 0,
        chains_done: int = 0,
        chains_requested: int = 0,
        partial: Any = None,
    ) -> None:
        self.phase = phase
        self.draws_done = int(draws_done)
        self.draws_requested = int(draws_requested)
        self.chains_done = int(chains_done)
        self.chains_requested = int(chains_requested)
        self.partial = partial
        super().__init__(self.describe())

    def describe(self) -> str:
        """What was done when the interrupt came, as a phrase (see :func:`describe_interrupt`)."""
        return describe_interrupt(
            self.phase,
            draws_done=self.draws_done,
            draws_requested=self.draws_requested,
            chains_done=self.chains_done,
            chains_requested=self.chains_requested,
        )


def refuse_unknown(where: str, names: list[str], given: Iterable[str], *, noun: str = "setting") -> None:
    """:class:`SpecError` naming each of ``given`` that is not one of ``names`` (a ``noun``), with the closest name.

    Examples
    --------
    >>> refuse_unknown("fit", ["chains", "draws"], ["chain"])
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.SpecError: fit: unknown setting(s) 'chain' (did you mean 'chains'?); the settings are ['chains', 'draws']
    """
    unknown = [key for key in given if key not in names]
    if not unknown:
        return
    hints = {key: difflib.get_close_matches(key, names, n=1) for key in unknown}
    said = ", ".join(f"{key!r}" + (f" (did you mean {hints[key][0]!r}?)" if hints[key] else "") for key in unknown)
    raise SpecError(f"{where}: unknown {noun}(s) {said}; the {noun}s are {names}")


def listed(values: Any, most: int = 20) -> str:
    """``values`` joined by commas, the first ``most`` of them and how many more: ``"a, b and 3 more"``.

    >>> listed(["a", "b", "c", "d"], 2)
    'a, b and 2 more'
    """
    values = [str(v) for v in values]
    return ", ".join(values[:most]) + (f" and {len(values) - most} more" if len(values) > most else "")


def describe_interrupt(
    phase: str, *, draws_done: int = 0, draws_requested: int = 0, chains_done: int = 0, chains_requested: int = 0
) -> str:
    """The phrase that says how far an interrupted fit got: ``interrupted during sampling after 300 of 1000 ...``.

    Parameters
    ----------
    phase, draws_done, draws_requested, chains_done, chains_requested
        As in :class:`FitInterrupted`.

    Returns
    -------
    str
    """
    if phase == "compile":
        return "interrupted while building and compiling the model, before sampling"
    if phase == "optimisation":
        return "interrupted during the approximation's optimisation"
    if phase == "running":
        return "interrupted while the sampler was running (it returns no draws when interrupted)"
    if phase == "tuning" or draws_done == 0:
        return f"interrupted during tuning (warm-up), before any of the {draws_requested} draws per chain"
    text = f"interrupted during sampling after {draws_done} of {draws_requested} draws per chain"
    if chains_done < chains_requested:
        text += f" (in {chains_done} of {chains_requested} chains)"
    return text
