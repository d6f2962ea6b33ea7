"""minionsctl end to end: a real daemon, the CLI run as `python -m minionsd.cli` in a subprocess."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from minionsd import cli
from minionsd.client import RpcError
from tests.conftest import REPO, wait_for

HEAVY = ("anthropic", "watchdog", "apscheduler", "structlog", "yaml", "filelock", "tomli_w",
         "httpx", "sqlite3", "asyncio", "mcp", "mcp_types", "pydantic", "anyio",
         "starlette", "uvicorn", "jinja2", "markdown_it")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    env.update(extra)
    return env


def run_ctl(*args: str, env: dict[str, str] | None = None, stdin: str | None = None,
            cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minionsd.cli", *args], env=env or clean_env(),
                          cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ctl(daemon):
    env = clean_env(MINIONS_HOME=str(daemon.home))

    def run(*args: str, stdin: str | None = None,
            cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
        return run_ctl(*args, env=env, stdin=stdin, cwd=cwd)

    return run


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def as_json(result: subprocess.CompletedProcess[str]) -> object:
    return json.loads(ok(result))


def method_exists(daemon, method: str, **params: object) -> bool:
    try:
        daemon.call(method, **params)
    except RpcError as exc:
        return exc.code != -32601
    return True


def test_status(ctl, daemon):
    out = ok(ctl("status"))
    assert f"pid {daemon.proc.pid}" in out and str(daemon.home) in out
    assert as_json(ctl("status", "--json"))["pid"] == daemon.proc.pid
    # --home and --socket point at the same daemon as $MINIONS_HOME.
    assert f"pid {daemon.proc.pid}" in ok(run_ctl("--home", str(daemon.home), "status"))
    assert f"pid {daemon.proc.pid}" in ok(run_ctl("--socket", str(daemon.socket), "status"))


def test_note_and_inbox(ctl):
    out = ok(ctl("note", "Deploys need the VPN", "--author", "alice", "--title", "vpn",
                 "--hold"))
    assert out.startswith("written: notes/inbox/") and out.strip().endswith(".md")
    name = out.strip().rsplit("/", 1)[1]
    again = ok(ctl("note", "Deploys need the VPN", "--author", "alice", "--title", "vpn"))
    assert again.startswith("duplicate")
    # The inbox reads a note's front matter only once it has settled (engine.inbox_settle_ms).
    notes = wait_for(lambda: [n for n in as_json(ctl("inbox", "--json"))["notes"]
                              if n["author"] != "unknown"], what="the note to settle")
    assert [n["name"] for n in notes] == [name] and notes[0]["held"] is True
    listing = ok(ctl("inbox"))
    assert name in listing and "alice" in listing and "held" in listing
    # Without --author the note is signed with the login name.
    default = as_json(ctl("--json", "note", "who wrote this"))
    assert default["path"].startswith("notes/inbox/")


def test_search_and_show(ctl, daemon):
    record_id = daemon.call("memory.add", body="The TokenRefresher retries on ECONNRESET",
                            type="semantic", scope="global", trust="human", source="test",
                            title="Token refresh")["id"]
    found = ok(ctl("search", "TokenRefresher"))
    assert found.startswith("1 match") and record_id in found
    assert as_json(ctl("--json", "search", "retries", "--limit", "5"))["total"] == 1
    assert as_json(ctl("search", "nothing-like-this", "--json"))["total"] == 0
    shown = ok(ctl("show", record_id))
    assert shown.startswith(f"{record_id}: Token refresh") and "ECONNRESET" in shown
    assert as_json(ctl("show", record_id, "--json"))["id"] == record_id
    ok(ctl("retract", record_id, "--reason", "obsolete"))
    assert as_json(ctl("search", "TokenRefresher", "--status", "retracted",
                       "--json"))["total"] == 1


def test_kb_add_list_show(ctl):
    created = ok(ctl("kb", "add", "--category", "conventions", "--title", "Indentation",
                     "--author", "carol", stdin="We indent with four spaces.\n"))
    assert created.startswith("created knowledge/conventions/")
    path = created.split()[1]
    listing = ok(ctl("kb", "list"))
    assert path in listing and "Indentation" in listing
    assert [e["path"] for e in as_json(ctl("kb", "list", "--category", "conventions",
                                           "--json"))["entries"]] == [path]
    assert ok(ctl("kb", "list", "--category", "reviews")).strip() == "no entries"
    shown = ok(ctl("kb", "show", path))
    assert shown.startswith(f"{path}  [conventions]") and "four spaces" in shown
    assert as_json(ctl("--json", "kb", "show", path))["title"] == "Indentation"
    assert ctl("kb", "add", "--category", "nonsense", "--title", "x", stdin="y").returncode == 2


def test_pinned_show_set_append(ctl, tmp_path):
    assert ok(ctl("pinned", "set", "Run the tests first.")).startswith("pinned.md now")
    (tmp_path / "more.md").write_text("Never push to main.\n")
    ok(ctl("pinned", "append", "--file", str(tmp_path / "more.md")))
    ok(ctl("pinned", "append", stdin="Ask before deleting files.\n"))
    text = ok(ctl("pinned", "show"))
    assert text.index("Run the tests first.") < text.index("Never push to main.") \
        < text.index("Ask before deleting files.")
    assert as_json(ctl("pinned", "show", "--json"))["code_units"] > 0


def test_config_get_and_set(ctl):
    assert ok(ctl("config", "get", "engine.memory_retrieval_top_k")).strip() == "8"
    out = ok(ctl("config", "set", "engine.memory_retrieval_top_k", "6"))
    assert out.strip() == "engine.memory_retrieval_top_k = 6"
    assert as_json(ctl("--json", "config", "get", "engine.memory_retrieval_top_k")) == \
        {"value": 6}
    assert as_json(ctl("config", "get", "--json"))["value"]["engine"][
        "memory_retrieval_top_k"] == 6
    ok(ctl("config", "set", "llm.model", "claude-test"))
    assert ok(ctl("config", "get", "llm.model")).strip() == "claude-test"
    bad = ctl("config", "set", "engine.memory_retrieval_top_kk", "6")
    assert bad.returncode == 1 and "memory_retrieval_top_kk" in bad.stderr
    wrong_type = ctl("config", "set", "engine.memory_retrieval_top_k", "lots")
    assert wrong_type.returncode == 1
    assert "restart" in ok(ctl("config", "set", "gateway.rate_per_s", "30"))
    assert ok(ctl("config", "get", "agents")).strip() in ("", "{}")
    # A gateway address is checked when it is set, not when `web` or `serve` first reads it.
    for key, value in (("gateway.listen", "bad"), ("gateway.public_url", "memory.example.com")):
        refused = ctl("config", "set", key, value)
        assert refused.returncode == 1 and key in refused.stderr, refused.stderr
        assert ok(ctl("config", "get", key)).strip() != value


def test_maintenance_and_consolidate_quiet_without_a_tty(ctl):
    # stderr is a pipe here, so no progress line may appear.
    result = ctl("maintenance", "expiry")
    assert ok(result).startswith("expiry done at ") and result.stderr == ""
    assert "0 records expired" in result.stdout
    result = ctl("consolidate", "--force")
    assert ok(result).startswith("nothing to consolidate") and result.stderr == ""


def test_exit_codes(ctl, daemon, tmp_path):
    missing = ctl("show", "M-missing")
    assert missing.returncode == 1 and "not_found" in missing.stderr
    assert ctl("bogus-command").returncode == 2
    assert ctl("show").returncode == 2
    assert ctl("maintenance", "nonsense").returncode == 2
    assert ctl("retract", "M-1").returncode == 2  # --reason is required
    assert ctl("prompt", "--task", "-", stdin="not json").returncode == 2
    assert ctl("prompt", "--task", str(tmp_path / "absent.json")).returncode == 2
    assert ctl("service", "install", "--user", "--system").returncode == 2
    assert ctl("--help").returncode == 0 and ctl("kb", "--help").returncode == 0
    unreachable = run_ctl("--socket", str(tmp_path / "none.sock"), "status")
    assert unreachable.returncode == 3 and "minionsd --home" in unreachable.stderr
    daemon.stop()
    down = ctl("status")
    assert down.returncode == 3 and "not running" in down.stderr


def test_json_before_and_after_every_command():
    """Parser level, so every command is covered, including those that need a daemon state."""
    minimal = {
        "init": [], "status": [], "note": ["text"], "inbox": [], "inbox requeue": ["x.md"],
        "consolidate": [],
        "search": ["q"], "show": ["M-1"], "pin": ["M-1"], "expire": ["M-1"],
        "retract": ["M-1", "--reason", "r"], "supersede": ["M-1", "--by", "M-2"],
        "purge": ["M-1", "--reason", "r"],
        "kb add": ["--category", "reviews", "--title", "t"], "kb list": [],
        "kb show": ["knowledge/reviews/x.md"], "pinned show": [], "pinned set": ["x"],
        "pinned append": ["x"], "retrieve": ["--task", "-"], "prompt": ["--task", "-"],
        "config get": [], "config set": ["k", "v"], "maintenance": ["reindex"],
        "telemetry": [], "backup": ["/tmp/b"], "restore": ["/tmp/b"],
        "service install": ["--print"], "connect": ["codex", "--print"],
        "token create": ["n", "--agent", "a", "--scope", "read"], "token list": [],
        "token revoke": ["n"], "web": ["--no-open"],
    }
    assert set(minimal) == set(cli.COMMANDS), "a new command needs an entry here"
    parser = cli.build_parser()
    for name, rest in minimal.items():
        words = name.split()
        assert parser.parse_args(words + rest).json is False, name
        assert parser.parse_args(["--json", *words, *rest]).json is True, name
        assert parser.parse_args([*words, *rest, "--json"]).json is True, name


def test_retrieve_and_prompt(ctl, daemon, tmp_path):
    task = {"id": "W-7", "title": "Fix the token refresh retry"}
    if not method_exists(daemon, "prompt.assemble", task=task):
        pytest.skip("prompt.assemble is not implemented yet")
    daemon.call("memory.add", body="Token refresh retries three times", type="semantic",
                scope="global", trust="human", source="test")
    (tmp_path / "task.json").write_text(json.dumps(task))
    prompt = as_json(ctl("prompt", "--task", str(tmp_path / "task.json"), "--json"))
    assert prompt["memory_mode"] in ("relevant", "legacy")
    assert ok(ctl("prompt", "--task", "-", stdin=json.dumps(task))) == prompt["text"] + "\n"
    if not method_exists(daemon, "memory.retrieve", task=task):
        pytest.skip("memory.retrieve is not implemented yet")
    retrieved = as_json(ctl("--json", "retrieve", "--task", "-", stdin=json.dumps(task)))
    assert "fallback_reason" in retrieved


def test_backup_command_makes_the_path_absolute(ctl, daemon, tmp_path):
    out = ok(ctl("backup", "snapshot", cwd=tmp_path))
    assert out.startswith(f"backup written to {tmp_path / 'snapshot'}:")
    assert (tmp_path / "snapshot" / "minionsd-backup.json").is_file()
    again = ctl("backup", "snapshot", cwd=tmp_path)
    assert again.returncode == 1 and "not empty" in again.stderr


def test_service_install_print(tmp_path):
    home = tmp_path / "minions home"
    result = run_ctl("--home", str(home), "service", "install", "--print", "--user")
    executable = str(Path(sys.executable).absolute().parent / "minionsd")
    unit = ok(result)
    assert f'ExecStart={executable} --home "{home}"' in unit
    assert "systemctl --user enable --now minionsd" in result.stderr
    plist = ok(run_ctl("--home", str(home), "service", "install", "--print", "--launchd"))
    assert f"<string>{executable}</string>" in plist and f"<string>{home}</string>" in plist
    # A system unit has PrivateTmp=yes, so its home must live outside /tmp.
    system_home = Path("/var/lib/minions home")
    described = as_json(run_ctl("--home", str(system_home), "--json", "service", "install",
                                "--print", "--system"))
    assert described["minionsd"] == executable and described["home"] == str(system_home)
    assert described["path"] == "/etc/systemd/system/minionsd.service"
    assert described["written"] is False and "ReadWritePaths" in described["unit"]
    # Printing is harmless; installing a unit whose executable PrivateTmp=yes hides is refused.
    hidden = executable.startswith(("/tmp/", "/var/tmp/"))
    assert ("warning" in described) == hidden
    if hidden:
        refused = run_ctl("--home", str(system_home), "service", "install", "--system")
        assert refused.returncode == 1 and "PrivateTmp" in refused.stderr


def test_service_install_writes_the_unit(tmp_path):
    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    result = run_ctl("--home", str(tmp_path / "h"), "service", "install", "--user", env=env)
    target = tmp_path / "config" / "systemd" / "user" / "minionsd.service"
    assert ok(result).startswith(f"wrote {target}")
    assert "systemctl --user daemon-reload" in result.stdout
    assert f"--home {tmp_path / 'h'}" in target.read_text()
    result = run_ctl("--home", str(tmp_path / "h"), "service", "install", "--launchd",
                     env=env)
    plist = tmp_path / "Library" / "LaunchAgents" / "com.minions.minionsd.plist"
    assert plist.is_file() and "launchctl bootstrap gui/" in ok(result)


def test_cli_imports_stay_light():
    probe = ("import minionsd.cli, sys; print(sorted(m for m in sys.modules "
             f"if m.split('.')[0] in {HEAVY!r} or m.startswith(('minionsd.storage', "
             "'minionsd.memory', 'minionsd.service'))))")
    listed = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=clean_env(),
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed
    timed = subprocess.run([sys.executable, "-X", "importtime", "-m", "minionsd.cli", "--help"],
                           cwd=REPO, env=clean_env(), capture_output=True, text=True,
                           timeout=60)
    assert timed.returncode == 0
    imported = {line.rsplit("|", 1)[1].strip() for line in timed.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "minionsd.rpc.client" in imported
    assert not [m for m in imported if m.split(".")[0] in HEAVY], sorted(imported)


def test_progress_draws_only_on_a_tty():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with cli.Progress("maintenance reindex", stream):
        wait_for(lambda: "maintenance reindex running" in stream.getvalue(), timeout=10,
                 what="the progress line")
    assert stream.getvalue().startswith("\r") and stream.getvalue().endswith("\r\x1b[K")
    assert "s" in stream.getvalue().rsplit("running...", 1)[1]

    plain = io.StringIO()
    with cli.Progress("maintenance reindex", plain):
        pass
    assert plain.getvalue() == ""


def test_init_is_local_and_reports_failures_as_errors(tmp_path):
    home = tmp_path / "h"
    out = ok(run_ctl("--home", str(home), "init"))
    assert "(created)" in out and (home / "config.toml").is_file()
    # The daemon to start is the one installed beside this Python (a venv's bin/ is often
    # not on PATH), named in full.
    beside = Path(sys.executable).absolute().parent / "minionsd"
    if beside.is_file():
        assert f"start the daemon with: {beside} --home {home}" in out, out
    assert (home / "notes" / "inbox").is_dir()
    assert "(kept)" in ok(run_ctl("--home", str(home), "init"))
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    failed = run_ctl("--home", str(blocked / "h"), "init")
    assert failed.returncode == 1 and "cannot set up" in failed.stderr


def test_a_daemon_that_dies_mid_call_is_not_reported_as_not_running():
    """The request reached a listener, which went away before answering: the message says so
    (the request may or may not have run), not that nothing is listening."""
    result, got = run_against_a_dying_daemon("status")
    assert got and b'"status"' in got[0]
    assert result.returncode == 3
    assert "not running" not in result.stderr
    assert "before answering" in result.stderr and "may or may not" in result.stderr
    assert "Traceback" not in result.stderr


def run_against_a_dying_daemon(*args: str,
                               env: dict[str, str] | None = None,
                               ) -> tuple[subprocess.CompletedProcess[str], list[bytes]]:
    """Run minionsctl against a listener that reads one request line and closes without
    answering; the result and the request lines it read."""
    import shutil
    import socket
    import tempfile
    import threading

    root = Path(tempfile.mkdtemp(prefix="cli-", dir="/tmp"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(root / "s.sock"))
    listener.listen(1)
    got: list[bytes] = []

    def take_the_request_and_die() -> None:
        conn, _ = listener.accept()
        with conn:
            data = b""
            while b"\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            got.append(data)

    peer = threading.Thread(target=take_the_request_and_die, name="dying-daemon")
    peer.start()
    try:
        result = run_ctl("--socket", str(root / "s.sock"), *args, env=env)
    finally:
        peer.join(30)
        listener.close()
        shutil.rmtree(root, ignore_errors=True)
    return result, got


def test_web_link_follows_the_address_serve_was_started_on(ctl):
    said = ok(ctl("web", "--no-open")).splitlines()
    assert re.search(r"works once, until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(5 minutes\)",
                     said[1]), said
    configured = said[0]
    assert configured.startswith("http://127.0.0.1:8765/login?code=")
    moved = ok(ctl("web", "--no-open", "--listen", "0.0.0.0:9123")).splitlines()[0]
    assert moved.startswith("http://127.0.0.1:9123/login?code=")
    bad = ctl("web", "--no-open", "--listen", "localhost")
    assert bad.returncode != 0 and "--listen must be HOST:PORT" in bad.stderr


def test_web_says_when_no_gateway_answers(ctl):
    import socket

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = ok(ctl("web", "--no-open", "--listen", f"127.0.0.1:{port}"))
    assert f"Nothing answers at http://127.0.0.1:{port}: start the gateway with " \
        "`minionsctl serve`." in out, out
    assert json.loads(ok(ctl("--json", "web", "--no-open", "--listen", f"127.0.0.1:{port}"))
                      )["gateway_running"] is False
