"""BenchFill's relation-to-ability screen on a hand-built bank: flat and mis-keyed candidates are rejected with
their own reasons, good ones accepted; a missing piece rejects; the least slope defaults to a share of the
bank's typical discrimination."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit

from irtbayes.benchfill.acceptance import AcceptanceRule, decide_all
from irtbayes.benchfill.calibration import (
    calibrate_fixed,
    candidate_response_data,
    data_alone_and_slope,
    default_min_discrimination,
    typical_discrimination,
)
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.grid import MIN_DISCRIMINATION_SHARE

try:
    from .test_benchfill_calibration import _fake_fit
except ImportError:  # tests/ is not a package: pytest put it on sys.path
    from test_benchfill_calibration import _fake_fit  # type: ignore[no-redef]

N_SYSTEMS = 300
TARGET = (-0.5, 1.0)
#: True slopes of the planted candidates (all with true difficulty 0.3, inside the aim; 3PL: guessing 0.25).
PLANTED = {"good": 1.2, "flat": 0.05, "mis-keyed": -1.0}
GUESSING = 0.25


def _screen(kind: str) -> tuple[pd.DataFrame, object]:
    rng = np.random.default_rng(0)
    theta = rng.normal(size=N_SYSTEMS)
    bank = _fake_fit(kind, theta, mu=0.0, sd=1.0, a=1.0)
    subjects = [f"s{j:02d}" for j in range(N_SYSTEMS)]
    frames = []
    for cid, slope in PLANTED.items():
        p = expit(slope * (theta - 0.3))
        if kind == "3pl":
            p = GUESSING + (1 - GUESSING) * p
        y = (rng.random(N_SYSTEMS) < p).astype(float)
        frames.append(pd.DataFrame({"subject": subjects, "item": cid, "response": y}))
    choices = ("a", "b", "c", "d") if kind == "3pl" else None
    candidates = [Candidate(candidate_id=c, text="q", answer="a", choices=choices) for c in PLANTED]
    new = candidate_response_data(pd.concat(frames), candidates, fit=bank)
    post = calibrate_fixed(bank, new, seed=1, n_draws=1000, ability_points=2)
    table = decide_all(
        post,
        aim_lo=TARGET[0],
        aim_hi=TARGET[1],
        n_responses=post["n_responses"].to_series(),
        rule=AcceptanceRule(min_discrimination=default_min_discrimination(bank)),
    )
    return table, post


@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_flat_and_mis_keyed_candidates_are_rejected_with_their_reasons(kind):
    table, post = _screen(kind)
    shown = table[["decision", "reason", "failed", "slope_mean", "slope_ci_low", "slope_ci_high"]].round(3)
    assert table.loc["good", "decision"] == "accepted", shown.to_string()
    assert table.loc["flat", "decision"] == "rejected" and "flat" in table.loc["flat", "failed"].split("; "), (
        shown.to_string()
    )
    assert table.loc["mis-keyed", "reason"] == "mis-keyed", shown.to_string()
    assert "responses fall with ability" in table.loc["mis-keyed", "detail"]
    assert "no credible relation to ability" in table.loc["flat", "detail"]
    # the sign-free slope brackets the truth; the model's own discrimination (exp(.)) cannot go below 0
    for cid, truth in PLANTED.items():
        lo, hi = table.loc[cid, "slope_ci_low"], table.loc[cid, "slope_ci_high"]
        assert lo - 0.1 < truth < hi + 0.1, f"{cid}: slope 90% interval [{lo:.2f}, {hi:.2f}], truth {truth}"
    assert float(post["discrimination"].sel(item="mis-keyed").min()) > 0
    assert table.loc["mis-keyed", "p_discrimination_positive"] < 0.01


def test_default_least_slope_is_a_share_of_the_typical_discrimination():
    bank = _fake_fit("2pl", np.linspace(-2, 2, 20), mu=0.0, sd=1.0, a=1.6)
    assert typical_discrimination(bank) == pytest.approx(1.6)
    assert default_min_discrimination(bank) == pytest.approx(MIN_DISCRIMINATION_SHARE * 1.6)
    assert default_min_discrimination(bank, share=0.5) == pytest.approx(0.8)
    rasch = _fake_fit("1pl", np.linspace(-2, 2, 20), mu=0.0, sd=1.0, a=1.6)
    tree = rasch.idata.copy()
    tree["posterior"] = xr.DataTree(rasch.posterior.drop_vars("discrimination"))  # only the shared level
    assert typical_discrimination(dataclasses.replace(rasch, idata=tree)) == pytest.approx(1.6)


def test_a_posterior_without_what_the_grid_needs_gives_missing_pieces_that_reject():
    """The full refit's data-alone and slope pieces come from the refit's posterior; without a variable the
    grid needs they are NaN, and the acceptance rule rejects rather than passes."""
    rng = np.random.default_rng(2)
    theta = rng.normal(size=60)
    bank = _fake_fit("2pl", theta, mu=0.0, sd=1.0)
    y = (rng.random(60) < expit(theta - 0.2)).astype(float)
    frame = pd.DataFrame({"subject": [f"s{j:02d}" for j in range(60)], "item": "new", "response": y})
    new = candidate_response_data(frame, [Candidate(candidate_id="new", text="q", answer="a")], fit=bank)
    post = bank.posterior
    b_data, slope = data_alone_and_slope(post, bank.spec, bank.subject_ids, new, seed=0)
    assert np.isfinite(b_data).all() and np.isfinite(slope).all()
    assert 0.6 < slope.mean() < 1.6, slope.mean()
    b_data, slope = data_alone_and_slope(
        post.drop_vars("log_discrimination_mu"), bank.spec, bank.subject_ids, new, seed=0
    )
    assert np.isnan(b_data).all() and np.isnan(slope).all()
    shape = (post.sizes["chain"], post.sizes["draw"], 1)
    dims = ("chain", "draw", "item")
    posterior = post[["difficulty", "discrimination"]].assign_coords(item=["new"])
    posterior = posterior.assign(
        difficulty=(dims, np.full(shape, 0.2)),
        difficulty_data=(dims, b_data.reshape(shape)),
        slope=(dims, slope.reshape(shape)),
    )
    table = decide_all(posterior, aim_lo=0.0, aim_hi=1.0, n_responses=60)
    assert table.loc["new", "decision"] == "rejected", table.to_string()
    assert table.loc["new", "failed"] == "data-alone missing; slope missing", table.loc["new", "failed"]
