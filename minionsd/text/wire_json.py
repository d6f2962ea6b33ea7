"""The JSON-RPC wire's encoding: compact JSON, UTF-8, one line per message.

A reply's result can be encoded ahead, on the thread that produced it (a reader thread, say),
as an :class:`Encoded`: the event loop then only splices its bytes into the reply's envelope
(rpc/protocol.py), and the reply is byte for byte what encoding the whole message at once gives.
"""

from __future__ import annotations

import json
from typing import Any

_SEPARATORS = (",", ":")


def encode(message: Any) -> bytes:
    """Compact JSON without the newline. A lone surrogate in a string cannot be UTF-8, so such
    a message is sent with ASCII escapes instead (still valid JSON). Raises what json.dumps
    raises for a value it cannot serialise (TypeError, ValueError, RecursionError)."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=_SEPARATORS).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, separators=_SEPARATORS).encode("ascii")


class Encoded:
    """A result and its compact UTF-8 JSON, made where the result was made.

    `utf8` is None when the result cannot be sent that way: it holds a lone surrogate (the
    whole reply then goes out in ASCII escapes) or it is not serialisable (the reply is then an
    error); either way the reply is built from `value` exactly as it would have been without
    encoding ahead. Nothing may change `value` once it is encoded.
    """

    __slots__ = ("utf8", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        try:
            self.utf8: bytes | None = json.dumps(
                value, ensure_ascii=False, separators=_SEPARATORS).encode("utf-8")
        except (UnicodeEncodeError, TypeError, ValueError, RecursionError):
            self.utf8 = None

    def __repr__(self) -> str:
        return f"Encoded({self.value!r})"


def plain(value: Any) -> Any:
    """`value` as a plain result: an Encoded result's value, anything else itself."""
    return value.value if type(value) is Encoded else value
