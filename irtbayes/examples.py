"""Small simulated fits and audits, ready in a fraction of a second, for examples and quick experiments.

They serve irtbayes' docstring examples as ``arviz.load_arviz_data`` serves ArviZ's: a fit without sampling,
whose draws scatter around a simulation's truth (:func:`irtbayes.data.simulate.posterior_near_truth`), so an
example can show a step of the pipeline in two lines.

Examples
--------
>>> from irtbayes.examples import simulated_audit, simulated_fit
>>> fit, data = simulated_fit(40, 60)
>>> fit.posterior.sizes["draw"], data.n_items
(100, 60)
>>> result, data = simulated_audit(30, 60, bins=5)
>>> sorted(result.benchmarks["scope_kind"].unique())
['all', 'benchmark']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.core import irt
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.fitting.result import Fit

if TYPE_CHECKING:
    from irtbayes.auditing.result import AuditResult
    from irtbayes.benchfill.candidates import Candidate

__all__ = ["simulated_audit", "simulated_candidates", "simulated_fit"]


def simulated_fit(
    n_subjects: int, n_items: int, *, chains: int = 2, draws: int = 100, seed: int = 1, **simulate: Any
) -> tuple[Fit, ResponseData]:
    """A :class:`~irtbayes.fitting.result.Fit` of simulated 2PL data, its draws scattered around the truth, and the data.

    ``simulate_responses(n_subjects, n_items, seed=seed, **simulate)`` makes the data;
    ``posterior_near_truth(..., chains=chains, draws=draws, seed=seed + 1)`` the draws.
    """
    data, truth = simulate_responses(n_subjects, n_items, seed=seed, **simulate)
    posterior = posterior_near_truth(data, truth, chains=chains, draws=draws, seed=seed + 1)
    return Fit.from_posterior(posterior, data), data


def simulated_audit(
    n_subjects: int = 30,
    n_items: int = 60,
    *,
    n_benchmarks: int = 2,
    chains: int = 2,
    draws: int = 50,
    seed: int = 1,
    **settings: Any,
) -> tuple[AuditResult, ResponseData]:
    """The audit of draws scattered around simulated 2PL data's truth (as :func:`simulated_fit`), and the data.

    ``settings`` go to :func:`irtbayes.auditing.run.audit` (``bins=5``, ``target=...``).
    """
    from irtbayes.auditing.run import audit  # the audit stage sits above the fit

    data, truth = simulate_responses(n_subjects, n_items, n_benchmarks=n_benchmarks, seed=seed)
    posterior = posterior_near_truth(data, truth, chains=chains, draws=draws, seed=seed + 1)
    return audit(posterior, data, **settings), data


def simulated_candidates(
    *, difficulty: float = 0.5, seed: int = 3
) -> tuple[Fit, ResponseData, list[Candidate], pd.DataFrame]:
    """A bank, two new candidate items and every system's answers to them, for BenchFill's examples.

    The bank is ``simulated_fit(100, 40, missing=0.0)``; candidate ``"good"`` is answered as a 2PL item of
    slope 1.5 at ``difficulty``, ``"mis-keyed"`` with slope -1.5 (its responses fall with ability), each system
    once, from the true abilities (``seed`` seeds the answers).

    Returns
    -------
    (fit, data, candidates, answers)
        ``answers`` is a long table (``subject``, ``item``, ``response``) for
        :func:`irtbayes.benchfill.calibration.candidate_response_data`.
    """
    from irtbayes.benchfill.candidates import Candidate  # BenchFill sits above the fit

    data, truth = simulate_responses(100, 40, missing=0.0, seed=1)
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=100, seed=2), data)
    rng = np.random.default_rng(seed)
    theta = truth["ability"].values
    answers = pd.concat(
        pd.DataFrame(
            {
                "subject": data.subject_ids,
                "item": cid,
                "response": (rng.random(len(theta)) < irt.probability(theta, difficulty, slope)).astype(float),
            }
        )
        for cid, slope in (("good", 1.5), ("mis-keyed", -1.5))
    )
    texts = {"good": "What is 7 x 6?", "mis-keyed": "Name the capital of Peru."}
    candidates = [Candidate(candidate_id=cid, text=text, answer="a") for cid, text in texts.items()]
    return fit, data, candidates, answers
