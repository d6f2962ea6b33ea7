"""The docs keep up with the code: every JSON-RPC method, config key and minionsctl command.

* The method table is built the way `Daemon.run` builds it (core methods plus every
  component's `methods()`), on a temp home, without starting anything. A static scan adds the
  method names of surfaces that exist in the package but are not wired in yet, so their docs are
  written with them. Each method needs a heading in docs/api.md.
* Each key of `minionsd.config.SCHEMA` (and the `[agents.<id>]` keys) needs a table row in
  docs/configuration.md that shows its default as TOML.
* Each `minionsctl` command, nested ones such as `kb add` included, needs a `` `minionsctl ...``
  mention in docs/operations.md.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

import tomli_w

from minionsd import cli
from minionsd import config as config_mod

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PACKAGE = REPO / "minionsd"
METHOD_NAME = re.compile(r"^[a-z]+(\.[a-z_]+)?$")


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


# --- JSON-RPC methods ------------------------------------------------------------------------

def served_methods(tmp_path: Path) -> set[str]:
    """The daemon's method table, assembled as Daemon.run does it (no socket, no loop)."""
    from minionsd.daemon import Daemon, build_components
    from minionsd.home import Home
    from minionsd.memory.app import App
    from minionsd.rpc.methods import build_methods
    from minionsd.storage.database import Database

    home = Home(tmp_path / "home")
    home.ensure()
    db = Database(home.db)
    try:
        app = App(home=home, config=config_mod.load(home.config, {}), db=db, environ={})
        daemon = Daemon(app)
        extra: dict[str, Any] = {}
        for source in build_components(daemon).methods:
            extra |= source.methods()
        async def unused(*args: Any) -> Any:
            raise AssertionError("not called")

        return set(build_methods(app, status=unused, config_changed=unused, extra=extra))
    finally:
        db.close()


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of a function's body, not descending into functions defined inside it (the
    handlers, whose result dicts are not method tables)."""
    found: list[ast.AST] = []
    pending = list(ast.iter_child_nodes(func))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def declared_methods() -> set[str]:
    """Method names: the string keys of dict literals written directly in the body of any
    `methods()` or `build_methods()` function of the package, wired in or not."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if func.name not in ("methods", "build_methods"):
                continue
            for node in _own_nodes(func):
                if not isinstance(node, ast.Dict):
                    continue
                for key in node.keys:
                    if isinstance(key, ast.Constant) and isinstance(key.value, str) \
                            and METHOD_NAME.match(key.value):
                        names.add(key.value)
    return names


def documented_methods() -> set[str]:
    """Backticked names in the headings of docs/api.md."""
    names: set[str] = set()
    for line in _read("api.md").splitlines():
        if line.startswith("#"):
            names.update(re.findall(r"`([a-z][a-z_.]*)`", line))
    return names


def test_every_served_method_has_a_section_in_api_md(tmp_path: Path) -> None:
    served = served_methods(tmp_path)
    assert {"status", "config.get", "inbox.submit", "maintenance.run"} <= served
    missing = sorted(served - documented_methods())
    assert not missing, f"methods the daemon serves but docs/api.md has no heading for: {missing}"


def test_every_declared_method_has_a_section_in_api_md() -> None:
    declared = declared_methods()
    assert {"status", "memory.search", "inbox.list", "pinned.get"} <= declared
    missing = sorted(declared - documented_methods())
    assert not missing, f"methods defined in minionsd/ but missing from docs/api.md: {missing}"


# --- configuration keys ----------------------------------------------------------------------

def _toml_value(value: Any) -> str:
    return tomli_w.dumps({"v": value}).strip().removeprefix("v = ")


def config_rows() -> dict[str, str]:
    """`key` -> its table row, for every row of docs/configuration.md that starts with a key."""
    rows: dict[str, str] = {}
    for line in _read("configuration.md").splitlines():
        match = re.match(r"^\|\s*`([a-z_]+\.[a-z_<>.]+)`\s*\|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def expected_keys() -> dict[str, Any]:
    keys = {f"{section}.{name}": key.default
            for section, entries in config_mod.SCHEMA.items() for name, key in entries.items()}
    keys |= {f"agents.<id>.{name}": key.default for name, key in config_mod.AGENT_SCHEMA.items()}
    return keys


def test_every_config_key_has_a_row_with_its_default() -> None:
    rows = config_rows()
    problems = []
    for key, default in expected_keys().items():
        row = rows.get(key)
        if row is None:
            problems.append(f"{key}: no table row")
        elif f"`{_toml_value(default)}`" not in row:
            problems.append(f"{key}: row does not show the default `{_toml_value(default)}`")
    assert not problems, "docs/configuration.md is out of date:\n" + "\n".join(problems)


def test_configuration_md_documents_no_unknown_key() -> None:
    stale = sorted(set(config_rows()) - set(expected_keys()))
    assert not stale, f"docs/configuration.md documents keys the schema does not have: {stale}"


# --- minionsctl commands ---------------------------------------------------------------------

def command_paths(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    """Every runnable command: leaves of the subparser tree (`status`, `kb add`, ...)."""
    paths = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                path = f"{prefix} {name}".strip()
                nested = command_paths(sub, path)
                paths += nested or [path]
    return paths


def test_every_minionsctl_command_is_in_operations_md() -> None:
    commands = command_paths(cli.build_parser())
    assert {"status", "kb add", "config set"} <= set(commands)
    text = _read("operations.md")
    missing = [c for c in commands if not re.search(rf"`minionsctl {re.escape(c)}[ `]", text)]
    assert not missing, f"minionsctl commands missing from docs/operations.md: {missing}"
