"""minionsctl: a thin client of the daemon's socket API.

Each command is one JSON-RPC call and its formatting: readable tables and sentences by
default, the raw result with --json. Imports stay light (standard library and the RPC client)
so a call returns quickly; the commands that work without a daemon (`init`, `restore`,
`service install`) and the agent commands (`mcp`, `hook`, `connect`) import what they need when
they run.

The package, by concern: run (main, errors, exit codes), parser (the command line and the
command table), fmt (plurals, tables, fields), common (what commands share), progress (the
spinner of slow calls), and one module per noun: status, inbox, records (search, show and the
record lifecycle), knowledge (kb, pinned), recall (retrieve, prompt), admin (config,
maintenance, telemetry, backup), local (init, restore, service install), agents.

Importing the package costs nothing beyond `main`'s own module: the names below that belong
to other modules are looked up on first use.
"""

from minionsd.cli.common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CommandError,
    UsageError,
)
from minionsd.cli.parser import build_parser
from minionsd.cli.run import main

__all__ = ["COMMANDS", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_UNREACHABLE",
           "EXIT_USAGE", "CommandError", "Progress", "UsageError", "add_agent_parsers",
           "build_parser", "is_hook_invocation", "main"]


def __getattr__(name: str) -> object:
    if name == "COMMANDS":
        from minionsd.cli.parser import all_commands

        return all_commands()
    if name in ("add_agent_parsers", "is_hook_invocation"):
        from minionsd.cli import agents

        return getattr(agents, name)
    if name == "Progress":
        from minionsd.cli.progress import Progress

        return Progress
    raise AttributeError(f"module 'minionsd.cli' has no attribute {name!r}")
