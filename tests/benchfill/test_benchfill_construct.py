"""BenchFill's construct screen on hand-built posteriors: item fit in one dimension, the own dimension in several."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import expit

from irtbayes.benchfill.calibration import calibrate_fixed, candidate_response_data
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.screens import CONSTRUCT_PROB, ITEM_FIT_PPP, screen_construct
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
