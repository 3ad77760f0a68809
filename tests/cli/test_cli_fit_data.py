"""A saved fit reads its data again from any folder, the way they were first read (format, filter, columns)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from irtbayes.cli.main import main
from irtbayes.data import io
from irtbayes.data.simulate import simulate_responses

LM_EVAL = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "lm_eval_hf"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def logs_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """An approximate fit of the lm-eval logs read with ``--filter flexible-extract``, made from the logs' own
    folder with a relative path."""
    work = tmp_path / "work"
    shutil.copytree(LM_EVAL, work / "logs")
    monkeypatch.chdir(work)
    code, _, err = run(["fit", "logs", "--filter", "flexible-extract", "--sampler", "approx", "--out", "fit"], capsys)
    assert code == 0, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return work / "fit"


def test_the_card_records_the_absolute_path_format_and_options(logs_fit: Path) -> None:
    reading = json.loads((logs_fit / "card.json").read_text())["reading"]
    assert reading["path"] == str(logs_fit.parent / "logs") and Path(reading["path"]).is_absolute()
    assert reading["format"] == "lm-eval"
    assert reading["options"]["filter"] == "flexible-extract"


def test_a_verb_rereads_the_logs_with_their_filter_from_another_folder(
    logs_fit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the logs hold two filters of fx_gen: without the recorded one, reading them fails ("choose one with filter=")
    code, _, err = run(["export", "--fit", str(logs_fit), "--format", "pyirt", "--out", "p.jsonl"], capsys)
    assert code == 0, err
    rows = [json.loads(line) for line in (tmp_path / "elsewhere" / "p.jsonl").read_text().splitlines()]
    assert len(rows) == 3  # one line per subject, as the fit had
    # the same logs named again, without options of their own, are read as recorded too
    code, _, err = run(
        ["export", "--fit", str(logs_fit), "--format", "pyirt", "--data", str(logs_fit.parent / "logs"), "--out", "q"],
        capsys,
    )
    assert code == 0, err


def test_moved_data_are_an_error_naming_where_they_were(
    logs_fit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.move(logs_fit.parent / "logs", tmp_path / "moved")
    code, _, err = run(["export", "--fit", str(logs_fit), "--format", "pyirt", "--out", "p.jsonl"], capsys)
    assert code == 2
    assert f"{logs_fit.parent / 'logs'}: the data the fit was made from are no longer there" in err


def test_score_gives_the_same_numbers_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A table with its own column names, fitted from its folder; scoring new systems from elsewhere calibrates
    against the fit's data as from the first folder (no NO REFERENCE, the same intervals)."""
    data, _ = simulate_responses(60, 40, n_benchmarks=2, seed=3, missing=0.0)
    frame = data.long_frame().merge(data.items["benchmark"].astype(str), left_on="item", right_index=True)
    frame = frame.rename(columns={"subject": "model", "item": "question", "response": "correct"})
    work = tmp_path / "work"
    work.mkdir()
    frame[["model", "question", "correct", "benchmark"]].to_csv(work / "train.csv", index=False)
    new, _ = simulate_responses(3, 40, n_benchmarks=2, seed=9, missing=0.3)
    new.long_frame().assign(subject=lambda f: "new-" + f["subject"])[["subject", "item", "response"]].to_csv(
        work / "new.csv", index=False
    )
    monkeypatch.chdir(work)
    fit_args = ["--subject-col", "model", "--item-col", "question", "--response-col", "correct"]
    code, _, err = run(["fit", "train.csv", *fit_args, "--sampler", "approx", "--out", "fit"], capsys)
    assert code == 0, err
    code, here, err = run(["score", "new.csv", "--fit", "fit", "--out", "s1"], capsys)
    assert code == 0, err
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, there, err = run(["score", str(work / "new.csv"), "--fit", str(work / "fit"), "--out", "s2"], capsys)
    assert code == 0, err
    assert "NO REFERENCE" not in here + there
    first = pd.read_csv(work / "s1" / "scores.csv")
    second = pd.read_csv(tmp_path / "elsewhere" / "s2" / "scores.csv")
    pd.testing.assert_frame_equal(first, second)


def test_data_read_by_load_remember_how() -> None:
    data = io.load(LM_EVAL, filter="strict-match")
    assert data.reading is not None and data.reading["options"] == {"filter": "strict-match"}
    assert io.reread(data.reading).checksum() == data.checksum()
    assert repr(data).startswith(f"<ResponseData {LM_EVAL}: 3 subjects x 50 items")


def test_warnings_are_one_plain_line_each(tmp_path: Path) -> None:
    """Python's warnings reach the terminal once each, as ``warning: ...``, without source paths (a process of its
    own: under pytest the warnings are recorded, and the command line leaves them to the recorder)."""
    import subprocess
    import sys

    argv = ["fit", str(LM_EVAL), "--filter", "flexible-extract", "--sampler", "approx", "--out", "f", "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-m", "irtbayes", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr
    lines = [line for line in err.splitlines() if "standardised over only 3 subjects" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: "), err
    assert "UserWarning" not in err and ".py:" not in err
