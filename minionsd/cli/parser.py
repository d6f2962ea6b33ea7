"""minionsctl's command line: the argument parser and the table of commands.

Each command module contributes its subparsers (`add_parsers`) and its `COMMANDS` entries
(`"kb add"` -> run function); this module puts them together in the order `--help` lists
them. `--json`, `--home` and `--socket` are accepted before or after the command word.

A command runs on every prompt of an agent (the hooks), so the parser is built lazily:
`parse` builds only the chosen command's subparser and imports only its module. Whenever the
full parser could answer differently (help before the command word, a word it does not know,
any usage error), the full parser is built and answers, so help and errors read exactly as
they always have.
"""

from __future__ import annotations

import argparse
import importlib
from types import ModuleType
from typing import Any

from minionsd.cli.common import Command

# The modules that build the parser, in --help order: local set-up, status, inbox, records,
# curated memory, recall, administration, backup/restore/service, agents, gateway, web view.
# Each entry: (module, its adder function, the top-level words that adder adds).
ADDERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("local", "add_init_parser", ("init",)),
    ("status", "add_parsers", ("status",)),
    ("inbox", "add_parsers", ("note", "inbox", "consolidate")),
    ("records", "add_parsers", ("search", "show", "pin", "retract", "supersede", "expire",
                                "purge")),
    ("knowledge", "add_parsers", ("kb", "pinned")),
    ("recall", "add_parsers", ("retrieve", "prompt")),
    ("admin", "add_parsers", ("config", "maintenance", "telemetry", "backup")),
    ("local", "add_parsers", ("restore", "service")),
    ("agents", "add_agent_parsers", ("mcp", "hook", "connect")),
    ("gateway", "add_parsers", ("token", "serve")),
    ("web", "add_parsers", ("web",)),
)
OWNER = {word: (module, adder) for module, adder, words in ADDERS for word in words}
# Top-level options that take a value (the command word is the first word that is not one of
# these options or its value).
VALUE_OPTIONS = ("--home", "--socket", "--url", "--token-env")
TOP_OPTIONS = (*VALUE_OPTIONS, "--json", "--help")


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


class _Skipped:
    """What `add` returns for a command the lazy parser does not build: it takes every
    parser-building call (add_argument, add_subparsers, groups) and keeps nothing."""

    def __getattr__(self, _name: str) -> Any:
        return self._absorb

    def _absorb(self, *_args: Any, **_kwargs: Any) -> _Skipped:
        return self


def module_of(word: str) -> ModuleType:
    """The command module that owns a top-level command word."""
    return importlib.import_module(f"minionsd.cli.{OWNER[word][0]}")


def all_commands() -> dict[str, Command]:
    """Every command's run function by its full name (`"kb add"`), in --help order."""
    commands: dict[str, Command] = {}
    for module, _adder, _words in ADDERS:
        commands |= importlib.import_module(f"minionsd.cli.{module}").COMMANDS
    return commands


def command_word(words: list[str]) -> str | None:
    """The command word argparse will see in `words`, when that is certain without the full
    parser: None when help comes before it, when an option before it is unknown or
    ambiguous, or when the word is not a command."""
    items = iter(words)
    for word in items:
        if not word.startswith("-"):
            return word if word in OWNER else None
        name, has_value, _ = word.partition("=")
        matches = [o for o in TOP_OPTIONS if o.startswith(name)] if name.startswith("--") \
            else []
        if name in TOP_OPTIONS:
            matches = [name]
        if len(matches) != 1 or matches[0] == "--help":
            return None  # -h, --help, a short option, `--`, an unknown or ambiguous option
        if matches[0] in VALUE_OPTIONS and not has_value and next(items, None) is None:
            return None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """minionsctl's parser: every command, or with `only` just that top-level command (the
    other commands' modules are not imported)."""
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
    skipped = _Skipped()

    def add(name: str, help_text: str, parent: Any = sub) -> Any:
        if parent is skipped or (parent is sub and only is not None and name != only):
            return skipped
        return parent.add_parser(name, help=help_text, description=help_text,
                                 parents=[common])

    for module, adder, words in ADDERS:
        if only is None or only in words:
            getattr(importlib.import_module(f"minionsd.cli.{module}"), adder)(add)
    return parser


def parse(words: list[str]) -> argparse.Namespace:
    """The parsed command line. Raises ParseError (usage) and SystemExit (--help) exactly as
    the full parser would: the lazy parser only answers when it succeeds."""
    word = command_word(words)
    if word is not None:
        try:
            return build_parser(only=word).parse_args(words)
        except ParseError:
            pass  # the full parser says it, in its own words
    return build_parser().parse_args(words)
