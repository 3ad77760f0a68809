"""The study's pieces, by hand: splits, the truth of held-out systems, the metrics, and the baselines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from irtbayes.core import irt
from irtbayes.evaluating.bank import DEFAULT_GRID, ItemBank
from irtbayes.evaluating.baselines import anchor_mean, pirt_accuracy, subset_mean, wilson_interval
from irtbayes.evaluating.study import held_out_truth, method_metrics, split_subjects


def test_splits_hold_out_a_quarter_at_random_or_the_last_in_order():
    subjects = [f"s{i}" for i in range(20)]
    train, test = split_subjects(subjects, "order")
    assert test == subjects[-5:] and train == subjects[:-5]
    train, test = split_subjects(subjects, "random", seed=3)
    assert len(test) == 5 and set(train) | set(test) == set(subjects) and not set(train) & set(test)
    assert split_subjects(subjects, "random", seed=3) == (train, test)
    assert split_subjects(subjects, "random", seed=4)[1] != test
    with pytest.raises(ValueError, match="random' or 'order"):
        split_subjects(subjects, "newest")


def test_truth_is_the_accuracy_over_answered_items_where_at_least_half_were_answered():
    member = np.array([[0.5, 1 / 3], [0.5, 1 / 3], [0.0, 1 / 3]])  # scopes: benchmark A (items 0, 1) and all
    y = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    w = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    truth, scored = held_out_truth(y, w, member)
    np.testing.assert_allclose(truth[0], [0.5, 2 / 3])
    assert scored.tolist() == [[True, True], [True, False]]  # the second answered 1 of 2 and 1 of 3
    assert truth[1, 0] == 1.0 and np.isnan(truth[1, 1])


def test_metrics_by_hand():
    truth = np.array([[0.5], [0.6], [0.7], [0.8]])
    estimate = np.array([[0.55], [0.6], [0.65], [0.9]])
    low, high = estimate - 0.06, estimate + 0.06
    complete = np.array([[True], [True], [True], [False]])
    (row,) = method_metrics(estimate, low, high, truth, complete)
    assert row["systems"] == 3
    assert row["mae"] == pytest.approx((0.05 + 0.0 + 0.05) / 3)
    assert row["rmse"] == pytest.approx(np.sqrt((0.05**2 * 2) / 3))
    assert row["coverage"] == 1.0 and row["width"] == pytest.approx(0.12)
    assert row["spearman"] == pytest.approx(spearmanr(estimate[:3, 0], truth[:3, 0]).statistic)
    (none,) = method_metrics(estimate, None, None, truth, complete)
    assert np.isnan(none["coverage"]) and np.isnan(none["width"]) and none["mae"] == row["mae"]


def test_wilson_and_the_finite_population_correction():
    low, high = wilson_interval(np.array([0.0, 10.0]), np.array([10.0, 10.0]), 0.9)
    assert low[0] == 0.0 and high[0] > 0.1 and high[1] == pytest.approx(1.0) and low[1] < 0.9
    y = np.array([[1.0, 1.0, 0.0, 0.0, 1.0, 0.0]])
    member = np.ones((6, 1))
    few = subset_mean(y, np.array([[1.0, 1.0, 0.0, 0.0, 0.0, 0.0]]), member)
    most = subset_mean(y, np.array([[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]]), member)
    every = subset_mean(y, np.ones((1, 6)), member)
    assert few[0][0, 0] == 1.0 and most[0][0, 0] == pytest.approx(0.6)
    assert (most[2] - most[1])[0, 0] < (few[2] - few[1])[0, 0]  # more of the benchmark seen, narrower
    assert every[1][0, 0] == every[2][0, 0] == pytest.approx(0.5)  # all of it seen: exact


def test_pirt_counts_answers_and_predicts_the_rest_at_the_map_ability():
    b = np.array([-1.0, 0.0, 1.0, 2.0])
    a = np.ones(4)
    bank = ItemBank(
        items=pd.Index(["q0", "q1", "q2", "q3"]),
        benchmark=np.array(["A"] * 4),
        difficulty=b[None, :],
        discrimination=a[None, :],
        guessing=None,
        population=np.zeros(4),
        log_prior=-0.5 * DEFAULT_GRID**2,
        grid=DEFAULT_GRID,
        binary=True,
        warnings=(),
        source="<test>",
        fitted_subjects=pd.Index([]),
    )
    y = np.array([[1.0, 0.0, 0.0, 0.0]])
    w = np.array([[1.0, 1.0, 0.0, 0.0]])
    got = pirt_accuracy(bank, y, w, np.ones((4, 1)))
    log_post = [irt.log_likelihood(np.array([1.0, 0.0]), t - b[:2]).sum() - 0.5 * t**2 for t in DEFAULT_GRID]
    theta = DEFAULT_GRID[int(np.argmax(log_post))]
    want = (1.0 + 0.0 + irt.probability(theta, b[2:], a[2:]).sum()) / 4
    assert got[0, 0] == pytest.approx(want)
    assert anchor_mean(y, np.array([0, 1]), np.array([3.0, 1.0]))[0] == pytest.approx(0.75)
