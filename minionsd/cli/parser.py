"""minionsctl's command line: the argument parser and the table of commands.

Each command module contributes its subparsers (`add_parsers`) and its `COMMANDS` entries
(`"kb add"` -> run function); this module puts them together in the order `--help` lists
them. `--json`, `--home` and `--socket` are accepted before or after the command word.
"""

from __future__ import annotations

import argparse
from typing import Any

from minionsd.cli import (
    admin,
    agents,
    gateway,
    inbox,
    knowledge,
    local,
    recall,
    records,
    status,
    web,
)
from minionsd.cli.common import Command


class ParseError(Exception):
    """The command line does not parse (argparse's usage error), raised instead of exiting so
    main() can report it as text or, under --json, as JSON."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's hook; never returns
        raise ParseError(self, message)


# In --help order: local set-up, status, inbox, records, curated memory, recall,
# administration, backup/restore/service, agents.
COMMANDS: dict[str, Command] = {
    **local.COMMANDS, **status.COMMANDS, **inbox.COMMANDS, **records.COMMANDS,
    **knowledge.COMMANDS, **recall.COMMANDS, **admin.COMMANDS, **agents.COMMANDS,
    **gateway.COMMANDS, **web.COMMANDS,
}
_ADDERS = (local.add_init_parser, status.add_parsers, inbox.add_parsers, records.add_parsers,
           knowledge.add_parsers, recall.add_parsers, admin.add_parsers, local.add_parsers,
           agents.add_agent_parsers, gateway.add_parsers, web.add_parsers)


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print the raw JSON-RPC result (errors as JSON on stderr)")
    # --home and --socket are read after the command word too (`minionsctl init --home DIR`);
    # SUPPRESS keeps a value given before it.
    common.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS,
                        help="home directory (default $MINIONS_HOME or ~/.minions)")
    common.add_argument("--socket", metavar="PATH", default=argparse.SUPPRESS,
                        help="socket path (default: server.socket of the home's config.toml, "
                             "else <home>/engine/minionsd.sock)")
    common.add_argument("--url", metavar="URL", default=argparse.SUPPRESS,
                        help="run the command through a minionsd gateway (default $MINIONS_URL)")
    common.add_argument("--token-env", metavar="VAR", default=argparse.SUPPRESS,
                        help="environment variable holding the gateway token (default "
                             "MINIONS_TOKEN)")
    parser = Parser(prog="minionsctl", description="Control a running minionsd. Output is "
                    "readable text; --json prints the daemon's result as JSON.",
                    epilog="exit codes: 0 ok, 1 error reported by the daemon (or a local "
                    "command), 2 usage, 3 the daemon is not reachable")
    parser.add_argument("--home", metavar="DIR",
                        help="home directory (default $MINIONS_HOME or ~/.minions)")
    parser.add_argument("--socket", metavar="PATH",
                        help="socket path (default: server.socket of the home's config.toml, "
                             "else <home>/engine/minionsd.sock)")
    parser.add_argument("--json", action="store_true",
                        help="print the raw JSON-RPC result (errors as JSON on stderr)")
    parser.add_argument("--url", metavar="URL",
                        help="run the command through a minionsd gateway (POST URL/rpc) "
                             "instead of the socket (default $MINIONS_URL)")
    parser.add_argument("--token-env", metavar="VAR",
                        help="environment variable holding the gateway token (default "
                             "MINIONS_TOKEN)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str, parent: Any = sub) -> argparse.ArgumentParser:
        return parent.add_parser(name, help=help_text, description=help_text,
                                 parents=[common])

    for adder in _ADDERS:
        adder(add)
    return parser
