"""`irtbayes data summary` on ordinal responses: --response-kind, --categories and --score-bins."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from irtbayes.cli.main import build_parser, load_data_argument, main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SCIENCE = FIXTURES / "science_mirt.csv"
XSTEST = FIXTURES / "xstest_labels_slice.csv"
XSTEST_COLUMNS = ["--subject-col", "model", "--item-col", "id", "--response-col", "final_label"]


def test_summary_of_science_as_ordinal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(SCIENCE), "--response-kind", "ordinal"]) == 0
    out = capsys.readouterr().out
    assert "392 subjects x 4 items, 1568 responses (0.0% of cells missing; ordinal (4 categories))" in out
    assert "note: ordinal categories inferred from the data: 1, 2, 3, 4 -> codes 0-3" in out
    assert main(["data", "summary", str(SCIENCE), "--response-kind", "ordinal", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (payload["response_kind"], payload["n_categories"], payload["binary"]) == ("ordinal", [4, 4], False)


def test_xstest_labels_with_declared_categories(capsys: pytest.CaptureFixture[str]) -> None:
    order = "1_full_compliance,3_partial_refusal,2_full_refusal"
    argv = ["data", "summary", str(XSTEST), *XSTEST_COLUMNS, "--response-kind", "ordinal", "--categories", order]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "5 subjects x 40 items, 200 responses" in out and "ordinal (3 categories)" in out
    data = load_data_argument(build_parser().parse_args(argv))
    codes = pd.read_csv(XSTEST)["final_label"].map({label: k for k, label in enumerate(order.split(","))})
    assert sorted(data.values.tolist()) == sorted(codes.astype(float).tolist())  # type: ignore[attr-defined]


def test_an_undeclared_label_exits_2_naming_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["data", "summary", str(XSTEST), *XSTEST_COLUMNS, "--response-kind", "ordinal"]
    assert main([*argv, "--categories", "1_full_compliance,2_full_refusal"]) == 2
    err = capsys.readouterr().err
    assert "column 'final_label' at line" in err and "not one of the declared categories" in err


def test_score_bins_cut_the_ratings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(SCIENCE), "--response-kind", "ordinal", "--score-bins", "2,4"]) == 0
    out = capsys.readouterr().out
    assert "ordinal (3 categories)" in out
    assert "numeric scores binned at 2, 4 into ordinal categories <2, 2-4, >=4 (codes 0-2)" in out


def test_a_gap_exits_2_naming_the_missing_category(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "no_threes.csv"
    pd.read_csv(SCIENCE).replace(3, 4).to_csv(path, index=False)
    assert main(["data", "summary", str(path), "--response-kind", "ordinal"]) == 2
    assert "holds the integers 1, 2, 4 but never 3" in capsys.readouterr().err
    assert main(["data", "summary", str(path), "--response-kind", "ordinal", "--categories", "1,2,3,4"]) == 0
    assert "ordinal (4 categories)" in capsys.readouterr().out


def test_categories_or_bins_without_ordinal_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", str(SCIENCE), "--categories", "1,2,3,4"]) == 2
    assert "--categories describe ordinal categories; they need --response-kind ordinal" in capsys.readouterr().err
    assert main(["data", "summary", str(SCIENCE), "--response-kind", "fraction", "--score-bins", "2"]) == 2
    assert "--score-bins describe ordinal categories" in capsys.readouterr().err
    assert main(["data", "summary", str(SCIENCE), "--binary", "--response-kind", "ordinal"]) == 2
    assert "--binary means --response-kind binary" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["data", "summary", str(SCIENCE), "--response-kind", "ordinal", "--score-bins", "low,high"])
    assert exit_.value.code == 2
    assert "expected comma-separated numbers" in capsys.readouterr().err


def test_binary_alias_and_response_kind_binary_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.csv"
    path.write_text("subject,item,response\na,q,0.5\nb,q,1\n")
    for flags in (["--binary"], ["--response-kind", "binary"]):
        assert main(["data", "summary", str(path), *flags]) == 2
        assert "line 2 holds 0.5, but binary" in capsys.readouterr().err
    assert main(["data", "summary", str(path), "--response-kind", "fraction"]) == 0
    assert "fractional scores" in capsys.readouterr().out


def test_a_registered_data_set_is_checked_against_the_kind_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "summary", "lsat7", "--response-kind", "ordinal"]) == 2
    assert "--response-kind ordinal asked for ordinal responses, but this data set holds binary" in (
        capsys.readouterr().err
    )
    assert main(["data", "summary", "lsat7", "--response-kind", "binary"]) == 0
    assert "1000 subjects x 5 items" in capsys.readouterr().out
