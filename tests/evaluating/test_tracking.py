"""Tracking checkpoints on a bank: planted changes are found where they were planted, identical checkpoints show
none, and bad input is named."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.cli.main import main
from irtbayes.core.errors import DataError
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating.bank import ItemBank
from irtbayes.evaluating.tracking import WHOLE, track
from irtbayes.fitting.fit import fit
from irtbayes.fitting.storage import save_fit

#: Regions of the planted shape change, on the truth's difficulty scale: as many items on either side of the
#: bank's centre (0.66), so the total stays nearly flat.
GAIN, LOSS = (1.2, 2.2), (-0.9, 0.1)
#: How far a credible change may sit from where it was planted: the fitted difficulties scatter about the
#: truth's (sd about 0.23 on this bank), so items of a planted region fall into the neighbouring bins too.
SCATTER = 0.5


@pytest.fixture(scope="module")
def bank():
    data, truth = simulate_responses(200, 1000, n_benchmarks=2, seed=11, missing=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = fit(data, sampler="approx", seed=1, progress=False)
    return fitted, data, truth


@pytest.fixture(scope="module")
def item_bank(bank):
    """The bank's draws and deviations, made once (``track`` makes them from the fit otherwise)."""
    fitted, data, _ = bank
    return ItemBank.from_fit(fitted, n_draws=150, data=data)


def checkpoints(truth, seed: int) -> ResponseData:
    """Four checkpoints on every bank item: c0 -> c1 a plain gain (+0.8), c1 -> c2 the same ability with a gain of
    2.5 logits on items in GAIN and a loss of 2.5 in LOSS, c2 -> c3 identical propensities (fresh answers)."""
    rng = np.random.default_rng(seed)
    b, a = truth["difficulty"].values, truth["discrimination"].values
    shift = np.where((b >= GAIN[0]) & (b < GAIN[1]), 2.5, 0.0) - np.where((b >= LOSS[0]) & (b < LOSS[1]), 2.5, 0.0)
    etas = {"c0": a * (0.0 - b), "c1": a * (0.8 - b)}
    etas["c2"] = etas["c1"] + shift
    etas["c3"] = etas["c2"]
    rows = []
    for name, eta in etas.items():
        y = (rng.random(len(b)) < 1 / (1 + np.exp(-eta))).astype(float)
        rows.append(pd.DataFrame({"subject": name, "item": truth["difficulty"].coords["item"].values, "response": y}))
    return ResponseData.from_long(pd.concat(rows), source=f"checkpoints seed {seed}")


def _overlaps(row: pd.Series, span: tuple[float, float]) -> bool:
    return row["region_low"] < span[1] + SCATTER and row["region_high"] > span[0] - SCATTER


@pytest.mark.parametrize("seed", [1, 2])  # 30 seeds: scripts/tracking_study.py, docs/validation.md
def test_planted_changes_are_found_and_identical_checkpoints_show_none(bank, item_bank, seed: int) -> None:
    fitted, _, truth = bank
    result = track(fitted, checkpoints(truth, seed), bank=item_bank, seed=seed)
    rows = result.changes
    credible = rows[rows["credible"]]
    # a plain gain: credible over the whole range, and no credible loss anywhere
    gain = credible[(credible["from"] == "c0")]
    whole = rows[(rows["from"] == "c0") & (rows["scope"] == "all") & (rows["region"] == WHOLE)].iloc[0]
    assert whole["credible"] and whole["accuracy_change_mean"] > 0.1, whole
    assert (gain["direction"] == "gain").all()
    # a flat total hiding a gain and a loss: each credible in a region it overlaps, none where nothing changed
    shape = credible[(credible["from"] == "c1") & (credible["scope"] == "all") & (credible["region"] != WHOLE)]
    gains, losses = shape[shape["direction"] == "gain"], shape[shape["direction"] == "loss"]
    assert len(gains) and all(_overlaps(r, GAIN) for _, r in gains.iterrows()), shape
    assert len(losses) and all(_overlaps(r, LOSS) for _, r in losses.iterrows()), shape
    total = rows[(rows["from"] == "c1") & (rows["scope"] == "all") & (rows["region"] == WHOLE)].iloc[0]
    largest = min(gains["accuracy_change_mean"].max(), -losses["accuracy_change_mean"].min())
    assert abs(total["accuracy_change_mean"]) < largest / 3  # the total hides them
    assert gains["beyond_ability_mean"].max() > 0.2 and losses["beyond_ability_mean"].min() < -0.2
    # identical checkpoints: nothing credible among the pair's rows
    assert credible[credible["from"] == "c2"].empty, credible[credible["from"] == "c2"]


def test_bad_input_is_named(bank, item_bank) -> None:
    fitted, data, truth = bank
    ckpts = checkpoints(truth, 1)
    with pytest.raises(DataError, match="at least 2 checkpoints"):
        track(fitted, ckpts.subset(subjects=["c0"]), bank=item_bank)
    with pytest.raises(DataError, match="baseline 'c9' is not a checkpoint"):
        track(fitted, ckpts, bank=item_bank, baseline="c9")
    with pytest.raises(DataError, match="already in the item bank"):
        track(fitted, data.subset(subjects=list(data.subject_ids[:2])), bank=item_bank)
    other = ckpts.long_frame().assign(item=lambda f: "x" + f["item"].astype(str))
    with pytest.raises(DataError, match="none of the checkpoints' 1000 items is in the bank"):
        track(fitted, ResponseData.from_long(other), bank=item_bank)
    # a baseline compares every checkpoint with it; an extra region outside the range is said, not a silent NaN
    result = track(fitted, ckpts, bank=item_bank, baseline="c0", regions=[(9.0, 10.0)])
    assert set(result.changes["from"]) == {"c0"} and set(result.changes["to"]) == {"c1", "c2", "c3"}
    assert any("hold no items of the bank" in note for note in result.notes)


def test_the_command_line_writes_the_tables(bank, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fitted, data, truth = bank
    save_fit(fitted, tmp_path / "bank")
    long = data.long_frame().merge(data.items["benchmark"].astype(str), left_on="item", right_index=True)
    long.to_csv(tmp_path / "bank.csv", index=False)
    ckpts = checkpoints(truth, 1)
    frame = ckpts.long_frame().assign(step=lambda f: f["subject"].str[1].astype(int) * 100)
    frame.to_csv(tmp_path / "ckpts.csv", index=False)
    code = main(
        ["track", str(tmp_path / "ckpts.csv"), "--fit", str(tmp_path / "bank"), "--data", str(tmp_path / "bank.csv"),
         "--step", "step", "--region", "1", "2", "--draws", "50", "--effect", "0.05", "--out", str(tmp_path / "out")]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    changes = pd.read_csv(tmp_path / "out" / "changes.csv")
    for column in ("from", "to", "scope", "region_low", "region_high", "items", "accuracy_change_mean",
                   "accuracy_change_ci_low", "accuracy_change_ci_high", "expected_change_mean",
                   "beyond_ability_mean", "detectable_change", "credible"):  # fmt: skip
        assert column in changes.columns
    assert ((changes["region_low"] == 1.0) & (changes["region_high"] == 2.0)).any()
    abilities = pd.read_csv(tmp_path / "out" / "abilities.csv")
    assert abilities["step"].tolist() == [0.0, 100.0, 200.0, 300.0]
    assert (tmp_path / "out" / "trajectory.png").stat().st_size > 1000
    assert "c1 -> c2" in out
    assert "too thin to show a change of 0.05 (all items): " in out  # no region of this bank can show 0.05
    # the report takes the folder as written: a section per pair, the figure and the abilities
    code = main(["report", str(tmp_path / "bank.csv"), "--fit", str(tmp_path / "bank"),
                 "--tracking", str(tmp_path / "out"), "--out", str(tmp_path / "rep")])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    page = (tmp_path / "rep" / "report.md").read_text()
    assert "## Checkpoints: where a change helped and where it hurt" in page
    assert "### c1 to c2" in page and (tmp_path / "rep" / "figures" / "tracking.svg").exists()
