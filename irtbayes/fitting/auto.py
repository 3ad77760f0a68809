"""``sampler="auto"``: NUTS when it fits a time budget on this machine, else the approximate tier.

The estimate of NUTS's time is a rule of thumb from measured fits, not a promise:

    seconds ~ NUTS_SECONDS_PER_RESPONSE_DRAW * responses * chains * (draws + tune) / min(chains, cores)
              + NUTS_OVERHEAD_S

with the rate measured with nutpie (``scripts/benchmark_fit.py``: 2PL with the default hierarchy, warm start and
sampling until converged, 4 chains; seconds of tuning, sampling and convergence checks per response and draw per
core, compilation left out) on simulated data and on the embedded MMLU-Pro data, whose many checked parameters make
each draw and check dearer (measured on docs/performance.md#choosing-the-sampler-auto). The constant is the top of
the measured range, so the estimate errs high, and ``draws`` is the usual number, not the most that sampling until
converged allows; the approximate tier is chosen only when NUTS would be long anyway. Specs the approximate tier
cannot fit (3PL, several ability dimensions, ``identification="prior"``) always get NUTS, with the estimate stated.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from irtbayes.data.responses import ResponseData
from irtbayes.model.spec import ModelSpec

__all__ = ["DEFAULT_BUDGET_S", "Choice", "approx_supports", "choose_sampler", "estimate_nuts_seconds"]

log = logging.getLogger("irtbayes.fitting.fit")

#: Default time budget of ``sampler="auto"`` (seconds).
DEFAULT_BUDGET_S = 900.0
#: Seconds per response and NUTS step (warm-up or kept) per core: the top of the rates measured on
#: docs/performance.md#choosing-the-sampler-auto.
NUTS_SECONDS_PER_RESPONSE_DRAW = 1.2e-7
#: Model building and compilation (seconds): between a first run's and one with the compile caches filled
#: (measured on docs/performance.md#choosing-the-sampler-auto).
NUTS_OVERHEAD_S = 20.0


@dataclass(frozen=True)
class Choice:
    """The sampler ``"auto"`` chose and why (recorded in ``Fit.sampler["auto"]``).

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(50, 40, seed=1)
    >>> choice = choose_sampler(data, ModelSpec(), chains=4, draws=None, tune=None, cores=2, budget_s=1)
    >>> record = choice.to_dict()
    >>> record["sampler"], record["budget_s"], record["nuts_estimate_s"] > 1
    ('approx', 1, True)
    """

    sampler: str
    estimate_s: float
    budget_s: float
    reason: str

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        return {
            "sampler": self.sampler,
            "nuts_estimate_s": round(self.estimate_s, 1),
            "budget_s": self.budget_s,
            "reason": self.reason,
        }


def estimate_nuts_seconds(
    n_responses: int, *, chains: int = 4, draws: int = 1000, tune: int = 500, cores: int | None = None
) -> float:
    """Rough wall time of a NUTS fit (nutpie) on a machine like the one the rate was measured on.

    Examples
    --------
    >>> round(estimate_nuts_seconds(90_000, chains=4, draws=1000, tune=1000, cores=2))
    63
    """
    parallel = max(1, min(chains, cores or os.cpu_count() or 1))
    steps = chains * (draws + tune)
    return NUTS_SECONDS_PER_RESPONSE_DRAW * n_responses * steps / parallel + NUTS_OVERHEAD_S


def approx_supports(spec: ModelSpec) -> bool:
    """Whether the approximate tier fits this spec (1PL/2PL, one standardised ability dimension).

    Examples
    --------
    >>> approx_supports(ModelSpec(kind="2pl")), approx_supports(ModelSpec(kind="3pl"))
    (True, False)
    """
    return spec.kind in ("1pl", "2pl") and spec.dims == "one" and spec.identification == "standardise"


def choose_sampler(
    data: ResponseData,
    spec: ModelSpec,
    *,
    chains: int,
    draws: int | None,
    tune: int | None,
    cores: int | None,
    budget_s: float = DEFAULT_BUDGET_S,
) -> Choice:
    """NUTS (nutpie) when its estimated time fits ``budget_s``, else ``"approx"``; logs the choice.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> data, _ = simulate_responses(50, 40, seed=1)
    >>> choose_sampler(data, ModelSpec(), chains=4, draws=None, tune=None, cores=2).sampler
    'nutpie'
    >>> choose_sampler(data, ModelSpec(), chains=4, draws=None, tune=None, cores=2, budget_s=1).sampler
    'approx'
    """
    estimate = estimate_nuts_seconds(
        data.n_responses, chains=chains, draws=draws or 1000, tune=500 if tune is None else tune, cores=cores
    )
    minutes = f"about {estimate / 60:.1f} min"
    if estimate <= budget_s:
        choice = Choice("nutpie", estimate, budget_s, f"NUTS estimated at {minutes}, within the budget")
    elif not approx_supports(spec):
        reason = (
            f"NUTS estimated at {minutes}, over the budget of {budget_s / 60:.1f} min, but the approximate tier "
            f"does not fit this model (kind={spec.kind}, dims={spec.dims}, identification={spec.identification})"
        )
        choice = Choice("nutpie", estimate, budget_s, reason)
    else:
        reason = (
            f"NUTS estimated at {minutes}, over the budget of {budget_s / 60:.1f} min: the approximate tier "
            "(empirical Bayes with grid posteriors; intervals approximate)"
        )
        choice = Choice("approx", estimate, budget_s, reason)
    log.info("sampler auto: %s (%s)", choice.sampler, choice.reason)
    return choice
