"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the tests of every client of one
(BenchFill's LLM source, the evaluation's endpoint responder, the commands that take ``--llm`` or ``--endpoint``).

Test modules import it as ``from fake_openai import FakeOpenAI`` (``tests/`` is on ``sys.path``: its
``conftest.py`` puts it there).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAI"]


class FakeOpenAI:
    """A scripted chat-completions server: each request takes the next action, else the default one.

    An action is a dict with optional ``delay`` (seconds before answering), ``status`` (default 200),
    ``headers``, ``body`` (a JSON-able error body) or ``content`` (the reply text of a 200).
    """

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.default: dict[str, Any] = {"content": "ok"}
        self.echo = False
        self.hold = 0.0
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with fake.lock:
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    fake.active += 1
                    counted = True
                    fake.max_active = max(fake.max_active, fake.active)
                    action = fake.script.popleft() if fake.script else dict(fake.default)
                try:
                    time.sleep(fake.hold + action.get("delay", 0.0))
                    status = action.get("status", 200)
                    if status == 200:
                        content = body["messages"][-1]["content"] if fake.echo else action["content"]
                        payload = {
                            "id": "chatcmpl-1",
                            "object": "chat.completion",
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop",
                                }
                            ],
                        }
                    else:
                        payload = action.get("body", {"error": {"message": f"status {status}"}})
                    raw = json.dumps(payload).encode()
                    # count the request as finished before the reply leaves: once the client has the reply it
                    # may start its next request, and that must not race this decrement
                    with fake.lock:
                        fake.active -= 1
                        counted = False
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for name, value in action.get("headers", {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    if counted:
                        with fake.lock:
                            fake.active -= 1

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the requests so far, in order."""
        return [r["body"] for r in self.requests]
