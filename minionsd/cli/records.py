"""minionsctl's record commands: `search` and `show`, and the record lifecycle (`pin`,
`retract`, `supersede`, `expire`, `purge`). Each is one JSON-RPC call; a lifecycle command answers
with a sentence naming the record and its new state. A new lifecycle command is one entry in
LIFECYCLE (call and sentence) and its arguments in add_lifecycle_parsers."""

from __future__ import annotations

import argparse
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, copy_options, simple

# The daemon's values (minionsd.records; not imported here, it pulls in SQLite).
TYPES = ("semantic", "episodic", "procedural")
STATUSES = ("active", "superseded", "retracted", "expired")

# Shown by `show` in this order, with these labels; other non-empty fields follow generically.
_FIELDS = (("status", "status"), ("type", "type"), ("scope", "scope"), ("trust", "trust"),
           ("source", "source"), ("author", "author"), ("project", "project"),
           ("agent", "agent"), ("task", "task"), ("pr", "pr"), ("paths", "paths"),
           ("tags", "tags"), ("importance", "importance"), ("confidence", "confidence"),
           ("created_at", "created"), ("updated_at", "updated"), ("expires_at", "expires"),
           ("superseded_by", "superseded by"), ("retracted_reason", "retracted because"))
_TIMES = {"created_at", "updated_at", "expires_at"}
_NOT_FIELDS = {"id", "title", "body", "pinned", "snippet", "rank"}


def name_of(record: dict[str, Any]) -> str:
    """`M-1a2 (Token refresh)`: the id and the title, else the body's start."""
    label = record.get("title") or record.get("body") or ""
    return f"{record['id']} ({fmt.shorten(label, 60)})" if label.strip() else record["id"]


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def fmt_record(record: dict[str, Any]) -> str:
    pairs: list[tuple[str, Any]] = []
    for key, label in _FIELDS:
        value = record.get(key)
        if _empty(value):
            continue
        if key == "status" and record.get("pinned"):
            value = f"{value}, pinned"
        pairs.append((label, fmt.moment(value) if key in _TIMES else value))
    known = {key for key, _ in _FIELDS} | _NOT_FIELDS
    pairs += [(key, value) for key, value in record.items()
              if key not in known and not _empty(value)]
    head = record["id"] + (f": {record['title']}" if record.get("title") else "")
    return f"{head}\n{fmt.fields(pairs)}\n\n{record.get('body', '').rstrip()}"


def fmt_search(result: dict[str, Any]) -> str:
    records, total = result["records"], result["total"]
    head = fmt.plural(total, "match")
    if len(records) < total:
        head += f", showing the best {len(records)}"
    if not records:
        return head
    with_status = any(r.get("status") != "active" for r in records)
    rows = []
    for r in records:
        title = fmt.shorten(r.get("title") or r.get("body", ""), 36)
        snippet = fmt.shorten((r.get("snippet") or "").lstrip("# "), 60)
        row = [r["id"], fmt.day(r.get("created_at")), r.get("type"), r.get("scope")]
        rows.append([*row, r.get("status"), title, snippet] if with_status
                    else [*row, title, snippet])
    headers = ["id", "date", "type", "scope", *(["status"] if with_status else []),
               "title", "snippet"]
    return f"{head}\n\n{fmt.table(headers, rows)}"


def _search_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"query": args.query, "limit": args.limit}
    copy_options(args, params, "type", "scope", "project", "agent", "status")
    return params


# --- record lifecycle: one call each, answered with a sentence --------------------------------

def _pinned(r: dict[str, Any]) -> str:
    return f"pinned {name_of(r)}: status {r['status']}, trust {r['trust']}"


def _retracted(r: dict[str, Any]) -> str:
    return f"retracted {name_of(r)}: {r.get('retracted_reason') or 'no reason given'}"


def _superseded(r: dict[str, Any]) -> str:
    return f"{name_of(r)} is now superseded by {r.get('superseded_by') or '-'}"


def _expired(r: dict[str, Any]) -> str:
    return f"expired {name_of(r)} as of {fmt.moment(r.get('expires_at'))}"


def _purged(r: dict[str, Any]) -> str:
    head = f"purged {r['id']} at {fmt.moment(r.get('purged_at'))}"
    files = r.get("files") or []
    if not files:
        return head + "; no file in the home holds its text"
    return "\n".join([f"{head}; {fmt.plural(len(files), 'file')} still "
                      f"{'holds' if len(files) == 1 else 'hold'} its text (edit by hand):",
                      *(f"  {path}" for path in files)])


LIFECYCLE = {
    "pin": simple("memory.pin", lambda a: {"id": a.id}, _pinned),
    "retract": simple("memory.retract", lambda a: {"id": a.id, "reason": a.reason},
                      _retracted),
    "supersede": simple("memory.supersede", lambda a: {"id": a.id, "by": a.by}, _superseded),
    "expire": simple("memory.expire", lambda a: {"id": a.id}, _expired),
    "purge": simple("memory.purge", lambda a: {"id": a.id, "reason": a.reason}, _purged),
}


def add_lifecycle_parsers(add: AddParser) -> None:
    add("pin", "pin a record: active again, trusted, kept by retrieval (not pinned.md)"
        ).add_argument("id", metavar="ID", help="the record's id (M-...)")
    p = add("retract", "retract a record that is wrong")
    p.add_argument("id", metavar="ID", help="the record's id (M-...)")
    p.add_argument("--reason", required=True, help="why it is wrong (kept with the record)")
    p = add("supersede", "mark a record superseded by a newer one")
    p.add_argument("id", metavar="ID", help="the older record's id (M-...)")
    p.add_argument("--by", required=True, metavar="NEWER_ID",
                   help="the id of the newer record that replaces it")
    add("expire", "expire a record now").add_argument("id", metavar="ID",
                                                      help="the record's id (M-...)")
    p = add("purge", "delete a record for good (a leaked secret); lists files still holding it")
    p.add_argument("id", metavar="ID", help="the record's id (M-...)")
    p.add_argument("--reason", required=True, help="why it goes (kept in the purge audit)")


# --- search and show --------------------------------------------------------------------------

def add_parsers(add: AddParser) -> None:
    p = add("search", "full-text search over records")
    p.add_argument("query", metavar="QUERY", help="words, identifiers or paths to look for")
    p.add_argument("--type", choices=TYPES, help="only records of this type")
    p.add_argument("--scope", metavar="SCOPE",
                   help="only this exact scope: global, project:NAME or agent:ID")
    p.add_argument("--project", help="only records of this project")
    p.add_argument("--agent", help="only records of this agent")
    p.add_argument("--status", action="append", choices=STATUSES,
                   help="status to include (repeatable; default active)")
    p.add_argument("--limit", type=int, default=20, metavar="N",
                   help="at most N records, 1-500 (default 20)")
    add("show", "print one record").add_argument("id", metavar="ID",
                                                 help="the record's id (M-...)")
    add_lifecycle_parsers(add)


COMMANDS = {
    "search": simple("memory.search", _search_params, fmt_search),
    "show": simple("memory.get", lambda a: {"id": a.id}, fmt_record),
    **LIFECYCLE,
}
