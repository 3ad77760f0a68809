"""The side-by-side study of evaluation on a few items: held-out systems scored by each method against their truth.

A bank is fitted to the training systems; each held-out system's *truth* on a benchmark is its accuracy over
the benchmark's items in the bank that it answered (a system is scored on a benchmark when it answered at least
half of its items), and every method estimates the accuracy over those same items
(:func:`~irtbayes.evaluating.prediction.predict_from_arrays` with ``count``). Per method and budget K (items per benchmark), each held-out system
answers the method's items and the method estimates its accuracies:

``posterior``
    :func:`~irtbayes.evaluating.selection.select_items` (``method="posterior"``, ``per_benchmark=K``), scored by
    :func:`~irtbayes.evaluating.prediction.predict_scores` (posterior mean and equal-tailed interval).
``random+posterior``
    K random items of each benchmark, drawn afresh for each system, scored the same way.

The posterior scores' intervals are calibrated on the bank's reference systems answering the same items
(:func:`~irtbayes.evaluating.prediction.calibration_factors`, as :func:`~irtbayes.evaluating.prediction.predict_scores`
does; for per-system designs, up to 4 of them), and the model's own intervals are reported beside them. With
``cross_fit`` (a :class:`~irtbayes.evaluating.crossfit.CrossFit` of the bank's fit), the posterior selection's
intervals and the adaptive tests' are calibrated by cross-fitting instead, as ``select_items`` and the ``adaptive``
command calibrate them on small banks.
``random+mean``
    The same random items, scored by their plain mean with a Wilson interval corrected for the finite benchmark
    (:func:`~irtbayes.evaluating.baselines.subset_mean`).
``anchors+pirt``
    tinyBenchmarks' anchors (``method="anchors"``) scored by p-IRT (:func:`~irtbayes.evaluating.baselines.pirt_accuracy`;
    no interval).
``adaptive``
    An :class:`~irtbayes.evaluating.adaptive.AdaptiveTest` for every benchmark's accuracy with a budget of
    K x (number of benchmarks) items in all, and ``adaptive/2`` with half that budget, on at most
    ``adaptive_systems`` held-out systems (evenly spaced); scored exactly as ``posterior``, with the intervals
    calibrated as :meth:`~irtbayes.evaluating.adaptive.AdaptiveTest.interval_factors` calibrates them (the bank's
    reference systems given the same adaptive test).

Each method gets, per benchmark and for ``all``: the mean absolute error of the estimate, its root mean square,
the coverage and mean width of the intervals (``ci_prob``, 0.9 by default), and Spearman's rank correlation
between estimates and truths over the held-out systems.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from irtbayes.core.summaries import interval_quantiles, spaced
from irtbayes.evaluating.adaptive import AdaptiveTest
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.baselines import pirt_accuracy, subset_mean
from irtbayes.evaluating.crossfit import CrossFit
from irtbayes.evaluating.prediction import (
    ALL,
    calibration_factors,
    predict_from_arrays,
    scope_membership,
    widened,
)
from irtbayes.evaluating.selection import select_items

__all__ = ["STUDY_METHODS", "compare_methods", "held_out_truth", "method_metrics", "split_subjects"]

#: The methods of the study, in the order they are reported.
STUDY_METHODS = ("posterior", "random+posterior", "random+mean", "anchors+pirt", "adaptive", "adaptive/2")


def split_subjects(
    subjects: Sequence[str], kind: str, *, seed: int = 0, share: float = 0.25
) -> tuple[list[str], list[str]]:
    """(training, held-out) systems: ``"random"`` holds out a random ``share``, ``"order"`` the last ``share`` in
    the data's order (for leaderboards, the newest systems).

    Examples
    --------
    >>> split_subjects(["a", "b", "c", "d"], "order")
    (['a', 'b', 'c'], ['d'])
    """
    subjects = [str(s) for s in subjects]
    n_test = max(1, round(share * len(subjects)))
    if kind == "order":
        return subjects[:-n_test], subjects[-n_test:]
    if kind == "random":
        test = set(np.random.default_rng(seed).choice(len(subjects), size=n_test, replace=False).tolist())
        return [s for i, s in enumerate(subjects) if i not in test], [s for i, s in enumerate(subjects) if i in test]
    raise ValueError(f"split_subjects: kind must be 'random' or 'order', got {kind!r}")


def held_out_truth(
    y: np.ndarray, w: np.ndarray, member: np.ndarray, *, min_share: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """(J, scopes) each system's accuracy over the scope's items it answered, and whether it answered at least
    ``min_share`` of them (the pairs the study scores)."""
    counts = member > 0
    answered = w @ counts
    scored = answered >= np.maximum(1, min_share * counts.sum(axis=0)[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        truth = ((y * w) @ counts) / answered
    return np.where(scored, truth, np.nan), scored


def method_metrics(
    estimate: np.ndarray, low: np.ndarray | None, high: np.ndarray | None, truth: np.ndarray, complete: np.ndarray
) -> list[dict[str, float]]:
    """Per scope (column): systems, MAE, RMSE, coverage, width, Spearman over the complete systems."""
    out = []
    for k in range(truth.shape[1]):
        keep = complete[:, k] & np.isfinite(estimate[:, k])
        row: dict[str, float] = {"systems": int(keep.sum())}
        err = estimate[keep, k] - truth[keep, k]
        row["mae"] = float(np.abs(err).mean()) if keep.any() else np.nan
        row["rmse"] = float(np.sqrt((err**2).mean())) if keep.any() else np.nan
        if low is not None and high is not None and keep.any():
            row["coverage"] = float(((truth[keep, k] >= low[keep, k]) & (truth[keep, k] <= high[keep, k])).mean())
            row["width"] = float((high[keep, k] - low[keep, k]).mean())
        else:
            row["coverage"] = row["width"] = np.nan
        if keep.sum() >= 3 and np.ptp(truth[keep, k]) > 0 and np.ptp(estimate[keep, k]) > 0:
            row["spearman"] = float(spearmanr(estimate[keep, k], truth[keep, k]).statistic)
        else:
            row["spearman"] = np.nan
        out.append(row)
    return out


def _random_mask(bank: ItemBank, w: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Per system, ``k`` random items of each benchmark (all of a smaller one), kept where answered."""
    mask = np.zeros_like(w)
    for name in bank.benchmarks:
        member = np.flatnonzero(bank.benchmark == name)
        take = min(k, len(member))
        for j in range(w.shape[0]):
            mask[j, rng.choice(member, size=take, replace=False)] = 1.0
    return mask * w


def _scored(
    bank: ItemBank,
    y: np.ndarray,
    mask: np.ndarray,
    w: np.ndarray,
    subjects: np.ndarray,
    ci_prob: float,
    seed: int,
    widen: np.ndarray | None = None,
) -> tuple[np.ndarray, ...]:
    """Posterior scores of the systems from the items of ``mask``, over the items they answered (``w``): the mean,
    the calibrated interval (``widen``, default: on the bank's reference systems answering the same items, where
    the bank has them) and the model's own interval."""
    if widen is None:
        widen = calibration_factors(bank, mask, ci_prob=ci_prob, seed=seed)
    scores = predict_from_arrays(bank, y, mask, subjects, count=w, seed=seed)
    shape = (len(subjects), len(scores.scopes))
    table = scores.table(ci_prob)
    mean, low, high = (
        table[c].to_numpy().reshape(shape) for c in ("accuracy_mean", "accuracy_ci_low", "accuracy_ci_high")
    )
    if widen is None:
        return mean, low, high, low, high
    # the widened draws, as predict_from_arrays(widen=...) makes them from the same draws
    draws = scores.accuracy.transpose("chain", "draw", "subject", "benchmark").values[0]
    wide = widened(draws, mean, np.broadcast_to(widen, shape))  # (scopes,), or per system (J, scopes)
    q_low, q_high = interval_quantiles(ci_prob)
    return mean, np.quantile(wide, q_low, axis=0), np.quantile(wide, q_high, axis=0), low, high


def compare_methods(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    subjects: Sequence[str],
    *,
    ks: Sequence[int] = (10, 30, 100),
    methods: Sequence[str] = STUDY_METHODS,
    ci_prob: float = 0.9,
    adaptive_systems: int = 100,
    seed: int = 0,
    log: Callable[[str], Any] | None = None,
    cross_fit: CrossFit | None = None,
) -> pd.DataFrame:
    """Every method at every budget on the held-out systems (module docstring): one row per method, K and scope.

    ``y`` and ``w`` are the held-out systems' (J, N) responses and observed-mask in the bank's item order.
    Columns: ``method``, ``k`` (items per benchmark), ``items`` (mean items answered per system), ``benchmark``,
    ``systems``, ``mae``, ``rmse``, ``coverage``, ``width`` (the reported intervals: calibrated on the bank's
    reference systems where it has them), ``spearman``, ``model_coverage``, ``model_width`` (the model's own
    intervals), ``seconds`` (the method's time at that K). With ``cross_fit`` the intervals of the posterior
    selection and of the adaptive tests are calibrated by cross-fitting (:mod:`irtbayes.evaluating.crossfit`),
    else on the bank's own systems.
    """
    names, member = scope_membership(bank)
    truth, complete = held_out_truth(y, w, member)
    subjects_arr = np.asarray([str(s) for s in subjects])
    rows = []
    for k in ks:
        for method in methods:
            start = time.perf_counter()
            result = _one_method(bank, y, w, subjects_arr, method, int(k), ci_prob, adaptive_systems, seed, cross_fit)
            if result is None:
                continue
            estimate, low, high, own_low, own_high, answered, keep = result
            metrics = method_metrics(estimate, low, high, truth[keep], complete[keep])
            model = method_metrics(estimate, own_low, own_high, truth[keep], complete[keep])
            seconds = time.perf_counter() - start
            for name, m, own in zip(names, metrics, model, strict=True):
                rows.append(
                    {
                        "method": method,
                        "k": int(k),
                        "items": float(answered),
                        "benchmark": name,
                        **m,
                        "model_coverage": own["coverage"],
                        "model_width": own["width"],
                        "seconds": seconds,
                    }
                )
            if log is not None:
                overall = metrics[-1]
                log(
                    f"{method:>17} K={k:<4} items={answered:7.1f}  MAE({ALL})={overall['mae']:.4f}  "
                    f"coverage={overall['coverage']:.2f}  {seconds:.1f}s"
                )
    return pd.DataFrame(rows)


def _one_method(
    bank: ItemBank,
    y: np.ndarray,
    w: np.ndarray,
    subjects: np.ndarray,
    method: str,
    k: int,
    ci_prob: float,
    adaptive_systems: int,
    seed: int,
    cross_fit: CrossFit | None = None,
) -> tuple[Any, ...] | None:
    """One method at budget ``k``: estimate, reported interval and the model's own (or Nones), mean items answered,
    the systems scored."""
    _, member = scope_membership(bank)
    everyone = np.ones(len(subjects), dtype=bool)
    if method == "posterior":
        chosen = np.zeros(bank.n_items)
        chosen[bank.columns(select_items(bank, per_benchmark=k).item_ids)] = 1.0
        mask = w * chosen[None, :]
        widen = None
        if cross_fit is not None:  # as select_items(cross_fit=True) calibrates: the same selection in each fold
            factors = cross_fit.factors(lambda b: select_items(b, per_benchmark=k).item_ids, ci_prob=ci_prob, seed=seed)
            widen = factors["interval_factor"].to_numpy()
        posterior = _scored(bank, y, mask, w, subjects, ci_prob, seed, widen=widen)
        return (*posterior, float(mask.sum(axis=1).mean()), everyone)
    if method in ("random+posterior", "random+mean"):
        mask = _random_mask(bank, w, k, np.random.default_rng(seed + k))  # the same items for both scorings
        if method == "random+mean":
            est, lo, hi = subset_mean(y, mask, member, ci_prob=ci_prob, count=w)
            scored: tuple[Any, ...] = (est, lo, hi, lo, hi)
        else:
            scored = _scored(bank, y, mask, w, subjects, ci_prob, seed)
        return (*scored, float(mask.sum(axis=1).mean()), everyone)
    if method == "anchors+pirt":
        chosen = np.zeros(bank.n_items)
        chosen[bank.columns(select_items(bank, per_benchmark=k, method="anchors", seed=seed).item_ids)] = 1.0
        mask = w * chosen[None, :]
        estimate = pirt_accuracy(bank, y, mask, member, count=w)
        return estimate, None, None, None, None, float(mask.sum(axis=1).mean()), everyone
    if method in ("adaptive", "adaptive/2"):
        budget = k * len(bank.benchmarks) // (2 if method == "adaptive/2" else 1)
        if budget < 1:
            return None
        keep = np.zeros(len(subjects), dtype=bool)
        keep[spaced(len(subjects), adaptive_systems)] = True
        masks = np.zeros((int(keep.sum()), bank.n_items))
        for row, j in enumerate(np.flatnonzero(keep)):
            test = AdaptiveTest(bank, max_items=budget, items=bank.items[w[j] > 0].tolist(), seed=seed + int(j))
            while (item := test.next_item()) is not None:
                c = int(bank.columns([item])[0])
                test.answer(item, y[j, c])
                masks[row, c] = 1.0
        # calibrated as AdaptiveTest.result calibrates: the bank's own systems tested the same way
        widen = AdaptiveTest(bank, max_items=budget, ci_prob=ci_prob, seed=seed, cross_fit=cross_fit).interval_factors()
        scored = _scored(bank, y[keep], masks, w[keep], subjects[keep], ci_prob, seed, widen=widen)
        return (*scored, float(masks.sum(axis=1).mean()), keep)
    raise ValueError(f"compare_methods: unknown method {method!r}")
