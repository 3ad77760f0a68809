"""Repeated trials as k successes of n: the data model, its checks, and the loaders that give them (a CSV of
successes and trials, repeated 0/1 rows, inspect_ai epochs, OpenCompass runs), each checked cell by cell."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from irtbayes.cli.main import main
from irtbayes.core.errors import DataError
from irtbayes.data import io
from irtbayes.data.io.inspect import _SAMPLE_ENTRY, INSPECT_SCORES, _Archive, load_inspect
from irtbayes.data.io.opencompass import load_opencompass
from irtbayes.data.io.tabular import load_long
from irtbayes.data.responses import ResponseData
from irtbayes.data.simulate import simulate_responses

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def counts_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "subject": ["a", "a", "b", "b", "c"],
            "item": ["q1", "q2", "q1", "q2", "q1"],
            "successes": [3, 0, 5, 1, 2],
            "trials": [5, 2, 5, 1, 4],
        }
    )


# ---------------------------------------------------------------------------------------------- the data model
def test_successes_and_trials_are_held_as_shares_with_their_trials() -> None:
    data = ResponseData.from_long(counts_frame())
    assert data.response_kind == "counts" and not data.is_binary and data.has_trials
    assert data.values.tolist() == [0.6, 0.0, 1.0, 1.0, 0.5]
    assert data.trials.tolist() == [5, 2, 5, 1, 4]
    assert data.successes.tolist() == [3.0, 0.0, 5.0, 1.0, 2.0]
    assert data.long_frame()["trials"].tolist() == [5, 2, 5, 1, 4]
    matrix = data.to_dataset()
    assert matrix["trials"].sel(subject="c", item="q2").item() == 0  # missing
    assert matrix["trials"].sel(subject="a", item="q1").item() == 5
    assert "4 k-of-n responses" not in repr(data) and "5 k-of-n responses" in repr(data)


def test_a_response_column_with_trials_reads_the_same_data() -> None:
    frame = counts_frame()
    shares = frame.assign(response=frame["successes"] / frame["trials"]).drop(columns="successes")
    data = ResponseData.from_long(shares, trials="trials")
    assert data.checksum() == ResponseData.from_long(counts_frame()).checksum()


def test_one_trial_each_is_binary_data_with_the_same_checksum() -> None:
    binary = pd.DataFrame({"subject": ["a", "a", "b", "b"], "item": ["q1", "q2"] * 2, "response": [1, 0, 0, 1]})
    ones = ResponseData.from_long(binary.assign(trials=1), trials="trials")
    plain = ResponseData.from_long(binary)
    assert ones.response_kind == "binary" and not ones.has_trials
    assert ones.checksum() == plain.checksum()
    assert "trials" not in ones.responses.columns


def test_trials_count_in_the_checksum() -> None:
    frame = counts_frame()
    doubled = frame.assign(successes=2 * frame["successes"], trials=2 * frame["trials"])
    data = ResponseData.from_long(frame)
    same_shares = ResponseData.from_long(doubled)
    assert np.array_equal(data.values, same_shares.values)
    assert data.checksum() != same_shares.checksum()
    assert data.without_trials().checksum() == same_shares.without_trials().checksum()


def test_a_share_of_one_trial_is_a_fractional_score_beside_counts() -> None:
    frame = pd.DataFrame({"subject": ["a", "b", "c"], "item": "q", "response": [0.4, 0.5, 1.0], "trials": [5, 1, 2]})
    data = ResponseData.from_long(frame, trials="trials")
    assert data.response_kind == "fraction" and data.has_trials
    assert data.successes.tolist() == [2.0, 0.5, 2.0]
    assert "fractional scores and k successes of n trials" in data.summary().kind_text


def test_subset_combine_and_summary_keep_the_trials() -> None:
    data = ResponseData.from_long(counts_frame())
    part = data.subset(subjects=["a", "c"])
    assert part.trials.tolist() == [5, 2, 4] and part.response_kind == "counts"
    assert not data.subset(subjects=["b"], items=["q2"]).has_trials  # one trial left: binary
    other = ResponseData.from_long(pd.DataFrame({"subject": ["a", "b"], "item": "z", "response": [1, 0]}))
    both = ResponseData.combine([data, other])
    assert both.trials.tolist() == [5, 2, 5, 1, 4, 1, 1] and both.response_kind == "counts"
    summary = data.summary()
    assert summary.n_trials == (1, 5) and summary.total_trials == 17
    assert "k successes of n trials (1-5 trials, 17 in all)" in summary.to_text()
    assert summary.to_dict()["n_trials"] == [1, 5] and summary.to_dict()["response_kind"] == "counts"


def test_combine_refuses_counts_beside_ordinal_categories() -> None:
    graded = ResponseData.from_long(
        pd.DataFrame({"subject": ["a", "b", "c"], "item": "g1", "response": [1, 2, 3]}), scoring="ordinal"
    )
    with pytest.raises(DataError, match=r"holds k successes of n trials and .* ordinal categories"):
        ResponseData.combine([ResponseData.from_long(counts_frame()), graded])


def test_without_trials_reads_the_shares_as_fractional_scores() -> None:
    data = ResponseData.from_long(counts_frame())
    shares = data.without_trials()
    assert shares.response_kind == "fraction" and not shares.has_trials
    assert np.array_equal(shares.values, data.values) and shares.trials.tolist() == [1] * 5


def test_simulated_trials_are_counts() -> None:
    data, truth = simulate_responses(20, 30, n_trials=4, seed=6)
    assert data.response_kind == "counts" and set(data.trials) == {4}
    assert set(np.unique(data.successes)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert truth.attrs["n_trials"] == 4
    single, _ = simulate_responses(20, 30, seed=6)
    assert single.response_kind == "binary" and not single.has_trials


# ---------------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("subject,item,successes,trials\na,q1,1,2\nb,q1,1,0\n", r"column 'trials' at line 3 holds 0; .*>= 1"),
        ("subject,item,successes,trials\na,q1,1,2.5\n", r"column 'trials' at line 2 holds 2.5; .*whole number"),
        ("subject,item,successes,trials\na,q1,1,x\n", r"column 'trials' at line 2 holds 'x'; .*whole number"),
        ("subject,item,successes,trials\na,q1,1,2\nb,q1,3,2\n", r"column 'successes' at line 3 holds 3, more than"),
        ("subject,item,successes,trials\na,q1,-1,2\n", r"column 'successes' at line 2 holds -1; .*>= 0"),
        ("subject,item,successes,trials\na,q1,1,\n", r"column 'trials' is empty at line 2, where the row has"),
        (
            "subject,item,response,trials\na,q1,0.5,4\nb,q1,0.3,4\n",
            r"column 'response' at line 3 holds 0.3 of 4 trials",
        ),
    ],
)
def test_bad_trials_and_successes_name_the_file_line_and_column(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "counts.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=rf"{path}: {message}"):
        load_long(path)


def test_binary_scoring_and_ordinal_scoring_refuse_trials() -> None:
    with pytest.raises(DataError, match=r"column 'trials' at row 0 holds 5 trials, but binary"):
        ResponseData.from_long(counts_frame(), scoring="binary")
    with pytest.raises(DataError, match="not ordinal categories"):
        ResponseData.from_long(counts_frame(), scoring="ordinal")
    with pytest.raises(DataError, match="needs the column of trials"):
        ResponseData.from_long(counts_frame(), successes="successes")


# ---------------------------------------------------------------------------------------------- repeated rows
REPEATED = "subject,item,response\na,q1,1\na,q1,0\na,q1,1\na,q2,0\nb,q1,1\nb,q2,1\nb,q2,1\n"


def test_repeated_rows_are_an_error_that_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(REPEATED)
    with pytest.raises(DataError, match=r"appear 3 times \(line 2, line 3, line 4\).*repeats='trials' \(--repeats"):
        load_long(path)


def test_repeated_rows_read_as_k_of_n(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(REPEATED)
    data = load_long(path, repeats="trials")
    cells = data.long_frame().set_index(["subject", "item"])
    assert cells["trials"].to_dict() == {("a", "q1"): 3, ("a", "q2"): 1, ("b", "q1"): 1, ("b", "q2"): 2}
    assert (cells["response"] * cells["trials"]).round().to_dict() == {
        ("a", "q1"): 2.0,
        ("a", "q2"): 0.0,
        ("b", "q1"): 1.0,
        ("b", "q2"): 2.0,
    }
    path.write_text(REPEATED + "b,q2,0.5\n")
    with pytest.raises(DataError, match=rf"{path}: column 'response' at line 9 holds 0.5; repeated rows"):
        load_long(path, repeats="trials")
    with pytest.raises(DataError, match="repeats must be one of 'error', 'trials'"):
        load_long(path, repeats="sum")  # type: ignore[arg-type]


def test_repeated_rows_under_conditions_are_summed_per_condition() -> None:
    frame = pd.DataFrame(
        {"subject": "a", "item": "q", "condition": ["x", "x", "y", "y", "y"], "response": [1, 1, 0, 1, 0]}
    )
    data = ResponseData.from_long(frame, condition="condition", repeats="trials")
    cells = data.long_frame().set_index("condition")
    assert cells["trials"].to_dict() == {"x": 2, "y": 3}
    assert data.successes.tolist() == [2.0, 1.0]


def test_the_command_line_reads_counts_and_repeated_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs, counts = tmp_path / "runs.csv", tmp_path / "counts.csv"
    runs.write_text(REPEATED)
    counts_frame().to_csv(counts, index=False)
    assert main(["data", "summary", str(runs)]) == 2
    assert "--repeats trials on the command line" in capsys.readouterr().err
    assert main(["data", "summary", str(runs), "--repeats", "trials"]) == 0
    assert "k successes of n trials (1-3 trials, 7 in all)" in capsys.readouterr().out
    assert io.detect_format(counts) == "long"
    assert main(["data", "summary", str(counts), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["response_kind"] == "counts" and summary["total_trials"] == 17


def test_a_fit_of_repeated_rows_records_how_they_were_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, _ = simulate_responses(12, 10, n_trials=3, missing=0.0, seed=8)
    reps = data.trials
    position = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    rows = data.long_frame().loc[lambda f: f.index.repeat(f["trials"]), ["subject", "item"]]
    rows["response"] = (position < np.repeat(data.successes, reps)).astype(int)
    rows.to_csv(tmp_path / "runs.csv", index=False)
    out = tmp_path / "fit"
    code = main(["fit", str(tmp_path / "runs.csv"), "--repeats", "trials", "--sampler", "approx", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    card = json.loads((out / "card.json").read_text())
    assert card["reading"]["options"]["repeats"] == "trials" and card["n_responses"] == 120
    assert io.reread(card["reading"]).checksum() == data.checksum() == card["data_checksum"]


def test_the_reading_records_repeats_and_reads_the_same_data_again(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(REPEATED)
    data = io.load(path, repeats="trials")
    assert data.reading is not None and data.reading["options"] == {"repeats": "trials"}
    assert io.reread(dict(data.reading)).checksum() == data.checksum()


# ---------------------------------------------------------------------------------------------- inspect_ai
def _inspect_epochs() -> dict[tuple[str, str], list[float]]:
    """(model, item) -> each epoch's score, read from the raw logs (one log per model and task in the fixture)."""
    cells: dict[tuple[str, str], list[float]] = {}
    for path in sorted((FIXTURES / "inspect" / "logs").iterdir()):
        if path.suffix == ".eval":
            archive = _Archive(path)
            header = archive.json("header.json")
            samples = [archive.json(n) for n in sorted(archive.names) if _SAMPLE_ENTRY.match(n)]
        else:
            header = json.loads(path.read_text())
            samples = header["samples"]
        model, task = header["eval"]["model"], header["eval"]["task"]
        for sample in samples:
            (score,) = sample["scores"].values()
            cells.setdefault((model, f"{task}/{sample['id']}"), []).append(INSPECT_SCORES[score["value"]])
    return cells


def test_inspect_epochs_scored_correct_or_not_are_k_of_n() -> None:
    data = load_inspect(FIXTURES / "inspect" / "logs")
    frame = data.long_frame().set_index(["subject", "item"])
    epochs = _inspect_epochs()
    assert set(epochs) == set(frame.index)
    whole = partial = 0
    for cell, scores in epochs.items():
        if all(s in (0.0, 1.0) for s in scores):
            whole += 1
            assert frame.loc[cell, "trials"] == len(scores), cell
            assert frame.loc[cell, "response"] * len(scores) == pytest.approx(sum(scores), abs=1e-12), cell
        else:  # a partial score: the mean of the epochs, one trial
            partial += 1
            assert frame.loc[cell, "trials"] == 1 and frame.loc[cell, "response"] == pytest.approx(np.mean(scores))
    assert whole == 28 and partial == 5 and max(len(s) for s in epochs.values()) == 2
    assert data.response_kind == "fraction" and data.has_trials  # the partial cells keep the quasi-likelihood
    assert any("is k correct of its n epochs" in n for n in data.notes)
    assert any(n.startswith("5 (model, sample) cells") and "partial scores" in n for n in data.notes)
    arith = data.subset(benchmarks=["arith"])
    assert arith.response_kind == "counts" and int(arith.trials.sum()) == 36


# ---------------------------------------------------------------------------------------------- OpenCompass
def test_opencompass_runs_are_k_of_n() -> None:
    root = FIXTURES / "opencompass" / "outputs" / "default"
    data = load_opencompass(root)
    frame = data.long_frame().set_index(["subject", "item"])
    n_cells = 0
    for path in sorted(root.glob("*/results/*/*.json")):
        details = json.loads(path.read_text())["details"]
        if isinstance(details, list):
            entries = list(enumerate(details))
        else:  # a mapping {"0": {...}, ..., "type": "GEN"}
            entries = [(int(k), v) for k, v in details.items() if k.isdigit()]
        for index, entry in entries:
            runs = entry["correct"] if isinstance(entry["correct"], list) else [entry["correct"]]
            cell = (path.parent.name, f"{path.stem}/{index}")
            assert frame.loc[cell, "trials"] == len(runs), cell
            assert round(frame.loc[cell, "response"] * len(runs)) == sum(bool(r) for r in runs), cell
            n_cells += 1
    assert n_cells == data.n_responses == 27
    assert data.response_kind == "counts" and data.trials.max() == 3
    assert any("is k correct of its n runs" in n for n in data.notes)
