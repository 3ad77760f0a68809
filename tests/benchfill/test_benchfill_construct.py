"""BenchFill's construct screen on hand-built posteriors: item fit in one dimension, the own dimension in several."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit

from irtbayes.benchfill.calibration import calibrate_fixed, candidate_response_data
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.screens import CONSTRUCT_PROB, ITEM_FIT_PPP, dimension_check, item_fit, screen_construct
from irtbayes.data.responses import ResponseData

try:
    from .test_benchfill_calibration import _fake_fit
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    from test_benchfill_calibration import _fake_fit  # type: ignore[no-redef]

N = 300


def test_item_fit_rejects_responses_that_do_not_follow_the_curve():
    """A 2PL item fits; an item right for the weakest and strongest systems and wrong between does not."""
    theta = np.linspace(-2.5, 2.5, N)
    rng = np.random.default_rng(11)
    subjects = [f"s{j:02d}" for j in range(N)]
    good = (rng.random(N) < expit(1.5 * (theta - 0.3))).astype(float)
    odd = (rng.random(N) < np.where(np.abs(theta) > 1.2, 0.9, 0.1)).astype(float)
    few = (rng.random(15) < 0.5).astype(float)
    frame = pd.concat(
        [
            pd.DataFrame({"subject": subjects, "item": "good", "response": good}),
            pd.DataFrame({"subject": subjects, "item": "odd", "response": odd}),
            pd.DataFrame({"subject": subjects[:15], "item": "few", "response": few}),
        ]
    )
    bank = _fake_fit("2pl", theta, mu=0.0, sd=1.5)
    cands = [Candidate(candidate_id=c, text=f"{c}?", answer="x") for c in ("good", "odd", "few")]
    new = candidate_response_data(frame, cands, fit=bank)
    post = calibrate_fixed(bank, new, n_draws=400, seed=2, ability_points=1)
    out = screen_construct(bank.posterior["ability"], post, new, seed=4)
    assert out.loc["good", "construct_ok"] and out.loc["good", "construct"] == "on-construct"
    assert out.loc["good", "item_fit_ppp"] > 0.1, out
    assert not out.loc["odd", "construct_ok"] and out.loc["odd", "item_fit_ppp"] < ITEM_FIT_PPP, out
    assert out.loc["odd", "construct"].startswith("off-construct: poor item fit")
    assert out.loc["few", "construct"].startswith("not checked") and out.loc["few", "construct_ok"]
    assert np.isnan(out.loc["few", "item_fit_ppp"])


def test_a_candidate_that_follows_another_domain_is_off_construct():
    """Two correlated domains; a 'math' candidate driven by language ability is rejected, a math one kept."""
    rng = np.random.default_rng(3)
    cov = np.array([[1.0, 0.3], [0.3, 1.0]])
    theta = rng.multivariate_normal([0.0, 0.0], cov, size=N)  # (subject, dim): math, language
    subjects = [f"s{j:03d}" for j in range(N)]
    draws = np.broadcast_to(theta, (1, 100, N, 2)).copy()
    ability = xr.DataArray(
        draws,
        dims=("chain", "draw", "subject", "dim"),
        coords={"chain": [0], "draw": np.arange(100), "subject": subjects, "dim": ["math", "language"]},
    )
    on = (rng.random(N) < expit(1.8 * theta[:, 0])).astype(float)
    off = (rng.random(N) < expit(1.8 * theta[:, 1])).astype(float)
    frame = pd.concat(
        [
            pd.DataFrame({"subject": subjects, "item": "on", "response": on}),
            pd.DataFrame({"subject": subjects, "item": "off", "response": off}),
        ]
    )
    items = pd.DataFrame({"item": ["on", "off"], "benchmark": "algebra", "domain": "math"})
    new = ResponseData.from_long(frame, items=items, source="two domains")
    out = screen_construct(ability, xr.Dataset(), new, seed=1)
    assert out.loc["on", "construct_ok"] and out.loc["on", "p_other_stronger"] < 0.05, out
    assert not out.loc["off", "construct_ok"] and out.loc["off", "p_other_stronger"] >= CONSTRUCT_PROB, out
    assert out.loc["off", "strongest_dimension"] == "language"
    assert "follows dimension 'language' more than its own 'math'" in out.loc["off", "construct"]


def test_without_item_draws_the_item_fit_is_reported_unchecked():
    theta = np.linspace(-2, 2, 40)
    subjects = [f"s{j:02d}" for j in range(40)]
    ability = xr.DataArray(
        np.broadcast_to(theta, (1, 10, 40)).copy(),
        dims=("chain", "draw", "subject"),
        coords={"chain": [0], "draw": np.arange(10), "subject": subjects},
    )
    frame = pd.DataFrame({"subject": subjects, "item": "c", "response": (theta > 0).astype(float)})
    new = ResponseData.from_long(frame, items=pd.DataFrame({"item": ["c"]}), source="no draws")
    out = screen_construct(ability, xr.Dataset(), new)
    assert out.loc["c", "construct"].startswith("not checked: the posterior has no difficulty or discrimination")
    assert out.loc["c", "construct_ok"] and np.isnan(out.loc["c", "item_fit_ppp"])


def _constant_draws(values: np.ndarray, dims: tuple[str, ...], coords: dict, n_draws: int = 100) -> xr.DataArray:
    """Posterior draws (chain, draw, ...) that all equal ``values``."""
    draws = np.broadcast_to(values, (1, n_draws, *values.shape)).copy()
    return xr.DataArray(
        draws, dims=("chain", "draw", *dims), coords={"chain": [0], "draw": np.arange(n_draws)} | coords
    )


def _as_trials(frame: pd.DataFrame, n_trials: int) -> tuple[pd.DataFrame, list[str]]:
    """Each k of n response as n 0/1 responses (k of them 1) of n copies of its system (ids ``<subject>_<t>``)."""
    rows = [(f"{r.subject}_{t}", r.item, float(t < r.successes)) for r in frame.itertuples() for t in range(n_trials)]
    copies = [f"{s}_{t}" for s in dict.fromkeys(frame["subject"]) for t in range(n_trials)]
    return pd.DataFrame(rows, columns=["subject", "item", "response"]), copies


def test_item_fit_weighs_each_count_by_its_trials():
    """k successes of n trials enter the item fit as n trials: the discrepancy is that of the same trials as n
    systems answering once (binomial moments, not the share k / n as one trial), and a candidate too flat for its
    curve is caught with counts where the shares read as one trial each let it pass."""
    n_sys, n_trials = 200, 4
    theta = np.linspace(-2.5, 2.5, n_sys)
    subjects = [f"s{j:03d}" for j in range(n_sys)]
    rng = np.random.default_rng(0)
    frame = pd.concat(
        [
            pd.DataFrame(
                {"subject": subjects, "item": "good", "successes": rng.binomial(n_trials, expit(1.5 * theta))}
            ),
            pd.DataFrame(
                {
                    "subject": subjects,
                    "item": "flat",
                    "successes": rng.binomial(n_trials, 0.06 + 0.88 * expit(1.5 * theta)),
                }
            ),
        ]
    ).assign(trials=n_trials)
    counts = ResponseData.from_long(frame, source="counts")
    assert counts.response_kind == "counts"
    items = xr.Dataset(
        {
            "difficulty": _constant_draws(np.zeros(2), ("item",), {"item": ["good", "flat"]}),
            "discrimination": _constant_draws(np.full(2, 1.5), ("item",), {"item": ["good", "flat"]}),
        }
    )
    ability = _constant_draws(theta, ("subject",), {"subject": subjects})
    out = screen_construct(ability, items, counts, seed=1)
    assert out.loc["good", "construct_ok"] and out.loc["good", "item_fit_ppp"] >= ITEM_FIT_PPP, out
    assert not out.loc["flat", "construct_ok"] and out.loc["flat", "item_fit_ppp"] < ITEM_FIT_PPP, out

    binary, copies = _as_trials(frame, n_trials)  # each system's copies fall in its own ability group
    expanded = ResponseData.from_long(binary, source="one trial per row")
    copied = _constant_draws(np.repeat(theta, n_trials), ("subject",), {"subject": copies})
    fit = item_fit(ability, items, counts, seed=1)
    same = item_fit(copied, items, expanded, seed=1)
    np.testing.assert_allclose(fit["item_fit_discrepancy"], same["item_fit_discrepancy"], rtol=1e-9)
    one_trial = screen_construct(ability, items, counts.without_trials(), seed=1)  # what the screen read before
    assert one_trial.loc["flat", "construct_ok"] and one_trial.loc["flat", "item_fit_ppp"] > ITEM_FIT_PPP, one_trial


def test_the_dimension_check_weighs_each_count_by_its_trials():
    """With several dimensions the slopes of k-of-n candidates come from their n trials, as for the same trials
    answered once each by n copies of the system, not from the share k / n read as one trial."""
    n_sys, n_trials = 150, 4
    rng = np.random.default_rng(3)
    theta = rng.multivariate_normal([0.0, 0.0], [[1.0, 0.3], [0.3, 1.0]], size=n_sys)  # math, language
    subjects = [f"s{j:03d}" for j in range(n_sys)]
    frame = pd.concat(
        [
            pd.DataFrame({"subject": subjects, "item": "on", "successes": rng.binomial(n_trials, expit(theta[:, 0]))}),
            pd.DataFrame({"subject": subjects, "item": "off", "successes": rng.binomial(n_trials, expit(theta[:, 1]))}),
        ]
    ).assign(trials=n_trials)
    items = pd.DataFrame({"item": ["on", "off"], "benchmark": "algebra", "domain": "math"})
    counts = ResponseData.from_long(frame, items=items, source="counts")
    dims = {"dim": ["math", "language"]}
    ability = _constant_draws(theta, ("subject", "dim"), {"subject": subjects} | dims)
    binary, copies = _as_trials(frame, n_trials)
    expanded = ResponseData.from_long(binary, items=items, source="one trial per row")
    copied = _constant_draws(np.repeat(theta, n_trials, axis=0), ("subject", "dim"), {"subject": copies} | dims)
    columns = ["slope_math_mean", "slope_language_mean", "p_other_stronger"]
    fit = dimension_check(ability, counts, seed=2)[columns]
    same = dimension_check(copied, expanded, seed=2)[columns]
    np.testing.assert_allclose(fit.to_numpy(), same.to_numpy(), rtol=1e-6)
    one_trial = dimension_check(ability, counts.without_trials(), seed=2)[columns]  # what the check read before
    assert not np.allclose(one_trial.to_numpy(), same.to_numpy(), rtol=1e-3), (one_trial, same)
