"""One agent session's view of the daemon: where its socket is, who the session is, and one
daemon call per request.

Every call opens its own connection, so a daemon restart between two calls costs nothing,
and a daemon that is down or hung turns into :class:`ToolFailure` with a message an agent
(or its human) can act on: down (no socket, connection refused) says how to start it; hung
(it accepted the connection and never answered) says so, and how to see why. Standard library
and minionsd's client only.

The way to the daemon is pluggable: a session made with a `transport` (a function of method
and params that raises the client's errors) sends every call through it instead of the socket,
so the same tools run over the socket, over a gateway's /rpc (`minionsctl mcp --url`) or
inside the gateway itself (on behalf of a token). `Session.call` stays the one interface.
"""

from __future__ import annotations

import os
import re
import socket as socketlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from minionsd.rpc.client import (
    Client,
    DaemonUnavailable,
    GatewayRefused,
    RpcError,
    socket_for_home,
)
from minionsd.text.fence_name import FENCE_NAME

CALL_TIMEOUT_S = 30.0
# method, params -> result; raises RpcError, DaemonUnavailable, TimeoutError, OSError or
# GatewayRefused.
Transport = Callable[[str, dict[str, Any]], Any]
# Anything that looks like (part of) a gateway token, wherever an error text came from: such
# text reaches the model and the hook's stderr, and a token never may (SPEC §5.2).
_TOKEN_LIKE = re.compile(r"mnt_[^\s\"'<>()]*")
# What to do about each refusal a gateway gives, for the model (and its human) to act on.
_REFUSAL_ADVICE = {
    401: "The gateway token this session uses is not accepted (unknown, revoked, expired or "
         "mistyped): the memory tools fail until a valid one is set; tell the user.",
    403: "The gateway does not allow this request from here; tell the user.",
    429: "Too many requests for this token: wait and try again.",
}


def without_tokens(text: str) -> str:
    """`text` with every token-like word replaced, for messages made from exceptions."""
    return _TOKEN_LIKE.sub("[token hidden]", text)


class ToolFailure(Exception):
    """A call that failed in a way the caller should see: text for the model, data for code."""

    def __init__(self, text: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.data = data or {}


class Session(NamedTuple):
    """Immutable (`session._replace(transport=...)` for a changed copy). A named tuple rather
    than a dataclass: the hooks import this on every prompt, and dataclasses (with inspect)
    costs more to import than the rest of a hook together."""

    socket: Path
    home: Path | None
    agent: str
    project: str | None
    timeout: float = CALL_TIMEOUT_S
    transport: Transport | None = None
    # Where the transport leads, for messages (a gateway URL); None: the socket.
    endpoint: str | None = None

    @classmethod
    def create(cls, home: str | None, socket: str | None, agent: str, project: str | None,
               timeout: float = CALL_TIMEOUT_S) -> Session:
        if socket:
            return cls(Path(socket).expanduser().absolute(), None, agent, project, timeout)
        root = Path(home or os.environ.get("MINIONS_HOME") or "~/.minions").expanduser()
        root = root.absolute()
        return cls(socket_for_home(root), root, agent, project, timeout)

    def start_hint(self) -> str:
        home = f" --home {self.home}" if self.home else " --home <its home>"
        return (f"Start the daemon with `minionsd{home}` (from a minionsd checkout: "
                "`scripts/run`; as a service: `systemctl --user start minionsd`), then try "
                "again.")

    def unreachable(self, reason: str) -> ToolFailure:
        reason = without_tokens(reason)
        if self.endpoint is not None:
            text = (f"minionsd is not reachable through {self.endpoint} ({reason}). Check "
                    "that the gateway (`minionsctl serve`) and the daemon behind it run.")
            return ToolFailure(text, {"error": {"kind": "daemon_unreachable",
                                                "url": self.endpoint, "detail": reason}})
        text = (f"minionsd is not reachable: nothing answers on {self.socket} ({reason}). "
                + self.start_hint())
        return ToolFailure(text, {"error": {"kind": "daemon_unreachable",
                                            "socket": str(self.socket), "detail": reason}})

    def refused(self, method: str, exc: GatewayRefused) -> ToolFailure:
        """A gateway's HTTP refusal (401 bad token, 403, 429 over the rate...): its status,
        its reason and detail (with Retry-After for a 429), and what to do."""
        where = self.endpoint or "the gateway"
        detail = without_tokens(exc.detail).rstrip(". ")
        advice = _REFUSAL_ADVICE.get(exc.status, "")
        if exc.status == 429 and exc.retry_after:
            advice = f"Too many requests for this token: wait {exc.retry_after} s and try again."
        text = (f"The gateway at {where} refused {method}: HTTP {exc.status} ({exc.reason}): "
                f"{detail}. {advice}").rstrip()
        extra: dict[str, Any] = {"status": exc.status, "reason": exc.reason}
        if exc.retry_after:
            extra["retry_after"] = exc.retry_after
        return ToolFailure(text, {"error": {"kind": "gateway_refused", "method": method,
                                            "message": exc.reason, "url": self.endpoint,
                                            "data": extra}})

    def hung(self, method: str) -> ToolFailure:
        if self.endpoint is not None:
            text = (f"minionsd did not answer {method} within {self.timeout:g} s through "
                    f"{self.endpoint}: the gateway or the daemon behind it is busy or hung.")
            return ToolFailure(text, {"error": {"kind": "daemon_hung", "method": method,
                                                "url": self.endpoint}})
        text = (f"minionsd did not answer {method} within {self.timeout:g} s on {self.socket}: "
                "the daemon is running but busy or hung. `minionsctl status` and the daemon's "
                "log say which; restart it if it stays unresponsive (as a service: "
                "`systemctl --user restart minionsd`).")
        return ToolFailure(text, {"error": {"kind": "daemon_hung", "method": method,
                                            "socket": str(self.socket)}})

    def problem(self) -> str | None:
        """Why the daemon cannot be reached, in a sentence, or None when something listens on
        its socket (connecting only: a busy daemon is not reported as down). A session with a
        transport (a gateway) is not probed: its calls say what is wrong."""
        if self.transport is not None:
            return None
        probe = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
        probe.settimeout(0.1)
        try:
            probe.connect(str(self.socket))
        except FileNotFoundError:
            return f"minionsd is not running: there is no socket at {self.socket}."
        except ConnectionRefusedError:
            return f"minionsd is not running: nothing listens on {self.socket}."
        except (TimeoutError, BlockingIOError):
            return None  # the listen queue is full: it is there, but busy
        except OSError as exc:
            return f"minionsd cannot be reached on {self.socket}: {exc.strerror or exc}."
        finally:
            probe.close()
        return None

    def _send(self, method: str, params: dict[str, Any]) -> Any:
        if self.transport is not None:
            return self.transport(method, params)
        client = Client(self.socket, timeout=self.timeout)
        try:
            return client.call(method, params)
        finally:
            client.close()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """One JSON-RPC call (a fresh socket connection, or the transport); ToolFailure on any
        failure."""
        try:
            return self._send(method, params)
        except DaemonUnavailable as exc:
            if self.transport is not None:
                raise self.unreachable(str(exc)) from None
            refused = isinstance(exc.__cause__, ConnectionRefusedError)
            raise self.unreachable("connection refused: the daemon is not running" if refused
                                   else "no socket file there") from None
        except RpcError as exc:
            # The daemon's detail may quote stored text (`already retracted (<reason>)`): it
            # is shown fenced, like any recalled text.
            from minionsd.text.fence import fence  # the fence's tables: only when needed

            detail = fence(str(exc.detail or exc.message), f"daemon-error:{method}")
            raise ToolFailure(f"minionsd refused {method}:\n{detail}",
                              {"error": {"kind": "daemon_error", "method": method,
                                         "code": exc.code, "message": exc.message,
                                         "data": exc.data}}) from None
        except GatewayRefused as exc:
            raise self.refused(method, exc) from None
        except TimeoutError:
            raise self.hung(method) from None
        except (ConnectionError, OSError, ValueError) as exc:
            # ValueError: a reply that is not JSON, i.e. something else owns the socket (or,
            # through a gateway, a request that could not be sent).
            raise self.unreachable(without_tokens(f"{type(exc).__name__}: {exc}")) from None


def extract_section(prompt_text: str, source: str) -> str | None:
    """The section of an assembled prompt whose fence has `source`: its `## ` heading and its
    fenced block, exactly as the prompt holds them; None when the prompt has no such section.

    A fenced body can never hold a closing tag (fence.py guarantees it), so the first closing
    tag after the opening one ends the block.
    """
    opening = f'<{FENCE_NAME} source="{source}">'
    start = prompt_text.find(opening)
    if start < 0:
        return None
    closing = f"</{FENCE_NAME}>"
    end = prompt_text.find(closing, start)
    if end < 0:
        return None
    heading = prompt_text.rfind("\n## ", 0, start)
    begin = heading + 1 if heading >= 0 else (0 if prompt_text.startswith("## ") else start)
    return prompt_text[begin:end + len(closing)]


# The task prompt.assemble gets when a caller wants the standing sections (pinned context,
# Team Notes) and no retrieval: no title means no query terms, so the daemon answers with the
# legacy pair (fallback `no_terms`, one telemetry row under this id and the session's agent).
STANDING_TASK_ID = "minions-standing-context"


def standing_prompt(session: Session) -> dict[str, Any]:
    """prompt.assemble for the standing sections, as the session's agent (its telemetry row
    names the agent; callers take only the pinned and team-notes sections)."""
    params: dict[str, Any] = {"task": {"id": STANDING_TASK_ID}, "agent": session.agent}
    if session.project:
        params["project"] = session.project
    return session.call("prompt.assemble", params)
