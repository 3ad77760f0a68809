"""`irtbayes data ...`: the summary on the default data, on real lm-eval logs, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from irtbayes.cli.main import main

LM_EVAL = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval" / "lm_eval_hf"


def test_summary_of_default_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary"]) == 0
    out = capsys.readouterr().out
    assert "29 subjects x 12032 items" in out
    assert "Meta-Llama-3_1-70B-Instruct" in out


def test_summary_json_of_default_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["n_subjects"], summary["n_items"]) == (29, 12032)
    assert len(summary["benchmarks"]) == 14
    kinds = {row["kind"] for row in summary["uninformative_items"]}
    assert kinds == {"all_correct", "all_wrong"}


def test_summary_of_lm_eval_logs_lists_models_tasks_and_items(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(LM_EVAL), "--filter", "strict-match"]) == 0
    out = capsys.readouterr().out
    assert "3 subjects x 50 items" in out
    for name in ("models/tiny-gpt2-a", "models/tiny-gpt2-b", "models/tiny-gpt2-c"):
        assert name in out
    lines = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("fx_")}
    assert lines["fx_mc"][2] == "30" and lines["fx_gen"][2] == "20", out


def test_empty_folder_and_empty_file_exit_2_naming_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(tmp_path)]) == 2
    assert f"{tmp_path}: a folder with no evaluation logs" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["data", "summary", str(empty)]) == 2
    assert f"{empty}: the file is empty" in capsys.readouterr().err


def test_binary_flag_refuses_fractions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.csv"
    path.write_text("subject,item,response\na,q,0.5\nb,q,1\n")
    assert main(["data", "summary", str(path), "--binary"]) == 2
    assert "line 2 holds 0.5, but binary" in capsys.readouterr().err
    assert main(["data", "summary", str(path)]) == 0
    assert "fractional scores" in capsys.readouterr().out


def test_data_list_names_embedded_and_external_sets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "mmlu_pro" in out and "embedded" in out and "external" in out


def test_summary_of_lm_eval_logs_with_two_filters_shows_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(LM_EVAL)]) == 0
    out = capsys.readouterr().out
    assert "Tasks, filters and metrics logged" in out and "Benchmarks by condition" in out
    for filt in ("strict-match", "flexible-extract"):
        assert any(line.split()[:2] == ["fx_gen", filt] for line in out.splitlines()), out
    assert main(["data", "summary", str(LM_EVAL), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert {(c["task"], c["filter"]) for c in payload["lm_eval_choices"]} == {
        ("fx_gen", "flexible-extract"), ("fx_gen", "strict-match"), ("fx_mc", "none")
    }  # fmt: skip
    assert sorted(payload["conditions"]) == ["flexible-extract", "none", "strict-match"]


def test_fit_on_lm_eval_logs_with_two_filters_asks_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", str(LM_EVAL), "--out", str(tmp_path / "fit")]) == 2
    err = capsys.readouterr().err
    assert "several filters" in err and "strict-match" in err and "--filter" in err
    assert not (tmp_path / "fit").exists()
