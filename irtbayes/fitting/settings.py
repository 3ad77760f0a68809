"""The sampler request of a fit: :class:`SamplerSettings`, every choice :func:`~irtbayes.fitting.fit.fit` takes
besides the data and the model, checked in one place.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from irtbayes.core.errors import SpecError, refuse_unknown
from irtbayes.fitting.auto import DEFAULT_BUDGET_S

if TYPE_CHECKING:
    from irtbayes.fitting.sampling import Sampler

__all__ = ["SamplerSettings"]


@dataclass(frozen=True)
class SamplerSettings:
    """How to sample a fit: the keyword arguments of :func:`~irtbayes.fitting.fit.fit`, as one object.

    Pass one to ``fit(data, spec, settings=...)``, or give the fields as keywords (``fit(data, sampler="approx",
    seed=1)``); the fields are checked when the object is made.

    Attributes
    ----------
    sampler
        ``"auto"`` (default): ``"nutpie"`` when NUTS's estimated time fits ``budget_s``, else ``"approx"``
        (:mod:`irtbayes.fitting.auto`). NUTS: ``"nutpie"``, ``"pymc"``, ``"numpyro"`` (JAX). Approximate, labelled
        so in every output: ``"approx"`` (:mod:`irtbayes.fitting.approx`), ``"advi"`` and ``"pathfinder"``.
    chains
        Chains (default 4).
    draws
        Kept draws per chain; None (default): 1000, more for large models and small item banks, 250 for
        ``"approx"`` (see :func:`irtbayes.fitting.fit.fit`).
    tune
        Warm-up draws per chain; None (default): nutpie 200 when warm-started, else 500; 1000 for the others.
    seed
        Random seed; None (default) draws one, recorded in ``fit.sampler["seed"]``.
    progress
        Show the sampler's progress bar (default True).
    cores
        Chains run in parallel; None (default): min(chains, CPU count).
    target_accept
        NUTS target acceptance rate in (0, 1); None (default): chosen from the model's size.
    rhat_max, ess_min
        Thresholds of the convergence check (defaults 1.01 and 400).
    sampler_kwargs
        Extra keyword arguments for the sampler (default none; e.g. ``{"adaptation": "low_rank"}`` for nutpie,
        ``{"devices": 2}`` for numpyro: the JAX devices the responses are split over).
    keep_partial
        On Ctrl-C after some draws, attach them to the ``FitInterrupted`` raised (default False: discarded).
    budget_s
        Time budget in seconds of ``sampler="auto"`` and of ``until_converged`` (default 15 minutes).
    until_converged
        nutpie: sample until the convergence checks pass or ``budget_s`` has passed; None (default): yes when
        ``draws`` is not given.
    remedy
        With ``until_converged``: when a run ends in divergent transitions, sample again at a higher target
        acceptance (the remedies of :data:`irtbayes.fitting.fit.REMEDIES`) while the budget lasts; True (default).
    warm_start
        nutpie: start the chains around the empirical-Bayes modes; None (default): yes for the 1PL and 2PL with
        one ability dimension.

    Examples
    --------
    >>> from irtbayes.fitting.settings import SamplerSettings
    >>> settings = SamplerSettings(sampler="approx", seed=1, progress=False)
    >>> settings.chains, settings.to_dict()["sampler"]
    (4, 'approx')
    >>> SamplerSettings(chains=0)
    Traceback (most recent call last):
        ...
    irtbayes.core.errors.SpecError: fit: chains must be an integer >= 1, got 0
    """

    sampler: Sampler = "auto"
    chains: int = 4
    draws: int | None = None
    tune: int | None = None
    seed: int | None = None
    progress: bool = True
    cores: int | None = None
    target_accept: float | None = None
    rhat_max: float = 1.01
    ess_min: float = 400.0
    sampler_kwargs: Mapping[str, Any] = field(default_factory=dict)
    keep_partial: bool = False
    budget_s: float = DEFAULT_BUDGET_S
    until_converged: bool | None = None
    warm_start: bool | None = None
    remedy: bool = True

    def __post_init__(self) -> None:
        from irtbayes.fitting.sampling import SAMPLERS  # PyMC loads only when a fit is asked for

        if self.sampler not in SAMPLERS:
            raise SpecError(f"unknown sampler {self.sampler!r}; choose one of {list(SAMPLERS)}")
        _check_int("chains", self.chains, 1)
        for name, low in (("draws", 1), ("tune", 0), ("cores", 1)):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name), low)
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer))):
            raise SpecError(f"fit: seed must be an integer or None, got {self.seed!r}")
        if self.target_accept is not None and not (_is_number(self.target_accept) and 0 < self.target_accept < 1):
            raise SpecError(f"fit: target_accept must be in (0, 1), got {self.target_accept}")
        if not (_is_number(self.rhat_max) and self.rhat_max >= 1):
            raise SpecError(f"fit: rhat_max must be a number >= 1, got {self.rhat_max!r}")
        if not (_is_number(self.ess_min) and self.ess_min > 0):
            raise SpecError(f"fit: ess_min must be a number > 0, got {self.ess_min!r}")
        if not (_is_number(self.budget_s) and math.isfinite(self.budget_s) and self.budget_s >= 0):
            raise SpecError(f"fit: budget_s must be a number of seconds >= 0, got {self.budget_s!r}")
        for name in ("progress", "keep_partial", "remedy"):
            if not isinstance(getattr(self, name), bool):
                raise SpecError(f"fit: {name} must be True or False, got {getattr(self, name)!r}")
        for name in ("until_converged", "warm_start"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise SpecError(f"fit: {name} must be True, False or None, got {getattr(self, name)!r}")
        if not isinstance(self.sampler_kwargs, Mapping):
            raise SpecError(f"fit: sampler_kwargs must be a mapping, got {type(self.sampler_kwargs).__name__}")
        for name in ("chains", "draws", "tune", "cores", "seed"):  # numpy integers as plain ints
            if getattr(self, name) is not None:
                object.__setattr__(self, name, int(getattr(self, name)))

    def replace(self, **changes: Any) -> SamplerSettings:
        """A copy with ``changes`` (field names as keywords), checked again."""
        refuse_unknown("fit", [f.name for f in dataclasses.fields(self)], changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The fields as :func:`~irtbayes.fitting.fit.fit`'s keyword arguments (``sampler_kwargs`` a plain dict)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["sampler_kwargs"] = dict(self.sampler_kwargs)
        return out


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise SpecError(f"fit: {name} must be an integer >= {low}, got {value!r}")


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
