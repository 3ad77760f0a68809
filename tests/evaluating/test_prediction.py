"""Predicted full-benchmark scores of new systems: exact values on hand-built item banks, the checks on the
responses, the bank's ability priors and warnings, and one seeded calibration check on simulated systems."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.auditing.targets import Target
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.bank import DEFAULT_GRID, ItemBank
from irtbayes.evaluating.prediction import (
    ALL,
    predict_from_arrays,
    predict_scores,
    scope_membership,
    target_bins,
)
from irtbayes.evaluating.selection import select_items
from irtbayes.examples import simulated_fit
from irtbayes.fitting.result import Fit


# ------------------------------------------------------------------------------------------------ helpers
def make_bank(
    difficulty,
    discrimination,
    benchmark,
    *,
    draws: int = 1,
    binary: bool = True,
    warnings: tuple[str, ...] = (),
    fitted: tuple[str, ...] = ("old-1", "old-2"),
) -> ItemBank:
    """A 2PL bank whose ``draws`` posterior draws all equal the given item parameters."""
    b = np.tile(np.asarray(difficulty, dtype="float64"), (draws, 1))
    a = np.tile(np.asarray(discrimination, dtype="float64"), (draws, 1))
    return ItemBank(
        items=pd.Index([f"q{i}" for i in range(b.shape[1])]),
        benchmark=np.asarray(benchmark, dtype=str),
        difficulty=b,
        discrimination=a,
        guessing=None,
        population=np.linspace(-2.0, 2.0, 9),
        log_prior=-0.5 * DEFAULT_GRID**2,
        grid=DEFAULT_GRID,
        binary=binary,
        warnings=warnings,
        source="hand-built",
        fitted_subjects=pd.Index(list(fitted)),
    )


def responses(rows: list[tuple[str, str, float]]) -> ResponseData:
    return ResponseData.from_long(pd.DataFrame(rows, columns=["subject", "item", "response"]), source="new.csv")


def logistic(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def prior_predictive(difficulty: np.ndarray, discrimination: np.ndarray) -> np.ndarray:
    """E P_i(theta) under theta ~ N(0, 1), by the trapezoid rule on a fine grid (independent of the package)."""
    x = np.linspace(-10.0, 10.0, 40001)
    density = np.exp(-0.5 * x**2) / np.sqrt(2 * np.pi)
    p = logistic(discrimination[None, :] * (x[:, None] - difficulty[None, :]))
    return np.trapezoid(p * density[:, None], x, axis=0)


DIFFICULTY = np.array([-1.0, 0.0, 1.0, 2.0])
DISCRIMINATION = np.array([1.0, 1.5, 0.8, 2.0])
BENCHMARK = ["A", "A", "B", "B"]


# ------------------------------------------------------------------------------------------------ scopes and bins
def test_scope_membership_names_benchmarks_in_order_then_all_and_each_column_sums_to_one():
    bank = make_bank(np.zeros(5), np.ones(5), ["B", "A", "B", "C", "B"])
    names, member = scope_membership(bank)
    assert names == ["B", "A", "C", ALL]
    np.testing.assert_allclose(member.sum(axis=0), 1.0)
    np.testing.assert_allclose(member[:, 0], [1 / 3, 0, 1 / 3, 0, 1 / 3])
    np.testing.assert_allclose(member[:, 1], [0, 1, 0, 0, 0])
    np.testing.assert_allclose(member[:, 3], np.full(5, 0.2))


def test_target_bins_last_bin_closed_and_outside_minus_one():
    bank = make_bank([-2.5, -2.0, -1.0, 0.0, 1.0, 2.0, 2.5], np.ones(7), ["A"] * 7)
    target = Target(edges=(-2.0, 0.0, 2.0), weights=(1.0, 1.0))
    bins = target_bins(bank, target)
    assert bins.shape == (1, 7)
    assert bins[0].tolist() == [-1, 0, 0, 1, 1, 1, -1]


# ------------------------------------------------------------------------------------------------ exact predictions
def test_a_system_that_answered_everything_gets_its_observed_accuracy_with_a_zero_width_interval():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=20)
    answers = [1.0, 0.0, 1.0, 1.0]
    new = responses([("new", f"q{i}", y) for i, y in enumerate(answers)])
    table = predict_scores(bank, new, seed=3).table().set_index("benchmark")
    expected = {"A": 0.5, "B": 1.0, ALL: 0.75}
    for scope, value in expected.items():
        row = table.loc[scope]
        assert row["accuracy_mean"] == pytest.approx(value, abs=1e-12), scope
        assert row["accuracy_ci_low"] == pytest.approx(value, abs=1e-12), scope
        assert row["accuracy_ci_high"] == pytest.approx(value, abs=1e-12), scope
        assert row["observed_accuracy"] == pytest.approx(value, abs=1e-12), scope
        assert row["accuracy_sd"] == pytest.approx(0.0, abs=1e-12), scope
    assert table["items_seen"].tolist() == table["items_total"].tolist() == [2, 2, 4]


def test_items_seen_observed_accuracy_and_labels_of_a_partial_answer_set():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=10)
    new = responses([("s1", "q0", 1.0), ("s1", "q2", 0.0), ("s1", "q3", 1.0), ("s2", "q1", 0.0)])
    scores = predict_scores(bank, new, seed=0)
    assert scores.accuracy.dims == ("chain", "draw", "subject", "benchmark")
    assert scores.accuracy["subject"].values.tolist() == ["s1", "s2"]
    assert scores.scopes == ["A", "B", ALL]
    seen = scores.items_seen.sel(subject="s1").values.tolist()
    assert seen == [1, 2, 3]
    assert scores.items_total.dims == ("subject", "benchmark")
    assert scores.items_total.values.tolist() == [[2, 2, 4], [2, 2, 4]]
    np.testing.assert_allclose(scores.observed.sel(subject="s1").values, [1.0, 0.5, 2 / 3])
    assert np.isnan(float(scores.observed.sel(subject="s2", benchmark="B")))
    table = scores.table(0.8)
    assert table[["accuracy_ci_low", "accuracy_ci_high"]].stack().between(0.0, 1.0).all()
    assert (table["accuracy_ci_low"] <= table["accuracy_ci_high"]).all()
    assert table.attrs["ci_prob"] == 0.8 and (table["ci_prob"] == 0.8).all()
    # an answered item's own response counts: s1 solved q0, so its accuracy on A is at least 1/2 in every draw
    assert float(scores.accuracy.sel(subject="s1", benchmark="A").min()) >= 0.5


def test_no_answers_give_the_prior_predictive_mean_up_to_monte_carlo_error():
    draws = 400
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=draws)
    y = np.zeros((1, 4))
    scores = predict_from_arrays(bank, y, np.zeros_like(y), np.array(["blank"]), seed=5)
    exact = prior_predictive(DIFFICULTY, DISCRIMINATION)
    want = [exact[:2].mean(), exact[2:].mean(), exact.mean()]
    got = scores.accuracy_expected.sel(subject="blank").values
    # one ability draw per item draw: sd of the mean about 0.3 / sqrt(400) = 0.015
    np.testing.assert_allclose(got, want, atol=0.05, err_msg=f"predicted {got}, prior predictive {want}")
    assert scores.items_seen.values.tolist() == [[0, 0, 0]]


def test_no_answers_give_the_exact_prior_predictive_mean_for_a_bank_of_one_draw():
    """accuracy_mean integrates the ability posterior: with one item draw it is no single random draw."""
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=1)
    y = np.zeros((1, 4))
    exact = prior_predictive(DIFFICULTY, DISCRIMINATION)
    want = [exact[:2].mean(), exact[2:].mean(), exact.mean()]
    for seed in (0, 1, 2):
        got = predict_from_arrays(bank, y, np.zeros_like(y), np.array(["blank"]), seed=seed).accuracy_expected
        np.testing.assert_allclose(
            got.values[0], want, atol=2e-3, err_msg=f"seed {seed}: predicted {got.values[0]}, exact {want}"
        )


def test_the_interval_carries_the_spread_of_unanswered_responses_not_only_the_expected_accuracy():
    """A flat bank (discrimination 0.05): the ability barely moves the expected accuracy, the Bernoulli draws do."""
    n = 60
    bank = make_bank(np.linspace(-1.5, 1.5, n), np.full(n, 0.05), ["A"] * n, draws=400)
    y = np.zeros((1, n))
    w = np.zeros_like(y)
    y[0, :2], w[0, :2] = 1.0, 1.0
    scores = predict_from_arrays(bank, y, w, np.array(["few"]), seed=11)
    theta = scores.ability.values[0, :, 0]  # (S,)
    p = bank.probability(theta[:, None])[:, 0, :]  # (S, n)
    expected = (2.0 + p[:, 2:].sum(axis=1)) / n  # per draw: answered plus probabilities
    drawn = scores.accuracy.sel(subject="few", benchmark="A").values[0]
    lo, hi = np.quantile(drawn, [0.05, 0.95])
    e_lo, e_hi = np.quantile(expected, [0.05, 0.95])
    assert hi - lo > 2 * (e_hi - e_lo), f"interval {hi - lo:.3f}, expected accuracy alone {e_hi - e_lo:.3f}"
    # the extra spread is the Bernoulli spread: sd of drawn - expected = sqrt(sum p q) / n
    bern_sd = np.sqrt((p[:, 2:] * (1 - p[:, 2:])).sum(axis=1).mean()) / n
    assert np.std(drawn - expected) == pytest.approx(bern_sd, rel=0.15)
    assert abs(np.mean(drawn - expected)) < 4 * bern_sd / np.sqrt(400)
    # accuracy_mean is the posterior mean of the expected accuracy (up to the Monte Carlo error of the draws)
    mc = 4 * expected.std() / np.sqrt(len(expected)) + 1e-12
    assert float(scores.accuracy_expected.sel(subject="few", benchmark="A")) == pytest.approx(expected.mean(), abs=mc)


def test_a_fractional_bank_adds_no_bernoulli_spread_and_says_so():
    n = 30
    bank = make_bank(np.linspace(-1, 1, n), np.full(n, 0.2), ["A"] * n, draws=50, binary=False)
    new = responses([("frac", "q0", 0.5), ("frac", "q1", 0.25)])
    scores = predict_scores(bank, new, seed=2)
    theta = scores.ability.values[0, :, 0]
    p = bank.probability(theta[:, None])[:, 0, :]
    expected = (0.75 + p[:, 2:].sum(axis=1)) / n
    np.testing.assert_allclose(scores.accuracy.sel(subject="frac", benchmark="A").values[0], expected)
    assert any(w.startswith("FRACTIONAL") for w in scores.warnings)


def test_count_limits_the_scores_to_the_items_that_count():
    """A held-out system scored on the items it has: q3 does not count, so B is q2 alone."""
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=50)
    y = np.array([[1.0, 0.0, 0.0, 0.0]])
    w = np.array([[1.0, 0.0, 1.0, 0.0]])
    count = np.array([[1, 1, 1, 0]])
    scores = predict_from_arrays(bank, y, w, np.array(["held"]), count=count, seed=4)
    table = scores.table().set_index("benchmark")
    assert table["items_total"].tolist() == [2, 1, 3]
    assert table["items_seen"].tolist() == [1, 1, 2]
    assert table.loc["B", "accuracy_mean"] == 0.0
    assert table.loc["B", "accuracy_ci_low"] == table.loc["B", "accuracy_ci_high"] == 0.0
    # A: q0 answered right, q1 predicted; all: the same two plus q2
    theta = scores.ability.values[0, :, 0]
    p1 = bank.probability(theta[:, None])[:, 0, 1]
    mc = 4 * p1.std() / np.sqrt(len(p1)) + 1e-12  # Monte Carlo error of a mean over the draws
    assert table.loc["A", "accuracy_mean"] == pytest.approx(np.mean((1.0 + p1) / 2), abs=mc / 2)
    assert table.loc[ALL, "accuracy_mean"] == pytest.approx(np.mean((1.0 + p1) / 3), abs=mc / 3)
    draws = scores.accuracy.sel(subject="held", benchmark="A").values[0]
    assert set(np.unique(draws)) <= {0.5, 1.0}


def test_a_drawn_accuracy_is_a_count_over_a_count_so_an_interval_ending_at_the_truth_covers_it():
    """30 of 31 items answered (18 right), the 31st certain to be right at any ability: every draw is 19 / 31 to
    the bit, as the system's accuracy counted from its answers is (a sum of 19 weights 1 / 31 is 0.6129032258064515,
    one bit under), so the interval [19 / 31, 19 / 31] covers it, also once widened by a factor of 1."""
    n = 31
    bank = make_bank(np.r_[np.zeros(n - 1), -40.0], np.ones(n), ["A"] * n, draws=20)
    y = np.r_[np.ones(18), np.zeros(n - 19), 1.0][None, :]
    w = np.r_[np.ones(n - 1), 0.0][None, :]
    truth = (y @ np.ones(n)) / n  # the held-out system's accuracy, counted
    assert truth[0] == 19 / n
    for widen in (None, np.ones(2)):
        scores = predict_from_arrays(bank, y, w, np.array(["held"]), widen=widen, seed=1)
        draws = scores.accuracy.sel(subject="held").values[0]  # (draw, scope): A and all
        assert np.all(draws == 19 / n), np.unique(draws)
        table = scores.table()
        assert (table["accuracy_ci_low"] <= truth[0]).all() and (table["accuracy_ci_high"] >= truth[0]).all()


def test_a_scope_with_no_counted_item_has_no_score():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, draws=20)
    y = np.array([[1.0, 1.0, 0.0, 0.0]])
    w = np.array([[1.0, 1.0, 0.0, 0.0]])
    count = np.array([[1, 1, 0, 0]])
    table = predict_from_arrays(bank, y, w, np.array(["held"]), count=count, seed=0).table().set_index("benchmark")
    assert table.loc["B", "items_total"] == 0
    assert np.isnan(table.loc["B", "accuracy_mean"]), table.loc["B"].to_dict()
    assert np.isnan(table.loc["B", "accuracy_ci_low"]) and np.isnan(table.loc["B", "accuracy_ci_high"])


def test_target_weighted_score_equals_a_hand_computation():
    # bins [-2, 0) and [0, 2] with weights 1/4 and 3/4; q4 lies outside the range, q5 exactly on U (last bin)
    bank = make_bank([-1.5, -0.5, 0.5, 1.5, 5.0, 2.0], np.ones(6), ["A", "B", "A", "B", "B", "C"], draws=3)
    target = Target(edges=(-2.0, 0.0, 2.0), weights=(1.0, 3.0))
    answers = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    new = responses([("t", f"q{i}", y) for i, y in enumerate(answers)])
    scores = predict_scores(bank, new, target=target, seed=0)
    table = scores.table().set_index("benchmark")
    want = {
        "A": 0.25 * 1.0 + 0.75 * 1.0,  # q0 in bin 0, q2 in bin 1
        "B": 0.25 * 0.0 + 0.75 * 1.0,  # q1 in bin 0, q3 in bin 1; q4 outside carries no weight
        "C": 0.0,  # only bin 1 holds an item: its weight renormalised to 1
        ALL: 0.25 * (1.0 + 0.0) / 2 + 0.75 * (1.0 + 1.0 + 0.0) / 3,
    }
    for scope, value in want.items():
        assert table.loc[scope, "target_score_mean"] == pytest.approx(value), scope
        assert table.loc[scope, "target_score_ci_low"] == pytest.approx(value), scope
        assert table.loc[scope, "target_score_ci_high"] == pytest.approx(value), scope
    assert scores.to_dict()["target"]["weights"] == [0.25, 0.75]
    # the item outside the range changes nothing
    flipped = responses([("t", f"q{i}", 1.0 if i == 4 else y) for i, y in enumerate(answers)])
    again = predict_scores(bank, flipped, target=target, seed=0).table().set_index("benchmark")
    np.testing.assert_allclose(again["target_score_mean"], table["target_score_mean"])
    assert again.loc["B", "accuracy_mean"] == pytest.approx(table.loc["B", "accuracy_mean"] + 1 / 3)


def test_target_score_of_a_partial_answer_set_lies_between_its_bin_extremes():
    bank = make_bank([-1.5, -0.5, 0.5, 1.5], np.ones(4), ["A"] * 4, draws=50)
    target = Target(edges=(-2.0, 0.0, 2.0), weights=(1.0, 1.0))
    new = responses([("t", "q0", 1.0), ("t", "q1", 1.0)])  # bin 0 answered in full
    draws = predict_scores(bank, new, target=target, seed=1).target_score.sel(subject="t", benchmark="A").values
    # bin 0 accuracy is 1; bin 1 holds two unanswered items: 0, 1/2 or 1 in each draw
    assert set(np.unique(draws).round(12)) <= {0.5, 0.75, 1.0}


# ------------------------------------------------------------------------------------------------ refusals and warnings
def test_unknown_items_are_refused_by_name():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK)
    new = responses([("new", "q0", 1.0), ("new", "zz-unknown", 0.0), ("new", "yy-unknown", 1.0)])
    with pytest.raises(DataError, match=r"new\.csv: 2 item\(s\) are not in the fitted item bank") as err:
        predict_scores(bank, new)
    assert "zz-unknown" in str(err.value) and "yy-unknown" in str(err.value)


def test_subjects_of_the_bank_are_refused_unless_allowed_and_then_labelled():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK, fitted=("old-1", "old-2"))
    new = responses([("old-2", "q0", 1.0), ("fresh", "q1", 0.0)])
    with pytest.raises(DataError, match=r"1 subject\(s\) are already in the item bank: old-2") as err:
        predict_scores(bank, new)
    assert "allow_fitted=True" in str(err.value)
    scores = predict_scores(bank, new, allow_fitted=True)
    assert [w for w in scores.warnings if w.startswith("IN THE BANK")] == [
        "IN THE BANK: old-2 were among the fitted systems; their intervals are too narrow."
    ]
    assert scores.to_text().startswith("IN THE BANK")


def test_responses_must_be_response_data():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK)
    with pytest.raises(DataError, match="expected ResponseData"):
        predict_scores(bank, pd.DataFrame({"subject": ["a"], "item": ["q0"], "response": [1.0]}))


def test_a_target_other_than_a_target_object_needs_a_fit():
    bank = make_bank(DIFFICULTY, DISCRIMINATION, BENCHMARK)
    with pytest.raises(SpecError, match="give the target as a Target"):
        predict_scores(bank, responses([("new", "q0", 1.0)]), target="uniform")


@pytest.fixture(scope="module")
def small_fit() -> tuple[Fit, ResponseData]:
    return simulated_fit(30, 20, n_benchmarks=2)


def test_an_approximate_fit_is_labelled_in_every_output(small_fit):
    fit, data = small_fit
    approx = dataclasses.replace(fit, sampler={**fit.sampler, "name": "approx", "approximate": True})
    new = responses([("new-a", str(data.item_ids[0]), 1.0), ("new-a", str(data.item_ids[5]), 0.0)])
    scores = predict_scores(approx, new, n_draws=20, seed=0)
    opening = scores.warnings[0]
    assert opening.startswith("APPROXIMATE: the item bank comes from an approximate fit (approx)")
    assert scores.to_text().startswith(opening + "\n")
    assert scores.to_dict()["warnings"][0] == opening
    assert scores.table().attrs["warnings"][0] == opening
    # the same responses on the (not approximate) fit carry no such warning
    plain = predict_scores(fit, new, n_draws=20, seed=0)
    assert not any(w.startswith("APPROXIMATE") for w in plain.warnings)


def test_a_string_target_is_resolved_from_the_fit(small_fit):
    fit, data = small_fit
    new = responses([("new-a", str(data.item_ids[0]), 1.0)])
    scores = predict_scores(fit, new, target="uniform", bins=4, n_draws=20, seed=0)
    assert scores.target is not None and scores.target.n_bins == 4
    assert {"target_score_mean", "target_score_ci_low", "target_score_ci_high"} <= set(scores.table().columns)


def test_a_multidimensional_fit_is_refused(small_fit):
    fit, data = small_fit
    post = fit.posterior
    ability = xr.concat([post["ability"], post["ability"]], dim="dim").transpose("chain", "draw", "subject", "dim")
    two_dim = Fit.from_posterior(post.assign(ability=ability), data)
    with pytest.raises(SpecError, match="several ability dimensions"):
        ItemBank.from_fit(two_dim)
    with pytest.raises(SpecError, match="several ability dimensions"):
        predict_scores(two_dim, responses([("new", str(data.item_ids[0]), 1.0)]))


def test_bank_settings_are_checked(small_fit):
    fit, _ = small_fit
    with pytest.raises(SpecError, match="prior must be one of normal, population"):
        ItemBank.from_fit(fit, prior="uniform")
    with pytest.raises(SpecError, match="n_draws must be at least 1"):
        ItemBank.from_fit(fit, n_draws=0)
    with pytest.raises(SpecError, match="increasing 1-d array"):
        ItemBank.from_fit(fit, grid=np.array([0.0, 1.0, 0.5]))
    bank = ItemBank.from_fit(fit, n_draws=30)
    assert bank.difficulty.shape == bank.discrimination.shape == (30, 20)
    assert bank.benchmarks == ["bench00", "bench01"]
    assert bank.fitted_subjects.equals(fit.subject_ids)


def test_population_prior_follows_a_bimodal_population():
    data, truth = simulate_responses(200, 20, missing=0.0, seed=4)
    side = np.where(np.arange(200) % 2 == 0, -2.0, 2.0)
    truth = truth.assign(ability=("subject", side + 0.3 * np.random.default_rng(4).standard_normal(200)))
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=50, seed=5), data)
    bank = ItemBank.from_fit(fit, n_draws=10, prior="population")
    density = np.exp(bank.log_prior)
    grid = bank.grid
    peaks = grid[1:-1][(density[1:-1] > density[:-2]) & (density[1:-1] >= density[2:]) & (density[1:-1] > 0.1)]
    assert len(peaks) == 2, f"modes at {peaks}"
    assert peaks[0] == pytest.approx(-2.0, abs=0.4) and peaks[1] == pytest.approx(2.0, abs=0.4), peaks
    at_zero = density[np.argmin(np.abs(grid))]
    assert at_zero < 0.5 * density.max(), f"density at 0 is {at_zero:.3f} of a peak {density.max():.3f}"
    # the normal prior has one mode at 0
    normal = ItemBank.from_fit(fit, n_draws=10).log_prior
    assert grid[np.argmax(normal)] == pytest.approx(0.0)


def test_population_prior_moves_a_system_with_one_answer_towards_its_mode():
    data, truth = simulate_responses(200, 20, missing=0.0, seed=4)
    truth = truth.assign(ability=("subject", np.where(np.arange(200) % 2 == 0, -2.0, 2.0)))
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=1, draws=50, seed=5), data)
    bank = ItemBank.from_fit(fit, n_draws=50, prior="population")
    y = np.zeros((1, bank.n_items))
    w = np.zeros_like(y)
    y[0, 0], w[0, 0] = 1.0, 1.0
    theta = predict_from_arrays(bank, y, w, np.array(["one"]), seed=0).ability.values.ravel()
    # the ability posterior sits in the two modes, hardly ever near 0
    assert np.mean(np.abs(theta) < 0.7) < 0.1, f"{np.mean(np.abs(theta) < 0.7):.2f} of draws near 0"


# ------------------------------------------------------------------------------------------------ calibration (seeded)
def test_intervals_from_ten_selected_items_per_benchmark_cover_the_full_benchmark_accuracy():
    """200 systems x 2 benchmarks x 100 items; a bank near the truth from 150 of them scores the other 50."""
    data, truth = simulate_responses(200, 200, n_benchmarks=2, missing=0.0, seed=21)
    old = data.subject_ids[:150].tolist()
    new = data.subject_ids[150:].tolist()
    old_data = data.subset(subjects=old)
    posterior = posterior_near_truth(old_data, truth.sel(subject=old), chains=2, draws=100, seed=22)
    bank = ItemBank.from_fit(Fit.from_posterior(posterior, old_data), n_draws=200)
    chosen = select_items(bank, per_benchmark=10)
    assert chosen.precision["items_selected"].tolist() == [10, 10]

    answered = data.subset(subjects=new, items=chosen.item_ids)
    table = predict_scores(bank, answered, seed=23).table(0.9)
    table = table[table["benchmark"] != ALL].set_index(["subject", "benchmark"])

    full = data.subset(subjects=new).long_frame()
    full["benchmark"] = full["item"].map(data.items["benchmark"])
    truth_acc = full.groupby(["subject", "benchmark"])["response"].mean()
    truth_acc = truth_acc.reindex(table.index)
    covered = ((table["accuracy_ci_low"] <= truth_acc) & (truth_acc <= table["accuracy_ci_high"])).mean()
    mae_model = (table["accuracy_mean"] - truth_acc).abs().mean()
    mae_plain = (table["observed_accuracy"] - truth_acc).abs().mean()
    assert 0.75 <= covered <= 0.99, f"90% intervals cover {covered:.2%} of {len(table)} (system, benchmark) pairs"
    assert mae_model < mae_plain, f"mean absolute error {mae_model:.4f}, plain mean of the 10 items {mae_plain:.4f}"
    assert (table["items_seen"] == 10).all() and (table["items_total"] == 100).all()


def test_a_system_beyond_the_banks_systems_is_said_to_be_extrapolated():
    """A system answering every item correctly lies above every fitted system: its scores carry BEYOND THE
    BANK; one in the middle does not."""
    import pandas as pd

    from irtbayes.data.responses import ResponseData
    from irtbayes.evaluating.prediction import predict_scores
    from irtbayes.examples import simulated_fit

    fit, data = simulated_fit(60, 40, n_benchmarks=2)
    items = list(data.item_ids)
    frame = pd.DataFrame(
        {"subject": ["strong"] * 40 + ["mid"] * 40, "item": items * 2, "response": [1.0] * 40 + [1.0, 0.0] * 20}
    )
    scores = predict_scores(fit, ResponseData.from_long(frame, items=data.items), n_draws=50, seed=1, data=False)
    beyond = [w for w in scores.warnings if w.startswith("BEYOND THE BANK")]
    assert len(beyond) == 1 and beyond[0].startswith("BEYOND THE BANK: strong is above"), scores.warnings
