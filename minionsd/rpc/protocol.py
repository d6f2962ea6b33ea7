"""JSON-RPC 2.0 envelopes: parsing, validation, dispatch and error shaping. No sockets here.

Params are bound to the handler's signature *before* the call, so a TypeError raised inside
a handler is a bug (reported as -32603 and logged), never mistaken for invalid params. No
traceback is ever put on the wire.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from minionsd.errors import MinionsError

log = structlog.get_logger()

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

Handler = Callable[..., Awaitable[Any]]


def dumps(message: Any) -> bytes:
    """Compact JSON, one line: json escapes newlines inside strings, so framing is safe."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def error_response(request_id: Any, code: int, message: str, detail: str,
                   **extra: Any) -> dict[str, Any]:
    data = {"detail": detail} | {k: v for k, v in extra.items() if v is not None}
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": code, "message": message, "data": data}}


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


class Dispatcher:
    """Holds the method table and turns one decoded message into zero or one response."""

    def __init__(self, methods: Mapping[str, Handler]) -> None:
        self.methods = dict(methods)
        self._signatures = {name: inspect.signature(fn) for name, fn in self.methods.items()}

    async def handle_bytes(self, line: bytes) -> bytes | None:
        try:
            message = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return dumps(error_response(None, PARSE_ERROR, "Parse error",
                                        f"request is not valid UTF-8 JSON: {exc}"))
        if isinstance(message, list):
            if not message:
                return dumps(error_response(None, INVALID_REQUEST, "Invalid Request",
                                            "empty batch"))
            replies = [r for r in [await self.handle_message(m) for m in message] if r]
            return dumps(replies) if replies else None
        reply = await self.handle_message(message)
        return dumps(reply) if reply else None

    async def handle_message(self, message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict):
            return error_response(None, INVALID_REQUEST, "Invalid Request",
                                  "a request must be a JSON object")
        request_id = message.get("id")
        if not _valid_id(request_id):
            return error_response(None, INVALID_REQUEST, "Invalid Request",
                                  "'id' must be a string, a number or null")
        problem = self._envelope_problem(message)
        if problem:
            return error_response(request_id, INVALID_REQUEST, "Invalid Request", problem)
        is_notification = "id" not in message
        response = await self._call(message["method"], message.get("params"), request_id)
        return None if is_notification else response

    @staticmethod
    def _envelope_problem(message: Mapping[str, Any]) -> str | None:
        if message.get("jsonrpc") != "2.0":
            return "'jsonrpc' must be \"2.0\""
        if not isinstance(message.get("method"), str):
            return "'method' must be a string"
        if "params" in message and not isinstance(message["params"], dict | list):
            return "'params' must be an object or an array"
        return None

    async def _call(self, method: str, params: Any, request_id: Any) -> dict[str, Any]:
        handler = self.methods.get(method)
        if handler is None:
            return error_response(request_id, METHOD_NOT_FOUND, "Method not found",
                                  f"no method named {method!r}")
        try:
            bound = self._bind(method, params)
        except TypeError as exc:
            return error_response(request_id, INVALID_PARAMS, "Invalid params",
                                  f"{method}: {exc}")
        try:
            result = await handler(*bound.args, **bound.kwargs)
        except MinionsError as exc:
            return error_response(request_id, exc.code, exc.message, exc.detail, **exc.data)
        except Exception:
            log.exception("rpc.handler_failed", method=method)
            return error_response(request_id, INTERNAL_ERROR, "Internal error",
                                  f"{method} failed unexpectedly; the daemon log has details")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _bind(self, method: str, params: Any) -> inspect.BoundArguments:
        signature = self._signatures[method]
        if params is None:
            return signature.bind()
        if isinstance(params, list):
            return signature.bind(*params)
        return signature.bind(**params)
