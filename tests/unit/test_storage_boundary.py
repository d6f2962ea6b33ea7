"""The storage boundary: SQL runs only in storage modules (docs/architecture.md).

Everything else asks storage for records, candidates, lifecycle changes, the journal and the
other tables by calling a storage function on a connection (`db.read(fn, ...)`,
`db.write(fn, ...)`), never by running a statement itself. The test finds every call of
`.execute(`, `.executemany(` or `.executescript(` (on anything but `self`, which is a method of
the caller's own class) in minionsd/ and fails on one outside the lists below.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "minionsd"
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})

# Modules that own a part of storage, with what they own: the storage layer's package. A new
# module under storage/ needs a line here.
STORAGE_MODULES: dict[str, str] = {
    "storage/database.py": "migrations, the single writer, the readers, the ping",
    "storage/db_snapshot.py": "the database file: a consistent copy, the check of a copy",
    "storage/records.py": "memory_records: insert, lifecycle, expiry, counts",
    "storage/record_rows.py": "a new record's row; a batch of them inserted in one statement",
    "storage/search.py": "memory.search: the page (bounded by the rare terms, or plain), "
                         "its snippets and total",
    "storage/search_reads.py": "memory.search's FTS5 reads: phrase counts, ranks of chosen rows "
                               "with the total in one walk, the best matches, counts, the "
                               "page's own index for its snippets",
    "storage/read_txn.py": "one read transaction around several reads",
    "storage/telemetry.py": "retrieval telemetry rows",
    "storage/browse.py": "reads for people: records browsed in stable pages, supersede chains, "
                         "retrievals that selected a record, an agent's latest retrievals",
    "storage/web_sessions.py": "the web view's sessions and one-time sign-in links",
    "storage/journal.py": "the consolidation journal: batches, batch_notes, counters",
    "storage/submissions.py": "inbox holds, claimed submission names, findings per task",
    "storage/kb_index.py": "kb_files: which KB file feeds which record, at which hash",
    "storage/purged.py": "purged_records and the statements of a purge",
    "storage/job_runs.py": "maintenance jobs' last results",
    "storage/live_counts.py": "status's figures read after each commit: record_counts and the "
                              "earliest expiry times of active records",
    "storage/tokens.py": "gateway_tokens: the gateway's bearer tokens, by SHA-256 digest",
    "storage/fts.py": "the FTS5 index through documented interfaces: stems, term counts, "
                      "statistics, the planner's searches, merge steps",
    "storage/recall.py": "what retrieval's record view follows (the change log, filter "
                         "columns), the recall rule in SQL, the one-OR reference, snapshots",
}


def sql_calls(source: str) -> list[tuple[str, int, str]]:
    """(top-level function or class, line, method) of every SQL execution call in `source`."""
    found = []
    for top in ast.parse(source).body:
        owner = getattr(top, "name", "<module>")
        for node in ast.walk(top):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in SQL_CALLS):
                continue
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id == "self":
                continue  # the class's own method (Pipeline.execute), not a connection's
            found.append((owner, node.lineno, node.func.attr))
    return found


def _modules() -> dict[str, str]:
    return {path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_detector_sees_connection_calls_and_not_own_methods() -> None:
    source = ("def f(conn, db):\n"
              "    conn.execute('SELECT 1')\n"
              "    db.reader().executemany('INSERT INTO t VALUES (?)', [])\n"
              "class C:\n"
              "    def run(self):\n"
              "        self.execute(1)\n"
              "        self._conn.executescript('x')\n")
    assert sql_calls(source) == [("f", 2, "execute"), ("f", 3, "executemany"),
                                 ("C", 7, "executescript")]


def test_sql_runs_only_in_storage_modules() -> None:
    modules = _modules()
    assert set(STORAGE_MODULES) <= set(modules), "a listed storage module no longer exists"
    outside = [f"minionsd/{rel}:{line} {owner}: .{method}("
               for rel, source in modules.items() if rel not in STORAGE_MODULES
               for owner, line, method in sql_calls(source)]
    assert not outside, ("SQL outside the storage modules; move it into a storage function "
                         "and call that instead:\n" + "\n".join(outside))
