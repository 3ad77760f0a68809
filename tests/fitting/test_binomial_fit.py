"""Fits of k successes of n trials: the approximate tier weighs the trials (fast), and a NUTS fit of counts recovers
the truth and matches the fit of the same trials given as 0/1 rows (slow; measured on docs/validation.md)."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from irtbayes.checks.predictive import compare_fits, log_likelihood
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit
from irtbayes.model.spec import ModelSpec


def binary_rows(data: ResponseData) -> ResponseData:
    """The same trials as one 0/1 row each (k rows of 1 and n - k of 0 per cell). Repeated (subject, item) rows are
    built with the constructor, which assumes checked data; the long layout reads each row as its own term."""
    reps = data.trials
    position = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    rows = data.responses.loc[data.responses.index.repeat(reps), ["subject", "item"]].reset_index(drop=True)
    rows["response"] = (position < np.repeat(data.successes, reps)).astype("float64")
    return ResponseData(responses=rows, items=data.items, subjects=data.subjects, source=f"{data.source} as 0/1 rows")


def test_the_approximate_tier_weighs_the_trials() -> None:
    data, truth = simulate_responses(40, 60, n_trials=5, missing=0.0, seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # approximate intervals, said by a warning
        counts = fit(data, sampler="approx", seed=3, progress=False)
        shares = fit(data.without_trials(), sampler="approx", seed=3, progress=False)
    b_counts, b_shares = counts.posterior["difficulty"], shares.posterior["difficulty"]
    ratio = float((b_counts.std(("chain", "draw")) / b_shares.std(("chain", "draw"))).median())
    assert 0.3 < ratio < 0.65, f"sd of the difficulties, counts over fractional shares: {ratio:.2f}"
    rho = np.corrcoef(b_counts.mean(("chain", "draw")), truth["difficulty"])[0, 1]
    assert rho > 0.95, f"difficulty recovery {rho:.3f}"


def _interval_coverage(draws, truth: np.ndarray, prob: float = 0.9) -> float:
    low = draws.quantile((1 - prob) / 2, ("chain", "draw")).values
    high = draws.quantile((1 + prob) / 2, ("chain", "draw")).values
    return float(((low <= truth) & (truth <= high)).mean())


@pytest.mark.slow
def test_a_binomial_fit_recovers_the_truth_and_matches_the_fit_of_binary_rows() -> None:
    """40 systems x 60 items x 5 trials, seeded: the fit of the counts (binomial, dense layout) recovers the truth,
    and agrees in distribution with the fit of the same 12,000 trials as 0/1 rows (Bernoulli, long layout)."""
    data, truth = simulate_responses(40, 60, n_trials=5, missing=0.0, seed=2026)
    assert data.response_kind == "counts" and data.n_responses == 2400
    rows = binary_rows(data)
    settings = {"sampler": "nutpie", "chains": 4, "draws": 1000, "seed": 7, "progress": False}
    start = time.perf_counter()
    counts_fit = fit(data, **settings)
    counts_s = time.perf_counter() - start
    start = time.perf_counter()
    rows_fit = fit(rows, ModelSpec(layout="long"), **settings)
    rows_s = time.perf_counter() - start
    assert counts_fit.spec.layout == "dense" and rows_fit.spec.layout == "long"
    assert counts_fit.diagnostics.ok, counts_fit.diagnostics.to_text()
    assert rows_fit.diagnostics.ok, rows_fit.diagnostics.to_text()

    numbers: dict[str, float] = {"counts_s": counts_s, "rows_s": rows_s}
    for name in ("difficulty", "ability"):
        a, b = counts_fit.posterior[name], rows_fit.posterior[name]
        mean_a, mean_b = a.mean(("chain", "draw")).values, b.mean(("chain", "draw")).values
        sd_a, sd_b = a.std(("chain", "draw")).values, b.std(("chain", "draw")).values
        numbers[f"{name}_corr"] = float(np.corrcoef(mean_a, truth[name].values)[0, 1])
        numbers[f"{name}_cover90"] = _interval_coverage(a, truth[name].values)
        numbers[f"{name}_shift_max"] = float(np.max(np.abs(mean_a - mean_b) / sd_a))
        numbers[f"{name}_shift_median"] = float(np.median(np.abs(mean_a - mean_b) / sd_a))
        numbers[f"{name}_sd_ratio_median"] = float(np.median(sd_a / sd_b))
    ll = log_likelihood(counts_fit, data, n_draws=1000)
    assert ll.attrs["likelihood"] == "binomial" and ll.attrs["quasi_likelihood"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k, if any
        table = compare_fits({"counts": counts_fit, "rows": Fit.from_posterior(rows_fit.posterior, data)}, data)
    numbers["elpd_counts"] = float(table.loc["counts", "elpd"])
    numbers["elpd_rows"] = float(table.loc["rows", "elpd"])
    numbers["elpd_se"] = float(table.loc["counts", "se"])
    numbers["elpd_abs_diff"] = abs(numbers["elpd_counts"] - numbers["elpd_rows"])
    shown = ", ".join(f"{k} {v:.3f}" for k, v in numbers.items())
    print(f"\nbinomial vs binary rows: {shown}")

    assert numbers["difficulty_corr"] > 0.95 and numbers["ability_corr"] > 0.95, shown
    assert 0.78 <= numbers["difficulty_cover90"] <= 1.0, shown  # 60 items: 0.9 +- 3 binomial sd
    assert 0.75 <= numbers["ability_cover90"] <= 1.0, shown  # 40 systems
    # two fits of one posterior: their means differ by Monte Carlo error (about 0.03 posterior sd with 4,000 draws)
    assert numbers["difficulty_shift_max"] < 0.2 and numbers["ability_shift_max"] < 0.2, shown
    assert numbers["difficulty_shift_median"] < 0.05 and numbers["ability_shift_median"] < 0.05, shown
    assert 0.9 < numbers["difficulty_sd_ratio_median"] < 1.1 and 0.9 < numbers["ability_sd_ratio_median"] < 1.1, shown
    # scored on the same k-of-n cells, the two posteriors predict alike: ELPDs a tenth of a standard error apart
    assert numbers["elpd_abs_diff"] < 0.1 * numbers["elpd_se"], shown
