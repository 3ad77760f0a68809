"""Benchmark deviations: estimated from the fit's data, and what they do to the intervals across benchmarks.

Two seeded simulations, 300 systems x 2 benchmarks of 100 items: one where a system's ability is the same on both
benchmarks, one where its two abilities correlate 0.5 (sd of their difference 1). Each bank is a real fit (the
approximate tier, seconds) of the first 225 systems; the last 75 are scored from 10 items per benchmark.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from irtbayes.core.errors import FitError
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating.bank import ItemBank, estimate_deviations
from irtbayes.evaluating.prediction import predict_from_arrays, scope_membership
from irtbayes.evaluating.selection import select_items
from irtbayes.evaluating.study import held_out_truth
from irtbayes.fitting.fit import fit


def _case(dims: str, corr: float):
    data, _ = simulate_responses(
        300, 200, n_benchmarks=2, n_domains=2, dims=dims, ability_corr=corr, missing=0.0, seed=3
    )
    train, test = list(data.subject_ids[:225]), list(data.subject_ids[225:])
    training = data.subset(subjects=train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = fit(training, sampler="approx", seed=1, progress=False)
    return data, training, test, result


@pytest.fixture(scope="module")
def one_ability():
    return _case("one", 1.0)


@pytest.fixture(scope="module")
def two_abilities():
    return _case("domain", 0.5)


def _coverage(bank: ItemBank, data, test: list[str]) -> tuple[np.ndarray, np.ndarray]:
    held = data.subset(subjects=test)
    y, w = bank.response_arrays(held)
    names, member = scope_membership(bank)
    truth, _ = held_out_truth(y, w, member)
    chosen = np.isin(bank.items, select_items(bank, per_benchmark=10).item_ids)
    table = predict_from_arrays(bank, y, w * chosen[None, :], np.array(test), seed=0).table()
    shape = (len(test), len(names))
    low, high = table["accuracy_ci_low"].to_numpy().reshape(shape), table["accuracy_ci_high"].to_numpy().reshape(shape)
    mean = table["accuracy_mean"].to_numpy().reshape(shape)
    return ((truth >= low) & (truth <= high)).mean(axis=0), np.abs(mean - truth).mean(axis=0)


def test_deviations_are_near_zero_for_one_ability_and_near_the_truth_for_two(one_ability, two_abilities):
    _, training, _, result = one_ability
    flat = ItemBank.from_fit(result, n_draws=50, data=training).deviations
    assert np.all(flat <= 0.2), f"one ability: tau = {flat}"
    _, training, _, result = two_abilities
    apart = ItemBank.from_fit(result, n_draws=50, data=training).deviations
    # abilities correlating 0.5 with sd 1 each differ from their mean by sd 0.5 each; the general ability the fit
    # identifies is standardised, so tau lands between 0.5 and the difference's sd of 1
    assert np.all((apart >= 0.5) & (apart <= 1.4)), f"two abilities: tau = {apart}"


def test_deviations_restore_the_coverage_of_one_benchmark_from_the_other(two_abilities):
    data, training, test, result = two_abilities
    with_tau, mae_tau = _coverage(ItemBank.from_fit(result, n_draws=100, data=training), data, test)
    without, mae_one = _coverage(ItemBank.from_fit(result, n_draws=100, data=False), data, test)
    assert with_tau[:2].min() >= 0.8, f"coverage with deviations {with_tau}, without {without}"
    assert with_tau[:2].mean() > without[:2].mean() + 0.05, f"with {with_tau}, without {without}"
    assert mae_tau[:2].mean() < mae_one[:2].mean(), f"MAE with deviations {mae_tau}, without {mae_one}"


def test_one_ability_data_keep_their_coverage_with_deviations(one_ability):
    data, training, test, result = one_ability
    coverage, _ = _coverage(ItemBank.from_fit(result, n_draws=100, data=training), data, test)
    assert np.all((coverage >= 0.8) & (coverage <= 0.99)), f"coverage {coverage}"


def test_without_the_fits_data_the_bank_says_it_assumes_one_ability(two_abilities):
    result = two_abilities[3]
    bank = ItemBank.from_fit(result, n_draws=20)  # the fit records a subset's source, which is not on disk
    assert bank.deviation_sd is None
    assert any(w.startswith("NO REFERENCE") and "between benchmarks" in w for w in bank.warnings), bank.warnings
    other, _ = simulate_responses(225, 200, n_benchmarks=2, seed=99)
    with pytest.raises(FitError, match="not the data the fit was made from"):
        ItemBank.from_fit(result, n_draws=20, data=other)
    assert ItemBank.from_fit(result, n_draws=20, data=False).warnings == bank.warnings[:-1]


def test_estimate_deviations_skips_benchmarks_without_other_answers(two_abilities):
    _, training, _, result = two_abilities
    bank = ItemBank.from_fit(result, n_draws=20, data=False)
    only_one = training.subset(
        items=[i for i, b in zip(bank.items, bank.benchmark, strict=True) if b == bank.benchmarks[0]]
    )
    assert estimate_deviations(bank, only_one).tolist() == [0.0, 0.0]
