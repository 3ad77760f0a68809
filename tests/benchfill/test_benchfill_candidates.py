"""Candidates: loading files, validation, the interchangeable sources, requests and seed selection."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from irtbayes.benchfill.candidates import (
    Candidate,
    candidate_from_record,
    candidate_id_for,
    items_table,
    load_candidates,
)
from irtbayes.benchfill.llm import ChatClient, LLMSource
from irtbayes.benchfill.sources import (
    CallableSource,
    CandidateSource,
    FileSource,
    ProposalRequest,
    SeedItem,
    select_seeds,
)
from irtbayes.core.errors import DataError, SpecError
from irtbayes.data.responses import ResponseData


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


REQUEST = ProposalRequest(aim_lo=0.5, aim_hi=1.0, aim_bin=3, n=2, benchmark="geo", domain="knowledge")


# ------------------------------------------------------------------------------------------ files
def test_load_csv(tmp_path):
    path = write(
        tmp_path / "c.csv",
        "candidate_id,text,answer,benchmark,domain,seed_item,choices\n"
        'c1,"What is the capital of Peru?",Lima,geo,knowledge,mc-003,"[""Quito"", ""Lima"", ""Bogota""]"\n'
        "c2,Largest planet?,B,geo,,,Mars|Jupiter|Venus\n"
        "c3,What is 2 + 2?,4,,,,\n",
    )
    c1, c2, c3 = load_candidates(path)
    assert c1 == Candidate(
        "c1",
        "What is the capital of Peru?",
        "Lima",
        "geo",
        "knowledge",
        "mc-003",
        ("Quito", "Lima", "Bogota"),
        f"file:{path}",
        None,
    )
    assert c1.answer_index == 1 and c1.n_options == 3
    assert c2.answer == "Jupiter" and c2.domain is None and c2.choices == ("Mars", "Jupiter", "Venus")
    assert c3.choices is None and c3.answer == "4" and c3.benchmark is None and c3.answer_index is None


def test_load_jsonl_keeps_answer_forms(tmp_path):
    lines = [
        {"candidate_id": "j1", "text": "Pick the even one", "choices": ["1", "2", "3"], "answer": 0},
        {"candidate_id": 7, "text": "What is 6 * 7?", "answer": 42},
        {"candidate_id": "j3", "text": "Which is a colour?", "choices": ["dog", "red"], "answer": "1"},
    ]
    path = write(tmp_path / "c.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    j1, j2, j3 = load_candidates(path)
    assert j1.answer == "1", "an integer answer of a multiple-choice item is an index"
    assert j2.candidate_id == "7" and j2.answer == "42"
    assert j3.answer == "red"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.csv", "candidate_id,text\nc1,hello\n", r"missing column\(s\) \['answer'\]"),
        ("empty.csv", "", "empty"),
        ("header.csv", "candidate_id,text,answer\n", "empty"),
        ("blank.jsonl", "\n\n", "empty"),
        ("noanswer.csv", "candidate_id,text,answer\nc1,Q one,A\nc2,Q two,\n", "line 3: the candidate has no answer"),
        ("notext.csv", "candidate_id,text,answer\nc1, ,A\n", "line 2: the candidate has no text"),
        ("noid.csv", "candidate_id,text,answer\n,Q,A\n", "line 2: the candidate has no candidate_id"),
        ("dup.csv", "candidate_id,text,answer\nc1,Q,A\nc2,R,B\nc1,S,C\n", "'c1' appears twice \\(line 2 and line 4\\)"),
        (
            "broken.jsonl",
            '{"candidate_id": "a", "text": "Q", "answer": "A"}\n{"candidate_id": "b", "text": ',
            "line 2: not valid JSON",
        ),
        ("array.jsonl", '["a", "b"]\n', "line 1: expected a JSON object"),
        ("nokey.jsonl", '{"candidate_id": "a", "text": "Q"}\n', r"no record has the key\(s\) \['answer'\]"),
        (
            "choice.jsonl",
            '{"candidate_id": "a", "text": "Q", "choices": ["x", "y"], "answer": "z"}\n',
            "line 1: answer 'z' is not one of the choices",
        ),
        (
            "index.jsonl",
            '{"candidate_id": "a", "text": "Q", "choices": ["x", "y"], "answer": 5}\n',
            "answer index 5 is outside the 2 choices",
        ),
        ("onechoice.csv", "candidate_id,text,answer,choices\nc1,Q,x,x\n", "at least 2 choices"),
        ("repeat.csv", "candidate_id,text,answer,choices\nc1,Q,x,x|x|y\n", r"choices repeat \['x'\]"),
        ("extra.csv", "candidate_id,text,answer\nc1,Q,A,surplus\n", "line 2: more fields"),
        ("items.txt", "whatever\n", "unknown file type"),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path / name, text)
    with pytest.raises(DataError, match=message) as info:
        load_candidates(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_candidates(tmp_path / "nope.csv")


def test_csv_lines_are_counted_across_multiline_fields(tmp_path):
    path = write(tmp_path / "c.csv", 'candidate_id,text,answer\nc1,"first\nsecond\nthird",A\nc2,Q,\n')
    with pytest.raises(DataError, match="line 5: the candidate has no answer"):
        load_candidates(path)


def test_candidate_id_is_deterministic():
    first = candidate_id_for("What is 2 + 2?", "4")
    assert first == candidate_id_for("What is 2 + 2?", "4")
    assert first.startswith("bf-") and len(first) == 13
    assert candidate_id_for("ab", "c") != candidate_id_for("a", "bc")
    record = candidate_from_record({"text": "What is 2 + 2?", "answer": 4}, where="x", source="s")
    assert record.candidate_id == first


def test_candidate_is_frozen_and_hashable():
    candidate = Candidate("c", "Q", "x", choices=["x", "y"])
    assert candidate.choices == ("x", "y")
    assert hash(candidate) == hash(Candidate("c", "Q", "x", choices=("x", "y")))
    with pytest.raises(AttributeError):
        candidate.text = "other"  # type: ignore[misc]


# ------------------------------------------------------------------------------------------ sources
def test_all_sources_satisfy_the_protocol(tmp_path):
    path = write(tmp_path / "c.csv", "candidate_id,text,answer\nc1,Q,A\n")
    client = ChatClient("http://127.0.0.1:9/v1", "m")
    for source in (FileSource(path), CallableSource(lambda request: []), LLMSource(client)):
        assert isinstance(source, CandidateSource)


def test_file_source_hands_out_each_candidate_once(tmp_path):
    path = write(
        tmp_path / "c.csv",
        "candidate_id,text,answer,benchmark\nc1,Q1,A,geo\nc2,Q2,A,math\nc3,Q3,A,\nc4,Q4,A,geo\nc5,Q5,A,geo\n",
    )
    source = FileSource(path)
    first = source.propose(REQUEST)
    assert [c.candidate_id for c in first] == ["c1", "c3"], "c2 belongs to another benchmark"
    assert first[1].benchmark == "geo" and first[1].domain == "knowledge", "request labels fill the gaps"
    assert [c.candidate_id for c in source.propose(REQUEST)] == ["c4", "c5"]
    assert source.propose(REQUEST) == []
    source.reset()
    assert [c.candidate_id for c in source.propose(REQUEST)] == ["c1", "c3"]


def test_callable_source_validates_like_a_file():
    def generator(request: ProposalRequest):
        assert request.aim_bin == 3
        return [
            {"text": "Q1", "answer": "A"},
            Candidate("mine", "Q2", "B", benchmark="other", source="handmade"),
            {"candidate_id": "c3", "text": "Q3", "choices": ["x", "y"], "answer": "b"},
        ]

    source = CallableSource(generator)
    one, two, three = source.propose(REQUEST)
    assert one.candidate_id == candidate_id_for("Q1", "A")
    assert one.source == "callable:test_callable_source_validates_like_a_file.<locals>.generator"
    assert (one.benchmark, one.domain) == ("geo", "knowledge")
    assert two.candidate_id == "mine" and two.benchmark == "other" and two.source == "handmade"
    assert three.answer == "y"


@pytest.mark.parametrize(
    ("results", "message"),
    [
        ([{"text": "Q"}], "result #0: the candidate has no answer"),
        ([{"text": "Q", "answer": "A"}, {"answer": "A"}], "result #1: the candidate has no text"),
        ([{"text": "Q", "answer": "A"}, "oops"], "result #1: expected a mapping"),
        (
            [{"text": "Q", "answer": "A"}, {"text": "Q", "answer": "A"}],
            r"callable 'gen': candidate_id '[\w-]+' appears twice \(result #0 and result #1\)",
        ),
        ({"text": "Q", "answer": "A"}, "expected a list of candidates"),
        (None, "expected a list of candidates"),
    ],
)
def test_callable_source_errors_name_the_result(results, message):
    source = CallableSource(lambda request: results, name="gen")
    with pytest.raises(DataError, match=message) as info:
        source.propose(REQUEST)
    assert "callable 'gen'" in str(info.value)


def test_callable_source_needs_a_callable():
    with pytest.raises(SpecError, match="callable"):
        CallableSource("not a function")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ requests and seeds
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"aim_lo": 1.0, "aim_hi": 1.0}, "lo < hi"),
        ({"aim_lo": float("nan")}, "finite"),
        ({"n": 0}, "positive integer"),
        ({"n_choices": 1}, "at least 2"),
    ],
)
def test_bad_requests(options, message):
    settings = {"aim_lo": 0.0, "aim_hi": 1.0, "aim_bin": 0, "n": 3} | options
    with pytest.raises(SpecError, match=message):
        ProposalRequest(**settings)


def difficulty_table(means):
    return pd.DataFrame(
        {
            "mean": means,
            "ci_low": [m - 0.3 for m in means],
            "ci_high": [m + 0.3 for m in means],
            "text": [f"text {k}" for k in range(len(means))],
            "answer": [str(k) for k in range(len(means))],
        },
        index=pd.Index([f"i{k}" for k in range(len(means))], name="item"),
    )


def test_seeds_for_a_gap_come_from_both_sides():
    table = difficulty_table([-2.0, -1.0, -0.4, -0.1, 1.2, 1.5, 3.0])
    seeds = select_seeds(table, aim_lo=0.0, aim_hi=1.0, max_seeds=4)
    assert [s.item for s in seeds] == ["i2", "i3", "i4", "i5"], [s.item for s in seeds]
    assert seeds[1] == SeedItem("i3", "text 3", -0.1, pytest.approx(-0.4), pytest.approx(0.2), answer="3")


def test_seeds_prefer_the_bin_but_keep_one_neighbour_each_side():
    table = difficulty_table([-1.0, 0.1, 0.3, 0.5, 0.55, 0.9, 2.0])
    seeds = select_seeds(table, aim_lo=0.0, aim_hi=1.0, max_seeds=4)
    assert [s.item for s in seeds] == ["i0", "i3", "i4", "i6"], [s.item for s in seeds]


def test_seeds_from_a_fit_items_table_and_item_metadata():
    fit_table = pd.DataFrame(
        {
            "item": ["a", "b", "c"],
            "difficulty_mean": [0.2, 0.6, 1.4],
            "difficulty_ci_low": [0.0, 0.4, 1.1],
            "difficulty_ci_high": [0.4, 0.8, 1.7],
            "n_responses": [10, 10, 10],
        }
    )
    metadata = pd.DataFrame({"text": ["Qa", None, "Qc"], "answer": ["1", "2", "3"]}, index=pd.Index(["a", "b", "c"]))
    seeds = select_seeds(fit_table, aim_lo=0.5, aim_hi=1.0, items=metadata)
    assert [(s.item, s.text, s.answer, s.difficulty_mean) for s in seeds] == [
        ("a", "Qa", "1", 0.2),
        ("c", "Qc", "3", 1.4),
    ]


def test_seed_table_needs_its_columns():
    with pytest.raises(DataError, match=r"lacks column\(s\) \['text'\]"):
        select_seeds(difficulty_table([0.0]).drop(columns="text"), aim_lo=0, aim_hi=1)


def test_items_table_feeds_response_data():
    candidates = [Candidate("c1", "Q1", "x", benchmark="geo", choices=("x", "y")), Candidate("c2", "Q2", "7")]
    table = items_table(candidates)
    assert list(table.index) == ["c1", "c2"] and table.index.name == "item"
    assert table.loc["c1", "n_options"] == 2 and pd.isna(table.loc["c2", "n_options"])
    responses = pd.DataFrame({"subject": ["s1", "s1", "s2"], "item": ["c1", "c2", "c1"], "response": [1, 0, 1]})
    data = ResponseData.from_long(responses, items=table)
    assert list(data.item_ids) == ["c1", "c2"]
    assert data.items.loc["c1", "benchmark"] == "geo"
