"""Where a state.db's bytes go: pages per table and index from SQLite's dbstat virtual table
(FTS5's shadow tables named as parts of the index), beside the text the records hold.

    .venv/bin/python scripts/db_space.py PATH/state.db

Read-only; prints a table, asserts nothing. Needs an SQLite built with dbstat (Debian's and
Python's usual builds are).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

COLUMNS = ("title", "body", "search_aux", "term_counts", "paths", "tags", "meta")


def space_lines(path: str, top: int = 0) -> list[str]:
    """The report as lines: the file, its largest tables and indexes (all with top=0), the
    bytes each memory_records column holds, and the file's size over the title and body text."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        rows = conn.execute(
            "SELECT name, sum(pgsize), sum(unused) FROM dbstat GROUP BY name "
            "ORDER BY sum(pgsize) DESC").fetchall()
        records = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
        text = conn.execute(
            "SELECT " + ", ".join(f"sum(length(CAST({c} AS BLOB)))" for c in COLUMNS)
            + " FROM memory_records").fetchone()
    finally:
        conn.close()
    total = page_size * pages
    lines = [f"{path}: {total / 1e6:.1f} MB ({pages:,} pages of {page_size}), "
             f"{records:,} records",
             f"   {'table or index':40} {'MB':>8} {'share':>6} {'unused MB':>9}"]
    for name, size, unused in rows[:top or None]:
        lines.append(f"   {name:40} {size / 1e6:8.1f} {size / total:6.1%} {unused / 1e6:9.1f}")
    held = {column: size or 0 for column, size in zip(COLUMNS, text, strict=True)}
    lines.append("   bytes held in memory_records columns (UTF-8): " + ", ".join(
        f"{column} {size / 1e6:.1f} MB" for column, size in held.items()))
    plain = held["title"] + held["body"]
    lines.append(f"   file / (title + body) = {total / max(1, plain):.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Where a state.db's bytes go (read-only).")
    parser.add_argument("db", type=Path, help="path of the state.db to read")
    parser.add_argument("--top", type=int, default=0,
                        help="show only the N largest tables and indexes (default: all)")
    args = parser.parse_args(argv)
    if not args.db.is_file():
        parser.error(f"no such file: {args.db}")
    try:
        lines = space_lines(str(args.db), top=args.top)
    except sqlite3.Error as exc:
        print(f"db_space: cannot read {args.db} as a minionsd state.db: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
