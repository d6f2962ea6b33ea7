"""minionsctl's agent commands: `mcp`, `hook` and `connect`. Their code lives in
minionsd/agents/ and is imported only when one of these commands runs."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    Call,
    CommandError,
    UsageError,
    home_of,
    remote_of,
    start_command,
)


def _ctl_invocation(args: argparse.Namespace) -> list[str]:
    """How an agent runs this minionsctl: absolute paths, and the daemon it should reach."""
    beside = Path(sys.executable).absolute().parent / "minionsctl"
    if beside.is_file() and os.access(beside, os.X_OK):
        command = [str(beside)]
    else:
        command = [str(Path(sys.executable).absolute()), "-m", "minionsd.cli"]
    if args.socket:
        return [*command, "--socket", str(Path(args.socket).expanduser().absolute())]
    return [*command, "--home", str(home_of(args))]


def _project_invocation(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """What project-scope files run (`minionsctl` by name, no path of this machine) and the
    notes that say what that means here."""
    if args.socket:
        raise CommandError("--scope project writes files a team commits, and a socket path "
                           "belongs to one machine: drop --socket (each teammate's minionsctl "
                           "then finds its daemon through $MINIONS_HOME, else ~/.minions), or "
                           "use --scope user")
    notes = []
    if shutil.which("minionsctl") is None:
        notes.append("`minionsctl` is not on PATH here; the project files run it by name, so "
                     "every teammate (and you) needs it on PATH")
    default = Path(os.environ.get("MINIONS_HOME") or "~/.minions").expanduser().absolute()
    if home_of(args) != default:
        notes.append(f"the project files name no home: sessions here reach {default} unless "
                     f"MINIONS_HOME={home_of(args)} is set in the agent's environment")
    return ["minionsctl"], notes


def _daemon_warning(args: argparse.Namespace) -> str | None:
    from minionsd.agents.session import Session

    problem = Session.create(str(home_of(args)), args.socket, "agent", None).problem()
    if problem is None:
        return None
    return (f"{problem} The agent's memory tools will report it as down until it runs: start "
            f"it with `{start_command(home_of(args))}` (or as a service).")


def _identity_args(args: argparse.Namespace) -> list[str]:
    words = ["--agent", args.agent] if args.agent else []
    return words + (["--project", args.project] if args.project else [])


def _remote_for_connect(args: argparse.Namespace) -> Any:
    """connect --url: the gateway's /mcp URL (with ?project= when --project names one) and the
    token's variable; the token itself is never read here, let alone written."""
    from urllib.parse import quote

    from minionsd.agents import connect
    from minionsd.rpc.http_client import endpoint_url

    try:
        mcp_url = endpoint_url(args.url, "/mcp")
    except ValueError as exc:
        raise UsageError(f"--url: {exc}") from None
    var = args.token_env or "MINIONS_TOKEN"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        raise UsageError(f"--token-env {var!r} is not an environment variable name")
    if args.project and args.project != "auto":
        mcp_url += "?project=" + quote(args.project, safe="")
    return connect.Remote(mcp_url, var)


def _remote_invocation(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """How a hook on the agent's machine runs minionsctl against the gateway (project files
    are shared, so they name it without a path), and notes on what that means here."""
    notes = []
    if args.scope == "project":
        command = ["minionsctl"]
        if shutil.which("minionsctl") is None:
            notes.append("`minionsctl` is not on PATH here; the project files run it by name, "
                         "so every teammate (and you) needs it on PATH")
    else:
        command = _ctl_invocation(args)
        command = command[:-2] if command[-2] in ("--home", "--socket") else command
    return [*command, "--url", args.url, "--token-env",
            args.token_env or "MINIONS_TOKEN"], notes


def cmd_connect(args: argparse.Namespace, _call: Call) -> tuple[Any, Callable[[Any], str]]:
    from minionsd.agents import connect

    if not args.agent:
        args.agent = args.target
    remote = _remote_for_connect(args) if args.url else None
    if remote is not None:
        invocation, notes = _remote_invocation(args)
    else:
        invocation, notes = (_project_invocation(args) if args.scope == "project"
                             else (_ctl_invocation(args), []))
    try:
        result = connect.run(args.target, args.scope, invocation, _identity_args(args),
                             args.print_only, remote=remote)
    except connect.ConnectError as exc:
        raise CommandError(str(exc)) from None
    # Through a gateway, the daemon is on another machine: nothing to probe here.
    warning = None if remote is not None else _daemon_warning(args)
    result["warnings"] = notes + ([warning] if warning else [])
    return result, connect.describe


def gateway_transport(args: argparse.Namespace, timeout: float) -> tuple[Any, str] | None:
    """(transport, URL) for a session that goes through a gateway (--url or $MINIONS_URL):
    each call a fresh POST /rpc, so calls from several threads never share a connection.
    None: the socket."""
    remote = remote_of(args)
    if remote is None:
        return None
    from minionsd.rpc.http_client import HttpClient

    url, token = remote

    def transport(method: str, params: dict[str, Any]) -> Any:
        with HttpClient(url, token, timeout=timeout) as client:
            return client.call(method, params)

    return transport, HttpClient(url, token).url


def run_mcp(args: argparse.Namespace) -> int:
    from minionsd.agents.project import IdentityError, resolve_agent, resolve_project
    from minionsd.agents.session import CALL_TIMEOUT_S, Session

    try:
        session = Session.create(args.home, args.socket, resolve_agent(args.agent),
                                 resolve_project(args.project))
        remote = gateway_transport(args, CALL_TIMEOUT_S)
    except (IdentityError, UsageError, ValueError) as exc:
        print(f"minionsctl mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if remote is not None:
        session = session._replace(transport=remote[0], endpoint=remote[1])
    from minionsd.agents import mcp_server

    try:
        return mcp_server.run(session)
    except SystemExit as stop:  # SIGINT or SIGTERM: 128 + its number
        return stop.code if isinstance(stop.code, int) else EXIT_OK
    except KeyboardInterrupt:
        return EXIT_OK


def run_hook(args: argparse.Namespace) -> int:
    from minionsd.agents import hooks

    try:
        remote = gateway_transport(args, hooks.SOCKET_TIMEOUT_S)
    except (UsageError, ValueError) as exc:  # a hook never fails the session
        print(f"minionsctl hook {args.event}: {exc}", file=sys.stderr)
        return EXIT_OK
    return hooks.run(args.hook_agent, args.event, home=args.home, socket=args.socket,
                     agent=args.agent, project=args.project,
                     transport=remote[0] if remote else None,
                     endpoint=remote[1] if remote else None)


def is_hook_invocation(argv: list[str]) -> bool:
    """Whether the command word of `argv` is `hook`: the first word that is neither an option
    nor the value of one of the top-level options that take one (--home, --socket, --url,
    --token-env, however argparse lets them be abbreviated). A remote hook that `connect
    --url` writes starts `minionsctl --url URL --token-env VAR hook ...`."""
    from minionsd.cli.parser import VALUE_OPTIONS

    words = iter(argv)
    for word in words:
        if not word.startswith("-"):
            return word == "hook"
        name, has_value, _ = word.partition("=")
        takes = [o for o in VALUE_OPTIONS if len(name) > 2 and o.startswith(name)]
        if len(takes) == 1 and not has_value:
            next(words, None)
    return False


# The commands that are not one call: run.py hands them the parsed arguments.
RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {"mcp": run_mcp, "hook": run_hook}


def add_agent_parsers(add: Callable[..., argparse.ArgumentParser]) -> None:
    def identity(p: argparse.ArgumentParser,
                 agent_default: str = "$MINIONS_AGENT, else 'agent'") -> None:
        p.add_argument("--agent", help="author and agent of this session "
                                       f"(default {agent_default})")
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
    identity(p, agent_default="the agent's name: claude-code, codex or cursor")


COMMANDS = {"connect": cmd_connect}
