"""The item bank a new system is evaluated against: thinned posterior draws of a fit's item parameters.

An :class:`ItemBank` holds, for ``S`` evenly spaced posterior draws of a fit, each item's difficulty,
discrimination and guessing (``S x N`` arrays), the items' benchmarks, the ability prior of a new system and
the *population*: equally weighted points (quantiles of the fitted systems' pooled ability draws) that stand
for the ability distribution of the systems the bank was fitted to. Subset selection averages its criterion
over the population; scoring integrates over the ability prior.

The ability prior
-----------------
``prior="normal"`` (default) is the model's own population, N(0, 1) on the identified ability scale.
``prior="population"`` is the fitted systems' ability distribution itself: the pooled posterior ability draws
of every fitted system, binned on the ability grid and smoothed with a normal kernel of Silverman's bandwidth;
it follows a skewed or bimodal population that the normal prior does not, which matters when a system answers
only a handful of items.

Benchmarks that ask for more than one ability
---------------------------------------------
A one-dimensional fit gives each system one ability, but systems are rarely equally strong on every benchmark
of a bank (a model tuned for mathematics does better on GSM8K than its ability predicts). A new system's answers
on one benchmark then say less about its accuracy on another than the fit implies, and intervals that ignore it
are too narrow. The bank therefore gives each benchmark B a *deviation sd* tau_B: a new system's ability on B is

    theta_B = theta + delta_B,    delta_B ~ N(0, tau_B^2),

with theta its general ability (prior below) and the delta_B independent. :func:`estimate_deviations` estimates
tau_B from the fit's own data by maximum marginal likelihood: for each fitted system j, with the posterior-mean
item parameters, the likelihood of its responses on B is integrated over delta and over its ability's posterior
given its responses on the *other* benchmarks, and tau_B maximises the product over systems (tau from 0 to 3: on steps of
0.25, then of 0.05 around the best). tau_B = 0 gives back the one-dimensional model; a bank of one benchmark has
tau = 0. Without the fit's data the deviations are 0 and the outputs say so (``NO REFERENCE``).

What the bank says about itself
-------------------------------
:attr:`ItemBank.warnings` holds one sentence for each reason to read its outputs with care (an approximate
fit, one that failed its convergence checks, a partial fit); every output built on the bank repeats them.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from irtbayes.core import irt
from irtbayes.core.errors import IrtbayesError, SpecError
from irtbayes.core.summaries import spaced
from irtbayes.data.responses import ResponseData
from irtbayes.fitting.storage import load_fit_data

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit

__all__ = [
    "DEFAULT_GRID",
    "DEVIATION_GRID",
    "PRIORS",
    "REFERENCE_COMPLETE",
    "REFERENCE_SYSTEMS",
    "ItemBank",
    "bank_warnings",
    "estimate_deviations",
    "reference_responses",
    "reference_trials",
    "warning_tags",
]

#: The ability grid of every grid posterior of this stage: 161 points on [-6, 6].
DEFAULT_GRID = np.linspace(-6.0, 6.0, 161)
#: The ability priors a new system can be given.
PRIORS = ("normal", "population")
#: Points standing for the fitted systems' ability distribution (equal weights).
POPULATION_POINTS = 32


def warning_tags(warnings: tuple[str, ...] | list[str]) -> str:
    """The warnings' leading tags for a figure's title: ``"UNCONVERGED, NO REFERENCE: "``, or ``""`` without any.

    Examples
    --------
    >>> warning_tags(("APPROXIMATE: the item bank ...", "FEWER ITEMS: law (30) ..."))
    'APPROXIMATE, FEWER ITEMS: '
    >>> warning_tags(())
    ''
    """
    tags = list(dict.fromkeys(w.split(":", 1)[0] for w in warnings))
    return f"{', '.join(tags)}: " if tags else ""


def bank_warnings(fit: Fit) -> tuple[str, ...]:
    """One sentence per reason to read outputs built on ``fit`` with care (approximate, unconverged, partial).

    Examples
    --------
    >>> from irtbayes.examples import simulated_fit
    >>> fit, _ = simulated_fit(20, 30)
    >>> bank_warnings(fit) == () if fit.diagnostics.ok else bank_warnings(fit)[0].startswith("UNCONVERGED")
    True
    """
    out = []
    if fit.approximate:
        out.append(
            f"APPROXIMATE: the item bank comes from an approximate fit ({fit.sampler.get('name')}); its item "
            "uncertainty is approximate too."
        )
    if fit.partial:
        out.append(fit.partial_text())
    elif not fit.approximate and not fit.diagnostics.ok:
        out.append(
            "UNCONVERGED: the item bank's fit failed its convergence checks; scores and selections built on it "
            "are not to be reported as results."
        )
    return tuple(out)


@dataclass(frozen=True, eq=False)
class ItemBank:
    """Thinned posterior draws of a fit's item parameters, with what evaluation needs beside them.

    Attributes
    ----------
    items
        Item ids, in the fit's order (N).
    benchmark
        (N,) each item's benchmark (``"(unlabelled)"`` where the fit has none).
    difficulty, discrimination
        (S, N) posterior draws.
    guessing
        (S, N) draws for a 3PL bank, else None.
    population
        (P,) equally weighted ability points standing for the fitted systems' ability distribution.
    log_prior
        (G,) log prior density of a new system's ability on :attr:`grid`.
    grid
        The ability grid.
    binary
        False when the bank was fitted to fractional scores (True for 0/1 responses and k successes of n trials).
    warnings
        See :func:`bank_warnings`.
    source
        Where the fit came from (its data's source).
    fitted_subjects
        The systems the bank was fitted to.
    deviation_sd
        (benchmarks,) tau_B of each benchmark, in the order of :attr:`benchmarks` (module docstring); None: 0.
    reference
        (systems, N) float32 responses of up to :data:`REFERENCE_SYSTEMS` of the fitted systems (evenly spaced; NaN
        where a system has no response) and of up to :data:`REFERENCE_COMPLETE` more that answered every benchmark
        (:func:`reference_responses`), read with the fit's data: what the intervals are calibrated on
        (:func:`irtbayes.evaluating.prediction.interval_factors`); None without the data.
    reference_trials
        (systems, N) the number of trials of each :attr:`reference` response (1 where missing) when the fit's data
        hold k successes of n trials (:func:`reference_trials`), which the calibration weighs them by; None when
        every response is one trial.
    """

    items: pd.Index
    benchmark: np.ndarray
    difficulty: np.ndarray
    discrimination: np.ndarray
    guessing: np.ndarray | None
    population: np.ndarray
    log_prior: np.ndarray
    grid: np.ndarray
    binary: bool
    warnings: tuple[str, ...]
    source: str
    fitted_subjects: pd.Index
    deviation_sd: np.ndarray | None = None
    reference: np.ndarray | None = None
    reference_trials: np.ndarray | None = None

    @classmethod
    def from_fit(
        cls,
        fit: Fit,
        *,
        n_draws: int = 400,
        prior: str = "normal",
        grid: np.ndarray | None = None,
        data: ResponseData | str | os.PathLike[str] | bool | None = None,
        deviations: bool = True,
    ) -> ItemBank:
        """The bank of ``fit``: ``n_draws`` evenly spaced posterior draws and the ability prior ``prior``.

        ``data`` are the fit's own responses, for the benchmark deviations (module docstring): a
        :class:`ResponseData`, a path or data set name, None to read the source the fit records (the deviations
        are 0, with a warning, when it is not found), or False for no deviations (one ability across benchmarks).
        The same data give the bank its :attr:`reference` responses. ``deviations=False`` keeps one ability across
        benchmarks while still reading the data for the reference.

        Raises
        ------
        SpecError
            A multidimensional fit, an unknown prior, a bad grid or ``n_draws`` below 1.

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, _ = simulated_fit(20, 30)
        >>> bank = ItemBank.from_fit(fit, n_draws=50)
        >>> bank.difficulty.shape, len(bank.items), bank.population.shape
        ((50, 30), 30, (32,))
        """
        fit.refuse_if_unsettled("the item bank")
        fit.require_binary_model("evaluating a new system (the item bank)")
        if prior not in PRIORS:
            raise SpecError(f"evaluation: prior must be one of {', '.join(PRIORS)}, got {prior!r}")
        if int(n_draws) < 1:
            raise SpecError(f"evaluation: n_draws must be at least 1, got {n_draws}")
        grid = DEFAULT_GRID if grid is None else np.asarray(grid, dtype="float64")
        if grid.ndim != 1 or len(grid) < 3 or np.any(np.diff(grid) <= 0):
            raise SpecError("evaluation: the ability grid must be an increasing 1-d array with at least 3 points")
        post = fit.posterior
        if "dim" in post["ability"].dims:
            raise SpecError(
                "evaluation: the fit has several ability dimensions (dims='domain'); scoring a new system on the "
                "whole bank needs a one-dimensional fit (refit with dims='one', --dims one)"
            )
        n_total = post.sizes["chain"] * post.sizes["draw"]
        pick = spaced(n_total, int(n_draws))

        def flat(name: str) -> np.ndarray:
            values = post[name].transpose("chain", "draw", "item").values.astype("float64")
            return np.ascontiguousarray(values.reshape(n_total, -1)[pick])

        ability = post["ability"].transpose("chain", "draw", "subject").values.reshape(-1)
        population = np.quantile(ability, (np.arange(POPULATION_POINTS) + 0.5) / POPULATION_POINTS)
        benchmark = fit.constant_data["item_benchmark"].values.astype(str)
        benchmark = np.where(benchmark == "", "(unlabelled)", benchmark)
        # a bank fitted to k successes of n trials is binary: each trial is answered right or wrong
        binary = bool(fit.info.get("binary", True)) or fit.info.get("response_kind") == "counts"
        bank = cls(
            items=fit.item_ids,
            benchmark=benchmark,
            difficulty=flat("difficulty"),
            discrimination=flat("discrimination"),
            guessing=flat("guessing") if "guessing" in post else None,
            population=population,
            log_prior=_log_prior(prior, grid, ability),
            grid=grid,
            binary=binary,
            warnings=bank_warnings(fit),
            source=str(fit.info.get("source", "<fit>")),
            fitted_subjects=fit.subject_ids,
        )
        if data is False:
            return bank
        try:
            loaded = load_fit_data(fit, None if data is True else data, hint="give the fit's own data (data=, --data)")
        except (IrtbayesError, OSError) as err:  # the recorded source is gone, changed or unreadable
            if data is not None:
                raise
            between = (
                "how far systems' abilities differ between benchmarks was not estimated (intervals on one benchmark "
                "from items of another may be too narrow), and "
                if len(bank.benchmarks) > 1
                else ""
            )
            note = (
                f"NO REFERENCE: the fit's data were not found ({err}), so {between}the intervals were not calibrated "
                "on the bank's own systems; give them with data= (--data)."
            )
            return dataclasses.replace(bank, warnings=(*bank.warnings, note))
        return dataclasses.replace(
            bank,
            deviation_sd=estimate_deviations(bank, loaded) if deviations else None,
            reference=reference_responses(bank, loaded),
            reference_trials=reference_trials(bank, loaded),
        )

    @property
    def deviations(self) -> np.ndarray:
        """(benchmarks,) tau_B (zeros when the bank has none)."""
        return np.zeros(len(self.benchmarks)) if self.deviation_sd is None else np.asarray(self.deviation_sd)

    @cached_property
    def benchmark_index(self) -> np.ndarray:
        """(N,) each item's position in :attr:`benchmarks`."""
        return pd.Index(self.benchmarks).get_indexer(self.benchmark)

    def kernel(self, b: int) -> np.ndarray | None:
        """(G, G) ``K[g, x]``: the probability that a system of general ability ``grid[g]`` has ability ``grid[x]`` on
        benchmark ``b`` (normal with sd tau_b, rows summing to 1); None where tau_b is 0."""
        return _kernel(self.grid, float(self.deviations[b]))

    @property
    def n_draws(self) -> int:
        return int(self.difficulty.shape[0])

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def benchmarks(self) -> list[str]:
        """The benchmarks in order of first appearance."""
        return list(dict.fromkeys(self.benchmark.tolist()))

    def thinned(self, n_draws: int) -> ItemBank:
        """The bank with at most ``n_draws`` of its draws, evenly spaced."""
        if self.n_draws <= n_draws:
            return self
        keep = spaced(self.n_draws, n_draws)
        return dataclasses.replace(
            self,
            difficulty=self.difficulty[keep],
            discrimination=self.discrimination[keep],
            guessing=None if self.guessing is None else self.guessing[keep],
        )

    def response_arrays(self, data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
        """``data``'s responses on the bank's items as (systems, N) arrays: the responses (0 where missing) and the
        observed-mask, rows in ``data``'s subject order (items the bank does not hold are left out).

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> y, w = ItemBank.from_fit(fit, n_draws=10, data=False).response_arrays(data)
        >>> y.shape, int(w.sum()) == data.n_responses, float((y * w).sum()) == float(data.values.sum())
        ((20, 30), True, True)
        """
        cols = self.columns(data.item_ids)[data.item_codes]
        keep = cols >= 0
        y = np.zeros((data.n_subjects, self.n_items))
        w = np.zeros_like(y)
        y[data.subject_codes[keep], cols[keep]] = data.values[keep]
        w[data.subject_codes[keep], cols[keep]] = 1.0
        return y, w

    def trial_arrays(self, data: ResponseData) -> np.ndarray:
        """(systems, N) the number of trials of each of ``data``'s responses on the bank's items (1 where missing), in
        the layout of :meth:`response_arrays`, whose shares of successes they weigh in the likelihood.

        Examples
        --------
        >>> from irtbayes.examples import simulated_fit
        >>> fit, data = simulated_fit(20, 30)
        >>> n = ItemBank.from_fit(fit, n_draws=10, data=False).trial_arrays(data)
        >>> n.shape, int(n.max())
        ((20, 30), 1)
        """
        cols = self.columns(data.item_ids)[data.item_codes]
        keep = cols >= 0
        n = np.ones((data.n_subjects, self.n_items))
        n[data.subject_codes[keep], cols[keep]] = data.trials[keep]
        return n

    def columns(self, items: pd.Index | list[str]) -> np.ndarray:
        """Positions of ``items`` in the bank (-1 for an item the bank does not hold)."""
        return self.items.get_indexer(pd.Index(items, dtype=object).astype(str))

    def probability(self, theta: np.ndarray, cols: np.ndarray | slice = slice(None)) -> np.ndarray:
        """P(correct) per draw: ``theta`` (S, T) abilities (one row per draw) -> (S, T, n) for items ``cols``."""
        c = None if self.guessing is None else self.guessing[:, None, cols]
        return irt.probability(theta[:, :, None], self.difficulty[:, None, cols], self.discrimination[:, None, cols], c)

    @cached_property
    def grid_curves(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`mean_curves` on :attr:`grid`, computed once per bank."""
        return self.mean_curves(self.grid)

    def mean_curves(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior-mean item curves and their slopes at abilities ``theta`` (T,): two (T, N) arrays.

        ``P[t, i] = mean_s P_i(theta_t | draw s)`` is the probability of a correct response of a system of
        ability ``theta_t`` with the item's parameters integrated out; ``D`` is its derivative in ``theta``.
        """
        chunk = max(1, (1 << 22) // max(1, len(theta) * self.n_items))
        p_sum = np.zeros((len(theta), self.n_items))
        d_sum = np.zeros_like(p_sum)
        for lo in range(0, self.n_draws, chunk):
            a = self.discrimination[lo : lo + chunk, None, :]
            b = self.difficulty[lo : lo + chunk, None, :]
            sig = irt.sigmoid_mix(a * (theta[None, :, None] - b))
            slope = a * sig * (1.0 - sig)
            if self.guessing is not None:
                c = self.guessing[lo : lo + chunk, None, :]
                p_sum += (c + (1 - c) * sig).sum(axis=0)
                d_sum += ((1 - c) * slope).sum(axis=0)
            else:
                p_sum += sig.sum(axis=0)
                d_sum += slope.sum(axis=0)
        return p_sum / self.n_draws, d_sum / self.n_draws


@lru_cache(maxsize=64)
def _kernel_cached(grid_key: tuple[float, ...], tau: float) -> np.ndarray:
    grid = np.asarray(grid_key)
    k = np.exp(-0.5 * ((grid[None, :] - grid[:, None]) / tau) ** 2)
    return k / k.sum(axis=1, keepdims=True)


def _kernel(grid: np.ndarray, tau: float) -> np.ndarray | None:
    if tau <= 0:
        return None
    return _kernel_cached(tuple(np.round(grid, 12)), round(tau, 6))


#: Fitted systems whose responses a bank keeps for calibrating intervals (evenly spaced).
REFERENCE_SYSTEMS = 200
#: Further fitted systems a bank of several benchmarks keeps among those that answered every benchmark, for the
#: intervals of scores over several benchmarks (:func:`answered_benchmarks`).
REFERENCE_COMPLETE = 100


def answered_benchmarks(bank: ItemBank, w: np.ndarray, *, min_share: float = 0.5) -> np.ndarray:
    """(J, benchmarks) whether each system (a row of the observed-mask ``w``, (J, N)) answered at least
    ``min_share`` of each benchmark's items."""
    member = bank.benchmark_index[:, None] == np.arange(len(bank.benchmarks))[None, :]
    counts = (np.asarray(w) > 0).astype("float64") @ member.astype("float64")
    return counts >= np.maximum(1, min_share * member.sum(axis=0))[None, :]


def _reference_cells(
    bank: ItemBank, data: ResponseData, *, most: int, complete: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The reference systems of ``data`` (:func:`reference_responses`): how many, and which of ``data``'s responses
    go where (a mask over its rows, and their rows and columns in the reference)."""
    cols = bank.columns(data.item_ids)[data.item_codes]
    inside = cols >= 0
    pick = spaced(data.n_subjects, most)
    if len(bank.benchmarks) > 1 and complete > 0:
        n_bench = len(bank.benchmarks)
        cell = data.subject_codes[inside] * n_bench + bank.benchmark_index[cols[inside]]
        counts = np.bincount(cell, minlength=data.n_subjects * n_bench).reshape(data.n_subjects, n_bench)
        sizes = np.bincount(bank.benchmark_index, minlength=n_bench)
        whole = np.setdiff1d(np.flatnonzero((counts >= np.maximum(1, 0.5 * sizes)[None, :]).all(axis=1)), pick)
        pick = np.union1d(pick, whole[spaced(len(whole), complete)] if len(whole) else whole)
    keep = inside & np.isin(data.subject_codes, pick)
    return len(pick), keep, np.searchsorted(pick, data.subject_codes[keep]), cols[keep]


def reference_responses(
    bank: ItemBank, data: ResponseData, *, most: int = REFERENCE_SYSTEMS, complete: int = REFERENCE_COMPLETE
) -> np.ndarray:
    """(systems, N) float32: the responses of up to ``most`` of ``data``'s systems (evenly spaced) on the bank's
    items, NaN where missing; with several benchmarks, also of up to ``complete`` more (evenly spaced) among the
    systems that answered at least half of every benchmark's items. A response of k successes of n trials is its
    share k / n (its n in :func:`reference_trials`)."""
    n_rows, keep, row, col = _reference_cells(bank, data, most=most, complete=complete)
    out = np.full((n_rows, bank.n_items), np.nan, dtype="float32")
    out[row, col] = data.values[keep]
    return out


def reference_trials(
    bank: ItemBank, data: ResponseData, *, most: int = REFERENCE_SYSTEMS, complete: int = REFERENCE_COMPLETE
) -> np.ndarray | None:
    """(systems, N) float32: the number of trials of each response of :func:`reference_responses` (same systems,
    1 where missing); None when every response of ``data`` is one trial.

    Examples
    --------
    >>> from irtbayes.data.simulate import simulate_responses
    >>> from irtbayes.examples import simulated_fit
    >>> fit, data = simulated_fit(20, 30)
    >>> bank = ItemBank.from_fit(fit, n_draws=10, data=False)
    >>> counts, _ = simulate_responses(20, 30, n_trials=4, seed=1)
    >>> reference_trials(bank, data) is None, int(reference_trials(bank, counts, most=5).max())
    (True, 4)
    """
    if not data.has_trials:
        return None
    n_rows, keep, row, col = _reference_cells(bank, data, most=most, complete=complete)
    out = np.ones((n_rows, bank.n_items), dtype="float32")
    out[row, col] = data.trials[keep]
    return out


#: The deviation sds tried by :func:`estimate_deviations`.
DEVIATION_GRID = np.round(np.arange(0.0, 3.0001, 0.05), 2)


def estimate_deviations(bank: ItemBank, data: ResponseData) -> np.ndarray:
    """(benchmarks,) tau_B by maximum marginal likelihood over the fit's systems (module docstring).

    ``data`` are the fit's responses; the item parameters are the bank's posterior means.
    """
    a = bank.discrimination.mean(axis=0)
    b = bank.difficulty.mean(axis=0)
    c = None if bank.guessing is None else bank.guessing.mean(axis=0)
    cols = bank.columns(data.item_ids)
    keep = cols[data.item_codes] >= 0
    subj, col, y = data.subject_codes[keep], cols[data.item_codes][keep], data.values[keep]
    n = data.trials[keep] if data.has_trials else None
    grid = bank.grid
    n_bench = len(bank.benchmarks)
    bench_of = bank.benchmark_index[col]
    # log-likelihood of each system's responses on each benchmark at each grid ability: (benchmarks, G, J)
    log_lik = np.zeros((n_bench, len(grid), data.n_subjects))
    cell = bench_of * data.n_subjects + subj
    for g, theta in enumerate(grid):
        eta = irt.linear_predictor(theta, b[col], a[col])
        ll = irt.log_likelihood(y, eta, None if c is None else c[col], trials=n)
        log_lik[:, g, :] = np.bincount(cell, weights=ll, minlength=n_bench * data.n_subjects).reshape(n_bench, -1)
    answered = np.zeros((n_bench, data.n_subjects), dtype=bool)
    answered[bench_of, subj] = True
    out = np.zeros(n_bench)
    total = log_lik.sum(axis=0)
    for k in range(n_bench):
        rest = total - log_lik[k] + bank.log_prior[:, None]  # the general ability from the other benchmarks
        has = answered[k] & answered[np.arange(n_bench) != k].any(axis=0)
        if has.sum() < 2:
            continue
        post = np.exp(rest[:, has] - rest[:, has].max(axis=0, keepdims=True))
        post /= post.sum(axis=0, keepdims=True)
        own = log_lik[k][:, has]
        shift = own.max(axis=0, keepdims=True)
        e = np.exp(own - shift)

        def log_marginal(tau: float, post: np.ndarray = post, e: np.ndarray = e) -> float:
            k_tau = _kernel(grid, tau)
            lik = e if k_tau is None else k_tau @ e
            return float(np.log(np.maximum((post * lik).sum(axis=0), 1e-300)).sum())

        coarse = DEVIATION_GRID[::5]  # steps of 0.25, then 0.05 around the best
        best = float(coarse[int(np.argmax([log_marginal(float(t)) for t in coarse]))])
        fine = DEVIATION_GRID[np.abs(DEVIATION_GRID - best) <= 0.25 + 1e-9]
        out[k] = fine[int(np.argmax([log_marginal(float(t)) for t in fine]))]
    return out


def _log_prior(prior: str, grid: np.ndarray, ability: np.ndarray) -> np.ndarray:
    """The log prior density of a new system's ability on ``grid`` (see the module's docstring)."""
    if prior == "normal":
        return -0.5 * grid**2
    step = np.gradient(grid)
    edges = np.concatenate([[grid[0] - step[0] / 2], (grid[1:] + grid[:-1]) / 2, [grid[-1] + step[-1] / 2]])
    hist = np.histogram(np.clip(ability, grid[0], grid[-1]), bins=edges)[0].astype("float64")
    bandwidth = max(0.9 * min(np.std(ability), _iqr(ability) / 1.34) * len(ability) ** -0.2, float(step.max()))
    kernel = np.exp(-0.5 * ((grid[:, None] - grid[None, :]) / bandwidth) ** 2)
    density = kernel @ hist / step
    return np.log(np.maximum(density / density.max(), 1e-300))


def _iqr(values: np.ndarray) -> float:
    q25, q75 = np.quantile(values, [0.25, 0.75])
    return float(q75 - q25) if q75 > q25 else float(np.std(values)) * 1.34
