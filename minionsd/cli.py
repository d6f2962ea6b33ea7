"""minionsctl: a thin client of the daemon's socket API.

Each command is one JSON-RPC call plus formatting. Imports stay light (standard library and
the client module) so a call returns quickly; the few commands that work without a daemon
(`init`, `restore`, `service install`) import what they need when they run. Exit codes: 0 ok,
1 an error reported by the daemon (or by a local command), 2 usage, 3 the daemon is not
reachable.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.rpc.client import Client, DaemonUnavailable, RpcError, socket_for_home

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
CALL_TIMEOUT_S = 60.0
# Jobs that can run for minutes on a big home: a long socket timeout and a progress line.
SLOW_COMMANDS = frozenset({"maintenance", "backup", "consolidate"})
SLOW_CALL_TIMEOUT_S = 3600.0


class UsageError(Exception):
    pass


class CommandError(Exception):
    """A local command (no daemon involved) failed; reported like a daemon error, exit 1."""


class Progress:
    """An elapsed-time spinner on stderr while a slow call waits; nothing unless a TTY.

    It starts after a short delay so quick answers print no flicker, and erases its line
    before the result is printed.
    """

    FRAMES = "|/-\\"
    DELAY_S = 0.3
    TICK_S = 0.1

    def __init__(self, label: str, stream: Any = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def __enter__(self) -> Progress:
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        if self._stop.wait(self.DELAY_S):
            return
        frame = 0
        while True:
            elapsed = time.monotonic() - started
            self.stream.write(f"\r{self.FRAMES[frame % len(self.FRAMES)]} {self.label} "
                              f"running... {elapsed:.1f}s")
            self.stream.flush()
            self._drawn = True
            frame += 1
            if self._stop.wait(self.TICK_S):
                return

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _home(args: argparse.Namespace) -> Path:
    raw = args.home or os.environ.get("MINIONS_HOME") or "~/.minions"
    return Path(raw).expanduser().absolute()


def _socket(args: argparse.Namespace) -> Path:
    return Path(args.socket).expanduser() if args.socket else socket_for_home(_home(args))


def _read_stdin() -> str:
    """Standard input as strict UTF-8 (a leading BOM dropped), whatever the locale says:
    bytes that are not UTF-8 are refused, never replaced."""
    raw = sys.stdin.buffer.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"standard input is not valid UTF-8 ({exc.reason} at byte "
                         f"{exc.start}); convert it first, e.g. iconv -f latin1 -t utf-8"
                         ) from None


def _read_input(source: str) -> str:
    if source == "-":
        return _read_stdin()
    try:
        return Path(source).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {source}: {exc}") from None


def _read_task(source: str) -> dict[str, Any]:
    text = _read_input(source)
    try:
        task = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--task must be a JSON object: {exc}") from None
    if not isinstance(task, dict):
        raise UsageError("--task must be a JSON object")
    return task


def _parse_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


# --- formatting ------------------------------------------------------------------------------

def _fmt_record(record: dict[str, Any]) -> str:
    lines = [f"{record['id']}  [{record['status']}] {record['type']} {record['scope']} "
             f"trust={record['trust']}{' pinned' if record.get('pinned') else ''}"]
    if record.get("title"):
        lines.append(f"  title:   {record['title']}")
    lines.append(f"  source:  {record['source']}")
    lines.append(f"  created: {record['created_at']}  updated: {record['updated_at']}")
    for key in ("expires_at", "superseded_by", "retracted_reason"):
        if record.get(key):
            lines.append(f"  {key}: {record[key]}")
    lines.append("")
    lines.append(record["body"])
    return "\n".join(lines)


def _fmt_search(result: dict[str, Any]) -> str:
    lines = [f"{result['total']} match(es)"]
    for rec in result["records"]:
        title = rec.get("title") or rec["body"][:60].replace("\n", " ")
        lines.append(f"{rec['id']}  {rec['status']:<10} {rec['scope']:<20} {title}")
        if rec.get("snippet"):
            lines.append(f"    {rec['snippet'].replace(chr(10), ' ')[:160]}")
    return "\n".join(lines)


def _fmt_status(st: dict[str, Any]) -> str:
    inbox, cons, recs = st["inbox"], st["consolidation"], st["records"]
    lines = [
        f"minionsd {st['version']}  pid {st['pid']}  up {st['uptime_s']:.0f}s",
        f"home:    {st['home']}",
        f"socket:  {st['socket']}",
        f"inbox:   {inbox['pending']} pending, {inbox['eligible']} eligible, "
        f"{inbox['held']} held, {inbox.get('quarantined', 0)} quarantined",
        f"consolidation: {cons['batches']} batches, last {cons['last_at'] or 'never'} "
        f"({cons['last_mode'] or '-'}), circuit breaks {cons['circuit_breaks']}",
        "records: " + ", ".join(f"{v} {k}" for k, v in recs.items()),
        f"retrieval: {'on' if st['retrieval']['enabled'] else 'off'}"
        f"{' (shadow)' if st['retrieval']['shadow'] else ''}; "
        f"llm: {'configured' if st['llm']['configured'] else 'not configured (regex digests)'}",
    ]
    llm_failure = st["llm"].get("last_failure")
    if llm_failure:
        lines.append(f"llm last failure: {llm_failure['at']} ({llm_failure.get('purpose', '-')}) "
                     f"{llm_failure['reason']}")
    reload_failure = (st.get("config") or {}).get("last_reload_failure")
    if reload_failure:
        lines.append(f"config reload failed: {reload_failure['at']} {reload_failure['reason']}")
    for job in st.get("jobs", []):
        last = job.get("last_result")
        lines.append(f"job {job['id']}: next {job.get('next_run_at') or '-'}"
                     + (f", last {last}" if last else ""))
    return "\n".join(lines)


def _fmt_generic(result: Any) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False)


# --- commands ---------------------------------------------------------------------------------

Call = Callable[..., Any]


def cmd_init(args: argparse.Namespace, _call: Call) -> tuple[Any, Callable[[Any], str]]:
    from minionsd.config import example_toml
    from minionsd.fileio import atomic_write_text
    from minionsd.home import Home

    home = Home(_home(args))
    created_config = not home.config.exists()
    try:
        home.ensure()
        if created_config:
            atomic_write_text(home.config, example_toml())
    except OSError as exc:
        # Not a connection problem: main() would otherwise report it as one (exit 3).
        raise CommandError(f"cannot set up {home.root}: {exc}") from None
    result = {"home": str(home.root), "config": str(home.config),
              "created_config": created_config}
    return result, lambda r: (f"home ready at {r['home']}\nconfig: {r['config']}"
                              f"{' (created)' if r['created_config'] else ' (kept)'}\n"
                              f"start the daemon with: minionsd --home {r['home']}")


def cmd_restore(args: argparse.Namespace, _call: Call) -> tuple[Any, Callable[[Any], str]]:
    from minionsd.errors import MinionsError
    from minionsd.restore import restore

    home = _home(args)
    try:
        result = restore(Path(args.path).expanduser().absolute(), home, force=args.force)
    except MinionsError as exc:
        raise CommandError(exc.detail) from None
    return result, lambda r: (f"restored {r['backup']} into {r['home']}: {r['records']} "
                              f"record(s), {r['files']} file(s), {r['bytes']} bytes; "
                              f"database integrity {r['integrity']}\n"
                              f"start the daemon with: minionsd --home {r['home']}")


def _minionsd_executable() -> str:
    """The daemon's console script installed beside this Python (a venv's bin/, /usr/bin)."""
    # Not resolved: a venv's python is a symlink into the base install, whose bin/ has no
    # minionsd.
    beside = Path(sys.executable).absolute().parent / "minionsd"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    raise CommandError(f"no minionsd executable beside {sys.executable}; install minionsd "
                       "into this Python environment first")


def cmd_service_install(args: argparse.Namespace,
                        _call: Call) -> tuple[Any, Callable[[Any], str]]:
    from minionsd import service
    from minionsd.errors import MinionsError

    kind = args.kind or ("launchd" if sys.platform == "darwin" else "user")
    executable, home = _minionsd_executable(), str(_home(args))
    try:
        text = service.render_unit(kind, executable, home)
        if kind == "system":
            service.check_system_paths(executable, home)
    except MinionsError as exc:
        raise CommandError(exc.detail) from None
    path = service.default_install_path(kind)
    result: dict[str, Any] = {"kind": kind, "path": str(path), "minionsd": executable,
                              "home": home, "written": False,
                              "commands": service.enable_commands(kind, path)}
    if args.print_only:
        result["unit"] = text
        return result, _fmt_service
    from minionsd.fileio import atomic_write_text

    try:
        atomic_write_text(path, text, mode=0o644)
    except OSError as exc:
        hint = " (a system unit needs root: use sudo, or --print)" if kind == "system" else ""
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}{hint}") from None
    result["written"] = True
    return result, _fmt_service


def _fmt_service(r: dict[str, Any]) -> str:
    steps = [f"  {command}" for command in r["commands"]]
    if r["kind"] == "system":
        steps.insert(0, f"  (the home {r['home']} must exist and belong to the user 'minions')")
    if not r["written"]:
        # stdout carries only the unit, so it can be redirected into place.
        print(f"# install as {r['path']}, then:\n" + "\n".join(steps), file=sys.stderr)
        return r["unit"].rstrip("\n")
    return f"wrote {r['path']}\nenable and start it with:\n" + "\n".join(steps)


def _simple(method: str, build: Callable[[argparse.Namespace], dict[str, Any]],
            fmt: Callable[[Any], str] = _fmt_generic) -> Callable[..., Any]:
    def run(args: argparse.Namespace, call: Call) -> tuple[Any, Callable[[Any], str]]:
        return call(method, build(args)), fmt
    return run


def _note_params(args: argparse.Namespace) -> dict[str, Any]:
    body = args.text
    if body == "-":
        body = _read_stdin()
        if not body.strip():
            raise UsageError("note -: standard input was empty; pipe the note's text in, "
                             "e.g. printf 'text' | minionsctl note -")
    params = {"body": body, "author": args.author or getpass.getuser()}
    for key in ("title", "kind", "project", "task", "outcome"):
        if getattr(args, key):
            params[key] = getattr(args, key)
    if args.hold:
        params["hold"] = True
    return params


def _kb_add_params(args: argparse.Namespace) -> dict[str, Any]:
    params = {"category": args.category, "title": args.title,
              "body": _read_input(args.file), "author": args.author or getpass.getuser()}
    if args.project:
        params["project"] = args.project
    if args.tag:
        params["tags"] = args.tag
    return params


def _pinned_text(args: argparse.Namespace) -> dict[str, Any]:
    if args.text is not None:
        return {"text": args.text}
    return {"text": _read_input(args.file or "-")}


def _search_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    for key in ("type", "scope", "project", "agent"):
        if getattr(args, key):
            params[key] = getattr(args, key)
    if args.status:
        params["status"] = args.status
    return params


def _task_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"task": _read_task(args.task)}
    if args.project:
        params["project"] = args.project
    if args.agent:
        params["agent"] = args.agent
    return params


def _fmt_inbox(result: dict[str, Any]) -> str:
    if "quarantined" in result:
        if not result["quarantined"]:
            return "quarantine is empty"
        return "\n".join(f"{q['name']:<60} {q['at']}  {' '.join(q['reason'].split())}"
                         for q in result["quarantined"])  # one line per file
    if not result["notes"]:
        return "inbox is empty"
    return "\n".join(
        f"{n['name']:<60} {n['author']:<16} {n['kind']:<8} {n['bytes']:>7}B"
        f"{'  held' if n['held'] else ''}{'  eligible' if n['eligible'] else ''}"
        for n in result["notes"])


def _fmt_consolidate(r: dict[str, Any]) -> str:
    return (f"mode {r['mode']}: {r['notes']} note(s) archived, {r['records_upserted']} "
            f"record(s) upserted, {len(r['kb_entries'])} KB entr(ies)")


def _fmt_kb_list(r: dict[str, Any]) -> str:
    return "\n".join(f"{e['path']:<70} {e['title']}" for e in r["entries"]) or "no entries"


def _fmt_purge(r: dict[str, Any]) -> str:
    head = f"purged {r['id']} at {r['purged_at']}"
    if not r["files"]:
        return head + "; no file in the home holds its text"
    return "\n".join([head + "; these files still hold its text (edit them by hand):",
                      *(f"  {path}" for path in r["files"])])


def _fmt_backup(r: dict[str, Any]) -> str:
    return (f"backup written to {r['path']}: {r['records']} record(s), {r['files']} file(s), "
            f"{r['bytes']} bytes")


# --- agents: mcp, hook, connect (minionsd/agents/, imported only when these commands run) ---

def _ctl_invocation(args: argparse.Namespace) -> list[str]:
    """How an agent runs this minionsctl: absolute paths, and the daemon it should reach."""
    beside = Path(sys.executable).absolute().parent / "minionsctl"
    if beside.is_file() and os.access(beside, os.X_OK):
        command = [str(beside)]
    else:
        command = [str(Path(sys.executable).absolute()), "-m", "minionsd.cli"]
    if args.socket:
        return [*command, "--socket", str(Path(args.socket).expanduser().absolute())]
    return [*command, "--home", str(_home(args))]


def _identity_args(args: argparse.Namespace) -> list[str]:
    words = ["--agent", args.agent] if args.agent else []
    return words + (["--project", args.project] if args.project else [])


def cmd_connect(args: argparse.Namespace, _call: Call) -> tuple[Any, Callable[[Any], str]]:
    from minionsd.agents import connect

    if not args.agent:
        args.agent = args.target
    try:
        result = connect.run(args.target, args.scope, _ctl_invocation(args),
                             _identity_args(args), args.print_only)
    except connect.ConnectError as exc:
        raise CommandError(str(exc)) from None
    return result, connect.describe


def run_mcp(args: argparse.Namespace) -> int:
    from minionsd.agents.project import IdentityError, resolve_agent, resolve_project
    from minionsd.agents.session import Session

    try:
        session = Session.create(args.home, args.socket, resolve_agent(args.agent),
                                 resolve_project(args.project))
    except IdentityError as exc:
        print(f"minionsctl mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from minionsd.agents import mcp_server

    try:
        return mcp_server.run(session)
    except KeyboardInterrupt:
        return EXIT_OK


def run_hook(args: argparse.Namespace) -> int:
    from minionsd.agents import hooks

    return hooks.run(args.hook_agent, args.event, home=args.home, socket=args.socket,
                     agent=args.agent, project=args.project)


def is_hook_invocation(argv: list[str]) -> bool:
    """Whether the command word of `argv` (after --home/--socket values) is `hook`."""
    words = iter(argv)
    for word in words:
        if word in ("--home", "--socket"):
            next(words, None)
        elif not word.startswith("-"):
            return word == "hook"
    return False


AGENT_RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {"mcp": run_mcp,
                                                                  "hook": run_hook}


def add_agent_parsers(add: Callable[..., argparse.ArgumentParser]) -> None:
    def identity(p: argparse.ArgumentParser) -> None:
        p.add_argument("--agent", help="author and agent of this session "
                                       "(default $MINIONS_AGENT, else 'agent')")
        p.add_argument("--project", help="project name, or 'auto' (default): the git remote "
                                         "origin's repository name, else the directory name")

    identity(add("mcp", "serve the memory tools over MCP on stdio (agents start this)"))
    p = add("hook", "run a Claude Code hook (hook JSON on stdin; never fails the session)")
    # Free-form, not choices: a usage error's exit 2 would block the user's prompt.
    p.add_argument("hook_agent", metavar="AGENT", nargs="?", default="", help="claude-code")
    p.add_argument("event", metavar="EVENT", nargs="?", default="",
                   help="session-start or user-prompt")
    identity(p)
    p = add("connect", "register the MCP server (and Claude Code's hooks) in an agent's config")
    p.add_argument("target", metavar="AGENT", choices=("claude-code", "codex", "cursor"),
                   help="claude-code, codex or cursor")
    p.add_argument("--scope", choices=("user", "project"), default="user",
                   help="user config (default) or this directory's project config")
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the entries and the files they go to, write nothing")
    identity(p)


COMMANDS: dict[str, Callable[..., Any]] = {
    "init": cmd_init,
    "status": _simple("status", lambda a: {}, _fmt_status),
    "note": _simple("inbox.submit", _note_params,
                    lambda r: f"{'duplicate, not written' if r['duplicate'] else 'written'}: "
                              f"{r['path']}"),
    "inbox": _simple("inbox.list", lambda a: {"quarantined": True} if a.quarantined else {},
                     _fmt_inbox),
    "inbox requeue": _simple("inbox.requeue", lambda a: {"name": a.name},
                             lambda r: f"requeued: {r['path']}"),
    "consolidate": _simple("consolidation.run", lambda a: {"force": a.force}, _fmt_consolidate),
    "search": _simple("memory.search", _search_params, _fmt_search),
    "show": _simple("memory.get", lambda a: {"id": a.id}, _fmt_record),
    "pin": _simple("memory.pin", lambda a: {"id": a.id}, _fmt_record),
    "expire": _simple("memory.expire", lambda a: {"id": a.id}, _fmt_record),
    "retract": _simple("memory.retract", lambda a: {"id": a.id, "reason": a.reason},
                       _fmt_record),
    "supersede": _simple("memory.supersede", lambda a: {"id": a.id, "by": a.by}, _fmt_record),
    "purge": _simple("memory.purge", lambda a: {"id": a.id, "reason": a.reason}, _fmt_purge),
    "kb add": _simple("knowledge.create", _kb_add_params,
                      lambda r: f"created {r['path']} ({r['record_id']})"),
    "kb list": _simple("knowledge.list",
                       lambda a: {"category": a.category} if a.category else {}, _fmt_kb_list),
    "kb show": _simple("knowledge.get", lambda a: {"path": a.path},
                       lambda r: f"{r['path']}  [{r['category']}]\n\n{r['body']}"),
    "pinned show": _simple("pinned.get", lambda a: {}, lambda r: r["text"]),
    "pinned set": _simple("pinned.set", _pinned_text,
                          lambda r: f"pinned.md now {r['code_units']} code units"),
    "pinned append": _simple("pinned.append", _pinned_text,
                             lambda r: f"pinned.md now {r['code_units']} code units"),
    "retrieve": _simple("memory.retrieve", _task_params,
                        lambda r: r["text"] or f"(no memory: {r['fallback_reason']})"),
    "prompt": _simple("prompt.assemble", _task_params, lambda r: r["text"]),
    "config get": _simple("config.get", lambda a: {"key": a.key} if a.key else {},
                          lambda r: _fmt_generic(r["value"])),
    "config set": _simple("config.set",
                          lambda a: {"key": a.key, "value": _parse_value(a.value)},
                          lambda r: f"{r['key']} = {json.dumps(r['value'])}"
                                    + ("" if r.get("applied", True)
                                       else " (takes effect after a restart)")),
    "maintenance": _simple("maintenance.run", lambda a: {"job": a.job}),
    "telemetry": _simple("telemetry.retrievals", lambda a: {"limit": a.limit}),
    "backup": _simple("backup.create",
                      lambda a: {"path": str(Path(a.path).expanduser().absolute())},
                      _fmt_backup),
    "restore": cmd_restore,
    "service install": cmd_service_install,
    "connect": cmd_connect,
}


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the raw JSON-RPC result")
    parser = argparse.ArgumentParser(prog="minionsctl", description="Control a running minionsd.")
    parser.add_argument("--home", help="home directory (default $MINIONS_HOME or ~/.minions)")
    parser.add_argument("--socket", help="socket path (default from the home)")
    parser.add_argument("--json", action="store_true", help="print the raw JSON-RPC result")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str, parent: Any = sub) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help_text, parents=[common])

    add("init", "create the home layout and a commented config.toml")
    add("status", "show daemon, inbox, consolidation and record status")
    p = add("note", "submit a note to the inbox")
    p.add_argument("text", help="the note's text, or - to read it from standard input")
    for opt in ("--author", "--title", "--kind", "--project", "--task", "--outcome"):
        p.add_argument(opt)
    p.add_argument("--hold", action="store_true")
    p = add("inbox", "list inbox notes (or, with --quarantined, the quarantined files)")
    p.add_argument("--quarantined", action="store_true",
                   help="list notes/quarantine/ with each file's reason")
    inbox = p.add_subparsers(dest="sub", metavar="SUB")
    add("requeue", "move a fixed file from notes/quarantine/ back into the inbox", inbox
        ).add_argument("name")
    p = add("consolidate", "run a consolidation batch now")
    p.add_argument("--force", action="store_true", help="run even below the threshold")
    p = add("search", "full-text search over records")
    p.add_argument("query")
    for opt in ("--type", "--scope", "--project", "--agent"):
        p.add_argument(opt)
    p.add_argument("--status", action="append", help="status to include (repeatable)")
    p.add_argument("--limit", type=int, default=20)
    for name in ("show", "pin", "expire"):
        add(name, f"{name} a record").add_argument("id")
    p = add("retract", "retract a record")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p = add("purge", "delete a record for good (a leaked secret); lists files still holding it")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p = add("supersede", "mark a record superseded by a newer one")
    p.add_argument("id")
    p.add_argument("--by", required=True)
    kb = add("kb", "knowledge base").add_subparsers(dest="sub", required=True, metavar="SUB")
    p = add("add", "add a knowledge entry (body from --file or stdin)", kb)
    p.add_argument("--category", required=True)
    p.add_argument("--title", required=True)
    p.add_argument("--file", default="-")
    p.add_argument("--author")
    p.add_argument("--project")
    p.add_argument("--tag", action="append")
    add("list", "list knowledge entries", kb).add_argument("--category")
    add("show", "show a knowledge entry", kb).add_argument("path")
    pinned = add("pinned", "pinned context").add_subparsers(dest="sub", required=True,
                                                            metavar="SUB")
    add("show", "print pinned.md", pinned)
    for name in ("set", "append"):
        p = add(name, f"{name} pinned.md (text argument, --file, or stdin)", pinned)
        p.add_argument("text", nargs="?")
        p.add_argument("--file")
    for name in ("retrieve", "prompt"):
        p = add(name, f"{name} for a task JSON (file or - for stdin)")
        p.add_argument("--task", required=True)
        p.add_argument("--project")
        p.add_argument("--agent")
    cfg = add("config", "read or change configuration").add_subparsers(dest="sub",
                                                                       required=True,
                                                                       metavar="SUB")
    add("get", "show the config or one dotted key", cfg).add_argument("key", nargs="?")
    p = add("set", "set a dotted key (value parsed as JSON, else a string)", cfg)
    p.add_argument("key")
    p.add_argument("value")
    p = add("maintenance", "run a maintenance job now")
    p.add_argument("job", choices=("kb_sweep", "retention", "expiry", "rescan", "reindex"))
    add("telemetry", "recent retrieval telemetry").add_argument("--limit", type=int, default=20)
    add("backup", "back up the running daemon's home into a new or empty directory"
        ).add_argument("path")
    p = add("restore", "restore a backup into the home (the daemon must be stopped)")
    p.add_argument("path")
    p.add_argument("--force", action="store_true", help="replace a home that already has data")
    svc = add("service", "run minionsd as a service").add_subparsers(dest="sub", required=True,
                                                                     metavar="SUB")
    p = add("install", "write a systemd or launchd service file for this minionsd and home",
            svc)
    kinds = p.add_mutually_exclusive_group()
    for kind, where in (("user", "systemd user unit (the default on Linux)"),
                        ("system", "systemd system unit, run as the user 'minions'"),
                        ("launchd", "launchd agent (the default on macOS)")):
        kinds.add_argument(f"--{kind}", dest="kind", action="store_const", const=kind,
                           help=where)
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the file instead of writing it")
    add_agent_parsers(add)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if exc.code and is_hook_invocation(sys.argv[1:] if argv is None else argv):
            return EXIT_OK  # exit 2 from a hook would block the user's prompt
        return EXIT_USAGE if exc.code else EXIT_OK
    name = args.command + (f" {args.sub}" if getattr(args, "sub", None) else "")
    if name in AGENT_RUNNERS:
        return AGENT_RUNNERS[name](args)
    slow = name in SLOW_COMMANDS
    client = Client(_socket(args), timeout=SLOW_CALL_TIMEOUT_S if slow else CALL_TIMEOUT_S)
    label = " ".join([name, *([args.job] if name == "maintenance" else [])])

    def call(method: str, params: dict[str, Any]) -> Any:
        if not slow:
            return client.call(method, params)
        with Progress(label):
            return client.call(method, params)

    try:
        result, fmt = COMMANDS[name](args, call)
    except UsageError as exc:
        print(f"minionsctl: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except CommandError as exc:
        print(f"minionsctl: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except DaemonUnavailable as exc:
        how = (f"minionsd --home {_home(args)}   (or scripts/run, or "
               "systemctl --user start minionsd)")
        if isinstance(exc.__cause__, FileNotFoundError | ConnectionRefusedError):
            # Connecting failed: nothing listens there, so the request never left.
            print(f"minionsctl: minionsd is not running (no answer on {client.socket_path})."
                  f"\nStart it with: {how}", file=sys.stderr)
        else:
            print(f"minionsctl: minionsd went away before answering ({exc}); the request may "
                  "or may not have been carried out. The daemon's log says why it stopped; "
                  f"`minionsctl status` shows whether it is back.\nTo start it again: {how}",
                  file=sys.stderr)
        return EXIT_UNREACHABLE
    except RpcError as exc:
        print(f"minionsctl: {exc.message}: {exc.detail or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_ERROR
    except TimeoutError as exc:
        print(f"minionsctl: {exc}; minionsd is busy or hung, and the request may still "
              "complete", file=sys.stderr)
        return EXIT_UNREACHABLE
    except OSError as exc:
        print(f"minionsctl: cannot talk to minionsd on {client.socket_path}: {exc}",
              file=sys.stderr)
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        print("minionsctl: interrupted (a job already sent keeps running in the daemon)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        client.close()
    try:
        print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else fmt(result))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left early (`| head`); point stdout at /dev/null so the flush at exit
        # does not fail a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
