"""ChatClient and LLMSource against a real OpenAI-compatible HTTP server on 127.0.0.1 (started here)."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI

from irtbayes.benchfill.llm import ChatAPIError, ChatClient, LLMSource, _retry_after, prompt_hash
from irtbayes.benchfill.sources import ProposalRequest, SeedItem

KEY_ENV = "IRTBAYES_TEST_API_KEY"
SECRET = "sk-irtbayes-SECRET-7f3a9c"


@pytest.fixture
def server():
    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture
def secret(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def make_client(server: FakeOpenAI, **options: Any) -> ChatClient:
    # a timeout long enough that a loaded machine (the test suite on 2 cores) never retries a prompt reply
    settings = {"api_key_env": KEY_ENV, "timeout": 5.0, "max_retries": 3, "backoff": 0.001, "max_backoff": 0.01}
    settings.update(options)
    return ChatClient(server.url, "gen-model", **settings)


MESSAGES = [{"role": "user", "content": "Say ok."}]


# ------------------------------------------------------------------------------------------ the client
def test_request_is_an_openai_chat_completion_with_bearer_key(server, secret):
    client = make_client(server)
    assert client.complete(MESSAGES, temperature=0.3) == "ok"
    (request,) = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "gen-model", "messages": MESSAGES, "temperature": 0.3}
    assert request["headers"]["Authorization"] == f"Bearer {secret}"
    assert request["headers"]["Content-Type"] == "application/json"


def test_no_key_set_sends_no_authorization(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    make_client(server).complete(MESSAGES)
    assert "Authorization" not in server.requests[0]["headers"]


def test_key_is_read_at_call_time(server, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    client = make_client(server)
    monkeypatch.setenv(KEY_ENV, "sk-later-key")
    client.complete(MESSAGES)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-later-key"


def test_slow_reply_times_out_then_retry_succeeds(server, secret):
    server.script.extend([{"delay": 1.5, "content": "too late"}, {"content": "in time"}])
    client = make_client(server, timeout=0.2)
    start = time.monotonic()
    assert client.complete(MESSAGES) == "in time"
    elapsed = time.monotonic() - start
    assert len(server.requests) == 2 and client.n_requests == 2, f"{len(server.requests)} requests"
    assert elapsed < 1.2, f"the timeout of 0.2 s did not cut the 1.5 s reply short: {elapsed:.2f} s"


def test_server_error_then_success(server, secret):
    server.script.append({"status": 500})
    client = make_client(server)
    assert client.complete(MESSAGES) == "ok"
    assert len(server.requests) == 2


def test_rate_limit_honours_retry_after(server, secret):
    server.script.append({"status": 429, "headers": {"Retry-After": "2"}})
    client = make_client(server)
    waits: list[float] = []
    client._sleep = waits.append
    assert client.complete(MESSAGES) == "ok"
    assert waits == [2.0], f"waited {waits} instead of the 2 s the server asked for"
    assert len(server.requests) == 2


def test_backoff_grows_exponentially_with_jitter(server, secret):
    server.script.extend([{"status": 503}, {"status": 502}, {"status": 500}])
    client = make_client(server, backoff=0.1, max_backoff=0.3)
    waits: list[float] = []
    client._sleep = waits.append
    assert client.complete(MESSAGES) == "ok"
    assert len(waits) == 3
    for wait, base in zip(waits, [0.1, 0.2, 0.3], strict=True):
        assert 0.5 * base <= wait < base, f"waits {waits}: expected [0.5, 1) times {base}"


def test_retry_after_parses_seconds_and_dates():
    assert _retry_after("3") == 3.0
    assert _retry_after("0.5") == 0.5
    assert _retry_after(None) is None
    assert _retry_after("soon") is None
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait
    future = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= _retry_after(future) <= 31


def test_client_error_is_not_retried_and_says_why(server, secret):
    server.script.append({"status": 400, "body": {"error": {"message": "model 'gen-model' does not exist"}}})
    client = make_client(server)
    with pytest.raises(ChatAPIError, match="does not exist") as info:
        client.complete(MESSAGES)
    assert info.value.status == 400
    assert "400" in str(info.value)
    assert len(server.requests) == 1, "a 400 must not be retried"


def test_retries_run_out(server, secret):
    server.default = {"status": 503}
    client = make_client(server, max_retries=2)
    with pytest.raises(ChatAPIError, match=r"gave up after 3 attempts.*503"):
        client.complete(MESSAGES)
    assert len(server.requests) == 3


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "m", api_key_env=None, timeout=0.2, max_retries=1, backoff=0)
    with pytest.raises(ChatAPIError, match=r"gave up after 2 attempts.*connection failed"):
        client.complete(MESSAGES)
    assert client.n_requests == 2


def test_response_without_choices_is_an_error(server, secret):
    server.script.append({"status": 200, "content": None})
    client = make_client(server)
    with pytest.raises(ChatAPIError, match="no text content"):
        client.complete(MESSAGES)


def test_cache_makes_a_rerun_free(server, secret, tmp_path):
    cache = tmp_path / "cache"
    first = make_client(server, cache_dir=cache)
    conversations = [[{"role": "user", "content": f"question {k}"}] for k in range(3)]
    server.echo = True
    replies = first.complete_many(conversations)
    assert replies == ["question 0", "question 1", "question 2"]
    assert len(server.requests) == 3
    second = make_client(server, cache_dir=cache)
    assert second.complete_many(conversations) == replies
    assert len(server.requests) == 3 and second.n_requests == 0, "the rerun made HTTP requests"
    assert second.n_cache_hits == 3
    # a different parameter is a different request
    second.complete(conversations[0], temperature=0.1)
    assert len(server.requests) == 4
    files = sorted(cache.iterdir())
    assert len(files) == 4 and all(f.suffix == ".json" for f in files), [f.name for f in files]
    entry = json.loads(files[0].read_text())
    assert entry["key"] == files[0].stem and entry["request"]["model"] == "gen-model"


def test_corrupt_cache_entry_is_asked_again(server, secret, tmp_path):
    client = make_client(server, cache_dir=tmp_path)
    client.complete(MESSAGES)
    path = tmp_path / f"{client.cache_key(MESSAGES)}.json"
    path.write_text('{"key": "trunc')
    assert make_client(server, cache_dir=tmp_path).complete(MESSAGES) == "ok"
    assert len(server.requests) == 2
    assert json.loads(path.read_text())["response"]["choices"][0]["message"]["content"] == "ok"


def test_concurrency_limit(server, secret):
    server.echo = True
    server.hold = 0.1
    client = make_client(server, concurrency=3, timeout=2.0)
    conversations = [[{"role": "user", "content": f"q{k}"}] for k in range(9)]
    replies = client.complete_many(conversations)
    assert replies == [f"q{k}" for k in range(9)], "replies are out of order"
    assert 2 <= server.max_active <= 3, f"{server.max_active} requests were in flight at once (limit 3)"


def test_concurrency_limit_holds_across_threads(server, secret):
    server.hold = 0.1
    client = make_client(server, concurrency=2, timeout=2.0)
    threads = [
        threading.Thread(target=client.complete, args=([{"role": "user", "content": f"t{k}"}],)) for k in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(server.requests) == 6
    assert server.max_active <= 2, f"{server.max_active} requests in flight with concurrency=2"


def test_complete_many_raises_the_first_failure_after_the_rest(server, secret, tmp_path):
    server.script.extend([{"status": 404, "body": {"error": {"message": "no route"}}}])
    client = make_client(server, concurrency=1, cache_dir=tmp_path)
    conversations = [[{"role": "user", "content": f"q{k}"}] for k in range(3)]
    with pytest.raises(ChatAPIError, match="404"):
        client.complete_many(conversations)
    assert len(server.requests) == 3
    assert len(list(tmp_path.iterdir())) == 2, "the successful replies should be cached"


def test_key_never_leaks(server, secret, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    server.script.extend(
        [
            {"status": 500, "body": {"error": {"message": f"upstream saw Bearer {SECRET}"}}},
            {"content": "fine"},
            {"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {SECRET}"}}},
        ]
    )
    client = make_client(server, cache_dir=tmp_path)
    assert client.complete(MESSAGES) == "fine"
    with pytest.raises(ChatAPIError) as info:
        client.complete([{"role": "user", "content": "again"}])
    message = str(info.value)
    assert "401" in message and "Incorrect API key" in message and "***" in message
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}", "the key was not sent"
    texts = [record.getMessage() for record in caplog.records] + [message, repr(info.value), repr(client)]
    assert caplog.records, "expected the retry to be logged"
    leaks = [t for t in texts if SECRET in t]
    assert not leaks, f"the API key appears in {leaks}"
    shown = "".join(traceback.format_exception(info.value))
    assert SECRET not in shown, "the API key appears in the printed traceback"
    for path in tmp_path.rglob("*"):
        assert SECRET not in path.read_text(), f"the API key is in the cache file {path.name}"
    assert not list(tmp_path.glob(".*.tmp")), "a temporary cache file was left behind"


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="http"):
        ChatClient("ftp://x", "m")
    with pytest.raises(ValueError, match="concurrency"):
        ChatClient("http://127.0.0.1:1/v1", "m", concurrency=0)


# ------------------------------------------------------------------------------------------ LLMSource
def reply(*items: dict[str, Any]) -> str:
    return json.dumps({"items": list(items)})


ITEM_A = {"text": "What is 17 * 23?", "answer": "391", "seed_item": "q1"}
ITEM_B = {"text": "What is 19 * 27?", "answer": "513", "seed_item": None}


def request(n: int = 2, **options: Any) -> ProposalRequest:
    seeds = (
        SeedItem("q1", "What is 7 * 3?", -0.8, -1.1, -0.5, answer="21"),
        SeedItem("q2", "What is 123 * 456?", 1.6, 1.2, 2.0, answer="56088"),
    )
    return ProposalRequest(aim_lo=0.0, aim_hi=0.5, aim_bin=4, n=n, benchmark="arith", seeds=seeds, **options)


def test_llm_source_builds_candidates(server, secret):
    server.default = {"content": reply(ITEM_A, ITEM_B)}
    source = LLMSource(make_client(server), temperature=0.4)
    candidates = source.propose(request())
    assert [c.text for c in candidates] == [ITEM_A["text"], ITEM_B["text"]]
    first = candidates[0]
    assert first.candidate_id.startswith("bf-") and len(first.candidate_id) == 13
    assert first.source == "llm:gen-model" and first.benchmark == "arith" and first.seed_item == "q1"
    sent = server.requests[0]["body"]
    assert sent["temperature"] == 0.4
    assert first.prompt_hash == prompt_hash(sent["messages"]), "prompt_hash is not the hash of the messages sent"
    assert source.rejections == []


def test_malformed_reply_is_retried_with_the_error_fed_back(server, secret):
    server.script.append({"content": "Sure! Here are two items: 17*23 and 19*27."})
    server.default = {"content": reply(ITEM_A, ITEM_B)}
    source = LLMSource(make_client(server))
    candidates = source.propose(request())
    assert len(candidates) == 2 and source.rejections == []
    assert len(server.requests) == 2
    second = server.requests[1]["body"]["messages"]
    assert second[-2] == {"role": "assistant", "content": "Sure! Here are two items: 17*23 and 19*27."}
    assert second[-1]["role"] == "user" and "not JSON" in second[-1]["content"], second[-1]["content"]
    assert candidates[0].prompt_hash == prompt_hash(second)


def test_fenced_json_is_accepted(server, secret):
    server.default = {"content": "Here you go:\n```json\n" + reply(ITEM_A) + "\n```\n"}
    candidates = LLMSource(make_client(server)).propose(request(n=1))
    assert [c.answer for c in candidates] == ["391"]
    assert len(server.requests) == 1


def test_missing_answer_is_retried_then_that_item_rejected(server, secret, caplog):
    caplog.set_level(logging.WARNING)
    server.default = {"content": reply(ITEM_A, {"text": "What is 31 * 29?"})}
    source = LLMSource(make_client(server), max_attempts=2)
    candidates = source.propose(request())
    assert [c.text for c in candidates] == [ITEM_A["text"]]
    assert len(server.requests) == 2, "the reply with a missing answer should have been retried once"
    assert "item 1 has no 'answer'" in server.requests[1]["body"]["messages"][-1]["content"]
    (rejection,) = source.rejections
    assert "no 'answer'" in rejection.reason and rejection.record == {"text": "What is 31 * 29?"}
    assert rejection.aim_bin == 4
    assert any("no 'answer'" in r.getMessage() for r in caplog.records), "the rejection was not logged"


def test_hopeless_replies_are_rejected_with_a_reason(server, secret):
    server.default = {"content": '{"questions": []}'}
    source = LLMSource(make_client(server), max_attempts=3)
    proposal = source.generate(request())
    assert proposal.candidates == []
    (rejection,) = proposal.rejections
    assert "no usable reply after 3 attempts" in rejection.reason and '"items"' in rejection.reason
    assert rejection.record == {"reply": '{"questions": []}'}
    assert source.rejections == proposal.rejections
    assert len(server.requests) == 3


def test_multiple_choice_request(server, secret):
    item = {"text": "Which is prime?", "choices": ["21", "27", "29", "33"], "answer": "C"}
    server.script.append({"content": reply({**item, "choices": ["21", "29"]})})
    server.default = {"content": reply(item)}
    candidates = LLMSource(make_client(server)).propose(request(n=1, n_choices=4))
    (candidate,) = candidates
    assert candidate.choices == ("21", "27", "29", "33") and candidate.answer == "29"
    assert "2 choices, 4 were asked for" in server.requests[1]["body"]["messages"][-1]["content"]


def test_copies_and_duplicates_are_rejected(server, secret):
    copy = {"text": "What is  7 * 3?", "answer": "21"}
    server.default = {"content": reply(ITEM_A, ITEM_A, copy)}
    source = LLMSource(make_client(server))
    candidates = source.propose(request(n=3))
    assert [c.text for c in candidates] == [ITEM_A["text"]]
    reasons = sorted(r.reason for r in source.rejections)
    assert len(reasons) == 2 and "duplicate" in reasons[0] and "seed item 'q1'" in reasons[1], reasons


def test_surplus_items_are_rejected_not_dropped(server, secret):
    server.default = {"content": reply(ITEM_A, ITEM_B)}
    source = LLMSource(make_client(server))
    candidates = source.propose(request(n=1))
    assert [c.text for c in candidates] == [ITEM_A["text"]]
    (rejection,) = source.rejections
    assert rejection.reason == "surplus item (1 asked for)" and rejection.record["text"] == ITEM_B["text"]
    assert len(server.requests) == 1


def test_batches_are_separate_prompts(server, secret):
    server.default = {"content": reply(ITEM_A, ITEM_B)}
    source = LLMSource(make_client(server), n_per_call=2)
    source.propose(request(n=5))
    prompts = sorted(r["body"]["messages"][1]["content"] for r in server.requests)
    assert len(prompts) == 3 and len(set(prompts)) == 3
    assert sum("Write 1 new items" in p for p in prompts) == 1
    assert all("request" in p and "of 3" in p for p in prompts)


def test_llm_rerun_makes_no_requests(server, secret, tmp_path):
    server.script.append({"content": "not json"})
    server.default = {"content": reply(ITEM_A, ITEM_B)}
    first = LLMSource(make_client(server, cache_dir=tmp_path)).propose(request())
    assert len(server.requests) == 2
    server.default = {"content": reply(ITEM_B)}  # a live server would answer differently now
    again = LLMSource(make_client(server, cache_dir=tmp_path)).propose(request())
    assert len(server.requests) == 2, "the rerun made HTTP requests"
    assert again == first


def test_llm_source_never_leaks_the_key(server, secret, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    server.script.extend([{"status": 503}, {"content": "nope"}])
    server.default = {"content": reply(ITEM_A)}
    source = LLMSource(make_client(server, cache_dir=tmp_path))
    candidates = source.propose(request(n=1))
    assert candidates
    everything = [r.getMessage() for r in caplog.records] + [repr(c) for c in candidates] + [repr(source.rejections)]
    assert not [t for t in everything if SECRET in t]
    assert all(SECRET not in p.read_text() for p in Path(tmp_path).iterdir())
