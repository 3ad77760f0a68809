"""Adaptive tests: the expected-variance and information criteria against hand computations on tiny banks,
the exact posterior update, stopping rules, exposure control, and seeded tests of simulated systems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from irtbayes.auditing.targets import Target
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.simulate import posterior_near_truth, simulate_responses
from irtbayes.evaluating.adaptive import AdaptiveTest, Exposure, run_adaptive
from irtbayes.evaluating.bank import ItemBank
from irtbayes.fitting.result import Fit

GRID = np.linspace(-4.0, 4.0, 33)


# ------------------------------------------------------------------------------------------------ helpers
def make_bank(difficulty, discrimination, benchmark, *, guessing=None, binary=True, warnings=()) -> ItemBank:
    """A bank on the coarse grid GRID; 1-d parameters give one draw, 2-d ones (S, N) give S draws."""
    b = np.atleast_2d(np.asarray(difficulty, dtype="float64"))
    a = np.atleast_2d(np.asarray(discrimination, dtype="float64"))
    return ItemBank(
        items=pd.Index([f"q{i}" for i in range(b.shape[1])]),
        benchmark=np.asarray(benchmark, dtype=str),
        difficulty=b,
        discrimination=a,
        guessing=None if guessing is None else np.atleast_2d(np.asarray(guessing, dtype="float64")),
        population=np.linspace(-2.0, 2.0, 9),
        log_prior=-0.5 * GRID**2,
        grid=GRID,
        binary=binary,
        warnings=tuple(warnings),
        source="hand-built",
        fitted_subjects=pd.Index(["old"]),
    )


def curves(bank: ItemBank, draw: int = 0) -> np.ndarray:
    """(G, N) P(correct) of draw ``draw`` on the bank's grid, written out here."""
    a, b = bank.discrimination[draw], bank.difficulty[draw]
    p = 1.0 / (1.0 + np.exp(-a[None, :] * (bank.grid[:, None] - b[None, :])))
    if bank.guessing is not None:
        c = bank.guessing[draw]
        p = c[None, :] + (1 - c[None, :]) * p
    return p


def hand_posterior(bank: ItemBank, answers: dict[int, float], draw: int = 0) -> np.ndarray:
    """Cell probabilities of the grid posterior of one draw: prior times the product of the likelihoods."""
    p = curves(bank, draw)
    density = np.exp(bank.log_prior)
    for col, y in answers.items():
        density = density * p[:, col] ** y * (1 - p[:, col]) ** (1 - y)
    return density / density.sum()


def hand_variance(pi: np.ndarray, p: np.ndarray, weights: np.ndarray, rest: list[int]) -> float:
    """Sum over scores of Var_pi(sum_rest v P) + E_pi(sum_rest v^2 P (1 - P)) (the module docstring's formula)."""
    total = 0.0
    for m in range(weights.shape[1]):
        t = sum((weights[j, m] * p[:, j] for j in rest), np.zeros(len(pi)))
        bern = sum((weights[j, m] ** 2 * p[:, j] * (1 - p[:, j]) for j in rest), np.zeros(len(pi)))
        total += pi @ t**2 - (pi @ t) ** 2 + pi @ bern
    return float(total)


def brute_expected_variance(bank: ItemBank, weights: np.ndarray, answers: dict[int, float]) -> np.ndarray:
    """For each unanswered item: both outcomes, each posterior updated by hand, weighted by its probability."""
    p = curves(bank)
    pi = hand_posterior(bank, answers)
    unseen = [j for j in range(bank.n_items) if j not in answers]
    out = np.full(bank.n_items, np.nan)
    for i in unseen:
        rest = [j for j in unseen if j != i]
        total = 0.0
        for like in (p[:, i], 1 - p[:, i]):
            prob_y = float(pi @ like)
            total += prob_y * hand_variance(pi * like / prob_y, p, weights, rest)
        out[i] = total
    return out


# a tiny bank: 4 items in 2 benchmarks, one posterior draw
TINY = dict(difficulty=[-1.0, 0.5, 0.0, 1.5], discrimination=[1.2, 0.7, 2.0, 1.0], benchmark=["A", "A", "B", "B"])
SCORES = {
    "benchmarks": np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 0.5], [0.0, 0.5]]),
    "all": np.full((4, 1), 0.25),
    "B": np.array([[0.0], [0.0], [0.5], [0.5]]),
}


# ------------------------------------------------------------------------------------------------ the criteria
@pytest.mark.parametrize("score", list(SCORES))
def test_expected_variance_equals_a_brute_force_computation(score):
    bank = make_bank(**TINY)
    test = AdaptiveTest(bank, score=score)
    np.testing.assert_allclose(test.weights, SCORES[score])
    np.testing.assert_allclose(test.criteria(), brute_expected_variance(bank, SCORES[score], {}), rtol=1e-10)
    test.answer("q2", 1.0)
    test.answer("q0", 0.0)
    got = test.criteria()
    want = brute_expected_variance(bank, SCORES[score], {2: 1.0, 0: 0.0})
    assert np.isnan(got[[0, 2]]).all()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)
    # the item chosen is the one with the smallest expected variance
    assert test.next_item() == f"q{int(np.nanargmin(want))}"


def test_score_moments_and_the_log_follow_the_formula_by_hand():
    bank = make_bank(**TINY)
    test = AdaptiveTest(bank)
    test.answer("q1", 1.0)
    pi = hand_posterior(bank, {1: 1.0})
    np.testing.assert_allclose(test.posterior(), pi, rtol=1e-12)
    p = curves(bank)
    mean, var = test.score_moments()
    np.testing.assert_allclose(mean, [0.5 + 0.5 * pi @ p[:, 0], 0.5 * pi @ (p[:, 2] + p[:, 3])], rtol=1e-12)
    w = SCORES["benchmarks"]
    want_var = [hand_variance(pi, p, w[:, [0]], [0, 2, 3]), hand_variance(pi, p, w[:, [1]], [0, 2, 3])]
    np.testing.assert_allclose(var, want_var, rtol=1e-10)
    row = test.result("me").log.iloc[0]
    # two scores: the headline is the bank's overall accuracy
    overall = np.full((4, 1), 0.25)
    assert row["score_mean"] == pytest.approx(0.25 + pi @ (p[:, [0, 2, 3]] @ overall[[0, 2, 3]]).ravel())
    assert row["score_sd"] == pytest.approx(np.sqrt(hand_variance(pi, p, overall, [0, 2, 3])))
    assert row["max_score_sd"] == pytest.approx(np.sqrt(max(want_var)))
    assert row["ability_mean"] == pytest.approx(pi @ GRID)
    assert row["ability_sd"] == pytest.approx(np.sqrt(pi @ GRID**2 - (pi @ GRID) ** 2))
    assert row["score_ci_high"] - row["score_mean"] == pytest.approx(1.6448536 * row["score_sd"], rel=1e-6)
    assert (row["step"], row["item"], row["benchmark"], row["response"]) == (1, "q1", "A", 1.0)
    assert np.isnan(row["criterion"])  # answered without asking next_item


def test_information_criterion_picks_the_largest_a2pq_at_the_posterior_mean():
    bank = make_bank([-2.0, -0.5, 0.0, 0.8, 2.0], [1.0, 1.5, 0.6, 2.5, 3.0], ["A"] * 5)
    test = AdaptiveTest(bank, criterion="information")
    test.answer("q0", 1.0)
    test.answer("q2", 1.0)
    pi = hand_posterior(bank, {0: 1.0, 2: 1.0})
    g = int(np.argmin(np.abs(GRID - pi @ GRID)))
    a, p = bank.discrimination[0], curves(bank)[g]
    info = a**2 * p * (1 - p)
    info[[0, 2]] = np.nan
    np.testing.assert_allclose(test.criteria(), info, rtol=1e-10)
    assert test.next_item() == f"q{int(np.nanargmax(info))}"


def test_the_shortlist_holds_the_most_informative_items_with_their_exact_criterion():
    n = 50
    rng = np.random.default_rng(8)
    bank = make_bank(rng.uniform(-2.5, 2.5, n), rng.uniform(0.3, 2.5, n), ["A"] * n)
    full = AdaptiveTest(bank)
    short = AdaptiveTest(bank, shortlist=1)  # at least 20 of the score's items
    for test in (full, short):
        test.answer("q0", 1.0)
        test.answer("q1", 0.0)
    every, some = full.criteria(), short.criteria()
    assert np.isfinite(every).sum() == n - 2 and np.isfinite(some).sum() == 20
    kept = np.isfinite(some)
    np.testing.assert_allclose(some[kept], every[kept], rtol=1e-12)
    pi = hand_posterior(bank, {0: 1.0, 1: 0.0})
    p = curves(bank)
    info = pi @ (bank.discrimination[0] ** 2 * p * (1 - p))
    info[[0, 1]] = -np.inf
    assert set(np.flatnonzero(kept)) == set(np.argsort(-info)[:20])
    with pytest.raises(SpecError, match="shortlist must be at least 1"):
        AdaptiveTest(bank, shortlist=0)


def test_the_shortlist_keeps_each_scores_own_items_under_a_target():
    n = 30
    # A and B: 30 flat items inside [-1, 1] each; B also 40 steep items just outside the range
    difficulty = np.concatenate([np.linspace(-0.9, 0.9, n), np.linspace(-0.9, 0.9, n), np.linspace(1.2, 1.6, 40)])
    discrimination = np.concatenate([np.full(2 * n, 0.5), np.full(40, 3.0)])
    bank = make_bank(difficulty, discrimination, ["A"] * n + ["B"] * (n + 40))
    target = Target(edges=(-1.0, 0.0, 1.0), weights=(1.0, 1.0))
    kept = np.isfinite(AdaptiveTest(bank, score="target", target=target, shortlist=40).criteria())
    assert kept[:n].sum() >= 20, f"A's own items on the shortlist: {kept[:n].sum()}, B's: {kept[n : 2 * n].sum()}"


def test_answer_updates_each_draws_posterior_exactly():
    """Two draws of a 3PL bank: the marginal posterior is the mean of the per-draw posteriors."""
    b = np.array([[-1.0, 0.0, 1.0], [-0.8, 0.3, 1.4]])
    a = np.array([[1.0, 2.0, 0.5], [1.3, 1.6, 0.9]])
    c = np.array([[0.2, 0.0, 0.25], [0.1, 0.05, 0.3]])
    bank = make_bank(b, a, ["A"] * 3, guessing=c)
    test = AdaptiveTest(bank)
    np.testing.assert_allclose(test.posterior(), np.exp(bank.log_prior) / np.exp(bank.log_prior).sum())
    answers = {1: 0.0, 0: 1.0, 2: 1.0}
    done: dict[int, float] = {}
    for col, y in answers.items():
        test.answer(f"q{col}", y)
        done[col] = y
        want = (hand_posterior(bank, done, 0) + hand_posterior(bank, done, 1)) / 2
        np.testing.assert_allclose(test.posterior(), want, rtol=1e-10, atol=1e-15)
    assert test.n_answered == 3
    assert [r["item"] for r in test.rows] == ["q1", "q0", "q2"]


def test_answers_are_checked():
    test = AdaptiveTest(make_bank(**TINY))
    test.answer("q0", 1)
    with pytest.raises(DataError, match="item 'q0' was already answered"):
        test.answer("q0", 1.0)
    with pytest.raises(DataError, match="item 'zz' is not in the bank"):
        test.answer("zz", 1.0)
    with pytest.raises(DataError, match=r"the response to 'q1' is 0\.5; it must be 0 or 1"):
        test.answer("q1", 0.5)
    with pytest.raises(DataError, match="it must be 0 or 1"):
        test.answer("q1", float("nan"))
    with pytest.raises(DataError, match="is 'yes', not a number"):
        test.answer("q1", "yes")
    assert test.n_answered == 1  # nothing refused was recorded
    fractional = AdaptiveTest(make_bank(**TINY, binary=False))
    fractional.answer("q1", 0.5)
    with pytest.raises(DataError, match=r"must be in \[0, 1\]"):
        fractional.answer("q2", 1.5)


def test_settings_are_checked():
    bank = make_bank(**TINY)
    with pytest.raises(SpecError, match="criterion must be one of variance, information"):
        AdaptiveTest(bank, criterion="entropy")
    with pytest.raises(SpecError, match="need max_items >= 1"):
        AdaptiveTest(bank, max_items=0)
    with pytest.raises(SpecError, match="se must be positive"):
        AdaptiveTest(bank, se=0.0)
    with pytest.raises(SpecError, match="items not in the bank: zz"):
        AdaptiveTest(bank, items=["q0", "zz"])
    with pytest.raises(SpecError, match="score='target' needs target="):
        AdaptiveTest(bank, score="target")
    with pytest.raises(SpecError, match="got 'C'"):
        AdaptiveTest(bank, score="C")
    with pytest.raises(SpecError, match="max_rate must be in"):
        Exposure(max_rate=0.0)
    with pytest.raises(SpecError, match="randomesque must be at least 1"):
        Exposure(randomesque=0)


# ------------------------------------------------------------------------------------------------ stopping
def alternate(item: str) -> float:
    return float(int(item[1:]) % 2)


@pytest.fixture(scope="module")
def line_bank() -> ItemBank:
    n = 30
    return make_bank(np.linspace(-2.5, 2.5, n), np.full(n, 1.5), ["A"] * 15 + ["B"] * 15)


def test_stops_at_max_items(line_bank):
    result = AdaptiveTest(line_bank, max_items=5).run(alternate, subject="s")
    assert len(result.log) == 5 and result.stop_reason == "the budget of 5 items was reached"
    assert result.log["step"].tolist() == [1, 2, 3, 4, 5]
    assert result.log["criterion"].notna().all()
    assert len(set(result.items)) == 5
    assert result.scores.items_seen.sel(subject="s", benchmark="all").item() == 5


def test_a_tiny_se_never_stops_before_max_items(line_bank):
    result = AdaptiveTest(line_bank, max_items=8, se=1e-6).run(alternate)
    assert len(result.log) == 8 and result.stop_reason.startswith("the budget")


def test_a_large_se_stops_after_min_items(line_bank):
    result = AdaptiveTest(line_bank, se=10.0, min_items=3).run(alternate)
    assert len(result.log) == 3 and result.stop_reason == "every score's posterior sd is at most 10"
    none = AdaptiveTest(line_bank, se=10.0, min_items=0).run(alternate, subject="blank")
    assert len(none.log) == 0 and none.stop_reason.startswith("every score's")
    assert none.scores.items_seen.values.sum() == 0


def test_the_se_rule_stops_at_the_first_answer_that_reaches_it(line_bank):
    se = 0.1
    result = AdaptiveTest(line_bank, se=se, max_items=30).run(alternate)
    sd = result.log["max_score_sd"].to_numpy()
    assert 2 <= len(sd) < 30, sd
    assert sd[-1] <= se < sd[-2], sd


def test_items_restricts_the_test_and_it_stops_when_none_is_left(line_bank):
    allowed = ["q3", "q10", "q20"]
    result = AdaptiveTest(line_bank, items=allowed, max_items=10).run(alternate)
    assert sorted(result.items) == sorted(allowed)
    assert result.stop_reason == "no item left to give"
    # the scores still cover every item of the bank
    assert result.scores.items_total.sel(benchmark="all").item() == 30


def test_result_outputs_carry_the_bank_warnings_once():
    bank = make_bank(**TINY, warnings=("UNCONVERGED: hand-built.",))
    result = run_adaptive(bank, alternate, subject="w", max_items=2)
    text = result.to_text()
    assert text.startswith("UNCONVERGED: hand-built.\nAdaptive test of w: 2 items; stopped: the budget of 2")
    assert text.count("UNCONVERGED") == 1
    d = result.to_dict()
    assert d["warnings"] == ["UNCONVERGED: hand-built."] and d["scores"]["warnings"] == d["warnings"]
    assert [r["item"] for r in d["log"]] == result.items
    assert result.summary()["subject"].unique().tolist() == ["w"]


# ------------------------------------------------------------------------------------------------ exposure
def test_exposure_blocks_items_used_in_more_than_max_rate_of_earlier_tests(line_bank):
    exposure = Exposure(max_rate=0.5)
    assert not exposure.blocked(["q0", "q1"]).any()  # no test yet
    first = AdaptiveTest(line_bank, max_items=4, exposure=exposure).run(alternate)
    assert exposure.n_tests == 1 and set(exposure.counts) == set(first.items)
    # every item of the first test now has rate 1 > 0.5: the second test avoids all of them
    second = AdaptiveTest(line_bank, max_items=4, exposure=exposure).run(alternate)
    assert not set(first.items) & set(second.items)
    assert exposure.n_tests == 2
    # now every used item has rate 1/2, not more than 0.5: the third test is the first one again
    assert not exposure.blocked(line_bank.items.tolist()).any()
    third = AdaptiveTest(line_bank, max_items=4, exposure=exposure).run(alternate)
    assert third.items == first.items
    assert exposure.n_tests == 3 and exposure.rates()[first.items[0]] == pytest.approx(2 / 3)


def test_exposure_rates_and_blocked_by_hand():
    exposure = Exposure(max_rate=0.5)
    exposure.record(["q0", "q1"])
    exposure.record(["q0", "q0"])  # an item counts once per test
    assert exposure.rates() == {"q0": 1.0, "q1": 0.5}
    assert exposure.blocked(["q0", "q1", "q2"]).tolist() == [True, False, False]
    test = AdaptiveTest(make_bank(**TINY), exposure=exposure)
    assert np.isnan(test.criteria()[0]) and np.isfinite(test.criteria()[1:]).all()


def test_exposure_save_and_load_round_trip(tmp_path):
    exposure = Exposure(max_rate=0.3, randomesque=4)
    exposure.record(["a", "b"])
    exposure.record(["b"])
    path = exposure.save(tmp_path / "exposure.json")
    loaded = Exposure.load(path)
    assert (loaded.max_rate, loaded.randomesque, loaded.n_tests, loaded.counts) == (0.3, 4, 2, {"a": 1, "b": 2})


@pytest.mark.parametrize(
    "content",
    [
        '{"counts": {"a": 1',
        "[1, 2]",
        '{"counts": {"a": "many"}, "n_tests": 1}',
        '{"n_tests": "two"}',
        '{"max_rate": 2.0, "counts": {}}',
        '{"randomesque": 0}',
    ],
)
def test_a_corrupt_exposure_file_is_refused_naming_the_file(tmp_path, content):
    path = tmp_path / "broken-exposure.json"
    path.write_text(content)
    with pytest.raises(DataError, match=r"broken-exposure\.json"):
        Exposure.load(path)


def test_randomesque_spreads_the_first_item_over_the_best_few(line_bank):
    best = AdaptiveTest(line_bank).criteria()
    top3 = {f"q{i}" for i in np.argsort(best)[:3]}
    firsts = [AdaptiveTest(line_bank, exposure=Exposure(randomesque=3), seed=s).next_item() for s in range(12)]
    assert set(firsts) <= top3
    assert len(set(firsts)) >= 2, firsts
    again = [AdaptiveTest(line_bank, exposure=Exposure(randomesque=3), seed=s).next_item() for s in range(12)]
    assert again == firsts
    plain = {AdaptiveTest(line_bank, seed=s).next_item() for s in range(5)}
    assert plain == {f"q{int(np.argmin(best))}"}


# ------------------------------------------------------------------------------------------------ simulated systems (seeded)
@pytest.fixture(scope="module")
def simulated_bank() -> tuple[ItemBank, np.ndarray, np.ndarray]:
    """A bank near a simulation's truth (150 systems, 120 items, 2 benchmarks) and the true item parameters."""
    data, truth = simulate_responses(150, 120, n_benchmarks=2, missing=0.0, seed=31)
    fit = Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=50, seed=32), data)
    bank = ItemBank.from_fit(fit, n_draws=100)
    return bank, truth["difficulty"].values, truth["discrimination"].values


def bernoulli_responder(bank: ItemBank, b: np.ndarray, a: np.ndarray, theta: float, seed: int):
    rng = np.random.default_rng(seed)

    def respond(item: str) -> float:
        col = int(bank.columns([item])[0])
        return float(rng.random() < 1.0 / (1.0 + np.exp(-a[col] * (theta - b[col]))))

    return respond


def test_an_adaptive_test_recovers_a_known_ability(simulated_bank):
    bank, b, a = simulated_bank
    for k, theta in enumerate([-1.5, 0.0, 1.2]):
        result = AdaptiveTest(bank, max_items=20, seed=k).run(bernoulli_responder(bank, b, a, theta, seed=40 + k))
        draws = result.scores.ability.values.ravel()
        lo, hi = np.quantile(draws, [0.025, 0.975])
        assert lo <= theta <= hi, f"true ability {theta}: 95% interval [{lo:.2f}, {hi:.2f}] after 20 items"
        assert hi - lo < 2.0, f"interval [{lo:.2f}, {hi:.2f}] hardly narrower than the prior's"


def test_adaptive_items_give_smaller_score_sd_than_random_ones(simulated_bank):
    bank, b, a = simulated_bank
    n_items, wins, lines = 15, 0, []
    abilities = np.random.default_rng(50).standard_normal(5)
    for k, theta in enumerate(abilities):
        adaptive = AdaptiveTest(bank, max_items=n_items, seed=k).run(bernoulli_responder(bank, b, a, theta, 60 + k))
        chance = AdaptiveTest(bank, max_items=n_items)
        respond = bernoulli_responder(bank, b, a, theta, 60 + k)
        for item in np.random.default_rng(70 + k).choice(bank.items.to_numpy(), n_items, replace=False):
            chance.answer(str(item), respond(str(item)))
        sd_adaptive = adaptive.log["max_score_sd"].iloc[-1]
        sd_random = chance.result().log["max_score_sd"].iloc[-1]
        wins += sd_adaptive < sd_random
        lines.append(f"ability {theta:+.2f}: adaptive {sd_adaptive:.4f}, random {sd_random:.4f}")
    assert wins >= 4, "; ".join(lines)
