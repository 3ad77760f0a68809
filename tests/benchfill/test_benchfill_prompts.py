"""The BenchFill prompt and the parsing of replies."""

from __future__ import annotations

import hashlib
import json

import pytest

from irtbayes.benchfill.llm import (
    ReplyError,
    build_messages,
    check_item,
    describe_difficulty,
    feedback_message,
    parse_reply,
    prompt_hash,
)
from irtbayes.benchfill.sources import ProposalRequest, SeedItem

SEEDS = (
    SeedItem("easy-1", "What is 3 + 4?", -0.62, -0.9, -0.3, answer="7"),
    SeedItem("mid-1", "What is 14 * 3?", 0.71, 0.5, 0.95, answer="42"),
    SeedItem("hard-1", "What is 987 * 654?", 1.84, 1.5, 2.2, answer="645498"),
)


def request(**options):
    settings = {
        "aim_lo": 0.5,
        "aim_hi": 1.0,
        "aim_bin": 6,
        "n": 5,
        "benchmark": "arith",
        "domain": "math",
        "seeds": SEEDS,
    } | options
    return ProposalRequest(**settings)


def test_prompt_shows_seeds_relative_to_the_aim():
    system, user = build_messages(request())
    assert system["role"] == "system" and user["role"] == "user"
    text = user["content"]
    assert "between 0.50 and 1.00" in text and "hard" in text, text
    assert "[easy-1] difficulty -0.62 (90% interval -0.90 to -0.30): easier than the aim" in text
    assert "[mid-1] difficulty 0.71 (90% interval 0.50 to 0.95): inside the aim" in text
    assert "[hard-1] difficulty 1.84 (90% interval 1.50 to 2.20): harder than the aim" in text
    assert "Question: What is 987 * 654?\nAnswer: 645498" in text
    assert "Write 5 new items" in text and "benchmark 'arith' in domain 'math'" in text
    assert '{"items": [{"text":' in text and '"seed_item"' in text
    assert 'Leave out "choices"' in text


def test_prompt_for_multiple_choice_asks_for_exact_choices():
    seeds = (SeedItem("mc-1", "Capital of Peru?", 0.6, 0.3, 0.9, answer="Lima", choices=("Quito", "Lima")),)
    text = build_messages(request(n_choices=4, seeds=seeds))[1]["content"]
    assert 'Choices: ["Quito", "Lima"]' in text
    assert "exactly 4 distinct options" in text and '"choices": ["<option>", ...]' in text


def test_prompt_without_seeds_and_custom_system():
    messages = build_messages(request(seeds=()), n=2, batch=1, n_batches=3, system="Be brief.")
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert "Write 2 new items" in messages[1]["content"] and "request 2 of 3" in messages[1]["content"]
    assert "Existing items" not in messages[1]["content"]


def test_aim_in_words():
    assert describe_difficulty(-3.0, -2.0).startswith("very easy:")
    assert describe_difficulty(-0.25, 0.25).startswith("medium:")
    assert describe_difficulty(0.5, 1.5).startswith("hard:"), "the upper edge itself belongs to the next band"
    assert describe_difficulty(1.0, 2.0).startswith("hard to very hard:")
    text = describe_difficulty(0.0, 1.0)
    assert "50% to 84%" in text, text


def test_prompt_hash_is_sha256_of_the_exact_messages():
    messages = build_messages(request())
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert prompt_hash(messages) == hashlib.sha256(canonical.encode()).hexdigest()
    assert prompt_hash(messages) == prompt_hash(build_messages(request())), "the prompt must be deterministic"
    assert prompt_hash(messages) != prompt_hash(build_messages(request(n=4)))


GOOD = {"items": [{"text": "What is 13 * 17?", "answer": "221", "seed_item": "mid-1"}]}


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(GOOD),
        "  \n" + json.dumps(GOOD, indent=2) + "\n",
        "```json\n" + json.dumps(GOOD) + "\n```",
        "Here are the items:\n```\n" + json.dumps(GOOD) + "\n```\nGood luck!",
    ],
)
def test_parse_accepts_json_bare_or_fenced(content):
    assert parse_reply(content) == GOOD["items"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        (None, "empty"),
        ("Sure, here you go: 13 * 17 = 221", "not JSON"),
        ('```json\n{"items": [\n```', "inside the code fence does not parse"),
        ("[1, 2]", r'expected an object \{"items": \[...\]\}, got a JSON list'),
        ('{"questions": []}', r"got an object with keys \['questions'\]"),
        ('{"items": []}', "non-empty list"),
        ('{"items": "none"}', "non-empty list"),
    ],
)
def test_parse_rejects_unusable_replies(content, message):
    with pytest.raises(ReplyError, match=message):
        parse_reply(content)


@pytest.mark.parametrize(
    ("record", "n_choices", "problem"),
    [
        ({"text": "Q", "answer": "A"}, None, None),
        ({"text": "Q", "answer": 0}, None, None),
        ({"text": "Q"}, None, "item 2 has no 'answer'"),
        ({"answer": "A", "text": ""}, None, "item 2 has no 'text'"),
        ({}, None, "item 2 has no 'text' and no 'answer'"),
        ("Q: A", None, "item 2 is a JSON str, not an object"),
        ({"text": "Q", "answer": "A", "choices": ["A", "B"]}, 4, "item 2 has 2 choices, 4 were asked for"),
        ({"text": "Q", "answer": "A"}, 4, "item 2 has no choices, 4 were asked for"),
    ],
)
def test_item_shape(record, n_choices, problem):
    assert check_item(record, index=2, n_choices=n_choices) == problem


def test_feedback_names_the_problem():
    message = feedback_message("the reply is not JSON (Expecting value at line 1, column 1)")
    assert message["role"] == "user"
    assert "could not be used: the reply is not JSON" in message["content"]
