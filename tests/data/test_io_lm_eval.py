"""The lm-evaluation-harness loader on genuine ``--log_samples`` output (tests/fixtures/lm_eval)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data.io.lm_eval import ALL_FILTERS, is_lm_eval_folder, list_choices, load_lm_eval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval"

DUMMY = FIXTURES / "lm_eval_dummy"
HF = FIXTURES / "lm_eval_hf"
RERUN = FIXTURES / "lm_eval_dummy_rerun"
OLD_RUN = "2026-11-29T14-17-48.446211"
NEW_RUN = "2026-11-29T14-18-01.305566"

#: fx_mc `acc` by doc_id 0..29, as documented in the fixture README.
README_ACC = {
    ("lm_eval_dummy", "fixture-org/dummy-a"): "000000011000110000001100000100",
    ("lm_eval_dummy", "fixture-org/dummy-b"): "100010010010010010001000010000",
    ("lm_eval_dummy", "fixture-org/dummy-c"): "100011010000000001010000000010",
    ("lm_eval_hf", "models/tiny-gpt2-a"): "001001101001001100001111001000",
    ("lm_eval_hf", "models/tiny-gpt2-b"): "001001101001000000100010000010",
    ("lm_eval_hf", "models/tiny-gpt2-c"): "001010101001000100010010001000",
}


# ---------------------------------------------------------------------- helpers reading the raw files
def raw_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def samples_file(folder: Path, task: str, date_id: str | None = None) -> Path:
    files = sorted(folder.glob(f"samples_{task}_*.jsonl"))
    if date_id is not None:
        files = [f for f in files if date_id in f.name]
    assert len(files) == 1, f"expected one samples_{task} file in {folder}, found {files}"
    return files[0]


def model_folder(root: Path, subject: str) -> Path:
    return root / subject.replace("/", "__")


def copy_tree(source: Path, target: Path) -> Path:
    """Copy a fixture folder with writable files (the fixtures themselves are read-only)."""
    for file in sorted(source.rglob("*")):
        if file.is_file():
            out = target / file.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(file.read_bytes())
    return target


def rewrite_line(path: Path, number: int, edit) -> None:
    """Replace line ``number`` (1-based) of a JSONL file by ``edit(line_text)``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = edit(lines[number - 1])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def value_of(data, subject: str, item: str, condition: str | None = None) -> float:
    frame = data.long_frame()
    mask = (frame["subject"] == subject) & (frame["item"] == item)
    if condition is not None:
        mask &= frame["condition"] == condition
    picked = frame.loc[mask, "response"]
    assert len(picked) == 1, f"{subject} {item} {condition}: {len(picked)} responses"
    return float(picked.iloc[0])


@pytest.fixture
def dummy_copy(tmp_path: Path) -> Path:
    return copy_tree(DUMMY, tmp_path / "out")


# ---------------------------------------------------------------------- detection and loading
def test_detects_lm_eval_folders(tmp_path: Path) -> None:
    for folder in (DUMMY, HF, RERUN, model_folder(DUMMY, "fixture-org/dummy-a"), FIXTURES):
        assert is_lm_eval_folder(folder), folder
    assert not is_lm_eval_folder(FIXTURES / "task_definitions")
    assert not is_lm_eval_folder(tmp_path)
    assert not is_lm_eval_folder(samples_file(model_folder(DUMMY, "fixture-org/dummy-a"), "fx_mc"))


@pytest.mark.parametrize("root", [DUMMY, HF], ids=["dummy", "hf"])
def test_counts_match_the_files(root: Path) -> None:
    data = load_lm_eval(root, filter="flexible-extract")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    expected_subjects = [json.loads(next(f.glob("results_*.json")).read_text())["model_name"] for f in folders]
    assert list(data.subject_ids) == expected_subjects
    per_task = data.items.groupby("benchmark").size().to_dict()
    assert per_task == {"fx_mc": 30, "fx_gen": 20}, per_task
    n_raw = 0
    for folder in folders:
        n_raw += len(raw_lines(samples_file(folder, "fx_mc")))
        n_raw += sum(1 for line in raw_lines(samples_file(folder, "fx_gen")) if line["filter"] == "flexible-extract")
    assert data.n_responses == n_raw == 3 * 50, (data.n_responses, n_raw)
    assert data.is_binary
    assert data.to_matrix().shape == (3, 50)
    assert not np.isnan(data.to_matrix()).any()


def test_item_ids_and_metadata_come_from_the_docs() -> None:
    data = load_lm_eval(DUMMY, tasks=["fx_mc"])
    first = raw_lines(samples_file(model_folder(DUMMY, "fixture-org/dummy-a"), "fx_mc"))[0]
    item = f"fx_mc/{first['doc_hash']}"
    assert item in data.item_ids
    row = data.items.loc[item]
    assert row["benchmark"] == "fx_mc"
    assert row["text"] == first["doc"]["question"] == "What is the capital of France?"
    assert row["answer"] == first["target"] == "0"
    assert row["n_options"] == len(first["doc"]["choices"]) == 4
    assert row["doc_id"] == "0"
    gen = load_lm_eval(DUMMY, tasks=["fx_gen"], filter="strict-match")
    gen_first = raw_lines(samples_file(model_folder(DUMMY, "fixture-org/dummy-a"), "fx_gen"))[0]
    gen_row = gen.items.loc[f"fx_gen/{gen_first['doc_hash']}"]
    assert gen_row["answer"] == "The answer is 11."
    assert gen_row["text"] == "What is 22 - 11?"
    assert gen.items["n_options"].isna().all(), gen.items["n_options"].tolist()
    assert data.subjects.loc["fixture-org/dummy-a", "folder"] == "fixture-org__dummy-a"
    assert data.subjects.loc["fixture-org/dummy-a", "model_source"] == "dummy"


@pytest.mark.parametrize(("root_name", "subject"), list(README_ACC), ids=[s for _, s in README_ACC])
def test_per_item_correctness_matches_the_readme_and_the_raw_file(root_name: str, subject: str) -> None:
    root = FIXTURES / root_name
    raw = raw_lines(samples_file(model_folder(root, subject), "fx_mc"))
    raw_pattern = "".join(str(int(line["acc"])) for line in sorted(raw, key=lambda line: line["doc_id"]))
    assert raw_pattern == README_ACC[(root_name, subject)], f"raw file {raw_pattern} vs README"
    data = load_lm_eval(root, tasks=["fx_mc"])
    loaded = "".join(
        str(int(value_of(data, subject, f"fx_mc/{line['doc_hash']}")))
        for line in sorted(raw, key=lambda line: line["doc_id"])
    )
    assert loaded == raw_pattern, f"loaded {loaded} vs raw {raw_pattern}"


def test_acc_and_acc_norm_give_the_values_each_file_logs() -> None:
    acc = load_lm_eval(DUMMY, tasks=["fx_mc"])
    norm = load_lm_eval(DUMMY, tasks=["fx_mc"], metric="acc_norm")
    per_task = load_lm_eval(DUMMY, metric={"fx_mc": "acc_norm"}, filter="strict-match")
    n_differ = 0
    for subject in acc.subject_ids:
        for line in raw_lines(samples_file(model_folder(DUMMY, subject), "fx_mc")):
            item = f"fx_mc/{line['doc_hash']}"
            assert value_of(acc, subject, item) == line["acc"], (subject, item)
            assert value_of(norm, subject, item) == line["acc_norm"], (subject, item)
            assert value_of(per_task, subject, item) == line["acc_norm"], (subject, item)
            n_differ += line["acc"] != line["acc_norm"]
    differing = int((acc.to_matrix() != norm.to_matrix()).sum())
    assert differing == n_differ > 0, f"{differing} cells differ in the loaded data, {n_differ} in the files"


def test_unknown_metric_lists_the_logged_ones() -> None:
    with pytest.raises(DataError, match=r"samples_fx_mc_.*does not log metric 'f1'.*\['acc', 'acc_norm'\]"):
        load_lm_eval(DUMMY, tasks=["fx_mc"], metric="f1")
    with pytest.raises(DataError, match=r"fx_gen.*does not log metric 'acc_norm'.*\['exact_match'\]"):
        load_lm_eval(DUMMY, metric="acc_norm", filter="strict-match")


def test_generation_task_needs_a_filter_and_flexible_extract_scores_items_18_and_19() -> None:
    with pytest.raises(DataError, match=r"several filters \['strict-match', 'flexible-extract'\]"):
        load_lm_eval(DUMMY, tasks=["fx_gen"])
    with pytest.raises(DataError, match=r"no filter 'lenient'"):
        load_lm_eval(DUMMY, tasks=["fx_gen"], filter="lenient")
    flexible = load_lm_eval(DUMMY, tasks=["fx_gen"], filter="flexible-extract")
    strict = load_lm_eval(DUMMY, tasks=["fx_gen"], filter="strict-match")
    assert flexible.n_items == strict.n_items == 20
    lines = raw_lines(samples_file(model_folder(DUMMY, "fixture-org/dummy-a"), "fx_gen"))
    hashes = {line["doc_id"]: line["doc_hash"] for line in lines}
    for subject in flexible.subject_ids:
        correct = sorted(doc for doc, h in hashes.items() if value_of(flexible, subject, f"fx_gen/{h}") == 1)
        assert correct == [18, 19], f"{subject}: flexible-extract correct on {correct}"
        assert strict.values.sum() == 0, f"strict-match gave {strict.values.sum()} correct"
    hf = load_lm_eval(HF, tasks=["fx_gen"], filter="flexible-extract")
    assert hf.values.sum() == 0, f"tiny-gpt2 models scored {hf.values.sum()} on fx_gen"


def test_a_filter_applies_only_where_the_task_logs_several() -> None:
    data = load_lm_eval(DUMMY, filter="flexible-extract")
    assert data.n_items == 50
    assert data.subset(benchmarks="fx_mc").values.sum() == sum(
        line["acc"] for s in data.subject_ids for line in raw_lines(samples_file(model_folder(DUMMY, s), "fx_mc"))
    )


def test_all_filters_are_read_as_conditions_and_equal_each_filter_read_alone() -> None:
    everything = load_lm_eval(DUMMY, filter=ALL_FILTERS)
    assert sorted(everything.conditions) == ["flexible-extract", "none", "strict-match"]
    frame = everything.long_frame()
    for name in ("flexible-extract", "strict-match"):
        alone = load_lm_eval(DUMMY, tasks=["fx_gen"], filter=name).long_frame()
        part = frame.loc[frame["condition"] == name, ["subject", "item", "response"]]
        merged = part.merge(alone, on=["subject", "item"], suffixes=("_all", "_alone"), validate="one_to_one")
        assert len(merged) == len(alone) == len(part) and (merged["response_all"] == merged["response_alone"]).all()
    summary = everything.summary()
    assert summary.by_condition is not None
    assert summary.by_condition.loc[("fx_gen", "flexible-extract"), "accuracy"] == pytest.approx(0.1)
    assert summary.by_condition.loc[("fx_gen", "strict-match"), "accuracy"] == 0


def test_list_choices_names_every_task_filter_and_metric() -> None:
    table = list_choices(DUMMY).set_index(["task", "filter"])
    assert sorted(table.index) == [("fx_gen", "flexible-extract"), ("fx_gen", "strict-match"), ("fx_mc", "none")]
    assert table.loc[("fx_mc", "none"), "metrics"] == "acc, acc_norm"
    assert table.loc[("fx_mc", "none"), "default_metric"] == "acc"
    assert (table["subjects"] == 3).all()
    assert table.loc[("fx_mc", "none"), "documents"] == 30 and table.loc[("fx_gen", "strict-match"), "documents"] == 20


def test_the_tasks_table_counts_the_subjects_the_data_hold(tmp_path: Path) -> None:
    """A model run twice (the dummy logs and their rerun of dummy-a, side by side) is one subject in the tasks table,
    as in the data the folder loads to."""
    import shutil

    for folder in (DUMMY, RERUN):
        shutil.copytree(folder, tmp_path / folder.name)
    data = load_lm_eval(tmp_path, filter="flexible-extract")
    assert data.n_subjects == 3
    assert (list_choices(tmp_path)["subjects"] == data.n_subjects).all()


def test_tasks_option_selects_and_checks_tasks() -> None:
    data = load_lm_eval(HF, tasks=["fx_mc"])
    assert list(data.benchmarks) == ["fx_mc"]
    assert data.n_responses == 90
    with pytest.raises(DataError, match=r"no samples for task\(s\) \['mmlu'\].*\['fx_gen', 'fx_mc'\]"):
        load_lm_eval(HF, tasks=["mmlu"])


def test_same_questions_share_item_ids_across_model_families() -> None:
    dummy = load_lm_eval(DUMMY, filter="strict-match")
    hf = load_lm_eval(HF, filter="strict-match")
    assert list(dummy.item_ids) == list(hf.item_ids)


# ---------------------------------------------------------------------- re-runs
def test_reruns_latest_keeps_the_newest_file_and_logs_the_dropped_one(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.lm_eval"):
        data = load_lm_eval(RERUN, filter="flexible-extract")
    assert data.n_subjects == 1 and data.n_items == 50 and data.n_responses == 50
    folder = model_folder(RERUN, "fixture-org/dummy-a")
    newest = raw_lines(samples_file(folder, "fx_mc", NEW_RUN))
    oldest = raw_lines(samples_file(folder, "fx_mc", OLD_RUN))
    loaded = [value_of(data, "fixture-org/dummy-a", f"fx_mc/{line['doc_hash']}") for line in newest]
    assert loaded == [line["acc"] for line in newest]
    assert loaded != [line["acc"] for line in oldest], "the two runs should differ"
    assert f"samples_fx_mc_{OLD_RUN}.jsonl" in caplog.text, caplog.text


def test_reruns_all_keeps_each_run_as_a_condition() -> None:
    data = load_lm_eval(RERUN, filter="flexible-extract", runs="all")
    assert list(data.conditions) == [OLD_RUN, NEW_RUN]
    assert data.n_responses == 30 + 30 + 20
    folder = model_folder(RERUN, "fixture-org/dummy-a")
    for date_id in (OLD_RUN, NEW_RUN):
        for line in raw_lines(samples_file(folder, "fx_mc", date_id)):
            assert value_of(data, "fixture-org/dummy-a", f"fx_mc/{line['doc_hash']}", date_id) == line["acc"]
    old_only = data.subset(conditions=[OLD_RUN])
    assert old_only.n_responses == 50


def test_reruns_error_names_both_files() -> None:
    with pytest.raises(DataError, match=rf"2 samples files for task 'fx_mc'.*{OLD_RUN}\.jsonl.*{NEW_RUN}\.jsonl"):
        load_lm_eval(RERUN, filter="flexible-extract", runs="error")
    # a folder without re-runs loads the same under every option
    assert (
        load_lm_eval(DUMMY, tasks=["fx_mc"], runs="error").checksum() == load_lm_eval(DUMMY, tasks=["fx_mc"]).checksum()
    )


# ---------------------------------------------------------------------- naming fallbacks
def test_without_results_file_the_folder_name_is_the_subject(
    dummy_copy: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for results in (dummy_copy / "fixture-org__dummy-b").glob("results_*.json"):
        results.unlink()
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.lm_eval"):
        data = load_lm_eval(dummy_copy, tasks=["fx_mc"])
    assert list(data.subject_ids) == ["fixture-org/dummy-a", "fixture-org__dummy-b", "fixture-org/dummy-c"]
    assert "folder name 'fixture-org__dummy-b'" in caplog.text
    assert data.items["n_options"].tolist() == [4] * 30, "multiple choice is recognised without a results file"


def test_without_doc_hash_items_are_named_by_doc_id(dummy_copy: Path) -> None:
    for path in dummy_copy.glob("*/samples_fx_mc_*.jsonl"):
        lines = raw_lines(path)
        for line in lines:
            del line["doc_hash"]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    data = load_lm_eval(dummy_copy, tasks=["fx_mc"])
    assert list(data.item_ids) == [f"fx_mc/{i}" for i in range(30)]
    # a doc_id that points at another document in one model's file is refused
    path = samples_file(dummy_copy / "fixture-org__dummy-c", "fx_mc")
    rewrite_line(path, 4, lambda text: text.replace("What is the capital", "What was the capital", 1))
    with pytest.raises(DataError, match=r"samples_fx_mc_.*line 4 gives item 'fx_mc/3' a different document"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"])


# ---------------------------------------------------------------------- bad input
def test_folder_without_logs(tmp_path: Path) -> None:
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(DataError, match=r"no lm-evaluation-harness samples_\*\.jsonl"):
        load_lm_eval(tmp_path)
    with pytest.raises(DataError, match="no such folder"):
        load_lm_eval(tmp_path / "missing")


def test_line_that_is_not_json(dummy_copy: Path) -> None:
    path = samples_file(dummy_copy / "fixture-org__dummy-b", "fx_mc")
    rewrite_line(path, 7, lambda text: text[: len(text) // 2])
    with pytest.raises(DataError, match=rf"{path.name} line 7: not valid JSON"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"])


def test_line_without_doc_id(dummy_copy: Path) -> None:
    path = samples_file(dummy_copy / "fixture-org__dummy-a", "fx_mc")
    rewrite_line(path, 12, lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "doc_id"}))
    with pytest.raises(DataError, match=rf"{path.name}: line 12 has no 'doc_id' key"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"])


def test_line_without_the_metric_key(dummy_copy: Path) -> None:
    path = samples_file(dummy_copy / "fixture-org__dummy-a", "fx_mc")
    rewrite_line(path, 30, lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "acc_norm"}))
    assert load_lm_eval(dummy_copy, tasks=["fx_mc"]).n_responses == 90, "acc is still complete"
    with pytest.raises(DataError, match=rf"{path.name}: line 30 has no 'acc_norm' key"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"], metric="acc_norm")


def test_empty_samples_file(dummy_copy: Path) -> None:
    path = samples_file(dummy_copy / "fixture-org__dummy-c", "fx_gen")
    path.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{path.name}: the file is empty"):
        load_lm_eval(dummy_copy, filter="strict-match")


def test_scores_outside_zero_one_and_fractions(dummy_copy: Path) -> None:
    path = samples_file(dummy_copy / "fixture-org__dummy-a", "fx_mc")

    def set_acc(value):
        return lambda text: json.dumps({**json.loads(text), "acc": value})

    rewrite_line(path, 5, set_acc(0.5))
    kept = load_lm_eval(dummy_copy, tasks=["fx_mc"])
    doc_hash = raw_lines(path)[4]["doc_hash"]
    assert value_of(kept, "fixture-org/dummy-a", f"fx_mc/{doc_hash}") == 0.5
    assert not kept.is_binary
    with pytest.raises(DataError, match=rf"{path.name}: line 5 key 'acc' holds 0.5, but binary"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"], scoring="binary")
    rewrite_line(path, 5, set_acc(2.0))
    with pytest.raises(DataError, match=rf"{path.name}: line 5 key 'acc' holds 2.0, which is not a score"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"])
    rewrite_line(path, 5, set_acc(["gold", "pred"]))
    with pytest.raises(DataError, match=rf"{path.name}: line 5 key 'acc' holds \['gold', 'pred'\]"):
        load_lm_eval(dummy_copy, tasks=["fx_mc"])
    rewrite_line(path, 5, set_acc(True))
    assert value_of(load_lm_eval(dummy_copy, tasks=["fx_mc"]), "fixture-org/dummy-a", f"fx_mc/{doc_hash}") == 1.0


def test_unknown_runs_option() -> None:
    with pytest.raises(DataError, match="runs must be"):
        load_lm_eval(DUMMY, tasks=["fx_mc"], runs="newest")  # type: ignore[arg-type]


def test_lines_without_filter_key_read_as_filter_none(dummy_copy: Path) -> None:
    """Older harness versions log no 'filter': one line per doc_id is filter 'none'; repeats cannot be split."""
    folder = model_folder(dummy_copy, "fixture-org/dummy-a")
    for task in ("fx_mc", "fx_gen"):
        path = samples_file(folder, task)
        lines = [{k: v for k, v in line.items() if k != "filter"} for line in raw_lines(path)]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    gen = samples_file(folder, "fx_gen")
    with pytest.raises(DataError, match=rf"{gen}: lines 1 and \d+ both hold doc_id 0 and no line names its 'filter'"):
        load_lm_eval(dummy_copy, filter="strict-match")
    gen.unlink()
    data = load_lm_eval(dummy_copy, filter="strict-match")
    reference = load_lm_eval(DUMMY, filter="strict-match")
    mc = [i for i in reference.item_ids if i.startswith("fx_mc/")]
    for item in mc:
        assert value_of(data, "fixture-org/dummy-a", item) == value_of(reference, "fixture-org/dummy-a", item)
    assert list_choices(dummy_copy).query("task == 'fx_mc'")["filter"].tolist() == ["none"]
