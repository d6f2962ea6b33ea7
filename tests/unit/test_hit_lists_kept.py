"""Retrieval's hit lists (planner.hit_lists) kept across writes: a list read before records
were only added is extended with the hits above what it saw, instead of being read whole
again; after any other change it is read whole. Whatever the mix of writes, reads and
windows, each list is exactly what FTS5 gives for the same snapshot."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval import planner
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.storage import fts
from tests.unit.test_recordview import insert, open_db, rewrite

WORDS = ["cache", "pool", "flush", "retry", "token", "deploy", "src/a_b.py"]


def _reader(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)


def _step(conn: sqlite3.Connection, rng: random.Random, ids: list[str], kind: str) -> None:
    body = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(1, 5)))
    if kind == "add" or not ids:
        rid = f"r{len(ids)}-{rng.randrange(10**6)}"
        insert(conn, rid, body)
        ids.append(rid)
    elif kind == "edit":
        rewrite(conn, rng.choice(ids), title="", body=body)
    elif kind == "delete":
        conn.execute("DELETE FROM memory_records WHERE id = ?", (ids.pop(rng.randrange(len(ids))),))
    else:  # a record added with a seq below the largest: not an addition on top
        rid = f"low-{rng.randrange(10**6)}"
        free = conn.execute("SELECT min(seq) - 1 FROM memory_records").fetchone()[0]
        if free and free > 0:
            insert(conn, rid, body, seq=free)
            ids.append(rid)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6),
       kinds=st.lists(st.sampled_from(["add", "add", "add", "edit", "delete", "low"]),
                      min_size=5, max_size=40),
       budget=st.sampled_from([3, 6, 50]))
def test_kept_lists_are_what_fts5_gives(tmp_path_factory, seed, kinds, budget):
    path = tmp_path_factory.mktemp("hits") / "state.db"
    writer = open_db(path)
    reader = _reader(path)
    index = RecallIndex()
    rng = random.Random(seed)
    ids: list[str] = []
    plain_budget = planner.ROW_BUDGET
    planner.ROW_BUDGET = budget
    try:
        for _ in range(4):
            insert(writer, f"seed{_}", " ".join(rng.sample(WORDS, 3)), seq=100 + _ * 10)
            ids.append(f"seed{_}")
        for kind in kinds:
            _step(writer, rng, ids, kind)
            for _look in range(rng.randrange(1, 3)):
                reader.execute("BEGIN")
                try:
                    token = index.view.sync(reader)
                    top = reader.execute("SELECT max(seq) FROM memory_records").fetchone()[0]
                    groups = [(term, rng.choice([0, 0, rng.randrange(0, (top or 1) + 2)]))
                              for term in rng.sample(WORDS, rng.randrange(1, 4))]
                    got = planner.hit_lists(reader, index, token, groups)
                    assert got == fts.hit_lists(reader, groups, budget)
                finally:
                    reader.execute("COMMIT")
    finally:
        planner.ROW_BUDGET = plain_budget
        reader.close()
        writer.close()


def test_after_additions_only_the_new_hits_are_read(tmp_path, monkeypatch):
    path = tmp_path / "state.db"
    writer = open_db(path)
    reader = _reader(path)
    index = RecallIndex()
    for n in range(30):
        insert(writer, f"r{n}", "flush the cache pool" if n % 2 else "retry the deploy")
    read: list[list[tuple[str, int]]] = []
    plain = fts.hit_lists

    def hit_lists(conn, groups, limit):
        read.append(list(groups))
        return plain(conn, groups, limit)

    monkeypatch.setattr(fts, "hit_lists", hit_lists)
    try:
        groups = [("cache", 0), ("deploy", 0)]
        first = planner.hit_lists(reader, index, index.view.sync(reader), groups)
        largest = reader.execute("SELECT max(seq) FROM memory_records").fetchone()[0]
        insert(writer, "new", "the cache again")
        second = planner.hit_lists(reader, index, index.view.sync(reader), groups)
        assert read == [groups, [("cache", largest), ("deploy", largest)]]
        assert list(second[("cache", 0)]) == [*first[("cache", 0)], largest + 1]
        assert second[("deploy", 0)] == first[("deploy", 0)]
        # Any other change (an edit of an older record): read whole again.
        rewrite(writer, "r1", title="", body="nothing here")
        third = planner.hit_lists(reader, index, index.view.sync(reader), groups)
        assert read[-1] == groups
        assert third == plain(reader, groups, planner.ROW_BUDGET)
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("tiles", [1, 3])
def test_a_list_older_than_the_syncs_remembered_is_read_whole(tmp_path, monkeypatch, tiles):
    from minionsd.memory.retrieval import recordview

    monkeypatch.setattr(recordview, "MAX_TILES", tiles)
    path = tmp_path / "state.db"
    writer = open_db(path)
    reader = _reader(path)
    index = RecallIndex()
    insert(writer, "r0", "flush the cache")
    try:
        planner.hit_lists(reader, index, index.view.sync(reader), [("cache", 0)])
        for n in range(4):  # four syncs, each applying one addition
            insert(writer, f"n{n}", "cache")
            index.view.sync(reader)
        token = index.view.sync(reader)
        entries = index.view.hit_entries([("cache", 0)], token)
        assert entries == {}
        got = planner.hit_lists(reader, index, token, [("cache", 0)])
        assert got == fts.hit_lists(reader, [("cache", 0)], planner.ROW_BUDGET)
    finally:
        reader.close()
        writer.close()
