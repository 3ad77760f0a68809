"""BenchFill calibration: the fixed-bank grid against exact quadrature and against a full refit; the OC.

The shared bank (40 subjects x 60 items in 2 benchmarks, 2PL, 2 chains x 300 draws) is fitted once per
session by :func:`shared_bank`, which ``test_benchfill_cli.py`` uses too.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import arviz_stats
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit
from scipy.stats import beta as beta_dist

from irtbayes.benchfill.acceptance import decide_all, operating_characteristic, operating_characteristic_table
from irtbayes.benchfill.calibration import calibrate_fixed, calibrate_full, candidate_response_data
from irtbayes.benchfill.candidates import Candidate, load_candidates
from irtbayes.core.errors import DataError, FitError
from irtbayes.data import io
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.diagnostics.verdict import Diagnostics
from irtbayes.fitting.fit import fit
from irtbayes.fitting.result import Fit
from irtbayes.fitting.storage import save_fit
from irtbayes.model.spec import ModelSpec

#: True difficulties of the six candidates (discrimination 1.2 each): two easy, two in [-0.5, 1.5), two hard.
TRUE_DIFFICULTY = np.array([-2.5, -1.5, 0.2, 0.5, 2.2, 3.0])
TARGET = (-0.5, 1.5)
#: The candidates' texts: distinct questions, so that the novelty screen passes them all.
CANDIDATE_TEXTS = (
    "What is the capital of Canada?",
    "How many legs does a spider have?",
    "Which element has the atomic number 8?",
    "A car travels 150 km in 2 hours. What is its average speed in km/h?",
    "Who composed the opera The Magic Flute?",
    "What is the square root of 144?",
)


@dataclass(frozen=True)
class Bank:
    """A fitted bank saved to disk, six candidates and their simulated responses."""

    folder: Path
    data: ResponseData
    data_path: Path
    truth: xr.Dataset
    fit: Fit
    fit_dir: Path
    candidates: list[Candidate]
    candidates_path: Path
    responses: pd.DataFrame
    responses_path: Path


_CACHE: dict[str, Bank] = {}


def _make_bank() -> Bank:
    folder = Path(tempfile.mkdtemp(prefix="irtbayes-benchfill-"))
    atexit.register(shutil.rmtree, folder, True)
    simulated, truth = simulate_responses(40, 60, kind="2pl", n_benchmarks=2, missing=0.0, seed=5)
    frame = simulated.long_frame().merge(simulated.items[["benchmark"]].reset_index(), on="item")
    data_path = folder / "bank.csv"
    frame.to_csv(data_path, index=False)
    data = io.load_long(data_path)  # the fit records this file as its source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a tiny fit may miss ESS >= 400
        bank_fit = fit(data, ModelSpec(kind="2pl"), chains=2, draws=300, tune=300, seed=1, progress=False)
    fit_dir = save_fit(bank_fit, folder / "fit")
    candidates = [
        Candidate(
            candidate_id=f"cand{k}",
            text=CANDIDATE_TEXTS[k],
            answer="B",
            choices=("A", "B", "C", "D"),
            benchmark="bench00",
            source="test",
        )
        for k in range(len(TRUE_DIFFICULTY))
    ]
    candidates_path = folder / "candidates.jsonl"
    candidates_path.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in candidates))
    rng = np.random.default_rng(3)
    theta = truth["ability"].values
    y = (rng.random((40, len(candidates))) < expit(1.2 * (theta[:, None] - TRUE_DIFFICULTY[None, :]))).astype(float)
    responses = pd.DataFrame(
        {
            "subject": np.repeat(data.subject_ids.to_numpy(), len(candidates)),
            "item": np.tile([c.candidate_id for c in candidates], 40),
            "response": y.ravel(),
        }
    )
    responses_path = folder / "responses.csv"
    responses.to_csv(responses_path, index=False)
    return Bank(
        folder, data, data_path, truth, bank_fit, fit_dir, candidates, candidates_path, responses, responses_path
    )


def shared_bank() -> Bank:
    """The bank, fitted on first use and kept for the session."""
    if "bank" not in _CACHE:
        _CACHE["bank"] = _make_bank()
    return _CACHE["bank"]


@pytest.fixture(scope="session")
def bank() -> Bank:
    return shared_bank()


@pytest.fixture(scope="session")
def new_data(bank: Bank) -> ResponseData:
    return candidate_response_data(bank.responses, bank.candidates, fit=bank.fit)


@pytest.fixture(scope="session")
def fixed(bank: Bank, new_data: ResponseData) -> xr.Dataset:
    return calibrate_fixed(bank.fit, new_data, seed=1)


@pytest.fixture(scope="session")
def full(bank: Bank, new_data: ResponseData):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return calibrate_full(bank.fit, bank.data, new_data, seed=2)


# ---------------------------------------------------------------------------------------------- data checks
def test_candidate_data_takes_labels_from_the_candidates(bank, new_data):
    assert list(new_data.item_ids) == [c.candidate_id for c in bank.candidates]
    assert set(new_data.items["benchmark"]) == {"bench00"}
    assert new_data.items["n_options"].tolist() == [4] * 6
    assert new_data.n_responses == 240


def test_unknown_subjects_are_listed_not_dropped(bank):
    frame = bank.responses.copy()
    frame.loc[0, "subject"] = "gpt-x"
    frame.loc[1, "subject"] = "claude-y"
    with pytest.raises(DataError, match=r"2 subject\(s\) are not among the fit's 40 subjects: claude-y, gpt-x"):
        candidate_response_data(frame, bank.candidates, fit=bank.fit)


def test_responses_to_unknown_items_are_an_error(bank):
    frame = bank.responses.copy()
    frame.loc[0, "item"] = "item00003"  # a bank item, not a candidate
    with pytest.raises(DataError, match=r"1 item\(s\) that are not candidates: item00003"):
        candidate_response_data(frame, bank.candidates, fit=bank.fit)


def test_candidate_ids_must_not_be_bank_items(bank):
    clash = [Candidate(candidate_id="item00000", text="q", answer="a")]
    with pytest.raises(DataError, match="already items of the fitted bank"):
        candidate_response_data(bank.responses.iloc[:0], clash, fit=bank.fit)


def test_full_calibration_refuses_other_data(bank, new_data):
    other = bank.data.subset(items=list(bank.data.item_ids[:-1]))
    with pytest.raises(FitError, match="not the data the fit was made from"):
        calibrate_full(bank.fit, other, new_data)


# ---------------------------------------------------------------------------------------------- fixed bank
def test_fixed_bank_output_is_labelled(fixed, bank):
    n_total = bank.fit.posterior.sizes["chain"] * bank.fit.posterior.sizes["draw"]
    assert dict(fixed["difficulty"].sizes) == {"chain": 1, "draw": n_total, "item": 6}
    assert list(fixed["item"].values) == [f"cand{k}" for k in range(6)]
    assert fixed["n_responses"].values.tolist() == [40] * 6
    assert set(fixed["prior_group"].values) == {"benchmark 'bench00 [candidates]' (6 candidate(s) pooled)"}
    assert fixed.attrs["prior"] == "candidates"
    assert (fixed["discrimination"] > 0).all()
    assert float(fixed["edge_mass"].max()) < 1e-3, fixed["edge_mass"].values


def test_fixed_bank_prior_for_an_unknown_benchmark_is_wider(bank):
    frame = bank.responses.loc[bank.responses["item"] == "cand2"]
    known = calibrate_fixed(
        bank.fit, candidate_response_data(frame, bank.candidates[2:3], fit=bank.fit), seed=0, prior="bank"
    )
    stranger = Candidate(candidate_id="cand2", text="q", answer="a", benchmark="brand-new")
    new = calibrate_fixed(bank.fit, candidate_response_data(frame, [stranger], fit=bank.fit), seed=0, prior="bank")
    assert str(known["prior_group"].values[0]) == "benchmark 'bench00'" and known.attrs["prior"] == "bank"
    assert str(new["prior_group"].values[0]) == "a new benchmark"
    assert float(new["prior_difficulty_sd"][0]) > float(known["prior_difficulty_sd"][0]), (
        new["prior_difficulty_sd"].values,
        known["prior_difficulty_sd"].values,
    )


def test_fewer_responses_give_a_wider_interval(bank):
    frame = bank.responses.loc[bank.responses["item"] == "cand3"]
    sds = []
    for n in (10, 40):
        part = frame.iloc[:n]
        post = calibrate_fixed(bank.fit, candidate_response_data(part, bank.candidates[3:4], fit=bank.fit), seed=0)
        sds.append(float(post["difficulty"].std()))
    assert sds[0] > 1.3 * sds[1], f"posterior sd with 10 responses {sds[0]:.3f}, with 40 {sds[1]:.3f}"


def _fake_fit(kind: str, theta: np.ndarray, *, mu: float, sd: float, a: float = 1.0) -> Fit:
    """A fit whose posterior is known exactly: fixed abilities, one item, constant hyperparameters."""
    n_chain, n_draw = 1, 400
    subjects = [f"s{j:02d}" for j in range(len(theta))]
    shape = (n_chain, n_draw)
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "subject"), np.broadcast_to(theta, (*shape, len(theta))).copy()),
            "difficulty": (("chain", "draw", "item"), np.zeros((*shape, 1))),
            "discrimination": (("chain", "draw", "item"), np.full((*shape, 1), a)),
            "difficulty_mu": (("chain", "draw"), np.full(shape, mu)),
            "difficulty_sd": (("chain", "draw"), np.full(shape, sd)),
            "log_discrimination_mu": (("chain", "draw"), np.full(shape, np.log(a))),
            "log_discrimination_sd": (("chain", "draw"), np.full(shape, 0.3)),
        },
        coords={"subject": subjects, "item": ["old"]},
    )
    constant = xr.Dataset({"item_benchmark": ("item", [""]), "item_domain": ("item", [""])}, coords={"item": ["old"]})
    tree = xr.DataTree.from_dict({"posterior": posterior, "constant_data": constant})
    return Fit(
        idata=tree,
        spec=ModelSpec(kind=kind, hierarchy="none"),
        sampler={"name": "fake", "chains": n_chain, "draws": n_draw},
        data_checksum="fake",
        diagnostics=Diagnostics(ok=True, approximate=False, thresholds={}),
    )


def test_grid_log_likelihood_equals_long_double_sums_also_where_p_saturates():
    """The compiled grid (both factorised and direct exponentials, the sign-free slope's intercept grid,
    guessing strata, a fractional score) against the sums written out in long double, with 1 - P from its own
    sigmoid: where P rounds to 1 the log of 1 - P stays exact, not 1 - 1 held at 1e-300."""
    from irtbayes.benchfill.grid import _Guessing, loglik_grid

    rng = np.random.default_rng(3)
    theta = rng.normal(size=(40, 8))
    y = (rng.random(40) < 0.5).astype(float)
    y[3] = 0.4
    b = np.linspace(-8.0, 8.0, 81)
    long = np.longdouble

    def exact(a: np.ndarray, nodes: np.ndarray, intercept: bool) -> np.ndarray:
        t = theta.astype(long)[None, None]
        eta = (
            a[None, :, None, None] * t + b[:, None, None, None]
            if intercept
            else a[None, :, None, None] * (t - b[:, None, None, None])
        )
        p0, q0 = (1 / (1 + np.exp(-eta))).mean(-1), (1 / (1 + np.exp(eta))).mean(-1)
        out = [
            (y * np.log(np.maximum(c + (1 - c) * p0, 1e-300)) + (1 - y) * np.log(np.maximum((1 - c) * q0, 1e-300))).sum(
                -1
            )
            for c in nodes
        ]
        return np.stack(out, axis=-1).astype(np.float64)

    guessing = _Guessing(alpha=5.0, beta=15.0, points=3)
    slopes = np.concatenate([np.exp(np.linspace(-2.5, 2.5, 9)), [90.0]])  # 90: past the factorised range
    grids = []
    for a, nodes, intercept, g in [
        (slopes, np.zeros(1), False, None),
        (slopes, guessing.nodes, False, guessing),
        (np.array([-3.0, -0.2, 0.5, 2.0]), np.zeros(1), True, None),
    ]:
        grids.append(loglik_grid(theta, y, b, a, g, intercept=intercept))
        np.testing.assert_allclose(grids[-1], exact(a, nodes, intercept), rtol=1e-12, atol=1e-9)
    # compared there: b = -8 with a = 12.2, where P rounds to 1 for every subject (1 - P is below 1e-30)
    assert grids[0][0, -2, 0] < -1000


@pytest.mark.parametrize(("kind", "chance"), [("1pl", None), ("3pl", 0.25)])
def test_fixed_bank_matches_exact_quadrature(kind, chance):
    """With abilities known exactly and a Normal prior, the grid posterior mean of b is a 1-D integral; for
    3PL the guessing c is integrated over its Beta prior (mean chance, concentration 20), not held fixed."""
    theta = np.linspace(-2, 2, 30)
    rng = np.random.default_rng(7)
    y = (rng.random(30) < 0.5).astype(float)
    bank = _fake_fit(kind, theta, mu=0.3, sd=1.2, a=1.3)
    frame = pd.DataFrame({"subject": [f"s{j:02d}" for j in range(30)], "item": "new", "response": y})
    choices = ("a", "b", "c", "d") if chance else None
    cand = Candidate(candidate_id="new", text="q", answer="a", choices=choices)
    new = candidate_response_data(frame, [cand], fit=bank)
    # the abilities are known exactly, so one quantile point per subject is exact
    post = calibrate_fixed(bank, new, n_draws=20_000, seed=3, ability_points=1)
    b = np.linspace(-8, 8, 801)[:, None, None]
    # 1PL: a is the bank's; 3PL: log a has the bank's prior Normal(log 1.3, 0.3), c its Beta(5, 15) prior
    la = np.log(1.3) + (np.linspace(-6, 6, 61) * 0.3 if chance else np.zeros(1))
    c = beta_dist.ppf((np.arange(100) + 0.5) / 100, 5, 15) if chance else np.zeros(1)
    p0 = expit(np.exp(la)[None, :, None] * (theta[None, None, :] - b))
    logpost = np.empty((len(b), len(la), len(c)))
    for k, ck in enumerate(c):
        p = np.clip(ck + (1 - ck) * p0, 1e-15, 1 - 1e-15)
        logpost[:, :, k] = np.log(p) @ y + np.log1p(-p) @ (1 - y)
    logpost = logpost - 0.5 * ((b - 0.3) / 1.2) ** 2 - 0.5 * ((la[None, :, None] - np.log(1.3)) / 0.3) ** 2
    joint = np.exp(logpost - logpost.max())
    joint /= joint.sum()
    w = joint.sum(axis=(1, 2))
    b = b[:, 0, 0]
    exact_mean = float(w @ b)
    exact_sd = float(np.sqrt(w @ (b - exact_mean) ** 2))
    draws = post["difficulty"].values.ravel()
    mcse = exact_sd / np.sqrt(len(draws))
    assert abs(draws.mean() - exact_mean) < 5 * mcse + 0.005, (draws.mean(), exact_mean, mcse)
    assert abs(draws.std() / exact_sd - 1) < 0.03, (draws.std(), exact_sd)
    if chance:
        c_draws = post["guessing"].values.ravel()
        exact_c = float(joint.sum(axis=(0, 1)) @ c)
        exact_c_sd = float(np.sqrt(joint.sum(axis=(0, 1)) @ (c - exact_c) ** 2))
        assert abs(c_draws.mean() - exact_c) < 0.005, (c_draws.mean(), exact_c)
        assert abs(exact_c - 0.25) > 0.04, "the responses moved c from its prior mean: the check has teeth"
        # 11 strata of the prior (a midpoint rule): the sd is 5% off here, 9% with 7 strata, 3% with 21
        assert abs(c_draws.std() / exact_c_sd - 1) < 0.08, (c_draws.std(), exact_c_sd)
        assert c_draws.std() > 0.05, "the guessing draws carry its uncertainty"
    else:
        assert np.allclose(post["discrimination"].values, 1.3)


# ---------------------------------------------------------------------------------------------- fast vs full
#: The fixed-bank posterior mean of each candidate's difficulty lies within MEAN_TOLERANCE_SD full-refit
#: posterior sds plus 3 Monte-Carlo standard errors (sd / sqrt(ESS)) of the full refit's mean.
MEAN_TOLERANCE_SD = 0.35
#: The ratio of the two posterior sds lies within [1 / SD_RATIO, SD_RATIO].
SD_RATIO = 1.35


def test_fixed_bank_agrees_with_the_full_refit(fixed, full):
    fx = decide_all(fixed, aim_lo=TARGET[0], aim_hi=TARGET[1], n_responses=fixed["n_responses"].to_series())
    fu = decide_all(
        full.posterior, aim_lo=TARGET[0], aim_hi=TARGET[1], n_responses=full.posterior["n_responses"].to_series()
    )
    z = (fx["difficulty_mean"] - fu["difficulty_mean"]) / fu["difficulty_sd"]
    ess = arviz_stats.ess(full.posterior["difficulty"]).to_series().reindex(fu.index)
    tolerance = MEAN_TOLERANCE_SD + 3 / np.sqrt(ess)
    ratio = fx["difficulty_sd"] / fu["difficulty_sd"]
    report = pd.DataFrame(
        {
            "fixed_mean": fx["difficulty_mean"],
            "full_mean": fu["difficulty_mean"],
            "full_sd": fu["difficulty_sd"],
            "z": z,
            "tolerance": tolerance,
            "sd_ratio": ratio,
            "fixed_p": fx["p_in_aim"],
            "full_p": fu["p_in_aim"],
        }
    ).round(3)
    assert (z.abs() <= tolerance).all(), report.to_string()
    assert ratio.between(1 / SD_RATIO, SD_RATIO).all(), report.to_string()
    clear = (fu["p_in_aim"] >= 0.95) | (fu["p_in_aim"] <= 0.3)
    assert clear.sum() >= 5, report.to_string()
    assert (fx.loc[clear, "decision"] == fu.loc[clear, "decision"]).all(), report.to_string()
    assert fu["decision"].tolist() == ["rejected", "rejected", "accepted", "accepted", "rejected", "rejected"], (
        report.to_string()
    )


def test_full_refit_computes_the_data_alone_and_slope_pieces_on_the_grid(fixed, full):
    """The refit's data-alone P(b in aim) and sign-free slope come from the same grid as the fixed path's,
    on the refit's abilities, so the two agree closely (no importance weights with a tiny effective size)."""
    for name in ("difficulty_data", "slope"):
        values = full.posterior[name]
        assert values.dims == ("chain", "draw", "item") and np.isfinite(values.values).all(), name
        assert values.sizes["draw"] == full.posterior["difficulty"].sizes["draw"]
    counts = full.posterior["n_responses"].to_series()
    fx = decide_all(fixed, aim_lo=TARGET[0], aim_hi=TARGET[1], n_responses=counts)
    fu = decide_all(full.posterior, aim_lo=TARGET[0], aim_hi=TARGET[1], n_responses=counts)
    report = pd.DataFrame(
        {
            "fixed_data": fx["p_in_aim_data"],
            "full_data": fu["p_in_aim_data"],
            "fixed_slope": fx["slope_mean"],
            "full_slope": fu["slope_mean"],
        }
    ).round(3)
    assert ((fx["p_in_aim_data"] - fu["p_in_aim_data"]).abs() < 0.1).all(), report.to_string()
    # the refit's abilities have seen the candidates' own responses, so its slopes run higher, by a shift of its
    # own per candidate: in posterior sds (the 90% interval's width / 3.29), 0.14-0.59 over three pairs of seeds
    # (cand3 0.49, 0.55, 0.59; Monte Carlo error about 0.05), 0.29-0.33 on average over the six. Within 0.75 sd
    # each and half an sd on average; slopes from other abilities or without the grid would be sds apart.
    slope_sd = (fu["slope_ci_high"] - fu["slope_ci_low"]) / 3.29
    report["slope_sd"] = slope_sd.round(3)
    shift = (fu["slope_mean"] - fx["slope_mean"]) / slope_sd
    assert (shift.abs() < 0.75).all() and shift.mean() < 0.5, report.to_string()
    assert (fu.loc[["cand2", "cand3"], "slope_ci_low"] > 0).all(), "simulated with slope 1.2, near the abilities"


def test_full_refit_recovers_the_candidates(full):
    post = full.posterior["difficulty"]
    lo, hi = post.quantile([0.05, 0.95], dim=("chain", "draw")).values
    inside = (lo <= TRUE_DIFFICULTY) & (TRUE_DIFFICULTY <= hi)
    assert inside.sum() >= 5, f"90% intervals [{lo.round(2)}, {hi.round(2)}], truth {TRUE_DIFFICULTY}"
    assert list(full.refit.item_ids[-6:]) == [f"cand{k}" for k in range(6)]


def test_loaded_candidates_round_trip(bank):
    assert load_candidates(bank.candidates_path) == [
        Candidate(**{**c.to_dict(), "choices": c.choices}) for c in bank.candidates
    ]


# ---------------------------------------------------------------------------------------------- OC
#: Precision may fall below tau by at most this Monte-Carlo margin: 2 binomial standard errors at p = tau
#: for the number of accepted candidates.
def _margin(tau: float, n_accepted: int) -> float:
    return 2 * np.sqrt(tau * (1 - tau) / max(n_accepted, 1))


def test_pooled_prior_follows_candidates_aimed_far_from_the_bank(bank):
    """Candidates aimed at a hard region: their own group's prior is centred on them, the bank's is not."""
    rng = np.random.default_rng(11)
    true_b = rng.uniform(1.5, 2.5, 12)
    theta = bank.truth["ability"].values
    y = (rng.random((40, 12)) < expit(theta[:, None] - true_b[None, :])).astype(float)
    ids = [f"hard{k}" for k in range(12)]
    frame = pd.DataFrame({"subject": np.repeat(bank.data.subject_ids.to_numpy(), 12), "item": np.tile(ids, 40)})
    frame["response"] = y.ravel()
    cands = [Candidate(candidate_id=i, text="q", answer="a", benchmark="bench00") for i in ids]
    new = candidate_response_data(frame, cands, fit=bank.fit)
    pooled = calibrate_fixed(bank.fit, new, seed=0)
    banked = calibrate_fixed(bank.fit, new, seed=0, prior="bank")
    bank_mean = float(bank.fit.posterior["difficulty_benchmark"].sel(benchmark="bench00").mean())
    assert float(pooled["prior_difficulty_mean"][0]) > bank_mean + 1.0, (
        pooled["prior_difficulty_mean"].values,
        bank_mean,
    )
    err_pooled = np.abs(pooled["difficulty"].mean(("chain", "draw")).values - true_b).mean()
    err_banked = np.abs(banked["difficulty"].mean(("chain", "draw")).values - true_b).mean()
    shrink_pooled = (pooled["difficulty"].mean(("chain", "draw")).values - true_b).mean()
    shrink_banked = (banked["difficulty"].mean(("chain", "draw")).values - true_b).mean()
    assert shrink_banked < shrink_pooled and err_pooled < err_banked, (
        err_pooled,
        err_banked,
        shrink_pooled,
        shrink_banked,
    )


@pytest.mark.parametrize(
    ("truth", "target"),
    [
        ("uniform", (0.0, 1.5)),  # candidates aimed at the bin: a third inside, uniform around it
        ("bank", (-1.0, 0.5)),  # candidates drawn like the bank's items (the model's own assumption)
    ],
)
def test_operating_characteristic_precision_reaches_tau(bank, truth, target):
    """Accepted candidates are good and truly lie in the bin at rate tau or more, with 40 responding systems,
    when a fifth of the candidates are mis-keyed and a fifth flat; those are rejected."""
    tau = 0.8
    frame = operating_characteristic(
        bank.fit,
        aim_lo=target[0],
        aim_hi=target[1],
        n_systems=(40,),
        n_candidates=200,
        truth=truth,
        benchmark="bench00",
        tau=tau,
        seed=1,
        ability_points=8,
        n_draws=1000,
        mis_keyed_share=0.2,
        flat_share=0.2,
    )
    table = operating_characteristic_table(frame)
    row = table.iloc[0]
    assert row["n_mis_keyed"] == 40 and row["n_flat"] == 40, table.to_string()
    assert row["mis_keyed_rejected"] == 1.0 and row["mis_keyed_named"] >= 0.5, table.to_string()
    assert row["flat_rejected"] >= 0.95, table.to_string()
    assert row["n_accepted"] >= 10, table.to_string()
    assert row["precision"] >= tau - _margin(tau, int(row["n_accepted"])), table.to_string()
    assert 0 < row["recall"] < 1, table.to_string()
    # every accepted candidate was accepted on posterior evidence at least tau
    accepted = frame.loc[frame["decision"] == "accepted"]
    assert (accepted["p_in_aim"] >= tau).all()


def test_the_after_audit_counts_the_accepted_items_after_a_full_refit(bank, full):
    """The refit fits the candidates in their own group "bench00 [candidates]"; the extended benchmark still counts
    them in bench00: the after count is the before count plus the accepted, even from the refit's own labels."""
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.benchfill.result import HYPER_VARS, before_after

    new_ids = [c.candidate_id for c in bank.candidates]
    assert set(full.data.items.loc[new_ids, "benchmark"]) == {"bench00"}
    assert set(full.fitted_data.items.loc[new_ids, "benchmark"]) == {"bench00 [candidates]"}
    accepted = new_ids[2:4]
    keep = [str(i) for i in bank.data.item_ids] + accepted
    names = [n for n in ("ability", "difficulty", "discrimination", *HYPER_VARS) if n in full.refit.posterior]
    aim, _ = choose_aim(bank.fit, bank.data, interval=TARGET)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tables = before_after(
            bank.fit, bank.data, full.refit.posterior[names].sel(item=keep), full.fitted_data.subset(items=keep),
            added=accepted, target=aim.target, benchmark="bench00",
        )  # fmt: skip
    c = tables["comparison"].set_index(["scope", "version"])
    for scope in ("all", "bench00"):
        assert c.loc[(scope, "after"), "n_items"] == c.loc[(scope, "before"), "n_items"] + len(accepted), c
        assert c.loc[(scope, "original"), "n_items"] == c.loc[(scope, "before"), "n_items"]
    assert c.loc[("bench00", "after"), "n_added"] == len(accepted)
    assert set(tables["conclusions"]["cause"]) == {"composition", "re-estimation"}


def test_fixed_bank_calibration_runs_on_an_approximate_bank(bank, new_data, fixed):
    """An approximate fit has no benchmark-level sd (it estimates benchmark means without pooling): a candidate
    group's prior uses the spread of the benchmark means instead, and the candidates land where they do on the
    NUTS bank."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        approx = fit(bank.data, sampler="approx", seed=3, progress=False)
    assert "difficulty_benchmark_sd" not in approx.posterior
    post = calibrate_fixed(approx, new_data, seed=1)
    approx_means = post["difficulty"].mean(("chain", "draw")).to_series()
    nuts_means = fixed["difficulty"].mean(("chain", "draw")).to_series()
    assert np.isfinite(approx_means).all()
    np.testing.assert_allclose(approx_means, nuts_means.loc[approx_means.index], atol=0.2)  # measured: 0.09


def test_a_candidate_floor_fixed_at_chance_is_one_point_at_one_over_its_options():
    """``ModelSpec(guessing="chance")``: a candidate's floor is 1/n_options (no floor without options), not the
    pooled model's Beta strata."""
    from irtbayes.benchfill.grid import guessing_prior
    from irtbayes.model.spec import NO_FLOOR, ModelSpec

    rng = np.random.default_rng(0)
    fixed = guessing_prior(ModelSpec(kind="3pl", guessing="chance"), 4, points=11)
    assert fixed.nodes.tolist() == [0.25] and fixed.mean == 0.25
    assert fixed.draws(np.zeros(5, dtype=int), rng).tolist() == [0.25] * 5
    assert guessing_prior(ModelSpec(kind="3pl", guessing="chance"), None, points=11).mean == NO_FLOOR
    pooled = guessing_prior(ModelSpec(kind="3pl"), 4, points=11)
    assert len(pooled.nodes) == 11 and pooled.mean == pytest.approx(0.25)
