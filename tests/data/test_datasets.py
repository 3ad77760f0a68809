"""The data set registry: manifests in data/, embedded data, and external data converted from its upstream files.

The tests on real external data convert ../shared/data (the upstream files) into a temporary folder; without it
they skip, naming the path. Everything else uses the repository alone.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data import registry as datasets
from irtbayes.data.io import load
from irtbayes.data.registry import (
    DATA_DIR_ENV,
    DEFAULT_DATA_ENV,
    default_data_path,
    is_dataset_folder,
    list_datasets,
    load_dataset,
    load_folder,
    manifests,
)
from irtbayes.data.responses import ResponseData

REPO = Path(__file__).resolve().parents[2]
REPO_DATA = REPO / "data"
SHARED = REPO.parent / "shared" / "data"
EMBEDDED = ["lsat6", "lsat7", "mmlu_pro"]
EXTERNAL = [
    "chembench",
    "jailbreakbench",
    "nlu_vania2021",
    "openllm_tinybench",
    "pyirt_sst3",
    "sat12",
    "science",
    "verbagg",
    "xstest",
]


def matrix_frame(data: ResponseData) -> pd.DataFrame:
    return pd.DataFrame(data.to_matrix(), index=data.subject_ids, columns=data.item_ids)


@pytest.fixture(scope="module")
def convert_data() -> ModuleType:
    """``scripts/convert_data.py`` as a module."""
    spec = importlib.util.spec_from_file_location("convert_data", REPO / "scripts" / "convert_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["convert_data"] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------------------- embedded


@pytest.fixture(scope="module")
def mmlu() -> ResponseData:
    return load_dataset("mmlu_pro")


def test_mmlu_pro_shape_benchmarks_and_mean(mmlu: ResponseData) -> None:
    assert (mmlu.n_subjects, mmlu.n_items) == (29, 12032)
    assert len(mmlu.benchmarks) == 14, list(mmlu.benchmarks)
    mean = mmlu.values.mean()
    assert mean == pytest.approx(0.4024, abs=1e-4), f"mean response {mean:.5f}, SOURCE.md states 0.4024"
    assert mmlu.is_binary


def test_mmlu_pro_missing_cells_as_source_states(mmlu: ResponseData) -> None:
    missing = pd.Series(np.isnan(mmlu.to_matrix()).sum(axis=1), index=mmlu.subject_ids)
    stated = {"DeepSeek-Coder-V2": 1681, "gemini-1.5-flash-002": 20, "gemini-1.5-pro-002": 12}
    for subject, count in stated.items():
        assert missing[subject] == count, f"{subject}: {missing[subject]} missing cells, SOURCE.md states {count}"
    others = missing.drop(list(stated))
    assert (others == 0).all(), others[others > 0].to_dict()
    assert mmlu.n_responses == 29 * 12032 - sum(stated.values())


def test_mmlu_pro_values_match_the_raw_file(mmlu: ResponseData) -> None:
    raw = pd.read_csv(REPO_DATA / "mmlu_pro" / "mmlu_pro_responses.csv", index_col="model")
    raw.columns = ["mmlu_pro/" + c for c in raw.columns]
    got = matrix_frame(mmlu).loc[raw.index, raw.columns]
    np.testing.assert_array_equal(got.to_numpy(), raw.to_numpy(dtype="float64"))
    assert got.loc["DeepSeek-Coder-V2", "mmlu_pro/70"] == raw.loc["DeepSeek-Coder-V2", "mmlu_pro/70"]


def test_mmlu_pro_item_labels(mmlu: ResponseData) -> None:
    items = mmlu.items
    assert items["benchmark"].notna().all() and items["domain"].notna().all()
    counts = items["benchmark"].value_counts()
    assert counts["math"] == 1351 and counts["history"] == 381 and counts["computer_science"] == 410, counts.to_dict()
    per_benchmark = items.groupby("benchmark")["domain"].nunique()
    assert (per_benchmark == 1).all(), per_benchmark[per_benchmark > 1]
    assert set(mmlu.domains) == {"stem", "humanities", "social_science", "professional"}
    assert items.loc[items["benchmark"] == "law", "domain"].iloc[0] == "humanities"
    assert (items["n_options"] == 10).all()
    raw = pd.read_csv(REPO_DATA / "mmlu_pro" / "mmlu_pro_items.csv").set_index("question_id")
    first = raw.index[0]
    assert items.loc[f"mmlu_pro/{first}", "source"] == raw.loc[first, "src"]
    assert items.loc[f"mmlu_pro/{first}", "answer"] == raw.loc[first, "answer"]


def test_mmlu_pro_subject_table_comes_from_the_models_file(mmlu: ResponseData) -> None:
    models = pd.read_csv(REPO_DATA / "mmlu_pro" / "mmlu_pro_models.csv", index_col="model")
    assert set(mmlu.subject_ids) == set(models.index)
    present = pd.Series((~np.isnan(mmlu.to_matrix())).sum(axis=1), index=mmlu.subject_ids)
    assert (present == models["n_items"].reindex(mmlu.subject_ids)).all()


def test_default_data_path_is_the_embedded_mmlu_pro(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DEFAULT_DATA_ENV, raising=False)
    assert default_data_path() == REPO_DATA / "mmlu_pro"
    assert is_dataset_folder(default_data_path())
    monkeypatch.setenv(DEFAULT_DATA_ENV, str(tmp_path))
    assert default_data_path() == tmp_path


def lsat_patterns(name: str) -> pd.DataFrame:
    raw = pd.read_csv(REPO_DATA / name / f"{name}_patterns.csv")
    return raw.rename(columns={raw.columns[-1]: "count"})


@pytest.mark.parametrize("name", ["lsat6", "lsat7"])
def test_lsat_expands_patterns_into_subjects(name: str) -> None:
    data = load_dataset(name)
    patterns = lsat_patterns(name)
    assert (data.n_subjects, data.n_items) == (1000, 5)
    assert patterns["count"].sum() == 1000
    answers = patterns.drop(columns="count").to_numpy(dtype=float)
    expected = (answers * patterns["count"].to_numpy()[:, None]).sum(axis=0) / 1000
    got = np.nanmean(data.to_matrix(), axis=0)
    np.testing.assert_allclose(got, expected, atol=1e-12, err_msg=f"{name}: proportions correct {got} vs {expected}")
    assert list(data.item_ids) == [f"{name}/item{k}" for k in range(1, 6)]
    assert set(data.benchmarks) == {name} and set(data.domains) == {"aptitude"}
    # each subject's stored pattern is its row of responses
    rows = ["".join(str(int(v)) for v in row) for row in data.to_matrix()]
    assert rows == data.subjects["pattern"].tolist()
    assert data.subject_ids[0] == f"{name}/0001" and data.subject_ids[-1] == f"{name}/1000"


def test_lsat7_proportions_against_published_counts() -> None:
    # LSAT7 item 1 is answered correctly by 828 of 1000 examinees (mirt's LSAT7; Bock & Lieberman 1970)
    data = load_dataset("lsat7")
    correct = np.nansum(data.to_matrix(), axis=0)
    assert correct.tolist() == [828, 658, 772, 606, 843], correct


def test_every_manifest_is_registered_and_described() -> None:
    table = list_datasets()
    assert sorted(table.index) == sorted(p.parent.name for p in REPO_DATA.glob("*/dataset.json"))
    assert sorted(table.index) == sorted(EMBEDDED + EXTERNAL)
    assert table.loc[EMBEDDED, "storage"].eq("embedded").all() and table.loc[EMBEDDED, "available"].all()
    assert table.loc[EXTERNAL, "storage"].eq("external").all()
    assert table["origin"].str.len().gt(10).all() and table["licence"].str.len().gt(2).all()
    assert table["citation"].str.len().gt(10).all() and table["title"].str.len().gt(5).all()
    domains = {d.strip() for cell in table["domains"] for d in cell.split(",")}
    assert len(domains) >= 7, sorted(domains)
    assert table.loc["jailbreakbench", "options"] == "judge, unsubmitted"
    for name in EMBEDDED:
        data = load_dataset(name)
        assert (data.n_subjects, data.n_items) == tuple(table.loc[name, ["n_subjects", "n_items"]]), name
        assert table.loc[name, "domains"] == ", ".join(data.domains.sort_values()) or name == "mmlu_pro"


def test_mmlu_pro_domains_come_from_its_manifest() -> None:
    listed = list_datasets().loc["mmlu_pro", "domains"].split(", ")
    assert listed == list(json.loads((REPO_DATA / "mmlu_pro" / "dataset.json").read_text())["domains"])


@pytest.mark.parametrize("name", ["lsat6", "lsat7"])
def test_lsat_licence_agrees_with_its_source_note(name: str) -> None:
    licence = manifests()[name]["licence"]
    note = next(line for line in (REPO_DATA / name / "SOURCE.md").read_text().splitlines() if "Licence" in line)
    stated = sorted(re.findall(r"GPL \(>= \d\)", note))
    assert sorted(re.findall(r"GPL \(>= \d\)", licence)) == stated, (licence, note)
    assert list_datasets().loc[name, "licence"] == licence


def test_a_new_manifest_folder_is_registered_by_itself(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("lsat7", "xstest"):
        shutil.copytree(REPO_DATA / name, tmp_path / name)
    shutil.copytree(REPO_DATA / "lsat7", tmp_path / "lsat7_copy")
    manifest = json.loads((tmp_path / "lsat7_copy" / "dataset.json").read_text())
    manifest.update(name="lsat7_copy", title="a copy", licence="GPL (>= 3)")
    (tmp_path / "lsat7_copy" / "dataset.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(datasets, "data_root", lambda: tmp_path)
    datasets._registry.cache_clear()
    try:
        table = list_datasets()
        assert list(table.index) == ["lsat7", "lsat7_copy", "xstest"]
        assert table.loc["lsat7_copy", "title"] == "a copy" and table.loc["lsat7_copy", "available"]
        assert load_dataset("lsat7_copy").checksum() == load_dataset("lsat7").checksum()
        (tmp_path / "lsat7_copy" / "dataset.json").write_text(json.dumps({**manifest, "name": "other"}))
        datasets._registry.cache_clear()
        with pytest.raises(DataError, match=r"'name' is 'other', but the folder is 'lsat7_copy'"):
            list_datasets()
    finally:
        datasets._registry.cache_clear()


def tiny_wide_folder(folder: Path) -> Path:
    """A manifest folder of 4 subjects x 5 items in 3 benchmarks; s3 answers one benchmark, s4 two."""
    folder.mkdir()
    pd.DataFrame(
        {
            "who": ["s1", "s2", "s3", "s4"],
            "q1": [1, 0, 1, None],
            "q2": [0, 1, None, 1],
            "q3": [1, 1, None, None],
            "q4": [0, None, None, 0],
            "q5": [1, 0, None, None],
        }
    ).to_csv(folder / "answers.csv", index=False)
    items = pd.DataFrame(
        {"qid": ["q5", "q4", "q3", "q2", "q1"], "topic": ["c", "b", "b", "a", "a"], "text": list("vwxyz")}
    )
    items.to_csv(folder / "questions.csv", index=False)
    manifest = {
        "name": "tiny",
        "format": "wide",
        "files": {"responses": "answers.csv", "items": "questions.csv"},
        "responses": {"subject_column": "who", "scoring": "binary"},
        "items": {"id_column": "qid", "id_prefix": "tiny/", "columns": {"topic": "benchmark", "text": "text"}},
        "domains": {"one": ["a", "b"], "two": ["c"]},
    }
    (folder / "dataset.json").write_text(json.dumps(manifest))
    return folder


def test_a_wide_manifest_folder_and_the_subset_options(tmp_path: Path) -> None:
    folder = tiny_wide_folder(tmp_path / "tiny")
    data = load(folder)
    assert list(data.item_ids) == [f"tiny/q{k}" for k in (5, 4, 3, 2, 1)], "items follow the item table"
    assert data.items["benchmark"].tolist() == ["c", "b", "b", "a", "a"]
    assert data.items["domain"].tolist() == ["two", "one", "one", "one", "one"]
    assert data.items.loc["tiny/q3", "text"] == "x"
    assert matrix_frame(data).loc["s2", "tiny/q5"] == 0 and np.isnan(matrix_frame(data).loc["s2", "tiny/q4"])
    assert data.n_responses == 12
    assert list(load_folder(folder, min_benchmarks=3).subject_ids) == ["s1", "s2"]
    assert list(load_folder(folder, min_benchmarks=2).subject_ids) == ["s1", "s2", "s4"]
    kept = load_folder(folder, benchmarks=["a", "c"], min_benchmarks=2)
    assert list(kept.subject_ids) == ["s1", "s2"] and set(kept.benchmarks) == {"a", "c"}
    with pytest.raises(DataError, match=r"min_benchmarks must lie in 1..3, got 4"):
        load_folder(folder, min_benchmarks=4)
    with pytest.raises(DataError, match=r"unknown benchmark\(s\) \['d'\]"):
        load_folder(folder, benchmarks=["d"])
    answers = pd.read_csv(folder / "answers.csv")
    answers.loc[2, "q1"] = 2
    answers.to_csv(folder / "answers.csv", index=False)
    with pytest.raises(DataError, match=r"answers.csv: row 's3', column 'q1' holds 2; expected 0 or 1"):
        load_folder(folder)
    answers["q1"] = answers["q1"].astype(object)
    answers.loc[2, "q1"] = "yes"
    answers.to_csv(folder / "answers.csv", index=False)
    with pytest.raises(DataError, match=r"answers.csv: row 's3', column 'q1' holds 'yes', not a number"):
        load_folder(folder)
    answers.loc[2, "q1"] = 1
    answers.to_csv(folder / "answers.csv", index=False)
    pd.DataFrame({"qid": ["q1", "q2"], "topic": ["a", "a"], "text": ["z", "y"]}).to_csv(folder / "questions.csv")
    with pytest.raises(DataError, match=r"questions.csv: its 'qid' column and the response columns differ: 3 column"):
        load_folder(folder)


# ---------------------------------------------------------------------------------------------------- converters


def write_xstest(upstream: Path) -> Path:
    folder = upstream / "xstest_completions"
    folder.mkdir(parents=True)
    meta = pd.DataFrame(
        {"id": [1, 2, 3], "type": ["homonyms", "contrast_homonyms", "homonyms"], "label": ["safe", "unsafe", "safe"]}
    )
    meta.assign(focus=["kill", "kill", "shoot"], note=["violence", "violence", "sports"]).to_csv(
        folder / "xstest_prompt_meta.csv", index=False
    )
    labels = [
        ("v2-1", "homonyms", "a", "1_full_compliance"),
        ("v2-2", "contrast_homonyms", "a", "1_full_compliance"),
        ("v2-3", "homonyms", "a", "3_partial_refusal"),
        ("v2-1", "homonyms", "b", "2_full_refusal"),
        ("v2-2", "contrast_homonyms", "b", "2_full_refusal"),
        ("v2-3", "homonyms", "b", "1_full_compliance"),
    ]
    pd.DataFrame(labels, columns=["id", "type", "model", "final_label"]).to_csv(
        folder / "xstest_labels_long.csv", index=False
    )
    return folder


def test_converted_folder_loads_by_name_and_by_path(
    convert_data: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_xstest(tmp_path / "upstream")
    target = convert_data.convert("xstest", tmp_path / "upstream", tmp_path / "out")
    assert target == tmp_path / "out" / "xstest"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "out"))
    assert list_datasets().loc["xstest", "available"]
    data = load_dataset("xstest")
    expected = pd.DataFrame(
        {"xstest/v2-1": [1.0, 0.0], "xstest/v2-2": [0.0, 1.0], "xstest/v2-3": [0.5, 1.0]}, index=["a", "b"]
    )
    pd.testing.assert_frame_equal(matrix_frame(data), expected, check_names=False)
    assert data.items["prompt_label"].tolist() == ["safe", "unsafe", "safe"]
    assert set(data.domains) == {"safety"} and set(data.benchmarks) == {"xstest"}
    assert load(target).checksum() == data.checksum() == load_folder(target).checksum()
    assert json.loads((target / "dataset.json").read_text())["options"] == {"partial": 0.5, "split": False}
    strict = convert_data.convert("xstest", tmp_path / "upstream", tmp_path / "strict", partial=0, split=True)
    strict_data = load_folder(strict)
    assert strict_data.is_binary and matrix_frame(strict_data).loc["a", "xstest/v2-3"] == 0
    assert strict_data.items["benchmark"].tolist() == ["xstest_safe", "xstest_unsafe", "xstest_safe"]


def test_converter_errors_name_the_file_and_line(convert_data: ModuleType, tmp_path: Path) -> None:
    folder = write_xstest(tmp_path / "upstream")
    labels = pd.read_csv(folder / "xstest_labels_long.csv")
    labels.loc[4, "final_label"] = "4_unclear"
    labels.to_csv(folder / "xstest_labels_long.csv", index=False)
    with pytest.raises(DataError, match=r"xstest_labels_long.csv: line 6: final_label '4_unclear' is not one of"):
        convert_data.convert("xstest", tmp_path / "upstream", tmp_path / "out")
    assert not (tmp_path / "out" / "xstest").exists()
    with pytest.raises(DataError, match=r"xstest: unknown option\(s\) \['judge'\]; options: partial, split"):
        convert_data.convert("xstest", tmp_path / "upstream", tmp_path / "out", judge="artifact")
    with pytest.raises(DataError, match=r"chembench_irt_on_bench: no such folder .*irt-on-bench"):
        convert_data.convert("chembench", tmp_path / "upstream", tmp_path / "out")
    assert convert_data.main([str(tmp_path / "upstream"), str(tmp_path / "out"), "--only", "chembench"]) == 2


def test_convert_command_line_converts_what_is_there(convert_data: ModuleType, tmp_path: Path) -> None:
    write_xstest(tmp_path / "upstream")
    assert convert_data.main([str(tmp_path / "upstream"), str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["xstest"]
    argv = [str(tmp_path / "upstream"), str(tmp_path / "out"), "--only", "xstest", "--option", "partial=0"]
    assert convert_data.main(argv) == 0
    assert load_dataset("xstest", root=tmp_path / "out").is_binary


# ---------------------------------------------------------------------------------------------------- external


@pytest.fixture(scope="module")
def converted(convert_data: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every external data set converted from ../shared/data with default options."""
    if not SHARED.is_dir():
        pytest.skip(f"the external data sets' upstream files are not at {SHARED}")
    out = tmp_path_factory.mktemp("converted")
    for name in EXTERNAL:
        convert_data.convert(name, SHARED, out)
    return out


@pytest.fixture(scope="module")
def external(converted: Path) -> Callable[[str], ResponseData]:
    """Load a converted external data set once per module."""
    return functools.cache(lambda name: load_dataset(name, root=converted))


def variant(convert_data: ModuleType, name: str, root: Path, **options: object) -> ResponseData:
    out = root.parent / "_".join(["variant", name, *map(str, options.values())])
    return load_folder(convert_data.convert(name, SHARED, out, **options))


@pytest.mark.parametrize("name", EXTERNAL)
def test_external_sets_load_with_the_listed_shape_and_labels(
    converted: Path, external: Callable[[str], ResponseData], name: str
) -> None:
    data = external(name)
    listed = list_datasets(root=converted).loc[name]
    assert listed["available"]
    assert (data.n_subjects, data.n_items) == (listed["n_subjects"], listed["n_items"])
    assert data.items["benchmark"].notna().all() and data.items["domain"].notna().all()
    assert set(data.domains) == {d.strip() for d in listed["domains"].split(",")}


def test_data_dir_variable_finds_the_converted_sets(converted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(converted))
    data = load_dataset("chembench")
    assert (data.n_subjects, data.n_items) == (22, 2854)
    monkeypatch.setenv(DATA_DIR_ENV, str(SHARED))
    with pytest.raises(DataError, match=r"chembench: no such folder.*convert_data.py.*chembench_irt_on_bench"):
        load_dataset("chembench")


def test_nlu_shape_labels_and_values(
    external: Callable[[str], ResponseData], convert_data: ModuleType, converted: Path
) -> None:
    folder = SHARED / "nlu_test_sets_vania2021"
    nlu = external("nlu_vania2021")
    assert nlu.n_responses == 90 * 82756
    assert len(nlu.benchmarks) == 29
    matrix = matrix_frame(nlu)
    labels = nlu.items.drop_duplicates("benchmark").set_index("benchmark")["domain"]
    assert labels["snli"] == "nli" and labels["boolq"] == "reading_comprehension" and labels["wsc"] == "coreference_wsd"
    for task, benchmark in [("cb", "cb"), ("mrqa-nq", "mrqa_nq")]:
        raw = pd.read_csv(folder / f"{task}_irt_all_coded.csv", index_col="userid")
        got = matrix.loc[raw.index, raw.columns]
        np.testing.assert_array_equal(got.to_numpy(), raw.to_numpy(dtype=float), err_msg=task)
        assert (nlu.items.loc[raw.columns, "benchmark"] == benchmark).all()
    assert nlu.subjects.loc["roberta-base-10M-1_25", "train_fraction"] == "25"
    assert nlu.items.loc["cb_0", "task_name"] == "CB"
    two = variant(convert_data, "nlu_vania2021", converted, tasks="cb,mrqa-nq")
    assert set(two.benchmarks) == {"cb", "mrqa_nq"} and two.n_items == int(
        nlu.items["benchmark"].isin(["cb", "mrqa_nq"]).sum()
    )
    with pytest.raises(DataError, match=r"task_metadata.csv: unknown task\(s\) \['cola'\]"):
        convert_data.convert("nlu_vania2021", SHARED, converted.parent / "none", tasks="cola")


def test_tinybench_joins_all_five_benchmarks_keeping_partial_models(
    converted: Path, external: Callable[[str], ResponseData]
) -> None:
    folder = SHARED / "openllm_tinybench_atlas"
    data = external("openllm_tinybench")
    assert set(data.benchmarks) == {"arc_challenge", "gsm8k", "hellaswag", "truthfulqa", "winogrande"}
    raws = {b: pd.read_csv(folder / f"response_matrix_tiny{b}.csv", index_col=0) for b in ("arc", "hellaswag")}
    union = set().union(*(pd.read_csv(p, index_col=0, usecols=[0]).index for p in folder.glob("response_matrix_*.csv")))
    assert data.n_subjects == len(union) == 6122
    got = matrix_frame(data)
    arc = raws["arc"]
    cols = ["arc_challenge/" + c for c in arc.columns]
    np.testing.assert_array_equal(got.loc[arc.index, cols].to_numpy(), arc.to_numpy(dtype=float))
    # a model in the ARC file but not in HellaSwag keeps its ARC answers and has missing HellaSwag cells
    partial = arc.index.difference(raws["hellaswag"].index)[0]
    hella = data.items.index[data.items["benchmark"] == "hellaswag"]
    assert got.loc[partial, hella].isna().all() and got.loc[partial, cols].notna().all()
    assert data.subjects.loc[partial, "n_benchmarks"] < 5
    complete = load_dataset("openllm_tinybench", root=converted, min_benchmarks=5)
    assert complete.n_subjects == 1989 and complete.n_responses == 1989 * 493
    assert (complete.subjects["n_benchmarks"] == 5).all()


def test_chembench_transposes_items_by_models(external: Callable[[str], ResponseData]) -> None:
    folder = SHARED / "chembench_irt_on_bench"
    data = external("chembench")
    scores = pd.read_csv(folder / "model_score_allcorrect.csv", index_col=0)["score"]
    got = pd.Series(np.nanmean(data.to_matrix(), axis=1), index=data.subject_ids)
    np.testing.assert_allclose(got[scores.index].to_numpy(), scores.to_numpy(), atol=1e-12)
    assert data.items["difficulty_label"].value_counts().to_dict() == {"intermediate": 1973, "easy": 859, "hard": 22}
    raw = pd.read_csv(folder / "binary_matrix.csv", index_col=0)
    assert matrix_frame(data).loc["GPT-4o", "chembench/1"] == raw.loc[1, "GPT-4o"]


def test_jailbreakbench_scores_resisted_jailbreaks(
    converted: Path, external: Callable[[str], ResponseData], convert_data: ModuleType
) -> None:
    folder = SHARED / "jailbreakbench_artifacts"
    data = external("jailbreakbench")
    raw = pd.read_csv(folder / "jailbreakbench_matrix.csv", index_col="subject")
    got = matrix_frame(data).loc[raw.index, ["jailbreakbench/" + c for c in raw.columns]]
    np.testing.assert_array_equal(got.to_numpy(), 1 - raw.to_numpy(dtype=float))
    assert got.loc["PAIR|vicuna-13b-v1.5"].mean() == pytest.approx(1 - 0.69)
    long = pd.read_csv(folder / "jailbreakbench_long.csv")
    strict = variant(convert_data, "jailbreakbench", converted, unsubmitted="missing")
    assert data.n_responses - strict.n_responses == int((~long["prompt_submitted"]).sum()) == 163
    guard = variant(convert_data, "jailbreakbench", converted, judge="llama_guard")
    assert guard.n_subjects == 16, "DSN has no Llama Guard verdicts, so its two pairs drop out"
    assert data.subjects.loc["GCG|gpt-4-0125-preview", "attack_type"] == "transfer"


def test_xstest_scores_the_desirable_behaviour(
    converted: Path, external: Callable[[str], ResponseData], convert_data: ModuleType
) -> None:
    folder = SHARED / "xstest_completions"
    data = external("xstest")
    long = pd.read_csv(folder / "xstest_labels_long.csv")
    gpt4 = long[long["model"] == "gpt4"]["final_label"].value_counts()
    assert gpt4.to_dict() == {"1_full_compliance": 230, "2_full_refusal": 211, "3_partial_refusal": 9}
    got = matrix_frame(data)
    for _, row in long.sample(40, random_state=0).iterrows():
        unsafe = row["type"].startswith("contrast")
        expected = {
            "1_full_compliance": 0.0 if unsafe else 1.0,
            "2_full_refusal": 1.0 if unsafe else 0.0,
            "3_partial_refusal": 0.5,
        }[row["final_label"]]
        assert got.loc[row["model"], f"xstest/{row['id']}"] == expected, row.to_dict()
    assert data.items["prompt_label"].value_counts().to_dict() == {"safe": 250, "unsafe": 200}
    assert variant(convert_data, "xstest", converted, partial=0.0).is_binary and not data.is_binary
    split = variant(convert_data, "xstest", converted, split=True)
    assert split.items["benchmark"].value_counts().to_dict() == {"xstest_safe": 250, "xstest_unsafe": 200}


def test_pyirt_sst3_keeps_sentences_as_item_text(external: Callable[[str], ResponseData]) -> None:
    path = SHARED / "pyirt_sst3_fixture" / "minitest.amortized.jsonlines"
    data = external("pyirt_sst3")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    first = records[0]["responses"]
    assert data.items["text"].tolist() == list(first)
    means = np.nanmean(data.to_matrix(), axis=1).round(3).tolist()
    assert means == [0.772, 0.675, 0.597, 0.404, 0.404, 0.681, 0.644, 0.684], means
    assert "always-positive" in data.subject_ids


def test_classic_sets_match_their_files(
    converted: Path, external: Callable[[str], ResponseData], convert_data: ModuleType
) -> None:
    folder = SHARED / "classic_irt"
    sat12 = external("sat12")
    scored = pd.read_csv(folder / "sat12_scored.csv")
    np.testing.assert_array_equal(sat12.to_matrix(), scored.to_numpy(dtype=float))
    omitted = variant(convert_data, "sat12", converted, omitted="missing")
    assert sat12.n_responses - omitted.n_responses == 69
    science = external("science")
    raw = pd.read_csv(folder / "science_mirt.csv")
    np.testing.assert_allclose(np.nanmean(science.to_matrix(), axis=0), (raw >= 3).mean().to_numpy())
    fraction = variant(convert_data, "science", converted, threshold=None)
    assert fraction.values.max() == 1 and sorted(set(fraction.values.round(6))) == [0, 0.333333, 0.666667, 1]
    verbagg = external("verbagg")
    wide = pd.read_csv(folder / "verbagg_r2_wide.csv", index_col="id")
    np.testing.assert_array_equal(verbagg.to_matrix(), wide.to_numpy(dtype=float))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the upstream files are not at {SHARED}")
def test_upstream_folders_load_as_data_set_folders(mmlu: ResponseData) -> None:
    assert is_dataset_folder(SHARED / "mmlu_pro_tiger")
    upstream = load_folder(SHARED / "mmlu_pro_tiger")
    assert upstream.checksum() == mmlu.checksum()
    with pytest.raises(DataError, match=r"holds several data sets \(lsat6, lsat7\)"):
        load_folder(SHARED / "classic_irt")
    lsat7 = load_folder(SHARED / "classic_irt", dataset="lsat7")
    assert lsat7.checksum() == load_dataset("lsat7").checksum()


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the upstream files are not at {SHARED}")
def test_embedded_files_are_the_upstream_extracts() -> None:
    for name in ("mmlu_pro_responses.csv", "mmlu_pro_items.csv", "mmlu_pro_models.csv"):
        assert (REPO_DATA / "mmlu_pro" / name).read_bytes() == (SHARED / "mmlu_pro_tiger" / name).read_bytes(), name
    for name in ("lsat6", "lsat7"):
        file = f"{name}_patterns.csv"
        assert (REPO_DATA / name / file).read_bytes() == (SHARED / "classic_irt" / file).read_bytes(), file


def test_lsat_fixture_rows_are_the_embedded_patterns() -> None:
    for name in ("lsat6", "lsat7"):
        rows = pd.read_csv(REPO / "tests" / "fixtures" / f"{name}_responses.csv")
        got = sorted("".join(map(str, r)) for r in rows.to_numpy())
        assert got == sorted(load_dataset(name).subjects["pattern"]), name


# ---------------------------------------------------------------------------------------------------- bad input


def test_unknown_data_set_lists_the_known_names() -> None:
    with pytest.raises(DataError, match=r"unknown data set 'mmlu'; known data sets: lsat6, lsat7, mmlu_pro, chembench"):
        load_dataset("mmlu")


def test_external_set_without_a_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(
        DataError,
        match=rf"{DATA_DIR_ENV} is not set: convert the upstream files \(github.com/nyu-mll/nlu-test-sets.*"
        r"convert_data.py UPSTREAM_DIR OUT_DIR --only nlu_vania2021`, where UPSTREAM_DIR holds 'nlu_test_sets_vania2021/'",
    ):
        load_dataset("nlu_vania2021")
    with pytest.raises(DataError, match=re.escape(f"{tmp_path / 'xstest'}: no such folder with a dataset.json")):
        load_dataset("xstest", root=tmp_path)
    with pytest.raises(DataError, match=rf"data set 'xstest' is not shipped with irtbayes and {DATA_DIR_ENV}"):
        load_folder(REPO_DATA / "xstest")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert not list_datasets().loc["xstest", "available"]


def test_unknown_option_names_the_accepted_ones() -> None:
    with pytest.raises(
        DataError, match=r"unknown option\(s\) \['judge'\]; accepted options: benchmarks, min_benchmarks .*convert_data"
    ):
        load_dataset("lsat7", judge="artifact")


def copy_folder(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(REPO_DATA / name, target)
    return target


def edit_manifest(folder: Path, **changes: object) -> None:
    path = folder / "dataset.json"
    manifest = json.loads(path.read_text())
    for key, value in changes.items():
        node = manifest
        *parents, last = key.split("__")
        for part in parents:
            node = node[part]
        node[last] = value
    path.write_text(json.dumps(manifest))


def test_manifest_naming_a_missing_file(tmp_path: Path) -> None:
    folder = copy_folder("lsat7", tmp_path)
    edit_manifest(folder, files__patterns="nope.csv")
    with pytest.raises(DataError, match=r"files.patterns names 'nope.csv', but .*nope.csv does not exist"):
        load_folder(folder)
    folder = tmp_path / "mmlu"
    folder.mkdir()
    shutil.copy(REPO_DATA / "mmlu_pro" / "dataset.json", folder)
    shutil.copy(REPO_DATA / "mmlu_pro" / "mmlu_pro_models.csv", folder)
    with pytest.raises(DataError, match=r"files.responses names 'mmlu_pro_responses.csv'"):
        load_folder(folder)


def test_a_copied_manifest_folder_loads_like_the_original(tmp_path: Path) -> None:
    folder = copy_folder("lsat6", tmp_path)
    assert is_dataset_folder(folder)
    assert load_folder(folder).checksum() == load_dataset("lsat6").checksum()


def test_malformed_manifests_and_files(tmp_path: Path) -> None:
    folder = copy_folder("lsat7", tmp_path)
    (folder / "dataset.json").write_text("{not json")
    with pytest.raises(DataError, match=r"dataset.json: not valid JSON"):
        load_folder(folder)
    folder = copy_folder("lsat6", tmp_path)
    edit_manifest(folder, format="tall")
    with pytest.raises(DataError, match="format 'tall' is not one irtbayes knows"):
        load_folder(folder)
    folder = copy_folder("lsat7", tmp_path / "two")
    patterns = pd.read_csv(folder / "lsat7_patterns.csv")
    patterns.loc[3, "Item.2"] = 2
    patterns.to_csv(folder / "lsat7_patterns.csv", index=False)
    with pytest.raises(DataError, match=r"lsat7_patterns.csv: row 'line 5', column 'Item.2' holds 2; expected 0 or 1"):
        load_folder(folder)
    edit_manifest(folder, patterns__frequency_column="count")
    with pytest.raises(DataError, match=r"missing column\(s\) \['count'\]"):
        load_folder(folder)


def test_is_dataset_folder_rejects_files_and_plain_folders(tmp_path: Path) -> None:
    assert not is_dataset_folder(tmp_path)
    assert not is_dataset_folder(REPO_DATA / "mmlu_pro" / "dataset.json")
    with pytest.raises(DataError, match=r"no dataset\.json and not laid out like any embedded data set"):
        load_folder(tmp_path)
