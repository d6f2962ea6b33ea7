"""What every minionsctl command module shares: the errors a command raises, where the home
and socket are, reading an input file or stdin, and `simple`, which turns one JSON-RPC call
and a formatter into a command.

A command is `run(args, call) -> (result, format)`: `call(method, params)` asks the daemon,
`result` is what `--json` prints, and `format(result)` is the human-readable text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.rpc.client import socket_for_home

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130
TOKEN_LENGTH = 47  # mnt_ and 43 URL-safe base64 characters (minionsd.memory.tokens)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

Call = Callable[..., Any]
Formatter = Callable[[Any], str]
Command = Callable[[argparse.Namespace, Call], tuple[Any, Formatter]]
# add(name, help, parent=None) -> the new subparser (parent: a nested subparsers action).
AddParser = Callable[..., argparse.ArgumentParser]


class UsageError(Exception):
    """The command line was wrong in a way argparse cannot see; exit 2."""


class CommandError(Exception):
    """A local command (no daemon involved) failed; reported like a daemon error, exit 1."""


def home_of(args: argparse.Namespace) -> Path:
    raw = args.home or os.environ.get("MINIONS_HOME") or "~/.minions"
    return Path(raw).expanduser().absolute()


def socket_of(args: argparse.Namespace) -> Path:
    return Path(args.socket).expanduser() if args.socket else socket_for_home(home_of(args))


def remote_of(args: argparse.Namespace) -> tuple[str, str | None] | None:
    """(gateway URL, token) when the command goes through a gateway: `--url`, else
    $MINIONS_URL unless --home or --socket name a local daemon; the token from the variable
    `--token-env` names, else $MINIONS_TOKEN. None: use the socket."""
    url = getattr(args, "url", None)
    if not url and not args.home and not args.socket:
        url = os.environ.get("MINIONS_URL") or None
    if not url:
        return None
    warn_if_clear_text(url)
    var = getattr(args, "token_env", None)
    if var:
        token = (os.environ.get(var) or "").strip()
        if not token:
            raise UsageError(f"--token-env {var}: the environment variable {var} is not set "
                             "(or empty); put the gateway token there")
        return url, checked_token(token, f"--token-env {var}: ${var}")
    token = (os.environ.get("MINIONS_TOKEN") or "").strip()
    return url, checked_token(token, "$MINIONS_TOKEN") if token else None


def checked_token(token: str, where: str) -> str:
    """`token` (surrounding whitespace already stripped: a secret file's trailing newline) when
    it has a gateway token's shape, `mnt_` and 43 URL-safe characters; else a UsageError that
    says what is wrong with it without showing it (a token never appears in an error)."""
    if len(token) == TOKEN_LENGTH and token.startswith("mnt_") and all(
            ch in _TOKEN_CHARS for ch in token[4:]):
        return token
    if not token.startswith("mnt_"):
        problem = "it does not start with mnt_"
    elif any(ch.isspace() or not ch.isprintable() for ch in token):
        problem = "it holds a space, a line break or a control character"
    elif len(token) != TOKEN_LENGTH:
        problem = f"it has {len(token)} characters, not {TOKEN_LENGTH}"
    else:
        problem = "it holds characters other than letters, digits, '-' and '_'"
    raise UsageError(f"{where} does not hold a minionsd gateway token ({problem}; a token is "
                     f"mnt_ and 43 letters, digits, '-' or '_', as `minionsctl token create` "
                     "prints it); the value is not shown")


def warn_if_clear_text(url: str) -> None:
    """One line on stderr when the token would cross a network unencrypted (plain http to a
    host that is not this machine); the command still runs, as curl would."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if parts.scheme == "http" and host not in ("localhost", "::1") and not host.startswith(
            "127."):
        print(f"minionsctl: warning: {parts.scheme}://{host} is not encrypted, so the token "
              "crosses the network in clear text; use https:// (TLS at the gateway or a "
              "proxy)", file=sys.stderr)


def read_stdin() -> str:
    """Standard input as strict UTF-8 (a leading BOM dropped), whatever the locale says:
    bytes that are not UTF-8 are refused, never replaced."""
    raw = sys.stdin.buffer.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"standard input is not valid UTF-8 ({exc.reason} at byte "
                         f"{exc.start}); convert it first, e.g. iconv -f latin1 -t utf-8"
                         ) from None


def read_input(source: str) -> str:
    """The text of a file, or of standard input for `-`."""
    if source == "-":
        return read_stdin()
    try:
        return Path(source).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {source}: {exc}") from None


def read_task(source: str) -> dict[str, Any]:
    text = read_input(source)
    try:
        task = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--task must be a JSON object: {exc}") from None
    if not isinstance(task, dict):
        raise UsageError("--task must be a JSON object")
    return task


def parse_value(raw: str) -> Any:
    """A config value from the command line: JSON if it parses, else the string itself."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def simple(method: str, build: Callable[[argparse.Namespace], dict[str, Any]],
           fmt: Formatter) -> Command:
    """A command that is one JSON-RPC call: params from `build(args)`, text from `fmt`."""
    def run(args: argparse.Namespace, call: Call) -> tuple[Any, Formatter]:
        return call(method, build(args)), fmt
    return run


def copy_options(args: argparse.Namespace, params: dict[str, Any], *names: str) -> None:
    """Put each option of `names` that was given into `params` under the same name."""
    for name in names:
        if getattr(args, name, None):
            params[name] = getattr(args, name)


def start_command(home: Path | str) -> str:
    """The command that starts the daemon on `home`: the minionsd installed beside this
    Python when there is one (a venv's bin/ is often not on PATH), else `minionsd`."""
    import shlex

    beside = Path(sys.executable).absolute().parent / "minionsd"
    daemon = str(beside) if beside.is_file() and os.access(beside, os.X_OK) else "minionsd"
    return shlex.join([daemon, "--home", str(home)])
