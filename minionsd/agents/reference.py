"""The tool reference of docs/agents.md, rendered from the tool definitions in tools.py.

`python -m minionsd.agents.reference` prints it; tests/unit/test_agents_doc.py checks that the
doc holds exactly this text between its `tools:begin` and `tools:end` comments.
"""

from __future__ import annotations

from minionsd.agents import resources, tools

_DAEMON_CALL = {"memory_context": "prompt.assemble", "memory_search": "memory.search",
                "memory_get": "memory.get", "memory_note": "inbox.submit",
                "memory_outcome": "episode.capture", "memory_retract": "memory.retract",
                "memory_supersede": "memory.supersede", "knowledge_list": "knowledge.list",
                "knowledge_get": "knowledge.get"}


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _arguments(schema: dict) -> str:
    required = set(schema.get("required", []))
    names = [f"`{name}`" + ("" if name in required else "?") for name in schema["properties"]]
    return ", ".join(names) or "none"


def render() -> str:
    lines = ["| tool | daemon call | arguments | read-only | destructive | idempotent |",
             "|---|---|---|---|---|---|"]
    for spec in tools.TOOLS:
        a = spec.annotations
        lines.append(f"| `{spec.name}` | `{_DAEMON_CALL[spec.name]}` | "
                     f"{_arguments(spec.input_schema)} | {_yes(a['readOnlyHint'])} | "
                     f"{_yes(a['destructiveHint'])} | {_yes(a['idempotentHint'])} |")
    for spec in tools.TOOLS:
        lines += ["", f"### `{spec.name}`: {spec.title}", "", spec.description]
    lines += ["", "### Resources", ""]
    for res in (*resources.RESOURCES, resources.TEMPLATE):
        lines.append(f"* `{res.uri}` ({res.title}): {res.description}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
