"""Retrieval keeps no state in its modules: every cache lives in a RecallIndex, whose lifetime
is the open database's (so two databases, or two tests, never share one)."""

from __future__ import annotations

import array
import collections
import importlib
import pkgutil
import sqlite3
from pathlib import Path

from minionsd.memory.retrieval.candidates import fetch_candidates
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.storage.database import migrate

# Every module of the retrieval core, found in its package, and the FTS5 storage it reads.
_CORE = importlib.import_module("minionsd.memory.retrieval")
MODULES = ("minionsd.storage.fts", *(f"minionsd.memory.retrieval.{info.name}"
                                     for info in pkgutil.iter_modules(_CORE.__path__)))
MUTABLE = (dict, list, set, bytearray, collections.deque, array.array)


def test_no_module_level_mutable_state() -> None:
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("__"):
                continue
            if isinstance(value, MUTABLE) or hasattr(value, "cache_info"):
                found.append(f"{name}.{attr}")
    assert found == []
    assert {"minionsd.memory.retrieval.pack", "minionsd.memory.retrieval.rank"} <= set(MODULES)


def _db(path: Path, bodies: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn)
    for i, body in enumerate(bodies):
        conn.execute(
            "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
            "VALUES (?, 'semantic', 'global', 'human', ?, '2026-01-01', '2026-01-01')",
            (f"M-{path.stem}-{i}", body))
    return conn


def test_two_databases_with_two_indexes_never_mix(tmp_path: Path) -> None:
    """Same seqs, same words, different records: each index answers for its own database."""
    a = _db(tmp_path / "a.db", ["kumquat harvest", "kumquat jam"])
    b = _db(tmp_path / "b.db", ["kumquat tree"])
    index_a, index_b = RecallIndex(), RecallIndex()

    def ids(index: RecallIndex, conn: sqlite3.Connection) -> list[str]:
        return sorted(r["id"] for r in fetch_candidates(
            index, conn, ["kumquat"], project=None, agent=None,
            now_iso="2026-06-01T00:00:00.000Z", limit=10))

    for _ in range(2):  # the second round is answered from the caches
        assert ids(index_a, a) == ["M-a-0", "M-a-1"]
        assert ids(index_b, b) == ["M-b-0"]
