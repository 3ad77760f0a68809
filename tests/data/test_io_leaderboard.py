"""The Open LLM Leaderboard details loader on small Parquet files in the hub's layouts (tests/fixtures/leaderboard)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from irtbayes.cli.main import build_parser, load_data_argument, main
from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.leaderboard import ALL, is_leaderboard_folder, list_choices, load_leaderboard

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "leaderboard"
A = FIXTURE / "fixture-org__tiny-a-details"
B = FIXTURE / "fixture-org__tiny-b-details"
C = FIXTURE / "fixture-org__tiny-c-details"
TASKS = ("leaderboard_bbh_navigate", "leaderboard_ifeval", "leaderboard_math_algebra_hard")
DEFAULT = {
    "leaderboard_bbh_navigate": "acc_norm",
    "leaderboard_ifeval": "prompt_level_strict_acc",
    "leaderboard_math_algebra_hard": "exact_match",
}
SUBJECTS = {"fixture-org/tiny-a": A, "fixture-org/tiny-b": B, "fixture-org/tiny-c": C}


# ---------------------------------------------------------------------- helpers reading the raw files
def source_file(subject: str, task: str) -> Path:
    """The file the loader must read: the converted ``latest`` split, or the samples file of tiny-c."""
    folder = SUBJECTS[subject]
    name = subject.replace("/", "__")
    latest = folder / f"{name}__{task}" / "latest" / "0000.parquet"
    if latest.exists():
        return latest
    (only,) = sorted((folder / name).glob(f"samples_{task}_*.parquet"))
    return only


def raw_scores(path: Path, metric: str) -> dict[int, float]:
    return {row["doc_id"]: float(row[metric]) for row in pq.read_table(path).to_pylist()}


def value_of(data, subject: str, item: str, condition: str | None = None) -> float:
    frame = data.long_frame()
    mask = (frame["subject"] == subject) & (frame["item"] == item)
    if condition is not None:
        mask &= frame["condition"] == condition
    picked = frame.loc[mask, "response"]
    assert len(picked) == 1, f"{subject} {item} {condition}: {len(picked)} responses"
    return float(picked.iloc[0])


def rewrite(path: Path, change) -> None:
    """Apply ``change`` to the rows of a Parquet file and write it back."""
    rows = pq.read_table(path).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows), path)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the fixture tree."""
    target = tmp_path / "details"
    shutil.copytree(FIXTURE, target, ignore=shutil.ignore_patterns("*.py", "*.md"))
    return target


def in_copy(tree: Path, original: Path) -> Path:
    return tree / original.relative_to(FIXTURE)


# ---------------------------------------------------------------------- detection and loading
def test_detects_details_folders(tmp_path: Path) -> None:
    for folder in (FIXTURE, A, C, C / "fixture-org__tiny-c", A / "fixture-org__tiny-a__leaderboard_ifeval"):
        assert is_leaderboard_folder(folder), folder
    assert not is_leaderboard_folder(tmp_path)
    assert not is_leaderboard_folder(FIXTURE.parent / "lm_eval")
    assert not is_leaderboard_folder(source_file("fixture-org/tiny-a", TASKS[0]))


def test_values_match_the_files_read() -> None:
    data = load_leaderboard(FIXTURE)
    assert sorted(data.subject_ids) == sorted(SUBJECTS)
    assert data.items.groupby("benchmark").size().to_dict() == dict(zip(TASKS, (4, 3, 3), strict=True))
    expected = {}
    for subject in SUBJECTS:
        for task in TASKS:
            for doc_id, value in raw_scores(source_file(subject, task), DEFAULT[task]).items():
                expected[(subject, f"{task}/{doc_id}")] = value
    assert data.n_responses == len(expected) == 30
    for (subject, item), value in expected.items():
        assert value_of(data, subject, item) == value, (subject, item)
    assert data.is_binary and "condition" not in data.responses.columns
    assert data.items.loc["leaderboard_ifeval/0", "metric"] == "prompt_level_strict_acc"
    assert data.notes == (
        "task 'leaderboard_ifeval': read 'prompt_level_strict_acc', the leaderboard's measure (it logs "
        "['prompt_level_strict_acc', 'prompt_level_loose_acc'])",
    )
    assert data.subjects.loc["fixture-org/tiny-c", "folder"] == "fixture-org__tiny-c-details/fixture-org__tiny-c"
    assert io.load(FIXTURE).checksum() == data.checksum()


def test_item_metadata_comes_from_the_documents() -> None:
    data = load_leaderboard(FIXTURE)
    navigate = data.items.loc["leaderboard_bbh_navigate/0"]
    assert navigate["text"].startswith("If you follow these instructions") and navigate["text"].endswith("Take 1 step.")
    assert navigate["answer"] == "Yes" and navigate["n_options"] == 2 and navigate["doc_id"] == "0"
    math = data.items.loc["leaderboard_math_algebra_hard/1"]
    assert math["text"] == "Solve $3x + 1 = 10$ for $x$." and math["answer"] == "3"
    assert math.isna()["n_options"], "a generated answer has no fixed options"


def test_latest_split_is_read_not_an_older_run() -> None:
    data = load_leaderboard(B)
    old = B / "fixture-org__tiny-b__leaderboard_bbh_navigate" / "2024_06_20T09_00_00.000000" / "0000.parquet"
    latest = raw_scores(source_file("fixture-org/tiny-b", TASKS[0]), "acc_norm")
    assert raw_scores(old, "acc_norm") != latest, "the fixture's older run must differ"
    loaded = {i: value_of(data, "fixture-org/tiny-b", f"{TASKS[0]}/{i}") for i in latest}
    assert loaded == latest


def test_without_latest_the_newest_run_is_read(tree: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = in_copy(tree, B) / "fixture-org__tiny-b__leaderboard_bbh_navigate"
    shutil.rmtree(config / "latest")
    newest = raw_scores(config / "2024_07_02T11_12_13.456789" / "0000.parquet", "acc_norm")
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.leaderboard"):
        data = load_leaderboard(tree)
    assert {i: value_of(data, "fixture-org/tiny-b", f"{TASKS[0]}/{i}") for i in newest} == newest
    assert "left out" in caplog.text and "2024-06-20T09-00-00.000000" not in caplog.text
    assert "2024_06_20T09_00_00.000000" in caplog.text


def test_a_train_split_stands_for_the_latest_run(tree: Path) -> None:
    config = in_copy(tree, B) / "fixture-org__tiny-b__leaderboard_bbh_navigate"
    (config / "latest").rename(config / "train")
    old = config / "2024_06_20T09_00_00.000000" / "0000.parquet"
    shutil.copy(old, config / "2024_07_02T11_12_13.456789" / "0000.parquet")  # the dated newest now differs
    train = raw_scores(config / "train" / "0000.parquet", "acc_norm")
    assert train != raw_scores(old, "acc_norm")
    data = load_leaderboard(tree)
    assert {i: value_of(data, "fixture-org/tiny-b", f"{TASKS[0]}/{i}") for i in train} == train


def test_samples_layout_keeps_the_newest_of_several_runs(tree: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = in_copy(tree, C) / "fixture-org__tiny-c"
    current = next(folder.glob("samples_leaderboard_bbh_navigate_*.parquet"))
    older = folder / "samples_leaderboard_bbh_navigate_2024-07-01T00-00-00.000000.parquet"
    shutil.copy(current, older)
    rewrite(older, lambda rows: [r.update(acc_norm=1.0 - r["acc_norm"]) for r in rows])
    with caplog.at_level(logging.WARNING, logger="irtbayes.data.io.leaderboard"):
        data = load_leaderboard(tree)
    expected = raw_scores(current, "acc_norm")
    assert {i: value_of(data, "fixture-org/tiny-c", f"{TASKS[0]}/{i}") for i in expected} == expected
    assert f"left out {older}" in caplog.text


# ---------------------------------------------------------------------- metrics
def test_choices_list_every_metric() -> None:
    table = list_choices(FIXTURE)
    assert table["task"].tolist() == list(TASKS)
    assert table["metrics"].tolist() == [
        "acc_norm",
        "prompt_level_strict_acc, prompt_level_loose_acc",
        "exact_match",
    ], "list-valued columns (inst_level_*) are no per-document score"
    assert table["default_metric"].tolist() == [DEFAULT[t] for t in TASKS]
    assert table["subjects"].tolist() == [3, 3, 3] and table["documents"].tolist() == [4, 3, 3]


def test_a_named_metric_and_a_per_task_choice() -> None:
    loose = load_leaderboard(FIXTURE, metric="prompt_level_loose_acc")
    per_task = load_leaderboard(FIXTURE, metric="leaderboard_ifeval=prompt_level_loose_acc")
    for subject in SUBJECTS:
        raw = raw_scores(source_file(subject, "leaderboard_ifeval"), "prompt_level_loose_acc")
        for doc_id, value in raw.items():
            assert value_of(loose, subject, f"leaderboard_ifeval/{doc_id}") == value
            assert value_of(per_task, subject, f"leaderboard_ifeval/{doc_id}") == value
        navigate = raw_scores(source_file(subject, TASKS[0]), "acc_norm")
        assert [value_of(loose, subject, f"{TASKS[0]}/{i}") for i in navigate] == list(navigate.values())
    assert "task 'leaderboard_bbh_navigate': read 'acc_norm', its only metric" in " ".join(loose.notes)
    assert per_task.notes == ()
    assert loose.checksum() != load_leaderboard(FIXTURE).checksum()


def test_every_metric_as_a_condition() -> None:
    data = load_leaderboard(FIXTURE, metric=ALL)
    assert list(data.conditions) == ["acc_norm", "exact_match", "prompt_level_loose_acc", "prompt_level_strict_acc"]
    assert data.n_responses == 30 + 9
    raw = raw_scores(source_file("fixture-org/tiny-b", "leaderboard_ifeval"), "prompt_level_loose_acc")
    for doc_id, value in raw.items():
        assert value_of(data, "fixture-org/tiny-b", f"leaderboard_ifeval/{doc_id}", "prompt_level_loose_acc") == value


def test_unknown_metrics_are_errors_listing_the_choices() -> None:
    with pytest.raises(DataError, match=r"no task logs metric 'f1'; the metrics are \['acc_norm', 'exact_match'"):
        load_leaderboard(FIXTURE, metric="f1")
    with pytest.raises(DataError, match=r"task 'leaderboard_ifeval' does not log metric 'acc'; it logs \['prompt_l"):
        load_leaderboard(FIXTURE, metric="leaderboard_ifeval=acc")
    with pytest.raises(DataError, match=r"names task\(s\) \['mmlu'\] that are not here"):
        load_leaderboard(FIXTURE, metric="mmlu=acc")
    with pytest.raises(DataError, match=r"expected METRIC or TASK=METRIC"):
        load_leaderboard(FIXTURE, metric="leaderboard_ifeval=")


def with_two_metrics(tree: Path, subjects=tuple(SUBJECTS)) -> None:
    """Give navigate an ``acc`` column (1 - acc_norm) beside ``acc_norm``, as harness tasks outside the leaderboard
    log."""
    for subject in subjects:
        path = in_copy(tree, source_file(subject, TASKS[0]))
        rewrite(path, lambda rows: [r.update(acc=1.0 - r["acc_norm"]) for r in rows])


def test_a_task_with_several_metrics_asks_for_one(tree: Path) -> None:
    with_two_metrics(tree)
    with pytest.raises(
        DataError,
        match=r"tiny-a__leaderboard_bbh_navigate/latest/0000\.parquet: task 'leaderboard_bbh_navigate' logs several "
        r"metrics \['acc_norm', 'acc'\]; choose one with metric= \(--metric",
    ):
        load_leaderboard(tree)
    with pytest.raises(DataError, match=r"logs several metrics \['acc_norm', 'acc'\], not 'exact_match'; choose"):
        load_leaderboard(tree, metric="exact_match")
    data = load_leaderboard(tree, metric="acc")
    for subject in SUBJECTS:
        acc = raw_scores(in_copy(tree, source_file(subject, TASKS[0])), "acc")
        assert acc == {i: 1.0 - v for i, v in raw_scores(source_file(subject, TASKS[0]), "acc_norm").items()}
        assert {i: value_of(data, subject, f"{TASKS[0]}/{i}") for i in acc} == acc
    assert data.items.loc["leaderboard_ifeval/0", "metric"] == "prompt_level_strict_acc"
    assert any("read 'prompt_level_strict_acc', the leaderboard's measure" in note for note in data.notes)


def test_one_task_is_read_with_one_metric_for_every_model(tree: Path) -> None:
    with_two_metrics(tree, ["fixture-org/tiny-b"])
    with pytest.raises(
        DataError,
        match=r"tiny-b__leaderboard_bbh_navigate/latest/0000\.parquet: task 'leaderboard_bbh_navigate' reads "
        r"\['acc'\] here but \['acc_norm'\] in .*tiny-a__leaderboard_bbh_navigate/latest/0000\.parquet; choose",
    ):
        load_leaderboard(tree, metric="acc")
    assert load_leaderboard(tree, metric="acc_norm").n_responses == 30


def test_cli_asks_for_a_metric_only_when_it_must(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["fit", str(FIXTURE), "--out", str(tree / "fit")])
    assert load_data_argument(args).n_responses == 30  # type: ignore[attr-defined]
    with_two_metrics(tree)
    assert main(["fit", str(tree), "--out", str(tree / "fit")]) == 2
    err = capsys.readouterr().err
    assert "logs several metrics ['acc_norm', 'acc']; choose one with metric= (--metric" in err
    assert not (tree / "fit").exists()
    args = build_parser().parse_args(["audit", str(tree), "--metric", "leaderboard_bbh_navigate=acc_norm"])
    assert load_data_argument(args).n_responses == 30  # type: ignore[attr-defined]


def test_data_summary_lists_tasks_and_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "Tasks and metrics logged (--metric chooses among them):" in out
    assert "prompt_level_strict_acc, prompt_level_loose_acc" in out
    assert "3 subjects x 10 items, 39 responses" in out  # every metric, each a condition
    assert main(["data", "summary", str(FIXTURE), "--json", "--metric", "exact_match"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_responses"] == 30 and summary["conditions"] == []
    assert [row["task"] for row in summary["leaderboard_choices"]] == list(TASKS)
    assert main(["data", "summary", str(FIXTURE), "--format", "leaderboard", "--metric", "f1"]) == 2
    assert "no task logs metric 'f1'" in capsys.readouterr().err


def test_filters_column(tree: Path) -> None:
    path = in_copy(tree, A) / "fixture-org__tiny-a__leaderboard_math_algebra_hard" / "latest" / "0000.parquet"
    rows = pq.read_table(path).to_pylist()
    strict = [{**r, "filter": "strict-match"} for r in rows]
    flexible = [{**r, "filter": "flexible-extract", "exact_match": 1} for r in rows]
    pq.write_table(pa.Table.from_pylist(strict + flexible), path)
    with pytest.raises(DataError, match=r"logs several filters \['strict-match', 'flexible-extract'\]; choose one"):
        load_leaderboard(tree)
    strict_data = load_leaderboard(tree, filter="strict-match")
    flexible_data = load_leaderboard(tree, filter="flexible-extract")
    for row in rows:
        item = f"leaderboard_math_algebra_hard/{row['doc_id']}"
        assert value_of(strict_data, "fixture-org/tiny-a", item) == row["exact_match"]
        assert value_of(flexible_data, "fixture-org/tiny-a", item) == 1.0
    with pytest.raises(DataError, match=r"has no filter 'none'; it logs \['strict-match', 'flexible-extract'\]"):
        load_leaderboard(tree, filter="none")
    both = load_leaderboard(tree, filter=ALL)
    assert value_of(both, "fixture-org/tiny-a", "leaderboard_math_algebra_hard/1", "flexible-extract") == 1.0


# ---------------------------------------------------------------------- bad input, named
def navigate_a(tree: Path) -> Path:
    return in_copy(tree, A) / "fixture-org__tiny-a__leaderboard_bbh_navigate" / "latest" / "0000.parquet"


def test_corrupt_empty_and_rowless_files_are_named(tree: Path) -> None:
    path = navigate_a(tree)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(DataError, match=rf"{path}: not a readable Parquet file"):
        load_leaderboard(tree)
    with pytest.raises(DataError, match=rf"{path}: not a readable Parquet file"):
        list_choices(tree)
    path.write_bytes(b"")
    with pytest.raises(DataError, match=rf"{path}: the file is empty \(0 bytes\)"):
        load_leaderboard(tree)
    pq.write_table(pq.read_table(pa.BufferReader(good)).slice(0, 0), path)
    with pytest.raises(DataError, match=rf"{path}: the file has no rows"):
        load_leaderboard(tree)


def test_duplicate_doc_id_is_named(tree: Path) -> None:
    path = navigate_a(tree)
    rewrite(path, lambda rows: rows.append(dict(rows[2])))
    with pytest.raises(DataError, match=rf"{path}: doc_id 2 appears in rows 2 and 4; each document must appear once"):
        load_leaderboard(tree)


def test_two_documents_with_one_doc_id_in_a_file(tree: Path) -> None:
    """A group configuration (several subtasks in one file) repeats doc_ids with other documents."""
    path = navigate_a(tree)
    rewrite(path, lambda rows: rows.append({**rows[0], "doc_hash": "f" * 64}))
    with pytest.raises(DataError, match=rf"{path}: rows 0 and 4 are two documents with doc_id 0: a configuration"):
        load_leaderboard(tree)


def test_bad_scores_name_file_doc_and_column(tree: Path) -> None:
    path = navigate_a(tree)
    rewrite(path, lambda rows: rows[1].update(acc_norm=float("nan")))
    with pytest.raises(DataError, match=rf"{path}: doc_id 1, column 'acc_norm' holds nan, which is not a score"):
        load_leaderboard(tree)
    rewrite(path, lambda rows: rows[1].update(acc_norm=2.0))
    with pytest.raises(DataError, match=r"doc_id 1, column 'acc_norm' holds 2\.0, which is not a score in \[0, 1\]"):
        load_leaderboard(tree)
    rewrite(path, lambda rows: rows[1].update(acc_norm=0.5))
    with pytest.raises(DataError, match=r"doc_id 1, column 'acc_norm' holds 0\.5, but binary \(0/1\)"):
        load_leaderboard(tree, scoring="binary")
    assert value_of(load_leaderboard(tree), "fixture-org/tiny-a", f"{TASKS[0]}/1") == 0.5


def test_missing_doc_id_column_is_named(tree: Path) -> None:
    path = navigate_a(tree)
    rewrite(path, lambda rows: [r.pop("doc_id") for r in rows])
    with pytest.raises(DataError, match=rf"{path}: no 'doc_id' column; the columns are \['doc', 'target'"):
        load_leaderboard(tree)


def test_one_doc_id_with_two_documents(tree: Path) -> None:
    path = navigate_a(tree)
    rewrite(path, lambda rows: rows[0].update(doc_hash="0" * 64))
    with pytest.raises(DataError, match=r"doc_id 0 of task 'leaderboard_bbh_navigate' is another document than in"):
        load_leaderboard(tree)


def test_file_outside_the_layouts_is_named(tree: Path) -> None:
    stray = tree / "fixture-org__tiny-a-details" / "notes.parquet"
    shutil.copy(navigate_a(tree), stray)
    with pytest.raises(DataError, match=rf"{stray}: not in an Open LLM Leaderboard details layout"):
        load_leaderboard(tree)
    config = in_copy(tree, A) / "fixture-org__tiny-a__leaderboard_ifeval"
    stray.unlink()
    (config / "latest").rename(config / "partial-latest")
    partial = config / "partial-latest" / "0000.parquet"
    with pytest.raises(DataError, match=rf"{partial}: a partial split"):
        load_leaderboard(tree)
    empty = tree.parent / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match=rf"{empty}: no Parquet files here"):
        load_leaderboard(empty)
