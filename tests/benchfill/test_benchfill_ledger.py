"""The BenchFill ledger: append-only, crash-safe JSONL of every decision."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from irtbayes.benchfill.acceptance import decide, decide_all
from irtbayes.benchfill.candidates import Candidate
from irtbayes.benchfill.ledger import LEDGER_COLUMNS, Ledger, decision_records
from irtbayes.core.errors import DataError


def record(cid="c1", decision="accepted", **fields):
    base = {
        "candidate_id": cid,
        "source": "llm:gen",
        "prompt_hash": "ab" * 32,
        "aim": (0.5, 1.0, 3),
        "difficulty_mean": 0.74,
        "difficulty_ci_low": 0.55,
        "difficulty_ci_high": 0.93,
        "discrimination_mean": 1.2,
        "discrimination_ci_low": 0.6,
        "discrimination_ci_high": 1.9,
        "p_in_aim": 0.91,
        "p_discrimination_positive": 1.0,
        "n_responses": 24,
        "decision": decision,
        "reason": "in aim" if decision == "accepted" else "too easy",
    }
    return base | fields


def test_append_and_read(tmp_path):
    ledger = Ledger(tmp_path / "runs" / "ledger.jsonl", run_id="run-1")
    assert ledger.read().empty and list(ledger.read().columns) == list(LEDGER_COLUMNS)
    written = ledger.append(
        [
            record("c1"),
            record("c2", "rejected", p_in_aim=np.float64(0.2), n_responses=np.int64(24), difficulty_mean=float("nan")),
        ]
    )
    assert written == 2
    table = ledger.read()
    assert list(table.columns) == list(LEDGER_COLUMNS)
    assert list(table["candidate_id"]) == ["c1", "c2"] and list(table["decision"]) == ["accepted", "rejected"]
    assert table.loc[0, "aim_lo"] == 0.5 and table.loc[0, "aim_hi"] == 1.0 and table.loc[0, "aim_bin"] == 3
    assert table.loc[1, "p_in_aim"] == 0.2 and np.isnan(table.loc[1, "difficulty_mean"])
    assert set(table["run_id"]) == {"run-1"} and table["timestamp"].notna().all()
    raw = [json.loads(line) for line in ledger.path.read_text().splitlines()]
    assert raw[1]["difficulty_mean"] is None, "NaN must be written as JSON null"
    assert list(raw[0]) == list(LEDGER_COLUMNS)


def test_rerun_continues_the_ledger(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path, run_id="first").append([record("c1"), record("c2")])
    second = Ledger(path)
    second.append([record("c3", "rejected"), record("c1", "rejected", reason="uncertain")])
    table = Ledger(path).read()
    assert list(table["candidate_id"]) == ["c1", "c2", "c3", "c1"]
    assert list(table["run_id"]) == ["first", "first", second.run_id, second.run_id]
    assert second.run_id != "first"
    latest = Ledger(path).latest()
    assert latest.loc["c1", "decision"] == "rejected" and latest.loc["c1", "reason"] == "uncertain"
    assert len(latest) == 3


def test_append_is_one_write(tmp_path, monkeypatch):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    calls = []
    real_write = os.write

    def counting_write(fd, data):
        calls.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counting_write)
    ledger.append([record(f"c{k}") for k in range(5)])
    monkeypatch.undo()
    assert len(calls) == 1, f"{len(calls)} writes for one append"
    assert calls[0] == ledger.path.stat().st_size


def test_torn_last_line_is_cut_and_kept_aside(tmp_path, caplog):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).append([record("c1"), record("c2")])
    complete = path.read_bytes()
    torn = b'{"candidate_id": "c3", "source": "llm:gen", "decis'
    path.write_bytes(complete + torn)
    with caplog.at_level(logging.WARNING):
        ledger = Ledger(path)
    assert ledger.repaired is not None and "line 3 was torn" in ledger.repaired
    assert any("torn" in r.getMessage() for r in caplog.records)
    assert path.read_bytes() == complete, "the complete lines must survive unchanged"
    aside = path.with_name("ledger.jsonl.torn").read_bytes()
    assert torn in aside
    ledger.append([record("c3")])
    assert list(ledger.read()["candidate_id"]) == ["c1", "c2", "c3"]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).append([record("c1")])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    ledger = Ledger(path)
    assert ledger.repaired is not None and "lacked its line break" in ledger.repaired
    ledger.append([record("c2")])
    assert list(ledger.read()["candidate_id"]) == ["c1", "c2"]
    assert not path.with_name("ledger.jsonl.torn").exists()


def test_healthy_ledger_is_left_alone(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).append([record("c1")])
    before = path.read_bytes()
    assert Ledger(path).repaired is None and path.read_bytes() == before


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"decision": "maybe"}, "decision must be 'accepted' or 'rejected'"),
        ({"candidate_id": ""}, "no candidate_id"),
        ({"p_in_aim": "high"}, "'p_in_aim' must be a number"),
        ({"n_responses": 2.5}, "'n_responses' must be a whole number"),
        ({"aim": "abc"}, "'aim' must be \\(lo, hi, bin\\)"),
    ],
)
def test_invalid_records_write_nothing(tmp_path, bad, message):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append([record("c0")])
    before = ledger.path.read_bytes()
    with pytest.raises(DataError, match=message) as info:
        ledger.append([record("c1"), record("c2") | bad])
    assert "record #1" in str(info.value)
    assert ledger.path.read_bytes() == before


def test_a_ledger_written_before_the_aim_had_its_name_reads_and_continues_under_the_new_names(tmp_path):
    """Records of older versions say target_lo, target_hi, target_bin, p_in_target, p_in_target_data,
    benchmark_target and reason "in target": they read as aim_lo, ..., "in aim", and a rerun appends after them."""
    path = tmp_path / "ledger.jsonl"
    old = [
        {"candidate_id": "c1", "decision": "accepted", "reason": "in target", "bin_check": "in target",
         "target_lo": 0.5, "target_hi": 1.0, "target_bin": 3, "p_in_target": 0.91, "p_in_target_data": 0.88,
         "benchmark_target": "arith", "run_id": "old-run", "timestamp": "2026-11-30T10:00:00+00:00"},
        {"candidate_id": "c2", "decision": "rejected", "reason": "too easy", "target_lo": 0.5, "target_hi": 1.0,
         "target_bin": 3, "p_in_target": 0.1, "run_id": "old-run", "timestamp": "2026-11-30T10:00:00+00:00"},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in old))
    ledger = Ledger(path, run_id="new-run")
    ledger.append([record("c3"), {"candidate_id": "c4", "decision": "rejected", "reason": "too hard",
                                  "target": (0.5, 1.0, 3), "p_in_target": 0.05}])  # fmt: skip
    table = ledger.read()
    assert not [c for c in table.columns if "target" in c], table.columns.tolist()
    assert table["aim_lo"].tolist() == [0.5] * 4 and table["aim_hi"].tolist() == [1.0] * 4
    assert table["aim_bin"].tolist() == [3] * 4
    assert table["p_in_aim"].tolist() == [0.91, 0.1, 0.91, 0.05]
    assert table.loc[0, "p_in_aim_data"] == 0.88 and table.loc[0, "aim_benchmark"] == "arith"
    assert table["reason"].tolist() == ["in aim", "too easy", "in aim", "too hard"]
    assert table.loc[0, "bin_check"] == "in aim"
    assert table["run_id"].tolist() == ["old-run", "old-run", "new-run", "new-run"]
    # the old lines stay as they were written; the new ones use the new names
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[:2] == old and "aim_lo" in lines[3] and "target_lo" not in lines[3]


def test_broken_middle_line_is_reported(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).append([record("c1")])
    path.write_text(path.read_text() + "garbage\n" + path.read_text())
    with pytest.raises(DataError, match="line 2: not valid JSON"):
        Ledger(path).read()


def test_to_csv(tmp_path):
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append([record("c1", extra_note="kept"), record("c2", "rejected")])
    path = ledger.to_csv(tmp_path / "out" / "ledger.csv")
    table = pd.read_csv(path)
    assert list(table.columns[:8]) == [
        "candidate_id",
        "p_in_aim",
        "difficulty_mean",
        "difficulty_ci_low",
        "difficulty_ci_high",
        "discrimination_mean",
        "decision",
        "reason",
    ]
    assert set(LEDGER_COLUMNS) | {"extra_note"} == set(table.columns)
    assert table.loc[0, "p_in_aim"] == 0.91 and table.loc[1, "reason"] == "too easy"


def test_decisions_flow_into_the_ledger(tmp_path):
    draws = np.array([[[0.7, 0.2], [0.8, 0.3], [0.75, 0.25], [0.6, 0.1], [0.9, 0.2]]])  # (chain, draw, item)
    posterior = xr.Dataset(
        {
            "difficulty": (("chain", "draw", "item"), draws),
            "discrimination": (("chain", "draw", "item"), np.ones_like(draws)),
            "slope": (("chain", "draw", "item"), np.ones_like(draws)),
            "difficulty_data": (("chain", "draw", "item"), draws),
        },
        coords={"chain": [0], "draw": np.arange(5), "item": ["bf-1", "bf-2"]},
    )
    table = decide_all(posterior, aim_lo=0.5, aim_hi=1.0, n_responses=12)
    candidates = [
        Candidate("bf-1", "Q1", "A", source="llm:gen", prompt_hash="f" * 64),
        Candidate("bf-2", "Q2", "B", source="file:x.csv"),
    ]
    ledger = Ledger(tmp_path / "ledger.jsonl")
    ledger.append(decision_records(table, candidates=candidates, aim_bin=3, extra={"tau": 0.8}))
    rows = ledger.read().set_index("candidate_id")
    assert rows.loc["bf-1", "decision"] == "accepted" and rows.loc["bf-2", "reason"] == "too easy"
    assert rows.loc["bf-1", "prompt_hash"] == "f" * 64 and rows.loc["bf-2", "source"] == "file:x.csv"
    assert rows.loc["bf-1", "aim_bin"] == 3 and rows.loc["bf-1", "aim_lo"] == 0.5
    assert rows.loc["bf-1", "p_in_aim"] == 1.0 and rows.loc["bf-2", "p_in_aim"] == 0.0
    assert rows.loc["bf-1", "ci_prob"] == 0.9 and rows.loc["bf-1", "tau"] == 0.8
    assert rows.loc["bf-1", "difficulty_mean"] == pytest.approx(0.75)
    # a single Decision goes in the same way
    one = decide(
        draws[0, :, 0],
        None,
        aim_lo=0.5,
        aim_hi=1.0,
        n_responses=12,
        slope_draws=np.ones(5),
        data_difficulty_draws=draws[0, :, 0],
    ).to_record()
    ledger.append([one | {"candidate_id": "bf-3", "aim_bin": 3}])
    assert ledger.read()["candidate_id"].iloc[-1] == "bf-3"
