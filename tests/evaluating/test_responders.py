"""Responders: answers looked up in a response file, and a chat endpoint asked each item (against a loopback
fake OpenAI-compatible server started here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fake_openai import FakeOpenAI

from irtbayes.benchfill.llm import ChatClient, prompt_hash
from irtbayes.core.errors import DataError
from irtbayes.data.responses import ResponseData
from irtbayes.evaluating.responders import (
    EndpointResponder,
    Exchange,
    file_responder,
    normalise_answer,
    parse_letter,
)


# ------------------------------------------------------------------------------------------------ collected answers
@pytest.fixture
def answers_csv(tmp_path: Path) -> Path:
    path = tmp_path / "answers.csv"
    path.write_text("subject,item,response\nsys-a,q1,1\nsys-a,q2,0\nsys-a,q3,0.5\nsys-b,q1,0\nsys-b,q2,1\nsys-b,q4,1\n")
    return path


def test_file_responder_gives_the_subjects_own_answers(answers_csv):
    a = file_responder(answers_csv, "sys-a")
    b = file_responder(answers_csv, subject="sys-b")
    assert [a("q1"), a("q2"), a("q3")] == [1.0, 0.0, 0.5]
    assert [b("q1"), b("q2"), b("q4")] == [0.0, 1.0, 1.0]
    assert isinstance(a("q1"), float)


def test_file_responder_missing_item_names_file_subject_and_item(answers_csv):
    a = file_responder(answers_csv, "sys-a")
    with pytest.raises(DataError) as err:
        a("q4")  # another subject answered q4, this one did not
    assert str(err.value) == f"{answers_csv}: subject 'sys-a' has no response to item 'q4'"
    with pytest.raises(
        DataError, match=r"answers\.csv: subject 'sys-a' has no response to item 'zz' \(the file has no"
    ):
        a("zz")


def test_file_responder_unknown_subject(answers_csv):
    with pytest.raises(DataError) as err:
        file_responder(answers_csv, "sys-c")
    assert str(answers_csv) in str(err.value)
    assert "no subject 'sys-c'" in str(err.value)
    assert "sys-a, sys-b" in str(err.value)


def test_file_responder_needs_a_subject_when_the_file_has_several(answers_csv):
    with pytest.raises(DataError) as err:
        file_responder(answers_csv)
    message = str(err.value)
    assert message.startswith(f"{answers_csv}: holds 2 subjects (sys-a, sys-b)")
    assert "subject=" in message


def test_file_responder_long_subject_lists_are_shortened(tmp_path):
    path = tmp_path / "many.csv"
    rows = "".join(f"s{k:02d},q1,1\n" for k in range(30))
    path.write_text("subject,item,response\n" + rows)
    with pytest.raises(DataError, match=r"holds 30 subjects \(s00, s01, .*s09 and 20 more\)"):
        file_responder(path)


def test_file_responder_single_subject_and_response_data(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("subject,item,response\nonly,q1,0\nonly,q2,1\n")
    assert file_responder(path)("q2") == 1.0
    frame = pd.DataFrame({"subject": ["m", "m", "n"], "item": ["q1", "q2", "q1"], "response": [1, 0, 0]})
    data = ResponseData.from_long(frame, source="my data")
    responder = file_responder(data, "n")
    assert responder("q1") == 0.0
    with pytest.raises(DataError, match=r"^my data: subject 'n' has no response to item 'q2'$"):
        responder("q2")


def test_file_responder_refuses_several_conditions(tmp_path):
    frame = pd.DataFrame({"subject": ["m", "m"], "item": ["q1", "q1"], "response": [1, 0], "prompt": ["plain", "cot"]})
    data = ResponseData.from_long(frame, condition="prompt", source="runs.csv")
    with pytest.raises(DataError, match=r"runs\.csv: subject 'm' has more than one response to item 'q1'"):
        file_responder(data, "m")
    assert file_responder(data.subset(conditions=["cot"]), "m")("q1") == 0.0


# --------------------------------------------------------------------------------------------- a fake chat server
@pytest.fixture
def server():
    fake = FakeOpenAI()
    yield fake
    fake.close()


def make_client(server: FakeOpenAI, **options: Any) -> ChatClient:
    return ChatClient(server.url, "sut-model", api_key_env=None, timeout=5.0, max_retries=0, **options)


ITEMS = pd.DataFrame(
    {
        "item": ["mc1", "mc2", "free1", "free2"],
        "text": [
            "Which number is prime?",
            "Which planet is largest?",
            "Which landmark stands on the Champ de Mars?",
            "What is {0} plus {item}? __import__('os')",
        ],
        "choices": [["4", "6", "7", "9"], '["Mars", "Jupiter", "Venus"]', None, None],
        "answer": ["C", "Jupiter", "Eiffel Tower", "an answer"],
    }
)


# ---------------------------------------------------------------------------------------------- the endpoint
@pytest.mark.parametrize(
    "reply", ["C", "c", "Answer: C", "(C)", "C.", "**C**", "The answer is C.", "I think it is C, not D", "C. 7"]
)
def test_multiple_choice_reply_forms_are_graded_right(server, reply):
    responder = EndpointResponder(make_client(server), ITEMS)
    server.script.append({"content": reply})
    assert responder("mc1") == 1.0
    (exchange,) = responder.log
    assert exchange == Exchange(
        item="mc1", prompt_hash=prompt_hash(responder.messages("mc1")), reply=reply, parsed="C", response=1.0
    )


@pytest.mark.parametrize(("reply", "parsed"), [("B", "B"), ("Answer: (D)", "D"), ("I am not sure.", None)])
def test_multiple_choice_wrong_or_unreadable_reply_scores_zero(server, reply, parsed):
    responder = EndpointResponder(make_client(server), ITEMS)
    server.script.append({"content": reply})
    assert responder("mc1") == 0.0
    assert (responder.log[0].parsed, responder.log[0].response) == (parsed, 0.0)


def test_answer_given_as_choice_text_is_keyed_to_its_letter(server):
    responder = EndpointResponder(make_client(server), ITEMS)
    server.script.extend([{"content": "B"}, {"content": "A"}])
    assert [responder("mc2"), responder("mc2")] == [1.0, 0.0]


def test_prompt_letters_the_choices_and_asks_for_the_letter_at_temperature_zero(server):
    responder = EndpointResponder(make_client(server), ITEMS, system_prompt="You are taking a test.")
    server.script.append({"content": "C"})
    responder("mc1")
    (body,) = server.bodies
    assert body["model"] == "sut-model"
    assert body["temperature"] == 0
    system, user = body["messages"]
    assert system == {"role": "system", "content": "You are taking a test."}
    assert user["role"] == "user"
    assert user["content"] == (
        "Which number is prime?\n\nA. 4\nB. 6\nC. 7\nD. 9\n\nAnswer with the letter of the correct choice only."
    )


def test_free_form_prompt_is_the_text_verbatim_with_a_short_answer_instruction(server):
    responder = EndpointResponder(make_client(server), ITEMS)
    server.script.append({"content": "nothing"})
    assert responder("free2") == 0.0
    content = server.bodies[0]["messages"][-1]["content"]
    assert content.startswith("What is {0} plus {item}? __import__('os')\n\n")  # sent as text, never formatted
    assert "short answer" in content
    assert "A. " not in content
    assert [m["role"] for m in server.bodies[0]["messages"]] == ["user"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Eiffel Tower", 1.0),
        ("  the eiffel   tower. ", 1.0),
        ("Answer: The Eiffel Tower!", 1.0),
        ("The answer is eiffel-tower", 0.0),  # "eiffeltower": the hyphen joins the words
        ("Eiffel", 0.0),
        ("The Eiffel Tower, in Paris", 0.0),
    ],
)
def test_free_form_normalised_exact_match(server, reply, expected):
    responder = EndpointResponder(make_client(server), ITEMS)
    server.script.append({"content": reply})
    assert responder("free1") == expected
    assert responder.log[0].parsed == normalise_answer(reply.removeprefix("Answer:").removeprefix("The answer is"))


def test_grader_overrides_the_grading_and_is_checked(server):
    seen: list[tuple[str, str]] = []

    def half(reply: str, row: pd.Series) -> float:
        seen.append((reply, row["item"]))
        return 0.5

    responder = EndpointResponder(make_client(server), ITEMS, grader=half)
    server.script.append({"content": "C"})
    assert responder("mc1") == 0.5
    assert seen == [("C", "mc1")]
    assert responder.log[0].parsed == "C"
    bad = EndpointResponder(make_client(server), ITEMS, grader=lambda reply, row: 2)
    server.script.append({"content": "C"})
    with pytest.raises(DataError, match=r"grader: returned 2 for item 'mc1'; a response must be in \[0, 1\]"):
        bad("mc1")


def test_unknown_item_raises_without_asking(server):
    responder = EndpointResponder(make_client(server), ITEMS)
    with pytest.raises(DataError, match=r"<items table>: unknown item 'nope'; the 4 items are mc1, mc2, free1, free2"):
        responder("nope")
    assert server.requests == []
    assert responder.log == []


def test_client_cache_answers_a_repeated_question(server, tmp_path):
    responder = EndpointResponder(make_client(server, cache_dir=tmp_path / "cache"), ITEMS)
    server.script.extend([{"content": "C"}, {"content": "A"}])
    assert [responder("mc1"), responder("mc1")] == [1.0, 1.0]  # the second reply comes from the cache
    assert len(server.requests) == 1
    assert len(responder.log) == 2


def test_parse_letter_reads_only_the_items_letters():
    assert parse_letter("I would say B", n_choices=4) == "B"
    assert parse_letter("I would say B") == "I"  # any capital counts when the number of choices is unknown
    assert parse_letter("Answer: E", n_choices=4) == "E"  # stated as the answer: graded (wrong), not dropped
    assert parse_letter("It's B's turn", n_choices=4) is None
    assert parse_letter("") is None


# -------------------------------------------------------------------------------------------- the items file
def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_csv(path, index=False)
    return path


def test_from_file_csv_jsonl_and_parquet_agree(server, tmp_path):
    client = make_client(server)
    csv_items = ITEMS.assign(choices=["4|6|7|9", '["Mars", "Jupiter", "Venus"]', None, None])
    from_csv = EndpointResponder.from_file(client, write_csv(tmp_path / "items.csv", csv_items))
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps({k: v for k, v in r.items() if v is not None}) for r in ITEMS.to_dict("records")) + "\n"
    )
    from_jsonl = EndpointResponder.from_file(client, jsonl)
    parquet = tmp_path / "items.parquet"
    ITEMS.assign(choices=[["4", "6", "7", "9"], ["Mars", "Jupiter", "Venus"], None, None]).to_parquet(parquet)
    from_parquet = EndpointResponder.from_file(client, parquet)
    for responder in (from_csv, from_jsonl, from_parquet):
        assert responder.item_ids == ("mc1", "mc2", "free1", "free2")
        assert responder.messages("mc1") == from_csv.messages("mc1")
        assert responder.messages("free1") == from_csv.messages("free1")
        assert responder.grade("mc2", "B") == 1.0
    assert from_csv.source == str(tmp_path / "items.csv")


def test_from_file_keeps_csv_answers_as_written(server, tmp_path):
    path = tmp_path / "numbers.csv"
    path.write_text("item,text,answer\n1,What is 7 / 2?,3.50\n2,What is 2 x 21?,42\n")
    responder = EndpointResponder.from_file(make_client(server), path)
    assert responder.item_ids == ("1", "2")
    assert responder.grade("1", "3.50") == 1.0
    assert responder.grade("1", "3.5") == 0.0
    assert responder.grade("2", "42") == 1.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("item,text\nq1,Hello?\n", r"items\.csv: missing column\(s\) \['answer'\]; the columns are \['item', 'text'\]"),
        ("item,text,answer\nq1,Hello?,hi\nq2,,hi\n", r"items\.csv line 3: column 'text' is empty \(item 'q2'\)"),
        ("item,text,answer\nq1,Hello?,hi\n,Bye?,bye\n", r"items\.csv: column 'item' is empty at line 3"),
        ("item,text,answer\nq1,Hello?,hi\nq1,Bye?,bye\n", r"items\.csv: item 'q1' appears twice \(line 2 and line 3\)"),
        (
            'item,text,choices,answer\nq1,Pick one,"[""x"", ",A\n',
            r"items\.csv line 2, column 'choices': 'choices' looks like a JSON list but does not parse",
        ),
        ("item,text,choices,answer\nq1,Pick one,x|x,A\n", r"items\.csv line 2, column 'choices': choices repeat"),
        (
            "item,text,choices,answer\nq1,Pick one,x|y|z,w\n",
            r"items\.csv line 2: answer 'w' is not among the choices \['x', 'y', 'z'\] \(nor one of the letters A-C\)",
        ),
        ("item,text,choices,answer\nq1,Pick one,x|y|z,D\n", r"items\.csv line 2: answer 'D' is not among"),
        ("item,text,answer\nq1,Hello?,\n", r"items\.csv line 2: column 'answer' is empty"),
        ("item,text,answer\nq1,Hello?,The\n", r"items\.csv line 2: answer 'The' is empty once normalised"),
        ("item,text,answer\n", r"items\.csv: no items"),
        ("", r"items\.csv: the file is empty"),
    ],
)
def test_items_file_errors_name_the_file_and_row(server, tmp_path, content, message):
    path = tmp_path / "items.csv"
    path.write_text(content)
    with pytest.raises(DataError, match=message):
        EndpointResponder.from_file(make_client(server), path)


def test_items_file_errors_jsonl_parquet_and_paths(server, tmp_path):
    client = make_client(server)
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_text('{"item": "q1", "text": "Hi?", "answer": "hi"}\n\n{"item": "q2", "text": "Pick", "choices": 3}\n')
    with pytest.raises(DataError, match=r"items\.jsonl line 3, column 'choices': 'choices' must be a list"):
        EndpointResponder.from_file(client, jsonl)
    parquet = tmp_path / "items.parquet"
    pd.DataFrame({"item": ["q1", "q2"], "text": ["Hi?", "   "], "answer": ["hi", "x"]}).to_parquet(parquet)
    with pytest.raises(DataError, match=r"items\.parquet row 1: column 'text' is empty \(item 'q2'\)"):
        EndpointResponder.from_file(client, parquet)
    with pytest.raises(DataError, match=r"nothing\.csv: no such file"):
        EndpointResponder.from_file(client, tmp_path / "nothing.csv")
    (tmp_path / "items.txt").write_text("x")
    with pytest.raises(DataError, match=r"items\.txt: unknown file type '\.txt'"):
        EndpointResponder.from_file(client, tmp_path / "items.txt")


def test_items_table_indexed_by_item_is_accepted(server):
    frame = pd.DataFrame({"text": ["Hi?"], "answer": ["hi"]}, index=pd.Index(["q1"], name="item"))
    responder = EndpointResponder(make_client(server), frame)
    assert responder.item_ids == ("q1",)
    assert responder.grade("q1", "Hi!") == 1.0
