"""One error hierarchy for minionsd.

Storage and core code raise MinionsError subclasses; the RPC layer turns them into JSON-RPC
error objects (code + message + data.detail) and the CLI turns those into exit codes. Each
class carries the JSON-RPC code it maps to, so the translation happens in exactly one place.
"""

from __future__ import annotations

import errno
import os


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


def os_error_detail(exc: OSError) -> str:
    """An OSError as words a person can act on: "no space left on device: /home/x/notes/...",
    "permission denied: ...", "read-only file system: ..."; the path when the error has one."""
    reason = (exc.strerror or str(exc) or type(exc).__name__).strip()
    reason = reason[:1].lower() + reason[1:]
    paths = [p for p in (exc.filename, exc.filename2) if p is not None]
    if not paths:
        return reason
    return f"{reason}: " + " -> ".join(os.fsdecode(p) for p in paths)


def from_os_error(method: str, exc: OSError) -> StorageError:
    """What a method's OSError (ENOSPC, EACCES, EROFS...) tells its caller: -32000 naming the
    problem and the path, with `kind` "os_error" and the errno's name."""
    name = errno.errorcode.get(exc.errno or 0, "") if exc.errno else ""
    return StorageError(f"{method} failed: {os_error_detail(exc)}", kind="os_error",
                        **({"errno": name} if name else {}))
