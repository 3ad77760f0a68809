"""Full-benchmark scores of new systems from the items they answered: ``predict_scores(fit, responses)``.

A new system j answers a set A_j of the bank's items (a subset, an adaptive test, or all of them). Its score on
benchmark B is its accuracy over *all* of B's N_B items in the bank:

    acc_jB = (1 / N_B) [ sum_{i in B, i in A_j} y_ji  +  sum_{i in B, i not in A_j} y*_ji ]

where the answered items count as answered and the unanswered ones, y*, are predicted. Per posterior draw s of
the item parameters (``n_draws`` evenly spaced draws of the fit):

1. the system's posterior given its responses and draw s's item parameters is computed exactly on the ability
   grid: its general ability theta (prior: :mod:`irtbayes.evaluating.bank`) and, where the bank has benchmark
   deviations tau_B, its ability on each benchmark theta_B = theta + delta_B (the answers on B bear on theta_B
   directly and on the other benchmarks through theta); theta_s is drawn from its posterior, then each theta_Bs
   given theta_s and the answers on B (each uniformly jittered within its grid cell);
2. each unanswered item's response is drawn, y*_ji ~ Bernoulli(P_i(theta_Bs | draw s)) with B the item's
   benchmark, so the interval covers the accuracy the system would actually reach on the items it did not answer,
   not only its expected value.

The row ``benchmark = "all"`` is the accuracy over every item of the bank. ``accuracy_mean`` is the
Rao-Blackwellised posterior mean: the average over draws (:data:`MEAN_DRAWS` of them, evenly spaced) of the
observed responses plus each unanswered item's probability integrated over the ability posterior of that draw
(:func:`integrated_probabilities`), so neither the ability draw nor the Bernoulli draw adds Monte Carlo noise to
it; ``accuracy_ci_low`` / ``accuracy_ci_high`` are the equal-tailed interval of the draws. For a bank fitted to
fractional scores the unanswered items enter with their expected score (no Bernoulli draw), and
the output says so.

Intervals calibrated on the bank's own systems
----------------------------------------------
The model's intervals hold when the model holds. Real systems are not one- (or few-) dimensional 2PL responders:
a strong model slips on easy items, a weak one guesses, and items chosen for their information at the centre
of the population say little about the tails. So, where the bank keeps responses of its own systems
(:attr:`~irtbayes.evaluating.bank.ItemBank.reference`, read with the fit's data), :func:`predict_scores`
scores up to 100 of them as if they were new, from their answers to the *same items* the new systems answered,
and widens each scope's interval (scaling the draws about the posterior mean) by the factor that makes
``ci_prob`` of those intervals cover the systems' actual accuracy (:func:`interval_factors`; never narrower
than the model's own). New systems that answered different benchmarks are calibrated apart
(:func:`calibration_factors`). The factors are reported (``widen`` and the table's ``interval_factor`` per system
and scope, the text's header, ``interval_calibration`` in ``to_dict``). The overall score (``all``, over several
benchmarks) is calibrated only on systems that answered at least half of every benchmark's items (the bank keeps
up to 100 such systems beside the evenly spaced ones): a system's accuracy over the one or two benchmarks it
answered is not an overall score, and a system's errors on different benchmarks do not average out as the model's
draws do, so its overall error is larger relative to the interval than its error on one benchmark. Where the
bank's systems answered k successes of n trials (:attr:`~irtbayes.evaluating.bank.ItemBank.reference_trials`),
they are calibrated per trial: a system's accuracy is sum k / sum n, its abilities come from the binomial
likelihood and an item left to predict is drawn as Binomial(n, P) / n, so the errors and intervals compared are
those of n trials, not of one. The bank's systems shaped its item parameters, so with a bank of few systems the
factors err on the narrow side. The target-weighted scores keep the model's own intervals.

The target-weighted score
-------------------------
With a :class:`~irtbayes.auditing.targets.Target`, each scope (benchmark, and ``all``) is also scored as the
audit's re-weighted leaderboard scores it (:mod:`irtbayes.auditing.ranking`, with every item weighted alike), on
the completed responses: in draw s the items are binned by their difficulty b_i(s), each bin's accuracy is the
mean of its items' (answered or predicted) responses, and the score is sum_k w_k acc_k(s) / sum_k w_k over the
bins holding an item (items outside [L, U] carry no weight).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit

from irtbayes.auditing.settings import resolve_target
from irtbayes.auditing.targets import Target
from irtbayes.core import irt
from irtbayes.core.errors import DataError, SpecError, listed
from irtbayes.core.summaries import check_ci_prob, records, spaced, summarize, summary_table
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.bank import ItemBank, answered_benchmarks, warning_tags

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.fitting.result import Fit

__all__ = [
    "ALL",
    "ChosenItems",
    "PredictedScores",
    "ability_draws",
    "ability_posteriors",
    "benchmark_abilities",
    "calibration_factors",
    "calibration_systems",
    "check_new_responses",
    "evaluation_target",
    "integrated_probabilities",
    "interval_factors",
    "predict_from_arrays",
    "predict_scores",
    "predicted_draws",
    "scope_membership",
    "selection_factors",
    "selection_rows",
    "target_bins",
    "widened",
]

#: The scope of every item of the bank.
ALL = "all"


def evaluation_target(
    fit: Fit,
    target: Any,
    *,
    bins: int | Sequence[float] | None = None,
    target_range: Sequence[float] | None = None,
    group: Sequence[str] | None = None,
) -> Target:
    """The target as the audit resolves it (:func:`irtbayes.auditing.settings.resolve_target`), from a fit alone.

    ``target`` is a :class:`Target`, ``"uniform"``, a CSV path or weights per bin; the default range is the
    audit's, from the fitted systems' abilities.
    """
    post = fit.posterior["ability"]
    ability = post.transpose("chain", "draw", "subject").values.reshape(-1, post.sizes["subject"])
    resolved, _ = resolve_target(
        target, bins=bins, target_range=target_range, group=group, ability=ability, subjects=list(fit.subject_ids)
    )
    return resolved


def check_new_responses(bank: ItemBank, responses: ResponseData, *, allow_fitted: bool = False) -> list[str]:
    """Refuse responses the bank cannot score; return the warnings the outputs must carry.

    Raises
    ------
    DataError
        Not :class:`ResponseData`, items the bank does not hold, or subjects the bank was fitted to (unless
        ``allow_fitted``: their own responses shaped the item parameters, so their intervals are too narrow).
    """
    if not isinstance(responses, ResponseData):
        raise DataError(f"expected ResponseData for the new systems, got {type(responses).__name__}")
    unknown = responses.item_ids.difference(bank.items)
    if len(unknown):
        raise DataError(
            f"{responses.source}: {len(unknown)} item(s) are not in the fitted item bank: {listed(list(unknown), 5)}; "
            "refit with them, or drop them (data.subset(items=...))"
        )
    notes = list(bank.warnings)
    fitted = responses.subject_ids.intersection(bank.fitted_subjects)
    if len(fitted):
        if not allow_fitted:
            raise DataError(
                f"{responses.source}: {len(fitted)} subject(s) are already in the item bank: {listed(list(fitted), 5)}; "
                "their responses shaped the item parameters, so their scores would look more certain than they are. "
                "Rename them if they are other systems, or pass allow_fitted=True (--allow-fitted) to score them anyway"
            )
        notes.append(
            f"IN THE BANK: {listed(list(fitted), 5)} were among the fitted systems; their intervals are too narrow."
        )
    if not bank.binary:
        notes.append(
            "FRACTIONAL: the bank was fitted to fractional scores; unanswered items enter with their expected score, "
            "so the intervals leave out the spread of the scores themselves."
        )
    return notes


def scope_membership(bank: ItemBank) -> tuple[list[str], np.ndarray]:
    """The scopes (each benchmark, then ``all``) and an (N, scopes) matrix of item weights summing to 1 per scope."""
    names = [*bank.benchmarks, ALL]
    member = np.zeros((bank.n_items, len(names)))
    for k, name in enumerate(names[:-1]):
        member[bank.benchmark == name, k] = 1.0
    member[:, -1] = 1.0
    return names, member / member.sum(axis=0, keepdims=True)


def target_bins(bank: ItemBank, target: Target) -> np.ndarray:
    """(S, N) each item's target bin in each draw, by its difficulty (-1 outside [L, U]; the last bin is closed)."""
    edges = target.edges_array
    b = bank.difficulty
    index = np.searchsorted(edges, b, side="right") - 1
    index[b == edges[-1]] = target.n_bins - 1
    index[(b < edges[0]) | (b > edges[-1])] = -1
    return index.astype(np.int32)


def _benchmark_log_likelihoods(
    bank: ItemBank, s: int, y: np.ndarray, w: np.ndarray, trials: np.ndarray | None = None
) -> np.ndarray:
    """(benchmarks, G, J) the log-likelihood of each system's answers on each benchmark at each grid ability, under
    draw ``s`` of the item parameters; ``trials`` (J, N) weighs a share of successes by its number of trials."""
    grid = bank.grid
    out = np.zeros((len(bank.benchmarks), len(grid), y.shape[0]))
    answered = w.any(axis=0)
    if trials is not None:
        w = w * trials  # k of n: n log-likelihood terms of the share
    for k in range(len(bank.benchmarks)):
        cols = np.flatnonzero(answered & (bank.benchmark_index == k))
        if not len(cols):
            continue
        eta = irt.linear_predictor(grid[:, None], bank.difficulty[s, cols], bank.discrimination[s, cols])
        l1, l0 = irt.log_probabilities(eta, None if bank.guessing is None else bank.guessing[s, cols])
        out[k] = l1 @ (y * w)[:, cols].T + l0 @ ((1 - y) * w)[:, cols].T
    return out


def _draw_posteriors(bank: ItemBank, log_lik: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From (benchmarks, G, J) log-likelihoods: the general ability's posterior (G, J), and per benchmark the
    likelihood given the general ability ``L_b = K_b e_b`` and the scaled likelihood ``e_b`` (both (benchmarks, G, J))."""
    e = np.exp(log_lik - log_lik.max(axis=1, keepdims=True))
    lik = e.copy()
    for k in range(len(bank.benchmarks)):
        kernel = bank.kernel(k)
        if kernel is not None:
            lik[k] = kernel @ e[k]
    with np.errstate(divide="ignore"):
        total = np.log(lik).sum(axis=0)
    return irt.grid_posterior(total, bank.grid, log_prior=bank.log_prior), lik, e


def ability_posteriors(bank: ItemBank, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(S, G, J) each system's posterior of its general ability on the grid (cell probabilities), per item draw,
    given its responses ``y`` and observed-mask ``w`` (J, N)."""
    out = np.empty((bank.n_draws, len(bank.grid), y.shape[0]))
    for s in range(bank.n_draws):
        out[s] = _draw_posteriors(bank, _benchmark_log_likelihoods(bank, s, y, w))[0]
    return out


def benchmark_abilities(
    bank: ItemBank, y: np.ndarray, w: np.ndarray, rng: np.random.Generator, trials: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item draw, each system's general ability and its abilities on the benchmarks, drawn jointly (``trials``
    (J, N): the number of trials of each share of successes in ``y``; None: one each).

    Returns
    -------
    tuple of numpy.ndarray
        ``theta`` (S, J) general-ability draws; ``theta_b`` (S, benchmarks, J) draws of theta_B = theta + delta_B
        given theta and the answers on B (:mod:`irtbayes.evaluating.bank`); ``post_b`` (S, benchmarks, G, J) the
        posterior of each theta_B on the grid (marginal over theta), for the posterior means.
    """
    grid = bank.grid
    width = np.gradient(grid)[None, :]
    n_bench, n_subjects = len(bank.benchmarks), y.shape[0]
    theta = np.empty((bank.n_draws, n_subjects))
    theta_b = np.empty((bank.n_draws, n_bench, n_subjects))
    post_b = np.empty((bank.n_draws, n_bench, len(grid), n_subjects))
    for s in range(bank.n_draws):
        pi, lik, e = _draw_posteriors(bank, _benchmark_log_likelihoods(bank, s, y, w, trials))
        cell = irt.sample_cells(pi.T, 1, rng)[:, 0]
        theta[s] = irt.jitter_cells(grid[None, :], cell[:, None], rng, width=width)[:, 0]
        for k in range(n_bench):
            kernel = bank.kernel(k)
            if kernel is None:
                theta_b[s, k], post_b[s, k] = theta[s], pi
                continue
            conditional = kernel[cell].T * e[k]  # (G, J): theta_B given the drawn theta, and the answers on B
            own = irt.sample_cells(conditional.T, 1, rng)[:, 0]
            theta_b[s, k] = irt.jitter_cells(grid[None, :], own[:, None], rng, width=width)[:, 0]
            ratio = np.divide(pi, lik[k], out=np.zeros_like(pi), where=lik[k] > 0)
            marginal = e[k] * (kernel.T @ ratio)
            post_b[s, k] = marginal / marginal.sum(axis=0, keepdims=True)
    return theta, theta_b, post_b


def ability_draws(
    bank: ItemBank, y: np.ndarray, w: np.ndarray, rng: np.random.Generator, trials: np.ndarray | None = None
) -> np.ndarray:
    """(S, J) general-ability draws of J systems with responses ``y`` and observed-mask ``w`` (J, N), one per item
    draw (``trials`` (J, N): the number of trials of each share of successes; None: one each)."""
    return benchmark_abilities(bank, y, w, rng, trials)[0]


#: Equal-mass nodes of each draw's ability posterior over which unanswered items' probabilities are averaged.
MEAN_NODES = 32
#: Elements of the (draw, node, item) probabilities computed at once.
_INTEGRAL_CHUNK = 1 << 22


#: Posterior draws of the items (evenly spaced) over which the posterior mean of the unanswered responses is taken.
MEAN_DRAWS = 64


def integrated_probabilities(
    bank: ItemBank, post: np.ndarray, *, nodes: int = MEAN_NODES, draws: np.ndarray | None = None
) -> np.ndarray:
    """(S', N) each item's probability of a correct response averaged over one system's ability posterior, per
    draw: ``post`` is (S, G), one posterior for every item, or (S, benchmarks, G), one per benchmark for its items;
    ``draws`` picks the S' draws (default: all).

    The posterior of draw s is taken as uniform within each grid cell (as the ability draws are); its quantiles at
    ``(q + 1/2) / nodes``, q = 0..nodes-1, are the nodes, and the average of ``P_i`` over them is the integral
    of ``P_i`` by the midpoint rule in probability (exact as ``nodes`` grows; 32 nodes put the error far below
    the interval's width).
    """
    rows = np.arange(post.shape[0]) if draws is None else np.asarray(draws)
    per_bench = (post[:, None, :] if post.ndim == 2 else post)[rows]
    grid = bank.grid
    step = np.gradient(grid)
    edges = np.concatenate([[grid[0] - step[0] / 2], (grid[1:] + grid[:-1]) / 2, [grid[-1] + step[-1] / 2]])
    u = (np.arange(nodes) + 0.5) / nodes
    out = np.empty((len(rows), bank.n_items))
    for k in range(per_bench.shape[1]):
        cols = np.arange(bank.n_items) if post.ndim == 2 else np.flatnonzero(bank.benchmark_index == k)
        if not len(cols):
            continue
        theta = _quantiles_of_cells(per_bench[:, k], edges, u)  # (S', nodes)
        chunk = max(1, _INTEGRAL_CHUNK // max(1, nodes * len(cols)))
        a, b = bank.discrimination[rows][:, cols], bank.difficulty[rows][:, cols]
        for lo in range(0, len(rows), chunk):
            sl = slice(lo, lo + chunk)
            eta = a[sl, None, :] * (theta[sl, :, None] - b[sl, None, :])
            mean = expit(eta, out=eta).mean(axis=1)  # the logistic in one pass (stable at any eta)
            if bank.guessing is not None:
                c = bank.guessing[rows[sl]][:, cols]
                mean = c + (1 - c) * mean
            out[sl, cols] = mean
    return out


def _quantiles_of_cells(prob: np.ndarray, edges: np.ndarray, u: np.ndarray) -> np.ndarray:
    """(rows, len(u)) the quantiles ``u`` of each row's distribution, uniform within the cells between ``edges``
    with the cells' probabilities ``prob`` (rows, cells)."""
    cdf = np.concatenate([np.zeros((prob.shape[0], 1)), np.cumsum(prob, axis=1)], axis=1)
    cdf /= cdf[:, -1:]
    upper = np.clip((cdf[:, None, :] < u[None, :, None]).sum(axis=2), 1, len(edges) - 1)  # (rows, nodes)
    lo_cdf = np.take_along_axis(cdf, upper - 1, axis=1)
    hi_cdf = np.take_along_axis(cdf, upper, axis=1)
    share = np.divide(u[None, :] - lo_cdf, hi_cdf - lo_cdf, out=np.zeros_like(lo_cdf), where=hi_cdf > lo_cdf)
    return edges[upper - 1] + share * (edges[upper] - edges[upper - 1])


def predicted_draws(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    theta: np.ndarray,
    rng: np.random.Generator,
    *,
    post: np.ndarray | None = None,
    trials: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One system's completed responses per draw: (draws, expected), (S, N) and (S', N).

    ``theta`` is (S,), one ability for every item, or (S, benchmarks), one per benchmark for its items. ``draws``
    holds the answered responses and Bernoulli draws of the others at the drawn abilities (their probabilities for
    a fractional bank); ``expected`` the answered responses and the others' probabilities integrated over the
    ability posteriors ``post`` (:func:`integrated_probabilities`, over :data:`MEAN_DRAWS` evenly spaced draws;
    without ``post``, the probabilities at ``theta``, every draw). ``trials`` (N,): an unanswered item of n > 1
    trials is drawn as its share of successes, Binomial(n, P) / n (the items of one trial as without it).
    """
    per_item = theta[:, None] if theta.ndim == 1 else theta[:, bank.benchmark_index]
    p = irt.probability(per_item, bank.difficulty, bank.discrimination, bank.guessing)
    seen = w > 0
    if post is None:
        mean = p
    else:  # over evenly spaced draws: the item parameters' spread averages out over a benchmark's items
        mean = integrated_probabilities(bank, post, draws=spaced(bank.n_draws, MEAN_DRAWS))
    expected = np.where(seen[None, :], y[None, :], mean)
    if not bank.binary:
        return np.where(seen[None, :], y[None, :], p), expected
    drawn = np.where(seen[None, :], y[None, :], (rng.random(p.shape) < p).astype("float64"))
    many = np.flatnonzero(~seen & (trials > 1)) if trials is not None else np.empty(0, dtype=int)
    if trials is not None and len(many):  # k of n trials: the share of a binomial draw
        n = trials[many].astype("int64")
        drawn[:, many] = rng.binomial(n[None, :], np.clip(p[:, many], 0.0, 1.0)) / n[None, :]
    return drawn, expected


#: Systems of the bank scored by :func:`interval_factors` (evenly spaced).
CALIBRATION_SYSTEMS = 100
#: Posterior draws of the items (evenly spaced) with which :func:`interval_factors` scores them.
CALIBRATION_DRAWS = 100


def interval_factors(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    designs: np.ndarray,
    *,
    ci_prob: float = 0.9,
    max_systems: int = CALIBRATION_SYSTEMS,
    seed: int = 0,
    trials: np.ndarray | None = None,
) -> np.ndarray:
    """(scopes,) how much each scope's interval must widen to cover the bank's own systems under the same design.

    The bank's systems (``y``, ``w``: their (J, N) responses and observed-mask; those of :func:`calibration_systems`
    with ``most=max_systems``) are scored as if new (with at most :data:`CALIBRATION_DRAWS` of the bank's draws), from their answers to the items of each design (a row of ``designs``, (P, N),
    each applied to every system), and compared with their accuracy over all the items they answered. For each
    (system, scope) with items left to predict, ``r`` is the error over the interval's half on the error's side;
    the factor is the split-conformal ``ci_prob`` order statistic of ``r`` over systems and designs, at least 1
    (:func:`factors_from_ratios`). Scaling the draws about
    their mean by it (``predict_from_arrays(widen=...)``) makes the interval cover that share of the bank's own
    systems. The bank's systems shaped its item parameters, so the factor errs on the narrow side for a bank of
    few systems. ``trials`` (J, N): the systems' responses are shares of k successes of n trials, scored per trial
    (:func:`error_ratios`); None: one trial each.
    """
    bank = bank.thinned(CALIBRATION_DRAWS)
    pick = calibration_systems(bank, w, most=max_systems)
    y, w = y[pick], w[pick]
    n = None if trials is None else np.asarray(trials, dtype="float64")[pick]
    ratios = [
        error_ratios(bank, y, w, w * (design[None, :] > 0), ci_prob=ci_prob, seed=seed, trials=n)
        for design in np.atleast_2d(designs)
    ]
    return factors_from_ratios(np.concatenate(ratios, axis=0), ci_prob=ci_prob)


def calibration_systems(bank: ItemBank, w: np.ndarray, *, most: int = CALIBRATION_SYSTEMS) -> np.ndarray:
    """The rows of the observed-mask ``w`` (the bank's reference systems) that calibrate intervals: up to ``most``
    evenly spaced, and with several benchmarks up to ``most`` more (evenly spaced) among those that answered at
    least half of every benchmark's items, the only ones whose errors count for a scope of several benchmarks
    (:func:`error_ratios`)."""
    pick = spaced(w.shape[0], most)
    if len(bank.benchmarks) > 1:
        whole = np.flatnonzero(answered_benchmarks(bank, w).all(axis=1))
        pick = np.union1d(pick, whole[spaced(len(whole), most)] if len(whole) else whole)
    return pick


def error_ratios(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    mask: np.ndarray,
    *,
    ci_prob: float = 0.9,
    seed: int = 0,
    trials: np.ndarray | None = None,
) -> np.ndarray:
    """(J, scopes) each system's error over its interval's half on the error's side, scored from the items of its
    row of ``mask`` (J, N) against its accuracy over all the items it answered (``y``, ``w``); NaN where a scope
    has no items left to predict or no truth, inf where the interval has no width but the error has.

    A scope of several benchmarks (``all``) counts only the systems that answered at least half of each of its
    benchmarks' items: a system's accuracy over the one or two benchmarks it answered is not the score over all
    of them that a new system gets, and its error is smaller relative to its interval (errors on different
    benchmarks of one system do not average out the way the model's draws do).

    ``trials`` (J, N): ``y`` holds shares of k successes of n trials; a system's accuracy is then per trial, sum k /
    sum n over the items, and it is scored per trial too (``predict_from_arrays(per_trial=True)``: the abilities
    from the binomial likelihood, an unanswered item's share drawn from its n trials). None: one trial each."""
    names, member = scope_membership(bank)
    counts = member > 0
    answered = w @ counts
    truth = _observed_accuracy(y, w, counts, trials, binary=bank.binary)
    subjects = np.array([f"s{j}" for j in range(len(y))])
    table = predict_from_arrays(
        bank, y, mask, subjects, count=w, seed=seed, trials=trials, per_trial=trials is not None
    ).table(ci_prob)
    shape = (len(y), len(names))
    mean, low, high = (
        table[c].to_numpy().reshape(shape) for c in ("accuracy_mean", "accuracy_ci_low", "accuracy_ci_high")
    )
    left = (answered - mask @ counts) > 0
    half = np.where(truth >= mean, high - mean, mean - low)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.abs(truth - mean) / half
    spans = (member > 0).T @ (bank.benchmark_index[:, None] == np.arange(len(bank.benchmarks))[None, :]) > 0
    whole = answered_benchmarks(bank, w)  # (J, benchmarks)
    eligible = np.stack([whole[:, row].all(axis=1) if row.sum() > 1 else np.ones(len(y), bool) for row in spans], 1)
    r = np.where(left & np.isfinite(truth) & eligible, r, np.nan)
    r[(half <= 0) & left & (np.abs(truth - mean) > 0)] = np.inf
    return r


def factors_from_ratios(ratios: np.ndarray, *, ci_prob: float = 0.9) -> np.ndarray:
    """(scopes,) each scope's factor from its :func:`error_ratios` (rows: systems and designs): of its n known
    ratios, the ceil((n + 1) ci_prob)-th smallest (the split-conformal order statistic: when a new system is
    exchangeable with the calibration systems, its ratio is at or below it with probability at least ``ci_prob``,
    where the plain ``ci_prob`` quantile of few ratios falls short), at least 1; 1 where fewer than 10 are known.

    Examples
    --------
    >>> ratios = np.arange(1, 21, dtype=float)[:, None] / 10  # 0.1 .. 2.0
    >>> factors_from_ratios(ratios).tolist()  # the 19th smallest of 20, where the plain quantile gives 1.81
    [1.9]
    """
    out = np.ones(ratios.shape[1])
    for k in range(ratios.shape[1]):
        values = np.sort(np.minimum(ratios[:, k][~np.isnan(ratios[:, k])], 1e6))
        if len(values) >= 10:
            rank = min(math.ceil((len(values) + 1) * ci_prob - 1e-9), len(values))
            out[k] = max(1.0, float(values[rank - 1]))
    return out


def widened(draws: np.ndarray, mean: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """``draws`` (S, J, scopes) scaled about their ``mean`` (J, scopes) by ``factor`` (scopes,) or (J, scopes),
    clipped to [0, 1]; where the factor is 1 the draws are returned as they are (``mean + 1 * (draw - mean)`` can
    differ from the draw in its last bit).

    Examples
    --------
    >>> draws = np.array([[[0.5, 0.25]], [[0.75, 0.5]]])  # two draws of one system's two scopes
    >>> widened(draws, draws.mean(axis=0), np.array([2.0, 1.0]))[:, 0].tolist()
    [[0.375, 0.25], [0.875, 0.5]]
    """
    factor = np.broadcast_to(np.asarray(factor, dtype="float64"), mean.shape)[None]
    scaled = np.clip(mean[None] + factor * (draws - mean[None]), 0.0, 1.0)
    return np.where(factor == 1.0, draws, scaled)


def _successes(shares: np.ndarray, trials: np.ndarray, *, binary: bool) -> np.ndarray:
    """The successes k = share * n of shares of n trials: whole numbers for a binary bank (k / n written as a
    float times n is not always k to the bit), the plain product for a fractional one."""
    k = shares * trials
    return np.rint(k) if binary else k


def _observed_accuracy(
    y: np.ndarray, w: np.ndarray, counts: np.ndarray, trials: np.ndarray | None, *, binary: bool
) -> np.ndarray:
    """(J, scopes) each system's accuracy over the items it answered (``y``, ``w`` (J, N)) of each scope (``counts``
    (N, scopes)): the mean response, or with ``trials`` (J, N) per trial, sum k / sum n; NaN where it answered none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if trials is None:
            return ((y * w) @ counts) / (w @ counts)
        return (_successes(y * w, trials, binary=binary) @ counts) / ((w * trials) @ counts)


def _accuracies(
    drawn: np.ndarray, expected: np.ndarray, own: np.ndarray, trials: np.ndarray | None, *, binary: bool
) -> tuple[np.ndarray, np.ndarray]:
    """One system's accuracy draws (S, scopes) and posterior mean (scopes,) from its completed responses ``drawn``
    and ``expected`` (:func:`predicted_draws`) and its items' weights ``own`` (N, scopes); with ``trials`` (N,) per
    trial, sum k / sum n (``own`` then weighs each item by its trials)."""
    # a count of right answers over a count of items (or trials), so that an accuracy drawn and the same accuracy
    # observed are the same number to the bit (a sum of k weights 1 / n is not k / n), and an interval whose end
    # is the system's accuracy covers it
    inside = (own > 0).astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        if trials is None:
            drawn_acc = (drawn @ inside) / inside.sum(axis=0)
        else:
            drawn_acc = (_successes(drawn, trials[None, :], binary=binary) @ inside) / (trials @ inside)
    return drawn_acc, (expected @ own).mean(axis=0)


def _own_membership(member: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """``member`` restricted to the ``counted`` items, each scope's weights summing to 1 again (0 when none count)."""
    own = member * counted[:, None]
    total = own.sum(axis=0, keepdims=True)
    return np.divide(own, total, out=np.zeros_like(own), where=total > 0)


def _target_scores(values: np.ndarray, bins: np.ndarray, member: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(S, scopes) target-weighted scores of completed responses ``values`` (S, N) (see the module docstring)."""
    n_draws, _ = values.shape
    n_bins = len(weights)
    out = np.full((n_draws, member.shape[1]), np.nan)
    inside = bins >= 0
    offset = np.arange(n_draws)[:, None] * n_bins
    for k in range(member.shape[1]):
        keep = inside & (member[:, k] > 0)[None, :]
        idx = (offset + bins)[keep]
        sums = np.bincount(idx, weights=values[keep], minlength=n_draws * n_bins).reshape(n_draws, n_bins)
        counts = np.bincount(idx, minlength=n_draws * n_bins).reshape(n_draws, n_bins)
        held = counts > 0
        acc = np.divide(sums, counts, out=np.zeros_like(sums), where=held)
        mass = held @ weights
        out[:, k] = np.divide(acc @ weights, mass, out=np.full(n_draws, np.nan), where=mass > 0)
    return out


@dataclass(frozen=True, eq=False)
class PredictedScores:
    """New systems' scores over the whole bank, from the items they answered.

    Attributes
    ----------
    accuracy
        (chain=1, draw, subject, benchmark) accuracy draws; ``benchmark`` holds each benchmark and ``all``.
    accuracy_expected
        (subject, benchmark) Rao-Blackwellised posterior means (see the module docstring).
    items_seen
        (subject, benchmark) items answered; ``items_total``: (subject, benchmark) items that count (every item of
        the bank unless ``count`` said otherwise).
    ability
        (chain=1, draw, subject) the ability draws behind the predictions.
    target_score, target_expected
        The same for the target-weighted score, or None without a target.
    target
        The target, or None.
    warnings
        Sentences every output opens with (approximate or unconverged bank, subjects in the bank, ...).
    observed
        (subject, benchmark) accuracy on the answered items (NaN where none).
    widen
        (subject, benchmark) the factor by which each accuracy interval was widened to cover the bank's own systems
        under the same items (:func:`calibration_factors`); None when they were not calibrated.
    """

    accuracy: xr.DataArray
    accuracy_expected: xr.DataArray
    items_seen: xr.DataArray
    items_total: xr.DataArray
    ability: xr.DataArray
    observed: xr.DataArray
    target_score: xr.DataArray | None = None
    target_expected: xr.DataArray | None = None
    target: Target | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    widen: xr.DataArray | None = None
    calibrated_on: str = "the bank's own systems"

    def table(self, ci_prob: float = 0.9) -> pd.DataFrame:
        """One row per subject and benchmark: ``subject``, ``benchmark``, ``accuracy_mean``, ``accuracy_ci_low``,
        ``accuracy_ci_high``, ``items_seen``, ``items_total``, ``accuracy_sd``, ``observed_accuracy``, with
        calibrated intervals ``interval_factor`` (:attr:`widen`), with a target also ``target_score_mean``,
        ``target_score_ci_low``, ``target_score_ci_high``; then ``ci_prob``."""
        check_ci_prob(ci_prob)
        subjects = self.accuracy["subject"].values.astype(str)
        scopes = self.accuracy["benchmark"].values.astype(str)
        index = pd.MultiIndex.from_product([subjects, scopes], names=["subject", "benchmark"])
        stats = summarize(self.accuracy.transpose("chain", "draw", ...).values, ci_prob=ci_prob, axis=(0, 1))
        table = pd.DataFrame(index=index).reset_index()
        table["accuracy_mean"] = self.accuracy_expected.transpose("subject", "benchmark").values.ravel()
        table["accuracy_ci_low"] = stats["ci_low"].ravel()
        table["accuracy_ci_high"] = stats["ci_high"].ravel()
        table["items_seen"] = self.items_seen.transpose("subject", "benchmark").values.ravel().astype("int64")
        table["items_total"] = self.items_total.transpose("subject", "benchmark").values.ravel().astype("int64")
        table["accuracy_sd"] = stats["sd"].ravel()
        table["observed_accuracy"] = self.observed.transpose("subject", "benchmark").values.ravel()
        if self.widen is not None:
            table["interval_factor"] = self.widen.transpose("subject", "benchmark").values.ravel()
        if self.target_score is not None and self.target_expected is not None:
            tstats = summarize(self.target_score.transpose("chain", "draw", ...).values, ci_prob=ci_prob, axis=(0, 1))
            table["target_score_mean"] = self.target_expected.transpose("subject", "benchmark").values.ravel()
            table["target_score_ci_low"] = tstats["ci_low"].ravel()
            table["target_score_ci_high"] = tstats["ci_high"].ravel()
        table["ci_prob"] = ci_prob
        table.attrs.update(ci_prob=ci_prob, warnings=list(self.warnings))
        return table

    def summary(self, *, ci_prob: float = 0.9) -> pd.DataFrame:
        """:meth:`table` (``accuracy_ci_low``, ``accuracy_ci_high``, ...), ``ci_prob`` in ``attrs``."""
        return summary_table(self.table(ci_prob), ci_prob)

    def to_dict(self, *, ci_prob: float = 0.9) -> dict[str, Any]:
        """Plain JSON values: ``warnings``, ``n_draws``, ``ci_prob``, ``target``, ``interval_calibration`` (per
        scope, the distinct factors its intervals were widened by, or None), ``calibrated_on`` (whose errors set
        them) and ``rows`` (:meth:`table`)."""
        return {
            "warnings": list(self.warnings),
            "n_draws": int(self.accuracy.sizes["draw"]),
            "ci_prob": ci_prob,
            "target": None if self.target is None else self.target.to_dict(),
            "interval_calibration": self.factors(),
            "calibrated_on": None if self.widen is None else self.calibrated_on,
            "rows": records(self.table(ci_prob)),
        }

    def to_text(self, *, ci_prob: float = 0.9, max_rows: int = 200) -> str:
        """The table as text, opening with the warnings."""
        table = self.table(ci_prob).drop(columns=["ci_prob", "accuracy_sd"])
        with pd.option_context("display.width", 200, "display.max_rows", max_rows, "display.precision", 3):
            body = table.to_string(index=False, max_rows=max_rows)
        head = "".join(f"{w}\n" for w in self.warnings)
        factors = self.factors()
        wider = {} if factors is None else {k: v for k, v in factors.items() if max(v) > 1.0}
        how = (
            "model intervals, not calibrated"
            if factors is None
            else f"calibrated on {self.calibrated_on}; widened by "
            + ", ".join(f"{k} x{v[0]:.2f}" if len(v) == 1 else f"{k} x{v[0]:.2f}-{v[-1]:.2f}" for k, v in wider.items())
            + (
                " (by the benchmarks each system answered: column interval_factor)"
                if any(len(v) > 1 for v in wider.values())
                else ""
            )
            if wider
            else f"calibrated on {self.calibrated_on}: no widening needed"
        )
        return f"{head}Predicted accuracy over every item of the bank ({ci_prob:.0%} intervals; {how})\n{body}"

    def factors(self) -> dict[str, list[float]] | None:
        """Per scope, the distinct factors its intervals were widened by (ascending; one where every system shares
        it), or None when they were not calibrated."""
        if self.widen is None:
            return None
        values = self.widen.transpose("subject", "benchmark").values
        return {scope: sorted({float(v) for v in values[:, k]}) for k, scope in enumerate(self.scopes)}

    def plot_accuracy(self, *, benchmark: str = ALL, ci_prob: float = 0.9, ax: Axes | None = None) -> Axes:
        """Each subject's predicted accuracy on ``benchmark`` with its interval; the observed accuracy on the answered
        items as a cross."""
        from irtbayes.core.plots import plot_forest

        rows = self.table(ci_prob)
        rows = rows[rows["benchmark"] == benchmark]
        if rows.empty:
            raise SpecError(f"plot_accuracy: no benchmark {benchmark!r}; known: {listed(self.scopes)}")
        return plot_forest(
            rows,
            mean="accuracy_mean",
            low="accuracy_ci_low",
            high="accuracy_ci_high",
            label="subject",
            colour_by=None,
            observed="observed_accuracy",
            xlabel=f"predicted accuracy on {benchmark}",
            title=warning_tags(self.warnings) + f"Predicted accuracy ({ci_prob:.0%} intervals)",
            ax=ax,
        )

    @property
    def scopes(self) -> list[str]:
        return [str(v) for v in self.accuracy["benchmark"].values]


def predict_scores(
    fit: Fit | ItemBank,
    responses: ResponseData,
    *,
    target: Any = None,
    bins: int | Sequence[float] | None = None,
    target_range: Sequence[float] | None = None,
    n_draws: int = 400,
    prior: str = "normal",
    allow_fitted: bool = False,
    data: ResponseData | str | os.PathLike[str] | bool | None = None,
    calibrate: bool = True,
    ci_prob: float = 0.9,
    seed: int | None = 0,
    selection: ChosenItems | None = None,
) -> PredictedScores:
    """Scores of new systems on every item of the bank, from the items they answered (see the module docstring).

    Parameters
    ----------
    fit
        The fitted item bank (a :class:`~irtbayes.fitting.result.Fit`, or an :class:`ItemBank` made from one).
    responses
        The new systems' responses to some of the bank's items.
    target, bins, target_range
        The audit's target (as :func:`irtbayes.audit` takes it); None: no target-weighted score. With an
        :class:`ItemBank` the target must be a :class:`Target`.
    n_draws
        Posterior draws of the item parameters used (evenly spaced).
    prior
        The new systems' ability prior: ``"normal"`` or ``"population"`` (:mod:`irtbayes.evaluating.bank`).
    allow_fitted
        Score subjects the bank was fitted to (labelled in every output) instead of refusing them.
    data
        The fit's own responses, for the benchmarks' deviations and the calibration (:meth:`ItemBank.from_fit`:
        None reads the source the fit records; False: neither).
    calibrate, ci_prob
        Widen the accuracy intervals so that ``ci_prob`` of them would cover the bank's own systems answering the
        same items (:func:`interval_factors`; needs the bank's reference responses). The table's intervals are
        then calibrated at ``ci_prob``; at another probability they are the widened draws' quantiles.
    seed
        Seed of the ability and response draws.
    selection
        The :class:`~irtbayes.evaluating.selection.Selection` the systems answered, when it carries cross-fitted
        factors (:mod:`irtbayes.evaluating.crossfit`): a system that answered only its items gets those factors
        instead of the bank's own systems' (:func:`selection_factors`).

    Returns
    -------
    PredictedScores

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> from irtbayes.data.simulate import simulate_responses
    >>> fit, data = simulated_fit(40, 30, n_benchmarks=2)
    >>> new, _ = simulate_responses(3, 30, n_benchmarks=2, seed=9, missing=0.5)
    >>> new = ResponseData.from_long(new.long_frame().assign(subject=lambda f: "new-" + f["subject"]), items=data.items)
    >>> table = predict_scores(fit, new, n_draws=100, seed=1).table()
    >>> sorted(set(table["benchmark"])), int(table["items_total"].max())
    (['all', 'bench00', 'bench01'], 30)
    >>> bool(((table["accuracy_ci_low"] <= table["accuracy_mean"]) & (table["accuracy_mean"] <= table["accuracy_ci_high"])).all())
    True
    """
    bank = fit if isinstance(fit, ItemBank) else ItemBank.from_fit(fit, n_draws=n_draws, prior=prior, data=data)
    notes = check_new_responses(bank, responses, allow_fitted=allow_fitted)
    if target is not None and not isinstance(target, Target):
        if isinstance(fit, ItemBank):
            raise SpecError("predict_scores: with an ItemBank, give the target as a Target")
        target = evaluation_target(fit, target, bins=bins, target_range=target_range)
    y, w = bank.response_arrays(responses)
    if calibrate and selection is not None and selection.calibration is not None:
        _selection_calibration(selection, ci_prob)  # before any work
        inside = selection_rows(bank, w, selection)
        widen = None
        if not inside.all():  # the others are calibrated on the bank's own systems answering their items
            own = calibration_factors(bank, w[~inside], ci_prob=ci_prob, seed=seed or 0)
            if own is not None:
                widen = np.ones((w.shape[0], own.shape[1]))
                widen[~inside] = own
        others = "the bank's own systems" if widen is not None else "nothing else (no reference systems)"
        widen = selection_factors(bank, w, selection, widen, ci_prob=ci_prob)
        calibrated_on = "the selection's cross-fitted folds"
        if not inside.all():
            calibrated_on += f" (systems that answered only its items) and {others}"
    else:
        widen = calibration_factors(bank, w, ci_prob=ci_prob, seed=seed or 0) if calibrate else None
        calibrated_on = "the bank's own systems"
    n = bank.trial_arrays(responses) if responses.has_trials else None  # k of n trials: the binomial likelihood
    subjects = responses.subject_ids.to_numpy(dtype=str)
    scores = predict_from_arrays(bank, y, w, subjects, target=target, widen=widen, seed=seed, notes=notes, trials=n)
    outside = beyond_the_bank(bank, scores.ability)
    return dataclasses.replace(scores, calibrated_on=calibrated_on, warnings=(*scores.warnings, *outside))


def beyond_the_bank(bank: ItemBank, ability: xr.DataArray) -> list[str]:
    """A warning naming the systems whose ability (posterior mean) lies beyond the bank's systems' (outside the
    range of :attr:`ItemBank.population`, the quantiles 1/64 to 63/64 of their pooled ability draws): their
    scores extrapolate the item curves past where the bank was fitted, and no system of the bank calibrated them.
    """
    means = ability.mean(("chain", "draw")).to_series()
    low, high = float(bank.population.min()), float(bank.population.max())
    above, below = means.index[means > high].tolist(), means.index[means < low].tolist()
    out = []
    for names, side, edge in ((above, "above", high), (below, "below", low)):
        if names:
            out.append(
                f"BEYOND THE BANK: {listed([str(n) for n in names], 5)} {'is' if len(names) == 1 else 'are'} {side} "
                f"the abilities of the bank's systems (their pooled draws' edge {edge:.2f}): the predicted scores "
                "extrapolate past where the items were fitted, and their intervals may be too narrow."
            )
    return out


class ChosenItems(Protocol):
    """What scoring needs of a :class:`~irtbayes.evaluating.selection.Selection`: its items and its cross-fitted
    factors (None when it has none)."""

    @property
    def item_ids(self) -> list[str]: ...

    @property
    def calibration(self) -> pd.DataFrame | None: ...


def selection_factors(
    bank: ItemBank, w: np.ndarray, selection: ChosenItems, factors: np.ndarray | None, *, ci_prob: float = 0.9
) -> np.ndarray:
    """(J, scopes) ``factors`` (the in-sample ones, or None: 1) with the rows of the systems that answered only
    ``selection``'s items (rows of the observed-mask ``w``) replaced by its cross-fitted factors, scope by scope.

    Raises
    ------
    SpecError
        The selection's factors are for another interval probability than ``ci_prob``, or it names items the bank
        does not hold.
    """
    table = _selection_calibration(selection, ci_prob)
    inside = selection_rows(bank, w, selection)
    names = scope_membership(bank)[0]
    out = np.ones((w.shape[0], len(names))) if factors is None else np.array(factors, dtype="float64")
    own = dict(zip(table["benchmark"].astype(str), table["interval_factor"].astype(float), strict=True))
    for k, name in enumerate(names):
        if name in own:
            out[inside, k] = own[name]
    return out


def _selection_calibration(selection: ChosenItems, ci_prob: float) -> pd.DataFrame:
    """The selection's cross-fitted factors, checked to be for ``ci_prob`` intervals."""
    table = selection.calibration
    if table is None:
        raise SpecError("selection_factors: the selection carries no cross-fitted factors")
    own_ci = float(table["ci"].iloc[0])
    if not math.isclose(own_ci, ci_prob):
        raise SpecError(
            f"the selection's intervals were calibrated for {own_ci:g} intervals; score at that probability "
            f"(ci={own_ci:g}, --ci {own_ci:g}) or select again with ci_prob={ci_prob:g} (select --ci {ci_prob:g})"
        )
    return table


def selection_rows(bank: ItemBank, w: np.ndarray, selection: ChosenItems) -> np.ndarray:
    """(J,) which rows of the observed-mask ``w`` answered ``selection``'s items only (and at least one).

    Raises
    ------
    SpecError
        The selection names items the bank does not hold.
    """
    cols = bank.columns(selection.item_ids)
    if (cols < 0).any():
        missing = [i for i, c in zip(selection.item_ids, cols, strict=True) if c < 0]
        raise SpecError(f"the selection names item(s) the bank does not hold: {listed(missing, 5)}")
    chosen = np.zeros(bank.n_items, dtype=bool)
    chosen[cols] = True
    answered = np.asarray(w) > 0
    return answered.any(axis=1) & ~(answered & ~chosen[None, :]).any(axis=1)


#: Answer patterns of new systems applied to the bank's own systems by :func:`calibration_factors`, in all.
CALIBRATION_DESIGNS = 4


def calibration_factors(bank: ItemBank, w: np.ndarray, *, ci_prob: float = 0.9, seed: int = 0) -> np.ndarray | None:
    """(J, scopes) the factor of each new system's intervals: :func:`interval_factors` on the bank's reference
    responses (per trial where they are k successes of n trials: :attr:`ItemBank.reference_trials`) under the answer
    patterns (rows of ``w``, (J, N)) of the systems that answered the same benchmarks; None without reference
    responses.

    The systems are grouped by which benchmarks they answered (one item or more): a scope whose benchmark a system
    did not answer at all is predicted from its ability alone, and its error relative to its interval is not that
    of a scope it answered, so factors pooled over such designs fit neither (on the Open LLM Leaderboard's order
    split, pooling the patterns of systems that skipped a benchmark lowered the factor of ``all`` for those that
    answered every benchmark from 2.0 to 1.6). :data:`CALIBRATION_DESIGNS` distinct patterns are shared among the
    groups in proportion to their systems (each next one to the group with the most systems per pattern taken,
    evenly spaced among its patterns; ties to the larger group); a group left without one takes the factors of the
    computed group whose benchmarks differ from its own in the fewest.
    """
    if bank.reference is None:
        return None
    answered = np.asarray(w) > 0
    keys, group, sizes = np.unique(
        answered_benchmarks(bank, answered, min_share=0.0), axis=0, return_inverse=True, return_counts=True
    )
    group = group.ravel()
    order = np.argsort(-sizes, kind="stable")
    patterns = [np.unique(answered[group == g], axis=0) for g in range(len(keys))]
    taken = np.zeros(len(keys), dtype=int)
    for _ in range(CALIBRATION_DESIGNS):  # each next design to the group with the most systems per design taken
        open_ = [g for g in order if taken[g] < len(patterns[g])]
        if not open_:
            break
        taken[max(open_, key=lambda g: sizes[g] / (taken[g] + 1))] += 1
    reference = np.nan_to_num(bank.reference).astype("float64")
    observed = (~np.isnan(bank.reference)).astype("float64")
    trials = None if bank.reference_trials is None else np.asarray(bank.reference_trials, dtype="float64")
    factors: dict[int, np.ndarray] = {}
    for g in order[taken[order] > 0]:
        designs = patterns[g][spaced(len(patterns[g]), int(taken[g]))]
        factors[int(g)] = interval_factors(
            bank, reference, observed, designs.astype("float64"), ci_prob=ci_prob, seed=seed, trials=trials
        )
    computed = np.array(list(factors))  # largest group first, so ties of distance go to the larger group
    out = np.empty((answered.shape[0], len(scope_membership(bank)[0])))
    for g in range(len(keys)):
        nearest = computed[int(np.argmin((keys[computed] != keys[g]).sum(axis=1)))]
        out[group == g] = factors[int(nearest)]
    return out


def predict_from_arrays(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    subjects: np.ndarray,
    *,
    target: Target | None = None,
    count: np.ndarray | None = None,
    widen: np.ndarray | None = None,
    seed: int | np.random.Generator | None = 0,
    notes: Sequence[str] = (),
    trials: np.ndarray | None = None,
    per_trial: bool = False,
) -> PredictedScores:
    """:class:`PredictedScores` of J systems with responses ``y`` and observed-mask ``w`` (J, N) on the bank's
    items, in the bank's order (no checks: :func:`predict_scores` checks a :class:`ResponseData` first). ``trials``
    (J, N) gives the number of trials of each response where ``y`` holds shares of k successes of n trials: the
    abilities then come from the binomial likelihood (the accuracies stay the mean share per item). With
    ``per_trial`` (and ``trials`` known for every counted item, as for the bank's own systems in
    :func:`error_ratios`) the accuracies are per trial instead: sum k / sum n over a scope's counted items, an
    unanswered item's share drawn from its n trials (:func:`predicted_draws`).

    ``count`` (J, N), when given, says which items count toward each system's scores (default: every item of the
    bank); an answered item always counts. A held-out system with missing cells is scored on the items it has.
    ``widen`` (scopes,) or (J, scopes) scales each scope's accuracy draws about their mean
    (:func:`calibration_factors`).
    """
    rng = np.random.default_rng(seed)
    names, member = scope_membership(bank)
    counted = np.ones_like(w, dtype=bool) if count is None else (np.asarray(count) > 0) | (w > 0)
    if per_trial and trials is None:
        raise SpecError("predict_from_arrays: per_trial needs the trials")
    n_scored = np.asarray(trials, dtype="float64") if per_trial and trials is not None else None
    n_subjects, n_scopes = len(subjects), len(names)
    theta = np.empty((bank.n_draws, n_subjects))
    drawn_acc = np.empty((bank.n_draws, n_subjects, n_scopes))
    expected_acc = np.empty((n_subjects, n_scopes))
    totals = counted.astype("float64") @ (member > 0)
    bins = None if target is None else target_bins(bank, target)
    t_drawn = None if target is None else np.empty_like(drawn_acc)
    t_expected = None if target is None else np.empty_like(expected_acc)
    n_bench = len(bank.benchmarks)
    chunk = max(1, _INTEGRAL_CHUNK // (bank.n_draws * len(bank.grid) * n_bench))
    theta_b = post_b = np.empty(0)
    for j in range(n_subjects):
        if j % chunk == 0:  # the ability posteriors of the next systems
            theta[:, j : j + chunk], theta_b, post_b = benchmark_abilities(
                bank, y[j : j + chunk], w[j : j + chunk], rng, None if trials is None else trials[j : j + chunk]
            )
        jj = j % chunk
        n_j = None if n_scored is None else n_scored[j]
        drawn, expected = predicted_draws(
            bank, y[j], w[j], theta_b[:, :, jj], rng, post=post_b[:, :, :, jj], trials=n_j
        )
        if n_j is not None:  # per trial: each counted item weighs as many trials as it has
            own = _own_membership(member, counted[j] * n_j)
        else:
            own = member if count is None else _own_membership(member, counted[j])
        drawn_acc[:, j], expected_acc[j] = _accuracies(drawn, expected, own, n_j, binary=bank.binary)
        empty = totals[j] == 0  # a scope none of whose items count has no score
        drawn_acc[:, j, empty] = np.nan
        expected_acc[j, empty] = np.nan
        if bins is not None and target is not None and t_drawn is not None and t_expected is not None:
            t_drawn[:, j] = _target_scores(drawn, bins, own, target.weights_array)
            rows = np.arange(bank.n_draws) if len(expected) == bank.n_draws else spaced(bank.n_draws, MEAN_DRAWS)
            t_expected[j] = np.nanmean(_target_scores(expected, bins[rows], own, target.weights_array), axis=0)
    if widen is not None:
        widen = np.broadcast_to(np.asarray(widen, dtype="float64"), (n_subjects, n_scopes))
        drawn_acc = widened(drawn_acc, expected_acc, widen)
    counts = member > 0
    seen = w @ counts
    observed = _observed_accuracy(y, w, counts, n_scored, binary=bank.binary)
    dims, coords = ("subject", "benchmark"), {"subject": subjects, "benchmark": names}

    def draws(values: np.ndarray) -> xr.DataArray:
        return xr.DataArray(values[None], dims=("chain", "draw", *dims), coords=coords)

    return PredictedScores(
        accuracy=draws(drawn_acc),
        accuracy_expected=xr.DataArray(expected_acc, dims=dims, coords=coords),
        items_seen=xr.DataArray(seen, dims=dims, coords=coords),
        items_total=xr.DataArray(totals, dims=dims, coords=coords),
        ability=xr.DataArray(theta[None], dims=("chain", "draw", "subject"), coords={"subject": subjects}),
        observed=xr.DataArray(observed, dims=dims, coords=coords),
        target_score=None if t_drawn is None else draws(t_drawn),
        target_expected=None if t_expected is None else xr.DataArray(t_expected, dims=dims, coords=coords),
        target=target,
        warnings=tuple(notes),
        widen=None if widen is None else xr.DataArray(np.array(widen), dims=dims, coords=coords),
    )
