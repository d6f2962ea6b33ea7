"""minionsctl's inbox commands: `note`, `inbox` (and `inbox requeue`) and `consolidate`."""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, UsageError, copy_options, read_stdin, simple

# The daemon's note kinds (minionsd.inbox.KINDS; not imported here, it is heavy).
KINDS = ("note", "finding", "feedback", "alert")


def _note_params(args: argparse.Namespace) -> dict[str, Any]:
    body = args.text
    if body == "-":
        body = read_stdin()
        if not body.strip():
            raise UsageError("note -: standard input was empty; pipe the note's text in, "
                             "e.g. printf 'text' | minionsctl note -")
    params = {"body": body, "author": args.author or getpass.getuser()}
    copy_options(args, params, "title", "kind", "project", "task", "outcome")
    if args.hold:
        params["hold"] = True
    return params


def fmt_note(r: dict[str, Any]) -> str:
    return f"{'duplicate, not written' if r['duplicate'] else 'written'}: {r['path']}"


def _state(note: dict[str, Any]) -> str:
    if note.get("in_open_batch"):  # a batch took it and has not run through (status says why)
        return "in open batch"
    return "held" if note.get("held") else "eligible" if note.get("eligible") else "waiting"


def fmt_inbox(result: dict[str, Any]) -> str:
    if "quarantined" in result:
        files = result["quarantined"]
        if not files:
            return "quarantine is empty"
        return (f"{fmt.plural(len(files), 'file')} in notes/quarantine/ "
                "(fix one, then: minionsctl inbox requeue NAME)\n\n"
                + fmt.table(("name", "quarantined", "reason"),
                            [(q["name"], fmt.moment(q.get("at")),
                              " ".join(str(q.get("reason") or "-").split()))  # one line each
                             for q in files]))
    notes = result["notes"]
    if not notes:
        return "inbox is empty"
    eligible = sum(1 for n in notes if n.get("eligible"))
    held = sum(1 for n in notes if n.get("held"))
    rows = [(n["name"], n.get("author"), n.get("kind"), fmt.size(n.get("bytes")), _state(n))
            for n in notes]
    return (f"{fmt.plural(len(notes), 'note')} in the inbox: {eligible} eligible, {held} held"
            f"\n\n{fmt.table(('name', 'author', 'kind', 'size', 'state'), rows, right=(3,))}")


def fmt_consolidate(r: dict[str, Any]) -> str:
    if r["mode"] == "nothing":
        return ("nothing to consolidate: no batch ran (too few eligible notes; "
                "--force runs one for any eligible note)")
    notebooks = r.get("notebooks") or {}
    entries = sum(notebooks.values())
    what = "duplicate storm stopped" if r["mode"] == "circuit_breaker" else f"{r['mode']} digest"
    parts = [f"{fmt.plural(r['notes'], 'note')} archived",
             f"{fmt.plural(r['records_upserted'], 'record')} upserted",
             f"{fmt.plural(len(r.get('kb_entries') or []), 'KB entry')} written"]
    if notebooks:
        parts.append(f"{fmt.plural(entries, 'notebook entry')} for "
                     f"{', '.join(sorted(notebooks))}")
    lines = [f"batch done ({what}): " + ", ".join(parts)]
    lines += [f"  {path}" for path in r.get("kb_entries") or []]
    return "\n".join(lines)


def add_parsers(add: AddParser) -> None:
    p = add("note", "submit a note to the inbox")
    p.add_argument("text", metavar="TEXT",
                   help="the note's text, or - to read it from standard input")
    p.add_argument("--author", help="who wrote it (default: your login name)")
    p.add_argument("--title", help="the note's title (also names the file)")
    p.add_argument("--kind", choices=KINDS, help="what it is (default note); a finding "
                   "needs --task and --outcome success")
    p.add_argument("--project", help="the project it belongs to")
    p.add_argument("--task", metavar="ID", help="the work item it is about")
    p.add_argument("--outcome", help="how the task ended (a finding needs 'success')")
    p.add_argument("--hold", action="store_true",
                   help="keep it out of consolidation until the file is edited")
    p = add("inbox", "list inbox notes (or, with --quarantined, the quarantined files)")
    p.add_argument("--quarantined", action="store_true",
                   help="list notes/quarantine/ with each file's reason")
    inbox = p.add_subparsers(dest="sub", metavar="SUB")
    add("requeue", "move a fixed file from notes/quarantine/ back into the inbox", inbox
        ).add_argument("name", metavar="NAME", help="the file's name in notes/quarantine/")
    p = add("consolidate", "run a consolidation batch now")
    p.add_argument("--force", action="store_true",
                   help="run even below engine.inbox_consolidate_threshold")


COMMANDS = {
    "note": simple("inbox.submit", _note_params, fmt_note),
    "inbox": simple("inbox.list", lambda a: {"quarantined": True} if a.quarantined else {},
                    fmt_inbox),
    "inbox requeue": simple("inbox.requeue", lambda a: {"name": a.name},
                            lambda r: f"requeued: {r['path']}"),
    "consolidate": simple("consolidation.run", lambda a: {"force": a.force}, fmt_consolidate),
}
