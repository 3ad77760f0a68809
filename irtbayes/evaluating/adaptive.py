"""Adaptive tests: one system tested item by item, each next item the one that most sharpens its scores.

The state of a test is the system's ability posterior on the ability grid, kept exactly for each of the bank's
``n_draws`` posterior draws of the item parameters: after an answer y to item i, draw s's log posterior gains
``log P(y | theta, a_i(s), b_i(s)[, c_i(s)])`` at every grid point. Its mixture over draws is the marginal
posterior pi(theta) that the criteria below use.

The next item
-------------
``criterion="variance"`` (default)
    The item whose answer is expected to leave the smallest posterior variance of the scores the test is for
    (summed over them). A score is a weighted sum of the bank's responses (:func:`~irtbayes.evaluating.selection.score_weights`:
    each benchmark's accuracy, the bank's overall accuracy, or the target-weighted scores); given the answers
    so far its posterior variance is

        Var(T_m) = Var_pi( sum_{i unanswered} v_mi P_i(theta) ) + E_pi( sum_{i unanswered} v_mi^2 P_i (1 - P_i) ),

    with P_i the posterior-mean item curve. For each candidate item both outcomes are weighed by their
    predictive probabilities, the posterior updated for each, and the expected variance computed exactly on
    the grid.
``criterion="information"``
    Maximum Fisher information of the posterior-mean item curve at the posterior mean ability (as Fluid
    Benchmarking and classical computerised adaptive tests do).

Stopping: after ``max_items`` answers, when every score's posterior sd is at most ``se`` (after ``min_items``),
or when no item is left to give. Exposure control (:class:`Exposure`) keeps items that too many earlier tests
have used out of the next ones (a maximum exposure rate) and, with ``randomesque=k``, picks at random among the
k best items, so that a bank used for many systems does not give every system the same few items.

The final scores come from the exact per-draw computation of :mod:`irtbayes.evaluating.prediction` on the
answers collected; the log's running figures use the marginal posterior and a normal interval.

Calibration
-----------
An adaptive test's items are chosen for the system's own answers, so the final intervals are calibrated on the
bank's own systems tested the same way (:meth:`AdaptiveTest.interval_factors`): up to
:data:`CALIBRATION_SYSTEMS` of the bank's reference systems (evenly spaced, and as many more that answered every
benchmark: :func:`~irtbayes.evaluating.prediction.calibration_systems`), those among them that answered at least
half of each benchmark in the test's item pool (a system without one of them would take another test; all of them
where fewer than :data:`CALIBRATION_MIN_COMPLETE` did), take the same test (score,
criterion, stopping rule, item pool; no exposure control, a seed per system), answering with their recorded
responses from the items they answered, and each scope's factor is the split-conformal ``ci_prob`` order
statistic of their errors against their accuracy over all they answered, in units of the interval's half on the
error's side (at least 1; :func:`~irtbayes.evaluating.prediction.factors_from_ratios`). Applying one system's
adaptive items to the other systems instead (a fixed design for them, aimed at an ability that is not theirs)
understated the error: on the Open LLM Leaderboard data the 90% intervals then covered less than they claimed
(measured, against this calibration, on docs/studies.md#calibration-of-adaptive-tests). The factors are computed
once per bank and test settings in a process and reused by every test with the same settings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import logsumexp
from scipy.stats import norm

from irtbayes.auditing.targets import Target
from irtbayes.core import irt
from irtbayes.core.errors import DataError, SpecError, listed
from irtbayes.core.files import atomic_write_json, read_json
from irtbayes.core.summaries import check_ci_prob, records
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.bank import ItemBank, answered_benchmarks, warning_tags
from irtbayes.evaluating.crossfit import CrossFit
from irtbayes.evaluating.prediction import (
    CALIBRATION_DRAWS,
    PredictedScores,
    calibration_systems,
    error_ratios,
    evaluation_target,
    factors_from_ratios,
    predict_from_arrays,
)
from irtbayes.evaluating.selection import score_weights

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.fitting.result import Fit

__all__ = ["CRITERIA", "AdaptiveResult", "AdaptiveTest", "Exposure", "run_adaptive"]

log = logging.getLogger(__name__)

#: How the next item is chosen.
CRITERIA = ("variance", "information")
#: The bank's reference systems tested adaptively to calibrate the intervals: this many evenly spaced, and as many
#: more that answered every benchmark (:func:`~irtbayes.evaluating.prediction.calibration_systems`).
CALIBRATION_SYSTEMS = 100
#: Below this many reference systems that answered every benchmark of a test's item pool, the calibration takes
#: the others too (:meth:`AdaptiveTest.interval_factors`).
CALIBRATION_MIN_COMPLETE = 30
#: Calibration factors by bank and test settings (:meth:`AdaptiveTest.interval_factors`), newest last, with the
#: bank they belong to (so that a key is never matched by another bank at a reused address).
_FACTORS: OrderedDict[tuple[Any, ...], tuple[ItemBank, np.ndarray | None]] = OrderedDict()
_FACTORS_KEPT = 8


@dataclass
class Exposure:
    """Exposure control across the tests given from one bank.

    Attributes
    ----------
    max_rate
        An item given in more than this share of the earlier tests is not given again (1: no limit).
    randomesque
        The next item is drawn at random among the ``randomesque`` best (1: always the best).
    counts
        Tests each item has been given in.
    n_tests
        Tests given.

    Examples
    --------
    >>> exposure = Exposure(max_rate=0.5)
    >>> exposure.record(["q1", "q2"]); exposure.record(["q1"])
    >>> sorted(exposure.rates().items())
    [('q1', 1.0), ('q2', 0.5)]
    >>> exposure.blocked(["q1", "q2", "q3"]).tolist()
    [True, False, False]
    """

    max_rate: float = 1.0
    randomesque: int = 1
    counts: dict[str, int] = field(default_factory=dict)
    n_tests: int = 0

    def __post_init__(self) -> None:
        if not 0 < float(self.max_rate) <= 1:
            raise SpecError(f"Exposure: max_rate must be in (0, 1], got {self.max_rate}")
        if int(self.randomesque) < 1:
            raise SpecError(f"Exposure: randomesque must be at least 1, got {self.randomesque}")

    def rates(self) -> dict[str, float]:
        """Each item's share of the tests given so far."""
        return {k: v / self.n_tests for k, v in self.counts.items()} if self.n_tests else {}

    def blocked(self, items: Sequence[str]) -> np.ndarray:
        """Whether each item is over the maximum rate."""
        if not self.n_tests or self.max_rate >= 1:
            return np.zeros(len(items), dtype=bool)
        return np.array([self.counts.get(str(i), 0) / self.n_tests > self.max_rate for i in items])

    def record(self, items: Sequence[str]) -> None:
        """Count one finished test that gave ``items``."""
        self.n_tests += 1
        for item in set(map(str, items)):
            self.counts[item] = self.counts.get(item, 0) + 1

    def save(self, path: str | Path) -> Path:
        """Write the state as JSON, atomically."""
        return atomic_write_json(
            path,
            {
                "max_rate": self.max_rate,
                "randomesque": self.randomesque,
                "n_tests": self.n_tests,
                "counts": self.counts,
            },
        )

    @classmethod
    def load(cls, path: str | Path) -> Exposure:
        """Read a state written by :meth:`save` (errors name the file and the key)."""
        raw = read_json(path)
        try:
            counts = {str(k): int(v) for k, v in dict(raw.get("counts", {})).items()}
            return cls(
                max_rate=float(raw.get("max_rate", 1.0)),
                randomesque=int(raw.get("randomesque", 1)),
                counts=counts,
                n_tests=int(raw.get("n_tests", 0)),
            )
        except (TypeError, ValueError, AttributeError) as err:  # SpecError is a ValueError: bad max_rate, randomesque
            raise DataError(f"{path}: not an exposure file ({err})") from None


@dataclass(frozen=True, eq=False)
class AdaptiveResult:
    """A finished adaptive test.

    Attributes
    ----------
    subject
        The tested system's name.
    log
        One row per answer: ``step``, ``item``, ``benchmark``, ``response``, ``criterion`` (the expected
        variance, or the information, that chose the item), ``ability_mean``, ``ability_sd``, ``score_mean``,
        ``score_sd``, ``score_ci_low``, ``score_ci_high`` (the test's headline score: its one score, or the bank's
        overall accuracy), ``max_score_sd`` (the largest posterior sd of the test's scores).
    scores
        The exact :class:`~irtbayes.evaluating.prediction.PredictedScores` from the answers.
    stop_reason
        Why the test stopped.
    warnings
        The bank's warnings.
    """

    subject: str
    log: pd.DataFrame
    scores: PredictedScores
    stop_reason: str
    warnings: tuple[str, ...] = ()

    @property
    def items(self) -> list[str]:
        return self.log["item"].astype(str).tolist()

    def summary(self, *, ci_prob: float = 0.9) -> pd.DataFrame:
        """The scores' table (:meth:`PredictedScores.summary`)."""
        return self.scores.summary(ci_prob=ci_prob)

    def to_dict(self, *, ci_prob: float = 0.9) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "stop_reason": self.stop_reason,
            "warnings": list(self.warnings),
            "log": records(self.log),
            "scores": self.scores.to_dict(ci_prob=ci_prob),
        }

    def to_text(self, *, ci_prob: float = 0.9) -> str:
        head = "".join(f"{w}\n" for w in self.warnings)
        return (
            f"{head}Adaptive test of {self.subject}: {len(self.log)} items; stopped: {self.stop_reason}\n"
            + self.scores.to_text(ci_prob=ci_prob).removeprefix(head)
        )

    def plot_trace(self, *, truth: float | None = None, ax: Axes | None = None) -> Axes:
        """The headline score's posterior mean and interval after each answer."""
        from irtbayes.core.plots import plot_test_trace

        return plot_test_trace(
            self.log,
            mean="score_mean",
            low="score_ci_low",
            high="score_ci_high",
            truth=truth,
            title=warning_tags(self.warnings) + f"Adaptive test of {self.subject}",
            ax=ax,
        )


class AdaptiveTest:
    """An adaptive test of one system, driven item by item (:meth:`next_item`, :meth:`answer`) or by :meth:`run`.

    Parameters
    ----------
    fit
        The fitted item bank (or an :class:`ItemBank`).
    score
        What the test is for: ``"benchmarks"`` (each benchmark's accuracy; default), ``"all"`` (the bank's
        overall accuracy), a benchmark's name, or ``"target"`` (each benchmark's target-weighted score; needs
        ``target``).
    target
        The audit's target (a :class:`Target`, ``"uniform"``, a CSV path or weights), for ``score="target"``.
    criterion
        ``"variance"`` or ``"information"`` (module docstring).
    max_items, min_items, se
        Stop after ``max_items`` answers, or once every score's posterior sd is at most ``se`` and at least
        ``min_items`` were answered.
    exposure
        Exposure control shared by the tests of a bank (updated when a test finishes).
    items
        Restrict the test to these items of the bank (default: all).
    prior, n_draws
        As :func:`~irtbayes.evaluating.prediction.predict_scores`.
    shortlist
        Items whose exact expected variance is computed at each step, when more are left (see :meth:`criteria`).
    ci_prob
        The probability of the log's running intervals (normal, from the running mean and sd).
    data
        The fit's own responses, for the benchmarks' deviations and the calibration (:meth:`ItemBank.from_fit`).
    calibrate
        Calibrate the final scores' intervals on the bank's own systems tested the same way (module docstring;
        :meth:`interval_factors`).
    seed
        Seed of the randomesque choice and of the final scores' draws.
    cross_fit
        A :class:`~irtbayes.evaluating.crossfit.CrossFit` of the bank's fit: the calibration's systems are then
        the folds' systems, each tested on its fold's refitted bank, so that the test's choices never rest on
        their own answers (:meth:`interval_factors`).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(40, 60, n_benchmarks=2)
    >>> answers = {i: float(k % 2) for k, i in enumerate(fit.item_ids)}
    >>> result = AdaptiveTest(fit, max_items=5, n_draws=50).run(answers.__getitem__, subject="new")
    >>> len(result.log), result.stop_reason
    (5, 'the budget of 5 items was reached')
    """

    def __init__(
        self,
        fit: Fit | ItemBank,
        *,
        score: str = "benchmarks",
        target: Any = None,
        criterion: str = "variance",
        max_items: int = 50,
        min_items: int = 1,
        se: float | None = None,
        exposure: Exposure | None = None,
        items: Sequence[str] | None = None,
        prior: str = "normal",
        n_draws: int = 200,
        shortlist: int = 400,
        ci_prob: float = 0.9,
        data: ResponseData | str | os.PathLike[str] | bool | None = None,
        calibrate: bool = True,
        seed: int | None = 0,
        cross_fit: CrossFit | None = None,
    ) -> None:
        if criterion not in CRITERIA:
            raise SpecError(f"AdaptiveTest: criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
        if int(max_items) < 1 or int(min_items) < 0:
            raise SpecError(f"AdaptiveTest: need max_items >= 1 and min_items >= 0, got {max_items} and {min_items}")
        self.ci_prob = check_ci_prob(ci_prob)
        self.calibrate = bool(calibrate)
        self.cross_fit = cross_fit
        if int(shortlist) < 1:
            raise SpecError(f"AdaptiveTest: shortlist must be at least 1, got {shortlist}")
        if se is not None and not float(se) > 0:
            raise SpecError(f"AdaptiveTest: se must be positive, got {se}")
        self.bank = (
            fit if isinstance(fit, ItemBank) else ItemBank.from_fit(fit, n_draws=n_draws, prior=prior, data=data)
        )
        if target is not None and not isinstance(target, Target):
            if isinstance(fit, ItemBank):
                raise SpecError("AdaptiveTest: with an ItemBank, give the target as a Target")
            target = evaluation_target(fit, target)
        self.target: Target | None = target
        self.score_names, self.weights = _test_scores(self.bank, score, target)
        # each item's score column: its benchmark's when the scores are per benchmark, else the one score's
        per_benchmark = len(self.score_names) > 1
        self._group = (
            pd.Index(self.score_names).get_indexer(self.bank.benchmark)
            if per_benchmark
            else np.zeros(self.bank.n_items, dtype=np.int64)
        )
        self.score = score
        self.criterion = criterion
        self.max_items, self.min_items = int(max_items), int(min_items)
        self.se = None if se is None else float(se)
        self.exposure = exposure
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.available = np.ones(self.bank.n_items, dtype=bool)
        self._settings = {"score": score, "target": target, "criterion": criterion, "max_items": self.max_items,
                          "min_items": self.min_items, "se": self.se, "shortlist": int(shortlist)}  # fmt: skip
        if items is not None:
            cols = self.bank.columns(list(items))
            if (cols < 0).any():
                raise SpecError(
                    f"AdaptiveTest: items not in the bank: {listed([i for i, c in zip(items, cols, strict=True) if c < 0], 5)}"
                )
            self.available[:] = False
            self.available[cols] = True
        self._pool = self.available.copy()  # the test's items before exposure control, for its calibration
        if exposure is not None:
            self.available &= ~exposure.blocked(self.bank.items.tolist())
        self.curve_p, self.curve_d = self.bank.grid_curves
        self.shortlist = int(shortlist)
        n_bench, n_grid = len(self.bank.benchmarks), len(self.bank.grid)
        self._joint = not np.any(self.bank.deviations > 0)  # one ability for every benchmark
        self._log_lik = np.zeros((self.bank.n_draws, n_bench, n_grid))  # per draw, benchmark and grid ability
        self.unseen = np.ones(self.bank.n_items, dtype=bool)
        self.responses: dict[int, float] = {}
        self.rows: list[dict[str, Any]] = []
        self.stop_reason = ""
        self._last_criterion = float("nan")
        # the unanswered items' part of each score (and, last, of the bank's overall accuracy), per benchmark,
        # kept up to date as items are answered (module docstring)
        self._columns = np.column_stack([self.weights, np.full(self.bank.n_items, 1.0 / self.bank.n_items)])
        p = self.curve_p
        self._m_b = np.zeros((n_bench, n_grid, self._columns.shape[1]))
        self._bern_b = np.zeros_like(self._m_b)
        for k in range(n_bench):
            mine = self.bank.benchmark_index == k
            self._m_b[k] = p[:, mine] @ self._columns[mine]
            self._bern_b[k] = (p[:, mine] * (1 - p[:, mine])) @ self._columns[mine] ** 2
        self._answered = np.zeros(self._columns.shape[1])  # sum over answered i of v_mi y_i
        self._posteriors: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ state
    def posteriors(self) -> tuple[np.ndarray, np.ndarray]:
        """The general ability's posterior (G,) and each benchmark's ability posterior (benchmarks, G) on the grid,
        as cell probabilities mixed over the item draws (the same for every benchmark without deviations); kept
        until the next answer."""
        if self._posteriors is None:
            self._posteriors = self._compute_posteriors()
        return self._posteriors

    def _compute_posteriors(self) -> tuple[np.ndarray, np.ndarray]:
        bank = self.bank
        log_post = bank.log_prior[None, :] + self._log_lik.sum(axis=1) if self._joint else None
        if log_post is not None:
            pi = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True)).mean(axis=0)
            return pi, np.broadcast_to(pi, (len(bank.benchmarks), len(pi)))
        e = np.exp(self._log_lik - self._log_lik.max(axis=2, keepdims=True))  # (S, B, G)
        lik = e.copy()
        kernels = [bank.kernel(k) for k in range(len(bank.benchmarks))]
        for k, kernel in enumerate(kernels):
            if kernel is not None:
                lik[:, k] = e[:, k] @ kernel.T
        with np.errstate(divide="ignore"):
            log_post = bank.log_prior[None, :] + np.log(lik).sum(axis=1)
        pi_s = np.exp(log_post - logsumexp(log_post, axis=1, keepdims=True))  # (S, G)
        pi_b = np.empty((len(kernels), len(bank.grid)))
        for k, kernel in enumerate(kernels):
            if kernel is None:
                pi_b[k] = pi_s.mean(axis=0)
                continue
            ratio = np.divide(pi_s, lik[:, k], out=np.zeros_like(pi_s), where=lik[:, k] > 0)
            marginal = e[:, k] * (ratio @ kernel)
            pi_b[k] = (marginal / marginal.sum(axis=1, keepdims=True)).mean(axis=0)
        return pi_s.mean(axis=0), pi_b

    def posterior(self) -> np.ndarray:
        """The general ability's posterior over the grid (cell probabilities), mixed over the item draws."""
        return self.posteriors()[0]

    def _moments(self, pi: np.ndarray, pi_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of the scores' columns (the test's scores, then the overall accuracy)."""
        if self._joint:
            m, bern = self._m_b.sum(axis=0), self._bern_b.sum(axis=0)
            mean = self._answered + pi @ m
            return mean, np.maximum(pi @ m**2 - (pi @ m) ** 2 + pi @ bern, 0.0)
        first = np.einsum("bg,bgm->m", pi_b, self._m_b)
        second = np.einsum("bg,bgm->bm", pi_b, self._m_b**2) - np.einsum("bg,bgm->bm", pi_b, self._m_b) ** 2
        var = second.sum(axis=0) + np.einsum("bg,bgm->m", pi_b, self._bern_b)
        return self._answered + first, np.maximum(var, 0.0)

    def score_moments(self, pi: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior means and variances of the test's scores (posterior-mean item curves; with benchmark
        deviations, the benchmarks' parts taken as independent)."""
        general, pi_b = self.posteriors()
        if pi is not None and self._joint:
            general = pi
        mean, var = self._moments(general, pi_b)
        return mean[:-1], var[:-1]

    @property
    def n_answered(self) -> int:
        return len(self.responses)

    def finished(self) -> bool:
        """Whether a stopping rule holds (and :attr:`stop_reason` says which)."""
        if self.n_answered >= self.max_items:
            self.stop_reason = f"the budget of {self.max_items} items was reached"
        elif not (self.available & self.unseen).any():
            self.stop_reason = "no item left to give"
        elif self.se is not None and self.n_answered >= self.min_items:
            _, var = self.score_moments()
            if np.sqrt(var.max()) <= self.se:
                self.stop_reason = f"every score's posterior sd is at most {self.se:g}"
        return bool(self.stop_reason)

    # ------------------------------------------------------------------ choosing
    def criteria(self) -> np.ndarray:
        """Per item, the criterion (expected posterior variance, smaller is better; or information, larger is
        better); NaN for items that cannot be given, and for items left off the shortlist.

        With more than ``shortlist`` items to give, the variance criterion is computed for a shortlist only: per
        score, the items with the highest expected Fisher information under the current posterior (at least 20
        of each score's items, ``shortlist`` in all). With benchmark deviations an answer is counted for what it
        tells about its own benchmark's ability (the module docstring).
        """
        pi, pi_b = self.posteriors()
        p, d = self.curve_p, self.curve_d
        open_ = self.available & self.unseen
        if self.criterion == "information":
            grid = self.bank.grid
            at = np.argmin(np.abs(grid[None, :] - (pi_b @ grid)[:, None]), axis=1)  # per benchmark
            g = at[self.bank.benchmark_index]
            cols = np.arange(self.bank.n_items)
            pq = p[g, cols] * (1 - p[g, cols])
            out = np.divide(d[g, cols] ** 2, pq, out=np.zeros_like(pq), where=pq > 0)
            return np.where(open_, out, np.nan)
        candidates = np.flatnonzero(open_)
        if len(candidates) > self.shortlist:
            candidates = self._shortlisted(pi_b, candidates)
        out = np.full(self.bank.n_items, np.nan)
        n_scores = self.weights.shape[1]
        if self._joint:
            m, bern = self._m_b.sum(axis=0)[:, :n_scores], self._bern_b.sum(axis=0)[:, :n_scores].sum(axis=1)
            out[candidates] = self._expected_variance(pi, candidates, m, bern)
            return out
        parts = self._m_b[:, :, :n_scores]
        bern_b = self._bern_b[:, :, :n_scores].sum(axis=2)  # (B, G)
        current = (
            np.einsum("bg,bgm->b", pi_b, parts**2)
            - (np.einsum("bg,bgm->bm", pi_b, parts) ** 2).sum(axis=1)
            + (pi_b * bern_b).sum(axis=1)
        )
        for k in np.unique(self.bank.benchmark_index[candidates]):
            mine = candidates[self.bank.benchmark_index[candidates] == k]
            after = self._expected_variance(pi_b[k], mine, parts[k], bern_b[k])
            out[mine] = after + current.sum() - current[k]
        return out

    def _shortlisted(self, pi_b: np.ndarray, candidates: np.ndarray) -> np.ndarray:
        """The candidates with the highest expected information, per score (see :meth:`criteria`)."""
        p, d = self.curve_p[:, candidates], self.curve_d[:, candidates]
        pq = p * (1 - p)
        info_grid = np.divide(d**2, pq, out=np.zeros_like(pq), where=pq > 0)
        info = np.einsum("gc,cg->c", info_grid, pi_b[self.bank.benchmark_index[candidates]])
        own = self._group[candidates]
        n_scores = self.weights.shape[1]
        each = max(20, self.shortlist // n_scores)
        keep = []
        for m in range(n_scores):
            mine = np.flatnonzero(own == m)
            keep.append(mine[np.argsort(-info[mine], kind="stable")[:each]])
        return candidates[np.sort(np.concatenate(keep))]

    def _expected_variance(self, pi: np.ndarray, candidates: np.ndarray, m: np.ndarray, bern: np.ndarray) -> np.ndarray:
        """Expected sum of the scores' posterior variances after answering each candidate (module docstring), for
        the ability posterior ``pi`` (G,), the unanswered part ``m`` (G, M) of the scores and its Bernoulli
        variance ``bern`` (G,)."""
        v = self.weights[candidates]
        p = self.curve_p[:, candidates]
        s2 = (m**2).sum(axis=1)
        own = self._group[candidates]
        vi = v[np.arange(len(own)), own]
        m_own = m[:, own]
        total = np.zeros(len(candidates))
        for prob in (p, 1 - p):  # the two outcomes
            w = pi[:, None] * prob  # (G, C): pi(theta) P(y | theta), unnormalised
            py = w.sum(axis=0)
            safe = np.where(py > 0, py, 1.0)
            e_m = (w.T @ m) / safe[:, None]  # (C, M)
            e_own = e_m[np.arange(len(own)), own]
            e_p = (w * p).sum(axis=0) / safe
            e_mp = (w * m_own * p).sum(axis=0) / safe
            e_p2 = (w * p * p).sum(axis=0) / safe
            e_s2 = (w.T @ s2) / safe - 2 * vi * e_mp + vi**2 * e_p2
            mean_sq = (e_m**2).sum(axis=1) - e_own**2 + (e_own - vi * e_p) ** 2
            e_bern = (w.T @ bern) / safe - vi**2 * ((w * p * (1 - p)).sum(axis=0) / safe)
            total += py * (e_s2 - mean_sq + e_bern)
        return total

    def next_item(self) -> str | None:
        """The item to give next, or None when the test has finished."""
        if self.finished():
            return None
        crit = self.criteria()
        ok = np.flatnonzero(np.isfinite(crit))
        order = ok[np.argsort(crit[ok] if self.criterion == "variance" else -crit[ok], kind="stable")]
        k = 1 if self.exposure is None else self.exposure.randomesque
        pick = int(order[self.rng.integers(min(k, len(order)))])
        self._last_criterion = float(crit[pick])
        return str(self.bank.items[pick])

    # ------------------------------------------------------------------ answering
    def answer(self, item: str, response: float) -> None:
        """Record the system's ``response`` to ``item`` and update the posterior exactly, draw by draw."""
        col = int(self.bank.columns([item])[0])
        if col < 0:
            raise DataError(f"AdaptiveTest: item {item!r} is not in the bank")
        if not self.unseen[col]:
            raise DataError(f"AdaptiveTest: item {item!r} was already answered")
        try:
            y = float(response)
        except (TypeError, ValueError):
            raise DataError(f"AdaptiveTest: the response to {item!r} is {response!r}, not a number") from None
        if not 0.0 <= y <= 1.0 or (self.bank.binary and y not in (0.0, 1.0)):
            want = "0 or 1" if self.bank.binary else "in [0, 1]"
            raise DataError(f"AdaptiveTest: the response to {item!r} is {response!r}; it must be {want}")
        b = self.bank
        k = int(b.benchmark_index[col])
        eta = irt.linear_predictor(b.grid[None, :], b.difficulty[:, col, None], b.discrimination[:, col, None])
        self._log_lik[:, k] += irt.log_likelihood(y, eta, None if b.guessing is None else b.guessing[:, col, None])
        self._posteriors = None
        self.unseen[col] = False
        self.responses[col] = y
        p = self.curve_p[:, col]
        self._m_b[k] -= p[:, None] * self._columns[col][None, :]
        self._bern_b[k] -= (p * (1 - p))[:, None] * self._columns[col][None, :] ** 2
        self._answered += y * self._columns[col]
        self._log(item, col, y)

    def _log(self, item: str, col: int, y: float) -> None:
        pi, pi_b = self.posteriors()
        mean, var = self._moments(pi, pi_b)
        head = 0 if len(self.score_names) == 1 else -1  # its one score, else the bank's overall accuracy
        h_mean, h_var = mean[head], var[head]
        var = var[:-1]
        sd = float(np.sqrt(max(h_var, 0.0)))
        z = float(norm.ppf(0.5 + self.ci_prob / 2))
        theta = float(pi @ self.bank.grid)
        self.rows.append(
            {
                "step": len(self.rows) + 1,
                "item": item,
                "benchmark": self.bank.benchmark[col],
                "response": y,
                "criterion": self._last_criterion,
                "ability_mean": theta,
                "ability_sd": float(np.sqrt(max(pi @ self.bank.grid**2 - theta**2, 0.0))),
                "score_mean": float(h_mean),
                "score_sd": sd,
                "score_ci_low": float(h_mean) - z * sd,
                "score_ci_high": float(h_mean) + z * sd,
                "max_score_sd": float(np.sqrt(var.max())),
            }
        )
        self._last_criterion = float("nan")

    # ------------------------------------------------------------------ the whole test
    def result(self, subject: str = "new-system", *, allow_fitted: bool = False) -> AdaptiveResult:
        """The test's result so far: its log and the exact scores from its answers.

        Raises
        ------
        DataError
            ``subject`` is one of the systems the bank was fitted to (its answers shaped the items' parameters, so
            its scores would look more certain than they are), unless ``allow_fitted`` (then labelled).
        """
        notes = list(self.bank.warnings)
        if subject in set(self.bank.fitted_subjects):
            if not allow_fitted:
                raise DataError(
                    f"AdaptiveTest: {subject!r} is already in the item bank; its responses shaped the item parameters, "
                    "so its scores would look more certain than they are. Name it otherwise if it is another system, "
                    "or pass allow_fitted=True (--allow-fitted)"
                )
            notes.append(f"IN THE BANK: {subject} was among the fitted systems; its intervals are too narrow.")
        y = np.zeros((1, self.bank.n_items))
        w = np.zeros_like(y)
        for col, value in self.responses.items():
            y[0, col], w[0, col] = value, 1.0
        widen = self.interval_factors() if self.calibrate else None
        scores = predict_from_arrays(
            self.bank, y, w, np.array([subject]), target=self.target, widen=widen, seed=self.seed, notes=notes
        )
        return AdaptiveResult(
            subject=subject,
            log=pd.DataFrame(self.rows, columns=_LOG_COLUMNS),
            scores=scores,
            stop_reason=self.stop_reason or "stopped by the caller",
            warnings=tuple(notes),
        )

    def interval_factors(self) -> np.ndarray | None:
        """(scopes,) how much the final intervals widen: calibrated on the bank's reference systems given this
        test (module docstring); None when the bank has no reference responses. Computed once per bank and
        settings in a process."""
        bank = self.bank
        if bank.reference is None:
            return None
        pool = hashlib.sha256(np.packbits(self._pool).tobytes()).hexdigest()
        target = None if self.target is None else json.dumps(self.target.to_dict(), sort_keys=True, default=str)
        key = (
            id(bank), *(v for k, v in self._settings.items() if k != "target"), target, self.ci_prob, pool,
            id(self.cross_fit),
        )  # fmt: skip
        if key in _FACTORS and _FACTORS[key][0] is bank:
            _FACTORS.move_to_end(key)
            return _FACTORS[key][1]
        if self.cross_fit is not None:
            factors = factors_from_ratios(self._cross_fitted_ratios(self.cross_fit), ci_prob=self.ci_prob)
            _FACTORS[key] = (bank, factors)
            return factors
        reference = bank.reference
        rows = calibration_systems(bank, ~np.isnan(reference), most=CALIBRATION_SYSTEMS)
        # a system that did not answer one of the pool's benchmarks takes another test (its items go elsewhere)
        in_pool = np.unique(bank.benchmark_index[self._pool])
        whole = answered_benchmarks(bank, ~np.isnan(reference[rows]))[:, in_pool].all(axis=1)
        if whole.sum() >= CALIBRATION_MIN_COMPLETE:
            rows = rows[whole]
        y = np.nan_to_num(reference[rows]).astype("float64")
        w = (~np.isnan(reference[rows])).astype("float64")
        log.info("calibrating the adaptive test's intervals on %d of the bank's systems tested the same way", len(y))
        masks = self._tested(bank, y, w, self._pool)
        ratios = error_ratios(bank.thinned(CALIBRATION_DRAWS), y, w, masks, ci_prob=self.ci_prob, seed=self.seed or 0)
        factors = factors_from_ratios(ratios, ci_prob=self.ci_prob)
        _FACTORS[key] = (bank, factors)
        while len(_FACTORS) > _FACTORS_KEPT:
            _FACTORS.popitem(last=False)
        return factors

    def _tested(self, bank: ItemBank, y: np.ndarray, w: np.ndarray, pool: np.ndarray) -> np.ndarray:
        """(J, N) the items each of the systems ``y``, ``w`` answers when given this test on ``bank``, from the
        items of ``pool`` (N,) it answered."""
        masks = np.zeros_like(w)
        for row in range(len(y)):
            pool_r = pool & (w[row] > 0)
            if not pool_r.any():
                continue
            test = AdaptiveTest(
                bank, **self._settings, items=bank.items[pool_r].tolist(), ci_prob=self.ci_prob, calibrate=False,
                seed=(self.seed or 0) + row,
            )  # fmt: skip
            while (item := test.next_item()) is not None:
                col = int(bank.columns([item])[0])
                test.answer(item, y[row, col])
                masks[row, col] = 1.0
        return masks

    def _cross_fitted_ratios(self, cross_fit: CrossFit) -> np.ndarray:
        """Error ratios of the folds' systems, each given this test on its fold's bank (:class:`CrossFit`)."""
        pool_items = self.bank.items[self._pool]
        log.info("calibrating the adaptive test's intervals by cross-fitting (%d folds)", len(cross_fit.banks))

        whole: dict[int, np.ndarray] = {}  # by fold bank: the folds may run in threads, in any order

        def design(bank: ItemBank, y: np.ndarray, w: np.ndarray) -> np.ndarray:
            pool = np.asarray(bank.items.isin(pool_items))
            # as on the bank itself: a system that did not answer one of the pool's benchmarks takes another test
            whole[id(bank)] = answered_benchmarks(bank, w)[:, np.unique(bank.benchmark_index[pool])].all(axis=1)
            return self._tested(bank, y, w, pool)

        ratios = cross_fit.design_ratios(design, ci_prob=self.ci_prob, seed=self.seed or 0)
        complete = np.concatenate([whole[id(bank)] for bank in cross_fit.banks])
        if complete.sum() >= CALIBRATION_MIN_COMPLETE:
            ratios[~complete] = np.nan
        return ratios

    def run(
        self, responder: Callable[[str], float], *, subject: str = "new-system", allow_fitted: bool = False
    ) -> AdaptiveResult:
        """Give the whole test, asking ``responder(item_id)`` for each answer; record it in the exposure control.

        A ``subject`` the bank was fitted to is refused before the first item unless ``allow_fitted``."""
        if subject in set(self.bank.fitted_subjects) and not allow_fitted:
            self.result(subject)  # raises, saying why
        while (item := self.next_item()) is not None:
            self.answer(item, responder(item))
        if self.exposure is not None:
            self.exposure.record([str(self.bank.items[c]) for c in self.responses])
        return self.result(subject, allow_fitted=allow_fitted)


_LOG_COLUMNS = [
    "step",
    "item",
    "benchmark",
    "response",
    "criterion",
    "ability_mean",
    "ability_sd",
    "score_mean",
    "score_sd",
    "score_ci_low",
    "score_ci_high",
    "max_score_sd",
]


def _test_scores(bank: ItemBank, score: str, target: Target | None) -> tuple[list[str], np.ndarray]:
    """The scores a test is for and their (N, M) item weights."""
    if score == "target":
        if target is None:
            raise SpecError("AdaptiveTest: score='target' needs target=")
        return score_weights(bank, target)
    names, weights = score_weights(bank, None)
    if score == "benchmarks":
        return names, weights
    if score == "all":
        return ["all"], np.full((bank.n_items, 1), 1.0 / bank.n_items)
    if score in names:
        k = names.index(score)
        return [score], weights[:, k : k + 1]
    raise SpecError(
        f"AdaptiveTest: score must be 'benchmarks', 'all', 'target' or a benchmark of the bank ({listed(names, 8)}), "
        f"got {score!r}"
    )


def run_adaptive(
    fit: Fit | ItemBank,
    responder: Callable[[str], float],
    *,
    subject: str = "new-system",
    **settings: Any,
) -> AdaptiveResult:
    """Test one system adaptively: ``AdaptiveTest(fit, **settings).run(responder, subject=subject)``.

    ``responder(item_id)`` returns the system's response (1/0, or a score in [0, 1] for a fractional bank): a
    Python function, :func:`irtbayes.evaluating.responders.file_responder` or an
    :class:`irtbayes.evaluating.responders.EndpointResponder`.
    """
    return AdaptiveTest(fit, **settings).run(responder, subject=subject)
