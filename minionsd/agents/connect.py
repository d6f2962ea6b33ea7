"""`minionsctl connect claude-code|codex|cursor`: register the MCP server (and, for Claude
Code, the hooks) in the agent's own configuration files.

Each file is merged, never replaced: only the `minions` server entry and minionsd's own hook
entries are added or updated; everything else the user had stays as it was. A file that
changes is first copied to `<file>.bak-<UTC timestamp>`; a second run with the same settings
changes nothing. JSON files are rewritten with two-space indentation. Codex's TOML is edited
as text (the `[mcp_servers.minions]` table is appended or replaced in place, so comments
elsewhere survive); only a layout that text editing cannot handle (an inline or dotted
`minions` definition) makes it rewrite the whole file with tomli-w, which drops comments, and
it says so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER = "minions"
TARGETS = ("claude-code", "codex", "cursor")
SESSION_START_MATCHER = "startup|resume|clear|compact"
HOOK_TIMEOUT_S = 10
HOOK_EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt"}


class ConnectError(Exception):
    pass


@dataclass
class Change:
    path: Path
    what: str
    fragment: str
    action: str = "unchanged"
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)
    # (old text or None, new text) once planned; written only when every file planned cleanly.
    pending: tuple[str | None, str] | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"path": str(self.path), "what": self.what, "action": self.action,
                "backup": str(self.backup) if self.backup else None, "notes": self.notes}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConnectError(f"cannot read {path}: {exc}") from None


def _write(change: Change, old: str | None, new: str, new_mode: int) -> None:
    from minionsd.fileio import atomic_write_text

    target = change.path.resolve() if change.path.is_symlink() else change.path
    try:
        mode = target.stat().st_mode & 0o777 if old is not None else new_mode
        target.parent.mkdir(parents=True, exist_ok=True)
        if old is not None:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
            backup = target.with_name(f"{target.name}.bak-{stamp}")
            suffix = 1
            while backup.exists():
                suffix += 1
                backup = target.with_name(f"{target.name}.bak-{stamp}-{suffix}")
            shutil.copy2(target, backup)
            change.backup = backup
        atomic_write_text(target, new, mode=mode)
    except OSError as exc:
        raise ConnectError(f"cannot write {target}: {exc.strerror or exc}") from None
    change.action = "updated" if old is not None else "created"


def _merge_json(change: Change, merge: Callable[[dict[str, Any]], None]) -> None:
    old = _read(change.path)
    data: Any = {}
    if old is not None and old.strip():
        try:
            data = json.loads(old)
        except json.JSONDecodeError as exc:
            raise ConnectError(f"{change.path} is not valid JSON (line {exc.lineno}: {exc.msg});"
                               " fix it first, nothing was written") from None
        if not isinstance(data, dict):
            raise ConnectError(f"{change.path} does not hold a JSON object; nothing was written")
    before = json.dumps(data, sort_keys=True)
    merge(data)
    if json.dumps(data, sort_keys=True) == before and old is not None:
        return
    change.pending = (old, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _object_at(data: dict[str, Any], key: str, where: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise ConnectError(f"{where}: '{key}' is not an object; nothing was written")
    return value


# Keys that say how a server is reached. Switching an entry between a local command and a
# gateway URL drops the other form's keys (Codex refuses an entry with both); other keys the
# user added (timeouts, enabled) stay.
STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
REMOTE_KEYS = frozenset({"url", "headers", "bearer_token_env_var", "http_headers",
                         "env_http_headers"})


def _kept(current: Any, entry: dict[str, Any]) -> dict[str, Any]:
    """What of the user's current entry survives a merge with `entry`."""
    if not isinstance(current, dict):
        return {}
    other = STDIO_KEYS if "url" in entry else REMOTE_KEYS
    return {k: v for k, v in current.items() if k not in other}


def _server_merge(entry: dict[str, Any], where: Path) -> Callable[[dict[str, Any]], None]:
    def merge(data: dict[str, Any]) -> None:
        servers = _object_at(data, "mcpServers", where)
        # Keep what the user added to the entry (env, timeouts); ours wins where both set.
        servers[SERVER] = _kept(servers.get(SERVER), entry) | entry
    return merge


def _is_ours(hook: Any, event_word: str) -> bool:
    return (isinstance(hook, dict) and isinstance(hook.get("command"), str)
            and f"hook claude-code {event_word}" in hook["command"])


def _hooks_merge(commands: dict[str, str], where: Path) -> Callable[[dict[str, Any]], None]:
    def merge(data: dict[str, Any]) -> None:
        hooks = _object_at(data, "hooks", where)
        for event, command in commands.items():
            groups = hooks.setdefault(event, [])
            if not isinstance(groups, list):
                raise ConnectError(f"{where}: 'hooks.{event}' is not a list; nothing was written")
            word = HOOK_EVENTS[event]
            mine = [h for g in groups if isinstance(g, dict)
                    for h in (g.get("hooks") if isinstance(g.get("hooks"), list) else [])
                    if _is_ours(h, word)]
            if mine:
                for hook in mine:
                    hook["command"] = command
                continue
            group: dict[str, Any] = {"hooks": [{"type": "command", "command": command,
                                                "timeout": HOOK_TIMEOUT_S}]}
            if event == "SessionStart":
                group = {"matcher": SESSION_START_MATCHER} | group
            groups.append(group)
    return merge


def read_only_rules() -> list[str]:
    """Claude Code permission rules for the memory tools that only read (readOnlyHint): a
    session, headless ones too, may call them without asking; tools that write still ask."""
    from minionsd.agents.tools import TOOLS  # only for claude-code's settings

    return [f"mcp__{SERVER}__{t.name}" for t in TOOLS if t.annotations["readOnlyHint"]]


def _allow_merge(rules: list[str], where: Path) -> Callable[[dict[str, Any]], None]:
    def merge(data: dict[str, Any]) -> None:
        allow = _object_at(data, "permissions", where).setdefault("allow", [])
        if not isinstance(allow, list):
            raise ConnectError(f"{where}: 'permissions.allow' is not a list; nothing was "
                               "written")
        allow.extend(rule for rule in rules if rule not in allow)
    return merge


def _both(*merges: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def merge(data: dict[str, Any]) -> None:
        for one in merges:
            one(data)
    return merge


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _toml_table_span(lines: list[str]) -> tuple[int, int] | None:
    """Lines [start, end) of the `[mcp_servers.minions]` table and its sub-tables."""
    start = None
    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if not match:
            continue
        name = match.group(1).replace('"', "").replace(" ", "")
        ours = name == f"mcp_servers.{SERVER}" or name.startswith(f"mcp_servers.{SERVER}.")
        if start is None and name == f"mcp_servers.{SERVER}":
            start = index
        elif start is not None and not ours:
            return start, index
    return (start, len(lines)) if start is not None else None


def _merge_codex(change: Change, entry: dict[str, Any]) -> None:
    import tomli_w

    old = _read(change.path)
    text = old or ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConnectError(f"{change.path} is not valid TOML ({exc}); fix it first, nothing "
                           "was written") from None
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConnectError(f"{change.path}: 'mcp_servers' is not a table; nothing was written")
    current = servers.get(SERVER) if isinstance(servers.get(SERVER), dict) else {}
    merged = _kept(current, entry) | entry
    if old is not None and merged == current:
        return
    expected = data | {"mcp_servers": servers | {SERVER: merged}}
    block = tomli_w.dumps({"mcp_servers": {SERVER: merged}})
    lines = text.splitlines(keepends=True)
    span = _toml_table_span(lines)
    if span is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n")
                                                            else "\n\n")
        new = text + sep + block
    else:
        rest = "".join(lines[span[1]:])
        new = "".join(lines[:span[0]]) + block + ("\n" + rest if rest else "")
    try:
        textual_ok = tomllib.loads(new) == expected
    except tomllib.TOMLDecodeError:
        textual_ok = False
    if not textual_ok:
        new = tomli_w.dumps(expected)
        change.notes.append("rewrote the whole file with tomli-w: its comments and layout were"
                            " not kept (the original is in the backup)")
    change.pending = (old, new)


@dataclass(frozen=True)
class Remote:
    """`connect --url`: the gateway's MCP endpoint and the variable that holds the token.
    Only the variable's name is ever written; each agent reads the token from it."""
    mcp_url: str
    token_env: str

    def entry(self, target: str) -> dict[str, Any]:
        """The agent's documented remote form (SPEC §5.2)."""
        if target == "claude-code":
            return {"type": "http", "url": self.mcp_url,
                    "headers": {"Authorization": f"Bearer ${{{self.token_env}}}"}}
        if target == "codex":
            return {"url": self.mcp_url, "bearer_token_env_var": self.token_env}
        return {"url": self.mcp_url,
                "headers": {"Authorization": f"Bearer ${{env:{self.token_env}}}"}}


def plan(target: str, scope: str, invocation: list[str], agent_args: list[str],
         home_dir: Path, project_dir: Path, remote: Remote | None = None
         ) -> list[tuple[Change, Callable[[Change], None]]]:
    """What `connect` writes for `target`: (change, plan_it(change)) per file. With `remote`,
    the MCP entry points at the gateway and the hooks run `minionsctl --url`."""
    server = {"command": invocation[0], "args": [*invocation[1:], "mcp", *agent_args]}
    if remote is not None:
        server = remote.entry(target)
    if target == "claude-code":
        user = scope == "user"
        mcp_path = home_dir / ".claude.json" if user else project_dir / ".mcp.json"
        settings = (home_dir if user else project_dir) / ".claude" / "settings.json"
        entry = server if remote is not None else {"type": "stdio"} | server
        commands = {event: shlex.join([*invocation, "hook", "claude-code", word, *agent_args])
                    for event, word in HOOK_EVENTS.items()}
        rules = read_only_rules()
        hooks_fragment = {"hooks": {event: [({"matcher": SESSION_START_MATCHER}
                                             if event == "SessionStart" else {})
                                            | {"hooks": [{"type": "command", "command": c,
                                                          "timeout": HOOK_TIMEOUT_S}]}]
                                    for event, c in commands.items()},
                          "permissions": {"allow": rules}}
        return [
            (Change(mcp_path, f"mcpServers.{SERVER}",
                    json.dumps({"mcpServers": {SERVER: entry}}, indent=2)),
             lambda c: _merge_json(c, _server_merge(entry, c.path))),
            (Change(settings, "hooks.SessionStart, hooks.UserPromptSubmit, permissions.allow",
                    json.dumps(hooks_fragment, indent=2)),
             lambda c: _merge_json(c, _both(_hooks_merge(commands, c.path),
                                            _allow_merge(rules, c.path)))),
        ]
    if target == "codex":
        codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else (
            home_dir / ".codex")
        path = (codex_home if scope == "user" else project_dir / ".codex") / "config.toml"
        import tomli_w

        return [(Change(path, f"[mcp_servers.{SERVER}]",
                        tomli_w.dumps({"mcp_servers": {SERVER: server}}).rstrip("\n")),
                 lambda c: _merge_codex(c, server))]
    if target == "cursor":
        path = (home_dir if scope == "user" else project_dir) / ".cursor" / "mcp.json"
        return [(Change(path, f"mcpServers.{SERVER}",
                        json.dumps({"mcpServers": {SERVER: server}}, indent=2)),
                 lambda c: _merge_json(c, _server_merge(server, c.path)))]
    raise ConnectError(f"unknown agent {target!r}: expected one of " + ", ".join(TARGETS))


NEXT_STEPS = {
    "claude-code": "Restart Claude Code; `/mcp` lists the `minions` server and its tools, and "
                   "each prompt now gets Relevant Memory when there is some.",
    "codex": "Restart Codex; `/mcp` lists the `minions` server and its tools.",
    "cursor": "Reload Cursor; Settings > MCP lists the `minions` server and its tools.",
}


def run(target: str, scope: str, invocation: list[str], agent_args: list[str],
        print_only: bool, home_dir: Path | None = None,
        project_dir: Path | None = None, remote: Remote | None = None) -> dict[str, Any]:
    steps = plan(target, scope, invocation, agent_args, home_dir or Path.home(),
                 project_dir or Path.cwd(), remote)
    for change, plan_it in steps:  # every file is read and merged before any is written
        plan_it(change)
    for change, _ in steps:
        if change.pending is None:
            continue
        old, new = change.pending
        if print_only:
            change.action = "would update" if old is not None else "would create"
        else:
            # A project's files are committed and read by the team; a user's may hold secrets.
            _write(change, old, new, 0o644 if scope == "project" else 0o600)
    return {"agent": target, "scope": scope, "print": print_only,
            "command": (remote.mcp_url if remote is not None
                        else shlex.join([*invocation, "mcp", *agent_args])),
            "files": [c.to_wire() | {"fragment": c.fragment} for c, _ in steps],
            "next": NEXT_STEPS[target]}


def describe(result: dict[str, Any]) -> str:
    lines = []
    for f in result["files"]:
        if result["print"]:
            lines.append(f"# {f['path']} ({f['action']}): {f['what']}\n{f['fragment']}\n")
            continue
        line = f"{f['action']} {f['path']}: {f['what']}"
        if f["backup"]:
            line += f" (backup: {f['backup']})"
        lines.append(line)
        lines += [f"  note: {note}" for note in f["notes"]]
    lines += [f"warning: {w}" for w in result.get("warnings", [])]
    if result["print"]:
        lines.append("# nothing was written (--print)")
    else:
        label = "MCP server URL" if result["command"].startswith("http") else "MCP server command"
        lines.append(f"{label}: {result['command']}")
        lines.append(result["next"])
    return "\n".join(lines)
