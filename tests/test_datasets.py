"""The data set registry: embedded data (always present) and external data read from the shared data folder."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes import DataError
from irtbayes.data import ResponseData
from irtbayes.datasets import (
    DATA_DIR_ENV,
    DEFAULT_DATA_ENV,
    default_data_path,
    is_dataset_folder,
    list_datasets,
    load_dataset,
    load_folder,
)

REPO_DATA = Path(__file__).resolve().parents[1] / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"the external data sets live in {SHARED}, which is absent on this machine"
)

EXTERNAL = [
    "openllm_tinybench",
    "nlu_vania2021",
    "chembench",
    "jailbreakbench",
    "xstest",
    "pyirt_sst3",
    "sat12",
    "science",
    "verbagg",
]


def matrix_frame(data: ResponseData) -> pd.DataFrame:
    return pd.DataFrame(data.to_matrix(), index=data.subject_ids, columns=data.item_ids)


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


def test_list_datasets_describes_every_entry() -> None:
    table = list_datasets()
    assert {"mmlu_pro", "lsat6", "lsat7", *EXTERNAL} <= set(table.index)
    assert table.loc[["mmlu_pro", "lsat6", "lsat7"], "storage"].eq("embedded").all()
    assert table.loc[EXTERNAL, "storage"].eq("external").all()
    assert table.loc[["mmlu_pro", "lsat6", "lsat7"], "available"].all()
    assert table["origin"].str.len().gt(10).all() and table["licence"].notna().all()
    domains = {d.strip() for cell in table["domains"] for d in cell.split(",")}
    assert len(domains) >= 7, sorted(domains)


# ---------------------------------------------------------------------------------------------------- external


@pytest.fixture(scope="module")
def nlu() -> ResponseData:
    if not SHARED.is_dir():
        pytest.skip(f"the external data sets live in {SHARED}, which is absent on this machine")
    return load_dataset("nlu_vania2021", root=SHARED)


@needs_shared
@pytest.mark.parametrize("name", [n for n in EXTERNAL if n != "nlu_vania2021"])
def test_external_sets_load_with_the_listed_shape_and_labels(name: str) -> None:
    data = load_dataset(name, root=SHARED)
    listed = list_datasets(root=SHARED).loc[name]
    assert listed["available"]
    assert (data.n_subjects, data.n_items) == (listed["n_subjects"], listed["n_items"])
    assert data.items["benchmark"].notna().all() and data.items["domain"].notna().all()
    assert set(data.domains) == {d.strip() for d in listed["domains"].split(",")}


@needs_shared
def test_data_dir_variable_finds_the_external_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(SHARED))
    data = load_dataset("chembench")
    assert (data.n_subjects, data.n_items) == (22, 2854)


def test_nlu_shape_labels_and_values(nlu: ResponseData) -> None:
    folder = SHARED / "nlu_test_sets_vania2021"
    assert (nlu.n_subjects, nlu.n_items) == (90, 82756)
    assert nlu.n_responses == 90 * 82756
    assert len(nlu.benchmarks) == 29
    assert set(nlu.domains) == {
        "nli",
        "commonsense",
        "reading_comprehension",
        "science",
        "coreference_wsd",
        "temporal",
        "argumentation",
    }
    labels = nlu.items.drop_duplicates("benchmark").set_index("benchmark")["domain"]
    assert labels["snli"] == "nli" and labels["boolq"] == "reading_comprehension" and labels["wsc"] == "coreference_wsd"
    for task, benchmark in [("cb", "cb"), ("mrqa-nq", "mrqa_nq")]:
        raw = pd.read_csv(folder / f"{task}_irt_all_coded.csv", index_col="userid")
        got = matrix_frame(nlu).loc[raw.index, raw.columns]
        np.testing.assert_array_equal(got.to_numpy(), raw.to_numpy(dtype=float), err_msg=task)
        assert (nlu.items.loc[raw.columns, "benchmark"] == benchmark).all()
    assert nlu.subjects.loc["roberta-base-10M-1_25", "train_fraction"] == "25"


@needs_shared
def test_tinybench_joins_all_five_benchmarks_keeping_partial_models() -> None:
    folder = SHARED / "openllm_tinybench_atlas"
    data = load_dataset("openllm_tinybench", root=SHARED)
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
    complete = load_dataset("openllm_tinybench", root=SHARED, min_benchmarks=5)
    assert complete.n_subjects == 1989 and complete.n_responses == 1989 * 493


@needs_shared
def test_chembench_transposes_items_by_models() -> None:
    folder = SHARED / "chembench_irt_on_bench"
    data = load_dataset("chembench", root=SHARED)
    scores = pd.read_csv(folder / "model_score_allcorrect.csv", index_col=0)["score"]
    got = pd.Series(np.nanmean(data.to_matrix(), axis=1), index=data.subject_ids)
    np.testing.assert_allclose(got[scores.index].to_numpy(), scores.to_numpy(), atol=1e-12)
    assert data.items["difficulty_label"].value_counts().to_dict() == {"intermediate": 1973, "easy": 859, "hard": 22}
    raw = pd.read_csv(folder / "binary_matrix.csv", index_col=0)
    assert matrix_frame(data).loc["GPT-4o", "chembench/1"] == raw.loc[1, "GPT-4o"]


@needs_shared
def test_jailbreakbench_scores_resisted_jailbreaks() -> None:
    folder = SHARED / "jailbreakbench_artifacts"
    data = load_dataset("jailbreakbench", root=SHARED)
    raw = pd.read_csv(folder / "jailbreakbench_matrix.csv", index_col="subject")
    got = matrix_frame(data).loc[raw.index, ["jailbreakbench/" + c for c in raw.columns]]
    np.testing.assert_array_equal(got.to_numpy(), 1 - raw.to_numpy(dtype=float))
    assert got.loc["PAIR|vicuna-13b-v1.5"].mean() == pytest.approx(1 - 0.69)
    long = pd.read_csv(folder / "jailbreakbench_long.csv")
    strict = load_dataset("jailbreakbench", root=SHARED, unsubmitted="missing")
    assert data.n_responses - strict.n_responses == int((~long["prompt_submitted"]).sum()) == 163
    guard = load_dataset("jailbreakbench", root=SHARED, judge="llama_guard")
    assert guard.n_subjects == 16, "DSN has no Llama Guard verdicts, so its two pairs drop out"
    assert data.subjects.loc["GCG|gpt-4-0125-preview", "attack_type"] == "transfer"


@needs_shared
def test_xstest_scores_the_desirable_behaviour() -> None:
    folder = SHARED / "xstest_completions"
    data = load_dataset("xstest", root=SHARED)
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
    strict = load_dataset("xstest", root=SHARED, partial=0.0)
    assert strict.is_binary and not data.is_binary
    split = load_dataset("xstest", root=SHARED, split=True)
    assert split.items["benchmark"].value_counts().to_dict() == {"xstest_safe": 250, "xstest_unsafe": 200}


@needs_shared
def test_pyirt_sst3_keeps_sentences_as_item_text() -> None:
    path = SHARED / "pyirt_sst3_fixture" / "minitest.amortized.jsonlines"
    data = load_dataset("pyirt_sst3", root=SHARED)
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    first = records[0]["responses"]
    assert data.items["text"].tolist() == list(first)
    means = np.nanmean(data.to_matrix(), axis=1).round(3).tolist()
    assert means == [0.772, 0.675, 0.597, 0.404, 0.404, 0.681, 0.644, 0.684], means
    assert "always-positive" in data.subject_ids


@needs_shared
def test_classic_sets_match_their_files() -> None:
    folder = SHARED / "classic_irt"
    sat12 = load_dataset("sat12", root=SHARED)
    scored = pd.read_csv(folder / "sat12_scored.csv")
    np.testing.assert_array_equal(sat12.to_matrix(), scored.to_numpy(dtype=float))
    omitted = load_dataset("sat12", root=SHARED, omitted="missing")
    assert sat12.n_responses - omitted.n_responses == 69
    science = load_dataset("science", root=SHARED)
    raw = pd.read_csv(folder / "science_mirt.csv")
    np.testing.assert_allclose(np.nanmean(science.to_matrix(), axis=0), (raw >= 3).mean().to_numpy())
    fraction = load_dataset("science", root=SHARED, threshold=None)
    assert fraction.values.max() == 1 and sorted(set(fraction.values.round(6))) == [0, 0.333333, 0.666667, 1]
    verbagg = load_dataset("verbagg", root=SHARED)
    wide = pd.read_csv(folder / "verbagg_r2_wide.csv", index_col="id")
    np.testing.assert_array_equal(verbagg.to_matrix(), wide.to_numpy(dtype=float))


@needs_shared
def test_upstream_folders_load_as_data_set_folders(mmlu: ResponseData) -> None:
    assert is_dataset_folder(SHARED / "mmlu_pro_tiger")
    upstream = load_folder(SHARED / "mmlu_pro_tiger")
    assert upstream.checksum() == mmlu.checksum()
    with pytest.raises(DataError, match=r"holds several data sets.*sat12"):
        load_folder(SHARED / "classic_irt")
    lsat7 = load_folder(SHARED / "classic_irt", dataset="lsat7")
    assert lsat7.checksum() == load_dataset("lsat7").checksum()


@needs_shared
def test_embedded_files_are_the_upstream_extracts() -> None:
    for name in ("mmlu_pro_responses.csv", "mmlu_pro_items.csv", "mmlu_pro_models.csv"):
        assert (REPO_DATA / "mmlu_pro" / name).read_bytes() == (SHARED / "mmlu_pro_tiger" / name).read_bytes(), name
    for name in ("lsat6", "lsat7"):
        file = f"{name}_patterns.csv"
        assert (REPO_DATA / name / file).read_bytes() == (SHARED / "classic_irt" / file).read_bytes(), file


# ---------------------------------------------------------------------------------------------------- bad input


def test_unknown_data_set_lists_the_known_names() -> None:
    with pytest.raises(DataError, match=r"unknown data set 'mmlu'.*mmlu_pro.*lsat7.*nlu_vania2021"):
        load_dataset("mmlu")


def test_external_set_without_a_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(DataError, match=rf"{DATA_DIR_ENV}.*github.com/nyu-mll/nlu-test-sets"):
        load_dataset("nlu_vania2021")
    with pytest.raises(
        DataError, match=re.escape(f"{tmp_path / 'xstest_completions'}: no such folder") + f".*{DATA_DIR_ENV}"
    ):
        load_dataset("xstest", root=tmp_path)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert not list_datasets().loc["xstest", "available"]


def test_unknown_option_names_the_accepted_ones() -> None:
    with pytest.raises(DataError, match=r"unknown option.*'judge'.*accepted options: none"):
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
    with pytest.raises(DataError, match="not laid out like any registered data set"):
        load_folder(tmp_path)
