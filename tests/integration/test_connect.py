"""`minionsctl connect claude-code|codex|cursor` against temp copies of realistic existing
configuration files (other servers, other hooks, comments), with HOME pointed at a temp dir."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import REPO

CLAUDE_JSON = {
    "numStartups": 42, "theme": "dark", "hasCompletedOnboarding": True,
    "mcpServers": {"github": {"type": "stdio", "command": "npx",
                              "args": ["-y", "@modelcontextprotocol/server-github"],
                              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example"}}},
    "projects": {"/home/dev/payments": {"allowedTools": [], "mcpServers": {},
                                        "hasTrustDialogAccepted": True}},
}
CLAUDE_SETTINGS = {
    "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "~/.claude/hooks/guard-bash.sh"}]}],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "echo \"branch: $(git branch --show-current)\""}]}],
    },
}
CODEX_TOML = """\
# Codex configuration, kept by hand
model = "gpt-5-codex"   # the default model
approval_policy = "on-request"

[mcp_servers.context7]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]
startup_timeout_sec = 20

[mcp_servers.context7.env]
HTTP_PROXY = "http://proxy.internal:3128"

# Profiles: switch with --profile
[profiles.fast]
model = "gpt-5-mini"
"""
CURSOR_JSON = {"mcpServers": {"postgres": {"command": "npx", "args": [
    "-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/dev"]}}}


def connect(*args: str, home: Path, cwd: Path | None = None,
            **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINIONS_", "ANTHROPIC_", "CODEX_"))}
    env.update(HOME=str(home), **env_extra)
    return subprocess.run([sys.executable, "-m", "minionsd.cli", *args], capture_output=True,
                          text=True, timeout=60, env=env, cwd=cwd or home)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def write_json(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path.read_bytes()


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def test_claude_code_user_scope_merges_keeps_a_backup_and_is_idempotent(tmp_path):
    claude_json, settings = tmp_path / ".claude.json", tmp_path / ".claude" / "settings.json"
    original_json = write_json(claude_json, CLAUDE_JSON)
    original_settings = write_json(settings, CLAUDE_SETTINGS)
    minions_home = tmp_path / "minions home"
    out = ok(connect("--home", str(minions_home), "connect", "claude-code", home=tmp_path))
    assert f"updated {claude_json}: mcpServers.minions (backup: " in out
    assert f"updated {settings}: hooks.SessionStart, hooks.UserPromptSubmit, " \
        "permissions.allow (backup: " in out
    assert [b.read_bytes() for b in backups(claude_json)] == [original_json]
    assert [b.read_bytes() for b in backups(settings)] == [original_settings]

    merged = json.loads(claude_json.read_text())
    assert {k: v for k, v in merged.items() if k != "mcpServers"} == {
        k: v for k, v in CLAUDE_JSON.items() if k != "mcpServers"}
    assert merged["mcpServers"]["github"] == CLAUDE_JSON["mcpServers"]["github"]
    entry = merged["mcpServers"]["minions"]
    assert entry["type"] == "stdio" and Path(entry["command"]).is_absolute()
    assert entry["args"][-5:] == ["--home", str(minions_home), "mcp", "--agent", "claude-code"]

    hooks = json.loads(settings.read_text())
    # The user's rules stay; the memory tools that only read are allowed, the ones that
    # write still ask (a headless session is refused them unless --allowedTools names them).
    read_only = [f"mcp__minions__{t}" for t in ("memory_context", "memory_search",
                                                 "memory_get", "knowledge_list",
                                                 "knowledge_get")]
    assert hooks["permissions"] == {"allow": CLAUDE_SETTINGS["permissions"]["allow"]
                                    + read_only,
                                    "deny": CLAUDE_SETTINGS["permissions"]["deny"]}
    assert hooks["hooks"]["PreToolUse"] == CLAUDE_SETTINGS["hooks"]["PreToolUse"]
    prompt_groups = hooks["hooks"]["UserPromptSubmit"]
    assert prompt_groups[0] == CLAUDE_SETTINGS["hooks"]["UserPromptSubmit"][0]
    ours = prompt_groups[1]["hooks"][0]
    assert ours["type"] == "command" and ours["timeout"] == 10
    assert shlex.split(ours["command"])[-5:] == ["hook", "claude-code", "user-prompt",
                                                 "--agent", "claude-code"]
    start = hooks["hooks"]["SessionStart"]
    assert start[0]["matcher"] == "startup|resume|clear|compact"
    assert "session-start" in start[0]["hooks"][0]["command"]

    again = ok(connect("--home", str(minions_home), "connect", "claude-code", home=tmp_path))
    assert f"unchanged {claude_json}" in again and f"unchanged {settings}" in again
    assert len(backups(claude_json)) == 1 and len(backups(settings)) == 1

    moved = tmp_path / "other-home"
    ok(connect("--home", str(moved), "connect", "claude-code", home=tmp_path))
    assert json.loads(settings.read_text())["permissions"]["allow"].count(
        "mcp__minions__memory_context") == 1
    hooks = json.loads(settings.read_text())["hooks"]
    assert len(hooks["UserPromptSubmit"]) == 2 and len(hooks["SessionStart"]) == 1
    assert str(moved) in hooks["UserPromptSubmit"][1]["hooks"][0]["command"]
    assert str(moved) in json.loads(claude_json.read_text())["mcpServers"]["minions"]["args"]


def test_written_claude_code_entries_work(daemon, tmp_path):
    daemon.call("pinned.set", text="Ship small pull requests.")
    daemon.call("memory.add", body="Card numbers are masked by mask_pan() in billing/pan.py.",
                type="semantic", scope="global", trust="human", source="test")
    ok(connect("--home", str(daemon.home), "connect", "claude-code", home=tmp_path))
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")

    def run_hook(event: str, stdin: dict[str, str]) -> str:
        command = hooks[event][0]["hooks"][0]["command"]
        done = subprocess.run(["sh", "-c", command], input=json.dumps(stdin), text=True,
                              capture_output=True, timeout=60, env=env, cwd=tmp_path)
        assert done.returncode == 0 and done.stderr == "", done
        return done.stdout

    assert "Ship small pull requests." in run_hook(
        "SessionStart", {"session_id": "s1", "hook_event_name": "SessionStart"})
    assert "mask_pan()" in run_hook("UserPromptSubmit", {
        "session_id": "s1", "hook_event_name": "UserPromptSubmit",
        "prompt": "where are card numbers masked?"})

    entry = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["minions"]

    async def tools() -> list[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env)
        async with Client(params, mode="legacy") as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert "memory_context" in anyio.run(tools)


def test_claude_code_project_scope_and_print(tmp_path):
    project = tmp_path / "payments"
    project.mkdir()
    printed = ok(connect("--home", "/srv/minions", "connect", "claude-code", "--scope",
                         "project", "--print", home=tmp_path, cwd=project))
    assert f"# {project / '.mcp.json'} (would create): mcpServers.minions" in printed
    assert "nothing was written" in printed and "/srv/minions" not in printed.split(
        "# nothing was written")[0].split("warning:")[0]
    assert not (project / ".mcp.json").exists() and not (project / ".claude").exists()
    out = ok(connect("--home", "/srv/minions", "connect", "claude-code", "--scope", "project",
                     home=tmp_path, cwd=project))
    assert f"created {project / '.mcp.json'}" in out
    assert f"created {project / '.claude' / 'settings.json'}" in out
    assert "minions" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert not (tmp_path / ".claude.json").exists()
    described = json.loads(ok(connect("--json", "--home", "/srv/minions", "connect",
                                      "claude-code", "--scope", "project", home=tmp_path,
                                      cwd=project)))
    assert [f["action"] for f in described["files"]] == ["unchanged", "unchanged"]


def test_codex_keeps_comments_and_other_servers(tmp_path):
    config = tmp_path / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML)
    out = ok(connect("--home", "/srv/minions", "connect", "codex", home=tmp_path))
    assert f"updated {config}: [mcp_servers.minions] (backup: " in out
    assert [b.read_text() for b in backups(config)] == [CODEX_TOML]
    text = config.read_text()
    assert text.startswith(CODEX_TOML)  # appended; every comment and line kept
    data = tomllib.loads(text)
    assert data["mcp_servers"]["context7"]["env"] == {"HTTP_PROXY": "http://proxy.internal:3128"}
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    minions = data["mcp_servers"]["minions"]
    assert minions["args"][-5:] == ["--home", "/srv/minions", "mcp", "--agent", "codex"]
    assert "unchanged" in ok(connect("--home", "/srv/minions", "connect", "codex",
                                     home=tmp_path))
    assert len(backups(config)) == 1

    # The user tunes our entry; a later connect for another home keeps the tuning in place.
    config.write_text(text.replace('"codex",\n]\n', '"codex",\n]\nstartup_timeout_sec = 30\n'))
    assert tomllib.loads(config.read_text())["mcp_servers"]["minions"]["startup_timeout_sec"]
    out = ok(connect("--home", "/srv/other", "connect", "codex", home=tmp_path))
    assert "note:" not in out
    text = config.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["minions"]["startup_timeout_sec"] == 30
    assert "/srv/other" in data["mcp_servers"]["minions"]["args"]
    assert text.count("[mcp_servers.minions]") == 1
    assert "# Profiles: switch with --profile" in text and "# the default model" in text


def test_codex_home_project_scope_and_a_layout_text_editing_cannot_handle(tmp_path):
    codex_home = tmp_path / "codex-home"
    out = ok(connect("--home", "/srv/minions", "connect", "codex", home=tmp_path,
                     CODEX_HOME=str(codex_home)))
    assert f"created {codex_home / 'config.toml'}" in out
    project = tmp_path / "repo"
    (project / ".codex").mkdir(parents=True)
    dotted = '# mine\nmcp_servers.minions.command = "old"\nmodel = "o4"\n'
    (project / ".codex" / "config.toml").write_text(dotted)
    out = ok(connect("--home", "/srv/minions", "connect", "codex", "--scope", "project",
                     home=tmp_path, cwd=project))
    assert "note: rewrote the whole file with tomli-w" in out
    data = tomllib.loads((project / ".codex" / "config.toml").read_text())
    assert data["model"] == "o4" and data["mcp_servers"]["minions"]["command"] != "old"
    assert [b.read_text() for b in backups(project / ".codex" / "config.toml")] == [dotted]


def test_cursor_through_a_symlink_and_a_broken_file(tmp_path):
    real = tmp_path / "dotfiles" / "cursor-mcp.json"
    write_json(real, CURSOR_JSON)
    link = tmp_path / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    ok(connect("--home", "/srv/minions", "connect", "cursor", home=tmp_path))
    assert link.is_symlink()
    servers = json.loads(real.read_text())["mcpServers"]
    assert servers["postgres"] == CURSOR_JSON["mcpServers"]["postgres"]
    assert servers["minions"]["args"][-2:] == ["--agent", "cursor"]

    # A broken second file stops the run before the first is written.
    write_json(tmp_path / ".claude.json", CLAUDE_JSON)
    broken = tmp_path / ".claude" / "settings.json"
    broken.parent.mkdir()
    broken.write_text('{"hooks": {},,}')
    failed = connect("--home", "/srv/minions", "connect", "claude-code", home=tmp_path)
    assert failed.returncode == 1 and failed.stdout == ""
    assert f"{broken} is not valid JSON" in failed.stderr and "nothing was written" in failed.stderr
    assert broken.read_text() == '{"hooks": {},,}' and not backups(broken)
    assert json.loads((tmp_path / ".claude.json").read_text()) == CLAUDE_JSON
    assert not backups(tmp_path / ".claude.json")


def test_connect_warns_when_no_daemon_answers_on_the_home(tmp_path, daemon):
    out = ok(connect("--home", str(tmp_path / "no-daemon"), "connect", "cursor", home=tmp_path))
    sock = tmp_path / "no-daemon" / "engine" / "minionsd.sock"
    assert f"warning: minionsd is not running: there is no socket at {sock}" in out
    assert f"minionsd --home {tmp_path / 'no-daemon'}" in out
    running = ok(connect("--home", str(daemon.home), "connect", "codex", home=tmp_path))
    assert "warning" not in running


def test_project_scope_files_can_be_committed_and_work_for_a_teammate(tmp_path, daemon):
    """No path of this machine in the files, modes a team can read, and the entries work for
    someone whose minionsctl is on PATH and whose home is $MINIONS_HOME."""
    daemon.call("memory.add", body="Card numbers are masked by mask_pan() in billing/pan.py.",
                type="semantic", scope="global", trust="human", source="test")
    project = tmp_path / "payments"
    project.mkdir()
    bin_dir = str(Path(sys.executable).parent)
    path = bin_dir + os.pathsep + os.environ.get("PATH", "")
    for target in ("claude-code", "codex", "cursor"):
        out = ok(connect("--home", str(daemon.home), "connect", target, "--scope", "project",
                         home=tmp_path, cwd=project, PATH=path))
        assert "MINIONS_HOME=" in out  # the daemon's home is not the default one: says so
    written = [project / ".mcp.json", project / ".claude" / "settings.json",
               project / ".codex" / "config.toml", project / ".cursor" / "mcp.json"]
    for file in written:
        text = file.read_text()
        assert str(tmp_path) not in text and bin_dir not in text and sys.executable not in text
        assert file.stat().st_mode & 0o777 == 0o644, file
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["minions"]
    assert entry["command"] == "minionsctl"
    assert entry["args"] == ["mcp", "--agent", "claude-code"]
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert command == "minionsctl hook claude-code user-prompt --agent claude-code"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    env.update(PATH=path, MINIONS_HOME=str(daemon.home))
    done = subprocess.run(["sh", "-c", command], text=True, capture_output=True, timeout=60,
                          input=json.dumps({"session_id": "s1", "prompt": "card numbers"}),
                          env=env, cwd=project)
    assert done.returncode == 0 and "mask_pan()" in done.stdout, done
    refused = connect("--socket", str(daemon.socket), "connect", "cursor", "--scope",
                      "project", home=tmp_path, cwd=project)
    assert refused.returncode == 1 and "drop --socket" in refused.stderr


def test_a_permissions_allow_that_is_not_a_list_stops_claude_code_connect(tmp_path):
    settings = tmp_path / ".claude" / "settings.json"
    original = write_json(settings, {"permissions": {"allow": "mcp__minions"}})
    done = connect("--home", str(tmp_path / "h"), "connect", "claude-code", home=tmp_path)
    assert done.returncode == 1 and "'permissions.allow' is not a list" in done.stderr
    assert settings.read_bytes() == original and not backups(settings)
    assert not (tmp_path / ".claude.json").exists()  # nothing was written, anywhere
