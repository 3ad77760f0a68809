"""Long and wide CSV/Parquet loaders, on real files from tests/fixtures and data/."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data.io import load
from irtbayes.data.io.tabular import load_long, load_wide, read_columns

TESTS = Path(__file__).resolve().parents[1]


def test_long_csv_with_column_mapping_on_verbagg(tmp_path: Path) -> None:
    path = TESTS / "fixtures" / "verbagg_long.csv"
    raw = pd.read_csv(path)
    raw_binary = raw.assign(r2=(raw["r2"] == "Y").astype(int))
    tmp = raw_binary[["id", "item", "r2", "btype"]]
    tmp.to_csv(tmp_path / "verbagg.csv", index=False)
    data = load_long(tmp_path / "verbagg.csv", subject="id", item="item", response="r2")
    assert data.n_subjects == raw["id"].nunique() == 316
    assert data.n_items == raw["item"].nunique() == 24
    assert data.n_responses == len(raw)
    expected = raw_binary.groupby("item")["r2"].mean()
    got = pd.Series(np.nanmean(data.to_matrix(), axis=0), index=data.item_ids)
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)


def test_wide_csv_rows_subjects_on_mmlu_pro() -> None:
    path = TESTS.parent / "data" / "mmlu_pro" / "mmlu_pro_responses.csv"
    data = load_wide(path, scoring="binary")
    assert (data.n_subjects, data.n_items) == (29, 12032)
    assert data.values.mean() == pytest.approx(0.4024, abs=1e-4)
    raw = pd.read_csv(path, index_col="model")
    assert data.to_matrix()[list(data.subject_ids).index("Llama-2-7b-hf"), 0] == raw.loc["Llama-2-7b-hf"].iloc[0]


def test_long_parquet_and_csv_agree(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {"sys": ["a", "a", "b", "b"], "q": [1, 2, 1, 2], "score": [1.0, 0.0, 0.25, 1.0], "benchmark": ["X"] * 4}
    )
    frame.to_csv(tmp_path / "r.csv", index=False)
    frame.to_parquet(tmp_path / "r.parquet")
    a = load_long(tmp_path / "r.csv", subject="sys", item="q", response="score")
    b = load_long(tmp_path / "r.parquet", subject="sys", item="q", response="score")
    np.testing.assert_array_equal(a.to_matrix(), b.to_matrix())
    assert list(a.item_ids) == ["1", "2"]
    assert a.values[2] == 0.25


def test_dictionary_encoded_ids_read_as_plain_ones(tmp_path: Path) -> None:
    """Parquet's dictionary-encoded id columns (read as categoricals, cleaned once per category) give the data that
    plain string columns give: ids stripped, numeric ids without ".0", unused dictionary entries dropped, item
    metadata per item; a blank id and a repeated (subject, item) are errors naming the row."""
    plain = pd.DataFrame(
        {
            "subject": ["m1", " m2", "m1", " m2", "m3"],
            "item": [1.0, 1.0, 2.0, 2.0, 2.0],
            "benchmark": ["A", "A", "B", "B", "B"],
            "response": [1, 0, 1, 1, 0],
        }
    )
    coded = plain.astype({"subject": "category", "item": "category", "benchmark": "category"})
    coded["subject"] = coded["subject"].cat.add_categories(["never"])  # a dictionary entry no row uses
    plain.to_parquet(tmp_path / "plain.parquet")
    coded.to_parquet(tmp_path / "coded.parquet")
    a, b = load(tmp_path / "plain.parquet"), load(tmp_path / "coded.parquet")
    assert list(b.subject_ids) == list(a.subject_ids) == ["m1", "m2", "m3"]
    assert list(b.item_ids) == list(a.item_ids) == ["1", "2"]
    assert b.items["benchmark"].tolist() == a.items["benchmark"].tolist() == ["A", "B"]
    np.testing.assert_array_equal(a.to_matrix(), b.to_matrix())
    assert a.checksum() == b.checksum()
    blank = coded.assign(subject=coded["subject"].cat.rename_categories({"m3": "  "}))
    blank.to_parquet(tmp_path / "blank.parquet")
    with pytest.raises(DataError, match="column 'subject' is blank at row 4"):
        load(tmp_path / "blank.parquet")
    twice = pd.concat([coded, coded.iloc[[0]]], ignore_index=True)
    twice.to_parquet(tmp_path / "twice.parquet")
    with pytest.raises(DataError, match="subject 'm1' and item '1' appear 2 times"):
        load(tmp_path / "twice.parquet")


def test_wide_rows_items_with_blank_cells_missing(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("item,sysA,sysB\nq1,1,\nq2,0,1\n")
    data = load_wide(tmp_path / "m.csv", rows="items")
    assert list(data.item_ids) == ["q1", "q2"]
    assert list(data.subject_ids) == ["sysA", "sysB"]
    assert data.n_responses == 3
    assert np.isnan(data.to_matrix()[1, 0])


def test_item_metadata_file_is_joined(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("subject,q1,q2\nA,1,0\nB,1,1\n")
    (tmp_path / "items.csv").write_text("question,benchmark,domain,text\nq1,arith,math,<b>1+1</b>\nq2,logic,math,x\n")
    data = load_wide(tmp_path / "m.csv", items=tmp_path / "items.csv", item_id="question")
    assert data.items.loc["q1", "text"] == "<b>1+1</b>"
    assert list(data.benchmarks) == ["arith", "logic"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "the file is empty"),
        ("subject,item,response\n", "header but no rows"),
        ("subject,item,response\na,q1,1\na,q1,0\n", "appear 2 times (line 2, line 3) with different values"),
        ("subject,item,response\na,q1,1\nb,q1,maybe\n", "line 3 holds 'maybe'"),
        ("subject,item,response\na,q1,1\nb,q1,3\n", "line 3 holds 3, outside [0, 1]"),
        ("subject,item,response\na,q1,1\nb,q1,3\n", "read with --response-kind ordinal"),
    ],
)
def test_bad_long_files_name_file_and_line(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(DataError) as err:
        load(path)
    assert str(path) in str(err.value)
    assert needle in str(err.value), str(err.value)


def test_unknown_columns_and_missing_files(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("who,item,response\na,q1,1\n")
    with pytest.raises(
        DataError, match=r"missing column\(s\) \['subject'\]; the columns are \['who', 'item', 'response'\]"
    ):
        load_long(tmp_path / "r.csv")
    with pytest.raises(DataError, match="no such file"):
        load(tmp_path / "nope.csv")
    (tmp_path / "r.json").write_text("{}")
    with pytest.raises(DataError, match="unknown file type"):
        load(tmp_path / "r.json")


def test_read_columns_reads_only_the_header_and_still_names_bad_files(tmp_path: Path) -> None:
    frame = pd.DataFrame({"subject": ["a"], "item": ["q"], "response": [1]})
    frame.to_csv(tmp_path / "r.csv", index=False)
    frame.to_parquet(tmp_path / "r.parquet")
    assert read_columns(tmp_path / "r.csv") == read_columns(tmp_path / "r.parquet") == ["subject", "item", "response"]
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match=r"empty\.csv: the file is empty"):
        read_columns(tmp_path / "empty.csv")


def test_a_bare_matrix_without_ids_is_numbered_by_row_as_mirt_reads_lsat7() -> None:
    path = TESTS / "fixtures" / "lsat7_responses.csv"
    raw = pd.read_csv(path)
    data = load(path)
    assert data.n_subjects == len(raw) == 1000 and list(data.item_ids) == list(raw.columns)
    assert list(data.subject_ids[:3]) == ["1", "2", "3"]
    np.testing.assert_array_equal(data.to_matrix(), raw.to_numpy(dtype=float))
    summary = data.summary()
    assert "numbered by their row, 1 to 1000" in summary.to_text()
    assert summary.to_dict()["notes"] == list(data.notes)


def test_a_first_column_of_unique_ids_is_still_the_ids(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("id,i1,i2\n0,0,1\n1,1,1\n")  # ids 0 and 1 look like responses but do not repeat
    data = load_wide(path)
    assert list(data.subject_ids) == ["0", "1"] and list(data.item_ids) == ["i1", "i2"] and data.notes == ()


def test_a_long_table_with_other_column_names_is_named_with_the_flags(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_text("subject,question,score\nA,q1,1\nA,q2,0\nB,q1,1\n")
    with pytest.raises(DataError) as err:
        load(path)
    message = str(err.value)
    assert str(path) in message and "subject 'A' has more than one row" in message
    assert "['subject', 'question', 'score']" in message and "--item-col" in message and "--response-col" in message
    data = load_long(path, subject="subject", item="question", response="score")
    assert data.n_responses == 3
