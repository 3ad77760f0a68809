"""Small subsets of a bank chosen for a new system's score: ``select_items(fit, items=K)``.

The score of a new system is its accuracy on each benchmark of the bank (every item counted; see
:mod:`irtbayes.evaluating.prediction`) or, with a target, each benchmark's target-weighted score. Both are
weighted sums ``T_m = sum_i v_mi y_i`` of the item responses, one weight vector per benchmark m (accuracy:
``v_mi = 1 / N_m`` on m's items; target: the target weight of the item's bin, by its posterior mean difficulty,
shared among the bin's items of m).

``method="posterior"`` (default)
    Greedy selection that minimises the expected squared error of the scores, summed over benchmarks and
    averaged over the ability distribution of the systems the bank was fitted to (``population`` points of
    :class:`~irtbayes.evaluating.bank.ItemBank`). For a system of ability theta that answered the items of S,
    with the posterior-mean item curves P_i and slopes D_i (item uncertainty integrated out),

        MSE_m(theta; S) = (sum_{i not in S} v_mi D_i(theta))^2 / (1 + sum_{i in S} I_i(theta))
                          + sum_{i not in S} v_mi^2 P_i(theta) (1 - P_i(theta)),

    with item information I_i = D_i^2 / (P_i (1 - P_i)). The first term is the error that the ability's
    posterior variance (about 1 / (1 + information) under the N(0, 1) prior) carries into the predicted part
    of the score; the second is the spread of the unanswered items' own responses. Each step adds the item
    that lowers the average of sum_m MSE_m the most. With benchmark deviations (:mod:`~irtbayes.evaluating.bank`)
    the posterior variance of benchmark m's ability is ``V_m = u / (1 + I_m u)``, ``u = tau_m^2 + 1 / (1 + I_other)``,
    with I_m the information of m's chosen items and I_other that of the other benchmarks' (tau_m = 0 gives
    back 1 / (1 + sum of all)); an item's effect on its own benchmark is then computed exactly and on the others to
    first order in its information. The formula is the criterion only: the scores and
    intervals of the chosen items come from the exact grid posterior of
    :func:`~irtbayes.evaluating.prediction.predict_scores`.
``method="random"``
    Items drawn uniformly at random within each benchmark.
``method="anchors"``
    tinyBenchmarks' anchor points (Polo et al. 2024, "tinyBenchmarks: evaluating LLMs with fewer examples"):
    per benchmark, k-means on the items' IRT embeddings (here the posterior means of difficulty and log
    discrimination, standardised), the item nearest each centre chosen, weighted by its cluster's share of the
    benchmark's items (``weight``).

Budgets: ``per_benchmark=K`` takes K items of each benchmark; ``items=K`` takes K in all, every benchmark
keeping at least one (random and anchors split K over benchmarks in proportion to their sizes). A benchmark
with fewer items than its share gives all of them, and the selection says so.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.auditing.targets import Target
from irtbayes.core.deprecation import deprecated_alias
from irtbayes.core.errors import DataError, IrtbayesError, SpecError, listed
from irtbayes.core.parallel import Scheduler
from irtbayes.core.summaries import check_ci_prob, records
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.bank import ItemBank, warning_tags
from irtbayes.evaluating.crossfit import CrossFit, cross_fit_applies, not_cross_fitted
from irtbayes.evaluating.prediction import evaluation_target

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from irtbayes.fitting.result import Fit

__all__ = [
    "METHODS",
    "Selection",
    "allocate",
    "anchor_items",
    "expected_errors",
    "greedy_items",
    "score_weights",
    "select_items",
]

#: The selection methods.
METHODS = ("posterior", "random", "anchors")


@dataclass(frozen=True, eq=False)
class Selection:
    """The chosen items and what they are expected to give.

    Attributes
    ----------
    items
        One row per chosen item, in the order chosen: ``item``, ``benchmark``, ``order`` (1-based), ``weight``
        (the anchor weight within its benchmark for ``anchors``, else 1 / items chosen of the benchmark).
    precision
        One row per benchmark: ``benchmark``, ``items_selected``, ``items_total``, ``expected_error`` (the
        root of the criterion's expected squared error of the benchmark's score, averaged over the
        population), ``score`` (``accuracy`` or ``target``).
    method
        The method used.
    warnings
        Sentences every output opens with (the bank's own, and benchmarks with fewer items than asked for).
    calibration
        None, or one row per scope (each benchmark and ``all``): ``benchmark``, ``interval_factor`` (how much the
        intervals of a system that answered these items widen), ``systems`` (the cross-fitted errors it rests
        on), ``ci``, ``folds``, ``refits`` (the refits' sampler): :mod:`irtbayes.evaluating.crossfit`.
    """

    items: pd.DataFrame
    precision: pd.DataFrame
    method: str
    score: str = "accuracy"
    warnings: tuple[str, ...] = field(default_factory=tuple)
    calibration: pd.DataFrame | None = None

    @property
    def item_ids(self) -> list[str]:
        return self.items["item"].astype(str).tolist()

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> Selection:
        """The selection ``irtbayes select --out FOLDER`` wrote: ``selected_items.csv``, ``precision.csv`` when
        there, and the cross-fitted factors of ``calibration.csv`` when there.

        Raises
        ------
        DataError
            A missing or unreadable ``selected_items.csv``, or a file without the columns it must have.
        """
        from irtbayes.data.io.tabular import read_table

        folder = Path(folder)
        items = read_table(folder / "selected_items.csv")
        _require_columns(items, ("item", "benchmark"), folder / "selected_items.csv")
        items = items.assign(item=items["item"].astype(str))
        precision = read_table(folder / "precision.csv") if (folder / "precision.csv").is_file() else pd.DataFrame()
        calibration = None
        if (folder / "calibration.csv").is_file():
            calibration = read_table(folder / "calibration.csv")
            _require_columns(calibration, ("benchmark", "interval_factor", "ci"), folder / "calibration.csv")
            factors = pd.to_numeric(calibration["interval_factor"], errors="coerce")
            if factors.isna().any() or (factors < 1).any():
                raise DataError(f"{folder / 'calibration.csv'}: interval_factor must be numbers of at least 1")
            ci = pd.to_numeric(calibration["ci"], errors="coerce")
            if ci.isna().any() or not ((ci > 0) & (ci < 1)).all() or ci.nunique() != 1:
                raise DataError(f"{folder / 'calibration.csv'}: ci must be one probability between 0 and 1")
            calibration = calibration.assign(interval_factor=factors, ci=ci)
        first = items.iloc[0] if len(items) else {}
        return cls(
            items=items.drop(columns=[c for c in ("method", "score") if c in items.columns]),
            precision=precision,
            method=str(first.get("method", "posterior")) if len(items) else "posterior",
            score=str(first.get("score", "accuracy")) if len(items) else "accuracy",
            calibration=calibration,
        )

    read = deprecated_alias(load, "read")

    def table(self) -> pd.DataFrame:
        """:attr:`items`, with ``method`` and ``score``."""
        table = self.items.assign(method=self.method, score=self.score)
        table.attrs["warnings"] = list(self.warnings)
        return table

    def summary(self) -> pd.DataFrame:
        """:attr:`precision`: one row per benchmark."""
        return self.precision.copy()

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "score": self.score,
            "warnings": list(self.warnings),
            "items": records(self.items),
            "precision": records(self.precision),
            "calibration": None if self.calibration is None else records(self.calibration),
        }

    def to_text(self) -> str:
        head = "".join(f"{w}\n" for w in self.warnings)
        with pd.option_context("display.width", 160, "display.precision", 4):
            body = self.precision.to_string(index=False)
        text = f"{head}{len(self.items)} items selected ({self.method}, for the {self.score} score)\n{body}"
        if self.calibration is not None:
            row = self.calibration.iloc[0]
            factors = ", ".join(
                f"{b} {f:.2f}"
                for b, f in zip(self.calibration["benchmark"], self.calibration["interval_factor"], strict=True)
            )
            text += (
                f"\nIntervals of a system answering these items, cross-fitted ({int(row['folds'])} folds, "
                f"{row['refits']} refits, {float(row['ci']):.0%}): widened by {factors}"
            )
        return text

    def plot_precision(self, *, ax: Axes | None = None) -> Axes:
        """The expected error of each benchmark's score with the selected items."""
        from irtbayes.core.plots import plot_expected_error

        return plot_expected_error(
            self.precision,
            label="benchmark",
            value="expected_error",
            xlabel=f"expected error of the {self.score} score (root mean square)",
            title=warning_tags(self.warnings) + f"{len(self.items)} items ({self.method})",
            ax=ax,
        )


def score_weights(bank: ItemBank, target: Target | None = None) -> tuple[list[str], np.ndarray]:
    """The benchmarks and an (N, benchmarks) matrix of item weights ``v`` (see the module docstring)."""
    names = bank.benchmarks
    weights = np.zeros((bank.n_items, len(names)))
    location = bank.difficulty.mean(axis=0)
    for m, name in enumerate(names):
        member = bank.benchmark == name
        if target is None:
            weights[member, m] = 1.0 / member.sum()
            continue
        edges = target.edges_array
        inside = member & (location >= edges[0]) & (location <= edges[-1])
        bins = np.clip(np.searchsorted(edges, location, side="right") - 1, 0, target.n_bins - 1)
        counts = np.bincount(bins[inside], minlength=target.n_bins)
        mass = target.weights_array[counts > 0].sum()
        if mass > 0:
            weights[inside, m] = target.weights_array[bins[inside]] / counts[bins[inside]] / mass
    return names, weights


def allocate(sizes: Sequence[int], total: int) -> np.ndarray:
    """``total`` items split over groups of ``sizes``: at least one each, the rest in proportion (largest
    remainders), never more than a group holds.

    Examples
    --------
    >>> allocate([100, 50, 10], 16).tolist()
    [10, 5, 1]
    """
    sizes_arr = np.asarray(sizes, dtype="int64")
    take = np.minimum(sizes_arr, 1)
    while take.sum() < min(total, sizes_arr.sum()):
        room = sizes_arr - take
        share = (min(total, sizes_arr.sum())) * sizes_arr / sizes_arr.sum() - take
        share[room <= 0] = -np.inf
        take[int(np.argmax(share))] += 1
    return take


def expected_errors(
    population_p: np.ndarray,
    population_d: np.ndarray,
    weights: np.ndarray,
    chosen: np.ndarray,
    *,
    group: np.ndarray | None = None,
    deviation: np.ndarray | None = None,
) -> np.ndarray:
    """(benchmarks,) the criterion's root mean squared error of each score with items ``chosen`` (bool, N);
    ``group`` and ``deviation`` as :func:`greedy_items`."""
    pq, info = _information(population_p, population_d)
    rest = ~chosen
    a = population_d[:, rest] @ weights[rest]
    if deviation is None or not np.any(np.asarray(deviation) > 0):
        var = 1.0 / (1.0 + info[:, chosen].sum(axis=1))[:, None]
    else:
        own = _own_group(weights, group)
        bench_info = np.zeros_like(a)
        for m in range(weights.shape[1]):
            bench_info[:, m] = info[:, chosen & (own == m)].sum(axis=1)
        other = bench_info.sum(axis=1, keepdims=True) - bench_info
        var, _ = _benchmark_variance(bench_info, other, np.asarray(deviation)[None, :] ** 2)
    mse = a**2 * var + pq[:, rest] @ weights[rest] ** 2
    return np.sqrt(mse.mean(axis=0))


def greedy_items(
    population_p: np.ndarray,
    population_d: np.ndarray,
    weights: np.ndarray,
    quota: np.ndarray | None,
    total: int,
    *,
    group: np.ndarray | None = None,
    deviation: np.ndarray | None = None,
) -> list[int]:
    """The greedy posterior selection (module docstring): item positions in the order chosen.

    ``quota`` (benchmarks,) caps each benchmark's items (None: any split, every benchmark keeping one);
    ``total`` is the number of items to choose; ``group`` (N,) is each item's benchmark (column of ``weights``;
    default: the column where its weight is not 0, which an item outside a target's range does not have);
    ``deviation`` (benchmarks,) the benchmarks' deviation sds tau_B (module docstring; None or zeros: one ability).
    """
    if deviation is not None and np.any(np.asarray(deviation) > 0):
        return _greedy_with_deviations(
            population_p, population_d, weights, quota, total, group=group, deviation=np.asarray(deviation)
        )
    info, own, a, vd, v2pq = _greedy_start(population_p, population_d, weights, group)
    j = np.ones(population_p.shape[0])
    n_groups = weights.shape[1]
    taken = np.zeros(n_groups, dtype="int64")
    free = np.ones(len(own), dtype=bool)
    chosen: list[int] = []
    for step in range(total):
        allowed = _allowed(free, taken, own, quota, total - step)
        if not allowed.any():
            break
        s2 = (a**2).sum(axis=1, keepdims=True)
        a_own = a[:, own]
        new = (s2 - a_own**2 + (a_own - vd) ** 2) / (j[:, None] + info) - v2pq
        crit = np.where(allowed, new.mean(axis=0), np.inf)
        pick = int(np.argmin(crit))
        chosen.append(pick)
        free[pick] = False
        taken[own[pick]] += 1
        a[:, own[pick]] -= vd[:, pick]
        j += info[:, pick]
    return chosen


def _information(population_p: np.ndarray, population_d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P (1 - P)`` and the item information ``D^2 / (P (1 - P))`` of the posterior-mean curves (0 where P is 0 or 1)."""
    pq = population_p * (1 - population_p)
    return pq, np.divide(population_d**2, pq, out=np.zeros_like(pq), where=pq > 0)


def _own_group(weights: np.ndarray, group: np.ndarray | None) -> np.ndarray:
    """Each item's benchmark column: ``group``, or where its weight is not 0."""
    return np.argmax(weights != 0, axis=1) if group is None else np.asarray(group, dtype=np.int64)


def _allowed(free: np.ndarray, taken: np.ndarray, own: np.ndarray, quota: np.ndarray | None, left: int) -> np.ndarray:
    """The items the greedy selection may take next: not taken, within their benchmark's quota, and, without
    quotas, only from benchmarks with no item yet once ``left`` items are all they can still get."""
    allowed = free.copy()
    if quota is not None:
        allowed &= (taken < quota)[own]
    elif left <= int((taken == 0).sum()):
        allowed &= (taken == 0)[own]
    return allowed


def _benchmark_variance(
    own_info: np.ndarray, other_info: np.ndarray, tau2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The approximate posterior variance of a benchmark's ability, and its derivative in ``other_info``:
    ``V = u / (1 + I_B u)`` with ``u = tau^2 + 1 / (1 + I_other)`` (module docstring)."""
    u = tau2 + 1.0 / (1.0 + other_info)
    v = u / (1.0 + own_info * u)
    dv = -1.0 / ((1.0 + own_info * u) ** 2 * (1.0 + other_info) ** 2)
    return v, dv


def _greedy_start(
    population_p: np.ndarray, population_d: np.ndarray, weights: np.ndarray, group: np.ndarray | None
) -> tuple[np.ndarray, ...]:
    """What both greedy selections start from: the information (T, N), each item's benchmark ``own``,
    the predicted part's slope of each score over unanswered items ``a`` (T, M), and each item's weight in its own
    score times its slope ``vd`` and times its Bernoulli variance ``v2pq`` (T, N)."""
    pq, info = _information(population_p, population_d)
    own = _own_group(weights, group)
    v = weights[np.arange(len(own)), own]
    return info, own, population_d @ weights, v[None, :] * population_d, v[None, :] ** 2 * pq


def _greedy_with_deviations(
    population_p: np.ndarray,
    population_d: np.ndarray,
    weights: np.ndarray,
    quota: np.ndarray | None,
    total: int,
    *,
    group: np.ndarray | None,
    deviation: np.ndarray,
) -> list[int]:
    """:func:`greedy_items` with benchmark deviations: an item's effect on its own benchmark's score is exact, its
    effect on the other benchmarks' scores (through the general ability) to first order.

    Item i of benchmark m changes the expected squared error by the mean over the population of
    ``(a_m - v_i D_i)^2 / (1 / u_m + I_m + I_i) - a_m^2 V_m + I_i (sum_k a_k^2 dV_k - a_m^2 dV_m) - v_i^2 P_i Q_i``
    (``V_m = u_m / (1 + I_m u_m)``, :func:`_benchmark_variance`); only the first term needs an element per
    (population point, item) each step: the second is one number per benchmark, the third a product of the
    information with a population vector, the last does not change. Each benchmark's items are kept side by side,
    and the squared slopes ``(a_m - v_i D_i)^2`` are recomputed only for the benchmark whose item was taken.
    """
    info, own, a, vd, v2pq = _greedy_start(population_p, population_d, weights, group)
    n_groups, n_pop = weights.shape[1], info.shape[0]
    tau2 = (deviation**2)[None, :]  # (1, M)
    bench_info = np.zeros_like(a)  # (T, M): information of the items chosen from each benchmark
    taken = np.zeros(n_groups, dtype="int64")
    free = np.ones(len(own), dtype=bool)
    order = np.argsort(own, kind="stable")
    bounds = np.searchsorted(own[order], np.arange(n_groups + 1))
    spans = [order[bounds[m] : bounds[m + 1]] for m in range(n_groups)]
    info_b = [np.ascontiguousarray(info[:, s]) for s in spans]
    vd_b = [np.ascontiguousarray(vd[:, s]) for s in spans]
    slope2 = [(a[:, m : m + 1] - vd_b[m]) ** 2 for m in range(n_groups)]
    fixed = [-v2pq[:, s].mean(axis=0) for s in spans]  # the Bernoulli variance the item's own answer removes
    buffer = np.empty_like(info[:, : max((len(s) for s in spans), default=0)])
    mean_of = np.full(n_pop, 1.0 / n_pop)
    crit = np.empty(len(own))
    chosen: list[int] = []
    for step in range(total):
        allowed = _allowed(free, taken, own, quota, total - step)
        if not allowed.any():
            break
        other = bench_info.sum(axis=1, keepdims=True) - bench_info
        var, dvar = _benchmark_variance(bench_info, other, tau2)  # (T, M)
        precision = 1.0 / (tau2 + 1.0 / (1.0 + other)) + bench_info  # (T, M): 1 / V_m
        a2 = a**2
        cross = (a2 * dvar).sum(axis=1)  # (T,): first-order effect of information on all the scores
        for m, span in enumerate(spans):
            if not allowed[span].any():
                crit[span] = np.inf
                continue
            buf = buffer[:, : len(span)]
            np.add(info_b[m], precision[:, m : m + 1], out=buf)
            np.divide(slope2[m], buf, out=buf)
            crit[span] = (
                mean_of @ buf
                + ((cross - a2[:, m] * dvar[:, m]) * mean_of) @ info_b[m]
                - (a2[:, m] * var[:, m]).mean()
                + fixed[m]
            )
        pick = int(np.argmin(np.where(allowed, crit, np.inf)))  # ties go to the first item in the items' order
        m = own[pick]
        chosen.append(pick)
        free[pick] = False
        taken[m] += 1
        a[:, m] -= vd[:, pick]
        slope2[m] = (a[:, m : m + 1] - vd_b[m]) ** 2
        bench_info[:, m] += info[:, pick]
    return chosen


def anchor_items(
    features: np.ndarray, k: int, rng: np.random.Generator, *, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """k-means anchors (k-means++ start): the positions of the items nearest the k centres, and the share of
    the items in each one's cluster.

    Examples
    --------
    >>> x = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0], [5.0, 5.1]])
    >>> index, share = anchor_items(x, 2, np.random.default_rng(0))
    >>> sorted(zip(index.tolist(), share.round(1).tolist()))
    [(0, 0.4), (2, 0.6)]
    """
    n = len(features)
    if k >= n:
        return np.arange(n), np.full(n, 1.0 / n)
    centres = [features[rng.integers(n)]]
    for _ in range(1, k):
        d2 = np.min(((features[:, None, :] - np.array(centres)[None]) ** 2).sum(axis=2), axis=1)
        centres.append(features[rng.choice(n, p=d2 / d2.sum()) if d2.sum() > 0 else rng.integers(n)])
    centre = np.array(centres)
    label = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        label = np.argmin(((features[:, None, :] - centre[None]) ** 2).sum(axis=2), axis=1)
        new = np.array([features[label == c].mean(axis=0) if (label == c).any() else centre[c] for c in range(k)])
        if np.allclose(new, centre):
            break
        centre = new
    index, share = [], []
    for c in range(k):
        members = np.flatnonzero(label == c)
        if len(members) == 0:
            continue
        nearest = members[np.argmin(((features[members] - centre[c]) ** 2).sum(axis=1))]
        index.append(int(nearest))
        share.append(len(members) / n)
    return np.array(index), np.array(share)


def _quotas(bank: ItemBank, items: int | None, per_benchmark: int | None) -> tuple[np.ndarray | None, int, list[str]]:
    """Per-benchmark quotas (None for the posterior method's free split), the total and warnings."""
    if (items is None) == (per_benchmark is None):
        raise SpecError("select_items: give exactly one of items= (in all) and per_benchmark=")
    budget = int(items if items is not None else per_benchmark)  # type: ignore[arg-type]
    if budget < 1:
        raise SpecError(f"select_items: the number of items must be at least 1, got {budget}")
    names = bank.benchmarks
    sizes = np.array([(bank.benchmark == n).sum() for n in names])
    notes = []
    if per_benchmark is not None:
        short = [f"{n} ({s})" for n, s in zip(names, sizes, strict=True) if s < budget]
        if short:
            notes.append(
                f"FEWER ITEMS: {listed(short, 8)} hold fewer than {budget} items; all of their items are selected."
            )
        quota = np.minimum(sizes, budget)
        return quota, int(quota.sum()), notes
    if budget < len(names):
        raise SpecError(
            f"select_items: items={budget} cannot keep each of the bank's {len(names)} benchmarks; give at least "
            f"{len(names)}, or per_benchmark="
        )
    if budget > sizes.sum():
        notes.append(f"FEWER ITEMS: the bank holds {sizes.sum()} items, fewer than {budget}; all are selected.")
    return None, int(min(budget, sizes.sum())), notes


def select_items(
    fit: Fit | ItemBank,
    *,
    items: int | None = None,
    per_benchmark: int | None = None,
    target: Any = None,
    method: str = "posterior",
    n_draws: int = 200,
    exclude: Sequence[str] = (),
    data: ResponseData | str | os.PathLike[str] | bool | None = None,
    seed: int | None = 0,
    cross_fit: bool | None = None,
    ci_prob: float = 0.9,
    source_fit: Fit | None = None,
    scheduler: Scheduler = None,
) -> Selection:
    """The items a new system should answer so that its scores are most precise (see the module docstring).

    Parameters
    ----------
    fit
        The fitted item bank (or an :class:`ItemBank`).
    items, per_benchmark
        The budget: ``items`` in all (every benchmark keeping one), or ``per_benchmark`` of each benchmark.
    target
        None: each benchmark's accuracy; else the audit's target (a :class:`Target`, ``"uniform"``, a CSV path
        or weights), and the selection aims at each benchmark's target-weighted score.
    method
        ``"posterior"``, ``"random"`` or ``"anchors"``.
    n_draws
        Posterior draws of the item parameters behind the item curves.
    exclude
        Items never to select (for example items already answered elsewhere).
    data
        The fit's own responses, for the benchmarks' deviations (:meth:`ItemBank.from_fit`).
    seed
        Seed of the random and anchor methods (and of the cross-fitting's folds and refits).
    cross_fit, ci_prob
        Calibrate the intervals of systems that answer the chosen items by cross-fitting
        (:mod:`irtbayes.evaluating.crossfit`: the model refitted without each fold of the fit's systems, the same
        selection made on each refit, the fold's systems scored on it), at ``ci_prob``; the factors are the
        selection's :attr:`~Selection.calibration`, which :func:`~irtbayes.evaluating.prediction.predict_scores`
        takes (``selection=``). None (default): for ``posterior`` and ``anchors`` on fits of at most
        :data:`~irtbayes.evaluating.crossfit.CROSS_FIT_MAX_SYSTEMS` systems whose data are found.
    source_fit
        With an :class:`ItemBank` as ``fit``: the fit it was made from, for cross-fitting.
    scheduler
        Where the cross-fitting's refits run: None (default) in threads here, or on the Dask cluster whose address
        ``IRTBAYES_SCHEDULER`` holds; an address (``tcp://host:8786``) or a ``dask.distributed.Client``: on that
        cluster (:func:`~irtbayes.core.parallel.map_tasks`).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, _ = simulated_fit(40, 60, n_benchmarks=3)
    >>> chosen = select_items(fit, per_benchmark=4)
    >>> chosen.precision["items_selected"].tolist(), len(chosen.item_ids)
    ([4, 4, 4], 12)
    >>> few = select_items(fit, per_benchmark=1).precision["expected_error"]
    >>> bool((chosen.precision["expected_error"] < few).all())
    True
    """
    if method not in METHODS:
        raise SpecError(f"select_items: method must be one of {', '.join(METHODS)}, got {method!r}")
    check_ci_prob(ci_prob)
    bank = fit if isinstance(fit, ItemBank) else ItemBank.from_fit(fit, n_draws=n_draws, data=data)
    source = source_fit if isinstance(fit, ItemBank) else fit
    if target is not None and not isinstance(target, Target):
        if isinstance(fit, ItemBank):
            raise SpecError("select_items: with an ItemBank, give the target as a Target")
        target = evaluation_target(fit, target)
    excluded = bank.columns(list(exclude))
    if (excluded < 0).any():
        unknown = [e for e, c in zip(exclude, excluded, strict=True) if c < 0]
        raise SpecError(f"select_items: exclude= names item(s) not in the bank: {listed(unknown, 5)}")
    table, precision, notes = _choose(bank, items, per_benchmark, target, method, exclude, seed)
    selection = Selection(
        items=table,
        precision=precision,
        method=method,
        score="accuracy" if target is None else "target",
        warnings=(*bank.warnings, *notes),
    )
    if source is None:
        if cross_fit:
            raise SpecError("select_items: cross-fitting refits the bank's model; give the fit (source_fit=)")
        return selection
    if not cross_fit_applies(source, method, cross_fit) or (cross_fit is None and bank.reference is None):
        return selection  # by default only where the bank's data were found (its reference systems)

    def choose(fold_bank: ItemBank) -> list[str]:
        own = [e for e in exclude if fold_bank.columns([e])[0] >= 0]
        return _choose(fold_bank, items, per_benchmark, target, method, own, seed)[0]["item"].tolist()

    folds: dict[str, Any] = {
        "data": None if isinstance(data, bool) else data,
        "seed": seed or 0,
        "scheduler": scheduler,
    }
    return _cross_fitted(selection, source, bank, choose, asked=bool(cross_fit), ci_prob=ci_prob, **folds)


def _cross_fitted(
    selection: Selection,
    source: Fit,
    bank: ItemBank,
    choose: Callable[[ItemBank], list[str]],
    *,
    data: ResponseData | str | os.PathLike[str] | None,
    asked: bool,
    ci_prob: float,
    seed: int,
    scheduler: Scheduler,
) -> Selection:
    """``selection`` with its cross-fitted factors (:class:`CrossFit`, the same selection ``choose`` made on each
    fold's bank); where the refits fail, with a warning instead, or the error when cross-fitting was ``asked`` or a
    scheduler named to run it."""
    try:
        folds = CrossFit.from_fit(source, bank, data=data, seed=seed, scheduler=scheduler)
        calibration = folds.factors(choose, ci_prob=ci_prob, seed=seed)
    except IrtbayesError as err:
        if asked or scheduler is not None:  # say why it could not be done
            raise
        note = not_cross_fitted(err, "the intervals of systems answering these items")
        return dataclasses.replace(selection, warnings=(*selection.warnings, note))
    calibration = calibration.assign(ci=ci_prob, folds=len(folds.banks), refits=folds.sampler)
    return dataclasses.replace(selection, calibration=calibration)


def _require_columns(table: pd.DataFrame, columns: Sequence[str], path: Path) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise DataError(
            f"{path}: no column {', '.join(repr(c) for c in missing)} (has: {', '.join(map(str, table.columns))})"
        )


def _choose(
    bank: ItemBank,
    items: int | None,
    per_benchmark: int | None,
    target: Target | None,
    method: str,
    exclude: Sequence[str],
    seed: int | None,
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The selection's item table, its precision table and its notes (:func:`select_items`, checked arguments)."""
    keep = np.ones(bank.n_items, dtype=bool)
    keep[bank.columns(list(exclude))] = False
    sub = _restricted(bank, keep)
    quota, total, notes = _quotas(sub, items, per_benchmark)
    names, weights = score_weights(sub, target)
    p, d = sub.mean_curves(sub.population)
    rng = np.random.default_rng(seed)
    weight_col = None
    if method == "posterior":
        group = pd.Index(names).get_indexer(sub.benchmark)
        order = greedy_items(p, d, weights, quota, total, group=group, deviation=sub.deviations)
    else:
        sizes = [int((sub.benchmark == n).sum()) for n in names]
        counts = quota if quota is not None else allocate(sizes, total)
        order, weight_col = _by_benchmark(sub, names, counts, method, rng)
    chosen = np.zeros(sub.n_items, dtype=bool)
    chosen[order] = True
    table = pd.DataFrame(
        {"item": sub.items[order].astype(str), "benchmark": sub.benchmark[order], "order": np.arange(1, len(order) + 1)}
    )
    per = table.groupby("benchmark")["item"].transform("size")
    table["weight"] = weight_col if weight_col is not None else 1.0 / per.to_numpy()
    precision = pd.DataFrame(
        {
            "benchmark": names,
            "items_selected": [int(chosen[sub.benchmark == n].sum()) for n in names],
            "items_total": [int((sub.benchmark == n).sum()) for n in names],
            "expected_error": expected_errors(
                p, d, weights, chosen, group=pd.Index(names).get_indexer(sub.benchmark), deviation=sub.deviations
            ),
            "score": "accuracy" if target is None else "target",
        }
    )
    return table, precision, notes


def _restricted(bank: ItemBank, keep: np.ndarray) -> ItemBank:
    """The bank without the excluded items."""
    if keep.all():
        return bank
    return dataclasses.replace(
        bank,
        items=bank.items[keep],
        benchmark=bank.benchmark[keep],
        difficulty=bank.difficulty[:, keep],
        discrimination=bank.discrimination[:, keep],
        guessing=None if bank.guessing is None else bank.guessing[:, keep],
        reference=None if bank.reference is None else bank.reference[:, keep],
        reference_trials=None if bank.reference_trials is None else bank.reference_trials[:, keep],
    )


def _by_benchmark(
    bank: ItemBank, names: list[str], counts: np.ndarray, method: str, rng: np.random.Generator
) -> tuple[list[int], np.ndarray]:
    """Random or anchor items, ``counts[m]`` of benchmark m; their positions and weights within their benchmark."""
    order: list[int] = []
    weight: list[float] = []
    for name, k in zip(names, counts, strict=True):
        member = np.flatnonzero(bank.benchmark == name)
        if method == "random":
            pick = rng.choice(member, size=int(k), replace=False)
            order += pick.tolist()
            weight += [1.0 / len(pick)] * len(pick)
            continue
        features = np.column_stack(
            [bank.difficulty[:, member].mean(axis=0), np.log(bank.discrimination[:, member]).mean(axis=0)]
        )
        sd = features.std(axis=0)
        features = (features - features.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        index, share = anchor_items(features, int(k), rng)
        order += member[index].tolist()
        weight += share.tolist()
    return order, np.array(weight)
