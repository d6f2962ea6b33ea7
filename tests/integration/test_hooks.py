"""`minionsctl hook claude-code ...` fed Claude Code's hook JSON on stdin, run as
`python -m minionsd.cli` against a real daemon, a missing one and a hung one."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from minionsd.text.fence import FENCE_NAME
from tests.conftest import REPO

SESSION = "3f1c9a1e-5b7d-4c52-9a0e-2d6f0b8e7c11"


def payload(event: str, **extra: str) -> str:
    base = {"session_id": SESSION, "cwd": "/home/dev/payments", "hook_event_name": event,
            "transcript_path": f"/home/dev/.claude/projects/payments/{SESSION}.jsonl",
            "permission_mode": "default"}
    return json.dumps(base | extra)


def start_payload() -> str:
    return payload("SessionStart", source="startup", model="claude-sonnet-4-6")


def prompt_payload(prompt: str) -> str:
    return payload("UserPromptSubmit", prompt=prompt)


def hook(*target: str, stdin: str, home: Path | None = None, sock: Path | None = None,
         timeout: float = 60) -> subprocess.CompletedProcess[str]:
    where = ["--socket", str(sock)] if sock else ["--home", str(home)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", *where, "hook", *target],
                          input=stdin, capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=REPO)


def quiet_failure(result: subprocess.CompletedProcess[str]) -> str:
    """Nothing on stdout, exactly one line on stderr, exit 0; returns that line."""
    assert result.returncode == 0, result
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def seeded(daemon):
    daemon.call("pinned.set", text="Payments: never log card numbers.")
    daemon.call("memory.add", body="The settlement job retries failed payouts twice, then "
                "pages on-call.", type="semantic", scope="global", trust="human",
                source="test", title="Settlement payout retries")
    daemon.call("inbox.submit", body="Deploys freeze on Fridays.", author="alice",
                title="Deploy freeze")
    daemon.call("consolidation.run", force=True)
    assert (daemon.home / "notes.md").read_text().count("###") >= 1
    return daemon


def test_session_start_prints_pinned_context_and_the_tools_line(seeded):
    result = hook("claude-code", "session-start", stdin=start_payload(), home=seeded.home)
    assert result.returncode == 0 and result.stderr == ""
    out = result.stdout
    assert out.startswith("minionsd memory is connected") and "memory_context" in out
    assert "## Pinned Context" in out
    assert f'<{FENCE_NAME} source="pinned:pinned.md">\nPayments: never log card numbers.\n' in out
    assert out.count(f"</{FENCE_NAME}>") == 1
    assert "Team Notes" not in out and "Deploy freeze" not in out


def test_session_start_without_pinned_context_prints_the_tools_line(daemon):
    result = hook("claude-code", "session-start", stdin=start_payload(), home=daemon.home)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("minionsd memory is connected")
    assert FENCE_NAME not in result.stdout and len(result.stdout.splitlines()) == 1


def test_user_prompt_prints_relevant_memory_and_shows_in_telemetry(seeded):
    result = hook("claude-code", "user-prompt", home=seeded.home,
                  stdin=prompt_payload("Why did the settlement job page on-call twice?"))
    assert result.returncode == 0 and result.stderr == ""
    out = result.stdout
    assert "## Relevant Memory" in out and "retries failed payouts twice" in out
    assert f'<{FENCE_NAME} source="memory-retrieval:item=claude-code:{SESSION}">' in out
    assert "Pinned Context" not in out and "Deploy freeze" not in out
    rows = seeded.call("telemetry.retrievals", limit=5)["rows"]
    assert any(r["task_id"] == f"claude-code:{SESSION}" and r["selected_ids"] for r in rows)


def test_user_prompt_prints_nothing_when_retrieval_finds_nothing_or_falls_back(seeded):
    miss = hook("claude-code", "user-prompt", home=seeded.home,
                stdin=prompt_payload("zebra quokka narwhal"))
    assert (miss.returncode, miss.stdout, miss.stderr) == (0, "", "")
    seeded.call("config.set", key="features.memory_retrieval", value=False)
    off = hook("claude-code", "user-prompt", home=seeded.home,
               stdin=prompt_payload("settlement payout retries"))
    assert (off.returncode, off.stdout, off.stderr) == (0, "", "")
    seeded.call("config.set", key="engine.memory_retrieval_shadow_mode", value=True)
    seeded.call("config.set", key="features.memory_retrieval", value=True)
    shadow = hook("claude-code", "user-prompt", home=seeded.home,
                  stdin=prompt_payload("settlement payout retries"))
    assert (shadow.returncode, shadow.stdout, shadow.stderr) == (0, "", "")


@pytest.mark.parametrize(("target", "stdin", "expected"), [
    (("claude-code", "user-prompt"), "", "no hook input"),
    (("claude-code", "user-prompt"), "{\"session_id\": \"abc\", ", "not JSON"),
    (("claude-code", "user-prompt"), "[1, 2]", "JSON object"),
    (("claude-code", "user-prompt"), payload("UserPromptSubmit"), "no 'prompt'"),
    (("claude-code", "user-prompt"), payload("UserPromptSubmit", prompt="   "), "no 'prompt'"),
    (("claude-code", "pre-tool-use"), payload("PreToolUse"), "unknown event"),
    (("claude-code",), payload("SessionStart"), "unknown event"),
    (("cursor", "session-start"), payload("SessionStart"), "unknown agent"),
    (("claude-code", "user-prompt", "--agent", "no spaces"), prompt_payload("x"), "agent"),
])
def test_bad_input_prints_one_stderr_line_and_exits_0(tmp_path, target, stdin, expected):
    # Refused before any daemon call: the line names the input's problem, not the socket.
    assert expected in quiet_failure(hook(*target, stdin=stdin, home=tmp_path / "h"))


def test_a_usage_error_in_a_hook_command_still_exits_0(tmp_path):
    result = hook("claude-code", "user-prompt", "--no-such-flag", stdin=prompt_payload("x"),
                  home=tmp_path / "h")
    assert result.returncode == 0 and result.stdout == ""
    assert "unrecognized arguments: --no-such-flag" in result.stderr
    other = subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(tmp_path / "h"),
                            "status", "--no-such-flag"], capture_output=True, text=True,
                           timeout=60, cwd=REPO)
    assert other.returncode == 2


def test_daemon_down_prints_one_stderr_line_and_exits_0(tmp_path):
    for event, stdin in (("session-start", start_payload()),
                         ("user-prompt", prompt_payload("settlement retries"))):
        line = quiet_failure(hook("claude-code", event, stdin=stdin, home=tmp_path / "h"))
        assert "not reachable" in line and str(tmp_path / "h" / "engine" / "minionsd.sock") in line


@pytest.fixture
def hung_socket(tmp_path_factory) -> Iterator[Path]:
    """A Unix socket that accepts connections and never answers."""
    path = Path(tmp_path_factory.mktemp("hung", numbered=True).as_posix()[:60]) / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def test_a_hung_daemon_cannot_hang_the_prompt(hung_socket):
    for event, stdin in (("session-start", start_payload()),
                         ("user-prompt", prompt_payload("settlement retries"))):
        line = quiet_failure(hook("claude-code", event, stdin=stdin, sock=hung_socket))
        assert "did not answer" in line and "within 2 s" in line and str(hung_socket) in line
        assert "busy or hung" in line and "Start the daemon" not in line


def test_a_stopped_daemon_is_reported_as_hung_not_as_down(daemon):
    """A real daemon that stops answering (SIGSTOP): the hook says it is hung, within the
    10 s Claude Code gives a hook, and does not tell the user to start it."""
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        line = quiet_failure(hook("claude-code", "user-prompt", home=daemon.home,
                                  stdin=prompt_payload("settlement retries"), timeout=10))
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    assert "busy or hung" in line and str(daemon.socket) in line
    assert "not reachable" not in line and "Start the daemon" not in line


def test_session_start_telemetry_names_the_sessions_agent(seeded):
    result = hook("claude-code", "session-start", "--agent", "claude-code",
                  stdin=start_payload(), home=seeded.home)
    assert result.returncode == 0 and "Pinned Context" in result.stdout
    rows = seeded.call("telemetry.retrievals", limit=5)["rows"]
    standing = [r for r in rows if r["task_id"] == "minions-standing-context"]
    assert standing and standing[0]["agent"] == "claude-code", standing
    assert "Personal Memory" not in result.stdout


def test_hooks_do_not_import_the_mcp_sdk(seeded):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "minionsd.cli",
                             "--home", str(seeded.home), "hook", "claude-code", "user-prompt"],
                            input=prompt_payload("settlement payout"), capture_output=True,
                            text=True, timeout=60, env=env, cwd=REPO)
    assert result.returncode == 0 and "Relevant Memory" in result.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "minionsd.agents.hooks" in imported
    heavy = [m for m in imported if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio",
                                                          "structlog", "sqlite3", "asyncio")]
    assert not heavy, heavy
