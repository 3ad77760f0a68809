"""The audit's measures of a known set of difficulties: the truth a calibration study compares against.

For simulated data the true difficulties are known. On the fitted scale (abilities standardised over the
evaluated systems, as the model identifies them; see :mod:`irtbayes.data.designs`), each benchmark's true
measures are the audit's own definitions applied to that one set of difficulties, as if it were a single
posterior draw: the Maximum Gap of [L, U] and its interior and edge parts (:mod:`irtbayes.auditing.gaps`),
and the DDM (W1 and TV) against the audit's target (:mod:`irtbayes.auditing.mismatch`). The scope ``all``
pools every item, as the audit's ``all`` row does.

:func:`interval_check` compares an audit's benchmarks table with these: per scope and measure, whether the
reported interval holds the truth, the error of the posterior mean and the interval's width.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from irtbayes.auditing.coverage import coverage
from irtbayes.auditing.gaps import gap_parts
from irtbayes.auditing.mismatch import ddm_tv, ddm_w1
from irtbayes.auditing.targets import Target
from irtbayes.core.errors import SpecError

__all__ = ["MEASURES", "interval_check", "true_measures"]

#: The measures compared: each is a column prefix of the audit's benchmarks table.
MEASURES = ("max_gap", "interior_gap", "edge_gap_low", "edge_gap_high", "ddm_w1", "ddm_tv")


def _one_set(x: np.ndarray, target: Target) -> dict[str, float]:
    x = np.sort(np.asarray(x, dtype="float64"))[None, :]
    parts = gap_parts(x, target.lo, target.hi, presorted=True)
    cov = coverage(x, target.edges_array)
    return {
        "n_items": int(x.shape[1]),
        "max_gap": float(parts.widest.width[0]),
        "interior_gap": float(parts.interior[0]),
        "edge_gap_low": float(parts.edge_low[0]),
        "edge_gap_high": float(parts.edge_high[0]),
        "ddm_w1": float(ddm_w1(x, target.edges_array, target.weights_array, presorted=True)[0]),
        "ddm_tv": float(ddm_tv(cov.counts, target.weights_array, below=cov.below, above=cov.above)[0]),
    }


def true_measures(difficulty: Sequence[float] | np.ndarray, benchmark: Sequence[str], target: Target) -> pd.DataFrame:
    """The audit's measures of known difficulties, per benchmark and over all items.

    Parameters
    ----------
    difficulty
        (item,) true difficulties on the fitted scale.
    benchmark
        (item,) each item's benchmark label.
    target
        The audit's target (its range and bins).

    Returns
    -------
    pandas.DataFrame
        Index ``scope`` (``all``, then each benchmark in sorted order); columns ``n_items`` and :data:`MEASURES`.

    Examples
    --------
    Items at -1, 0 and 0.5 of one benchmark on [-2, 2]: the widest gap is the upper edge, 2 - 0.5:

    >>> from irtbayes.auditing.targets import uniform_target
    >>> from irtbayes.auditing.truth import true_measures
    >>> t = true_measures([-1.0, 0.0, 0.5], ["a", "a", "a"], uniform_target(-2.0, 2.0, bins=4))
    >>> t.loc["a", ["max_gap", "interior_gap", "edge_gap_low", "edge_gap_high"]].tolist()
    [1.5, 1.0, 1.0, 1.5]
    """
    x = np.asarray(difficulty, dtype="float64")
    labels = np.asarray(benchmark).astype(str)
    if x.ndim != 1 or labels.shape != x.shape:
        raise SpecError(f"difficulty and benchmark must be 1-d and of one length, got {x.shape} and {labels.shape}")
    if not np.isfinite(x).all():
        raise SpecError("the true difficulties must all be finite")
    rows = {"all": _one_set(x, target)}
    for name in sorted(set(labels.tolist())):
        rows[name] = _one_set(x[labels == name], target)
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "scope"
    return out


def interval_check(
    benchmarks: pd.DataFrame, truth: pd.DataFrame, *, measures: Sequence[str] = MEASURES
) -> pd.DataFrame:
    """Per scope and measure: the truth, the audit's mean and interval, whether it covers, the error and width.

    Parameters
    ----------
    benchmarks
        The audit's benchmarks table (columns ``scope``, ``{measure}_mean``, ``_ci_low``, ``_ci_high``).
    truth
        :func:`true_measures`' table.

    Returns
    -------
    pandas.DataFrame
        Long: ``scope``, ``measure``, ``truth``, ``mean``, ``sd``, ``ci_low``, ``ci_high``, ``covers``, ``error``
        (mean - truth) and ``width``, and ``posterior_ci_low``/``posterior_ci_high`` where the audit reports the
        posterior's own interval beside a recalibrated one; scopes the truth lacks are left out.
    """
    table = benchmarks.set_index("scope") if "scope" in benchmarks.columns else benchmarks
    rows = []
    for scope in truth.index:
        if scope not in table.index:
            continue
        for m in measures:
            lo, hi, mean, sd = (float(table.loc[scope, f"{m}_{part}"]) for part in ("ci_low", "ci_high", "mean", "sd"))
            t = float(truth.loc[scope, m])
            posterior = {
                f"posterior_{part}": float(table.loc[scope, f"{m}_posterior_{part}"])
                for part in ("ci_low", "ci_high")
                if f"{m}_posterior_{part}" in table.columns
            }
            rows.append(
                posterior
                | {
                    "scope": scope,
                    "measure": m,
                    "truth": t,
                    "mean": mean,
                    "sd": sd,
                    "ci_low": lo,
                    "ci_high": hi,
                    "covers": bool(lo <= t <= hi),
                    "error": mean - t,
                    "width": hi - lo,
                }
            )
    return pd.DataFrame(rows)
