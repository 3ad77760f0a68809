"""ResponseData: construction, validation, conversions, subsetting and the summary."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from irtbayes.core.errors import DataError
from irtbayes.data.responses import ResponseData


def small_long() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "subject": ["s1", "s1", "s1", "s2", "s2", "s3"],
            "item": ["i1", "i2", "i3", "i1", "i2", "i1"],
            "response": [1, 0, 1, 1, 1, 0.5],
            "benchmark": ["A", "A", "B", "A", "A", "A"],
            "domain": ["d", "d", "e", "d", "d", "d"],
        }
    )


def test_from_long_codes_follow_first_appearance_and_keep_fractions() -> None:
    data = ResponseData.from_long(small_long())
    assert list(data.subject_ids) == ["s1", "s2", "s3"]
    assert list(data.item_ids) == ["i1", "i2", "i3"]
    assert data.subject_codes.tolist() == [0, 0, 0, 1, 1, 2]
    assert data.item_codes.tolist() == [0, 1, 2, 0, 1, 0]
    assert data.values.tolist() == [1, 0, 1, 1, 1, 0.5]
    assert not data.is_binary
    assert data.items["benchmark"].tolist() == ["A", "A", "B"]
    assert list(data.benchmarks) == ["A", "B"]
    assert list(data.domains) == ["d", "e"]


def test_matrix_and_dataset_put_missing_cells_as_nan_with_real_coords() -> None:
    data = ResponseData.from_long(small_long())
    matrix = data.to_matrix()
    expected = np.array([[1, 0, 1], [1, 1, np.nan], [0.5, np.nan, np.nan]])
    np.testing.assert_array_equal(matrix, expected)
    ds = data.to_dataset()
    assert ds["response"].dims == ("subject", "item")
    assert ds["subject"].values.tolist() == ["s1", "s2", "s3"]
    assert ds["benchmark"].values.tolist() == ["A", "A", "B"]
    assert float(ds["response"].sel(subject="s2", item="i2")) == 1.0


@pytest.mark.parametrize(
    ("column", "value", "needle"),
    [
        ("response", "yes", "not a number"),
        ("response", 2, "outside [0, 1]"),
        ("response", -1, "outside [0, 1]"),
        ("subject", None, "column 'subject' is empty"),
        ("item", " ", "column 'item' is blank"),
    ],
)
def test_bad_cells_name_the_line(column: str, value: object, needle: str) -> None:
    frame = small_long().astype({column: object})
    frame.loc[3, column] = value
    with pytest.raises(DataError, match=r"results\.csv") as err:
        ResponseData.from_long(frame, source="results.csv", first_line=2)
    assert needle in str(err.value)
    assert "line 5" in str(err.value), str(err.value)


def test_binary_scoring_refuses_fractions() -> None:
    with pytest.raises(DataError, match=r"line 7 holds 0.5, but binary"):
        ResponseData.from_long(small_long(), scoring="binary", source="x.csv", first_line=2)


def test_duplicate_pairs_are_refused_whether_or_not_values_differ() -> None:
    frame = pd.concat([small_long(), small_long().iloc[[1]]], ignore_index=True)
    with pytest.raises(DataError, match=r"'s1' and item 'i2' appear 2 times .*the same value"):
        ResponseData.from_long(frame)
    frame.loc[6, "response"] = 1
    with pytest.raises(DataError, match=r"different values \[0\.0, 1\.0\]"):
        ResponseData.from_long(frame)


def test_condition_makes_repeated_pairs_legal_but_matrix_needs_a_choice() -> None:
    frame = pd.concat([small_long().assign(cond="plain"), small_long().assign(cond="shuffled")], ignore_index=True)
    data = ResponseData.from_long(frame, condition="cond")
    assert data.n_responses == 12
    assert list(data.conditions) == ["plain", "shuffled"]
    with pytest.raises(DataError, match="choose one of"):
        data.to_matrix()
    assert np.nansum(data.to_matrix(condition="plain")) == pytest.approx(4.5)
    assert data.subset(conditions="shuffled").n_responses == 6


def test_missing_columns_and_empty_tables() -> None:
    with pytest.raises(DataError, match=r"missing column\(s\) \['response'\]; the columns are"):
        ResponseData.from_long(small_long().drop(columns="response"))
    with pytest.raises(DataError, match="empty"):
        ResponseData.from_long(small_long().iloc[:0])
    with pytest.raises(DataError, match="expected a pandas DataFrame"):
        ResponseData.from_long([1, 2, 3])  # type: ignore[arg-type]


def test_item_metadata_must_cover_every_item_and_be_constant() -> None:
    items = pd.DataFrame({"item": ["i1", "i2"], "benchmark": ["A", "A"]})
    with pytest.raises(DataError, match=r"have responses but no metadata, e.g. \['i3'\]"):
        ResponseData.from_long(small_long().drop(columns=["benchmark", "domain"]), items=items)
    frame = small_long()
    frame.loc[3, "benchmark"] = "B"
    with pytest.raises(DataError, match="item 'i1' has more than one value"):
        ResponseData.from_long(frame)


def test_require_benchmark_names_unlabelled_items() -> None:
    frame = small_long()
    frame.loc[2, "benchmark"] = None
    with pytest.raises(DataError, match=r"1 item\(s\) have no benchmark label, e.g. \['i3'\]"):
        ResponseData.from_long(frame, require_benchmark=True)


def test_empty_responses_in_long_form_are_missing_cells() -> None:
    frame = small_long()
    frame.loc[5, "response"] = np.nan
    data = ResponseData.from_long(frame)
    assert data.n_responses == 5
    assert data.n_subjects == 2  # s3 had only the empty response


def test_from_wide_rows_subjects_and_rows_items_agree() -> None:
    wide = pd.DataFrame({"who": ["s1", "s2"], "q1": [1, 0], "q2": [np.nan, 1], "q3": [0, 0]})
    by_subject = ResponseData.from_wide(wide, id_column="who")
    transposed = wide.set_index("who").T.reset_index(names="item")
    by_item = ResponseData.from_wide(transposed, id_column="item", rows="items")
    assert by_subject.n_responses == by_item.n_responses == 5
    np.testing.assert_array_equal(by_subject.to_matrix(), by_item.to_matrix())
    assert list(by_item.item_ids) == ["q1", "q2", "q3"]


def test_from_wide_names_bad_cell_and_duplicate_rows() -> None:
    wide = pd.DataFrame({"who": ["s1", "s2"], "q1": [1, 0], "q2": ["x", 1]})
    with pytest.raises(DataError, match=r"m\.csv: column 'q2' at line 2 holds 'x'.*item column 3"):
        ResponseData.from_wide(wide, id_column="who", source="m.csv", first_line=2)
    dup = pd.DataFrame({"who": ["s1", "s1"], "q1": [1, 0]})
    with pytest.raises(DataError, match="subject 's1' has more than one row"):
        ResponseData.from_wide(dup, id_column="who")


def test_subset_renumbers_codes_and_rejects_unknown_names() -> None:
    data = ResponseData.from_long(small_long())
    sub = data.subset(benchmarks=["B"])
    assert list(sub.item_ids) == ["i3"]
    assert list(sub.subject_ids) == ["s1"]
    assert sub.item_codes.tolist() == [0]
    with pytest.raises(DataError, match=r"unknown benchmark\(s\) \['Z'\]; known: \['A', 'B'\]"):
        data.subset(benchmarks=["Z"])
    with pytest.raises(DataError, match=r"unknown subject\(s\) \['nobody'\]"):
        data.subset(subjects=["nobody"])


def test_combine_joins_over_shared_subjects_and_refuses_colliding_items() -> None:
    a = ResponseData.from_long(small_long(), source="a")
    b_frame = small_long().assign(item=lambda f: "x" + f["item"], benchmark="C")
    b = ResponseData.from_long(b_frame, source="b")
    both = ResponseData.combine([a, b])
    assert both.n_items == 6 and both.n_subjects == 3
    assert list(both.benchmarks) == ["A", "B", "C"]
    with pytest.raises(DataError, match="item 'i1' is in both a and a"):
        ResponseData.combine([a, a])


def test_summary_counts_accuracy_and_uninformative_items() -> None:
    data = ResponseData.from_long(small_long())
    summary = data.summary()
    assert (summary.n_subjects, summary.n_items, summary.n_responses) == (3, 3, 6)
    assert summary.missing_share == pytest.approx(3 / 9)
    assert summary.benchmarks.loc["A", "items"] == 2
    assert summary.benchmarks.loc["A", "accuracy"] == pytest.approx((1 + 0 + 1 + 1 + 0.5) / 5)
    assert summary.subjects.loc["s2", "accuracy"] == 1.0
    # i3 is answered only by s1 (correctly): every subject who saw it got it right
    assert summary.uninformative.loc["i3", "kind"] == "all_correct"
    assert "i1" not in summary.uninformative.index
    as_dict = summary.to_dict()
    assert as_dict["uninformative_items"][0]["item"] == "i3"
    assert "3 subjects x 3 items" in summary.to_text()


def test_checksum_is_stable_and_sensitive() -> None:
    a = ResponseData.from_long(small_long())
    b = ResponseData.from_long(small_long().iloc[::-1])
    assert a.checksum() == b.checksum()
    changed = small_long()
    changed.loc[0, "response"] = 0
    assert ResponseData.from_long(changed).checksum() != a.checksum()
    relabelled = small_long().assign(benchmark="Z")
    assert ResponseData.from_long(relabelled).checksum() != a.checksum()
