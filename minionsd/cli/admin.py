"""minionsctl's administration commands: `config get|set`, `maintenance JOB`, `telemetry` and
`backup`. Maintenance reports read as one sentence per report key."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, parse_value, simple

JOBS = ("kb_sweep", "retention", "expiry", "rescan", "reindex")


# --- config -----------------------------------------------------------------------------------

def literal(value: Any) -> str:
    """A config value as it would be written in config.toml: `8`, `true`, `"text"`, `[1, 2]`."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {literal(v)}" for k, v in value.items()) + "}"
    return str(value)


def _flatten(value: Any, prefix: str) -> list[str]:
    if isinstance(value, dict) and value:
        lines: list[str] = []
        for key, item in value.items():
            lines += _flatten(item, f"{prefix}.{key}" if prefix else key)
        return lines
    return [f"{prefix} = {literal(value)}"]


def fmt_config_get(r: dict[str, Any], key: str | None) -> str:
    """One value plainly (a string without quotes), or a section as `key = value` lines."""
    value = r["value"]
    if isinstance(value, dict) and value:
        return "\n".join(_flatten(value, key or ""))
    if isinstance(value, str) and value:
        return value
    return literal(value)


def _config_get(args: Any, call: Callable[..., Any]) -> tuple[Any, Callable[[Any], str]]:
    result = call("config.get", {"key": args.key} if args.key else {})
    return result, lambda r: fmt_config_get(r, args.key)


def _config_set(r: dict[str, Any]) -> str:
    if str(r["key"]).startswith("gateway."):  # the daemon keeps it; a gateway reads it at start
        return (f"{r['key']} = {literal(r['value'])} (a running gateway uses it once restarted: "
                "stop and start `minionsctl serve`)")
    return (f"{r['key']} = {literal(r['value'])}"
            + ("" if r.get("applied", True) else " (takes effect after a restart)"))


# --- maintenance ------------------------------------------------------------------------------

def _counted(noun: str, verb: str, plural_form: str | None = None) -> Callable[[Any], str]:
    """`3 knowledge files imported`; for a list, its length and every item (more than three
    items one per line)."""
    def say(value: Any) -> str:
        items = value if isinstance(value, list) else None
        count = len(items) if items is not None else value
        line = f"{fmt.plural(count, noun, plural_form)} {verb}"
        if items and len(items) <= 3:
            line += ": " + ", ".join(fmt.text(i) for i in items)
        elif items:
            line += ":" + "".join(f"\n    {fmt.text(i)}" for i in items)
        return line
    return say


def _per_agent(what: str) -> Callable[[Any], str]:
    def say(value: Any) -> str:
        if isinstance(value, dict):
            if not value:
                return f"{what}: none"
            return f"{what}: " + ", ".join(f"{agent} {fmt.text(n)}" for agent, n in value.items())
        return f"{what}: {fmt.text(value)}"
    return say


REPORT_PHRASES: dict[str, Callable[[Any], str]] = {
    # expiry, rescan
    "expired": _counted("record", "expired"),
    "pending": _counted("note", "pending in the inbox"),
    "eligible": _counted("note", "eligible for a batch"),
    "quarantined": _counted("file", "in notes/quarantine/"),
    # kb_sweep, reindex
    "imported": _counted("knowledge file", "imported"),
    "updated": _counted("knowledge file", "updated"),
    "moved": _counted("knowledge file", "moved by hand (kept its record)"),
    "unchanged": _counted("knowledge file", "unchanged"),
    "kb_imported": _counted("knowledge file", "imported"),
    "kb_updated": _counted("knowledge file", "updated"),
    "duplicates_swept": _counted("exact duplicate", "moved to knowledge/_swept/"),
    "pinned_skipped": _counted("pinned knowledge file", "(pinned: true in front matter)"),
    "unreadable": _counted("knowledge file", "unreadable"),
    "missing_files": _counted("record", "whose knowledge file is gone"),
    "llm": _per_agent("LLM review"),
    "swept_pruned": _counted("old file", "pruned from knowledge/_swept/"),
    "records_indexed": _counted("record", "indexed"),
    "aux_refreshed": _counted("record", "with refreshed derived columns"),
    "integrity_ok": lambda ok: "index integrity check " + ("passed" if ok else "FAILED"),
    # retention
    "notebooks_trimmed": _per_agent("notebook entries removed"),
    "summaries": _per_agent("notebook summaries"),
    "archive_deleted": _counted("archived note", "deleted"),
    "telemetry_pruned": _counted("telemetry row", "pruned"),
    "changes_pruned": _counted("change-journal row", "pruned"),
    "batches_pruned": _counted("finished batch", "pruned", "finished batches"),
    "batch_notes_pruned": _counted("batch note row", "pruned"),
    "submissions_pruned": _counted("submitted note name", "released"),
}


def report_sentence(key: str, value: Any) -> str:
    phrase = REPORT_PHRASES.get(key)
    if phrase is not None:
        try:
            return phrase(value)
        except (TypeError, ValueError):
            pass  # an unexpected shape: shown generically below
    return f"{key.replace('_', ' ')}: {fmt.text(value)}"


def fmt_maintenance(r: dict[str, Any]) -> str:
    report = r.get("report")
    lines = [f"{r.get('job')} done at {fmt.moment(r.get('at'))}"]
    if isinstance(report, dict):
        lines += [f"  {report_sentence(key, value)}" for key, value in report.items()]
    elif report is not None:
        lines.append(f"  {fmt.text(report)}")
    return "\n".join(lines)


# --- telemetry, backup ------------------------------------------------------------------------

def _outcome(row: dict[str, Any]) -> str:
    if row.get("error"):
        return f"error: {fmt.shorten(row['error'], 40)}"
    if row.get("fallback_reason"):
        return str(row["fallback_reason"])
    return "shadow" if row.get("shadow") else "used"


def fmt_telemetry(r: dict[str, Any]) -> str:
    rows = r["rows"]
    if not rows:
        return "no retrievals recorded yet"
    table = fmt.table(
        ("at", "task", "project", "agent", "candidates", "selected", "size", "ms", "result",
         "terms"),
        [(fmt.moment(row.get("at")), row.get("task_id"), row.get("project"), row.get("agent"),
          row.get("candidates"), len(row.get("selected_ids") or []), fmt.size(row.get("bytes")),
          row.get("duration_ms"), _outcome(row), fmt.shorten(row.get("terms") or [], 40))
         for row in rows], right=(4, 5, 6, 7))
    return f"{fmt.plural(len(rows), 'retrieval')}, newest first\n\n{table}"


def _fmt_backup(r: dict[str, Any]) -> str:
    return (f"backup written to {r['path']}: {fmt.plural(r['records'], 'record')}, "
            f"{fmt.plural(r['files'], 'file')}, {fmt.size(r['bytes'])}")


def add_parsers(add: AddParser) -> None:
    cfg = add("config", "read or change configuration").add_subparsers(
        dest="sub", required=True, metavar="SUB")
    add("get", "show the config or one dotted key", cfg).add_argument(
        "key", nargs="?", metavar="KEY",
        help="a dotted key, e.g. engine.memory_retrieval_top_k (default: everything)")
    p = add("set", "set a dotted key (value parsed as JSON, else a string)", cfg)
    p.add_argument("key", metavar="KEY", help="a dotted key, e.g. engine.memory_retrieval_top_k")
    p.add_argument("value", metavar="VALUE", help="the new value: JSON if it parses, else text")
    add("maintenance", "run a maintenance job now").add_argument(
        "job", choices=JOBS, metavar="JOB", help="one of: " + ", ".join(JOBS))
    add("telemetry", "recent retrieval telemetry, newest first").add_argument(
        "--limit", type=int, default=20, metavar="N", help="at most N rows, 1-1000 (default 20)")
    add("backup", "back up the running daemon's home into a new or empty directory"
        ).add_argument("path", metavar="PATH", help="the target directory, outside the home")


COMMANDS = {
    "config get": _config_get,
    "config set": simple("config.set", lambda a: {"key": a.key, "value": parse_value(a.value)},
                         _config_set),
    "maintenance": simple("maintenance.run", lambda a: {"job": a.job}, fmt_maintenance),
    "telemetry": simple("telemetry.retrievals", lambda a: {"limit": a.limit}, fmt_telemetry),
    "backup": simple("backup.create",
                     lambda a: {"path": str(Path(a.path).expanduser().absolute())}, _fmt_backup),
}
