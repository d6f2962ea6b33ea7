"""minionsctl's main(): parse, make the one call, print the result readably (or as JSON), and
turn every failure into a message and an exit code.

Exit codes: 0 ok, 1 an error reported by the daemon (or by a local command), 2 usage, 3 the
daemon is not reachable. Under --json an error is printed on stderr as
`{"error": {"code", "message", "detail"}}` (a daemon error's code is its JSON-RPC code and its
`data` is kept; the client's own errors have a word as code: usage, failed, unreachable,
connection_lost, timeout, connection_failed, interrupted).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from minionsd.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CommandError,
    UsageError,
    home_of,
    remote_of,
    socket_of,
    start_command,
)
from minionsd.cli.fmt import json_text, printable
from minionsd.cli.parser import ParseError, module_of, parse
from minionsd.rpc.client import Client, DaemonUnavailable, GatewayRefused, RpcError

CALL_TIMEOUT_S = 60.0
# Jobs that can run for minutes on a big home: a long socket timeout and a progress line.
SLOW_COMMANDS = frozenset({"maintenance", "backup", "consolidate"})
SLOW_CALL_TIMEOUT_S = 3600.0


def wants_json(argv: list[str]) -> bool:
    """Whether --json is on the command line, or an abbreviation argparse takes for it
    (`--js`), before any `--` (for errors found before it was parsed)."""
    words = argv[: argv.index("--")] if "--" in argv else argv
    return any(len(word) > 2 and "--json".startswith(word) for word in words)


def report(as_json: bool, text: str, code: Any, message: str, detail: str | None = None,
           data: Any = None) -> None:
    """One error on stderr: `text` for people, or the JSON error object."""
    if as_json:
        error: dict[str, Any] = {"code": code, "message": message, "detail": detail}
        if data is not None:
            error["data"] = data
        print(json_text(json.dumps({"error": error}, ensure_ascii=False)), file=sys.stderr)
    else:
        print(f"minionsctl: {printable(text)}", file=sys.stderr)


# Commands that work on this machine only: never through a gateway.
LOCAL_ONLY = frozenset({"init", "restore", "service install", "token create", "token list",
                        "token revoke", "web"})


def make_client(args: Any, name: str, timeout: float) -> Any:
    """The socket client, or a gateway client under --url / $MINIONS_URL."""
    remote = None if name == "connect" else remote_of(args)  # connect only writes files
    if remote is None:
        return Client(socket_of(args), timeout=timeout)
    if name in LOCAL_ONLY:
        raise UsageError(f"`{name}` works on the daemon's machine only, never through a "
                         "gateway; drop --url (and unset MINIONS_URL)")
    url, token = remote
    from minionsd.rpc.http_client import HttpClient  # only for --url: http.client is not free

    try:
        return HttpClient(url, token, timeout=timeout)
    except ValueError as exc:
        raise UsageError(f"--url: {exc}") from None


def where_of(client: Any) -> str:
    """The socket path, or the gateway URL (an HttpClient's `where`)."""
    return getattr(client, "where", None) or str(client.socket_path)


def _parse_failure(exc: ParseError, argv: list[str]) -> int:
    from minionsd.cli.agents import is_hook_invocation

    if wants_json(argv) and not is_hook_invocation(argv):
        report(True, "", "usage", "usage error", exc.message)
        return EXIT_USAGE
    exc.parser.print_usage(sys.stderr)
    print(f"{exc.parser.prog}: error: {exc.message}", file=sys.stderr)
    # exit 2 from a hook would block the user's prompt
    return EXIT_OK if is_hook_invocation(argv) else EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parse(words)
    except ParseError as exc:
        return _parse_failure(exc, words)
    except SystemExit as exc:  # --help
        return EXIT_USAGE if exc.code else EXIT_OK
    name = args.command + (f" {args.sub}" if getattr(args, "sub", None) else "")
    # Only the chosen command's module is imported (parse did, to build its parser).
    module = module_of(args.command)
    runner = getattr(module, "RUNNERS", {}).get(name)
    if runner is not None:  # commands that are not one call: mcp, hook, serve
        return runner(args)
    slow = name in SLOW_COMMANDS
    as_json = args.json
    try:
        client = make_client(args, name, SLOW_CALL_TIMEOUT_S if slow else CALL_TIMEOUT_S)
    except UsageError as exc:
        report(as_json, str(exc), "usage", "usage error", str(exc))
        return EXIT_USAGE
    label = " ".join([name, *([args.job] if name == "maintenance" else [])])

    def call(method: str, params: dict[str, Any]) -> Any:
        if not slow:
            return client.call(method, params)
        from minionsd.cli.progress import Progress  # a thread: only for the slow commands

        with Progress(label):
            return client.call(method, params)

    try:
        result, fmt = module.COMMANDS[name](args, call)
    except UsageError as exc:
        report(as_json, str(exc), "usage", "usage error", str(exc))
        return EXIT_USAGE
    except CommandError as exc:
        report(as_json, str(exc), "failed", f"{name} failed", str(exc))
        return EXIT_ERROR
    except GatewayRefused as exc:
        report(as_json, str(exc), exc.reason, "refused by the gateway", exc.detail,
               {"status": exc.status})
        return EXIT_ERROR
    except DaemonUnavailable as exc:
        if not isinstance(client, Client):
            why = (f"{exc}. Check the URL, that `minionsctl serve` runs there and that the "
                   "daemon behind it runs")
            report(as_json, why, "unreachable", "minionsd is not reachable", why)
            return EXIT_UNREACHABLE
        start = (f"{start_command(home_of(args))}   (or scripts/run, or "
                 "systemctl --user start minionsd)")
        if isinstance(exc.__cause__, FileNotFoundError | ConnectionRefusedError):
            # Connecting failed: nothing listens there, so the request never left.
            report(as_json, f"minionsd is not running (no answer on {client.socket_path}).\n"
                   f"Start it with: {start}", "unreachable", "minionsd is not running",
                   f"no answer on {client.socket_path}; start it with: {start}")
        else:
            why = (f"minionsd went away before answering ({exc}); the request may or may not "
                   "have been carried out. The daemon's log says why it stopped; "
                   "`minionsctl status` shows whether it is back.")
            report(as_json, f"{why}\nTo start it again: {start}", "connection_lost",
                   "minionsd went away before answering", f"{why} To start it again: {start}")
        return EXIT_UNREACHABLE
    except RpcError as exc:
        report(as_json, f"{exc.message}: {exc.detail or ''}".rstrip(": "), exc.code,
               exc.message, exc.detail, exc.data)
        return EXIT_ERROR
    except TimeoutError as exc:
        why = f"{exc}; minionsd is busy or hung, and the request may still complete"
        report(as_json, why, "timeout", "no answer in time", why)
        return EXIT_UNREACHABLE
    except OSError as exc:
        report(as_json, f"cannot talk to minionsd on {where_of(client)}: {exc}",
               "connection_failed", "cannot talk to minionsd", str(exc))
        return EXIT_UNREACHABLE
    except KeyboardInterrupt:
        report(as_json, "interrupted (a job already sent keeps running in the daemon)",
               "interrupted", "interrupted",
               "a job already sent keeps running in the daemon")
        return EXIT_INTERRUPTED
    finally:
        client.close()
    try:
        # Stored text reaches the terminal here: its control characters are made visible.
        out = (json_text(json.dumps(result, indent=2, ensure_ascii=False)) if as_json
               else printable(fmt(result)))
        if out:
            print(out)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left early (`| head`); point stdout at /dev/null so the flush at exit
        # does not fail a second time.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK
