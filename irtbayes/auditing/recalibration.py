"""Intervals of the Maximum Gap and the DDM recalibrated across design families.

Why
---
The Maximum Gap is an extreme of the item set (set by the two items at a gap's edges) and the DDM an average
over it. Both are computed per posterior draw of every item's location, and the locations are only as good
as the population model behind them: items next to an empty stretch, measured by few systems, are drawn
into it in most draws, so the posterior of the widest gap sits too low and, with several benchmarks, skewed
abilities, items past the range and missing cells, its 90% interval held the true widest gap in only 75% of
the benchmarks of the calibration study (``scripts/calibration_study.py``; ``docs/validation.md``), with the
true value above the interval in almost every miss. The DDM's intervals held in 80%.

What
----
For each calibrated measure m (:data:`CALIBRATED`), the study gives the distribution of the standardised
error z = (truth - posterior mean) / posterior sd over many simulated benchmarks of nine design families
(seeds 101-140; the reported table uses seeds 1-24). Its quantile function Q_m is stored here
(:data:`TABLE`). For a posterior of m with mean μ, sd σ and equal-tailed interval [a, b] at level p, the
audit reports

    lo = max(lower, min(a, μ + σ Q_m(s_low α))),   hi = min(upper, max(b, μ + σ Q_m(1 - s_high α))),   α = (1 - p) / 2

(``lower`` = 0, ``upper`` = U - L for a gap and 1 for the DDM). So the interval is never narrower than the
posterior's own, and where the posterior is biased (the widest gap read too narrow) it reaches as far as the
study's errors did. The tail scales s_low, s_high <= 1 start at 1 (the pooled errors' own
quantiles) and are lowered in steps of 0.05, each time on the side where the worst-covered family of the
tuning seeds (among those with 80 or more systems) misses most, until every such family reaches 0.90
(:func:`learn`): the intervals are built to hold in each family, so pooled over families they hold more often
than p. The scales were tuned at p = 0.9; another ``ci_prob`` uses the same scales on its own tails.

The posterior's own interval stays in ``{m}_posterior_ci_low`` and ``{m}_posterior_ci_high``; ``audit(...,
calibrated_intervals=False)`` reports it as ``{m}_ci_low``/``{m}_ci_high`` instead, and so does an audit on the
fit's own draws (``ensemble="draws"``), since the table was learned on deconvolved locations. The posterior means are
not moved. Where a design is unlike the study's families, ``audit(..., self_check=N)``
(:mod:`irtbayes.auditing.selfcheck`) measures the coverage on the user's own design.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CALIBRATED", "LEVELS", "TABLE", "calibrated_interval", "interval_calibration_note", "learn"]

#: Quantile levels at which the standardised errors are stored.
LEVELS = (0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975)

#: Measures whose intervals are recalibrated: (lower bound, upper bound or "range" for U - L).
CALIBRATED: dict[str, tuple[float, float | str]] = {
    "max_gap": (0.0, "range"),
    "interior_gap": (0.0, "range"),
    "edge_gap_low": (0.0, "range"),
    "edge_gap_high": (0.0, "range"),
    "ddm_w1": (0.0, 1.0),
    "ddm_tv": (0.0, 1.0),
}

#: Learned by ``scripts/calibration_study.py --learn`` (see :func:`learn`); the same numbers are in
#: ``notebooks/results/interval_calibration.json`` with the command, the seeds and the families.
# fmt: off
TABLE: dict[str, dict[str, Any]] = {
    "max_gap": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-2.2522, -1.9757, -1.7335, -1.3733, -1.1995, -0.956, -0.6114, 0.0337, 0.9537, 1.9136, 2.9907, 3.669, 4.0245, 4.4849, 4.848, 5.8242, 6.4979],
        "benchmarks": 924,
        "tail_scale_low": 1.0,
        "tail_scale_high": 0.45,
        "in_sample_coverage": 0.96,
        "worst_family": {"family": "edge_holes", "coverage": 0.9153},
    },
    "interior_gap": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-2.6268, -1.8772, -1.6601, -1.5481, -1.4426, -1.2924, -1.0358, -0.4393, 0.5373, 1.7159, 2.8082, 3.4993, 3.9341, 4.3238, 4.9857, 5.9806, 6.6921],
        "benchmarks": 924,
        "tail_scale_low": 0.05,
        "tail_scale_high": 0.15,
        "in_sample_coverage": 0.9892,
        "worst_family": {"family": "edge_holes", "coverage": 0.9153},
    },
    "edge_gap_low": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-3.0575, -2.3708, -1.8915, -1.5536, -1.3424, -1.1906, -1.0488, -0.75, -0.2602, 0.6464, 1.8096, 2.6588, 3.2013, 3.6337, 5.3904, 7.2958, 8.5694],
        "benchmarks": 924,
        "tail_scale_low": 1.0,
        "tail_scale_high": 0.35,
        "in_sample_coverage": 0.96,
        "worst_family": {"family": "edge_holes", "coverage": 0.9153},
    },
    "edge_gap_high": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-3.325, -2.8908, -2.513, -1.6658, -1.444, -1.2059, -1.0609, -0.7686, -0.2871, 0.5213, 1.685, 2.6933, 3.535, 4.3729, 4.9017, 5.5921, 6.1798],
        "benchmarks": 924,
        "tail_scale_low": 0.9,
        "tail_scale_high": 0.6,
        "in_sample_coverage": 0.9426,
        "worst_family": {"family": "skewed_abilities", "coverage": 0.9101},
    },
    "ddm_w1": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-6.2376, -4.2832, -3.4738, -2.1867, -1.9942, -1.6532, -1.1378, -0.3579, 0.4885, 1.3531, 2.2065, 2.6882, 3.0573, 3.4539, 3.9521, 4.2383, 4.4551],
        "benchmarks": 924,
        "tail_scale_low": 0.25,
        "tail_scale_high": 0.3,
        "in_sample_coverage": 0.9729,
        "worst_family": {"family": "heavy_tails", "coverage": 0.9091},
    },
    "ddm_tv": {
        "levels": [0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.99, 0.995, 0.9975],
        "z": [-5.2696, -3.4132, -2.6026, -2.2731, -1.9428, -1.6699, -1.278, -0.6749, 0.0822, 0.8109, 1.5204, 2.0684, 2.4166, 2.6719, 2.9985, 3.2141, 3.336],
        "benchmarks": 924,
        "tail_scale_low": 0.4,
        "tail_scale_high": 0.3,
        "in_sample_coverage": 0.9675,
        "worst_family": {"family": "heavy_tails", "coverage": 0.9008},
    },
}
# fmt: on


def interval_calibration_note(calibrated: bool, ensemble: str = "deconvolved") -> str:
    """One sentence for the audit's settings: which intervals the Maximum Gap and the DDM report."""
    if not calibrated:
        return "posterior equal-tailed intervals (calibrated_intervals=False)"
    if ensemble != "deconvolved":
        return (
            "posterior equal-tailed intervals: the recalibration was learned on deconvolved item locations, and "
            f"this audit used {ensemble!r}"
        )
    return (
        "Maximum Gap (interior and edge parts) and DDM (W1, TV): posterior intervals widened to the coverage "
        "measured over nine simulated design families (irtbayes.auditing.recalibration; the posterior's own in "
        "*_posterior_ci_low/_high)"
    )


def _quantile(measure: str, level: float, table: Mapping[str, Mapping[str, Any]]) -> float:
    entry = table[measure]
    levels = np.asarray(entry["levels"], dtype="float64")
    z = np.asarray(entry["z"], dtype="float64")
    return float(np.interp(level, levels, z))


def calibrated_interval(
    values: np.ndarray,
    measure: str,
    ci_prob: float,
    *,
    range_width: float,
    table: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[float, float]:
    """The recalibrated interval of ``measure`` from its draws (rule in the module docstring).

    Parameters
    ----------
    values
        (draw,) the measure's posterior draws.
    measure
        A key of :data:`CALIBRATED`; others get the plain equal-tailed interval.
    ci_prob
        The interval's level.
    range_width
        U - L, the upper bound of a gap.
    table
        The learned table (default :data:`TABLE`).

    Examples
    --------
    >>> from irtbayes.auditing.recalibration import calibrated_interval
    >>> table = {"max_gap": {"levels": [0.0, 0.05, 0.5, 0.95, 1.0], "z": [-3.0, -1.0, 0.5, 3.0, 5.0], "tail_scale": 1.0}}
    >>> draws = np.random.default_rng(0).normal(1.0, 0.2, 4000)
    >>> lo, hi = calibrated_interval(draws, "max_gap", 0.9, range_width=5.0, table=table)
    >>> round(lo, 1), round(hi, 1)  # the posterior's [0.67, 1.33] reaches to mean + 3 sd above
    (0.7, 1.6)
    """
    x = np.asarray(values, dtype="float64")
    x = x[np.isfinite(x)]
    alpha = (1.0 - ci_prob) / 2.0
    if x.size == 0:
        return float("nan"), float("nan")
    a, b = (float(v) for v in np.quantile(x, [alpha, 1.0 - alpha]))
    table = TABLE if table is None else table
    if measure not in table or measure not in CALIBRATED:
        return a, b
    mu, sd = float(x.mean()), float(x.std())
    if sd == 0.0:
        return a, b
    z_lo, z_hi = _ends(table[measure], measure, ci_prob)
    lo = min(a, mu + sd * z_lo)
    hi = max(b, mu + sd * z_hi)
    lower, upper = CALIBRATED[measure]
    top = range_width if upper == "range" else float(upper)
    return max(float(lower), lo), min(top, hi)


def _tail(entry: Mapping[str, Any], side: str) -> float:
    return float(entry.get(f"tail_scale_{side}", entry.get("tail_scale", 1.0)))


def _ends(entry: Mapping[str, Any], measure: str, nominal: float) -> tuple[float, float]:
    alpha = (1.0 - nominal) / 2.0
    table = {measure: entry}
    return _quantile(measure, _tail(entry, "low") * alpha, table), _quantile(
        measure, 1.0 - _tail(entry, "high") * alpha, table
    )


def learn(
    rows: pd.DataFrame,
    *,
    measures: Sequence[str] = tuple(CALIBRATED),
    nominal: float = 0.9,
    floor: float = 0.9,
    min_systems: int = 80,
) -> dict[str, dict[str, Any]]:
    """The table of standardised errors and tail scales from a calibration study's rows.

    Parameters
    ----------
    rows
        Rows of ``scripts/calibration_study.py`` (columns ``family``, ``systems``, ``measure``, ``truth``,
        ``mean``, ``sd``, ``posterior_ci_low``/``posterior_ci_high`` or ``ci_low``/``ci_high``).
    nominal
        The interval level the tail scale is tuned at.
    floor
        Coverage every family with ``min_systems`` or more systems must reach on these rows (set above the
        target, since coverage on the rows a table was learned from is optimistic).

    Returns
    -------
    dict
        measure -> {"levels", "z", "benchmarks", "tail_scale_low", "tail_scale_high", "in_sample_coverage",
        "worst_family"}.
    """
    lo_col = "posterior_ci_low" if "posterior_ci_low" in rows.columns else "ci_low"
    hi_col = "posterior_ci_high" if "posterior_ci_high" in rows.columns else "ci_high"
    out: dict[str, dict[str, Any]] = {}
    for m in measures:
        sub = rows[(rows["measure"] == m) & (rows["sd"] > 0)].copy()
        if sub.empty:
            continue
        z = ((sub["truth"] - sub["mean"]) / sub["sd"]).to_numpy()
        inside = ((sub["truth"] >= sub[lo_col]) & (sub["truth"] <= sub[hi_col])).to_numpy()
        entry: dict[str, Any] = {
            "levels": list(LEVELS),
            "z": [round(float(v), 4) for v in np.quantile(z, LEVELS)],
            "benchmarks": len(sub),
        }
        big = (sub["systems"] >= min_systems).to_numpy()
        families = sub["family"].to_numpy()
        entry["tail_scale_low"] = entry["tail_scale_high"] = 1.0
        while True:  # widen the side where the worst family misses most, a step at a time, until every family holds
            z_lo, z_hi = _ends(entry, m, nominal)
            below, above = (z < z_lo) & ~inside, (z > z_hi) & ~inside
            per_family = pd.Series((below | above)[big]).groupby(families[big]).mean()
            if per_family.empty or per_family.max() <= 1.0 - floor:
                break
            worst = families == per_family.idxmax()
            side = "low" if below[worst & big].sum() > above[worst & big].sum() else "high"
            if entry[f"tail_scale_{side}"] <= 0.05:
                side = "high" if side == "low" else "low"
                if entry[f"tail_scale_{side}"] <= 0.05:
                    break
            entry[f"tail_scale_{side}"] = round(entry[f"tail_scale_{side}"] - 0.05, 2)
        z_lo, z_hi = _ends(entry, m, nominal)
        covered = ((z >= z_lo) & (z <= z_hi)) | inside
        entry["in_sample_coverage"] = round(float(covered.mean()), 4)
        per_family = pd.Series(covered[big]).groupby(families[big]).mean()
        if not per_family.empty:
            entry["worst_family"] = {"family": str(per_family.idxmin()), "coverage": round(float(per_family.min()), 4)}
        out[m] = entry
    return out
