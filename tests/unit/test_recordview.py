"""RecordView (minionsd.memory.retrieval.recordview) on a real SQLite file, kept current by the
record_changes triggers of migration 0006; and fetch_candidates never serving stale records."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from minionsd.memory.retrieval import eligibility
from minionsd.memory.retrieval.candidates import fetch_candidates, fetch_candidates_naive
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.memory.retrieval.recordview import DENSE_LIMIT, RecordView
from minionsd.storage import fts, recall, records
from minionsd.storage.database import migrate
from minionsd.text.ftsquery import index_aux_text

NOW = "2026-06-01T00:00:00.000Z"
SCOPES = ["global", "project:alpha", "agent:dallas"]  # what project=alpha, agent=dallas allows


def open_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn)
    return conn


def insert(conn: sqlite3.Connection, rid: str, body: str = "plain note body",
           **fields: Any) -> int:
    """Insert a record with its search_aux and term counts (as records.add writes them)."""
    row = {
        "seq": None, "type": "semantic", "scope": "global", "status": "active",
        "trust": "human", "title": "", "expires_at": None,
        "created_at": "2026-01-01T00:00:00.000Z",
    } | fields
    aux = index_aux_text(row["title"], body, [], [])
    cur = conn.execute(
        """INSERT INTO memory_records (seq, id, type, scope, status, trust, title, body,
               source, created_at, updated_at, expires_at, search_aux, term_counts)
           VALUES (:seq, :id, :type, :scope, :status, :trust, :title, :body, :source,
               :created_at, :created_at, :expires_at, :aux, :counts)""",
        row | {"id": rid, "body": body, "source": f"notes/{rid}.md", "aux": aux,
               "counts": fts.term_counts(conn, row["title"], body, aux)},
    )
    return int(cur.lastrowid)


def rewrite(conn: sqlite3.Connection, rid: str, *, title: str, body: str) -> None:
    """Change a record's text the way an edit or reindex would: text, aux and counts."""
    aux = index_aux_text(title, body, [], [])
    conn.execute(
        "UPDATE memory_records SET title = ?, body = ?, search_aux = ?, term_counts = ? "
        "WHERE id = ?",
        (title, body, aux, fts.term_counts(conn, title, body, aux), rid),
    )


def last_change(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT max(id) FROM record_changes").fetchone()[0] or 0


class Reader(sqlite3.Connection):
    """A reader connection with the RecallIndex it searches with (a fresh one per test)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.index = RecallIndex()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(db_path)
    yield c
    c.close()


# --- the filter table ----------------------------------------------------------------------


def test_first_sync_loads_everything(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    b = insert(conn, "M-b", scope="project:alpha")
    c = insert(conn, "M-c", status="retracted")
    d = insert(conn, "M-d", scope="project:beta")
    # Records written before migration 0006 have no log rows: the first sync must read the
    # table itself, not the log.
    conn.execute("DELETE FROM record_changes WHERE seq IN (?, ?)", (a, b))
    view = RecordView()
    assert view.sync(conn) == last_change(conn)
    assert view.recallable([a, b, c, d], SCOPES, NOW, 10) == [a, b]
    assert view.recallable([a, b, c, d], ["project:beta"], NOW, 10) == [d]


def test_empty_table_then_first_record(conn: sqlite3.Connection) -> None:
    view = RecordView()
    assert view.sync(conn) == 0
    assert view.recallable([1, 2, 3], SCOPES, NOW, 10) == []
    a = insert(conn, "M-a")
    assert view.recallable([a], SCOPES, NOW, 10) == []  # not synced yet: left out
    assert view.sync(conn) == last_change(conn) > 0
    assert view.recallable([a], SCOPES, NOW, 10) == [a]


def test_recall_filter_matches_the_sql_filter(conn: sqlite3.Connection) -> None:
    expected: list[int] = []
    excluded: list[int] = []

    def put(rid: str, keep: bool, **fields: Any) -> None:
        (expected if keep else excluded).append(insert(conn, rid, **fields))

    for status in ("active", "superseded", "retracted", "expired"):
        put(f"M-status-{status}", status == "active", status=status)
    for scope in ("global", "project:alpha", "agent:dallas", "project:beta", "agent:ripley",
                  "project:alphabet", "Global", ""):
        put(f"M-scope-{scope}", scope in SCOPES, scope=scope)
    put("M-exp-past", False, expires_at="2026-05-31T23:59:59.999Z")
    put("M-exp-equal", False, expires_at=NOW)  # expires_at <= now: gone
    put("M-exp-1ms", True, expires_at="2026-06-01T00:00:00.001Z")
    put("M-exp-far", True, expires_at="2099-01-01T00:00:00.000Z")
    # Compared as strings, like the SQL `expires_at > :now`: 'Z' sorts after '.'.
    put("M-exp-nomillis", True, expires_at="2026-06-01T00:00:00Z")
    put("M-exp-date", False, expires_at="2026-06-01")  # a prefix sorts before: expired
    put("M-exp-retracted", False, status="retracted", expires_at="2099-01-01T00:00:00.000Z")
    for trust in ("human", "system", "agent", "external"):
        put(f"M-proc-{trust}", trust in ("human", "system"), type="procedural", trust=trust)
        put(f"M-epi-{trust}", True, type="episodic", trust=trust)
        put(f"M-sem-{trust}", True, type="semantic", trust=trust)
    put("M-proc-agent-elsewhere", False, type="procedural", trust="agent",
        scope="project:beta")

    view = RecordView()
    view.sync(conn)
    every = expected + excluded
    assert view.recallable(every, SCOPES, NOW, len(every)) == expected

    where, binds = recall.rule_sql(eligibility.rule("alpha", "dallas"))
    by_sql = [row[0] for row in conn.execute(
        f"SELECT seq FROM memory_records AS r WHERE {where} ORDER BY seq",
        binds | {"now": NOW})]
    assert by_sql == sorted(expected)


def test_scope_list_decides(conn: sqlite3.Connection) -> None:
    g = insert(conn, "M-g")
    pa = insert(conn, "M-pa", scope="project:alpha")
    ad = insert(conn, "M-ad", scope="agent:dallas")
    view = RecordView()
    view.sync(conn)
    seqs = [g, pa, ad]
    assert view.recallable(seqs, ["global"], NOW, 10) == [g]
    assert view.recallable(seqs, ["agent:dallas", "project:alpha"], NOW, 10) == [pa, ad]
    assert view.recallable(seqs, ["project:never-seen"], NOW, 10) == []
    assert view.recallable(seqs, [], NOW, 10) == []


def test_input_order_kept_want_honoured_unknown_left_out(conn: sqlite3.Connection) -> None:
    seqs = [insert(conn, f"M-{i}") for i in range(6)]
    hidden = insert(conn, "M-hidden", status="superseded")
    view = RecordView()
    view.sync(conn)
    order = [seqs[4], 9999, seqs[0], hidden, -3, seqs[5], seqs[2], DENSE_LIMIT + 7, seqs[1]]
    assert view.recallable(order, SCOPES, NOW, 100) == [seqs[4], seqs[0], seqs[5], seqs[2],
                                                        seqs[1]]
    assert view.recallable(order, SCOPES, NOW, 3) == [seqs[4], seqs[0], seqs[5]]
    assert view.recallable(order, SCOPES, NOW, 1) == [seqs[4]]
    # A generator is read only as far as needed.
    consumed: list[int] = []

    def gen() -> Iterator[int]:
        for seq in order:
            consumed.append(seq)
            yield seq

    assert view.recallable(gen(), SCOPES, NOW, 2) == [seqs[4], seqs[0]]
    assert consumed == order[:3]


def test_want_zero_returns_nothing(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    view = RecordView()
    view.sync(conn)
    assert view.recallable([a], SCOPES, NOW, 0) == []


def test_large_seqs_follow_changes_too(conn: sqlite3.Connection) -> None:
    small = insert(conn, "M-small")
    big = insert(conn, "M-big", seq=DENSE_LIMIT + 5)
    assert big == DENSE_LIMIT + 5
    view = RecordView()
    view.sync(conn)
    assert view.recallable([big, small], SCOPES, NOW, 10) == [big, small]
    conn.execute("UPDATE memory_records SET status = 'retracted' WHERE seq = ?", (big,))
    bigger = insert(conn, "M-bigger", seq=DENSE_LIMIT + 9, scope="project:alpha")
    view.sync(conn)
    assert view.recallable([big, bigger, small], SCOPES, NOW, 10) == [bigger, small]
    conn.execute("DELETE FROM memory_records WHERE seq = ?", (bigger,))
    view.sync(conn)
    assert view.recallable([big, bigger, small], SCOPES, NOW, 10) == [small]


def test_rows_between_counts_what_the_table_holds(conn: sqlite3.Connection) -> None:
    seqs = [insert(conn, f"M-{i}", status="retracted" if i % 3 == 0 else "active")
            for i in range(40)]
    seqs.append(insert(conn, "M-big", seq=DENSE_LIMIT + 3))
    conn.execute("DELETE FROM memory_records WHERE seq IN (?, ?, ?)",
                 (seqs[5], seqs[30], seqs[-1]))
    view = RecordView()
    view.sync(conn)
    bounds = [-1, 0, seqs[4], seqs[5], seqs[29], seqs[39], DENSE_LIMIT, DENSE_LIMIT + 9]
    for after in bounds:
        for upto in [*bounds, 10**12]:
            expected = conn.execute("SELECT count(*) FROM memory_records "
                                    "WHERE seq > ? AND seq <= ?", (after, upto)).fetchone()[0]
            assert view.rows_between(after, upto) == expected, (after, upto)
    insert(conn, "M-bigger", seq=DENSE_LIMIT + 7)
    view.sync(conn)
    assert view.rows_between(DENSE_LIMIT, DENSE_LIMIT + 9) == 1


# --- following changes ---------------------------------------------------------------------


def test_update_and_delete_seen_after_sync_and_evict_only_those(
    conn: sqlite3.Connection,
) -> None:
    a, b, c, d = (insert(conn, f"M-{x}") for x in "abcd")
    view = RecordView()
    token = view.sync(conn)
    for kind in ("rows", "counts"):
        view.remember(kind, {s: f"{kind}-{s}" for s in (a, b, c, d)}, token)
    assert view.cached("rows", [a, b, c, d]) == ({a: f"rows-{a}", b: f"rows-{b}",
                                                  c: f"rows-{c}", d: f"rows-{d}"}, [])

    conn.execute("UPDATE memory_records SET status = 'retracted' WHERE seq = ?", (a,))
    conn.execute("DELETE FROM memory_records WHERE seq = ?", (b,))
    # Not seen before the next sync.
    assert view.recallable([a, b, c, d], SCOPES, NOW, 10) == [a, b, c, d]

    assert view.sync(conn) == last_change(conn) > token
    assert view.recallable([a, b, c, d], SCOPES, NOW, 10) == [c, d]
    for kind in ("rows", "counts"):
        found, missing = view.cached(kind, [a, b, c, d])
        assert found == {c: f"{kind}-{c}", d: f"{kind}-{d}"}
        assert missing == [a, b]


def test_every_kind_of_update_is_followed(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    view = RecordView()

    def state() -> list[int]:
        view.sync(conn)
        return view.recallable([a], SCOPES, NOW, 10)

    def update(sql: str, *args: Any) -> None:
        conn.execute(f"UPDATE memory_records SET {sql} WHERE seq = ?", (*args, a))

    assert state() == [a]
    update("status = 'superseded'")
    assert state() == []
    update("status = 'active'")
    assert state() == [a]
    update("scope = 'project:beta'")
    assert state() == []
    update("scope = 'agent:dallas'")
    assert state() == [a]
    update("expires_at = ?", "2026-05-01T00:00:00.000Z")
    assert state() == []
    update("expires_at = NULL")
    assert state() == [a]
    update("type = 'procedural', trust = 'agent'")
    assert state() == []
    update("trust = 'system'")
    assert state() == [a]
    # A change of text only keeps the record but evicts its cached values.
    token = view.sync(conn)
    view.remember("rows", {a: "old"}, token)
    rewrite(conn, "M-a", title="new", body="new body")
    assert state() == [a]
    assert view.cached("rows", [a]) == ({}, [a])


def test_seq_change_is_followed(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    view = RecordView()
    view.sync(conn)
    conn.execute("UPDATE memory_records SET seq = 500 WHERE seq = ?", (a,))
    view.sync(conn)
    assert view.recallable([a, 500], SCOPES, NOW, 10) == [500]


def test_remember_with_a_stale_token_stores_nothing(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    b = insert(conn, "M-b")
    view = RecordView()
    old = view.sync(conn)
    insert(conn, "M-other")  # any change, not only to a or b
    new = view.sync(conn)
    assert new != old
    view.remember("rows", {a: "read before"}, old)
    assert view.cached("rows", [a]) == ({}, [a])
    view.remember("rows", {b: "read after"}, new)
    assert view.cached("rows", [a, b]) == ({b: "read after"}, [a])


def test_value_read_before_a_change_does_not_outlive_the_next_sync(
    conn: sqlite3.Connection,
) -> None:
    a = insert(conn, "M-a", body="first text")
    view = RecordView()
    token = view.sync(conn)
    before = conn.execute("SELECT body FROM memory_records WHERE seq = ?", (a,)).fetchone()[0]
    rewrite(conn, "M-a", title="", body="second text")
    view.remember("rows", {a: before}, token)  # the change is not applied yet: stored
    view.sync(conn)
    assert view.cached("rows", [a]) == ({}, [a])


def test_lru_bound(conn: sqlite3.Connection) -> None:
    view = RecordView(max_cached=3)
    token = view.sync(conn)
    view.remember("rows", {1: "one", 2: "two", 3: "three"}, token)
    assert view.cached("rows", [1])[0] == {1: "one"}  # 1 is now the most recently used
    view.remember("rows", {4: "four"}, token)
    found, missing = view.cached("rows", [1, 2, 3, 4])
    assert found == {1: "one", 3: "three", 4: "four"} and missing == [2]
    # Bounded per kind, and one large store keeps its newest values.
    view.remember("counts", {s: s * 10 for s in range(10, 16)}, token)
    assert view.cached("counts", range(10, 16)) == ({13: 130, 14: 140, 15: 150},
                                                    [10, 11, 12])
    assert len(view.cached("rows", [1, 3, 4])[0]) == 3


def test_byte_bound(conn: sqlite3.Connection) -> None:
    from minionsd.memory.retrieval import recordview

    view = RecordView()
    token = view.sync(conn)
    mib = 1 << 20
    size = {s: mib for s in range(40)} | {99: recordview.MAX_CACHED_BYTES // 10 + 1}
    view.remember("rows", {s: f"row {s}" for s in size}, token, lambda v: size[int(v[4:])])
    found, missing = view.cached("rows", [*range(40), 99])
    assert 99 in missing  # too big to cache at all
    # The newest values that fit in MAX_CACHED_BYTES stay; the oldest went first.
    assert sorted(found) == list(range(40 - recordview.MAX_CACHED_BYTES // mib, 40))


# --- pruning, other writers ----------------------------------------------------------------


@pytest.mark.parametrize("keep", [0, 1])
def test_pruned_log_reloads_in_full(conn: sqlite3.Connection, keep: int) -> None:
    a, b, c, d = (insert(conn, f"M-{x}") for x in "abcd")
    view = RecordView()
    token = view.sync(conn)
    view.remember("rows", {s: f"old-{s}" for s in (a, b, c, d)}, token)

    conn.execute("UPDATE memory_records SET status = 'retracted' WHERE seq = ?", (a,))
    conn.execute("DELETE FROM memory_records WHERE seq = ?", (b,))
    rewrite(conn, "M-c", title="", body="rewritten")
    e = insert(conn, "M-e")
    assert records.prune_changes(conn, keep) > 0
    remaining = conn.execute("SELECT min(id) FROM record_changes").fetchone()[0]
    assert remaining is None or remaining > token + 1  # the view's place is gone

    view.sync(conn)
    assert view.recallable([a, b, c, d, e], SCOPES, NOW, 10) == [c, d, e]
    found, _missing = view.cached("rows", [a, b, c, d])
    assert a not in found and b not in found and c not in found

    # And it keeps following the table afterwards.
    conn.execute("UPDATE memory_records SET status = 'expired' WHERE seq = ?", (d,))
    f = insert(conn, "M-f")
    view.sync(conn)
    assert view.recallable([a, b, c, d, e, f], SCOPES, NOW, 10) == [c, e, f]


def test_prune_while_caught_up_changes_nothing(conn: sqlite3.Connection) -> None:
    a = insert(conn, "M-a")
    b = insert(conn, "M-b")
    view = RecordView()
    token = view.sync(conn)
    view.remember("rows", {a: "value"}, token)
    records.prune_changes(conn, 1)
    view.sync(conn)
    assert view.recallable([a, b], SCOPES, NOW, 10) == [a, b]
    conn.execute("UPDATE memory_records SET status = 'retracted' WHERE seq = ?", (b,))
    view.sync(conn)
    assert view.recallable([a, b], SCOPES, NOW, 10) == [a]


def test_writes_from_another_connection_are_seen(
    conn: sqlite3.Connection, db_path: Path,
) -> None:
    a = insert(conn, "M-a")
    view = RecordView()
    view.sync(conn)
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        b = insert(other, "M-b", scope="project:alpha")
        other.execute("UPDATE memory_records SET status = 'retracted' WHERE seq = ?", (a,))
        view.sync(conn)
        assert view.recallable([a, b], SCOPES, NOW, 10) == [b]
        # A sync through the writer's connection updates the same view.
        other.execute("DELETE FROM memory_records WHERE seq = ?", (b,))
        view.sync(other)
        assert view.recallable([a, b], SCOPES, NOW, 10) == []
    finally:
        other.close()


def test_writes_from_another_process_are_seen(
    conn: sqlite3.Connection, db_path: Path,
) -> None:
    a = insert(conn, "M-a")
    b = insert(conn, "M-b")
    view = RecordView()
    token = view.sync(conn)
    view.remember("rows", {a: "cached a", b: "cached b"}, token)
    script = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute(\"UPDATE memory_records SET status = 'retracted' WHERE id = 'M-a'\")\n"
        "c.close()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db_path)], check=True, timeout=60)
    view.sync(conn)
    assert view.recallable([a, b], SCOPES, NOW, 10) == [b]
    assert view.cached("rows", [a, b]) == ({b: "cached b"}, [a])


def test_sync_from_an_older_snapshot_does_not_reopen_a_stale_token(
    conn: sqlite3.Connection, db_path: Path,
) -> None:
    """Two reader threads: retrieval E syncs and reads a row; a writer changes it; retrieval
    F syncs (the change is applied); a third sync that read max(id) before the change (here:
    a connection holding an older snapshot) completes last. E's value must still not be
    stored, or F would be served the pre-change row."""
    conn.execute("PRAGMA journal_mode=WAL")
    a = insert(conn, "M-a", body="old body")
    old_snapshot = sqlite3.connect(db_path, isolation_level=None)
    try:
        view = RecordView()
        token_e = view.sync(conn)
        value_e = conn.execute("SELECT body FROM memory_records WHERE seq = ?",
                               (a,)).fetchone()[0]
        old_snapshot.execute("BEGIN")
        old_snapshot.execute("SELECT max(id) FROM record_changes").fetchone()
        rewrite(conn, "M-a", title="", body="new body")
        view.sync(conn)  # F
        view.sync(old_snapshot)  # the late sync
        view.remember("rows", {a: value_e}, token_e)  # E
        assert view.cached("rows", [a]) == ({}, [a])  # what F would see
    finally:
        old_snapshot.close()


# --- fetch_candidates never serves stale records --------------------------------------------


def _search(conn: Reader, terms: list[str],
            index: RecallIndex | None = None) -> list[dict[str, Any]]:
    return fetch_candidates(index or conn.index, conn, terms, project="alpha", agent="dallas",
                            now_iso=NOW, limit=20, length_b=fts.BM25_B)


def _reference(conn: sqlite3.Connection, terms: list[str]) -> dict[str, float]:
    found = fetch_candidates_naive(conn, terms, project="alpha", agent="dallas", now_iso=NOW,
                                   limit=20)
    return {r["id"]: r["bm25"] for r in found}


@pytest.fixture
def corpus(conn: sqlite3.Connection, db_path: Path) -> Iterator[Reader]:
    """Three kafka notes among unrelated ones (so idf is positive), and a read-only reader
    connection like the daemon's: retrieval reads through it, writes go through `conn`."""
    insert(conn, "M-k1", "kafka kafka kafka consumer lag", title="Kafka lag")
    insert(conn, "M-k2", "kafka broker restarts during deploy", title="Broker restarts")
    insert(conn, "M-k3", "kafka topic retention settings", scope="project:alpha")
    for i in range(12):
        insert(conn, f"M-x{i}", f"unrelated css grid note number {i}")
    reader = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None,
                             factory=Reader)
    reader.row_factory = sqlite3.Row
    yield reader
    reader.close()


def _seq(conn: sqlite3.Connection, rid: str) -> int:
    return conn.execute("SELECT seq FROM memory_records WHERE id = ?", (rid,)).fetchone()[0]


def test_fetch_candidates_drops_a_retracted_record_at_once(
    conn: sqlite3.Connection, corpus: sqlite3.Connection,
) -> None:
    reader = corpus
    assert sorted(r["id"] for r in _search(reader, ["kafka"])) == ["M-k1", "M-k2", "M-k3"]
    view = reader.index.view
    k1 = _seq(conn, "M-k1")
    assert k1 in view.cached("rows", [k1])[0]  # the caches are in play
    assert k1 in view.cached("counts", [k1])[0]

    conn.execute("UPDATE memory_records SET status = 'retracted', retracted_reason = 'wrong' "
                 "WHERE id = 'M-k1'")
    assert sorted(r["id"] for r in _search(reader, ["kafka"])) == ["M-k2", "M-k3"]
    conn.execute("DELETE FROM memory_records WHERE id = 'M-k2'")
    conn.execute("UPDATE memory_records SET expires_at = '2026-05-01T00:00:00.000Z' "
                 "WHERE id = 'M-k3'")
    assert _search(reader, ["kafka"]) == []
    conn.execute("UPDATE memory_records SET status = 'active' WHERE id = 'M-k1'")
    (back,) = _search(reader, ["kafka"])
    assert back["id"] == "M-k1" and back["status"] == "active"
    assert back["retracted_reason"] == "wrong"  # the row read after the change, not the cache


def test_fetch_candidates_returns_updated_content(
    conn: sqlite3.Connection, corpus: sqlite3.Connection,
) -> None:
    reader = corpus
    first = {r["id"]: r for r in _search(reader, ["kafka", "lag"])}
    assert first["M-k1"]["body"] == "kafka kafka kafka consumer lag"
    assert first["M-k1"]["matched_terms"] == 2
    reference = _reference(conn, ["kafka", "lag"])
    for rid, rec in first.items():
        assert rec["bm25"] == pytest.approx(reference[rid], rel=1e-9)
    k1 = _seq(conn, "M-k1")
    view = reader.index.view
    assert k1 in view.cached("counts", [k1])[0] and k1 in view.cached("rows", [k1])[0]

    rewrite(conn, "M-k1", title="Zookeeper sessions", body="kafka zookeeper session expiry")
    second = {r["id"]: r for r in _search(reader, ["kafka", "lag"])}
    assert second["M-k1"]["title"] == "Zookeeper sessions"
    assert second["M-k1"]["body"] == "kafka zookeeper session expiry"
    assert second["M-k1"]["matched_terms"] == 1  # "lag" is gone from the stored counts
    reference = _reference(conn, ["kafka", "lag"])
    assert set(second) == set(reference)
    for rid, rec in second.items():  # scores from the new counts, not cached ones
        assert rec["bm25"] == pytest.approx(reference[rid], rel=1e-9)
    assert second["M-k1"]["bm25"] != pytest.approx(first["M-k1"]["bm25"], rel=1e-6)
    assert [r["id"] for r in _search(reader, ["zookeeper"])] == ["M-k1"]


def test_fetch_candidates_follows_text_changes_of_a_searched_term(
    conn: sqlite3.Connection, corpus: sqlite3.Connection,
) -> None:
    """The term's hit list was read (and may be cached) before each change; every change that
    adds or removes the term in some record must show in the next search."""
    reader = corpus
    assert sorted(r["id"] for r in _search(reader, ["kafka"])) == ["M-k1", "M-k2", "M-k3"]
    insert(conn, "M-k4", "kafka partitions rebalance")
    assert sorted(r["id"] for r in _search(reader, ["kafka"])) == [
        "M-k1", "M-k2", "M-k3", "M-k4"]
    rewrite(conn, "M-k2", title="Broker restarts", body="broker restarts during deploy")
    rewrite(conn, "M-x0", title="", body="kafka mirror maker notes")
    found = {r["id"]: r for r in _search(reader, ["kafka"])}
    assert sorted(found) == ["M-k1", "M-k3", "M-k4", "M-x0"]
    assert found["M-x0"]["body"] == "kafka mirror maker notes"
    reference = _reference(conn, ["kafka"])
    for rid, rec in found.items():
        assert rec["bm25"] == pytest.approx(reference[rid], rel=1e-9)


def test_fetch_candidates_finds_a_new_record_and_drops_a_deleted_one(
    conn: sqlite3.Connection, corpus: sqlite3.Connection,
) -> None:
    reader = corpus
    assert _search(reader, ["flink"]) == []
    insert(conn, "M-f1", "flink checkpoint alignment stalls", scope="agent:dallas")
    assert [r["id"] for r in _search(reader, ["flink"])] == ["M-f1"]
    conn.execute("UPDATE memory_records SET scope = 'agent:ripley' WHERE id = 'M-f1'")
    assert _search(reader, ["flink"]) == []
    conn.execute("UPDATE memory_records SET scope = 'global' WHERE id = 'M-f1'")
    assert [r["id"] for r in _search(reader, ["flink"])] == ["M-f1"]
    conn.execute("DELETE FROM memory_records WHERE id = 'M-f1'")
    assert _search(reader, ["flink"]) == []


def test_fetch_candidates_after_the_log_is_pruned(
    conn: sqlite3.Connection, corpus: sqlite3.Connection,
) -> None:
    reader = corpus
    assert len(_search(reader, ["kafka"])) == 3
    conn.execute("UPDATE memory_records SET status = 'superseded' WHERE id = 'M-k2'")
    rewrite(conn, "M-k3", title="", body="kafka retention is seven days")
    insert(conn, "M-k4", "kafka partitions rebalance")
    records.prune_changes(conn, 1)
    found = {r["id"]: r for r in _search(reader, ["kafka"])}
    assert sorted(found) == ["M-k1", "M-k3", "M-k4"]
    assert found["M-k3"]["body"] == "kafka retention is seven days"


def test_a_database_replaced_at_the_same_path_is_read_by_a_new_index(tmp_path: Path) -> None:
    """A daemon opens a database once, with a RecallIndex of its own: a file replaced at the
    same path (an offline restore) is read by the next daemon's new index, never by caches of
    the one it replaced."""
    path = tmp_path / "state.db"

    def build(ids: list[str]) -> None:
        if path.exists():
            path.unlink()
        conn = sqlite3.connect(path, isolation_level=None)
        migrate(conn)
        for rid in ids:
            conn.execute(
                "INSERT INTO memory_records (id, type, scope, trust, body, created_at, "
                "updated_at) VALUES (?, 'semantic', 'global', 'human', 'kumquat harvest', "
                "'2026-01-01', '2026-01-01')", (rid,))
        conn.close()

    def found() -> list[str]:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return sorted(r["id"] for r in fetch_candidates(
                RecallIndex(), conn, ["kumquat"], project=None, agent=None, now_iso=NOW,
                limit=50))
        finally:
            conn.close()

    build([f"M-old{i}" for i in range(10)])
    assert len(found()) == 10
    build(["M-new1", "M-new2"])
    assert found() == ["M-new1", "M-new2"]


def test_concurrent_readers_never_see_a_record_after_its_retraction(
    conn: sqlite3.Connection, corpus: sqlite3.Connection, db_path: Path,
) -> None:
    """Four reader threads (as in the daemon) search while the writer retracts the kafka notes
    one by one; a search that starts after a retraction is committed never returns that note,
    however the threads interleave on the shared view and its caches."""
    import threading

    retracted_at: dict[str, float] = {}
    failures: list[str] = []
    stop = threading.Event()

    def reader_loop() -> None:
        reader = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, isolation_level=None,
                                 check_same_thread=False)
        try:
            while not stop.is_set():
                started = time.monotonic()
                found = {r["id"] for r in _search(reader, ["kafka"], corpus.index)}
                for rid, when in list(retracted_at.items()):
                    if when < started and rid in found:
                        failures.append(f"{rid} returned after its retraction")
        finally:
            reader.close()

    threads = [threading.Thread(target=reader_loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        for rid in ("M-k1", "M-k2", "M-k3"):
            time.sleep(0.05)
            conn.execute("UPDATE memory_records SET status = 'retracted', "
                         "retracted_reason = 'x' WHERE id = ?", (rid,))
            retracted_at[rid] = time.monotonic()  # after the commit (autocommit connection)
        time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert not failures, failures[:3]
    assert _search(corpus, ["kafka"]) == []
