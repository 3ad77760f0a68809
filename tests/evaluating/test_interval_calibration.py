"""Intervals calibrated on the bank's own systems: factors near 1 for a bank that is right, and large enough to
restore the coverage of a bank whose items are too steep.

No sampling: 2PL responses of 400 simulated systems to 120 items; the bank holds the true item parameters, or
the same items 2.5 times as steep as they are. Its reference systems are the first 200; the other 200 are
scored from 12 of the items.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from irtbayes.core import irt
from irtbayes.core.summaries import spaced
from irtbayes.evaluating.bank import DEFAULT_GRID, ItemBank
from irtbayes.evaluating.prediction import calibration_factors, interval_factors, predict_from_arrays

N_ITEMS = 120
DRAWS = 100  # the true item parameters in every draw: the draws carry the ability's and the responses' spread
#: Draws of the banks of the tests that check which systems and designs calibrate, not how well the intervals cover.
FEW_DRAWS = 20


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(7)
    theta = rng.normal(size=400)
    b = rng.normal(size=N_ITEMS)
    a = np.exp(rng.normal(0.0, 0.3, size=N_ITEMS))
    y = (rng.random((400, N_ITEMS)) < irt.probability(theta[:, None], b[None, :], a[None, :])).astype(float)
    return y, a, b


def _bank(a: np.ndarray, b: np.ndarray, reference: np.ndarray | None, *, draws: int = DRAWS) -> ItemBank:
    return ItemBank(
        items=pd.Index([f"q{i}" for i in range(N_ITEMS)]),
        benchmark=np.array(["B"] * N_ITEMS),
        difficulty=np.repeat(b[None, :], draws, axis=0),
        discrimination=np.repeat(a[None, :], draws, axis=0),
        guessing=None,
        population=np.linspace(-2, 2, 32),
        log_prior=-0.5 * DEFAULT_GRID**2,
        grid=DEFAULT_GRID,
        binary=True,
        warnings=(),
        source="<test>",
        fitted_subjects=pd.Index([]),
        reference=None if reference is None else reference.astype("float32"),
    )


def _coverage(bank: ItemBank, y: np.ndarray, design: np.ndarray, widen: np.ndarray | None) -> float:
    mask = np.broadcast_to(design, y.shape).astype(float)
    table = predict_from_arrays(bank, y, mask, np.array([f"n{j}" for j in range(len(y))]), widen=widen, seed=1).table()
    rows = table[table["benchmark"] == "B"]
    truth = y.mean(axis=1)
    return float(
        ((truth >= rows["accuracy_ci_low"].to_numpy()) & (truth <= rows["accuracy_ci_high"].to_numpy())).mean()
    )


def test_a_right_bank_needs_little_widening_and_covers(world):
    y, a, b = world
    bank = _bank(a, b, y[:200])
    design = np.zeros(N_ITEMS)
    design[::10] = 1.0
    factors = calibration_factors(bank, design[None, :])
    assert factors is not None and factors.shape == (1, 2) and np.all(factors <= 1.25), f"factors {factors}"
    coverage = _coverage(bank, y[200:], design, factors)
    assert 0.82 <= coverage <= 0.98, f"coverage {coverage:.2f} with factors {factors}"


def test_too_steep_items_are_widened_back_to_coverage(world):
    y, a, b = world
    steep = _bank(2.5 * a, b, y[:200])
    design = np.zeros(N_ITEMS)
    design[::10] = 1.0
    before = _coverage(steep, y[200:], design, None)
    factors = calibration_factors(steep, design[None, :])
    assert factors is not None and factors[0, 0] > 1.3, f"factors {factors}"
    after = _coverage(steep, y[200:], design, factors)
    assert before < 0.8 <= after, f"coverage {before:.2f} before, {after:.2f} after widening by {factors}"


def test_factors_are_never_below_one_and_need_a_reference(world):
    y, a, b = world
    design = np.ones((1, N_ITEMS))  # every item answered: nothing to predict, nothing to widen
    factors = interval_factors(_bank(a, b, y[:200]), y[:200], np.ones_like(y[:200]), design)
    assert factors.tolist() == [1.0, 1.0]
    assert calibration_factors(_bank(a, b, None), design) is None


def test_widening_keeps_the_mean_and_is_reported(world):
    y, a, b = world
    bank = _bank(a, b, y[:200])
    mask = np.zeros((3, N_ITEMS))
    mask[:, :12] = 1.0
    plain = predict_from_arrays(bank, y[200:203], mask, np.array(["x", "y", "z"]), seed=2)
    wide = predict_from_arrays(bank, y[200:203], mask, np.array(["x", "y", "z"]), widen=np.array([2.0, 2.0]), seed=2)
    np.testing.assert_allclose(wide.table()["accuracy_mean"], plain.table()["accuracy_mean"])
    width = lambda t: (t["accuracy_ci_high"] - t["accuracy_ci_low"]).to_numpy()  # noqa: E731
    assert np.all(width(wide.table()) > 1.8 * width(plain.table()))
    assert wide.factors() == {"B": [2.0], "all": [2.0]} and plain.widen is None and plain.factors() is None
    assert "widened by B x2.00" in wide.to_text() and "not calibrated" in plain.to_text()
    assert wide.to_dict()["interval_calibration"] == {"B": [2.0], "all": [2.0]}
    assert wide.table()["interval_factor"].tolist() == [2.0] * 6 and "interval_factor" not in plain.table()
    # per system: the second system's intervals twice as wide as the first's, means unchanged
    each = predict_from_arrays(
        bank, y[200:203], mask, np.array(["x", "y", "z"]), widen=np.array([[1.0, 1.0], [2.0, 2.0], [1.0, 1.0]]), seed=2
    )
    np.testing.assert_allclose(each.table()["accuracy_mean"], plain.table()["accuracy_mean"])
    np.testing.assert_allclose(width(each.table())[2:4], width(wide.table())[2:4])
    np.testing.assert_allclose(width(each.table())[:2], width(plain.table())[:2])
    assert each.factors() == {"B": [1.0, 2.0], "all": [1.0, 2.0]}
    assert "B x1.00-2.00" in each.to_text() and "interval_factor" in each.to_text()


def _adaptive_coverage(bank: ItemBank, y: np.ndarray, *, calibrate: bool) -> tuple[float, np.ndarray | None]:
    """Coverage of adaptive tests of 12 items (one per system, answering from ``y``) of the systems' accuracy over
    every item, and the factors the tests used."""
    from irtbayes.evaluating.adaptive import AdaptiveTest

    inside, factors = [], None
    for j, row in enumerate(y):
        test = AdaptiveTest(bank, max_items=12, calibrate=calibrate, seed=j)
        result = test.run(lambda item, row=row: float(row[int(item[1:])]), subject=f"n{j}")
        line = result.scores.table().set_index("benchmark").loc["B"]
        inside.append(line["accuracy_ci_low"] <= row.mean() <= line["accuracy_ci_high"])
        factors = test.interval_factors() if calibrate else None
    return float(np.mean(inside)), factors


def test_adaptive_intervals_are_calibrated_on_systems_tested_adaptively(world, monkeypatch):
    """A bank of too steep items gives adaptive tests overconfident intervals; calibrated on the bank's own systems
    given the same adaptive test, they cover again. The factors are computed once for the bank and settings."""
    import irtbayes.evaluating.adaptive as adaptive

    y, a, b = world
    steep = _bank(2.5 * a, b, y[:200])
    held_out = y[200:260]
    before, _ = _adaptive_coverage(steep, held_out, calibrate=False)
    calls = []
    original = adaptive.error_ratios
    monkeypatch.setattr(adaptive, "error_ratios", lambda *args, **kw: calls.append(1) or original(*args, **kw))
    after, factors = _adaptive_coverage(steep, held_out, calibrate=True)
    assert factors is not None and factors[0] > 1.3, f"factors {factors}"
    assert before < 0.8 <= after, f"coverage {before:.2f} before, {after:.2f} after widening by {factors}"
    assert len(calls) == 1  # one calibration for the 60 tests of the same bank and settings


def _two_benchmark_bank(a: np.ndarray, b: np.ndarray, reference: np.ndarray, *, draws: int = DRAWS) -> ItemBank:
    return dataclasses.replace(
        _bank(a, b, reference, draws=draws), benchmark=np.array(["B1"] * (N_ITEMS // 2) + ["B2"] * (N_ITEMS // 2))
    )


def test_the_overall_score_is_calibrated_on_systems_that_answered_every_benchmark(world):
    """A system's accuracy over the one benchmark it answered is not an overall score: its error on ``all`` is
    left out of the calibration (NaN), while its own benchmark's error counts; the calibration systems add, beyond
    the evenly spaced ones, systems that answered every benchmark."""
    from irtbayes.evaluating.bank import answered_benchmarks
    from irtbayes.evaluating.prediction import calibration_systems, error_ratios

    y, a, b = world
    half = N_ITEMS // 2
    reference = y[:200].copy()
    reference[::2, half:] = np.nan  # every other system answered B1 only
    reference[1::4, :10] = np.nan  # some of the others skipped a few items of B1 (still more than half)
    bank = _two_benchmark_bank(a, b, reference)
    w = (~np.isnan(reference)).astype(float)
    whole = answered_benchmarks(bank, w)
    assert whole.tolist() == [[True, j % 2 == 1] for j in range(200)]
    assert answered_benchmarks(bank, w, min_share=0.9)[1::4, 0].sum() == 0  # 50 of 60 is below 90%

    design = np.zeros(N_ITEMS)
    design[::6] = 1.0
    ratios = error_ratios(bank, np.nan_to_num(reference), w, w * design[None, :], seed=1)
    assert ratios.shape == (200, 3)  # B1, B2, all
    assert np.isnan(ratios[::2, 1:]).all() and np.isfinite(ratios[::2, 0]).all()
    assert np.isfinite(ratios[1::2]).all()

    rows = calibration_systems(bank, w, most=20)  # 20 evenly spaced, and 20 evenly spaced of the 100 complete
    complete = np.flatnonzero(whole.all(axis=1))
    assert set(spaced(200, 20).tolist()) | set(complete[spaced(100, 20)].tolist()) == set(rows.tolist())
    one = _bank(a, b, reference)  # one benchmark: only the evenly spaced systems
    assert len(calibration_systems(one, w, most=20)) == 20


def test_a_bank_keeps_further_reference_systems_that_answered_every_benchmark(world):
    from irtbayes.data.responses import ResponseData
    from irtbayes.evaluating.bank import answered_benchmarks, reference_responses

    y, a, b = world
    half = N_ITEMS // 2
    rows = [
        (f"s{j:03d}", f"q{i}", y[j, i])
        for j in range(300)
        for i in range(N_ITEMS)
        if (j < 270 and i < half) or j >= 270  # only the last 30 systems answered B2
    ]
    data = ResponseData.from_long(pd.DataFrame(rows, columns=["subject", "item", "response"]))
    bank = _two_benchmark_bank(a, b, y[:1])
    kept = reference_responses(bank, data, most=20, complete=10)
    whole = answered_benchmarks(bank, (~np.isnan(kept)).astype(float)).all(axis=1)
    in_spaced = int((spaced(300, 20) >= 270).sum())  # the evenly spaced 20 hold 2 of the last 30
    assert in_spaced == 2 and len(kept) == 30 and whole.sum() == in_spaced + 10  # and 10 more of the 30
    assert reference_responses(bank, data, most=20, complete=0).shape == (20, N_ITEMS)


def test_systems_that_answered_other_benchmarks_are_calibrated_apart(world, monkeypatch):
    """A benchmark a system did not answer is predicted from its ability alone: its error relative to the interval
    is not that of a benchmark it answered, so systems are calibrated on the designs of those that answered the same
    benchmarks, not on factors pooled over both (which fit neither)."""
    import irtbayes.evaluating.prediction as prediction

    y, a, b = world
    steep = _two_benchmark_bank(2.5 * a, b, y[:200], draws=FEW_DRAWS)
    design = np.zeros(N_ITEMS)
    design[::6] = 1.0
    first_only = design.copy()
    first_only[N_ITEMS // 2 :] = 0.0
    w = np.array([design] * 5 + [first_only] * 2)
    every = np.ones_like(y[:200])
    both = interval_factors(steep, y[:200], every, design[None, :])
    one = interval_factors(steep, y[:200], every, first_only[None, :])
    pooled = interval_factors(steep, y[:200], every, np.stack([design, first_only]))
    assert not np.allclose(pooled, both) and not np.allclose(pooled, one), (pooled, both, one)

    factors = calibration_factors(steep, w)
    assert factors is not None and factors.shape == (7, 3)  # B1, B2, all
    np.testing.assert_array_equal(factors[:5], np.repeat(both[None, :], 5, axis=0))
    np.testing.assert_array_equal(factors[5:], np.repeat(one[None, :], 2, axis=0))

    # one design in all: the larger group's, and the other group takes the factors of the nearest computed one
    monkeypatch.setattr(prediction, "CALIBRATION_DESIGNS", 1)
    factors = calibration_factors(steep, w)
    assert factors is not None
    np.testing.assert_array_equal(factors, np.repeat(both[None, :], 7, axis=0))


def test_adaptive_calibration_takes_systems_that_answered_the_pool_s_benchmarks(world, monkeypatch):
    """A bank system without one of the test's benchmarks would take another test (its items go to the others),
    so an adaptive test over both benchmarks is calibrated on the systems that answered both; a test over the first
    benchmark alone on every system that answered it."""
    import irtbayes.evaluating.adaptive as adaptive

    y, a, b = world
    half = N_ITEMS // 2
    reference = y[:200].copy()
    reference[::2, half:] = np.nan  # every other system answered B1 only
    bank = _two_benchmark_bank(a, b, reference, draws=FEW_DRAWS)
    masks = []
    original = adaptive.error_ratios
    monkeypatch.setattr(
        adaptive,
        "error_ratios",
        lambda bank_, y_, w_, *args, **kw: masks.append(w_) or original(bank_, y_, w_, *args, **kw),
    )
    adaptive.AdaptiveTest(bank, max_items=6, seed=1).interval_factors()
    assert len(masks[-1]) >= adaptive.CALIBRATION_MIN_COMPLETE and (masks[-1][:, half:] > 0).any(axis=1).all()
    adaptive.AdaptiveTest(bank, max_items=6, items=[f"q{i}" for i in range(half)], seed=1).interval_factors()
    assert (~(masks[-1][:, half:] > 0).any(axis=1)).sum() > 0  # systems without B2 calibrate a test of B1


def test_binary_calibration_is_unchanged_and_one_trial_each_reads_as_binary(world):
    """On 0/1 responses the calibration gives the numbers it gave before it weighed trials (pinned from that code),
    and trials of one each give the same numbers to the bit."""
    from irtbayes.evaluating.prediction import error_ratios

    y, a, b = world
    steep = _bank(2.5 * a, b, y[:200], draws=FEW_DRAWS)
    design = np.zeros(N_ITEMS)
    design[::10] = 1.0
    factors = calibration_factors(steep, design[None, :])
    assert factors is not None
    np.testing.assert_allclose(factors, [[2.156177313181729, 2.156177313181729]], rtol=1e-9)
    ones = dataclasses.replace(steep, reference_trials=np.ones_like(steep.reference))
    np.testing.assert_array_equal(calibration_factors(ones, design[None, :]), factors)

    w = np.ones((8, N_ITEMS))
    ratios = error_ratios(steep, y[:8], w, w * design[None, :], seed=1)
    old = [0.1311928286582301, 0.4209503331988764, 1.2832436045252373, 0.18114166247342145, 0.4155891359576271,
           2.6468115176465172, 0.014575539978690882, 0.5203139881782792]  # fmt: skip
    np.testing.assert_allclose(ratios, np.repeat(np.array(old)[:, None], 2, axis=1), rtol=1e-9)
    np.testing.assert_array_equal(error_ratios(steep, y[:8], w, w * design[None, :], seed=1, trials=w), ratios)


def test_per_trial_accuracy_is_successes_over_trials():
    """Scored per trial, a system's accuracy is sum k / sum n over its items (not the mean share k / n per item),
    to the bit where it answered every item; per trial needs the trials."""
    from irtbayes.core.errors import SpecError

    rng = np.random.default_rng(2)
    n = rng.integers(1, 7, size=(3, N_ITEMS)).astype(float)
    k = rng.binomial(n.astype(int), 0.6)
    y, w = k / n, np.ones_like(n)
    bank = _bank(np.ones(N_ITEMS), np.zeros(N_ITEMS), None, draws=FEW_DRAWS)
    table = predict_from_arrays(bank, y, w, np.array(["x", "y", "z"]), trials=n, per_trial=True).table()
    rows = table[table["benchmark"] == "B"]
    truth = k.sum(axis=1) / n.sum(axis=1)
    assert not np.allclose(truth, y.mean(axis=1))  # the mean share per item is another number
    for column in ("accuracy_mean", "accuracy_ci_low", "accuracy_ci_high"):
        np.testing.assert_allclose(rows[column].to_numpy(), truth, rtol=1e-12, err_msg=column)
    with pytest.raises(SpecError, match="per_trial needs the trials"):
        predict_from_arrays(bank, y, w, np.array(["x", "y", "z"]), per_trial=True)


def test_count_references_are_calibrated_per_trial():
    """Reference systems that answered k of n trials widen the intervals as the same trials answered once each
    (n copies of each item, k of them right) do; read as one trial each, their shares made the intervals of the
    calibration as wide as one trial's and left a bank of too steep items unwidened."""
    from irtbayes.data.simulate import simulate_responses
    from irtbayes.evaluating.bank import reference_responses, reference_trials

    n_trials = 4
    data, truth = simulate_responses(200, N_ITEMS, n_trials=n_trials, missing=0.0, seed=3)
    a, b = truth["discrimination"].values, truth["difficulty"].values
    items = pd.Index([str(i) for i in data.item_ids])
    steep = dataclasses.replace(_bank(2.5 * a, b, None, draws=FEW_DRAWS), items=items)
    steep = dataclasses.replace(
        steep, reference=reference_responses(steep, data), reference_trials=reference_trials(steep, data)
    )
    assert steep.reference_trials is not None and (steep.reference_trials == n_trials).all()
    copies = dataclasses.replace(  # each item as n_trials items of one trial: the same likelihood
        steep,
        items=pd.Index([f"{i}#{t}" for i in items for t in range(n_trials)]),
        benchmark=np.repeat(steep.benchmark, n_trials),
        difficulty=np.repeat(steep.difficulty, n_trials, axis=1),
        discrimination=np.repeat(steep.discrimination, n_trials, axis=1),
        reference=(np.arange(n_trials) < np.rint(steep.reference * n_trials)[:, :, None])
        .reshape(len(steep.reference), -1)
        .astype("float32"),
        reference_trials=None,
    )
    design = np.zeros(N_ITEMS)
    design[::10] = 1.0
    per_trial = calibration_factors(steep, design[None, :])
    as_copies = calibration_factors(copies, np.repeat(design, n_trials)[None, :])
    one_trial = calibration_factors(dataclasses.replace(steep, reference_trials=None), design[None, :])
    assert per_trial is not None and as_copies is not None and one_trial is not None
    np.testing.assert_allclose(per_trial, as_copies, rtol=0.15)
    assert per_trial[0, 0] > 1.3 and one_trial[0, 0] < 0.8 * per_trial[0, 0], (per_trial, as_copies, one_trial)
