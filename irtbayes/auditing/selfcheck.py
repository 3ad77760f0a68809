"""The self-check of an audit: do its intervals cover the truth at their nominal rate on *this* design?

An audit's credible intervals for the Maximum Gap and the DDM are only as good as the model and the design
behind them (how many systems, how many items per benchmark, which cells are missing). :func:`self_check`
measures their coverage by simulation from the fitted posterior, on the user's own design.

Method
------
For k = 0, ..., ``n_sets`` - 1:

1. Take posterior draw s_k, evenly spaced over all (chain, draw) samples.
2. The simulated truth is that draw: abilities theta = the draw's ``ability`` (standardised by the model in
   every draw, so the refit identifies the same scale), discriminations a = its ``discrimination`` (1 when
   absent), and difficulties b = the audit's ensemble locations of that draw when the audit deconvolved
   (:mod:`irtbayes.auditing.deconvolve`, with the audit's seed, over all draws as the audit does), else the
   draw's ``difficulty``.
3. Draw Bernoulli responses y ~ sigmoid(a_i (theta_j - b_i)) (with repeated trials, k ~ Binomial(n, p) over each
   cell's n) on the **observed (subject, item) cells** of the data only, so the simulated data keep the user's
   missingness pattern, subject and item ids and item table (benchmarks). Data with several conditions per cell get one response per observed cell.
4. Refit with the approximate tier (``fit(..., sampler="approx", seed=seed + k)``, with the fit's number of
   chains and its draws per chain up to :data:`MAX_REFIT_DRAWS`) and audit the refit with
   the audit's settings and its target (same range [L, U] and bins, the same kind of reported interval:
   recalibrated across design families (:mod:`irtbayes.auditing.recalibration`) or the posterior's own,
   ``progress=False``, no nested self-check; ``max_draws`` may be lowered, which changes only the
   leaderboard, not the measures checked). The intervals checked are those the audit reports as
   ``{measure}_ci_low``/``_ci_high``.
5. The true measures are the audit's definitions applied to b (:func:`~irtbayes.auditing.truth.true_measures`)
   and each interval is compared with them (:func:`~irtbayes.auditing.truth.interval_check`), for
   :data:`MEASURES` and every benchmark scope and ``all``.

A set whose refit or audit fails is skipped with a logged warning and counted (``n_failed``); if fewer than
half of the sets succeed, :class:`~irtbayes.core.errors.FitError`. The sets are independent, each with its own
seed: they run one after another, or on a Dask cluster (``scheduler=``, :mod:`irtbayes.core.parallel`) with the
same result.

What is reported
----------------
Per (scope, measure), over the successful sets: ``coverage``, the share of sets whose interval held the
simulated truth; ``bias``, the mean of (posterior mean - truth); and the **calibration factor**. For each
set, with m the posterior mean clamped into its interval [l, h] (an equal-tailed interval need not hold the
mean of a skewed posterior), the scale c is the smallest c >= 0 with truth t in [m - c (m - l), m + c (h - m)]:
c = (t - m) / (h - m) above m, (m - t) / (m - l) below, 0 at m, and infinity when t lies beyond a side of zero
width (:func:`interval_scales`; c <= 1 exactly when the interval covers). The factor f is the ``ci_prob``
quantile of the c's (the smallest f that would have covered at least that share of the sets, numpy's
``inverted_cdf``), floored at 1: intervals are widened, never narrowed (:func:`calibration_factor`). The
**calibrated interval** of the original audit is [m - f (m - l), m + f (h - m)] around its own clamped mean,
clipped to what the measure can take: [0, U - L] for the gaps, [0, 1] for the DDM; an infinite factor gives
that whole range.

Limits
------
With few sets the quantile is coarse: at ``n_sets`` = 20 and ``ci_prob`` = 0.9 the factor is the 18th of 20
ordered scales, and below 10 sets it is their maximum; coverage itself is a share of ``n_sets`` (binomial
standard error about 0.07 at 20 sets and 90%). The refits use the approximate tier, so the check measures
the intervals of an approximate refit on data drawn from the model: it finds miscalibration that comes from
the design (few items, few systems, missing cells, the edges of the range), not from a misspecified model.
The simulated truth uses the posterior's own draws, so a design where the posterior is far from any truth
is checked around the posterior.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from irtbayes.auditing.deconvolve import deconvolved_locations, prior_draws
from irtbayes.auditing.draws import PosteriorDraws, draw_chunks, extract_draws
from irtbayes.auditing.recalibration import CALIBRATED
from irtbayes.auditing.result import AuditResult
from irtbayes.auditing.settings import DEFAULT_INFORMATION_DRAWS, DEFAULT_MAX_DRAWS, AuditSettings
from irtbayes.auditing.truth import interval_check, true_measures
from irtbayes.core import irt
from irtbayes.core.errors import FitError, SpecError
from irtbayes.core.files import json_ready
from irtbayes.core.parallel import Scheduler, map_tasks
from irtbayes.core.summaries import check_ci_prob, format_interval, spaced, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit
from irtbayes.model.spec import UNLABELLED

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "MEASURES",
    "SAMPLER",
    "SHORTFALL",
    "SelfCheck",
    "calibration_factor",
    "interval_scales",
    "self_check",
]

log = logging.getLogger(__name__)

#: The measures checked: each is a column prefix of the audit's benchmarks table.
MEASURES = ("max_gap", "interior_gap", "edge_gap_low", "edge_gap_high", "ddm_w1")
#: Coverage this far below the nominal rate counts as short of it in :meth:`SelfCheck.to_text`.
SHORTFALL = 0.05
#: Most draws per chain of each refit (500 over 4 chains; each refit's audit costs in proportion).
MAX_REFIT_DRAWS = 125
#: Draws for the information curves of each simulated audit (they do not enter the measures checked).
CHECK_INFORMATION_DRAWS = 10
#: The fitting tier of the refits.
SAMPLER: Literal["approx"] = "approx"
_TABLE_COLUMNS = [
    "scope",
    "measure",
    "coverage",
    "n_sets",
    "bias",
    "factor",
    "mean",
    "ci_low",
    "ci_high",
    "calibrated_ci_low",
    "calibrated_ci_high",
    "nominal",
]


# ============================================================================================ the factor
def interval_scales(
    mean: np.ndarray | Sequence[float] | float,
    ci_low: np.ndarray | Sequence[float] | float,
    ci_high: np.ndarray | Sequence[float] | float,
    truth: np.ndarray | Sequence[float] | float,
) -> np.ndarray:
    """Per set, the smallest c >= 0 with the truth in [m - c (m - low), m + c (high - m)].

    ``m`` is the mean clamped into [low, high]. c <= 1 exactly when the interval holds the truth; c is 0 when
    the truth equals ``m`` and infinite when it lies beyond a side of zero width.

    Parameters
    ----------
    mean, ci_low, ci_high, truth
        Arrays of one shape (one entry per simulated set).

    Returns
    -------
    numpy.ndarray
        The scales, float64, of the arguments' broadcast shape.

    Examples
    --------
    >>> from irtbayes.auditing.selfcheck import interval_scales
    >>> interval_scales(1.0, 0.5, 1.5, [1.2, 2.0, 0.0, 1.0]).tolist()
    [0.4, 2.0, 2.0, 0.0]
    >>> interval_scales(0.0, 0.0, 0.0, [0.0, 0.3]).tolist()
    [0.0, inf]
    """
    lo = np.asarray(ci_low, dtype="float64")
    hi = np.asarray(ci_high, dtype="float64")
    t = np.asarray(truth, dtype="float64")
    m = np.clip(np.asarray(mean, dtype="float64"), lo, hi)
    lo, hi, t, m = np.broadcast_arrays(lo, hi, t, m)
    up, down = hi - m, m - lo
    out = np.zeros(t.shape, dtype="float64")
    above, below = t > m, t < m
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(above, np.where(up > 0, (t - m) / np.where(up > 0, up, 1.0), np.inf), out)
        out = np.where(below, np.where(down > 0, (m - t) / np.where(down > 0, down, 1.0), np.inf), out)
    return out


def calibration_factor(scales: np.ndarray | Sequence[float], prob: float) -> float:
    """The ``prob`` quantile of the per-set scales, floored at 1: how much to widen an interval.

    The quantile is numpy's ``inverted_cdf``: the smallest scale that would have covered at least ``prob`` of
    the sets (an order statistic, never an interpolation, so infinite scales are handled). NaN scales
    (a set without a value) are left out; none left gives NaN.

    Examples
    --------
    >>> from irtbayes.auditing.selfcheck import calibration_factor
    >>> calibration_factor([0.4, 2.0, 2.0, 0.1, 0.2], 0.5)  # the 3rd of 5 ordered scales: 0.4, floored at 1
    1.0
    >>> calibration_factor([0.4, 2.0, 2.0, 0.1, 0.2], 0.9)  # the 5th: 2
    2.0
    """
    prob = check_ci_prob(prob)
    values = np.asarray(scales, dtype="float64").ravel()
    values = values[~np.isnan(values)]
    if values.size == 0:
        return float("nan")
    return float(max(1.0, float(np.quantile(values, prob, method="inverted_cdf"))))


def _calibrated(mean: float, low: float, high: float, factor: float, upper: float) -> tuple[float, float]:
    """The interval widened by ``factor`` around its clamped mean, clipped to [0, upper], holding [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return float("nan"), float("nan")
    m = min(max(mean, low), high) if math.isfinite(mean) else 0.5 * (low + high)
    if math.isnan(factor):
        return float(low), float(high)
    if math.isinf(factor):  # some truth lay beyond a side of zero width: the whole range the measure can take
        return float(min(0.0, low)), float(max(upper, high))
    new_low = min(max(0.0, m - factor * (m - low)), low)
    new_high = max(min(upper, m + factor * (high - m)), high)
    return float(new_low), float(new_high)


# ============================================================================================ the result
@dataclass(frozen=True)
class SelfCheck:
    """The coverage of an audit's intervals on its own design, by simulation from the posterior.

    Attributes
    ----------
    table
        One row per (scope, measure): ``scope`` (``all`` and each benchmark), ``measure``
        (:data:`MEASURES`), ``coverage`` (share of successful sets whose interval held the truth), ``n_sets``
        (successful sets), ``bias`` (mean of posterior mean - truth), ``factor`` (the calibration factor, >= 1),
        ``mean``, ``ci_low``, ``ci_high`` (the original audit's), ``calibrated_ci_low``, ``calibrated_ci_high``
        (its interval widened by the factor) and ``nominal`` (the coverage claimed).
    sets
        One row per (set, scope, measure): ``set``, ``scope``, ``measure``, ``truth``, ``mean``, ``ci_low``,
        ``ci_high``, ``covers``, ``error``, ``width`` and ``scale`` (:func:`interval_scales`).
    n_sets
        Sets that succeeded.
    n_failed
        Sets skipped because their refit or audit failed.
    seconds
        Wall time of the whole check.
    sampler
        The refits' tier: ``"approx"``.
    seed
        Seed of the check (set k's responses and refit use ``seed + k``).
    nominal
        The coverage the intervals are checked against (default: the audit's ``ci_prob``).
    interval_prob
        The probability of the audit's (and the simulated audits') intervals.
    """

    table: pd.DataFrame
    sets: pd.DataFrame
    n_sets: int
    n_failed: int
    seconds: float
    sampler: str
    seed: int
    nominal: float
    interval_prob: float

    def summary(self) -> pd.DataFrame:
        """The table: the audit's interval ends ``ci_low`` and ``ci_high`` (of probability ``attrs["ci_prob"]``),
        and the calibrated interval ``calibrated_ci_low`` and ``calibrated_ci_high``, which aims at ``nominal``.
        """
        out = summary_table(self.table, self.interval_prob)
        out.attrs = {"ci_prob": self.interval_prob, "nominal": self.nominal, "sampler": self.sampler}
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values: the check's settings and counts, and the table as a list of records."""
        out = {
            "sampler": self.sampler,
            "seed": self.seed,
            "n_sets": self.n_sets,
            "n_failed": self.n_failed,
            "seconds": self.seconds,
            "nominal": self.nominal,
            "interval_prob": self.interval_prob,
            "measures": list(MEASURES),
            "table": self.table.to_dict(orient="records"),
        }
        result: dict[str, Any] = json_ready(out)
        return result

    def to_text(self) -> str:
        """Per scope, the Maximum Gap and the DDM: the reported interval, its coverage here, the calibrated one."""
        pct, nominal = f"{self.interval_prob:.0%}", f"{self.nominal:.0%}"
        lines = [
            f"Self-check of the audit's {pct} intervals on this design: {self.n_sets} data sets simulated from the "
            f"posterior on the observed cells ({self.n_failed} failed), each refitted with the approximate tier "
            f"(sampler='{self.sampler}') and audited with the audit's settings; coverage is checked against "
            f"{nominal} ({self.seconds:.0f} s).",
        ]
        if self.n_sets < 20:
            lines.append(
                f"With {self.n_sets} sets the coverage and the calibration factors are coarse (use n_sets >= 20)."
            )
        names = {"max_gap": "Maximum Gap", "ddm_w1": "DDM"}
        for scope, rows in self.table.groupby("scope", sort=False):
            parts = []
            for _, r in rows.loc[rows["measure"].isin(list(names))].iterrows():
                text = (
                    f"{names[str(r['measure'])]} {format_interval(r, '')} held the truth in {r['coverage']:.0%} of sets"
                )
                if r["coverage"] < self.nominal - SHORTFALL:
                    text += (
                        f", short of {nominal}: widened to its calibrated level "
                        f"[{r['calibrated_ci_low']:.2f}, {r['calibrated_ci_high']:.2f}] (factor {r['factor']:.2f})"
                    )
                parts.append(text)
            label = "All items" if scope == "all" else str(scope)
            lines.append(f"{label}: " + "; ".join(parts) + ".")
        return "\n".join(lines)

    def plot_coverage(self, ax: Axes | None = None) -> Axes:
        """Achieved coverage per scope (rows) and measure (markers), against the nominal rate (dashed line)."""
        import matplotlib.pyplot as plt

        scopes = list(dict.fromkeys(self.table["scope"].astype(str)))
        if ax is None:
            _, ax = plt.subplots(figsize=(6.0, 1.0 + 0.45 * len(scopes)), layout="constrained")
        markers = ("o", "s", "^", "v", "D", "P")
        measures = list(dict.fromkeys(self.table["measure"].astype(str)))
        for j, measure in enumerate(measures):
            rows = self.table.loc[self.table["measure"] == measure].set_index("scope")
            y = np.arange(len(scopes)) + (j - (len(measures) - 1) / 2) * 0.12
            x = rows.reindex(scopes)["coverage"].to_numpy(dtype="float64")
            ax.plot(x, y, linestyle="none", marker=markers[j % len(markers)], label=measure)
        ax.axvline(self.nominal, color="0.3", linestyle="--", linewidth=1, label=f"nominal {self.nominal:.0%}")
        ax.set_yticks(np.arange(len(scopes)), scopes)
        ax.invert_yaxis()
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel(f"coverage of the {self.interval_prob:.0%} intervals over {self.n_sets} simulated sets")
        ax.set_title("Self-check: coverage on this design (approximate refits)")
        ax.legend(loc="lower left", fontsize="small")
        return ax


# ============================================================================================ the check
def self_check(
    posterior: Fit,
    data: ResponseData,
    audited: AuditResult,
    *,
    n_sets: int = 20,
    seed: int = 0,
    progress: bool = True,
    ci_prob: float | None = None,
    max_draws: int | None = None,
    audit_fn: Callable[..., AuditResult] | None = None,
    locations: np.ndarray | None = None,
    scheduler: Scheduler = None,
) -> SelfCheck:
    """Check the coverage of an audit's intervals on this design by simulation from the posterior.

    The method is in the module docstring: ``n_sets`` data sets drawn from posterior draws on the observed
    cells, each refitted with the approximate tier and audited like the original.

    Parameters
    ----------
    posterior
        The :class:`~irtbayes.fitting.result.Fit` the audit was made from (its ``spec`` is refitted).
    data
        The responses it was fitted to (binary).
    audited
        The audit being checked; its target fixes [L, U] and the bins of every simulated audit, its settings
        (seed, ensemble, ``min_items``, ...) are reused.
    n_sets, seed, progress
        Simulated data sets (each one approximate fit and one audit); set k draws its responses and refits with
        ``seed + k``; a progress bar over the sets.
    ci_prob
        The coverage claimed and the factor's quantile (default: the audit's ``ci_prob``; the simulated audits
        keep the audit's own intervals, so another value checks them against another claim).
    max_draws
        Leaderboard draws of the simulated audits (default: the audit's); they do not enter the measures checked.
    audit_fn
        The audit verb, :func:`irtbayes.auditing.run.audit` (which imports this module, so it is passed in),
        called as ``audit_fn(fit, data, settings=...)`` on each refit.
    locations
        (sample, item) the audit's own item locations, the simulated truths (``audit(..., self_check=N)`` passes
        them); None deconvolves them again with the audit's seed and chunks.
    scheduler
        Where the sets are refitted: None (default) one after another on this machine, or on the Dask cluster
        named by :data:`~irtbayes.core.parallel.SCHEDULER_ENV` when it is set; an address (``tcp://host:8786``)
        or a ``dask.distributed.Client``: on that cluster (:func:`~irtbayes.core.parallel.map_tasks`). Each set
        carries its own seed, so the check is the same wherever it runs.

    Returns
    -------
    SelfCheck

    Raises
    ------
    SpecError
        ``posterior`` is not a Fit, the data are not binary, the model is not a one-dimensional 1PL or 2PL,
        ``n_sets`` < 1 or a bad ``ci_prob``; a scheduler that cannot be reached, or one given without
        ``dask.distributed`` installed.
    FitError
        Fewer than half of the sets could be refitted and audited.

    Examples
    --------
    >>> import warnings
    >>> from irtbayes.auditing.run import audit
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.fitting.fit import fit
    >>> data, _ = simulate_responses(60, 40, n_benchmarks=2, seed=1)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fitted = fit(data, sampler="approx", chains=2, draws=100, seed=1, progress=False)
    >>> audited = audit(fitted, data, range=(-2.5, 2.5), bins=5, ensemble="draws")
    >>> check = self_check(fitted, data, audited, n_sets=2, progress=False, audit_fn=audit)
    >>> sorted(set(check.table["scope"])), check.sampler
    (['all', 'bench00', 'bench01'], 'approx')
    """
    started = time.perf_counter()
    audit_fn = _check_inputs(posterior, data, audited, n_sets, audit_fn)
    nominal = check_ci_prob(audited.ci_prob if ci_prob is None else ci_prob)
    settings = _audit_settings(audited, max_draws)
    options: dict[str, Any] = {"seed": int(seed), "progress": progress, "locations": locations, "scheduler": scheduler}
    checks, failures = _simulated_checks(posterior, data, audited, settings, audit_fn, n_sets=n_sets, **options)
    n_ok = len(checks)
    if n_ok == 0 or n_ok < n_sets / 2:
        raise FitError(
            f"the self-check could refit and audit only {n_ok} of {n_sets} simulated data sets (fewer than half); "
            f"first failure: {failures[0] if failures else 'none'}"
        )
    sets = pd.concat(checks, ignore_index=True)
    sets["scale"] = interval_scales(sets["mean"], sets["ci_low"], sets["ci_high"], sets["truth"])
    table = _summarise(sets, audited, nominal)
    seconds = time.perf_counter() - started
    message = "self-check of %s: %d sets (%d failed) refitted with the approximate tier in %.1fs (%.1fs per set)"
    log.info(message, data.source, n_ok, len(failures), seconds, seconds / n_sets)
    return SelfCheck(
        *(table, sets, n_ok, len(failures), float(seconds), SAMPLER, int(seed), nominal, float(audited.ci_prob))
    )


# ============================================================================================ helpers
def _simulated_checks(
    posterior: Fit,
    data: ResponseData,
    audited: AuditResult,
    settings: AuditSettings,
    audit_fn: Callable[..., AuditResult],
    *,
    n_sets: int,
    seed: int,
    progress: bool,
    locations: np.ndarray | None,
    scheduler: Scheduler,
) -> tuple[list[pd.DataFrame], list[str]]:
    """Each set simulated, refitted, audited and compared with its truth; the checks and the failures."""
    post = posterior.posterior
    draws = extract_draws(post, data)
    if locations is None:
        truth_locations = _truth_locations(post, data, draws, audited)
    else:
        truth_locations = np.asarray(locations)
        if truth_locations.shape != draws.difficulty.shape:
            raise SpecError(
                f"locations must be (sample, item) = {draws.difficulty.shape}, as the posterior's draws; got "
                f"{truth_locations.shape}"
            )
    picks = spaced(draws.difficulty.shape[0], n_sets)
    if len(picks) < n_sets:  # fewer draws than sets: draws are reused, each set with its own responses
        picks = np.resize(picks, n_sets)
    tasks = []
    for k in range(n_sets):
        s = int(picks[k])
        a = None if draws.discrimination is None else draws.discrimination[s]
        tasks.append(_SetTask(k, s, int(seed) + k, draws.ability[s, :, 0], a, truth_locations[s]))
    common = {
        "data": data,
        "cells": _observed_cells(data),
        "spec": posterior.spec,
        "size": _refit_size(posterior),
        "settings": settings,
        "audit_fn": audit_fn,
        "labels": _benchmark_labels(data),
        "target": audited.target,
    }

    def logged(index: int, outcome: _SetOutcome) -> None:
        if outcome.failure:
            log.warning(
                "self-check set %d of %d (draw %d) failed and is skipped: %s",
                *(index + 1, n_sets, outcome.draw, outcome.failure),
            )
        else:
            log.info(
                "self-check set %d of %d (draw %d): %.1fs (approximate fit %.1fs, audit %.1fs)",
                *(index + 1, n_sets, outcome.draw, outcome.seconds, outcome.fit_seconds),
                outcome.seconds - outcome.fit_seconds,
            )

    outcomes = map_tasks(
        _one_set, tasks, common=common, scheduler=scheduler, progress=progress, desc="self-check", on_done=logged
    )
    checks = [o.check for o in outcomes if o.check is not None]
    return checks, [o.failure for o in outcomes if o.failure]


@dataclass(frozen=True)
class _SetTask:
    """One simulated set: its index, the posterior draw it simulates from (abilities, discriminations or None for
    1, the truth's difficulties) and the seed of its responses and refit."""

    k: int
    draw: int
    seed: int
    ability: np.ndarray
    discrimination: np.ndarray | None
    difficulty: np.ndarray


@dataclass(frozen=True)
class _SetOutcome:
    """What one set gives back: its intervals against the truth (None when it failed), the failure, its times."""

    draw: int
    check: pd.DataFrame | None
    failure: str
    seconds: float
    fit_seconds: float


def _one_set(
    task: _SetTask,
    *,
    data: ResponseData,
    cells: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    spec: Any,
    size: dict[str, Any],
    settings: AuditSettings,
    audit_fn: Callable[..., AuditResult],
    labels: list[str],
    target: Any,
) -> _SetOutcome:
    """Simulate set ``task.k``, refit it with the approximate tier, audit it and compare its intervals with the
    truth; a failed set is returned with its error, to be skipped and counted (runs wherever the map sends it)."""
    t0 = time.perf_counter()
    t_fit = 0.0
    try:
        sim = _simulate(data, task, cells)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the approximate tier warns that MCMC checks do not apply
            refit = fit(sim, spec, sampler=SAMPLER, seed=task.seed, progress=False, **size)
        t_fit = time.perf_counter() - t0
        result = audit_fn(refit, sim, settings=settings)
        check = _compare(result, task.difficulty, labels, target, task.k)
    except Exception as error:  # a failed set is skipped and counted, as documented
        return _SetOutcome(task.draw, None, f"{type(error).__name__}: {error}", time.perf_counter() - t0, t_fit)
    return _SetOutcome(task.draw, check, "", time.perf_counter() - t0, t_fit)


def _check_inputs(
    posterior: Any, data: Any, audited: Any, n_sets: Any, audit_fn: Callable[..., AuditResult] | None
) -> Callable[..., AuditResult]:
    """The audit verb; :class:`SpecError` for what the self-check cannot check (see :func:`self_check`)."""
    if not isinstance(posterior, Fit):
        raise SpecError(
            f"the self-check needs the Fit the audit was made from (its model spec is refitted), got "
            f"{type(posterior).__name__}"
        )
    if not isinstance(data, ResponseData):
        raise SpecError(f"data must be a ResponseData, got {type(data).__name__}")
    if not isinstance(audited, AuditResult):
        raise SpecError(f"audited must be an AuditResult, got {type(audited).__name__}")
    if isinstance(n_sets, bool) or not isinstance(n_sets, (int, np.integer)) or n_sets < 1:
        raise SpecError(f"n_sets must be a whole number >= 1, got {n_sets!r}")
    if data.response_kind not in ("binary", "counts"):
        raise SpecError(
            "the self-check supports binary (0/1) responses and k successes of n trials only: it simulates "
            f"Bernoulli or binomial responses and refits with the approximate tier; {data.source} has "
            f"{data.response_kind} responses"
        )
    spec = posterior.spec
    if spec.kind not in ("1pl", "2pl") or spec.dims != "one":
        raise SpecError(
            "the self-check supports the 1PL and 2PL with one ability dimension only (what the approximate tier "
            f"refits); this fit is a {spec.kind} with dims={spec.dims!r}"
        )
    if audit_fn is None:
        raise SpecError(
            "self_check needs the audit verb: pass audit_fn=irtbayes.auditing.run.audit, or run "
            "audit(fit, data, self_check=N)"
        )
    return audit_fn


def _audit_settings(audited: AuditResult, max_draws: int | None) -> AuditSettings:
    """The audit's settings as recorded, with its target (fixing [L, U] and the bins) and no progress bars."""
    rec = audited.settings
    if rec.get("n_fixed_items"):
        log.warning(
            "the audit held %d item(s) fixed in its ensemble; their ids are not recorded, so the self-check "
            "deconvolves them like the others",
            rec["n_fixed_items"],
        )
    ensemble = rec.get("ensemble") if rec.get("ensemble") in ("deconvolved", "draws") else "auto"
    return AuditSettings(
        target=audited.target,
        ci_prob=float(audited.ci_prob),
        min_items=int(rec.get("min_items", AuditSettings.min_items)),
        max_draws=rec.get("max_draws", DEFAULT_MAX_DRAWS) if max_draws is None else max_draws,
        # the information curves do not enter the measures checked: a few draws keep each audit cheap
        information_draws=min(int(rec.get("information_draws") or DEFAULT_INFORMATION_DRAWS), CHECK_INFORMATION_DRAWS),
        resample_items=bool(rec.get("resample_items", True)),
        top_k=int(rec.get("top_k", AuditSettings.top_k)),
        group_threshold=float(rec.get("group_threshold", AuditSettings.group_threshold)),
        grid_points=int(rec.get("grid_points", AuditSettings.grid_points)),
        seed=int(rec.get("seed", 0)),
        progress=False,
        ensemble=str(ensemble),
        calibrated_intervals=_reports_recalibrated(audited),
        self_check=0,
    ).checked()


def _reports_recalibrated(audited: AuditResult) -> bool:
    """Whether the audit reported recalibrated intervals (:mod:`irtbayes.auditing.recalibration`) as ``*_ci_*``."""
    recorded = audited.settings.get("calibrated_intervals")
    if recorded is not None:
        return bool(recorded)
    return "max_gap_posterior_ci_low" in audited.benchmarks.columns


def _refit_size(posterior: Fit) -> dict[str, Any]:
    """The fit's chains and draws per chain, the draws capped at :data:`MAX_REFIT_DRAWS`: each refit's audit costs
    in proportion to its draws, and a few hundred settle a 90% interval's ends for a coverage check."""
    out: dict[str, Any] = {}
    for key in ("chains", "draws"):
        value = posterior.sampler.get(key)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1:
            out[key] = int(value)
    if "draws" in out:
        out["draws"] = min(out["draws"], MAX_REFIT_DRAWS)
    return out


def _benchmark_labels(data: ResponseData) -> list[str]:
    return [UNLABELLED if pd.isna(b) else str(b) for b in data.items["benchmark"]]


def _truth_locations(post: Any, data: ResponseData, draws: PosteriorDraws, audited: AuditResult) -> np.ndarray:
    """(sample, item) difficulties of the simulated truth: the audit's ensemble locations, or the draws."""
    difficulty = draws.difficulty
    if audited.settings.get("ensemble") != "deconvolved":
        return difficulty
    labels = _benchmark_labels(data)
    prior = prior_draws(post, labels)
    if prior is None:
        log.info("the posterior has no difficulty hyperparameters: the simulated truth uses the fit's draws")
        return difficulty
    names = sorted(set(labels))
    groups = [np.flatnonzero(np.asarray(labels) == name) for name in names]
    n_samples, n_items = difficulty.shape
    chunks = draw_chunks(n_samples, n_items)  # the audit's chunks: the same draws of the locations
    locations, populations = deconvolved_locations(
        difficulty, prior, groups, chunks=chunks, seed=int(audited.settings.get("seed", 0))
    )
    return difficulty if not populations else np.asarray(locations)


def _observed_cells(data: ResponseData) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Subject and item codes of the observed (subject, item) cells, each once, and with repeated trials each
    cell's number of trials (its first condition's, where there are several), else None."""
    cells, first = np.unique(np.stack([data.subject_codes, data.item_codes], axis=1), axis=0, return_index=True)
    trials = data.trials[first] if data.has_trials else None
    return cells[:, 0], cells[:, 1], trials


def _simulate(
    data: ResponseData, task: _SetTask, cells: tuple[np.ndarray, np.ndarray, np.ndarray | None]
) -> ResponseData:
    """2PL responses of the task's posterior draw on the observed cells, with the data's ids and item table:
    Bernoulli, or Binomial over each cell's trials for data with repeated trials."""
    subject_code, item_code, trials = cells
    rng = np.random.default_rng([task.seed, 20261203])
    difficulty = task.difficulty
    a = np.ones(difficulty.shape) if task.discrimination is None else task.discrimination
    p = irt.probability(task.ability[subject_code], difficulty[item_code], a[item_code])
    frame = pd.DataFrame(
        {
            "subject": data.subject_ids.astype(str).to_numpy()[subject_code],
            "item": data.item_ids.astype(str).to_numpy()[item_code],
        }
    )
    if trials is None:
        frame["response"] = (rng.uniform(size=p.shape) < p).astype("float64")
        read: dict[str, Any] = {"scoring": "binary"}
    else:
        frame["successes"], frame["trials"] = rng.binomial(trials, p), trials
        read = {"successes": "successes", "trials": "trials"}
    return ResponseData.from_long(
        frame,
        items=data.items.reset_index(),
        subjects=data.subjects.reset_index(),
        source=f"self-check set {task.k} of {data.source} (posterior draw {task.draw})",
        **read,
    )


def _compare(result: AuditResult, difficulty: np.ndarray, labels: list[str], target: Any, k: int) -> pd.DataFrame:
    """Set ``k``'s intervals (``all`` and the benchmark scopes) against the measures of its true difficulties on
    the audit's ``target``."""
    truth = true_measures(difficulty, labels, target)
    table = result.benchmarks
    check = interval_check(table.loc[table["scope_kind"].isin(["all", "benchmark"])], truth, measures=MEASURES)
    check.insert(0, "set", k)
    return check


def _summarise(sets: pd.DataFrame, audited: AuditResult, nominal: float) -> pd.DataFrame:
    """Per (scope, measure): coverage, bias, factor, the audit's interval and the calibrated one."""
    original = audited.benchmarks
    original = original.loc[original["scope_kind"].isin(["all", "benchmark"])].set_index("scope")
    width = float(audited.target.hi - audited.target.lo)
    rows = []
    for (scope, measure), group in sets.groupby(["scope", "measure"], sort=False):
        factor = calibration_factor(group["scale"].to_numpy(), nominal)
        mean, low, high = (float(original.loc[scope, f"{measure}_{part}"]) for part in ("mean", "ci_low", "ci_high"))
        bound = CALIBRATED[measure][1]  # the measure's range: [0, U - L] for a gap, [0, 1] for the DDM
        upper = width if bound == "range" else float(bound)
        cal_low, cal_high = _calibrated(mean, low, high, factor, upper)
        rows.append(
            {
                "scope": scope,
                "measure": measure,
                "coverage": float(group["covers"].mean()),
                "n_sets": len(group),
                "bias": float(group["error"].mean()),
                "factor": factor,
                "mean": mean,
                "ci_low": low,
                "ci_high": high,
                "calibrated_ci_low": cal_low,
                "calibrated_ci_high": cal_high,
                "nominal": nominal,
            }
        )
    return pd.DataFrame(rows, columns=_TABLE_COLUMNS)
