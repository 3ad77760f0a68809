"""The approximate tier (sampler="approx") and sampler="auto": recovery, layout, labels, choices."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from irtbayes.auditing.run import audit
from irtbayes.cli.main import main
from irtbayes.core.errors import SpecError
from irtbayes.data.simulate import simulate_responses
from irtbayes.fitting.approx import ApproxSettings, approx_posterior
from irtbayes.fitting.auto import approx_supports, choose_sampler, estimate_nuts_seconds
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import load_fit, save_fit
from irtbayes.model.spec import ModelSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def simulated():
    return simulate_responses(80, 400, n_benchmarks=4, n_domains=1, seed=11)


@pytest.fixture(scope="module")
def approx_fit(simulated):
    data, _ = simulated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return fit(data, sampler="approx", seed=3, progress=False)


def _coverage(post, truth, name: str) -> float:
    draws = post[name].stack(sample=("chain", "draw")).transpose(..., "sample").to_numpy()
    lo, hi = np.quantile(draws, [0.05, 0.95], axis=-1)
    t = truth[name].to_numpy()
    return float(np.mean((t >= lo) & (t <= hi)))


def test_recovers_the_truth_with_calibrated_intervals(simulated, approx_fit):
    _, truth = simulated
    post = approx_fit.posterior
    # 90% intervals: 400 difficulties and 80 abilities; a binomial 99% band around 0.9 is about +-0.04 and
    # +-0.09; the approximation is allowed to be a little narrow, not much
    assert 0.83 <= _coverage(post, truth, "difficulty") <= 0.97
    assert 0.78 <= _coverage(post, truth, "ability") <= 1.0
    mean_b = post["difficulty"].mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(mean_b, truth["difficulty"].to_numpy())[0, 1] > 0.95
    mean_a = post["ability"].mean(("chain", "draw")).to_numpy()
    assert np.corrcoef(mean_a, truth["ability"].to_numpy())[0, 1] > 0.97


def test_same_layout_as_nuts_and_abilities_standardised(simulated, approx_fit):
    data, _ = simulated
    post = approx_fit.posterior
    assert post["difficulty"].dims == ("chain", "draw", "item")
    assert post["ability"].dims == ("chain", "draw", "subject")
    assert post.sizes["chain"] == 4 and post.sizes["draw"] == 250
    assert list(post["item"].values) == [str(i) for i in data.item_ids]
    for name in ("discrimination", "intercept", "difficulty_sd", "difficulty_benchmark", "log_discrimination_mu"):
        assert name in post
    np.testing.assert_allclose(post["ability"].mean("subject"), 0.0, atol=1e-9)
    np.testing.assert_allclose(post["ability"].std("subject"), 1.0, atol=1e-9)
    np.testing.assert_allclose(post["intercept"], -post["discrimination"] * post["difficulty"], rtol=1e-6)


def test_labelled_approximate_everywhere(simulated, approx_fit, tmp_path):
    data, _ = simulated
    assert approx_fit.approximate
    assert not approx_fit.diagnostics.ok
    assert approx_fit.sampler["name"] == "approx"
    assert approx_fit.sampler["options"]["modes_converged"] is True
    assert approx_fit.sampler["options"]["grid_edge_mass_max"] < 1e-2
    save_fit(approx_fit, tmp_path / "fit")
    card = json.loads((tmp_path / "fit" / "card.json").read_text())
    assert card["sampler"]["approximate"] is True
    loaded = load_fit(tmp_path / "fit", data=data)
    assert loaded.approximate
    result = audit(loaded.idata, data, max_draws=200, seed=1)
    assert result.settings["approximate"] is True
    row = result.benchmarks.iloc[0]
    assert np.isfinite(row["ddm_w1_mean"]) and np.isfinite(row["max_gap_mean"])


def test_one_pl_shares_one_discrimination():
    data, truth = simulate_responses(60, 150, kind="1pl", seed=4)
    tree, spec, info = approx_posterior(data, ModelSpec(kind="1pl"), chains=2, draws=100, seed=1)
    post = tree["posterior"].to_dataset()
    disc = post["discrimination"].to_numpy()
    assert np.allclose(disc, disc[..., :1])  # one value per draw
    assert spec.kind == "1pl" and info["modes_converged"]
    assert _coverage(post, truth, "difficulty") >= 0.8


def test_skewed_items_get_a_wider_grid():
    """An item nearly every subject answers correctly has a long tail; its grid must hold it."""
    data, _ = simulate_responses(40, 60, seed=5, missing=0.0)
    frame = data.long_frame()
    frame.loc[frame["item"] == data.item_ids[0], "response"] = 1.0
    frame.loc[(frame["item"] == data.item_ids[0]) & (frame["subject"] == data.subject_ids[0]), "response"] = 0.0
    from irtbayes.data.responses import ResponseData

    skewed = ResponseData.from_long(frame)
    narrow = ApproxSettings(width=1.0)  # a grid far too narrow at first: widened until it holds the mass
    _, _, info = approx_posterior(skewed, ModelSpec(), chains=2, draws=100, seed=1, settings=narrow)
    assert info["grid_edge_mass_max"] < 0.05


@pytest.mark.parametrize(
    "spec", [ModelSpec(kind="3pl"), ModelSpec(dims="domain"), ModelSpec(identification="prior")], ids=str
)
def test_unsupported_specs_are_refused_and_auto_keeps_nuts(spec):
    data, _ = simulate_responses(30, 40, n_benchmarks=2, n_domains=2, seed=6)
    with pytest.raises(SpecError, match="approx"):
        approx_posterior(data, spec, chains=1, draws=10)
    assert not approx_supports(spec)
    choice = choose_sampler(data, spec, chains=4, draws=None, tune=None, cores=2, budget_s=0.0)
    assert choice.sampler == "nutpie" and "does not fit this model" in choice.reason


def test_auto_follows_the_budget(simulated):
    data, _ = simulated
    estimate = estimate_nuts_seconds(data.n_responses, chains=4, draws=1000, tune=500, cores=2)
    within = choose_sampler(data, ModelSpec(), chains=4, draws=None, tune=None, cores=2, budget_s=estimate + 1)
    over = choose_sampler(data, ModelSpec(), chains=4, draws=None, tune=None, cores=2, budget_s=estimate - 1)
    assert (within.sampler, over.sampler) == ("nutpie", "approx")
    assert estimate_nuts_seconds(2 * data.n_responses, cores=2) > estimate


def test_auto_records_its_choice(simulated):
    data, _ = simulated
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, seed=2, progress=False, budget_s=0.0, draws=20)
    assert result.sampler["name"] == "approx"
    assert result.sampler["auto"]["sampler"] == "approx" and result.sampler["auto"]["budget_s"] == 0.0


def test_cli_fit_with_the_approximate_tier(simulated, tmp_path, capsys):
    data, _ = simulated
    path = tmp_path / "responses.csv"
    data.long_frame().to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        code = main(["fit", str(path), "--sampler", "approx", "--draws", "50", "--out", str(tmp_path / "fit")])
    assert code == 0
    out = capsys.readouterr().out
    assert "APPROXIMATE" in out
    import pandas as pd

    items = pd.read_csv(tmp_path / "fit" / "items.csv")
    assert {"difficulty_mean", "difficulty_ci_low", "difficulty_ci_high"} <= set(items.columns)
    assert (items["difficulty_ci_low"] < items["difficulty_ci_high"]).all()


def test_modes_that_do_not_settle_are_named_and_every_verb_refuses_the_fit(tmp_path):
    # three rounds of the empirical-Bayes iteration at most: too few for the modes to settle
    data, _ = simulate_responses(30, 40, kind="2pl", n_benchmarks=3, missing=0.1, seed=1)
    with pytest.warns(UserWarning, match="modes did not settle"):
        result = fit(data, sampler="approx", seed=1, progress=False, sampler_kwargs={"max_iter": 3})
    assert result.sampler["options"]["modes_converged"] is False
    assert result.unsettled.startswith("the approximate tier's empirical-Bayes modes did not settle")
    assert any("did not settle" in note for note in result.diagnostics.notes)
    assert "did not settle" in result.diagnostics.to_text()
    from irtbayes.benchfill.aim import choose_aim
    from irtbayes.core.errors import FitError
    from irtbayes.evaluating.bank import ItemBank
    from irtbayes.reporting.report import report

    refusals = {
        "audit": lambda: audit(result, data, progress=False),
        "report": lambda: report(result, tmp_path / "report", data=data),
        "BenchFill's aim": lambda: choose_aim(result, data),
        "the item bank": lambda: ItemBank.from_fit(result, data=data),
    }
    for verb, call in refusals.items():
        with pytest.raises(FitError, match=f"^{verb}: the approximate tier's empirical-Bayes modes did not settle"):
            call()
    assert not (tmp_path / "report").exists()
    # settled (the default rounds), the same data pass every verb's check
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        settled = fit(data, sampler="approx", seed=1, progress=False)
    assert settled.unsettled == ""
    settled.refuse_if_unsettled("audit")


def test_approx_settings_come_through_sampler_kwargs_and_unknown_ones_are_refused(simulated):
    data, _ = simulated
    with pytest.raises(SpecError, match=r"unknown setting.*'max_iters'.*did you mean 'max_iter'"):
        fit(data, sampler="approx", seed=1, progress=False, sampler_kwargs={"max_iters": 3})


def test_three_systems_that_answer_alike_give_bounded_items_not_hundreds_of_logits():
    """lm-evaluation-harness logs of three tiny models (tests/fixtures/lm_eval/lm_eval_hf, the generative task read
    with its flexible-extract filter): every item of one task is answered wrong by all three. The empirical-Bayes
    spreads, estimated under the model's priors, keep those items within the priors' reach (they drifted to 565
    logits when the spreads were estimated from the items alone), and the modes settle."""
    import irtbayes as irt

    data = irt.load(FIXTURES / "lm_eval" / "lm_eval_hf", filter="flexible-extract")
    assert data.n_subjects == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, model="2pl", sampler="approx", seed=1, progress=False)
    assert result.sampler["options"]["modes_converged"] is True
    difficulty = result.posterior["difficulty"].values
    assert np.isfinite(difficulty).all()
    assert np.abs(difficulty).max() < 30, np.abs(difficulty).max()
    assert float(result.posterior["discrimination"].mean()) > 0.02


def test_the_1pl_of_three_systems_that_answer_alike_settles_within_its_priors_reach():
    """The same logs with the 1PL (the default for three systems): the shared log-discrimination's step carries its
    prior, and an item every system fails moves by up to one prior sd a round, so the standardisation's rescaling
    cannot carry it out (it reached 6,000 logits in 40 rounds, then NaN, when its step was capped at 1 logit)."""
    import irtbayes as irt

    data = irt.load(FIXTURES / "lm_eval" / "lm_eval_hf", filter="flexible-extract")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(data, sampler="approx", seed=1, progress=False)
    assert result.spec.kind == "1pl"
    assert result.sampler["options"]["modes_converged"] is True
    difficulty = result.posterior["difficulty"].values
    assert np.isfinite(difficulty).all() and np.abs(difficulty).max() < 100, np.abs(difficulty).max()
    slope = float(result.posterior["log_discrimination_mu"].mean())
    assert abs(slope) < 3 * result.spec.priors.log_discrimination_mu_sd, slope
