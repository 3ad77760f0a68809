"""py-irt JSON Lines: read by irtbayes.data.io.load, written back identically, bad lines named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.pyirt import write_pyirt
from irtbayes.data.responses import ResponseData

FIXTURES = Path(__file__).parents[1] / "fixtures" / "pyirt"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_real_pyirt_file_loads_with_subjects_and_items_in_file_order() -> None:
    path = FIXTURES / "sst3_slice.jsonlines"
    data = io.load(path)
    records = _records(path)
    assert list(data.subject_ids) == [r["subject_id"] for r in records]
    assert list(data.item_ids) == list(records[0]["responses"])
    matrix = data.to_matrix()
    expected = np.array([[r["responses"][item] for item in data.item_ids] for r in records], dtype=float)
    np.testing.assert_array_equal(matrix, expected)
    assert data.n_responses == 8 * 12


def test_sparse_file_keeps_absent_and_null_responses_missing() -> None:
    data = io.load(FIXTURES / "sparse.jsonl")
    assert list(data.subject_ids) == ["gpt-small", "gpt-medium", "baseline", "42"]
    assert list(data.item_ids) == ["q1", "q2", "q3", "q4", "q5"]
    assert data.n_responses == 11  # the null response of subject 42 is a missing cell
    frame = data.long_frame().set_index(["subject", "item"])["response"]
    assert frame[("42", "q5")] == 1.0
    assert ("42", "q2") not in frame.index
    assert ("gpt-medium", "q2") not in frame.index


@pytest.mark.parametrize("name", ["sst3_slice.jsonlines", "sparse.jsonl"])
def test_write_then_read_gives_the_same_responses_and_the_same_lines(name: str, tmp_path: Path) -> None:
    original = io.load(FIXTURES / name)
    out = write_pyirt(original, tmp_path / "out.jsonl")
    again = io.load(out)
    assert list(again.subject_ids) == list(original.subject_ids)
    assert list(again.item_ids) == list(original.item_ids)
    pd.testing.assert_frame_equal(again.long_frame(), original.long_frame())
    # the file itself is py-irt's layout: 0/1 as integers, one object per subject, no other keys
    written = _records(out)
    assert all(set(r) == {"subject_id", "responses"} for r in written)
    assert all(type(v) is int for r in written for v in r["responses"].values())
    if name == "sst3_slice.jsonlines":
        assert written == _records(FIXTURES / name)


def test_fractional_scores_round_trip_as_floats(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"subject": ["a", "a", "b", "b", "c"], "item": ["x", "y", "x", "y", "x"], "response": [0.25, 1, 0, 0.5, 1]}
    )
    data = ResponseData.from_long(frame)
    out = write_pyirt(data, tmp_path / "scores.jsonlines")
    assert _records(out)[0] == {"subject_id": "a", "responses": {"x": 0.25, "y": 1}}
    pd.testing.assert_frame_equal(io.load(out).long_frame(), data.long_frame())
    with pytest.raises(DataError, match=r"line 1: subject 'a', item 'x' holds 0.25, but binary"):
        io.load(out, scoring="binary")


def test_conditions_must_be_chosen_for_pyirt(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "subject": ["a", "a", "b", "b", "a", "b"],
            "item": ["x", "y", "x", "y", "x", "x"],
            "response": [1, 0, 0, 1, 0, 1],
            "run": ["r1", "r1", "r1", "r1", "r2", "r2"],
        }
    )
    data = ResponseData.from_long(frame, condition="run")
    with pytest.raises(DataError, match="choose one of"):
        write_pyirt(data, tmp_path / "x.jsonl")
    out = write_pyirt(data, tmp_path / "r2.jsonl", condition="r2")
    assert _records(out) == [
        {"subject_id": "a", "responses": {"x": 0}},
        {"subject_id": "b", "responses": {"x": 1}},
    ]


BAD_LINES = [
    ('{"subject_id": "m2", "responses": {"q1": 1}', r"line 3: not valid JSON"),
    ('["m2", {"q1": 1}]', r"line 3: expected a JSON object, found an array"),
    ('{"subject": "m2", "responses": {"q1": 1}}', r"line 3: expected py-irt's keys 'subject_id' and 'responses'"),
    ('{"subject_id": "", "responses": {"q1": 1}}', r"line 3: 'subject_id' is ''"),
    ('{"subject_id": "m2", "responses": [1, 0]}', r"line 3: 'responses' of subject 'm2' must be an object"),
    ('{"subject_id": "m2", "responses": {"q1": "yes"}}', r"line 3: subject 'm2', item 'q1' holds 'yes', which is not"),
    (
        '{"subject_id": "m2", "responses": {"q1": 2}}',
        r"line 3: subject 'm2', item 'q1' holds 2, which is not a score in \[0, 1\]",
    ),
    ('{"subject_id": "m0", "responses": {"q1": 1}}', r"line 3: subject 'm0' already has a line \(line 1\)"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_a_bad_line_is_named_by_file_and_line(bad: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"subject_id": "m0", "responses": {"q1": 1, "q2": 0}}\n'
        '{"subject_id": "m1", "responses": {"q1": 0, "q2": 1}}\n' + bad + "\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match=message) as err:
        io.load(path)
    assert str(err.value).startswith(f"{path} line 3")


def test_empty_and_response_free_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="the file is empty"):
        io.load(empty)
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text('{"subject_id": "a", "responses": {}}\n', encoding="utf-8")
    with pytest.raises(DataError, match="no responses"):
        io.load(nothing)


def test_the_command_line_reads_a_pyirt_file(capsys: pytest.CaptureFixture[str]) -> None:
    from irtbayes.cli.main import main

    assert main(["data", "summary", str(FIXTURES / "sparse.jsonl")]) == 0
    out = capsys.readouterr().out
    expected = io.load(FIXTURES / "sparse.jsonl")
    assert f"{expected.n_subjects} subjects x {expected.n_items} items, {expected.n_responses} responses" in out
