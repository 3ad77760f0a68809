"""lighteval details (tests/fixtures/lighteval): every cell as the raw Parquet files hold it, the metric chosen,
detection, and bad input named."""

from __future__ import annotations

import ast
import json
import logging
import shutil
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irtbayes.cli.main import main
from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.lighteval import is_lighteval_folder, load_lighteval

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "lighteval"
OUTPUT = FIXTURE / "output"
FIXTURES = FIXTURE.parent


def expected_cells(root: Path = OUTPUT) -> dict[tuple[str, str], float]:
    """(model, item) -> score, read from the raw files: the model from its results file, the benchmark from the
    file name (``[suite|]name|fewshot``), the sample from ``doc.id`` (or the row), the score the file's one metric."""
    cells = {}
    for path in sorted(root.rglob("details_*.parquet")):
        model_dir = path.parent.parent.relative_to(root / "details")
        (results,) = (root / "results" / model_dir).glob("results_*.json")
        model = json.loads(results.read_text())["config_general"]["model_name"]
        task = path.name.removeprefix("details_").rsplit("_", 1)[0]
        benchmark = task.split("|")[-2]
        frame = pd.read_parquet(path)
        for row, record in frame.iterrows():
            if "doc" in frame.columns:
                key, scores = record["doc"]["id"], record["metric"]
            else:  # lighteval < 0.9: the text of a Python dict
                key, scores = str(row), ast.literal_eval(record["metrics"])
            (value,) = scores.values()
            cells[(model, f"{benchmark}/{key}")] = float(value)
    return cells


def cells_of(data) -> dict[tuple[str, str], float]:
    frame = data.long_frame()
    return {(s, i): float(v) for s, i, v in zip(frame["subject"], frame["item"], frame["response"], strict=True)}


def details_file(root: Path, model: str, benchmark: str) -> Path:
    (path,) = [p for p in (root / "details" / model).rglob("details_*.parquet") if f"{benchmark}|" in p.name]
    return path


def rewrite_metric(path: Path, change) -> None:
    """Apply ``change`` to each row's ``metric`` struct of a lighteval >= 0.11 file and write it back."""
    table = pq.read_table(path)
    rows = table.to_pylist()
    metrics = [change(row["metric"]) for row in rows]
    index = table.schema.get_field_index("metric")
    pq.write_table(table.set_column(index, "metric", pa.array(metrics)), path)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(OUTPUT, tmp_path / "output")
    return tmp_path / "output"


def test_every_cell_is_the_raw_files_score() -> None:
    data = io.load(OUTPUT)
    assert data.reading is not None and data.reading["format"] == "lighteval"
    assert cells_of(data) == expected_cells()
    assert data.subject_ids.tolist() == ["fixture-org/model-a", "fixture-org/model-b", "model-c"]
    assert (data.n_items, data.n_responses) == (9, 27)
    assert data.subjects.loc["model-c", "folder"] == "model-c"


def test_items_carry_the_query_the_gold_answer_and_the_task() -> None:
    data = load_lighteval(OUTPUT)
    raw = pd.read_parquet(details_file(OUTPUT, "fixture-org/model-a", "mmlu:abstract_algebra"))
    doc = next(d for d in raw["doc"] if d["id"] == "3")
    item = data.items.loc["mmlu:abstract_algebra/3"]
    assert item["text"] == doc["query"]
    assert item["answer"] == doc["choices"][doc["gold_index"]].strip()
    assert item["task"] == "mmlu:abstract_algebra|5" and item["benchmark"] == "mmlu:abstract_algebra"
    assert item["n_options"] == 4  # the log-likelihood run of model-c scored the 4 choices
    assert pd.isna(data.items.loc["gsm8k/1", "n_options"])
    assert data.items.loc["gsm8k/1", "metric"] == "extractive_match, qem"


def test_the_notes_say_which_metrics_and_task_variants_were_read() -> None:
    notes = load_lighteval(OUTPUT).notes
    assert any(
        "mmlu:abstract_algebra: the models log different metrics; read 'em'" in n and "'acc' (model-c)" in n
        for n in notes
    )
    assert any(n.startswith("gsm8k was run as gsm8k|0, leaderboard|gsm8k|5") for n in notes)


def test_one_details_file_alone() -> None:
    data = io.load(details_file(OUTPUT, "fixture-org/model-b", "gsm8k"), format="lighteval")
    assert data.subject_ids.tolist() == ["fixture-org/model-b"] and data.n_items == 4


def test_the_metric_is_chosen_and_an_unknown_one_is_named(copy: Path) -> None:
    path = details_file(copy, "fixture-org/model-a", "mmlu:abstract_algebra")
    rewrite_metric(path, lambda m: {"em": m["em"], "pqem": 1.0 - m["em"]})
    default = load_lighteval(copy)
    assert cells_of(default) == expected_cells(OUTPUT)
    assert any(f"{path.name}: metrics found: em, pqem; read 'em'" in note for note in default.notes)
    chosen = cells_of(load_lighteval(copy, metric="pqem"))
    assert (
        chosen[("fixture-org/model-a", "mmlu:abstract_algebra/0")]
        == 1.0
        - default.long_frame()
        .set_index(["subject", "item"])
        .loc[("fixture-org/model-a", "mmlu:abstract_algebra/0"), "response"]
    )
    assert chosen[("model-c", "gsm8k/0")] == expected_cells(OUTPUT)[("model-c", "gsm8k/0")]  # its only metric
    with pytest.raises(
        DataError, match=r"no task logs metric 'f1'; the metrics are acc, em, extractive_match, pqem, qem"
    ):
        load_lighteval(copy, metric="f1")
    other = details_file(copy, "fixture-org/model-b", "mmlu:abstract_algebra")
    with pytest.raises(
        DataError, match=rf"{other.name}: task 'mmlu:abstract_algebra\|5' has no metric 'pqem'; it logs em"
    ):
        load_lighteval(copy, metric="mmlu:abstract_algebra=pqem")


def test_the_command_line_reads_the_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(OUTPUT)]) == 0
    out = capsys.readouterr().out
    assert "3 subjects x 9 items, 27 responses" in out and "mmlu:abstract_algebra" in out
    assert main(["data", "summary", str(OUTPUT), "--format", "lighteval", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_subjects"] == 3


def test_detection_tells_the_frameworks_apart() -> None:
    assert io.detect_format(OUTPUT) == "lighteval" and is_lighteval_folder(FIXTURE)
    assert io.detect_format(FIXTURES / "opencompass" / "outputs") == "opencompass"
    assert io.detect_format(FIXTURES / "lm_eval" / "lm_eval_dummy") == "lm-eval"
    assert io.detect_format(FIXTURES / "leaderboard") == "leaderboard"
    assert io.detect_format(FIXTURES / "inspect" / "logs") == "inspect"
    assert not is_lighteval_folder(FIXTURES / "leaderboard") and not is_lighteval_folder(FIXTURES / "lm_eval")


def test_the_data_are_read_again_as_they_were_read() -> None:
    data = io.load(OUTPUT, metric="mmlu:abstract_algebra|5=em")  # the full task name: model-c's task is another
    assert cells_of(data) == expected_cells()
    assert data.reading is not None and data.reading["options"] == {"metric": "mmlu:abstract_algebra|5=em"}
    assert io.reread(data.reading).checksum() == data.checksum()


def test_bad_input_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(
        DataError, match=r"details_gsm8k\|0_2026-01-10T10-00-00.000000.parquet: not a lighteval details file"
    ):
        io.load(FIXTURE / "bad")
    with pytest.raises(DataError, match=r"no lighteval details files .*run lighteval with --save-details"):
        load_lighteval(tmp_path)
    folder = tmp_path / "details" / "m" / "2026-01-01T00-00-00"
    folder.mkdir(parents=True)
    (folder / "details_gsm8k|0_2026-01-01T00-00-00.parquet").write_bytes(b"not parquet")
    with pytest.raises(DataError, match=r"details_gsm8k\|0_2026-01-01T00-00-00.parquet: not a readable Parquet file"):
        load_lighteval(tmp_path)


def test_a_score_outside_0_1_is_named_with_its_file_and_row(copy: Path) -> None:
    path = details_file(copy, "fixture-org/model-b", "gsm8k")
    rewrite_metric(path, lambda m: {"extractive_match": 2.0})
    with pytest.raises(DataError, match=rf"{path.name}: row 0 \(sample '2'\) metric 'extractive_match' holds 2.0"):
        load_lighteval(copy)


def test_a_model_in_one_task_only_is_warned_about(copy: Path, caplog: pytest.LogCaptureFixture) -> None:
    details_file(copy, "model-c", "gsm8k").unlink()
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.lighteval"):
        data = load_lighteval(copy)
    message = "model-c ran only mmlu:abstract_algebra of the 2 benchmarks"
    assert any(message in note and "details_leaderboard|mmlu" in note for note in data.notes)
    assert message in caplog.text
    assert data.n_responses == 27 - 4


def test_the_newest_run_is_read_and_the_other_named(copy: Path) -> None:
    newest = details_file(copy, "fixture-org/model-b", "gsm8k")
    older = copy / "details" / "fixture-org" / "model-b" / "2025-06-01T00-00-00"
    older.mkdir()
    old = older / "details_gsm8k|0_2025-06-01T00-00-00.parquet"
    shutil.copy(newest, old)
    rewrite_metric(old, lambda m: {"extractive_match": 1.0})
    data = load_lighteval(copy)
    assert cells_of(data) == expected_cells(OUTPUT)
    assert any(
        f"fixture-org/model-b ran gsm8k more than once: read {newest.name}, not {old.name}" in n for n in data.notes
    )


def test_runs_on_other_data_for_one_sample_are_an_error(copy: Path) -> None:
    path = details_file(copy, "fixture-org/model-b", "mmlu:abstract_algebra")
    table = pq.read_table(path)
    rows = table.to_pylist()
    rows[0]["doc"]["query"] = "another question"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    with pytest.raises(DataError, match=rf"{path.name}: sample '3' has another query than in .*model-a"):
        load_lighteval(copy)


def test_a_model_without_results_file_is_named_by_its_folder(copy: Path) -> None:
    shutil.rmtree(copy / "results" / "model-c")
    data = load_lighteval(copy)
    assert "model-c" in data.subject_ids
    assert any("no results_<date>.json with config_general.model_name for model-c" in n for n in data.notes)


def test_the_command_line_passes_the_metric_to_the_lighteval_loader() -> None:
    from irtbayes.cli.main import build_parser, loader_options

    args = build_parser().parse_args(["data", "summary", "somewhere", "--metric", "acc"])
    assert loader_options(args, "lighteval")["metric"] == "acc"
