"""The evaluation verbs end to end, in process through ``irtbayes.cli.main.main``: ``score``, ``select`` and
``adaptive`` on a small simulated bank saved to disk, the files they write, and the errors a user can cause.

The bank is ``simulated_fit(60, 40, n_benchmarks=2)`` (draws scattered around the truth; its convergence checks
fail, so every output must open with the UNCONVERGED warning); the new systems are simulated on the same items
and renamed so that none is in the bank.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import xarray as xr
from fake_openai import FakeOpenAI

from irtbayes.cli.main import main
from irtbayes.core.errors import FitError
from irtbayes.data import io as data_io
from irtbayes.data.simulate import simulate_responses
from irtbayes.evaluating import responders
from irtbayes.evaluating.crossfit import CrossFit
from irtbayes.examples import simulated_fit
from irtbayes.fitting.fit import fit as fit_model
from irtbayes.fitting.result import Fit
from irtbayes.fitting.storage import save_fit
from irtbayes.model.spec import ModelSpec

FIRST_COLUMNS = [
    "subject",
    "benchmark",
    "accuracy_mean",
    "accuracy_ci_low",
    "accuracy_ci_high",
    "items_seen",
    "items_total",
]


@dataclass(frozen=True)
class Bank:
    fit: Path
    new: Path  # long CSV of the new systems' responses
    new_frame: pd.DataFrame
    fitted: Path  # responses of systems the bank was fitted to
    warning: str  # the bank's warning, which every output opens with


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Bank:
    root = tmp_path_factory.mktemp("evaluate")
    fit, data = simulated_fit(60, 40, n_benchmarks=2)
    assert not fit.diagnostics.ok  # scattered draws: the outputs must carry the UNCONVERGED warning
    save_fit(fit, root / "fit")
    new, _ = simulate_responses(4, 40, n_benchmarks=2, seed=9, missing=0.4)
    frame = new.long_frame().assign(subject=lambda f: "new-" + f["subject"])[["subject", "item", "response"]]
    frame.to_csv(root / "new.csv", index=False)
    data.long_frame().loc[lambda f: f["subject"] == "subject003", ["subject", "item", "response"]].to_csv(
        root / "fitted.csv", index=False
    )
    return Bank(root / "fit", root / "new.csv", frame, root / "fitted.csv", "UNCONVERGED")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _assert_intervals_hold_means(table: pd.DataFrame, prefix: str) -> None:
    low, mean, high = table[f"{prefix}_ci_low"], table[f"{prefix}_mean"], table[f"{prefix}_ci_high"]
    bad = table.loc[~((low <= mean) & (mean <= high))]
    assert bad.empty, bad


# ---------------------------------------------------------------------------------------------- score
def test_score_writes_abilities_predicted_accuracy_and_summary(bank: Bank, tmp_path: Path, capsys) -> None:
    out = tmp_path / "scored"
    argv = ["score", "--fit", str(bank.fit), str(bank.new), "--out", str(out), "--target", "uniform", "--draws", "100"]
    code, stdout, _ = run(argv, capsys)
    assert code == 0
    assert stdout.startswith(bank.warning), stdout[:200]
    assert "Abilities (logits; 90% intervals)" in stdout and "Predicted accuracy over every item" in stdout
    assert sorted(p.name for p in out.iterdir()) == ["predicted_accuracy.csv", "scores.csv", "summary.json"]

    scores = pd.read_csv(out / "scores.csv")
    assert list(scores.columns[:6]) == [
        "subject",
        "n_responses",
        "ability_mean",
        "ability_sd",
        "ability_ci_low",
        "ability_ci_high",
    ]
    assert sorted(scores["subject"]) == sorted(bank.new_frame["subject"].unique())

    table = pd.read_csv(out / "predicted_accuracy.csv")
    assert list(table.columns[:7]) == FIRST_COLUMNS
    assert {"target_score_mean", "target_score_ci_low", "target_score_ci_high"} <= set(table.columns)
    assert len(table) == 4 * 3 and set(table["benchmark"]) == {"bench00", "bench01", "all"}
    _assert_intervals_hold_means(table, "accuracy")
    _assert_intervals_hold_means(table, "target_score")
    overall = table[table["benchmark"] == "all"].set_index("subject")
    answered = bank.new_frame.groupby("subject").size()
    assert overall["items_seen"].to_dict() == answered.to_dict() and (overall["items_total"] == 40).all()

    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"][0].startswith(bank.warning) and summary["predicted"]["target"] is not None
    assert len(summary["predicted"]["rows"]) == 12 and len(summary["abilities"]["subjects"]) == 4


def test_score_without_out_prints_both_tables_and_no_target(bank: Bank, tmp_path: Path, capsys) -> None:
    code, stdout, _ = run(["score", "--fit", str(bank.fit), str(bank.new), "--ci", "0.8", "--draws", "50"], capsys)
    assert code == 0 and "ability_mean" in stdout and "accuracy_mean" in stdout
    assert "80% intervals" in stdout and "target_score" not in stdout
    assert not list(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------------- select
def test_select_per_benchmark_and_with_exclusions(bank: Bank, tmp_path: Path, capsys) -> None:
    out = tmp_path / "chosen"
    code, stdout, _ = run(["select", "--fit", str(bank.fit), "--per-benchmark", "3", "--out", str(out)], capsys)
    assert code == 0 and stdout.startswith(bank.warning) and "6 items selected (posterior" in stdout
    items = pd.read_csv(out / "selected_items.csv")
    assert list(items.columns) == ["item", "benchmark", "order", "weight", "method", "score"]
    assert items.groupby("benchmark").size().to_dict() == {"bench00": 3, "bench01": 3}
    assert items["order"].tolist() == [1, 2, 3, 4, 5, 6] and items["item"].is_unique
    precision = pd.read_csv(out / "precision.csv")
    assert precision["items_selected"].tolist() == [3, 3] and (precision["expected_error"] > 0).all()

    exclude = tmp_path / "seen.txt"
    exclude.write_text("\n".join(items["item"]) + "\n")
    again = tmp_path / "anchors"
    argv = ["select", "--fit", str(bank.fit), "--items", "4", "--method", "anchors", "--exclude", str(exclude)]
    assert run([*argv, "--out", str(again)], capsys)[0] == 0
    anchors = pd.read_csv(again / "selected_items.csv")
    assert len(anchors) == 4 and not set(anchors["item"]) & set(items["item"]) and set(anchors["method"]) == {"anchors"}
    assert anchors.groupby("benchmark")["weight"].sum().round(6).tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------------- adaptive
def test_adaptive_from_a_response_file_with_exposure_control(bank: Bank, tmp_path: Path, capsys) -> None:
    subject = "new-subject001"
    answered = set(bank.new_frame.loc[bank.new_frame["subject"] == subject, "item"])
    exposure = tmp_path / "exposure.json"
    common = ["adaptive", "--fit", str(bank.fit), "--responses", str(bank.new), "--subject", subject]
    common += ["--max-items", "5", "--exposure", str(exposure), "--no-progress"]
    code, stdout, _ = run([*common, "--out", str(tmp_path / "first")], capsys)
    assert code == 0 and stdout.startswith(bank.warning)
    assert f"Adaptive test of {subject}: 5 items; stopped: the budget of 5 items was reached" in stdout
    first = tmp_path / "first"
    assert sorted(p.name for p in first.iterdir()) == ["log.csv", "predicted_accuracy.csv", "summary.json", "trace.png"]
    log = pd.read_csv(first / "log.csv")
    assert len(log) == 5 and set(log["item"]) <= answered and log["item"].is_unique
    truth = bank.new_frame.set_index(["subject", "item"])["response"]
    assert log["response"].tolist() == [truth[(subject, i)] for i in log["item"]]
    table = pd.read_csv(first / "predicted_accuracy.csv")
    assert list(table.columns[:7]) == FIRST_COLUMNS and table.loc[table["benchmark"] == "all", "items_seen"].item() == 5
    _assert_intervals_hold_means(table, "accuracy")
    summary = json.loads((first / "summary.json").read_text())
    assert summary["stop_reason"] == "the budget of 5 items was reached" and summary["warnings"][0].startswith("UNC")
    state = json.loads(exposure.read_text())
    assert state["n_tests"] == 1 and set(state["counts"]) == set(log["item"])

    # a second test may not reuse an item given in more than half of the tests so far: all five are blocked
    code, stdout, _ = run([*common, "--max-rate", "0.5", "--out", str(tmp_path / "second")], capsys)
    assert code == 0
    second = pd.read_csv(tmp_path / "second" / "log.csv")
    assert len(second) == 5 and not set(second["item"]) & set(log["item"]) and set(second["item"]) <= answered
    state = json.loads(exposure.read_text())
    assert state["n_tests"] == 2 and state["max_rate"] == 0.5 and len(state["counts"]) == 10


def test_an_interrupted_adaptive_test_writes_the_answers_so_far(
    bank: Bank, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = responders.file_responder

    def interrupted_after_three(*args: Any, **kwargs: Any) -> Callable[[str], float]:
        respond = real(*args, **kwargs)
        calls = iter(range(100))

        def answer(item: str) -> float:
            if next(calls) == 3:
                raise KeyboardInterrupt
            return respond(item)

        return answer

    monkeypatch.setattr(responders, "file_responder", interrupted_after_three)
    out, exposure = tmp_path / "test", tmp_path / "exposure.json"
    argv = ["adaptive", "--fit", str(bank.fit), "--responses", str(bank.new), "--subject", "new-subject002"]
    code, _, stderr = run([*argv, "--exposure", str(exposure), "--out", str(out)], capsys)
    assert code == 130 and "interrupted after 3 answers" in stderr and "not updated" in stderr
    assert len(pd.read_csv(out / "log.csv")) == 3 and not exposure.exists()
    assert json.loads((out / "summary.json").read_text())["stop_reason"] == "interrupted"
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary file left behind


@pytest.fixture
def chat() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        server.default = {"content": "Answer: A"}  # every question answered with the letter A
        yield server


def test_adaptive_against_an_endpoint_grades_and_caches_the_replies(bank: Bank, tmp_path: Path, capsys, chat) -> None:
    items = pd.DataFrame({"item": [f"item{k:05d}" for k in range(40)]})
    items["text"] = [f"Question {k}?" for k in range(40)]
    items["choices"] = "yes|no"
    items["answer"] = ["yes" if k % 2 == 0 else "no" for k in range(40)]  # the server's A is right on even items
    items.to_csv(tmp_path / "items.csv", index=False)
    out = tmp_path / "endpoint"
    argv = ["adaptive", "--fit", str(bank.fit), "--endpoint", chat.url, "--model", "tiny", "--api-key-env", "NO_KEY"]
    argv += ["--items-file", str(tmp_path / "items.csv"), "--max-items", "4", "--score", "all", "--out", str(out)]
    code, stdout, _ = run(argv, capsys)
    assert code == 0 and "Adaptive test of tiny: 4 items" in stdout and len(chat.requests) == 4
    log = pd.read_csv(out / "log.csv")
    expected = [1.0 if int(i.removeprefix("item")) % 2 == 0 else 0.0 for i in log["item"]]
    assert log["response"].tolist() == expected
    exchanges = pd.read_csv(out / "exchanges.csv")
    assert exchanges["item"].tolist() == log["item"].tolist() and set(exchanges["parsed"]) == {"A"}
    assert (out / "llm_cache").is_dir()
    assert run(argv, capsys)[0] == 0 and len(chat.requests) == 4  # the rerun is answered from the cache


# ---------------------------------------------------------------------------------------------- errors
def _multidimensional(tmp_path: Path) -> Path:
    fit, data = simulated_fit(20, 20, n_benchmarks=2, n_domains=2)
    ability = fit.posterior["ability"]
    two = xr.concat([ability, ability], dim="dim").assign_coords(dim=["domain1", "domain2"])
    posterior = fit.posterior[["difficulty", "discrimination"]].assign(
        ability=two.transpose("chain", "draw", "subject", "dim")
    )
    spec = ModelSpec(kind="2pl", hierarchy="none", dims="domain")
    return save_fit(Fit.from_posterior(posterior, data, spec=spec), tmp_path / "multi")


def test_errors_are_one_line_with_exit_code_2(bank: Bank, tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "out")
    code, _, err = run(["score", "--fit", str(bank.fit), str(bank.fitted)], capsys)
    assert code == 2 and "1 subject(s) are already in the item bank: subject003" in err and "--allow-fitted" in err
    assert len(err.strip().splitlines()) == 1
    assert run(["score", "--fit", str(bank.fit), str(bank.fitted), "--allow-fitted", "--draws", "20"], capsys)[0] == 0

    unknown = tmp_path / "unknown.csv"
    bank.new_frame.head(3).assign(item=["item00000", "item00001", "mystery"]).to_csv(unknown, index=False)
    code, _, err = run(["score", "--fit", str(bank.fit), str(unknown)], capsys)
    assert code == 2 and "not in the fitted item bank: mystery" in err

    code, _, err = run(["select", "--fit", str(bank.fit), "--items", "1", "--out", out], capsys)
    assert code == 2 and "items=1 cannot keep each of the bank's 2 benchmarks" in err
    code, _, err = run(
        ["select", "--fit", str(bank.fit), "--items", "4", "--exclude", "item00001,nope", "--out", out], capsys
    )
    assert code == 2 and "not in the bank: nope" in err

    argv = ["adaptive", "--fit", str(bank.fit), "--responses", str(bank.fitted), "--out", out]
    code, _, err = run(argv, capsys)
    assert code == 2 and "already in the item bank: subject003" in err
    code, _, err = run(["adaptive", "--fit", str(bank.fit), "--responses", str(bank.new), "--out", out], capsys)
    assert code == 2 and "holds 4 subjects" in err

    multi = str(_multidimensional(tmp_path))
    code, _, err = run(["select", "--fit", multi, "--per-benchmark", "2", "--out", out], capsys)
    assert code == 2 and "several ability dimensions" in err
    assert not (tmp_path / "out").exists()
    few = tmp_path / "few.csv"  # the multidimensional bank's 20 items
    bank.new_frame.loc[bank.new_frame["item"] < "item00020"].to_csv(few, index=False)
    code, stdout, _ = run(["score", "--fit", multi, str(few), "--draws", "20"], capsys)
    assert code == 0 and "MULTIDIMENSIONAL" in stdout and "domain2" in stdout and "accuracy_mean" not in stdout


# ---------------------------------------------------------------------------------------------- cross-fitting
def test_select_cross_fits_a_small_bank_and_score_takes_its_factors(tmp_path: Path, capsys, monkeypatch) -> None:
    simulated, _ = simulate_responses(24, 40, n_benchmarks=2, seed=3)
    source = tmp_path / "data.csv"
    labels = simulated.items[["benchmark"]]
    simulated.long_frame()[["subject", "item", "response"]].join(labels, on="item").to_csv(source, index=False)
    data = data_io.load(source)
    save_fit(fit_model(data, sampler="approx", seed=3, progress=False), tmp_path / "fit")
    chosen = tmp_path / "chosen"
    bank_args = ["--fit", str(tmp_path / "fit"), "--data", str(source), "--draws", "50"]
    code, stdout, err = run(["select", *bank_args, "--per-benchmark", "4", "--out", str(chosen)], capsys)
    assert code == 0 and "cross-fitted (4 folds, approx refits, 90%)" in stdout, err
    assert "calibration.csv" in stdout
    calibration = pd.read_csv(chosen / "calibration.csv")
    assert calibration["benchmark"].tolist() == ["bench00", "bench01", "all"]
    assert (calibration["interval_factor"] >= 1).all()

    items = pd.read_csv(chosen / "selected_items.csv")["item"]
    frame = data.long_frame()
    frame = frame[frame["item"].isin(items) & frame["subject"].isin(list(data.subject_ids[:3]))]
    new = tmp_path / "new.csv"
    frame.assign(subject=lambda f: "new-" + f["subject"])[["subject", "item", "response"]].to_csv(new, index=False)
    scored = tmp_path / "scored"
    argv = ["score", *bank_args, str(new), "--selection", str(chosen), "--out", str(scored)]
    code, _, _ = run(argv, capsys)
    assert code == 0
    table = pd.read_csv(scored / "predicted_accuracy.csv")
    want = dict(zip(calibration["benchmark"], calibration["interval_factor"], strict=True))
    assert table["interval_factor"].tolist() == pytest.approx(table["benchmark"].map(want).tolist())

    code, _, err = run([*argv[:-2], "--ci", "0.8"], capsys)
    assert code == 2 and "calibrated for 0.9 intervals" in err and "--ci 0.9" in err

    # an adaptive test on the same bank is calibrated by cross-fitting too, unless told not to
    subject = "new-" + str(data.subject_ids[0])
    for flag, want in (([], "cross-fitted"), (["--no-cross-fit"], "in-sample")):
        out = tmp_path / f"test{len(flag)}"
        argv = ["adaptive", *bank_args, "--responses", str(new), "--subject", subject, "--max-items", "4"]
        code, _, _ = run([*argv, *flag, "--no-progress", "--out", str(out)], capsys)
        assert code == 0
        assert json.loads((out / "summary.json").read_text())["settings"]["calibration"] == want

    # refits that fail: the test is calibrated in-sample and says why; asked for, the failure is the error
    def fail(cls, *args, **kwargs):
        raise FitError("a fold's refit found no responses to item q7")

    monkeypatch.setattr(CrossFit, "from_fit", classmethod(fail))
    out = tmp_path / "fallback"
    code, _, err = run([*argv, "--no-progress", "--out", str(out)], capsys)
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0 and summary["settings"]["calibration"] == "in-sample", err
    assert any(w.startswith("NOT CROSS-FITTED") and "item q7" in w for w in summary["warnings"]), summary["warnings"]
    code, _, err = run([*argv, "--cross-fit", "--no-progress", "--out", str(tmp_path / "asked")], capsys)
    assert code == 2 and "item q7" in err

    # a selection made without cross-fitting leaves no earlier factors behind
    code, stdout, _ = run(
        ["select", *bank_args, "--per-benchmark", "4", "--no-cross-fit", "--out", str(chosen)], capsys
    )
    assert code == 0 and "cross-fitted" not in stdout and not (chosen / "calibration.csv").exists()
