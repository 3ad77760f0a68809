"""Subset selection: budgets, the greedy posterior criterion on hand-built populations, anchors, random
selection and target-weighted scores."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from irtbayes.auditing.targets import Target
from irtbayes.core.errors import SpecError
from irtbayes.evaluating.bank import DEFAULT_GRID, ItemBank
from irtbayes.evaluating.selection import (
    allocate,
    anchor_items,
    expected_errors,
    greedy_items,
    score_weights,
    select_items,
)
from irtbayes.examples import simulated_fit


# ------------------------------------------------------------------------------------------------ helpers
def make_bank(difficulty, discrimination, benchmark, *, population=None, warnings=()) -> ItemBank:
    """A 2PL bank of one posterior draw."""
    b = np.asarray(difficulty, dtype="float64")[None, :]
    a = np.asarray(discrimination, dtype="float64")[None, :]
    return ItemBank(
        items=pd.Index([f"q{i}" for i in range(b.shape[1])]),
        benchmark=np.asarray(benchmark, dtype=str),
        difficulty=b,
        discrimination=a,
        guessing=None,
        population=np.linspace(-2.0, 2.0, 9) if population is None else np.asarray(population, dtype="float64"),
        log_prior=-0.5 * DEFAULT_GRID**2,
        grid=DEFAULT_GRID,
        binary=True,
        warnings=tuple(warnings),
        source="hand-built",
        fitted_subjects=pd.Index(["old"]),
    )


@pytest.fixture(scope="module")
def bank3() -> ItemBank:
    """A bank near a simulation's truth: 100 systems, 120 items in 3 benchmarks of 40."""
    fit, _ = simulated_fit(100, 120, n_benchmarks=3, seed=7)
    return ItemBank.from_fit(fit, n_draws=100)


# ------------------------------------------------------------------------------------------------ allocate
@pytest.mark.parametrize(
    ("sizes", "total", "want"),
    [
        ([100, 50, 10], 16, [10, 5, 1]),
        ([10, 10], 6, [3, 3]),
        ([1, 100], 10, [1, 9]),  # a group of one never takes more than it holds
        ([3, 4], 50, [3, 4]),  # more asked for than held: everything
        ([5, 5, 5], 3, [1, 1, 1]),
        ([0, 5], 3, [0, 3]),  # an empty group takes nothing
        ([30, 10], 4, [3, 1]),
    ],
)
def test_allocate(sizes, total, want):
    got = allocate(sizes, total)
    assert got.tolist() == want
    assert got.sum() == min(total, sum(sizes))
    assert (got <= np.asarray(sizes)).all()


# ------------------------------------------------------------------------------------------------ the criterion
def test_score_weights_accuracy_and_target():
    bank = make_bank([-1.5, -0.5, 0.5, 1.5, 5.0, 1.0], np.ones(6), ["A", "A", "A", "B", "B", "C"])
    names, weights = score_weights(bank)
    assert names == ["A", "B", "C"]
    np.testing.assert_allclose(weights[:, 0], [1 / 3, 1 / 3, 1 / 3, 0, 0, 0])
    np.testing.assert_allclose(weights[:, 1], [0, 0, 0, 0.5, 0.5, 0])
    np.testing.assert_allclose(weights[:, 2], [0, 0, 0, 0, 0, 1])
    target = Target(edges=(-2.0, 0.0, 2.0), weights=(1.0, 3.0))
    _, tw = score_weights(bank, target)
    # A: bin 0 holds q0 and q1 (1/4 shared), bin 1 holds q2 (3/4)
    np.testing.assert_allclose(tw[:, 0], [0.125, 0.125, 0.75, 0, 0, 0])
    # B: q4 lies outside the range (no weight); bin 0 is empty, so bin 1's weight is renormalised to 1
    np.testing.assert_allclose(tw[:, 1], [0, 0, 0, 1, 0, 0])
    np.testing.assert_allclose(tw[:, 2], [0, 0, 0, 0, 0, 1])


def test_expected_errors_matches_the_module_formula_by_hand():
    p = np.array([[0.3, 0.6, 0.8], [0.5, 0.5, 0.9]])
    d = np.array([[0.2, 0.4, 0.1], [0.25, 0.3, 0.05]])
    w = np.array([[0.5, 0.0], [0.5, 0.0], [0.0, 1.0]])
    chosen = np.array([True, False, False])
    info0 = d[:, 0] ** 2 / (p[:, 0] * (1 - p[:, 0]))
    mse_a = (0.5 * d[:, 1]) ** 2 / (1 + info0) + 0.25 * p[:, 1] * (1 - p[:, 1])
    mse_b = d[:, 2] ** 2 / (1 + info0) + p[:, 2] * (1 - p[:, 2])
    np.testing.assert_allclose(expected_errors(p, d, w, chosen), [np.sqrt(mse_a.mean()), np.sqrt(mse_b.mean())])


def test_greedy_items_follows_the_criterion_step_by_step():
    """Each greedy step adds the item that lowers the summed expected squared error (expected_errors) most."""
    rng = np.random.default_rng(3)
    n, t = 12, 5
    p = rng.uniform(0.1, 0.9, (t, n))
    d = rng.uniform(0.05, 0.4, (t, n)) * p * (1 - p) * 4
    group = np.repeat([0, 1, 2], 4)
    w = np.zeros((n, 3))
    w[np.arange(n), group] = 0.25
    order = greedy_items(p, d, w, np.array([2, 2, 2]), 6)
    assert len(order) == 6 and np.bincount(group[order], minlength=3).tolist() == [2, 2, 2]
    chosen = np.zeros(n, dtype=bool)
    taken = np.zeros(3, dtype=int)
    for pick in order:
        best, best_value = -1, np.inf
        for i in np.flatnonzero(~chosen & (taken[group] < 2)):
            trial = chosen.copy()
            trial[i] = True
            value = (expected_errors(p, d, w, trial) ** 2).sum()
            if value < best_value - 1e-15:
                best, best_value = i, value
        assert pick == best
        chosen[pick] = True
        taken[group[pick]] += 1


def _greedy_with_deviations_by_hand(p, d, w, quota, total, tau):
    """The criterion of greedy_items with deviations, item by item as its docstring writes it."""
    group = np.argmax(w != 0, axis=1)
    pq = p * (1 - p)
    info = np.divide(d**2, pq, out=np.zeros_like(pq), where=pq > 0)
    v = w[np.arange(len(group)), group]
    a = d @ w
    chosen_info = np.zeros_like(a)
    taken, free, order = np.zeros(w.shape[1], dtype=int), np.ones(len(group), dtype=bool), []
    for step in range(total):
        best, best_value = -1, np.inf
        for i in range(len(group)):
            m = group[i]
            if not free[i] or (quota is not None and taken[m] >= quota[m]):
                continue
            if quota is None and total - step <= (taken == 0).sum() and taken[m] > 0:
                continue
            other = chosen_info.sum(axis=1) - chosen_info[:, m]
            u = tau[m] ** 2 + 1 / (1 + other)
            var_m = u / (1 + chosen_info[:, m] * u)
            new_var = u / (1 + (chosen_info[:, m] + info[:, i]) * u)
            others = chosen_info.sum(axis=1, keepdims=True) - chosen_info
            u_all = tau[None, :] ** 2 + 1 / (1 + others)
            dvar = -1 / ((1 + chosen_info * u_all) ** 2 * (1 + others) ** 2)
            cross = (a**2 * dvar).sum(axis=1) - a[:, m] ** 2 * dvar[:, m]
            change = (a[:, m] - v[i] * d[:, i]) ** 2 * new_var - a[:, m] ** 2 * var_m + info[:, i] * cross
            value = (change - v[i] ** 2 * pq[:, i]).mean()
            if value < best_value - 1e-12:
                best, best_value = i, value
        order.append(best)
        free[best] = False
        taken[group[best]] += 1
        a[:, group[best]] -= v[best] * d[:, best]
        chosen_info[:, group[best]] += info[:, best]
    return order


@pytest.mark.parametrize("quota", [np.array([3, 2, 4]), None])
def test_greedy_items_with_deviations_follows_its_criterion_step_by_step(quota):
    """With benchmark deviations the greedy step takes the item of least expected change (the docstring's formula
    by hand, over every free item): the block-wise arithmetic of the selection picks the same items."""
    rng = np.random.default_rng(11)
    n, t = 30, 7
    p = rng.uniform(0.05, 0.95, (t, n))
    d = rng.uniform(0.2, 1.5, (t, n)) * p * (1 - p)
    group = rng.permutation(np.repeat([0, 1, 2], 10))  # benchmarks' items interleaved
    w = np.zeros((n, 3))
    w[np.arange(n), group] = 0.1
    tau = np.array([0.3, 0.0, 0.6])
    total = 9
    order = greedy_items(p, d, w, quota, total, group=group, deviation=tau)
    assert order == _greedy_with_deviations_by_hand(p, d, w, quota, total, tau)
    if quota is not None:
        assert np.bincount(group[order], minlength=3).tolist() == quota.tolist()


def test_the_most_informative_item_of_a_benchmark_is_picked_first():
    # benchmark A: three items at the population's centre, one of them far more discriminating
    bank = make_bank(
        [0.0, 0.0, 0.0, 0.5, -0.5], [0.5, 3.0, 1.0, 1.0, 1.0], ["A", "A", "A", "B", "B"], population=[-0.5, 0.0, 0.5]
    )
    chosen = select_items(bank, per_benchmark=1)
    assert chosen.items.set_index("benchmark").loc["A", "item"] == "q1"
    assert chosen.item_ids[0] == "q1"
    assert chosen.items["order"].tolist() == [1, 2]
    assert chosen.items["weight"].tolist() == [1.0, 1.0]


def test_expected_error_falls_as_more_items_are_selected(bank3):
    errors = [select_items(bank3, per_benchmark=k).precision["expected_error"].to_numpy() for k in (1, 2, 4, 8, 16)]
    for k, (before, after) in enumerate(itertools.pairwise(errors)):
        assert (after < before).all(), f"step {k}: {before} -> {after}"
    everything = select_items(bank3, per_benchmark=40).precision["expected_error"]
    np.testing.assert_allclose(everything, 0.0, atol=1e-12)


# ------------------------------------------------------------------------------------------------ budgets
def test_per_benchmark_gives_that_many_of_each(bank3):
    chosen = select_items(bank3, per_benchmark=5)
    assert chosen.precision["benchmark"].tolist() == ["bench00", "bench01", "bench02"]
    assert chosen.precision["items_selected"].tolist() == [5, 5, 5]
    assert chosen.precision["items_total"].tolist() == [40, 40, 40]
    assert chosen.items.groupby("benchmark").size().tolist() == [5, 5, 5]
    assert len(set(chosen.item_ids)) == 15
    np.testing.assert_allclose(chosen.items["weight"], 0.2)
    assert chosen.method == "posterior" and chosen.score == "accuracy"
    assert (chosen.precision["score"] == "accuracy").all()


@pytest.mark.parametrize("method", ["posterior", "random", "anchors"])
def test_items_in_all_keeps_every_benchmark(bank3, method):
    few = select_items(bank3, items=3, method=method)
    assert few.precision["items_selected"].tolist() == [1, 1, 1]
    more = select_items(bank3, items=10, method=method)
    assert len(more.item_ids) == 10 and (more.precision["items_selected"] >= 1).all()


def test_the_posterior_method_may_split_a_budget_unevenly():
    # A's items are informative and spread, B's single item is flat: after B's one item, A gets the rest
    bank = make_bank([-1.0, -0.3, 0.3, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0, 0.1], ["A", "A", "A", "A", "B"])
    chosen = select_items(bank, items=4)
    assert chosen.precision["items_selected"].tolist() == [3, 1]


def test_budget_errors(bank3):
    with pytest.raises(SpecError, match="items=2 cannot keep each of the bank's 3 benchmarks"):
        select_items(bank3, items=2)
    with pytest.raises(SpecError, match="exactly one of items="):
        select_items(bank3, items=5, per_benchmark=2)
    with pytest.raises(SpecError, match="exactly one of items="):
        select_items(bank3)
    with pytest.raises(SpecError, match="at least 1, got 0"):
        select_items(bank3, per_benchmark=0)
    with pytest.raises(SpecError, match="method must be one of posterior, random, anchors"):
        select_items(bank3, items=3, method="best")
    with pytest.raises(SpecError, match="give the target as a Target"):
        select_items(bank3, items=3, target="uniform")


@pytest.mark.parametrize("method", ["posterior", "random", "anchors"])
def test_a_benchmark_smaller_than_its_share_gives_all_its_items_and_says_so(method):
    bank = make_bank(np.linspace(-1, 1, 7), np.ones(7), ["A", "A", "B", "B", "B", "B", "B"], warnings=("BANK NOTE",))
    chosen = select_items(bank, per_benchmark=3, method=method)
    assert chosen.precision["items_selected"].tolist() == [2, 3]
    assert set(chosen.items.loc[chosen.items["benchmark"] == "A", "item"]) == {"q0", "q1"}
    assert chosen.warnings[0] == "BANK NOTE"
    assert chosen.warnings[1] == "FEWER ITEMS: A (2) hold fewer than 3 items; all of their items are selected."
    assert chosen.to_text().startswith("BANK NOTE\nFEWER ITEMS")
    assert chosen.to_dict()["warnings"] == list(chosen.warnings)
    assert chosen.table().attrs["warnings"] == list(chosen.warnings)


def test_asking_for_more_items_than_the_bank_holds():
    bank = make_bank(np.linspace(-1, 1, 5), np.ones(5), ["A", "A", "B", "B", "B"])
    chosen = select_items(bank, items=9)
    assert sorted(chosen.item_ids) == [f"q{i}" for i in range(5)]
    assert any(w.startswith("FEWER ITEMS: the bank holds 5 items, fewer than 9") for w in chosen.warnings)


# ------------------------------------------------------------------------------------------------ exclude
@pytest.mark.parametrize("method", ["posterior", "random", "anchors"])
def test_excluded_items_are_never_selected(bank3, method):
    first = select_items(bank3, per_benchmark=4, method=method).item_ids
    again = select_items(bank3, per_benchmark=4, method=method, exclude=first)
    assert not set(first) & set(again.item_ids)
    assert again.precision["items_total"].tolist() == [36, 36, 36]
    assert again.precision["items_selected"].tolist() == [4, 4, 4]


def test_excluding_every_item_of_a_benchmark_drops_it():
    bank = make_bank(np.linspace(-1, 1, 5), np.ones(5), ["A", "A", "B", "B", "B"])
    chosen = select_items(bank, per_benchmark=1, exclude=["q0", "q1"])
    assert chosen.precision["benchmark"].tolist() == ["B"]


def test_unknown_excluded_items_are_refused_by_name(bank3):
    with pytest.raises(SpecError, match=r"exclude= names item\(s\) not in the bank: no-such-item, other"):
        select_items(bank3, per_benchmark=2, exclude=[str(bank3.items[0]), "no-such-item", "other"])


# ------------------------------------------------------------------------------------------------ anchors and random
def test_anchor_items_pick_one_per_separated_cluster_with_shares_summing_to_one():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    sizes = [2, 3, 5]
    x = np.concatenate([c + 0.1 * rng.standard_normal((s, 2)) for c, s in zip(centres, sizes, strict=True)])
    cluster = np.repeat([0, 1, 2], sizes)
    for seed in range(5):
        index, share = anchor_items(x, 3, np.random.default_rng(seed))
        assert sorted(cluster[index].tolist()) == [0, 1, 2], f"seed {seed}: {index}"
        assert dict(zip(cluster[index].tolist(), share.tolist(), strict=True)) == pytest.approx(
            {0: 0.2, 1: 0.3, 2: 0.5}
        )
        assert share.sum() == pytest.approx(1.0)
        # the anchor is the member nearest its cluster's centre
        for i, c in zip(index, cluster[index], strict=True):
            members = np.flatnonzero(cluster == c)
            centre = x[members].mean(axis=0)
            assert i == members[np.argmin(((x[members] - centre) ** 2).sum(axis=1))]


def test_anchor_items_with_as_many_anchors_as_items_take_them_all():
    index, share = anchor_items(np.arange(6.0).reshape(3, 2), 5, np.random.default_rng(0))
    assert index.tolist() == [0, 1, 2]
    np.testing.assert_allclose(share, 1 / 3)


def test_anchor_selection_weights_sum_to_one_per_benchmark(bank3):
    chosen = select_items(bank3, per_benchmark=4, method="anchors", seed=2)
    np.testing.assert_allclose(chosen.items.groupby("benchmark")["weight"].sum(), 1.0)
    assert chosen.precision["items_selected"].tolist() == [4, 4, 4]


def test_random_selection_is_seeded(bank3):
    a = select_items(bank3, per_benchmark=4, method="random", seed=1).item_ids
    b = select_items(bank3, per_benchmark=4, method="random", seed=1).item_ids
    c = select_items(bank3, per_benchmark=4, method="random", seed=2).item_ids
    assert a == b
    assert set(a) != set(c)


def test_the_posterior_method_beats_random_selection(bank3):
    best = select_items(bank3, items=12).precision["expected_error"].to_numpy()
    for seed in range(5):
        chance = select_items(bank3, items=12, method="random", seed=seed).precision["expected_error"].to_numpy()
        assert (best**2).sum() < (chance**2).sum(), f"seed {seed}: posterior {best}, random {chance}"


# ------------------------------------------------------------------------------------------------ targets
def test_a_target_on_one_bin_draws_the_selection_into_that_bin():
    fit, _ = simulated_fit(100, 80, seed=9)
    bank = ItemBank.from_fit(fit, n_draws=50)
    target = Target(edges=(-3.0, -1.0, 1.0, 3.0), weights=(0.0, 0.0, 1.0))
    location = bank.difficulty.mean(axis=0)
    heavy = (location >= 1.0) & (location <= 3.0)
    assert 8 <= heavy.sum() <= 30, heavy.sum()
    chosen = select_items(bank, per_benchmark=6, target=target)
    share = heavy[bank.columns(chosen.item_ids)].mean()
    plain = select_items(bank, per_benchmark=6)
    plain_share = heavy[bank.columns(plain.item_ids)].mean()
    assert share >= 2 / 3, f"{share:.2f} of the target's items in its bin (plain accuracy: {plain_share:.2f})"
    assert share > plain_share
    assert chosen.score == "target" and (chosen.precision["score"] == "target").all()


def test_items_outside_the_target_range_count_against_their_own_benchmarks_quota():
    """An item outside the target's range has no score weight; it still belongs to its own benchmark."""
    n = 20
    # B holds one very discriminating item just outside the range, right where the population is
    difficulty = np.concatenate([np.linspace(-0.9, 0.9, n), np.linspace(-0.9, 0.9, n), [1.3]])
    discrimination = np.concatenate([np.ones(2 * n), [4.0]])
    bank = make_bank(difficulty, discrimination, ["A"] * n + ["B"] * (n + 1), population=[1.2, 1.3, 1.4])
    target = Target(edges=(-1.0, 0.0, 1.0), weights=(1.0, 1.0))
    per = select_items(bank, per_benchmark=1, target=target)
    assert per.precision["items_selected"].tolist() == [1, 1], per.items
    every = select_items(bank, items=2, target=target)
    assert every.precision["items_selected"].tolist() == [1, 1], every.items


def test_per_benchmark_holds_with_a_target_on_a_simulated_bank(bank3):
    """Most items of bench00 and bench02 lie outside a target on [1, 3]: no benchmark may take their places."""
    target = Target(edges=(-3.0, -1.0, 1.0, 3.0), weights=(0.0, 0.0, 1.0))
    chosen = select_items(bank3, per_benchmark=5, target=target)
    counts = chosen.items.groupby("benchmark").size()
    assert (counts <= 5).all(), counts.to_dict()
