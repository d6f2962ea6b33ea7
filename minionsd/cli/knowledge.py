"""minionsctl's curated-memory commands: the knowledge base (`kb add|list|show`) and the
pinned context (`pinned show|set|append`)."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, UsageError, copy_options, read_input, simple

# The daemon's categories (minionsd.home.KB_CATEGORIES).
CATEGORIES = ("architecture", "conventions", "project-notes", "build-reports", "reviews")


def _kb_add_params(args: argparse.Namespace) -> dict[str, Any]:
    params = {"category": args.category, "title": args.title,
              "body": read_input(args.file), "author": args.author or getpass.getuser()}
    copy_options(args, params, "project")
    if args.tag:
        params["tags"] = args.tag
    return params


def fmt_kb_list(r: dict[str, Any]) -> str:
    entries = r["entries"]
    if not entries:
        return "no entries"
    rows = [(e["path"], e.get("category"), fmt.moment(e.get("updated_at")),
             fmt.shorten(e.get("title"), 60)) for e in entries]
    return (f"{fmt.plural(len(entries), 'knowledge entry')}, newest first\n\n"
            + fmt.table(("path", "category", "updated", "title"), rows))


def fmt_kb_entry(r: dict[str, Any]) -> str:
    return (f"{r['path']}  [{r['category']}]\n"
            f"{fmt.fields([('title', r.get('title'))])}\n\n{r['body'].rstrip()}")


def _pinned_text(args: argparse.Namespace) -> dict[str, Any]:
    """The text argument as given (`pinned set ""` empties the file on purpose); text read
    from a file or standard input must not be blank, so an empty stdin never wipes it."""
    if args.text is not None:
        return {"text": args.text}
    source = args.file or "-"
    text = read_input(source)
    if not text.strip():
        where = "standard input" if source == "-" else source
        hint = " (to empty pinned.md on purpose: minionsctl pinned set \"\")"
        raise UsageError(f"pinned {args.sub}: {where} was empty; give the text as an argument, "
                         "with --file, or on standard input" + (hint if args.sub == "set" else ""))
    return {"text": text}


def _pinned_size(r: dict[str, Any]) -> str:
    return (f"pinned.md now {fmt.plural(r['code_units'], 'code unit')} long "
            "(prompts keep the first engine.pinned_max_code_units)")


def fmt_pinned(r: dict[str, Any]) -> str:
    """The file as it is (so it can be redirected); a note on stderr when it is empty."""
    if not r["text"].strip():
        print("pinned.md is empty", file=sys.stderr)
        return ""
    return r["text"].rstrip("\n")


def add_parsers(add: AddParser) -> None:
    kb = add("kb", "knowledge base").add_subparsers(dest="sub", required=True, metavar="SUB")
    p = add("add", "add a knowledge entry (body from --file or stdin)", kb)
    p.add_argument("--category", required=True, choices=CATEGORIES,
                   help="the entry's category (its directory under knowledge/)")
    p.add_argument("--title", required=True, help="the entry's title (also names the file)")
    p.add_argument("--file", default="-", metavar="FILE",
                   help="read the body from FILE (default -: standard input)")
    p.add_argument("--author", help="who wrote it (default: your login name)")
    p.add_argument("--project", help="the project it belongs to (default: global)")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    add("list", "list knowledge entries, newest first", kb).add_argument(
        "--category", choices=CATEGORIES, help="only this category")
    add("show", "show a knowledge entry", kb).add_argument(
        "path", metavar="PATH", help="knowledge/<category>/<name>.md")
    pinned = add("pinned", "pinned context").add_subparsers(dest="sub", required=True,
                                                            metavar="SUB")
    add("show", "print pinned.md", pinned)
    for name, what in (("set", "replace pinned.md with"), ("append", "append to pinned.md")):
        p = add(name, f"{what} the text argument, --file, or stdin", pinned)
        p.add_argument("text", nargs="?", metavar="TEXT",
                       help="the text (else --file, else standard input)")
        p.add_argument("--file", metavar="FILE", help="read the text from FILE (- for stdin)")


COMMANDS = {
    "kb add": simple("knowledge.create", _kb_add_params,
                     lambda r: f"created {r['path']} (record {r['record_id']})"),
    "kb list": simple("knowledge.list",
                      lambda a: {"category": a.category} if a.category else {}, fmt_kb_list),
    "kb show": simple("knowledge.get", lambda a: {"path": a.path}, fmt_kb_entry),
    "pinned show": simple("pinned.get", lambda a: {}, fmt_pinned),
    "pinned set": simple("pinned.set", _pinned_text, _pinned_size),
    "pinned append": simple("pinned.append", _pinned_text, _pinned_size),
}
