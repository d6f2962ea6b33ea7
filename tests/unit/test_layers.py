"""The package layout is the architecture: each layer imports only from itself and the layers
listed before it. docs/architecture.md shows the same table; `test_architecture_doc_lists_layers`
keeps the two in step."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "minionsd"
DOC = PACKAGE.parent / "docs" / "architecture.md"

# (layer, the modules and packages in it), lowest first. A module imports from its own layer
# or an earlier one, never a later one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("minionsd", "minionsd.errors", "minionsd.clock", "minionsd.config",
                    "minionsd.home", "minionsd.fileio", "minionsd.threads",
                    "minionsd.logsetup")),
    ("text", ("minionsd.text",)),
    ("storage", ("minionsd.storage",)),
    ("memory", ("minionsd.memory",)),
    ("service", ("minionsd.service",)),
    ("rpc", ("minionsd.rpc", "minionsd.client")),
    ("agents", ("minionsd.agents",)),
    ("gateway", ("minionsd.gateway",)),
    ("cli", ("minionsd.cli",)),
    ("entry", ("minionsd.daemon",)),
]
# What code running inside an agent's session may import from minionsd: the client, the fence
# and the foundation's errors, nothing that opens the database.
AGENTS_MAY_IMPORT = ("minionsd.agents", "minionsd.client", "minionsd.rpc.client", "minionsd.fileio",
                     "minionsd.text.fence", "minionsd.text.fence_name", "minionsd.errors",
                     "minionsd")
ONLY_AGENTS_IMPORT = ("mcp",)
# The HTTP gateway is a client of the socket too: it may import agents/ (the shared tool
# definitions), the client, text/ and the foundation, never storage/, memory/, service/ or
# the daemon's rpc server.
GATEWAY_MAY_NOT_IMPORT = ("minionsd.storage", "minionsd.memory", "minionsd.service",
                          "minionsd.rpc.server", "minionsd.rpc.methods", "minionsd.daemon")
SDK_IMPORTERS = ("minionsd.agents", "minionsd.gateway")


def layer_of(module: str) -> int:
    best, found = -1, None
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if (module == member or module.startswith(member + ".")) and len(member) > best:
                best, found = len(member), index
    if found is None:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS and the doc")
    return found


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path, own: str) -> list[tuple[int, str]]:
    """Every module this file imports (module level and inside functions), with line numbers."""
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    # Imports for type checkers only (`if TYPE_CHECKING:`) never run: no dependency.
    typing_only = {id(inner) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for stmt in node.body for inner in ast.walk(stmt)}
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            # `from minionsd.memory import inbox` imports the module minionsd.memory.inbox
            out.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names
                       if f"{module}.{alias.name}" in MODULES)
    return out


MODULES = modules()


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_follow_the_layers(name):
    own = layer_of(name)
    for line, target in imports(MODULES[name], name):
        top = target.split(".")[0]
        if top in ONLY_AGENTS_IMPORT:
            assert name.startswith(SDK_IMPORTERS), (
                f"{name}:{line} imports {target}; only minionsd.agents and minionsd.gateway may")
        if name.startswith("minionsd.gateway"):
            assert not target.startswith(GATEWAY_MAY_NOT_IMPORT), (
                f"{name}:{line} imports {target}: the gateway reaches the daemon only through "
                "its socket")
        if not target.startswith("minionsd"):
            continue
        if name.startswith("minionsd.agents"):
            assert any(target == a or target.startswith(a + ".") for a in AGENTS_MAY_IMPORT
                       if a != "minionsd") or target == "minionsd", (
                f"{name}:{line} imports {target}: agents code reaches the daemon only "
                "through the client")
        assert layer_of(target) <= own, (
            f"{name}:{line} imports {target}, a later layer "
            f"({LAYERS[layer_of(target)][0]} after {LAYERS[own][0]})")


def test_no_import_cycle_between_modules():
    graph = {name: {t for _, t in imports(path, name) if t in MODULES and t != name}
             for name, path in MODULES.items()}
    # a package's __init__ importing its own members is not a cycle worth reporting
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_the_rule_catches_an_upward_import(tmp_path):
    fake = tmp_path / "minionsd" / "storage" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from minionsd.memory import inbox\n")
    found = imports(fake, "minionsd.storage.bad")
    assert any(layer_of(t) > layer_of("minionsd.storage.bad") for _, t in found)


def test_no_module_is_over_400_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text().splitlines())) > 400}
    assert not long, f"split these by noun: {long}"


def test_architecture_doc_lists_layers():
    text = DOC.read_text()
    for layer, members in LAYERS:
        assert f"| {layer} |" in text, f"docs/architecture.md has no row for layer {layer}"
        for member in members:
            if member != "minionsd":
                shown = member.removeprefix("minionsd.").replace(".", "/")
                assert f"`{shown}" in text, f"docs/architecture.md does not show {shown}"
