"""Item checks (:mod:`irtbayes.checks.items`) on posteriors built around a simulation's truth (no sampling): planted
reversed, flat and leaked items are flagged with the right flag, group and direction; a bank of sound items flags
none; bad inputs name the column or file; the command line writes its files."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import argparse
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from irtbayes.checks.items import MAX_PANELS, ItemChecks, _laplace, check_items, load_item_checks, load_item_flags
from irtbayes.cli.items import cmd_check_items
from irtbayes.cli.main import main
from irtbayes.cli.parser import add_check_items_verb
from irtbayes.core.errors import DataError, FitError, SpecError
from irtbayes.data.io import load
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import planted_item_faults, posterior_near_truth, simulate_responses
from irtbayes.fitting.result import Fit
from irtbayes.fitting.storage import save_fit
from irtbayes.model.spec import ModelSpec


def near_truth(data: ResponseData, truth: object, *, seed: int = 8) -> Fit:
    return Fit.from_posterior(posterior_near_truth(data, truth, chains=2, draws=30, seed=seed), data)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def planted() -> tuple[Fit, ResponseData, pd.DataFrame]:
    data, truth, planted = planted_item_faults(1000, 40, n_reversed=3, n_flat=3, n_leaked=3, seed=7)
    return near_truth(data, truth), data, planted


@pytest.fixture(scope="module")
def checked(planted: tuple[Fit, ResponseData, pd.DataFrame]) -> ItemChecks:
    fit, data, _ = planted
    return check_items(fit, data, group_col="group", n_draws=20, seed=1)


def test_planted_faults_are_flagged_with_their_flag_group_and_direction(
    planted: tuple[Fit, ResponseData, pd.DataFrame], checked: ItemChecks
) -> None:
    _, _, truth = planted
    table = checked.items.merge(truth.rename(columns={"group": "planted_group"}), on="item")
    faulty = table.loc[table["fault"] != ""]
    shown = faulty[["item", "fault", "flag", "flags", "slope_mean", "p_flat", "dif_group", "planted_group", "p_dif"]]
    assert (faulty["flag"] == faulty["fault"]).all(), shown.to_string()
    leaked = faulty.loc[faulty["fault"] == "dif"]
    assert (leaked["dif_group"] == leaked["planted_group"]).all(), shown.to_string()
    assert (leaked["dif_direction"] == "above").all() and (leaked["dif_effect_ci_low"] > 0.5).all(), shown.to_string()
    reversed_ = faulty.loc[faulty["fault"] == "reversed"]
    assert (reversed_["slope_ci_high"] < 0).all() and (reversed_["p_reversed"] > 0.95).all(), shown.to_string()
    sound = table.loc[table["fault"] == ""]
    assert (sound["flag"] != "").sum() <= 1, sound.loc[sound["flag"] != ""].to_string()
    # sound items' slopes are the truth's discriminations (logits per sd of ability), give or take
    assert sound["slope_mean"].between(0.2, 3.5).all()
    # the flagged come first, ranked, each with its local false-flag probability within the rule
    n_flagged = int((checked.items["flag"] != "").sum())
    assert checked.items["rank"].head(n_flagged).tolist() == list(range(1, n_flagged + 1))
    assert (checked.items["local_false_flag"].head(n_flagged) <= 0.05).all()
    assert checked.items["local_false_flag"].iloc[n_flagged:].isna().all()
    flags = checked.item_flags()
    assert len(flags) == 40 and {f for f in flags.values() if f} == {"reversed", "flat", "dif"}


def test_a_bank_of_sound_items_flags_none() -> None:
    data, truth, planted = planted_item_faults(300, 80, n_reversed=0, n_flat=0, n_leaked=0, seed=11)
    assert (planted["fault"] == "").all()
    result = check_items(near_truth(data, truth), data, group_col="group", n_draws=20)
    flagged = result.items.loc[result.items["flag"] != ""]
    assert len(flagged) <= 1, flagged.to_string()
    # the fitted prior of the DIF effects puts (nearly) all its weight on no effect
    assert result.settings["dif_prior_weights"][0.0] > 0.9, result.settings["dif_prior_weights"]


def test_groups_from_a_mapping_or_a_file_are_those_of_the_column(
    planted: tuple[Fit, ResponseData, pd.DataFrame], checked: ItemChecks, tmp_path: Path
) -> None:
    fit, data, _ = planted
    labels = data.subjects["group"]
    path = tmp_path / "groups.csv"
    pd.DataFrame({"subject": labels.index, "group": labels.to_numpy()}).to_csv(path, index=False)
    for groups in (labels.to_dict(), path, str(path)):
        other = check_items(fit, data, groups=groups, n_draws=20, seed=1)  # type: ignore[arg-type]
        pd.testing.assert_frame_equal(
            other.items[["item", "flag", "dif_group"]], checked.items[["item", "flag", "dif_group"]]
        )
    assert other.settings["groups"] == str(path)


def test_without_groups_dif_is_not_checked(planted: tuple[Fit, ResponseData, pd.DataFrame]) -> None:
    fit, data, truth = planted
    result = check_items(fit, data, n_draws=10)
    assert result.items["p_dif"].isna().all() and (result.items["dif_group"] == "").all()
    assert "no groups given: not checked" in result.to_text()
    flagged = set(result.items.loc[result.items["flag"] != "", "item"])
    assert set(truth.loc[truth["fault"].isin(["reversed", "flat"]), "item"]) <= flagged


def test_bad_groups_name_the_column_or_file(planted: tuple[Fit, ResponseData, pd.DataFrame], tmp_path: Path) -> None:
    fit, data, _ = planted
    with pytest.raises(DataError, match=r"no subject column 'family'.*the subject columns are group"):
        check_items(fit, data, group_col="family")
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"model": ["a"], "family": ["x"]}).to_csv(bad, index=False)
    with pytest.raises(DataError, match=rf"{bad}: a groups file needs the columns 'subject' and 'group'; found model"):
        check_items(fit, data, groups=bad)
    twice = tmp_path / "twice.csv"
    pd.DataFrame({"subject": ["subject000", "subject000"], "group": ["a", "b"]}).to_csv(twice, index=False)
    with pytest.raises(DataError, match=rf"{twice}: subject\(s\) subject000 are given more than one group"):
        check_items(fit, data, groups=twice)
    with pytest.raises(DataError, match=r"no such groups file"):
        check_items(fit, data, groups=tmp_path / "missing.csv")
    one = {s: "all" for s in data.subject_ids}
    with pytest.raises(DataError, match="at least two groups"):
        check_items(fit, data, groups=one)
    with pytest.raises(SpecError, match="group_col or groups, not both"):
        check_items(fit, data, group_col="group", groups=one)


def test_bad_settings_graded_fits_and_other_data_are_refused(planted: tuple[Fit, ResponseData, pd.DataFrame]) -> None:
    fit, data, _ = planted
    with pytest.raises(SpecError, match="alpha must be in"):
        check_items(fit, data, alpha=1.5)
    with pytest.raises(SpecError, match="rule one of"):
        check_items(fit, data, rule="bonferroni")
    with pytest.raises(SpecError, match="dif_prior"):
        check_items(fit, data, dif_prior="flat")
    other, _ = simulate_responses(1000, 40, seed=99)
    with pytest.raises(FitError, match="not the data the fit was made from"):
        check_items(fit, other)
    graded = Fit(fit.idata, ModelSpec(kind="grm"), fit.sampler, fit.data_checksum, fit.diagnostics)
    with pytest.raises(SpecError, match="binary IRT models"):
        check_items(graded, data)


def test_fractional_scores_and_few_subjects_are_said(tmp_path: Path) -> None:
    data, truth = simulate_responses(30, 60, n_trials=4, seed=5)
    data = data.without_trials()  # the shares of 4 trials as fractional scores
    frame = data.responses.copy()
    mirrored = frame["item"] == "item00000"
    frame.loc[mirrored, "response"] = 1 - frame.loc[mirrored, "response"]  # item00000 is scored backwards
    flipped = ResponseData.from_long(frame, items=data.items.reset_index(), source="mirrored")
    result = check_items(near_truth(flipped, truth), flipped, n_draws=20)
    assert result.settings["likelihood"] == "fractional-logit quasi-likelihood"
    assert any("quasi-likelihood" in n for n in result.notes) and any(
        "no item can be shown flat" in n for n in result.notes
    )
    row = result.items.set_index("item").loc["item00000"]
    assert row["flag"] == "reversed", result.items.head().to_string()


def test_laplace_fits_an_offset_under_guessing() -> None:
    """The Fisher-scoring regression recovers a group's offset on a 3PL curve (guessing 0.25)."""
    rng = np.random.default_rng(3)
    n = 20_000
    eta = rng.normal(size=n)
    member = (rng.uniform(size=n) < 0.3).astype(float)
    guessing = np.full(n, 0.25)
    p = guessing + (1 - guessing) / (1 + np.exp(-(eta + 0.2 + 1.5 * member)))
    y = (rng.uniform(size=n) < p).astype(float)
    key = np.zeros(n, dtype=np.int64)
    mode, sd, ok = _laplace(y, member, key, np.zeros((1, 2)), offset=eta, guessing=guessing, prior_sd=(3.0, 1.0))
    assert ok and abs(mode[0, 0] - 0.2) < 0.1 and abs(mode[0, 1] - 1.5) < 3 * sd[0], (mode, sd)


def test_result_contract_and_files(checked: ItemChecks, tmp_path: Path) -> None:
    table = checked.summary()
    assert {"slope_ci_low", "slope_ci_high", "dif_effect_ci_low", "p_reversed"} <= set(table.columns)
    assert table.attrs["ci_prob"] == 0.9 and table.attrs["alpha"] == 0.05
    values = checked.to_dict()
    assert json.loads(json.dumps(values)) == values
    assert values["counts"] == {"reversed": 3, "flat": 3, "dif": 3}
    lines = checked.to_text().splitlines()
    flagged = checked.flagged
    assert lines[0].startswith(
        "Item checks of 40 items answered by 1000 subjects (20 posterior draws): 3 reversed, 3 flat, 3 dif."
    )
    ranked = [line for line in lines if line[:4].strip().rstrip(".").isdigit()]
    assert len(ranked) == len(flagged) and all(item in line for item, line in zip(flagged["item"], ranked, strict=True))
    assert any("reversed: slope" in line and "P(slope < 0)" in line for line in ranked)
    assert any("dif: group g" in line and "above the others by" in line for line in ranked)
    figure = checked.plot_flagged(top=50)
    assert isinstance(figure, Figure)
    assert 1 <= sum(ax.get_visible() for ax in figure.axes) <= MAX_PANELS
    plt.close("all")
    assert checked.save(tmp_path / "flags") == ["item_flags.csv", "item_flags.txt", "item_flags.png"]
    written = pd.read_csv(tmp_path / "flags" / "item_flags.csv", keep_default_na=False)
    assert written["item"].tolist() == checked.items["item"].tolist()
    assert (tmp_path / "flags" / "item_flags.png").stat().st_size > 1000


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fit saved with the path of its data (a long CSV), and a groups file."""
    root = tmp_path_factory.mktemp("cli")
    data, truth, _ = planted_item_faults(200, 40, n_reversed=2, n_flat=0, n_leaked=2, seed=4)
    csv = root / "responses.csv"
    data.responses.to_csv(csv, index=False)
    loaded = load(csv)
    truth = truth.sel(subject=loaded.subject_ids.to_numpy(), item=loaded.item_ids.to_numpy())
    save_fit(near_truth(loaded, truth), root / "fit")
    groups = root / "groups.csv"
    data.subjects["group"].rename_axis("subject").reset_index().to_csv(groups, index=False)
    return root, groups


def test_the_command_writes_the_files(saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    root, groups = saved
    parser = argparse.ArgumentParser()
    add_check_items_verb(parser.add_subparsers(), cmd_check_items)
    out = root / "flags"
    args = parser.parse_args(["check-items", "--fit", str(root / "fit"), "--groups", str(groups), "--out", str(out)])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Item checks of 40 items answered by 200 subjects (60 posterior draws)")
    assert "Wrote item_flags.csv, item_flags.txt, item_flags.png" in printed
    assert {p.name for p in out.iterdir()} == {"item_flags.csv", "item_flags.txt", "item_flags.png"}


def test_irtbayes_check_items_runs_from_the_command_line(saved: tuple[Path, Path], tmp_path: Path) -> None:
    root, groups = saved
    out = tmp_path / "flags"
    assert main(["check-items", "--fit", str(root / "fit"), "--groups", str(groups), "--out", str(out)]) == 0
    assert (out / "item_flags.csv").is_file() and (out / "item_flags.txt").is_file()
    assert main(["check-items", "--fit", str(root / "fit"), "--group-col", "family", "--out", str(out)]) == 2


def test_the_audit_leaves_the_flagged_items_out_and_says_so(
    saved: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, groups = saved
    flags = tmp_path / "flags"
    assert main(["check-items", "--fit", str(root / "fit"), "--groups", str(groups), "--out", str(flags)]) == 0
    # the reports below are read as text: their figures are drawn but not rendered (empty PNG and SVG files),
    # rendering being most of the time a report takes
    monkeypatch.setattr(Figure, "savefig", lambda self, *args, **kwargs: None)
    flagged = load_item_flags(flags)
    left = sorted(item for item, flag in flagged.items() if flag)
    assert left, "the planted faults are flagged"
    out = tmp_path / "audit"
    argv = ["audit", "--fit", str(root / "fit"), "--flags", str(flags), "--exclude-flagged", "--bins", "4"]
    assert main([*argv, "--out", str(out)]) == 0
    settings = json.loads((out / "summary.json").read_text())["settings"]
    assert settings["excluded_items"] == left
    assert len(pd.read_csv(out / "items.csv")) == 40 - len(left)
    assert f"{len(left)} flagged item" in (out / "audit.txt").read_text()
    # the report lists them, most certain first, and says they were left out
    md = (out / "report" / "report.md").read_text()
    assert f"{len(left)} of 40 items flagged" in md and "left out of every measure above" in md
    first = load_item_checks(flags).iloc[0]
    assert first["flag"] != "" and f"| {first['item']} |" in md.split("## Flagged items")[1]
    report_dir = tmp_path / "report"
    assert (
        main(
            ["report", "--fit", str(root / "fit"), "--audit", str(out), "--flags", str(flags), "--out", str(report_dir)]
        )
        == 0
    )
    assert "## Flagged items" in (report_dir / "report.md").read_text()
