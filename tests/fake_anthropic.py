"""A fake Anthropic Messages API on 127.0.0.1 for tests: real HTTP, scripted answers.

The real `anthropic` SDK talks to it through `base_url`, so tests exercise the SDK's own
request building, retries, timeouts and error mapping. Each test scripts the server:

    server = start_fake_anthropic()            # or use the `fake_anthropic` fixture
    server.set_mode("text", text="### 2026-05-07: Title\\n...")
    server.set_mode("error", status=500)       # every call fails (SDK retries are fast)
    server.set_mode("hang", seconds=5)         # answer only after the client gave up
    server.set_mode("junk")                    # 200 with a body that is not JSON
    server.push("error", status=529)           # one-shot answer used before the mode
    server.requests                            # what the server received, in order
    server.close()                             # idempotent; joins every thread

Both auth styles are accepted (`x-api-key` and `Authorization: Bearer`, which SDK 2.x sends);
`api_key=` makes the server demand that exact key.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MODES = ("text", "error", "hang", "junk", "raw")


@dataclass
class Reply:
    """One scripted answer: a mode plus its options."""

    mode: str = "text"
    text: str = "### 2026-01-01: Fake digest\n**By:** Engine (LLM-consolidated)\n\nok."
    status: int = 500
    seconds: float = 30.0
    body: bytes = b"this is not json {"
    content: list[dict[str, Any]] | None = None


@dataclass
class Received:
    """A request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def prompt(self) -> str:
        """The text of the first user message (how the SDK sent `messages`)."""
        content = self.body["messages"][0]["content"]
        if isinstance(content, str):
            return content
        return "".join(block.get("text", "") for block in content)


@dataclass
class _State:
    default: Reply = field(default_factory=Reply)
    queue: deque[Reply] = field(default_factory=deque)
    requests: list[Received] = field(default_factory=list)
    api_key: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    release: threading.Event = field(default_factory=threading.Event)


def _message(reply: Reply, model: str) -> dict[str, Any]:
    content = reply.content if reply.content is not None else [{"type": "text", "text": reply.text}]
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _error(status: int, kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_fake")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the client gave up (timeout); nothing left to tell it

    def _authorised(self) -> bool:
        given = self.headers.get("x-api-key") or ""
        bearer = self.headers.get("authorization") or ""
        if bearer.lower().startswith("bearer "):
            given = given or bearer[7:].strip()
        wanted = self.server.state.api_key
        return bool(given) and (wanted is None or given == wanted)

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        with state.lock:
            state.requests.append(Received("POST", self.path, headers, body))
            reply = state.queue.popleft() if state.queue else state.default
        if self.path.split("?")[0] != "/v1/messages":
            self._send(404, json.dumps(_error(404, "not_found_error", self.path)).encode())
        elif not self._authorised():
            self._send(401, json.dumps(_error(401, "authentication_error", "bad key")).encode())
        else:
            model = body.get("model", "fake") if isinstance(body, dict) else "fake"
            self._answer(reply, model)

    def _answer(self, reply: Reply, model: str) -> None:
        if reply.mode == "error":
            payload = json.dumps(_error(reply.status, "api_error", "scripted failure")).encode()
            # A tiny retry-after keeps the SDK's retries from sleeping for seconds.
            self._send(reply.status, payload, {"retry-after-ms": "1"})
            return
        if reply.mode in ("junk", "raw"):
            self._send(200, reply.body)
            return
        if reply.mode == "hang":
            self.server.state.release.wait(reply.seconds)
        self._send(200, json.dumps(_message(reply, model)).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins handler threads: no leaks between tests
    block_on_close = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class FakeAnthropic:
    """Handle on a running fake server; see the module docstring."""

    def __init__(self, api_key: str | None = None) -> None:
        self._state = _State(api_key=api_key)
        self._server = _Server(self._state)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-anthropic",
        )
        self._thread.start()
        self._closed = False

    @property
    def requests(self) -> list[Received]:
        with self._state.lock:
            return list(self._state.requests)

    def set_mode(self, mode: str, **options: Any) -> None:
        """Answer every later request this way (until changed)."""
        reply = self._reply(mode, options)
        with self._state.lock:
            self._state.default = reply

    def push(self, mode: str, **options: Any) -> None:
        """Answer the next request this way once, before falling back to the mode."""
        reply = self._reply(mode, options)
        with self._state.lock:
            self._state.queue.append(reply)

    @staticmethod
    def _reply(mode: str, options: dict[str, Any]) -> Reply:
        if mode not in MODES:
            raise ValueError(f"unknown fake mode {mode!r}; use one of {', '.join(MODES)}")
        return Reply(mode=mode, **options)

    def close(self) -> None:
        """Stop serving, wake hanging handlers and join every thread."""
        if self._closed:
            return
        self._closed = True
        self._state.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeAnthropic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_fake_anthropic(api_key: str | None = None) -> FakeAnthropic:
    """Start a fake Messages API on a free loopback port."""
    return FakeAnthropic(api_key=api_key)


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A running fake Anthropic server, closed after the test."""
    server = start_fake_anthropic()
    try:
        yield server
    finally:
        server.close()
