"""One error hierarchy for minionsd.

Storage and core code raise MinionsError subclasses; the RPC layer turns them into JSON-RPC
error objects (code + message + data.detail) and the CLI turns those into exit codes. Each
class carries the JSON-RPC code it maps to, so the translation happens in exactly one place.
"""

from __future__ import annotations


class MinionsError(Exception):
    """Base of every error minionsd reports on purpose."""

    code = -32000
    message = "internal"

    def __init__(self, detail: str, **data: object) -> None:
        super().__init__(detail)
        self.detail = detail
        self.data = data


class InvalidParams(MinionsError):
    code = -32602
    message = "Invalid params"


class NotFound(MinionsError):
    code = -32001
    message = "not_found"


class Conflict(MinionsError):
    code = -32002
    message = "conflict"


class InvalidState(MinionsError):
    code = -32003
    message = "invalid_state"


class ConfigError(MinionsError):
    """A configuration key or value is wrong; over the socket it is invalid params."""

    code = -32602
    message = "Invalid params"

    def __init__(self, detail: str, key: str | None = None) -> None:
        super().__init__(detail, key=key) if key else super().__init__(detail)
        self.key = key


class StorageError(MinionsError):
    """A filesystem or database operation failed."""

    code = -32000
    message = "internal"
