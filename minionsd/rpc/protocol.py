"""JSON-RPC 2.0 envelopes: parsing, validation, dispatch and error shaping. No sockets here.

Params are bound to the handler's signature *before* the call, so a TypeError raised inside
a handler is a bug (reported as -32603 and logged), never mistaken for invalid params. No
traceback is ever put on the wire.

Decoding is the protocol boundary: the line must be strict UTF-8, a lone surrogate from a
`\\uD800`-style escape becomes U+FFFD (so every method sees clean strings), and nesting is
bounded. Encoding never drops a reply: a result that cannot be serialised is answered -32603.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from minionsd.errors import MinionsError, from_os_error
from minionsd.text.wire_json import Encoded
from minionsd.text.wire_json import encode as _encode

log = structlog.get_logger()

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

MAX_NESTING = 64

Handler = Callable[..., Awaitable[Any]]
# A handler for many calls of one method at once: [(args, kwargs)] -> one outcome per call,
# its result or the exception it raised (MinionsError for the caller's mistakes).
BulkHandler = Callable[[list[tuple[tuple[Any, ...], dict[str, Any]]]],
                       Awaitable[list[Any]]]
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def dumps(message: Any) -> bytes:
    """Compact JSON, one line: json escapes newlines inside strings, so framing is safe."""
    return _encode(message) + b"\n"


def clean_text(value: str) -> str:
    """`value` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", value)


class TooDeep(ValueError):
    """A message nested deeper than MAX_NESTING: an invalid request, not a parse error.
    `request_id` is the message's id when it has a usable one, so the reply can carry it."""

    def __init__(self, detail: str, request_id: Any = None) -> None:
        super().__init__(detail)
        self.request_id = request_id


_CONTAINERS = frozenset({dict, list})  # what json.loads builds nested values of


def _depth(message: Any) -> int:
    """The nesting depth of a decoded message (json.loads' output: exact dicts and lists).
    Iterative, so no depth can overflow the stack; only containers are stacked."""
    depth = 0
    containers = _CONTAINERS
    stack: list[tuple[Any, int]] = [(message, 1)]
    while stack:
        node, level = stack.pop()
        if level > depth:
            depth = level
        level += 1
        for value in node.values() if type(node) is dict else node:
            if type(value) in containers:
                stack.append((value, level))
    return depth


def _walk(message: Any, clean: bool) -> int:
    """The nesting depth of a decoded message; with `clean`, every string and key in it has
    its lone surrogates replaced in place. Iterative, so no depth can overflow the stack."""
    if not clean:
        return _depth(message)
    depth = 0
    stack: list[tuple[Any, int]] = [(message, 1)]
    while stack:
        node, level = stack.pop()
        depth = max(depth, level)
        if isinstance(node, dict):
            items = list(node.items())
            if clean:
                node.clear()
            for key, value in items:
                if clean:
                    node[clean_text(key)] = clean_text(value) if isinstance(value, str) else value
                if isinstance(value, dict | list):
                    stack.append((value, level + 1))
        else:
            for index, value in enumerate(node):
                if clean and isinstance(value, str):
                    node[index] = clean_text(value)
                elif isinstance(value, dict | list):
                    stack.append((value, level + 1))
    return depth


class _NotJson(ValueError):
    pass


def _not_json(token: str) -> Any:
    """Python's json reads NaN and Infinity, which JSON has not: echoed back (an id, a meta
    value read again later), they would make replies no strict parser can read."""
    raise _NotJson(f"request is not valid JSON: {token} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _NotJson(f"request is not valid JSON: the number {literal[:40]} is too large "
                       "(the limit is about 1.8e308)")
    return value


def decode_line(line: bytes) -> Any:
    """One request line -> the decoded message, its strings free of lone surrogates.

    Raises ValueError (a parse error) for bad UTF-8, bad JSON or nesting too deep for the
    parser, and TooDeep for a message nested more than MAX_NESTING levels."""
    try:
        text = line.decode("utf-8")
        message = json.loads(text, parse_constant=_not_json, parse_float=_finite_float)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"request is not valid UTF-8 JSON: {exc}") from None
    except RecursionError:
        raise ValueError("request is not valid UTF-8 JSON: nested too deeply to parse "
                         f"(the limit is {MAX_NESTING} levels)") from None
    if isinstance(message, dict | list):
        # A lone surrogate can only come from a \uD8xx-\uDFxx escape (the bytes are strict
        # UTF-8), so lines without one skip the rewrite.
        depth = _walk(message, clean=_SURROGATE_ESCAPE.search(text) is not None)
        if depth > MAX_NESTING:
            request_id = message.get("id") if isinstance(message, dict) else None
            raise TooDeep(f"request is nested {depth} levels deep; the limit is {MAX_NESTING}",
                          request_id if _valid_id(request_id) else None)
    return message


def error_response(request_id: Any, code: int, message: str, detail: str,
                   **extra: Any) -> dict[str, Any]:
    data = {"detail": detail} | {k: v for k, v in extra.items() if v is not None}
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": code, "message": message, "data": data}}


def _method(message: Any) -> Any:
    return message.get("method") if isinstance(message, dict) else None


_SUCCESS_KEYS = ("jsonrpc", "id", "result")


def _spliced(reply: dict[str, Any], result: Encoded) -> bytes | None:
    """A success reply whose result was encoded ahead: its envelope encoded here around the
    result's bytes, the same bytes as encoding the whole reply at once; None when it cannot be
    done that way (the result or the id is not plain UTF-8 JSON: the whole reply is then
    encoded from the result's value)."""
    if result.utf8 is None or tuple(reply) != _SUCCESS_KEYS:
        return None
    try:
        head = json.dumps({"jsonrpc": reply["jsonrpc"], "id": reply["id"]},
                          ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError):
        return None
    return head[:-1] + b',"result":' + result.utf8 + b"}"


def encode_reply(reply: dict[str, Any], method: Any = None) -> bytes:
    """One reply as JSON (no newline). A result or error that cannot be serialised becomes
    a -32603 reply with the same id, and the failure is logged: the client always hears back.
    A result encoded ahead (an Encoded, from the thread that produced it) is spliced in."""
    result = reply.get("result")
    if type(result) is Encoded:
        spliced = _spliced(reply, result)
        if spliced is not None:
            return spliced
        reply = reply | {"result": result.value}
    try:
        return _encode(reply)
    except (TypeError, ValueError, RecursionError) as exc:
        log.error("rpc.reply_unserialisable", method=method, id=reply.get("id"),
                  error=repr(exc)[:500])
        return _encode(error_response(reply.get("id"), INTERNAL_ERROR, "Internal error",
                                      "the reply could not be serialised as JSON; "
                                      "the daemon log has details"))


def _failure(method: str, request_id: Any, exc: BaseException) -> dict[str, Any]:
    """A handler's exception as an error reply: an OSError (ENOSPC, EACCES...) names the
    problem and path (-32000); one that is not a MinionsError is a bug (-32603, logged)."""
    if isinstance(exc, OSError):
        log.error("rpc.os_error", method=method, exc_info=exc)
        exc = from_os_error(method, exc)
    if isinstance(exc, MinionsError):
        return error_response(request_id, exc.code, exc.message, exc.detail, **exc.data)
    log.error("rpc.handler_failed", method=method, exc_info=exc)
    return error_response(request_id, INTERNAL_ERROR, "Internal error",
                          f"{method} failed unexpectedly; the daemon log has details")


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


class _Shape:
    """What a handler's keyword call accepts, to bind the common case (named params that
    plainly fit) without inspect's general machinery."""

    def __init__(self, required: frozenset[str], names: frozenset[str],
                 any_keyword: bool, simple: bool) -> None:
        self.required, self.names = required, names
        self.any_keyword, self.simple = any_keyword, simple

    @classmethod
    def of(cls, signature: inspect.Signature) -> _Shape:
        kinds = inspect.Parameter
        params = list(signature.parameters.values())
        named = [p for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)]
        return cls(frozenset(p.name for p in named if p.default is kinds.empty),
                   frozenset(p.name for p in named),
                   any(p.kind is kinds.VAR_KEYWORD for p in params),
                   not any(p.kind in (kinds.POSITIONAL_ONLY, kinds.VAR_POSITIONAL)
                           for p in params))

    def fits(self, params: dict[str, Any]) -> bool:
        if not self.simple or not self.required.issubset(params):
            return False
        return self.any_keyword or self.names.issuperset(params)


class Dispatcher:
    """Holds the method table and turns one decoded message into zero or one response."""

    def __init__(self, methods: Mapping[str, Handler],
                 bulk: Mapping[str, BulkHandler] | None = None) -> None:
        self.methods = dict(methods)
        # Methods whose consecutive requests in one batch are independent of each other and
        # are handled together (memory.add: one transaction, one disk sync for the run): given
        # here, or as a handler's `bulk` attribute.
        self.bulk = {name: fn.bulk for name, fn in self.methods.items()
                     if callable(getattr(fn, "bulk", None))} | dict(bulk or {})
        self._signatures = {name: inspect.signature(fn) for name, fn in self.methods.items()}
        self._shapes = {name: _Shape.of(sig) for name, sig in self._signatures.items()}

    async def handle_bytes(self, line: bytes) -> bytes | None:
        message, error = self.parse(line)
        return error if error is not None else await self.handle_decoded(message)

    @staticmethod
    def parse(line: bytes) -> tuple[Any, bytes | None]:
        """(the decoded message, None), or (None, the error reply) for a line that is not
        a JSON-RPC message."""
        try:
            return decode_line(line), None
        except TooDeep as exc:
            return None, dumps(error_response(exc.request_id, INVALID_REQUEST,
                                              "Invalid Request", str(exc)))
        except ValueError as exc:
            return None, dumps(error_response(None, PARSE_ERROR, "Parse error", str(exc)))

    def bulk_only(self, message: Any) -> bool:
        """A batch of requests of bulk methods only (independent of each other and of other
        such batches: the server may start one while the previous is still being handled)."""
        return (isinstance(message, list) and bool(message)
                and all(self._bulk_method(m) is not None for m in message))

    async def handle_decoded(self, message: Any) -> bytes | None:
        if isinstance(message, list):
            if not message:
                return dumps(error_response(None, INVALID_REQUEST, "Invalid Request",
                                            "empty batch"))
            replies = await self._handle_batch(message)
            encoded = [encode_reply(r, _method(m)) for m, r in zip(message, replies, strict=True)
                       if r]
            return b"[" + b",".join(encoded) + b"]\n" if encoded else None
        reply = await self.handle_message(message)
        return encode_reply(reply, _method(message)) + b"\n" if reply else None

    def _bulk_method(self, message: Any) -> str | None:
        """The method of a well-formed request that has a bulk handler, else None."""
        if (isinstance(message, dict) and _valid_id(message.get("id"))
                and not self._envelope_problem(message) and message["method"] in self.bulk):
            return message["method"]
        return None

    async def _handle_batch(self, messages: list[Any]) -> list[dict[str, Any] | None]:
        """Replies for a batch, in order. Requests run one after the other, except that a run
        of consecutive requests of one bulk method is handled together."""
        replies: list[dict[str, Any] | None] = []
        index = 0
        while index < len(messages):
            method = self._bulk_method(messages[index])
            end = index + 1
            while method and end < len(messages) and self._bulk_method(messages[end]) == method:
                end += 1
            if method and end - index > 1:
                replies += await self._call_bulk(method, messages[index:end])
            else:
                replies.append(await self.handle_message(messages[index]))
            index = end
        return replies

    async def _call_bulk(self, method: str,
                         messages: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
        replies: list[dict[str, Any] | None] = [None] * len(messages)
        calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        positions: list[int] = []
        for position, message in enumerate(messages):
            try:
                bound = self._bind(method, message.get("params"))
            except TypeError as exc:
                replies[position] = error_response(message.get("id"), INVALID_PARAMS,
                                                   "Invalid params", f"{method}: {exc}")
                continue
            calls.append(bound)
            positions.append(position)
        try:
            outcomes = await self.bulk[method](calls) if calls else []
        except Exception as exc:  # the bulk handler itself failed: every call fails with it
            outcomes = [exc] * len(calls)
        for position, outcome in zip(positions, outcomes, strict=True):
            replies[position] = self._shape(method, messages[position].get("id"), outcome)
        # Notifications get no reply (JSON-RPC 2.0), whatever happened.
        return [None if "id" not in message else reply
                for message, reply in zip(messages, replies, strict=True)]

    @staticmethod
    def _shape(method: str, request_id: Any, outcome: Any) -> dict[str, Any]:
        return (_failure(method, request_id, outcome) if isinstance(outcome, BaseException)
                else {"jsonrpc": "2.0", "id": request_id, "result": outcome})

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
            args, kwargs = self._bind(method, params)
        except TypeError as exc:
            return error_response(request_id, INVALID_PARAMS, "Invalid params",
                                  f"{method}: {exc}")
        try:
            result = await handler(*args, **kwargs)
        except Exception as exc:
            return _failure(method, request_id, exc)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _bind(self, method: str, params: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(args, kwargs) to call the handler with; TypeError names what does not fit."""
        if isinstance(params, dict) and self._shapes[method].fits(params):
            return (), params  # what Signature.bind would give, without its cost
        signature = self._signatures[method]
        if params is None:
            bound = signature.bind()
        elif isinstance(params, list):
            bound = signature.bind(*params)
        else:
            bound = signature.bind(**params)
        return bound.args, bound.kwargs
