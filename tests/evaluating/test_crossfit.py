"""Cross-fitted calibration of a chosen subset: the folds' refits, where ``select_items`` cross-fits, how
``predict_scores`` applies a selection's factors, and (slow) what it changes on MMLU-Pro's 22-system bank."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.adaptive import AdaptiveTest
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.crossfit import CROSS_FIT_MAX_SYSTEMS, CrossFit, cross_fit_applies
from irtbayes.evaluating.prediction import (
    calibration_factors,
    error_ratios,
    factors_from_ratios,
    interval_factors,
    predict_scores,
    selection_factors,
)
from irtbayes.evaluating.selection import Selection, select_items
from irtbayes.examples import simulated_fit


@pytest.fixture(scope="module")
def small():
    """A bank of 24 systems and 40 items in two benchmarks, with its data (so it keeps reference systems)."""
    fit, data = simulated_fit(24, 40, n_benchmarks=2, seed=3)
    return fit, data, ItemBank.from_fit(fit, n_draws=50, data=data)


@pytest.fixture(scope="module")
def folds(small) -> CrossFit:
    fit, data, bank = small
    return CrossFit.from_fit(fit, bank, data=data, seed=5)


def test_each_fold_is_refitted_without_its_own_systems(small, folds: CrossFit) -> None:
    _, data, bank = small
    everyone = set(map(str, data.subject_ids))
    held = [set(s) for s in folds.subjects]
    assert len(folds.banks) == 4 and set().union(*held) == everyone
    assert sum(map(len, held)) == len(everyone)  # a partition
    for fold_bank, own, y, w in zip(folds.banks, held, folds.responses, folds.observed, strict=True):
        assert set(map(str, fold_bank.fitted_subjects)) == everyone - own
        assert y.shape == w.shape == (len(own), fold_bank.n_items)
        assert fold_bank.n_draws == bank.n_draws
        assert np.array_equal(fold_bank.deviations, bank.deviations)
    assert folds.sampler == "approx" and folds.scopes == ("bench00", "bench01", "all")


def test_each_fold_s_systems_are_scored_on_the_items_chosen_from_their_own_fold_s_bank(folds: CrossFit) -> None:
    seen: list[ItemBank] = []

    def choose(fold_bank: ItemBank) -> list[str]:
        seen.append(fold_bank)
        return [str(i) for i in fold_bank.items[:6]]

    ratios = folds.ratios(choose)
    assert [id(b) for b in seen] == [id(b) for b in folds.banks]
    assert ratios.shape == (sum(map(len, folds.subjects)), 3)
    first = folds.banks[0]
    mask = np.zeros(first.n_items)
    mask[:6] = 1.0
    w = folds.observed[0]
    want = error_ratios(first, folds.responses[0], w, w * mask[None, :])
    np.testing.assert_array_equal(ratios[: len(folds.subjects[0])], want)
    table = folds.factors(choose)
    np.testing.assert_array_equal(table["interval_factor"], factors_from_ratios(ratios))
    assert table["systems"].tolist() == (~np.isnan(ratios)).sum(axis=0).tolist()


def test_select_items_cross_fits_small_banks_by_default_and_only_when_it_can(small) -> None:
    fit, data, bank = small
    chosen = select_items(fit, per_benchmark=3, data=data, n_draws=50)
    assert len(fit.subject_ids) <= CROSS_FIT_MAX_SYSTEMS
    calibration = chosen.calibration
    assert calibration is not None
    assert calibration["benchmark"].tolist() == ["bench00", "bench01", "all"]
    assert (calibration["interval_factor"] >= 1).all() and (calibration["ci"] == 0.9).all()
    assert (calibration["folds"] == 4).all() and (calibration["refits"] == "approx").all()
    assert "cross-fitted (4 folds, approx refits, 90%)" in chosen.to_text()
    assert chosen.to_dict()["calibration"][0]["benchmark"] == "bench00"
    # the same items as without cross-fitting: it calibrates, it does not choose
    plain = select_items(fit, per_benchmark=3, data=data, n_draws=50, cross_fit=False)
    assert plain.calibration is None and plain.item_ids == chosen.item_ids
    assert select_items(fit, per_benchmark=3, data=data, n_draws=50, method="random").calibration is None
    assert select_items(bank, per_benchmark=3).calibration is None  # a bank alone cannot be refitted
    assert select_items(bank, per_benchmark=3, source_fit=fit, data=data).calibration is not None
    with pytest.raises(SpecError, match="give the fit"):
        select_items(bank, per_benchmark=3, cross_fit=True)
    assert not cross_fit_applies(fit, "random", None) and cross_fit_applies(fit, "random", True)
    assert cross_fit_applies(fit, "adaptive", None)
    assert cross_fit_applies(fit, "anchors", None) and not cross_fit_applies(fit, "posterior", False)


def _selection(items: list[str], factors: dict[str, float], ci: float = 0.9) -> Selection:
    calibration = pd.DataFrame(
        {
            "benchmark": list(factors),
            "interval_factor": list(factors.values()),
            "ci": ci,
            "folds": 4,
            "refits": "approx",
        }
    )
    table = pd.DataFrame({"item": items, "benchmark": "x", "order": range(1, len(items) + 1), "weight": 1.0})
    return Selection(items=table, precision=pd.DataFrame(), method="posterior", calibration=calibration)


def test_a_selection_s_factors_go_to_the_systems_that_answered_only_its_items(small) -> None:
    _, _, bank = small
    items = [str(i) for i in bank.items]
    selection = _selection(items[:4], {"bench00": 1.5, "bench01": 2.0, "all": 1.25})
    w = np.zeros((4, bank.n_items))
    w[0, [0, 1, 2, 3]] = 1  # the selection's items
    w[1, [0, 2]] = 1  # some of them
    w[2, [0, 1, 5]] = 1  # one item outside it: its own calibration
    # row 3 answered nothing
    in_sample = np.full((4, 3), 3.0)
    out = selection_factors(bank, w, selection, in_sample)
    np.testing.assert_array_equal(out[:2], [[1.5, 2.0, 1.25]] * 2)
    np.testing.assert_array_equal(out[2:], np.full((2, 3), 3.0))
    np.testing.assert_array_equal(selection_factors(bank, w, selection, None)[2], [1.0, 1.0, 1.0])
    with pytest.raises(SpecError, match=r"calibrated for 0\.9 intervals.*--ci 0\.9"):
        selection_factors(bank, w, selection, None, ci_prob=0.8)
    with pytest.raises(SpecError, match="does not hold: nope"):
        selection_factors(bank, w, _selection(["nope"], {"all": 1.0}), None)


def test_predict_scores_widens_by_the_selection_s_factors(small) -> None:
    fit, data, bank = small
    chosen = select_items(fit, per_benchmark=4, data=data, n_draws=50)
    assert chosen.calibration is not None
    # new systems (the fitted ones renamed) answering the chosen items only
    frame = data.long_frame()
    frame = frame[frame["item"].isin(chosen.item_ids) & frame["subject"].isin(list(data.subject_ids[:3]))]
    new = ResponseData.from_long(frame.assign(subject=lambda f: "new-" + f["subject"]), items=data.items)
    plain_scores = predict_scores(bank, new, seed=1)
    crossed_scores = predict_scores(bank, new, seed=1, selection=chosen)
    assert "calibrated on the bank's own systems" in plain_scores.to_text()
    assert "calibrated on the selection's cross-fitted folds; widened by" in crossed_scores.to_text()
    assert crossed_scores.to_dict()["calibrated_on"] == "the selection's cross-fitted folds"
    plain, crossed = plain_scores.table(), crossed_scores.table()
    want = dict(zip(chosen.calibration["benchmark"], chosen.calibration["interval_factor"], strict=True))
    assert crossed["interval_factor"].tolist() == crossed["benchmark"].map(want).tolist()
    np.testing.assert_array_equal(crossed["accuracy_mean"], plain["accuracy_mean"])
    _, w = bank.response_arrays(new)
    np.testing.assert_array_equal(plain["interval_factor"], calibration_factors(bank, w, seed=1).ravel())


def test_a_selection_is_read_back_from_its_folder_and_bad_factors_are_refused(small, tmp_path) -> None:
    fit, data, _ = small
    chosen = select_items(fit, per_benchmark=3, data=data, n_draws=50)
    assert chosen.calibration is not None
    chosen.table().to_csv(tmp_path / "selected_items.csv", index=False)
    chosen.summary().to_csv(tmp_path / "precision.csv", index=False)
    chosen.calibration.to_csv(tmp_path / "calibration.csv", index=False)
    back = Selection.load(tmp_path)
    assert back.item_ids == chosen.item_ids and back.method == "posterior" and back.calibration is not None
    np.testing.assert_allclose(back.calibration["interval_factor"], chosen.calibration["interval_factor"])
    chosen.calibration.assign(interval_factor=0.5).to_csv(tmp_path / "calibration.csv", index=False)
    with pytest.raises(DataError, match=r"calibration\.csv: interval_factor must be numbers of at least 1"):
        Selection.load(tmp_path)
    chosen.calibration.assign(ci="ninety").to_csv(tmp_path / "calibration.csv", index=False)
    with pytest.raises(DataError, match=r"calibration\.csv: ci must be one probability between 0 and 1"):
        Selection.load(tmp_path)
    chosen.calibration.drop(columns="ci").to_csv(tmp_path / "calibration.csv", index=False)
    with pytest.raises(DataError, match=r"calibration\.csv: no column 'ci'"):
        Selection.load(tmp_path)
    (tmp_path / "calibration.csv").unlink()
    assert Selection.load(tmp_path).calibration is None
    (tmp_path / "selected_items.csv").unlink()
    with pytest.raises(DataError, match=r"selected_items\.csv"):
        Selection.load(tmp_path)


def test_an_adaptive_test_is_calibrated_on_the_folds_systems_tested_on_their_folds_banks(small, folds, monkeypatch):
    _, _, bank = small
    calls: list[tuple[int, int]] = []
    tested = AdaptiveTest._tested

    def spy(self, on_bank, y, w, pool):
        masks = tested(self, on_bank, y, w, pool)
        calls.append((id(on_bank), len(y)))
        assert (masks.sum(axis=1) <= 4).all() and (masks <= w).all()
        return masks

    monkeypatch.setattr(AdaptiveTest, "_tested", spy)
    factors = AdaptiveTest(bank, max_items=4, cross_fit=folds, seed=2).interval_factors()
    # each fold's bank once, with its own systems (the folds run in threads, in any order)
    assert sorted(calls) == sorted((id(b), len(s)) for b, s in zip(folds.banks, folds.subjects, strict=True))
    assert factors is not None and factors.shape == (3,) and (factors >= 1).all()
    calls.clear()
    AdaptiveTest(bank, max_items=4, seed=2).interval_factors()  # without: the bank's own systems on the bank
    assert [c[0] for c in calls] == [id(bank)]


def _design(bank: ItemBank, selection: Selection) -> np.ndarray:
    design = np.zeros((1, bank.n_items))
    design[0, bank.columns(selection.item_ids)] = 1.0
    return design


@pytest.mark.slow
def test_on_mmlu_pro_s_22_system_bank_cross_fitting_gives_narrow_intervals_that_cover_held_out_systems() -> None:
    """MMLU-Pro (embedded in data/): 22 systems fit the bank, 7 are held out, 10 items per category chosen. The
    chosen items split the bank's own systems all right / all wrong, so the in-sample calibration widens the
    intervals 3-5 fold; the cross-fitted factors must be well below that and still cover the held-out systems."""
    import irtbayes as irt
    from irtbayes.evaluating.prediction import scope_membership
    from irtbayes.evaluating.study import split_subjects

    data = irt.load_dataset("mmlu_pro")
    train, test = split_subjects(list(data.subject_ids), "random", seed=1)
    bank_data = data.subset(subjects=train)
    fit = irt.fit(bank_data, sampler="approx", seed=1, progress=False)
    bank = ItemBank.from_fit(fit, n_draws=100, data=bank_data)
    chosen = select_items(bank, per_benchmark=10, source_fit=fit, data=bank_data, seed=1)
    assert chosen.calibration is not None
    crossed = chosen.calibration["interval_factor"].to_numpy()
    reference, observed = np.nan_to_num(bank.reference), (~np.isnan(bank.reference)).astype(float)
    in_sample = interval_factors(bank, reference, observed, _design(bank, chosen), seed=1)
    assert (in_sample[:-1] > 2.5).all(), in_sample  # the bias cross-fitting removes
    assert (crossed < in_sample).all() and (crossed[:-1] < 2.2).all(), (crossed, in_sample)

    held = data.subset(subjects=test)
    new = held.subset(items=chosen.item_ids)
    table = predict_scores(bank, new, selection=chosen, seed=1).table().set_index(["subject", "benchmark"])
    y, w = bank.response_arrays(held)
    names, member = scope_membership(bank)
    truth = ((y * w) @ (member > 0)) / (w @ (member > 0))
    covered, widths = [], []
    for j, subject in enumerate(held.subject_ids):
        for k, name in enumerate(names[:-1]):
            row = table.loc[(subject, name)]
            covered.append(row["accuracy_ci_low"] <= truth[j, k] <= row["accuracy_ci_high"])
            widths.append(row["accuracy_ci_high"] - row["accuracy_ci_low"])
    assert len(covered) == 98 and np.mean(covered) >= 0.85, np.mean(covered)
    assert np.mean(widths) < 0.25, np.mean(widths)  # 0.48 with the in-sample factors


def test_a_failed_refit_leaves_the_in_sample_calibration_and_says_so_unless_cross_fitting_was_asked_for(
    small, monkeypatch
) -> None:
    fit, data, _ = small

    def fail(*args, **kwargs):
        raise FitError("a fold's refit found no responses to item q7")

    monkeypatch.setattr(CrossFit, "from_fit", classmethod(lambda cls, *a, **k: fail()))
    chosen = select_items(fit, per_benchmark=3, data=data, n_draws=50)
    assert chosen.calibration is None
    assert chosen.warnings[-1].startswith("NOT CROSS-FITTED") and "item q7" in chosen.warnings[-1]
    with pytest.raises(FitError, match="item q7"):
        select_items(fit, per_benchmark=3, data=data, n_draws=50, cross_fit=True)


def test_the_folds_give_the_same_factors_one_at_a_time_and_in_threads(small, monkeypatch) -> None:
    """The folds run in threads (CROSS_FIT_WORKERS); each has its own seed, so the refits, the chosen items and
    the factors are those of the folds run one after another, in the folds' order."""
    fit, data, bank = small
    import irtbayes.evaluating.crossfit as crossfit

    bank = bank.thinned(20)  # one at a time or in threads, the folds must agree at any number of draws: 20 cost less

    def run(workers: int) -> tuple[CrossFit, pd.DataFrame, np.ndarray]:
        monkeypatch.setattr(crossfit, "CROSS_FIT_WORKERS", workers)
        made = CrossFit.from_fit(fit, bank, data=data, seed=5)
        chosen = made.factors(lambda b: select_items(b, per_benchmark=4).items["item"].tolist())
        adaptive = AdaptiveTest(bank, max_items=4, cross_fit=made, seed=2).interval_factors()
        return made, chosen, adaptive

    one, threads = run(1), run(2)
    assert one[0].subjects == threads[0].subjects
    for a, b in zip(one[0].banks, threads[0].banks, strict=True):
        np.testing.assert_array_equal(a.difficulty, b.difficulty)
    pd.testing.assert_frame_equal(one[1], threads[1])
    np.testing.assert_array_equal(one[2], threads[2])


def test_a_failed_fold_stops_the_folds_not_yet_started(monkeypatch) -> None:
    """With the folds in threads, an error (or Ctrl-C) in one drops the folds still waiting instead of running them
    (``Executor.map`` cancels its pending futures when a result raises; checked failing with a pool that does not)."""
    import threading
    import time

    import irtbayes.evaluating.crossfit as crossfit

    monkeypatch.setattr(crossfit, "CROSS_FIT_WORKERS", 2)
    started: list[int] = []
    lock = threading.Lock()

    def work(k: int) -> int:
        with lock:
            started.append(k)
        if k == 0:
            raise KeyboardInterrupt
        time.sleep(0.3)
        return k

    with pytest.raises(KeyboardInterrupt):
        crossfit._in_parallel(work, 8)
    assert 0 in started and len(started) <= 3, started
    assert crossfit._in_parallel(lambda k: k * k, 5) == [0, 1, 4, 9, 16]
