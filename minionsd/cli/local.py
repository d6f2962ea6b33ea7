"""minionsctl's local commands, which need no daemon: `init`, `restore` and `service install`.
Each imports what it needs when it runs, so the other commands start fast."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, Call, CommandError, Formatter, home_of, start_command

SERVICE_KINDS = (("user", "systemd user unit (the default on Linux)"),
                 ("system", "systemd system unit, run as the user 'minions'"),
                 ("launchd", "launchd agent (the default on macOS)"))


def cmd_init(args: argparse.Namespace, _call: Call) -> tuple[Any, Formatter]:
    from minionsd.config import example_toml, read_file_tree
    from minionsd.errors import ConfigError
    from minionsd.fileio import atomic_write_text
    from minionsd.home import Home

    home = Home(home_of(args))
    created_config = not home.config.exists()
    try:
        home.ensure()
        if created_config:
            atomic_write_text(home.config, example_toml())
    except OSError as exc:
        # Not a connection problem: main() would otherwise report it as one (exit 3).
        raise CommandError(f"cannot set up {home.root}: {exc}") from None
    if not created_config:  # kept as it is: say now when the daemon would refuse it
        try:
            read_file_tree(home.config)
        except ConfigError as exc:
            raise CommandError(f"home ready at {home.root}, but the config.toml kept there is "
                               f"not valid, so minionsd will not start until it is fixed: "
                               f"{exc.detail}") from None
    result = {"home": str(home.root), "config": str(home.config),
              "created_config": created_config}
    return result, _fmt_init


def _fmt_init(r: dict[str, Any]) -> str:
    return (f"home ready at {r['home']}\n"
            f"config: {r['config']}{' (created)' if r['created_config'] else ' (kept)'}\n"
            f"start the daemon with: {start_command(r['home'])}")


def cmd_restore(args: argparse.Namespace, _call: Call) -> tuple[Any, Formatter]:
    from minionsd.errors import MinionsError
    from minionsd.memory.restore import restore

    home = home_of(args)
    try:
        result = restore(Path(args.path).expanduser().absolute(), home, force=args.force)
    except MinionsError as exc:
        raise CommandError(exc.detail) from None
    return result, _fmt_restore


def _fmt_restore(r: dict[str, Any]) -> str:
    return (f"restored {r['backup']} into {r['home']}: {fmt.plural(r['records'], 'record')}, "
            f"{fmt.plural(r['files'], 'file')}, {fmt.size(r['bytes'])}; "
            f"database integrity {r['integrity']}\n"
            f"start the daemon with: {start_command(r['home'])}")


def _executable(name: str = "minionsd") -> str:
    """A console script (minionsd, or minionsctl for the gateway) installed beside this Python
    (a venv's bin/, /usr/bin)."""
    # Not resolved: a venv's python is a symlink into the base install, whose bin/ has no
    # minionsd.
    beside = Path(sys.executable).absolute().parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    raise CommandError(f"no {name} executable beside {sys.executable}; install minionsd "
                       "into this Python environment first")


def cmd_service_install(args: argparse.Namespace, _call: Call) -> tuple[Any, Formatter]:
    from minionsd.errors import MinionsError
    from minionsd.service import units as service

    kind = args.kind or ("launchd" if sys.platform == "darwin" else "user")
    if args.gateway:
        kind = service.gateway_kind(kind)
    executable = _executable("minionsctl" if args.gateway else "minionsd")
    home = str(home_of(args))
    warning = None
    try:
        text = service.render_unit(kind, executable, home)
        if kind in ("system", "gateway-system"):
            service.check_system_paths(executable, home)
    except MinionsError as exc:
        if not (args.print_only and kind in ("system", "gateway-system")):
            raise CommandError(exc.detail) from None
        warning = exc.detail  # printing a unit is harmless; installing this one is refused
    path = service.default_install_path(kind)
    result: dict[str, Any] = {"kind": kind, "path": str(path), "minionsd": executable,
                              "home": home, "written": False,
                              "commands": service.enable_commands(kind, path)}
    if warning:
        result["warning"] = warning
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
    if r["kind"] in ("system", "gateway-system"):
        steps.insert(0, f"  (the home {r['home']} must exist and belong to the user 'minions')")
    if r["kind"].startswith("gateway-"):
        steps.append("  (it starts once a token exists: minionsctl token create NAME --agent ID "
                     "--scope read)")
    if not r["written"]:
        # stdout carries only the unit, so it can be redirected into place.
        if r.get("warning"):
            print(f"# warning: {r['warning']}", file=sys.stderr)
        print(f"# install as {r['path']}, then:\n" + "\n".join(steps), file=sys.stderr)
        return r["unit"].rstrip("\n")
    return f"wrote {r['path']}\nenable and start it with:\n" + "\n".join(steps)


def add_init_parser(add: AddParser) -> None:
    add("init", "create the home layout and a commented config.toml (no daemon needed)")


def add_parsers(add: AddParser) -> None:
    """`restore` and `service install` (init comes first in the help, see add_init_parser)."""
    p = add("restore", "restore a backup into the home (the daemon must be stopped)")
    p.add_argument("path", metavar="PATH", help="the backup directory (made by `backup`)")
    p.add_argument("--force", action="store_true", help="replace a home that already has data")
    svc = add("service", "run minionsd as a service").add_subparsers(dest="sub", required=True,
                                                                     metavar="SUB")
    p = add("install", "write a systemd or launchd service file for this minionsd and home",
            svc)
    kinds = p.add_mutually_exclusive_group()
    for kind, where in SERVICE_KINDS:
        kinds.add_argument(f"--{kind}", dest="kind", action="store_const", const=kind,
                           help=where)
    p.add_argument("--print", dest="print_only", action="store_true",
                   help="print the file instead of writing it")
    p.add_argument("--gateway", action="store_true",
                   help="the HTTP gateway's unit (minionsctl serve) instead of the daemon's")


COMMANDS = {"init": cmd_init, "restore": cmd_restore, "service install": cmd_service_install}
