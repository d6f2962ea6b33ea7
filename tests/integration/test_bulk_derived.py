"""Records added through the socket, in batches and alone, store the index columns the general
path gives: term counts as FTS5 counts them from the stored text (the daemon counts ASCII
text from remembered stems), search_aux as its definition gives it."""

from __future__ import annotations

import json
import sqlite3

from minionsd.storage import fts
from tests.integration.test_bulk_commits import db_path, send_batch
from tests.unit.test_index_columns import reference_aux

TEXTS = ["The TokenRefresher timed out; we rolled back and fell back to the cache",
         "ERR_CONN_RESET in src/auth/token_refresh.py: retry_policy backs off, caching ponies",
         "Setting   up\tthe HTTPServer2Go: log in, sign in, then LOOKED UP generalization",
         "x" * 80 + " relational " + "y" * 70 + " relational",
         "caf\u00e9 na\u00efve \u00e9t\u00e9: non-ASCII is counted by FTS5",
         "a\x00b nul and 2024 v2 0x1F --- ___ __init__ kebab-case-name"]


def params(i: int, text: str) -> dict:
    return {"body": f"{text} body {i}", "title": text.split(":")[0], "type": "semantic",
            "scope": "global", "trust": "agent", "source": f"test {i}",
            "paths": [f"src/mod_{i}/FileName{i}.py"], "tags": ["BulkTag", f"t-{i}"]}


def test_stored_index_columns_are_the_general_paths(daemon):
    for round_ in range(2):  # the second round finds every stem remembered
        replies = send_batch(daemon, [{"jsonrpc": "2.0", "id": i, "method": "memory.add",
                                       "params": params(i + 10 * round_, text)}
                                      for i, text in enumerate(TEXTS)])
        assert all("result" in reply for reply in replies)
    daemon.call("memory.add", **params(99, TEXTS[0]))
    conn = sqlite3.connect(f"file:{db_path(daemon)}?mode=ro", uri=True)
    scratch = sqlite3.connect(":memory:")
    try:
        rows = conn.execute("SELECT title, body, paths, tags, search_aux, term_counts "
                            "FROM memory_records").fetchall()
        assert len(rows) == 2 * len(TEXTS) + 1
        for title, body, paths, tags, aux, counts in rows:
            assert aux == reference_aux(title, body, json.loads(paths), json.loads(tags))
            assert counts == fts.term_counts(scratch, title, body, aux)
    finally:
        conn.close()
        scratch.close()
