"""Intervals of a chosen subset calibrated on systems whose answers did not choose it: cross-fitting.

The intervals of :func:`~irtbayes.evaluating.prediction.predict_scores` are calibrated on the bank's own systems
answering the same items (:func:`~irtbayes.evaluating.prediction.interval_factors`). That holds when the items
were chosen without looking at those systems' answers. A posterior selection
(:func:`~irtbayes.evaluating.selection.select_items`) looks at them: it takes the items whose fitted curves are
steepest for the bank's population, and with few systems and many items, many items split the bank's systems
perfectly by chance (22 systems and 12,032 items on MMLU-Pro). On such items the bank's own systems answer all
right or all wrong, so scored as if new they look far stronger or weaker than they are, and the in-sample
calibration widens the intervals of a new system three- to fivefold, while systems the bank never saw need far less
(MMLU-Pro, 10 items per category: in-sample factors 3.2-4.8, held-out systems' 90th percentile of the same error
ratio 0.7-1.6).

Cross-fitting removes that: the fit's systems are split into :data:`CROSS_FIT_FOLDS` folds; for each fold the
fit's model is refitted to the other systems (the approximate tier by default: the factors come from these
refits, not from the bank's own posterior), the *same selection* is made on that refit's bank, and the fold's
systems are scored on the items chosen there, against their accuracy over every item they answered. Each
scope's factor is the split-conformal order statistic of the errors over all folds
(:func:`~irtbayes.evaluating.prediction.factors_from_ratios`), so a new system's interval widened by it covers
with probability ``ci_prob`` when the new system is like the bank's systems.

``select_items`` cross-fits by default when the fit has at most :data:`CROSS_FIT_MAX_SYSTEMS` systems and the
method looks at the data (``posterior``, ``anchors``); with more systems one system's answers move a selection too
little to matter and the in-sample calibration stands.

The folds are refitted and scored :data:`CROSS_FIT_WORKERS` at a time, in threads; each has its own seed, so the
factors are those of the folds run one after another. Given a scheduler (``scheduler=``, ``--scheduler`` or the
``IRTBAYES_SCHEDULER`` environment variable), the refits run on that Dask cluster instead
(:func:`~irtbayes.core.parallel.map_tasks`), with the same result.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from irtbayes.core.chains import WORKERS
from irtbayes.core.errors import SpecError
from irtbayes.core.parallel import Scheduler, map_tasks
from irtbayes.core.plots import unloaded_lazy_modules_hidden
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.prediction import CALIBRATION_DRAWS, error_ratios, factors_from_ratios, scope_membership
from irtbayes.fitting.storage import load_fit_data

if TYPE_CHECKING:
    from irtbayes.fitting.result import Fit
    from irtbayes.fitting.sampling import Sampler

__all__ = [
    "CROSS_FIT_FOLDS",
    "CROSS_FIT_MAX_SYSTEMS",
    "CROSS_FIT_WORKERS",
    "CrossFit",
    "cross_fit_applies",
    "not_cross_fitted",
]

#: Folds of the fit's systems.
CROSS_FIT_FOLDS = 4
#: Fits of at most this many systems are cross-fitted by default.
CROSS_FIT_MAX_SYSTEMS = 200
#: Folds refitted and scored at once (threads): the cores, at most two (each fold holds a refit's draws in memory).
CROSS_FIT_WORKERS = min(WORKERS, 2)

log = logging.getLogger("irtbayes")


def cross_fit_applies(fit: Fit, method: str, cross_fit: bool | None) -> bool:
    """Whether items chosen by ``method`` from ``fit`` are cross-fitted: ``cross_fit`` when given, else for the
    methods that look at the fit (selection by ``posterior`` or ``anchors``, and ``adaptive`` tests) on fits of at
    most :data:`CROSS_FIT_MAX_SYSTEMS` systems."""
    if cross_fit is not None:
        return bool(cross_fit)
    return method in ("posterior", "anchors", "adaptive") and len(fit.subject_ids) <= CROSS_FIT_MAX_SYSTEMS


def not_cross_fitted(error: Exception, whose: str) -> str:
    """The warning of a selection or an adaptive test whose refits failed (``error``): ``whose`` intervals fall back
    to the in-sample calibration."""
    return (
        f"NOT CROSS-FITTED: refitting the bank without a fold of its systems failed ({error}); {whose} are "
        "calibrated on the bank's own systems, whose answers chose the items, and may be too wide."
    )


@dataclass(frozen=True)
class CrossFit:
    """The banks of the fit's model refitted without each fold of its systems, and those systems' responses.

    Attributes
    ----------
    banks
        One :class:`ItemBank` per fold, fitted to the systems outside it (the full bank's deviation sds).
    subjects
        Per fold, its systems (left out of its bank's refit).
    responses, observed
        Per fold, the (systems, N_fold) responses and observed-mask of its systems on its bank's items, rows in
        the order of :attr:`subjects`.
    sampler
        The sampler of the refits.
    scopes
        The full bank's scopes (its benchmarks and ``all``), in which the factors are given.
    """

    banks: tuple[ItemBank, ...]
    subjects: tuple[tuple[str, ...], ...]
    responses: tuple[np.ndarray, ...]
    observed: tuple[np.ndarray, ...]
    sampler: str
    scopes: tuple[str, ...]

    @classmethod
    def from_fit(
        cls,
        fit: Fit,
        bank: ItemBank,
        *,
        data: ResponseData | str | os.PathLike[str] | None = None,
        folds: int = CROSS_FIT_FOLDS,
        sampler: Sampler = "approx",
        seed: int = 0,
        scheduler: Scheduler = None,
    ) -> CrossFit:
        """Refit ``fit``'s model (its spec) ``folds`` times, each without one fold of its systems (a seeded random
        split), with ``sampler``; each fold's bank has ``bank``'s draws count and deviation sds. The refits run in
        threads here, or on the Dask cluster of ``scheduler`` (an address or a ``dask.distributed.Client``; None:
        the address in ``IRTBAYES_SCHEDULER`` if set).

        Raises
        ------
        SpecError
            Fewer than 2 folds, or fewer systems than twice the folds; a scheduler that cannot be reached, or one
            given without ``dask.distributed`` installed.
        """
        loaded = load_fit_data(fit, data, hint="give the fit's own data (data=, --data)")
        subjects = np.asarray(loaded.subject_ids, dtype=str)
        if int(folds) < 2 or len(subjects) < 2 * int(folds):
            raise SpecError(
                f"cross-fitting needs at least 2 folds and 2 systems per fold; got {folds} folds of "
                f"{len(subjects)} systems"
            )
        order = np.random.default_rng(seed).permutation(len(subjects))
        parts = np.array_split(order, int(folds))

        common = {"data": loaded, "spec": fit.spec, "sampler": sampler, "n_draws": bank.n_draws}
        tasks = [(k, len(parts), seed + k, subjects[part]) for k, part in enumerate(parts)]
        with warnings.catch_warnings():  # set here, for every thread: the refits' approximate-tier warnings
            warnings.simplefilter("ignore", UserWarning)  # the outputs say how the refits were made
            with unloaded_lazy_modules_hidden():  # see _in_parallel
                folds_done = map_tasks(
                    _fold, tasks, common=common, scheduler=scheduler, local="threads", workers=CROSS_FIT_WORKERS
                )
        banks, held_out, ys, ws = zip(*folds_done, strict=True)
        banks = tuple(
            dataclasses.replace(
                fold_bank,
                deviation_sd=_deviations_for(bank, fold_bank),
                log_prior=bank.log_prior if np.array_equal(bank.grid, fold_bank.grid) else fold_bank.log_prior,
            )
            for fold_bank in banks
        )
        scopes = tuple(scope_membership(bank)[0])
        return cls(
            banks=tuple(banks),
            subjects=tuple(held_out),
            responses=tuple(ys),
            observed=tuple(ws),
            sampler=sampler,
            scopes=scopes,
        )

    def ratios(self, choose: Callable[[ItemBank], Sequence[str]], *, ci_prob: float = 0.9, seed: int = 0) -> np.ndarray:
        """(systems, scopes) every fold's systems' error ratios (:func:`error_ratios`) on the items ``choose`` picks
        from their fold's bank, in :attr:`scopes` (NaN in a scope a fold's bank lacks)."""

        def chosen(bank: ItemBank, y: np.ndarray, w: np.ndarray) -> np.ndarray:
            design = np.zeros(bank.n_items)
            design[bank.columns(list(choose(bank)))] = 1.0
            return w * design[None, :]

        return self.design_ratios(chosen, ci_prob=ci_prob, seed=seed)

    def design_ratios(
        self,
        design: Callable[[ItemBank, np.ndarray, np.ndarray], np.ndarray],
        *,
        ci_prob: float = 0.9,
        seed: int = 0,
    ) -> np.ndarray:
        """(systems, scopes) as :meth:`ratios`, each fold's systems scored from the items of
        ``design(fold_bank, y, w)``, a (systems, N_fold) mask of the items each of them answers (an adaptive test
        gives each its own)."""

        def one(k: int) -> np.ndarray:
            bank, y, w = self.banks[k], self.responses[k], self.observed[k]
            # scored with as many draws as the bank's own systems are (interval_factors)
            thinned = bank.thinned(CALIBRATION_DRAWS)
            ratios = error_ratios(thinned, y, w, design(bank, y, w), ci_prob=ci_prob, seed=seed)
            where = pd.Index(scope_membership(bank)[0]).get_indexer(list(self.scopes))
            return np.where(where[None, :] >= 0, ratios[:, np.maximum(where, 0)], np.nan)

        out = _in_parallel(one, len(self.banks))
        return np.concatenate(out, axis=0)

    def factors(
        self, choose: Callable[[ItemBank], Sequence[str]], *, ci_prob: float = 0.9, seed: int = 0
    ) -> pd.DataFrame:
        """Per scope: ``benchmark``, ``interval_factor`` (:func:`factors_from_ratios` of :meth:`ratios`) and
        ``systems`` (the errors it rests on)."""
        ratios = self.ratios(choose, ci_prob=ci_prob, seed=seed)
        return pd.DataFrame(
            {
                "benchmark": list(self.scopes),
                "interval_factor": factors_from_ratios(ratios, ci_prob=ci_prob),
                "systems": (~np.isnan(ratios)).sum(axis=0),
            }
        )


def _in_parallel[T](work: Callable[[int], T], n: int) -> list[T]:
    """``[work(0), ..., work(n - 1)]``, the folds' work in up to :data:`CROSS_FIT_WORKERS` threads (NumPy releases
    the GIL in the long array operations of the refits and the scoring; each fold has its own seed, so the
    result does not depend on the threads)."""
    workers = max(1, min(CROSS_FIT_WORKERS, n))
    if workers == 1:
        return [work(k) for k in range(n)]
    # scipy asks sys.modules["jax"] of arrays too: a jax registered for a lazy import would be loaded by two threads
    # at once, which CPython's lazy loader does not guard before 3.12.3 (an AttributeError); kept out meanwhile
    with unloaded_lazy_modules_hidden(), ThreadPoolExecutor(workers) as pool:
        return list(pool.map(work, range(n)))


def _fold(
    task: tuple[int, int, int, np.ndarray], *, data: ResponseData, spec: Any, sampler: Sampler, n_draws: int
) -> tuple[ItemBank, tuple[str, ...], np.ndarray, np.ndarray]:
    """Fold ``k`` of ``n`` (``task``: its index, the number of folds, its seed, its systems): the model refitted
    without its systems, the refit's bank of ``n_draws`` draws, and its systems' responses on that bank's items."""
    from irtbayes.fitting.fit import fit as refit

    k, n, seed, part = task
    log.info("cross-fitting: fold %d of %d (%d systems left out)", k + 1, n, len(part))
    left_out = set(np.asarray(part, dtype=str).tolist())
    keep = [s for s in data.subject_ids.astype(str) if s not in left_out]
    fold_fit = refit(data.subset(subjects=keep), spec, sampler=sampler, seed=seed, progress=False)
    fold_bank = ItemBank.from_fit(fold_fit, n_draws=n_draws, data=False)
    held = data.subset(subjects=sorted(left_out), items=fold_bank.items.intersection(data.item_ids))
    y, w = fold_bank.response_arrays(held)
    return fold_bank, tuple(str(s) for s in held.subject_ids), y, w


def _deviations_for(bank: ItemBank, fold_bank: ItemBank) -> np.ndarray | None:
    """The full bank's deviation sds in the order of ``fold_bank``'s benchmarks (0 for one it lacks)."""
    if bank.deviation_sd is None:
        return None
    own = dict(zip(bank.benchmarks, np.asarray(bank.deviation_sd, dtype="float64"), strict=True))
    return np.array([own.get(b, 0.0) for b in fold_bank.benchmarks])
