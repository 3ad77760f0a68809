"""Ordinal (graded) responses on the data side: categories kept as codes 0..K-1, on real files.

Science (mirt's attitude items, ordinal 1-4) and a slice of XSTest's human labels (compliance, partial refusal,
full refusal) are in tests/fixtures (see its README for their origin).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.columns import frame_checksum
from irtbayes.data.io.helm import load_helm
from irtbayes.data.io.leaderboard import load_leaderboard
from irtbayes.data.io.lm_eval import load_lm_eval
from irtbayes.data.io.pyirt import load_pyirt
from irtbayes.data.io.tabular import load_long, load_wide
from irtbayes.data.registry import load_folder
from irtbayes.data.responses import ResponseData

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCIENCE = FIXTURES / "science_mirt.csv"
XSTEST = FIXTURES / "xstest_labels_slice.csv"
LSAT7 = FIXTURES / "lsat7_responses.csv"
#: XSTest's labels in their ordinal order: compliance < partial refusal < full refusal.
XSTEST_ORDER = ["1_full_compliance", "3_partial_refusal", "2_full_refusal"]


@pytest.fixture(scope="module")
def science_raw() -> pd.DataFrame:
    return pd.read_csv(SCIENCE)


@pytest.fixture(scope="module")
def science() -> ResponseData:
    return load_wide(SCIENCE, scoring="ordinal")


def _write(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_csv(path, index=False)
    return path


# ---------------------------------------------------------------------------------------------- Science, wide


def test_science_reads_as_four_categories_coded_from_zero(science: ResponseData, science_raw: pd.DataFrame) -> None:
    assert (science.n_subjects, science.n_items) == (392, 4)
    assert science.response_kind == "ordinal" and not science.is_binary
    assert science.n_categories.dtype == np.int64 and science.n_categories.tolist() == [4, 4, 4, 4]
    assert science.items["n_categories"].dtype == "Int64"
    assert science.items["categories"].tolist() == ["1 | 2 | 3 | 4"] * 4
    assert sorted(np.unique(science.values)) == [0.0, 1.0, 2.0, 3.0]
    assert "ordinal categories inferred from the data: 1, 2, 3, 4 -> codes 0-3" in science.notes
    assert any("numbered by their row" in note for note in science.notes)  # a bare matrix, as mirt ships it
    # every cell is its raw value minus one, in file order
    np.testing.assert_array_equal(science.to_matrix(), science_raw.to_numpy(dtype=float) - 1)


def test_science_counts_per_category_of_comfort_match_the_file(
    science: ResponseData, science_raw: pd.DataFrame
) -> None:
    column = list(science.item_ids).index("Comfort")
    codes = science.to_matrix()[:, column]
    counts = np.bincount(codes.astype(int), minlength=4)
    raw = science_raw["Comfort"].value_counts().reindex([1, 2, 3, 4], fill_value=0).to_numpy()
    assert counts.tolist() == raw.tolist() == [5, 32, 266, 89]


def test_declared_categories_in_another_order_map_by_position(science_raw: pd.DataFrame) -> None:
    reversed_ = load_wide(SCIENCE, scoring="ordinal", categories=[4, 3, 2, 1])
    np.testing.assert_array_equal(reversed_.to_matrix(), 4 - science_raw.to_numpy(dtype=float))
    assert reversed_.items["categories"].iloc[0] == "4 | 3 | 2 | 1"
    assert not any("inferred" in note for note in reversed_.notes)
    as_text = load_wide(SCIENCE, scoring="ordinal", categories=["4", "3", "2", "1"])  # as the command line gives them
    np.testing.assert_array_equal(as_text.to_matrix(), reversed_.to_matrix())


def test_a_gap_in_inferred_categories_names_the_missing_value(tmp_path: Path, science_raw: pd.DataFrame) -> None:
    path = _write(science_raw.replace(3, 4), tmp_path / "no_threes.csv")
    with pytest.raises(DataError, match=r"no_threes\.csv: the matrix holds the integers 1, 2, 4 but never 3;") as err:
        load_wide(path, scoring="ordinal")
    assert "declare the categories" in str(err.value)
    declared = load_wide(path, scoring="ordinal", categories=[1, 2, 3, 4])  # 3 kept as an unused category
    assert declared.n_categories.tolist() == [4, 4, 4, 4]
    assert 2.0 not in declared.values and 3.0 in declared.values


def test_an_undeclared_category_names_file_line_column_and_the_categories(science_raw: pd.DataFrame) -> None:
    first_four = int(np.flatnonzero(science_raw["Comfort"].to_numpy() == 4)[0])
    with pytest.raises(DataError) as err:
        load_wide(SCIENCE, scoring="ordinal", categories=[1, 2, 3])
    assert str(err.value) == (
        f"{SCIENCE}: column 'Comfort' at line {first_four + 2} holds 4, which is not one of the declared "
        "categories 1, 2, 3 (item column 1)"
    )


def test_a_fractional_cell_is_not_an_integer_category(tmp_path: Path, science_raw: pd.DataFrame) -> None:
    frame = science_raw.astype(float)
    frame.loc[5, "Future"] = 2.5
    path = _write(frame, tmp_path / "half.csv")
    with pytest.raises(
        DataError, match=r"column 'Future' at line 7 holds 2\.5, which is not an integer category.*bins"
    ):
        load_wide(path, scoring="ordinal")


def test_bins_cut_scores_into_categories_with_edges_going_up(science_raw: pd.DataFrame) -> None:
    data = load_wide(SCIENCE, scoring="ordinal", bins=[2, 4])  # 1 -> 0; 2, 3 -> 1; 4 -> 2
    assert data.n_categories.tolist() == [3, 3, 3, 3]
    assert data.items["categories"].iloc[0] == "<2 | 2-4 | >=4"
    comfort = data.to_matrix()[:, list(data.item_ids).index("Comfort")]
    assert np.bincount(comfort.astype(int)).tolist() == [5, 32 + 266, 89]
    assert "numeric scores binned at 2, 4 into ordinal categories <2, 2-4, >=4 (codes 0-2)" in data.notes


def test_bins_on_fractional_scores_in_a_long_table() -> None:
    scores = [0.2, 0.5, 0.79, 0.8, 1.0, None]
    frame = pd.DataFrame({"subject": list("abcdef"), "item": "f1", "response": scores})
    data = ResponseData.from_long(frame, scoring="ordinal", bins=[0.5, 0.8])
    assert data.values.tolist() == [0.0, 1.0, 1.0, 2.0, 2.0]  # the empty cell is missing
    assert data.items.loc["f1", "categories"] == "<0.5 | 0.5-0.8 | >=0.8"
    named = ResponseData.from_long(frame, scoring="ordinal", bins=[0.5, 0.8], categories=["low", "mid", "high"])
    assert named.items.loc["f1", "categories"] == "low | mid | high"
    with pytest.raises(DataError, match="bins must be increasing numbers"):
        ResponseData.from_long(frame, scoring="ordinal", bins=[0.8, 0.5])
    with pytest.raises(DataError, match="2 bin edge"):
        ResponseData.from_long(frame, scoring="ordinal", bins=[0.5, 0.8], categories=["low", "high"])


def test_categories_and_bins_need_ordinal_scoring() -> None:
    frame = pd.DataFrame({"subject": ["a", "b"], "item": "q", "response": [1, 0]})
    with pytest.raises(DataError, match=r"categories given with scoring='auto'.*scoring='ordinal'"):
        ResponseData.from_long(frame, categories=[0, 1])
    with pytest.raises(DataError, match="bins given with scoring='binary'"):
        ResponseData.from_long(frame, scoring="binary", bins=[0.5])
    with pytest.raises(DataError, match="scoring must be one of"):
        ResponseData.from_long(frame, scoring="graded")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- XSTest, long


def test_xstest_labels_in_their_declared_order() -> None:
    raw = pd.read_csv(XSTEST)
    data = load_long(
        XSTEST, subject="model", item="id", response="final_label", scoring="ordinal", categories=XSTEST_ORDER
    )
    assert (data.n_subjects, data.n_items, data.n_responses) == (5, 40, 200)
    assert data.response_kind == "ordinal" and data.n_categories.tolist() == [3] * 40
    assert data.items["categories"].iloc[0] == "1_full_compliance | 3_partial_refusal | 2_full_refusal"
    codes = pd.Series(
        data.values,
        index=pd.MultiIndex.from_arrays([data.responses["subject"].astype(str), data.responses["item"].astype(str)]),
    )
    expected = raw.set_index(["model", "id"])["final_label"].map({label: k for k, label in enumerate(XSTEST_ORDER)})
    pd.testing.assert_series_equal(codes.sort_index(), expected.astype(float).sort_index(), check_names=False)
    assert np.bincount(data.values.astype(int)).tolist() == [
        int((raw["final_label"] == label).sum()) for label in XSTEST_ORDER
    ]


def test_xstest_label_left_out_of_the_categories_names_file_line_and_labels() -> None:
    raw = pd.read_csv(XSTEST)
    first_partial = int(np.flatnonzero(raw["final_label"].to_numpy() == "3_partial_refusal")[0])
    with pytest.raises(DataError) as err:
        load_long(
            XSTEST, subject="model", item="id", response="final_label", scoring="ordinal",
            categories=["1_full_compliance", "2_full_refusal"],
        )  # fmt: skip
    assert str(err.value) == (
        f"{XSTEST}: column 'final_label' at line {first_partial + 2} holds '3_partial_refusal', which is not one of "
        "the declared categories 1_full_compliance, 2_full_refusal"
    )
    with pytest.raises(DataError, match=r"line 2 holds '1_full_compliance', which is not an integer category"):
        load_long(XSTEST, subject="model", item="id", response="final_label", scoring="ordinal")


def test_xstest_items_all_in_one_category_are_uninformative() -> None:
    raw = pd.read_csv(XSTEST)
    data = load_long(
        XSTEST, subject="model", item="id", response="final_label", scoring="ordinal", categories=XSTEST_ORDER
    )
    table = data.uninformative_items()
    labels = raw.groupby("id")["final_label"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else None).dropna()
    assert set(table.index) == set(labels.index)
    kinds = {"1_full_compliance": "all_lowest", "2_full_refusal": "all_highest", "3_partial_refusal": "one_category"}
    assert table["kind"].to_dict() == {item: kinds[label] for item, label in labels.items()}
    assert (table["n_responses"] == 5).all()


# ---------------------------------------------------------------------------------------------- item metadata


def test_an_item_keeps_its_own_n_categories_from_the_item_metadata(tmp_path: Path) -> None:
    items = _write(
        pd.DataFrame({"item": ["Comfort", "Work", "Future", "Benefit"], "n_categories": [5, None, None, None]}),
        tmp_path / "items.csv",
    )
    data = load_wide(SCIENCE, scoring="ordinal", items=items)
    assert data.n_categories.tolist() == [5, 4, 4, 4]
    assert pd.isna(data.items.loc["Comfort", "categories"])  # more categories than the shared labels name
    too_few = _write(
        pd.DataFrame({"item": ["Comfort", "Work", "Future", "Benefit"], "n_categories": [3, 4, 4, 4]}),
        tmp_path / "few.csv",
    )
    with pytest.raises(
        DataError,
        match=r"answers item 'Comfort' in category '4' \(code 3\), but the item metadata gives the item n_categories 3",
    ):
        load_wide(SCIENCE, scoring="ordinal", items=too_few)
    with pytest.raises(DataError, match=r"item 'Comfort' has n_categories 4 in the item metadata.*scoring='ordinal'"):
        ResponseData.from_long(
            pd.DataFrame({"subject": ["a", "b"], "item": "Comfort", "response": [1, 0]}),
            items=pd.DataFrame({"item": ["Comfort"], "n_categories": [4]}),
        )


# ---------------------------------------------------------------------------------------------- combine, subset, checksum, summary


def test_combine_ordinal_with_binary_keeps_n_categories(science: ResponseData) -> None:
    lsat7 = load_wide(LSAT7, scoring="binary")
    bank = ResponseData.combine([science, lsat7])
    assert bank.response_kind == "ordinal" and not bank.is_binary
    assert bank.n_categories.tolist() == [4, 4, 4, 4, 2, 2, 2, 2, 2]
    assert bank.items["categories"].tolist() == ["1 | 2 | 3 | 4"] * 4 + ["0 | 1"] * 5
    np.testing.assert_array_equal(bank.to_matrix()[:392, :4], science.to_matrix())  # the shared subject ids '1'..'392'
    lsat_codes = bank.subset(items=list(lsat7.item_ids)).to_matrix()
    np.testing.assert_array_equal(lsat_codes, lsat7.to_matrix())
    assert "ordinal categories inferred from the data: 1, 2, 3, 4 -> codes 0-3" in bank.notes
    assert bank.summary().kind_text == "ordinal (2-4 categories)"


def test_combine_refuses_fractional_scores_with_ordinal_categories(science: ResponseData) -> None:
    fractional = ResponseData.from_long(pd.DataFrame({"subject": ["1", "2"], "item": "f1", "response": [0.5, 1.0]}))
    with pytest.raises(DataError, match=r"combine: <data frame> holds fractional scores and .* ordinal categories"):
        ResponseData.combine([science, fractional])


def test_subset_keeps_the_category_columns_and_notes(science: ResponseData) -> None:
    part = science.subset(items=["Work", "Benefit"], subjects=[str(i) for i in range(1, 51)])
    assert part.n_categories.tolist() == [4, 4]
    assert part.items["categories"].tolist() == ["1 | 2 | 3 | 4"] * 2
    assert part.notes == science.notes and part.response_kind == "ordinal"


def test_n_categories_changes_the_checksum(tmp_path: Path, science: ResponseData) -> None:
    five = load_wide(SCIENCE, scoring="ordinal", categories=[1, 2, 3, 4, 5])  # the same codes, one unused category
    np.testing.assert_array_equal(five.values, science.values)
    assert five.checksum() != science.checksum()
    # binary data have no n_categories column, so their checksum is the one saved fits recorded before
    lsat7 = load_wide(LSAT7, scoring="binary")
    assert "n_categories" not in lsat7.items.columns
    frame = lsat7.long_frame().sort_values(["subject", "item"], kind="stable").reset_index(drop=True)
    assert lsat7.checksum() == frame_checksum(frame, lsat7.items[["benchmark", "domain"]].astype(str))


def test_summary_says_ordinal_with_the_number_of_categories(science: ResponseData, science_raw: pd.DataFrame) -> None:
    summary = science.summary()
    assert (summary.response_kind, summary.n_categories, summary.binary) == ("ordinal", (4, 4), False)
    text = summary.to_text()
    assert "392 subjects x 4 items, 1568 responses (0.0% of cells missing; ordinal (4 categories))" in text
    payload = summary.to_dict()
    assert payload["response_kind"] == "ordinal" and payload["n_categories"] == [4, 4]
    # accuracy is the mean category scaled to [0, 1]
    scaled = (science_raw.to_numpy(dtype=float) - 1) / 3
    assert summary.benchmarks["accuracy"].iloc[0] == pytest.approx(scaled.mean())
    assert science.to_dataset()["n_categories"].values.tolist() == [4, 4, 4, 4]


# ---------------------------------------------------------------------------------------------- other loaders


def test_load_passes_the_ordinal_options_on(tmp_path: Path) -> None:
    data = io.load(SCIENCE, scoring="ordinal", categories=[1, 2, 3, 4])
    assert data.response_kind == "ordinal" and data.n_items == 4
    raw = pd.read_csv(XSTEST).rename(columns={"model": "subject", "id": "item", "final_label": "response"})
    xstest = io.load(_write(raw, tmp_path / "xstest.csv"), scoring="ordinal", categories=XSTEST_ORDER)  # long
    assert xstest.response_kind == "ordinal" and xstest.n_categories.tolist() == [3] * 40


def test_lm_eval_scores_read_as_categories(tmp_path: Path) -> None:
    folder = FIXTURES / "lm_eval" / "lm_eval_dummy"
    options = {"filter": {"fx_gen": "strict-match"}, "tasks": ["fx_mc"]}
    plain = load_lm_eval(folder, **options)
    flipped = load_lm_eval(folder, scoring="ordinal", categories=[1, 0], **options)
    np.testing.assert_array_equal(flipped.to_matrix(), 1 - plain.to_matrix())
    assert flipped.items["categories"].iloc[0] == "1 | 0"
    copy = tmp_path / "lm_eval"
    shutil.copytree(folder, copy)
    samples = next((copy / "fixture-org__dummy-a").glob("samples_fx_mc_*.jsonl"))
    lines = samples.read_text().splitlines()
    line = json.loads(lines[2])
    line["acc"] = 0.75
    lines[2] = json.dumps(line)
    samples.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        DataError, match=rf"{samples.name}: line 3 key 'acc' holds 0\.75, which is not an integer category"
    ):
        load_lm_eval(copy, scoring="ordinal", **options)
    binned = load_lm_eval(copy, scoring="ordinal", bins=[0.5, 0.9], **options)
    row = list(binned.subject_ids).index("fixture-org/dummy-a")
    column = list(binned.item_ids).index(
        next(i for i in binned.item_ids if binned.items.loc[i, "doc_id"] == str(line["doc_id"]))
    )
    assert binned.to_matrix()[row, column] == 1.0 and binned.items["categories"].iloc[0] == "<0.5 | 0.5-0.9 | >=0.9"


def test_helm_numeric_stat_binned_into_categories() -> None:
    root = FIXTURES / "helm" / "benchmark_output"
    data = load_helm(root, metric="inference_runtime", scoring="ordinal", bins=[0.03, 0.05])
    expected = {}
    for path in root.glob("runs/*/*/per_instance_stats.json"):
        spec = json.loads((path.parent / "run_spec.json").read_text())
        model, scenario = spec["adapter_spec"]["model"], spec["name"].split(":")[0]
        for entry in json.loads(path.read_text()):
            for stat in entry["stats"]:
                if stat["name"]["name"] == "inference_runtime" and stat["name"].get("split") == "test":
                    code = np.searchsorted([0.03, 0.05], stat["mean"], side="right")
                    expected[model, f"{scenario}/{entry['instance_id']}"] = float(code)
    got = {(s, i): v for s, i, v in data.long_frame()[["subject", "item", "response"]].itertuples(index=False)}
    assert got == expected and len(got) == data.n_responses == 60
    assert set(got.values()) == {0.0, 1.0, 2.0}
    with pytest.raises(DataError, match=r"stat 'inference_runtime' has mean 0\.0\d+, which is not an integer category"):
        load_helm(root, metric="inference_runtime", scoring="ordinal")


def test_pyirt_ordinal_and_leaderboard_refuses(tmp_path: Path) -> None:
    path = tmp_path / "ratings.jsonl"
    path.write_text(
        '{"subject_id": "m1", "responses": {"q1": 1, "q2": 3}}\n{"subject_id": "m2", "responses": {"q1": 2}}\n'
    )
    data = load_pyirt(path, scoring="ordinal")
    np.testing.assert_array_equal(data.to_matrix(), [[0.0, 2.0], [1.0, np.nan]])
    assert data.n_categories.tolist() == [3, 3]
    with pytest.raises(
        DataError,
        match=r"ratings\.jsonl line 1: subject 'm1', item 'q2' holds 3, which is not one of the declared categories 1, 2",
    ):
        load_pyirt(path, scoring="ordinal", categories=[1, 2])
    with pytest.raises(DataError, match="Open LLM Leaderboard details log 0/1 accuracies"):
        load_leaderboard(FIXTURES / "leaderboard", scoring="ordinal")


def test_registry_manifest_declares_ordinal_categories(tmp_path: Path, science_raw: pd.DataFrame) -> None:
    folder = tmp_path / "science_graded"
    folder.mkdir()
    science_raw.rename_axis("subject").reset_index().assign(subject=lambda f: f["subject"] + 1).to_csv(
        folder / "responses.csv", index=False
    )
    manifest = {
        "name": "science_graded",
        "format": "wide",
        "files": {"responses": "responses.csv"},
        "responses": {"subject_column": "subject"},
        "items": {"benchmark": "science", "domain": "attitude", "id_prefix": "science/"},
        "response_kind": "ordinal",
        "categories": [1, 2, 3, 4],
    }
    (folder / "dataset.json").write_text(json.dumps(manifest))
    data = load_folder(folder)
    assert data.response_kind == "ordinal" and data.n_categories.tolist() == [4, 4, 4, 4]
    assert data.items["categories"].iloc[0] == "1 | 2 | 3 | 4"
    np.testing.assert_array_equal(data.to_matrix(), science_raw.to_numpy(dtype=float) - 1)
    (folder / "dataset.json").write_text(json.dumps({**manifest, "categories": [1, 2, 3]}))
    with pytest.raises(
        DataError, match=r"responses\.csv: row '\d+', column 'Comfort' holds 4, which is not one of the categories"
    ):
        load_folder(folder)
    inferred = {k: v for k, v in manifest.items() if k != "categories"}
    (folder / "dataset.json").write_text(json.dumps(inferred))
    assert load_folder(folder).notes == ("ordinal categories inferred from the data: 1, 2, 3, 4 -> codes 0-3",)
    (folder / "dataset.json").write_text(json.dumps({**manifest, "response_kind": "binary"}))
    with pytest.raises(DataError, match="'categories' describes ordinal responses"):
        load_folder(folder)
