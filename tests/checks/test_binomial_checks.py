"""Checks and verbs on k successes of n trials, with hand-built posteriors (no sampling): the exact binomial
log-likelihood behind LOO, binomial replications, scoring and prediction weighed by the trials, and the audit,
item checks and tracking taking count data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from irtbayes.auditing.run import audit
from irtbayes.checks.items import check_items
from irtbayes.checks.predictive import _replications, compare_fits, log_likelihood, posterior_predictive_check
from irtbayes.core import irt
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.prediction import predict_scores
from irtbayes.evaluating.scoring import score
from irtbayes.evaluating.tracking import track
from irtbayes.fitting.result import Fit


@pytest.fixture(scope="module")
def counted() -> tuple[ResponseData, Fit, object]:
    data, truth = simulate_responses(30, 40, n_trials=5, n_benchmarks=2, seed=3)
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=60, seed=4), data)
    return data, fit, truth


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_log_likelihood_is_the_binomial_log_pmf(counted) -> None:
    data, fit, _ = counted
    ll = log_likelihood(fit, data, n_draws=None)  # no quasi-likelihood warning: warnings are errors here
    assert ll.attrs == {"likelihood": "binomial", "quasi_likelihood": 0}
    post = fit.posterior
    s, i = data.subject_codes, data.item_codes
    for chain, draw in ((0, 0), (1, 37)):
        theta = post["ability"].values[chain, draw][s]
        p = irt.probability(
            theta, post["difficulty"].values[chain, draw][i], post["discrimination"].values[chain, draw][i]
        )
        expected = stats.binom.logpmf(data.successes, data.trials, p)
        np.testing.assert_allclose(ll.values[chain, draw], expected, rtol=1e-10, atol=1e-12)
    assert ll.sizes["response"] == data.n_responses


def test_compare_fits_of_counts_is_exact_and_says_nothing_of_quasi_likelihoods(counted) -> None:
    data, fit, _ = counted
    post = fit.posterior
    flipped = Fit.from_posterior(post.assign(difficulty=-post["difficulty"]), data)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Pareto k.*")
        table = compare_fits({"true": fit, "flipped": flipped}, data, n_draws=None)
    assert table.attrs["likelihood"] == "binomial" and "note" not in table.attrs
    assert table.index[0] == "true" and table.loc["flipped", "elpd_diff"] < -100
    # leave-one-out lies below the in-sample log predictive density of the same binomial pmf
    ll = log_likelihood(fit, data, n_draws=None)
    lppd = float(np.log(np.exp(ll).mean(("chain", "draw"))).sum())
    assert table.loc["true", "elpd"] < lppd


def test_replications_are_shares_of_binomial_draws(counted) -> None:
    data, fit, _ = counted
    rng = np.random.default_rng(5)
    chains, draws = np.arange(2), np.arange(0, 60, 6)
    reps = np.array(list(_replications(fit, data, chains, draws, rng)))
    successes = reps * data.trials
    assert np.allclose(successes, np.round(successes)) and set(np.unique(successes)) == {0, 1, 2, 3, 4, 5}
    # the replications' mean share per response follows the model's probability, and their spread is binomial
    post = fit.posterior
    p = irt.probability(
        post["ability"].values[:, draws][..., data.subject_codes],
        post["difficulty"].values[:, draws][..., data.item_codes],
        post["discrimination"].values[:, draws][..., data.item_codes],
    ).reshape(len(reps), -1)
    variance = (p * (1 - p) / data.trials).mean()
    assert ((reps - p) ** 2).mean() == pytest.approx(variance, rel=0.1)
    check = posterior_predictive_check(fit, data, n_draws=100, seed=1)
    assert not check.quasi_likelihood and check.notes == [] and check.items.attrs["likelihood"] == "binomial"
    assert int(check.items["misfit"].sum()) <= 8, check.items.sort_values("p_value_mean").head()


def test_scoring_weighs_the_trials(counted) -> None:
    data, fit, truth = counted
    some = data.subset(subjects=[f"subject{j:03d}" for j in range(6)])
    counts = score(fit, some, n_draws=60, seed=2).table()
    shares = score(fit, some.without_trials(), n_draws=60, seed=2).table()
    ratio = (counts["ability_sd"] / shares["ability_sd"]).median()
    assert 0.3 < ratio < 0.65, ratio  # five trials: about 1 / sqrt(5) of the sd of one fractional score
    inside = (counts["ability_ci_low"] < truth["ability"].values[:6]) & (
        truth["ability"].values[:6] < counts["ability_ci_high"]
    )
    assert inside.sum() >= 5, counts


def test_predicted_scores_weigh_the_trials(counted) -> None:
    data, fit, _ = counted
    frame = data.long_frame().assign(subject=lambda f: "new-" + f["subject"])
    new = ResponseData.from_long(frame, trials="trials", items=data.items.reset_index()).subset(
        subjects=["new-subject000", "new-subject001"], items=list(data.item_ids[:20])
    )
    counts = predict_scores(fit, new, n_draws=60, seed=1, calibrate=False)
    shares = predict_scores(fit, new.without_trials(), n_draws=60, seed=1, calibrate=False)
    sd_counts = counts.ability.std(("chain", "draw")).values
    sd_shares = shares.ability.std(("chain", "draw")).values
    assert np.all(sd_counts < 0.75 * sd_shares), (sd_counts, sd_shares)
    assert not any(w.startswith("FRACTIONAL") for w in counts.warnings)


def test_the_audit_item_checks_and_tracking_take_counts(counted) -> None:
    data, fit, _ = counted
    result = audit(fit, data)
    scopes = result.benchmarks.set_index("scope")
    assert scopes.loc[["all", "bench00", "bench01"], "n_items"].tolist() == [40, 20, 20]
    assert len(result.items) == data.n_items and result.to_text().startswith("Audit of simulated 2pl")
    checks = check_items(fit, data, n_draws=10)
    assert checks.settings["likelihood"] == "binomial"
    assert not any("quasi" in note for note in checks.notes)
    frame = data.subset(subjects=["subject000", "subject010"]).long_frame()
    checkpoints = ResponseData.from_long(
        frame.assign(subject=frame["subject"].map({"subject000": "v1", "subject010": "v2"})),
        trials="trials",
        items=data.items.reset_index(),
    )
    tracked = track(fit, checkpoints, n_draws=60, seed=1)
    assert set(tracked.changes["from"]) == {"v1"} and tracked.abilities.shape[0] == 2


def test_item_regressions_weigh_the_trials() -> None:
    """A k-of-n response enters the slope regression as n trials: the Laplace sd shrinks by about sqrt(n)."""
    from irtbayes.checks.items import _laplace

    rng = np.random.default_rng(1)
    x = rng.normal(size=400)
    n = np.full(400, 9)
    y = rng.binomial(n, 1 / (1 + np.exp(-(0.3 + 1.2 * x)))) / n
    key = np.zeros(400, dtype=np.int64)
    mode, sd, ok = _laplace(y, x, key, np.zeros((1, 2)), offset=None, guessing=None, prior_sd=(3, 2), trials=n)
    _, sd_one, _ = _laplace(y, x, key, np.zeros((1, 2)), offset=None, guessing=None, prior_sd=(3, 2))
    assert ok and abs(mode[0, 1] - 1.2) < 3 * sd[0], (mode, sd)
    assert sd[0] / sd_one[0] == pytest.approx(1 / 3, rel=0.05)
