"""A fake model API on 127.0.0.1 for driving real agent CLIs headless: Anthropic's Messages
API (`POST /v1/messages`, what Claude Code speaks through ANTHROPIC_BASE_URL) and OpenAI's
Responses API (`POST /v1/responses`, what Codex speaks through a model provider's base_url),
both streamed as server-sent events the way the real services send them.

The fake plays a model that uses minionsd's tools: on a request that offers the tools named in
`wanted` (matched on the end of the tool name, since each client prefixes MCP tools its own
way) and carries no tool result yet, it answers with one tool call per wanted tool; once tool
results come back (or when no wanted tool is offered) it answers with plain text. Every request
is recorded (`requests`), so a test can read exactly what the client showed the model.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINAL_TEXT = "Done: I read the team's memory."
CALL = "mn"  # in the ids of the wanted tool calls
SEARCH = "ts"  # in the id of a tool search call


@dataclass
class Seen:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def api(self) -> str:
        return "responses" if self.path.split("?")[0].endswith("/responses") else "messages"

    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names = []
        for tool in tools or []:
            if isinstance(tool, dict):
                name = tool.get("name") or (tool.get("function") or {}).get("name")
                if isinstance(name, str):
                    names.append(name)
                for inner in tool.get("tools") or []:  # a namespace of tools
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        names.append(f"{tool.get('name')}.{inner['name']}")
        return names

    def text(self) -> str:
        """Everything in the request the model would read, as one JSON text."""
        return json.dumps(self.body, ensure_ascii=False)

    def tool_result_ids(self) -> list[str]:
        """The call ids of the tool results the request carries."""
        ids: list[str] = []
        if not isinstance(self.body, dict):
            return ids
        if self.api == "responses":
            return [str(item.get("call_id")) for item in self.body.get("input") or []
                    if isinstance(item, dict) and str(item.get("type", "")).endswith("_output")]
        for message in self.body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    ids.append(str(block.get("tool_use_id")))
        return ids

    def tool_results(self) -> list[str]:
        """The text of every tool result the request carries, as the model sees it."""
        found: list[str] = []
        if not isinstance(self.body, dict):
            return found
        if self.api == "responses":
            for item in self.body.get("input") or []:
                if isinstance(item, dict) and str(item.get("type", "")).endswith("_output"):
                    found.append(_flatten(item.get("output")))
            return found
        for message in self.body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(_flatten(block.get("content")))
        return found


def _flatten(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_flatten(v) for v in value)
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return value["text"]
        if "content" in value:
            return _flatten(value["content"])
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else json.dumps(value)


def _function_call(suffix: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A Responses API function call; `namespace.tool` names a tool of a namespace (how Codex
    offers an MCP server's tools)."""
    item = {"type": "function_call", "id": f"fc_{suffix}", "call_id": f"call_{suffix}",
            "name": name, "arguments": json.dumps(args), "status": "completed"}
    namespace, dot, tool = name.rpartition(".")
    if dot:
        item |= {"namespace": namespace, "name": tool}
    return item


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, payload: bytes, kind: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", "req_fake")
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass

    def do_GET(self) -> None:
        self.server.fake.record(Seen(self.path, dict(self.headers.items()), None))
        if self.path.split("?")[0].endswith("/models"):
            self._reply(200, json.dumps({"data": [], "models": []}).encode())
        else:
            self._reply(404, b'{"error": {"type": "not_found_error", "message": "no"}}')

    def do_HEAD(self) -> None:
        self._reply(200, b"")

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.server.fake.record(seen)
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            self._reply(200, b'{"input_tokens": 100}')
        elif path.endswith("/messages"):
            self._messages(seen)
        elif path.endswith("/responses"):
            self._responses(seen)
        else:
            self._reply(404, b'{"error": {"type": "not_found_error", "message": "no"}}')

    # --- Anthropic Messages ---------------------------------------------------------------

    def _messages(self, seen: Seen) -> None:
        body = seen.body if isinstance(seen.body, dict) else {}
        calls = self.server.fake.calls_for(seen)
        model = body.get("model", "fake")
        usage = {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0}
        blocks: list[dict[str, Any]] = (
            [{"type": "tool_use", "id": f"toolu_{kind}{i:02d}", "name": name, "input": args}
             for i, (kind, name, args) in enumerate(calls)] if calls
            else [{"type": "text", "text": FINAL_TEXT}])
        stop = "tool_use" if calls else "end_turn"
        if not body.get("stream"):
            self._reply(200, json.dumps({"id": "msg_fake", "type": "message",
                                         "role": "assistant", "model": model,
                                         "content": blocks, "stop_reason": stop,
                                         "stop_sequence": None, "usage": usage}).encode())
            return
        events = [_sse("message_start", {"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"],
                         "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [_sse("content_block_start", {"type": "content_block_start",
                                                    "index": index, "content_block": start}),
                       _sse("content_block_delta", {"type": "content_block_delta",
                                                    "index": index, "delta": delta}),
                       _sse("content_block_stop", {"type": "content_block_stop",
                                                   "index": index})]
        events += [_sse("message_delta", {"type": "message_delta",
                                          "delta": {"stop_reason": stop, "stop_sequence": None},
                                          "usage": {"output_tokens": 10}}),
                   _sse("message_stop", {"type": "message_stop"})]
        self._reply(200, b"".join(events), "text/event-stream")

    # --- OpenAI Responses -----------------------------------------------------------------

    def _responses(self, seen: Seen) -> None:
        calls = self.server.fake.calls_for(seen)
        items: list[dict[str, Any]] = (
            [_function_call(f"{kind}{i:02d}", name, args)
             for i, (kind, name, args) in enumerate(calls)] if calls
            else [{"type": "message", "id": "msg_fake", "role": "assistant",
                   "status": "completed",
                   "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]}])
        base = {"id": "resp_fake", "object": "response", "created_at": 0, "model": "fake",
                "status": "in_progress", "output": []}
        events = [_sse("response.created", {"type": "response.created", "response": base})]
        for index, item in enumerate(items):
            events += [_sse("response.output_item.added", {
                           "type": "response.output_item.added", "output_index": index,
                           "item": item}),
                       _sse("response.output_item.done", {
                           "type": "response.output_item.done", "output_index": index,
                           "item": item})]
        done = base | {"status": "completed", "output": items, "usage": {
            "input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 110}}
        events.append(_sse("response.completed", {"type": "response.completed",
                                                  "response": done}))
        self._reply(200, b"".join(events), "text/event-stream")


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, fake: FakeModelApi) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class FakeModelApi:
    """The running fake; `wanted` maps a tool name's ending to the arguments to call it with."""

    def __init__(self, wanted: dict[str, dict[str, Any]]) -> None:
        self.wanted = wanted
        self._lock = threading.Lock()
        self._requests: list[Seen] = []
        self._server = _Server(self)
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, name="fake-model-api")
        self._thread.start()
        self._closed = False

    def record(self, seen: Seen) -> None:
        with self._lock:
            self._requests.append(seen)

    @property
    def requests(self) -> list[Seen]:
        with self._lock:
            return list(self._requests)

    def calls_for(self, seen: Seen) -> list[tuple[str, str, dict[str, Any]]]:
        """The tool calls (id prefix, name, arguments) to answer `seen` with: every wanted tool
        it offers; when the client defers its MCP tools behind a tool search (Claude Code lists
        their names and offers `ToolSearch`), a search that loads them first. Once results of
        the wanted calls are back, the turn ends with text."""
        answered = seen.tool_result_ids()
        if any(CALL in i for i in answered):
            return []
        offered = seen.tool_names()
        calls = []
        for ending, args in self.wanted.items():
            match = next((n for n in offered if n.endswith(ending)), None)
            if match is not None:
                calls.append((CALL, match, args))
        if calls or any(SEARCH in i for i in answered) or "ToolSearch" not in offered:
            return calls
        text = seen.text()
        deferred = sorted({m.group(0) for ending in self.wanted
                           for m in re.finditer(r"mcp__[A-Za-z0-9_-]+?__" + re.escape(ending)
                                                + r"\b", text)})
        return [(SEARCH, "ToolSearch", {"query": "select:" + ",".join(deferred)})] if deferred \
            else []

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> FakeModelApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def running(wanted: dict[str, dict[str, Any]]) -> Iterator[FakeModelApi]:
    fake = FakeModelApi(wanted)
    try:
        yield fake
    finally:
        fake.close()
