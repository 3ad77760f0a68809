"""OpenCompass results with --dump-eval-details (tests/fixtures/opencompass): every cell as the raw details hold
it, repeated runs averaged and counted, detection, and bad input named."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from irtbayes.cli.main import main
from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.opencompass import is_opencompass_folder, load_opencompass

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "opencompass"
OUTPUTS = FIXTURE / "outputs" / "default"
FIXTURES = FIXTURE.parent


def expected_cells(root: Path = OUTPUTS) -> dict[tuple[str, str], tuple[float, int]]:
    """(model, item) -> (score, runs), read from the raw results files: a list of details whose ``correct`` lists
    the runs, or a mapping ``{"0": {"correct": ...}}`` (with a ``type`` key)."""
    cells = {}
    for path in sorted(root.glob("*/results/*/*.json")):
        model, dataset = path.parent.name, path.stem
        details = json.loads(path.read_text())["details"]
        if isinstance(details, list):
            entries = {str(i): entry for i, entry in enumerate(details)}
        else:
            entries = {key: entry for key, entry in details.items() if key.isdigit()}
        for key, entry in entries.items():
            runs = entry["correct"] if isinstance(entry["correct"], list) else [entry["correct"]]
            cells[(model, f"{dataset}/{key}")] = (sum(runs) / len(runs), len(runs))
    return cells


def cells_of(data) -> dict[tuple[str, str], float]:
    frame = data.long_frame()
    return {(s, i): float(v) for s, i, v in zip(frame["subject"], frame["item"], frame["response"], strict=True)}


def result_file(root: Path, model: str, dataset: str) -> Path:
    (path,) = root.glob(f"*/results/{model}/{dataset}.json")
    return path


def edit_json(path: Path, change) -> None:
    content = json.loads(path.read_text())
    change(content)
    path.write_text(json.dumps(content, indent=4))


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(OUTPUTS, tmp_path / "default")
    return tmp_path / "default"


def test_every_cell_is_the_share_of_correct_runs() -> None:
    data = io.load(OUTPUTS)
    assert data.reading is not None and data.reading["format"] == "opencompass"
    expected = expected_cells()
    assert cells_of(data) == {key: score for key, (score, _) in expected.items()}
    assert data.subject_ids.tolist() == ["hf_tiny_a", "hf_tiny_b", "hf_tiny_c"]
    assert (data.n_items, data.n_responses) == (9, 27)
    assert max(runs for _, runs in expected.values()) == 3
    assert any(n.startswith("demo_gsm8k: examples run several times (runs: hf_tiny_c 3)") for n in data.notes)
    assert data.items.loc["demo_gsm8k/0", "trials"] == 3 and data.items.loc["demo_mmlu/0", "trials"] == 1
    assert data.subjects.loc["hf_tiny_c", "run"] == "20260112_093000"


def test_items_carry_the_prompt_and_the_reference() -> None:
    items = load_opencompass(OUTPUTS).items
    predictions = json.loads(
        (OUTPUTS / "20260110_120000" / "predictions" / "hf_tiny_a" / "demo_gsm8k.json").read_text()
    )
    assert items.loc["demo_gsm8k/2", "text"] == predictions["2"]["origin_prompt"]
    assert items.loc["demo_gsm8k/2", "answer"] == predictions["2"]["gold"] == "45"
    details = json.loads(result_file(OUTPUTS, "hf_tiny_a", "demo_mmlu").read_text())["details"]
    assert items.loc["demo_mmlu/4", "text"] == details["4"]["origin_prediction"]["origin_prompt"]
    assert items.loc["demo_mmlu/4", "answer"] == details["4"]["references"] == "C"


def test_one_run_folder_or_its_results_folder_is_read_alone() -> None:
    run = OUTPUTS / "20260112_093000"
    assert load_opencompass(run).subject_ids.tolist() == ["hf_tiny_c"]
    assert load_opencompass(run / "results").n_responses == 9
    assert io.detect_format(run / "results") == "opencompass"


def test_results_without_details_ask_for_dump_eval_details() -> None:
    path = FIXTURE / "no_details" / "20260110_120000" / "results" / "hf_tiny_a" / "demo_gsm8k.json"
    assert io.detect_format(FIXTURE / "no_details") == "opencompass"
    with pytest.raises(DataError, match=rf"{path}: no per-example 'details'.*rerun it with that flag"):
        io.load(FIXTURE / "no_details")


def test_a_detail_without_correctness_is_named(copy: Path) -> None:
    path = result_file(copy, "hf_tiny_b", "demo_gsm8k")
    edit_json(path, lambda c: c["details"][1].pop("correct"))
    with pytest.raises(DataError, match=rf"{path}: details entry 1 has none of correct, is_correct, cascade_correct"):
        load_opencompass(copy)


def test_is_correct_details_as_a_mapping_are_read(copy: Path) -> None:
    path = result_file(copy, "hf_tiny_b", "demo_gsm8k")
    details = {  # AccwithDetailsEvaluator's form: a mapping with is_correct
        str(i): {"prompt": "q", "pred": "1", "refr": "1", "is_correct": bool(i % 2)} for i in range(4)
    }
    edit_json(path, lambda c: c.update(details=details))
    cells = cells_of(load_opencompass(copy))
    assert [cells[("hf_tiny_b", f"demo_gsm8k/{i}")] for i in range(4)] == [0.0, 1.0, 0.0, 1.0]


def test_binary_scoring_refuses_shares_and_ordinal_scoring_is_refused() -> None:
    path = result_file(OUTPUTS, "hf_tiny_c", "demo_gsm8k")
    with pytest.raises(DataError, match=rf"{path}: details entry 0: 3 runs, 2 correct: a share, but binary"):
        load_opencompass(OUTPUTS, scoring="binary")
    assert load_opencompass(OUTPUTS / "20260110_120000", scoring="binary").is_binary
    with pytest.raises(DataError, match="ordinal scoring does not apply"):
        load_opencompass(OUTPUTS, scoring="ordinal")


def test_a_model_in_one_dataset_only_is_warned_about(copy: Path, caplog: pytest.LogCaptureFixture) -> None:
    result_file(copy, "hf_tiny_c", "demo_mmlu").unlink()
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.opencompass"):
        data = load_opencompass(copy)
    message = "hf_tiny_c ran only demo_gsm8k of the 2 datasets"
    assert any(message in note and "demo_gsm8k.json" in note for note in data.notes)
    assert message in caplog.text


def test_the_newest_run_is_read_and_the_other_named(copy: Path) -> None:
    old = copy / "20251201_000000" / "results" / "hf_tiny_a"
    old.mkdir(parents=True)
    shutil.copy(result_file(copy, "hf_tiny_a", "demo_mmlu"), old / "demo_mmlu.json")
    edit_json(
        old / "demo_mmlu.json", lambda c: [e.update(correct=False) for k, e in c["details"].items() if k.isdigit()]
    )
    data = load_opencompass(copy)
    assert cells_of(data) == {key: score for key, (score, _) in expected_cells().items()}
    assert any(
        "hf_tiny_a ran demo_mmlu more than once: read the run 20260110_120000, not the run 20251201_000000" in n
        for n in data.notes
    )


def test_the_command_line_reads_the_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(OUTPUTS)]) == 0
    out = capsys.readouterr().out
    assert "3 subjects x 9 items, 27 responses" in out and "demo_gsm8k" in out
    assert main(["data", "summary", str(FIXTURE / "no_details"), "--format", "opencompass"]) == 2
    assert "--dump-eval-details" in capsys.readouterr().err


def test_detection_does_not_take_other_folders_for_opencompass() -> None:
    assert is_opencompass_folder(FIXTURE) and io.detect_format(OUTPUTS) == "opencompass"
    for other in ("lighteval", "lm_eval", "leaderboard", "helm", "inspect", "pyirt"):
        assert not is_opencompass_folder(FIXTURES / other), other
    assert io.detect_format(FIXTURES / "helm") == "helm"
