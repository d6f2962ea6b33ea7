"""`minionsctl hook claude-code session-start|user-prompt`: Claude Code hook commands.

Claude Code runs the command with the hook's JSON on stdin (`session_id`, `cwd`,
`hook_event_name`, and `prompt` for UserPromptSubmit) and, for these two events, adds what the
command prints on stdout (exit 0) to the session's context.

* `session-start` prints the Pinned Context section and one line on the memory tools.
* `user-prompt` prints Relevant Memory for the prompt's text, and nothing at all when
  retrieval finds nothing or falls back, so a session is never padded with the legacy files.

A hook never fails the session: on any error it prints nothing on stdout, one line on
stderr, and exits 0, within a bounded time (a short socket timeout, and an alarm over the
whole hook). Standard library and minionsd's client only: it runs on every prompt.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from minionsd.agents.project import IdentityError, resolve_agent, resolve_project
from minionsd.agents.session import (
    Session,
    ToolFailure,
    Transport,
    extract_section,
    standing_prompt,
)
from minionsd.rpc.client import GatewayRefused
from minionsd.text.fence_name import MEMORY_PREAMBLE

SOCKET_TIMEOUT_S = 2.0
HOOK_DEADLINE_S = 5
MAX_STDIN_BYTES = 4 * 1024 * 1024
MAX_PROMPT_CHARS = 20_000
EVENTS = ("session-start", "user-prompt")
TOOLS_LINE = ("minionsd memory is connected (MCP server `minions`): call memory_context with "
              "what you are about to do before each task, memory_search / memory_get to look "
              "things up, and memory_note to record what the next agent should know.")
PINNED_LINE = ("The Pinned Context below is the operator's standing guidance for this work: "
               "follow it.")


class HookError(Exception):
    """Why a hook printed nothing; reported as one line on stderr."""


class _Deadline(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Raise _Deadline if the hook runs longer than `seconds` (Unix alarm; main thread)."""
    def expire(_signum: int, _frame: Any) -> None:
        raise _Deadline

    try:
        previous = signal.signal(signal.SIGALRM, expire)
    except (ValueError, AttributeError):  # not the main thread, or no SIGALRM
        yield
        return
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def read_payload(stream: TextIO) -> dict[str, Any]:
    raw = stream.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        raise HookError(f"hook input is larger than {MAX_STDIN_BYTES} bytes")
    if not raw.strip():
        raise HookError("no hook input on stdin (expected Claude Code's hook JSON)")
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise HookError(f"hook input is not JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(payload, dict):
        raise HookError("hook input must be a JSON object")
    return payload


def _text_field(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value.strip() else None


def session_start(session: Session, payload: dict[str, Any]) -> str:
    result = standing_prompt(session)
    pinned = extract_section(result["text"], "pinned:pinned.md")
    if pinned is None:
        return TOOLS_LINE + "\n"
    return f"{TOOLS_LINE}\n\n{PINNED_LINE}\n\n{pinned}\n"


def user_prompt(session: Session, payload: dict[str, Any]) -> str:
    prompt = _text_field(payload, "prompt")
    if prompt is None:
        raise HookError("the UserPromptSubmit input has no 'prompt' text")
    session_id = (_text_field(payload, "session_id") or "session")[:80]
    task = {"id": f"claude-code:{session_id}", "title": prompt[:MAX_PROMPT_CHARS]}
    params: dict[str, Any] = {"task": task, "agent": session.agent}
    if session.project:
        params["project"] = session.project
    result = session.call("memory.retrieve", params)
    if result.get("mode") != "active" or result.get("fallback_reason") or not result.get("text"):
        return ""
    return f"{MEMORY_PREAMBLE}\n\n## Relevant Memory\n\n{result['text']}\n"


HANDLERS = {"session-start": session_start, "user-prompt": user_prompt}


def run(tool: str, event: str, *, home: str | None, socket: str | None, agent: str | None,
        project: str | None, stdin: TextIO | None = None, stdout: TextIO | None = None,
        stderr: TextIO | None = None, transport: Transport | None = None,
        endpoint: str | None = None) -> int:
    """Run one hook; always exit 0. Output only when everything worked. With a `transport`
    (`minionsctl --url URL hook ...`), the calls go through it to a gateway at `endpoint`."""
    stdin, stdout, stderr = stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr
    try:
        with _deadline(HOOK_DEADLINE_S):
            if tool != "claude-code":
                raise HookError(f"unknown agent {tool!r}: hooks exist for claude-code")
            if event not in HANDLERS:
                raise HookError(f"unknown event {event!r}: expected " + " or ".join(EVENTS))
            payload = read_payload(stdin)
            cwd = _text_field(payload, "cwd")
            session = Session.create(home, socket, resolve_agent(agent),
                                     resolve_project(project, cwd), timeout=SOCKET_TIMEOUT_S)
            if transport is not None:
                session = session._replace(transport=transport, endpoint=endpoint)
            text = HANDLERS[event](session, payload)
    except (HookError, IdentityError) as exc:
        print(f"minionsctl hook {event}: {exc}", file=stderr)
        return 0
    except ToolFailure as exc:
        print(f"minionsctl hook {event}: {exc.text}", file=stderr)
        return 0
    except _Deadline:
        print(f"minionsctl hook {event}: gave up after {HOOK_DEADLINE_S} s", file=stderr)
        return 0
    except GatewayRefused as exc:  # a bad or revoked token, a missing scope, a rate limit
        print(f"minionsctl hook {event}: {exc}", file=stderr)
        return 0
    except Exception as exc:  # never fail the user's session
        print(f"minionsctl hook {event}: {type(exc).__name__}: {exc}", file=stderr)
        return 0
    try:
        stdout.write(text)
        stdout.flush()
    except (BrokenPipeError, OSError):
        pass
    return 0
