"""Candidate search: filters, safety, and agreement with the one-OR-query reference.

Run as a script for the large benchmark (not part of the test suite):

    .venv/bin/python -m tests.unit.test_candidates --rows 100000 --db /tmp/bench.sqlite
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import math
import random
import sqlite3
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval import planner, scoring
from minionsd.memory.retrieval.candidates import (
    RARE_DF,
    fetch_candidates,
    fetch_candidates_naive,
    rare_limit,
)
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.memory.retrieval.pack import dedupe, pack
from minionsd.memory.retrieval.query import task_files, task_terms
from minionsd.memory.retrieval.rank import rank
from minionsd.storage import fts
from minionsd.text.fence import fence
from minionsd.text.ftsquery import index_aux_text, search_terms

NOW = "2026-06-01T00:00:00.000Z"

# --- a deterministic corpus of engineering-like notes ------------------------------------------

_COMMON_TEXT = """test cache retry py error config build run fail service request response client
server api data file update change code function method class module value check call return
use add issue bug time timeout log debug handler worker job queue event user session token auth
database db query index table migration schema deploy release version package dependency import
script ci pipeline branch merge review lint type async thread lock memory process state status
flag option default setting env local remote network connection http json yaml url endpoint
route model view component store key id name list map set get new null none true false empty
missing wrong slow fast large small first last next works broken flaky retries cached tests
tested errors calls returns checks builds jobs tokens failed failing failure"""
COMMON = _COMMON_TEXT.split()
_FILLER_TEXT = """the a an of to in on for with and or but when if is are was were be been it this
that we they so because after before then also not no only just into from by as at"""
FILLER = _FILLER_TEXT.split()
_SYLLABLE_TEXT = """ba ko ri tan vel mor qua drix zen lo pi stra ven ul ox ter nim fa gor lex sy thu
mip cor dal ew fin gra hul jor kez plo wam yid sna"""
SYLLABLES = _SYLLABLE_TEXT.split()
SUFFIXES = ["Loader", "Manager", "Client", "Refresher", "Handler", "Store", "Pool", "Router"]


class _Zipf:
    def __init__(self, items: list[Any], s: float = 1.0) -> None:
        self.items = items
        self.cum = list(itertools.accumulate(1.0 / (i + 1) ** s for i in range(len(items))))

    def pick(self, rng: random.Random) -> Any:
        return self.items[bisect.bisect_left(self.cum, rng.random() * self.cum[-1])]


class Corpus:
    """Notes about topics; each topic has made-up words, a CamelCase class, a snake_case name,
    an error code and a path, mixed with common engineering words and English filler."""

    def __init__(self, rows: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.rows = rows
        self.topics = [self._topic() for _ in range(max(40, rows // 20))]
        self.topic_z = _Zipf(list(range(len(self.topics))), 0.8)
        self.common_z = _Zipf(COMMON)
        self.mid_z = _Zipf([self._word() for _ in range(8000)])

    def _word(self) -> str:
        return "".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 3)))

    def _topic(self) -> dict[str, Any]:
        w = [self._word() for _ in range(3)]
        c1, c2 = self.rng.choice(COMMON), self.rng.choice(COMMON)
        return {
            "words": w,
            "ident": w[0].capitalize() + c1.capitalize() + self.rng.choice(SUFFIXES),
            "snake": f"{w[1]}_{c2}",
            "code": f"ERR_{w[0].upper()}_{c2.upper()}",
            "path": f"src/{w[2]}/{w[1]}_{c2}.py",
        }

    def _sentence(self, topic: dict[str, Any]) -> str:
        rng, out = self.rng, []
        for _ in range(rng.randint(5, 11)):
            r = rng.random()
            if r < 0.50:
                out.append(rng.choice(FILLER))
            elif r < 0.58:
                out.append(self.common_z.pick(rng))
            elif r < 0.90:
                out.append(self.mid_z.pick(rng))
            else:
                k = rng.random()
                key = "words" if k < 0.45 else "ident" if k < 0.6 else "snake" if k < 0.75 \
                    else "code" if k < 0.87 else "path"
                out.append(rng.choice(topic[key]) if key == "words" else topic[key])
        return " ".join(out).capitalize() + "."

    def notes(self) -> Iterator[tuple[int, int, str, str, list[str]]]:
        rng = self.rng
        for i in range(self.rows):
            ti = self.topic_z.pick(rng)
            topic = self.topics[ti]
            title = " ".join([
                rng.choice(topic["words"]), self.common_z.pick(rng),
                rng.choice([topic["ident"], topic["snake"], self.mid_z.pick(rng)]),
            ])
            body = " ".join(self._sentence(topic) for _ in range(rng.randint(2, 5)))
            paths = [topic["path"]] if rng.random() < 0.3 else []
            yield i, ti, title, body, paths

    def task(self, rng: random.Random, ti: int) -> dict[str, Any]:
        topic = self.topics[ti]
        other = self.topics[self.topic_z.pick(rng)]

        def common(k: int) -> str:
            return " ".join(self.common_z.pick(rng) for _ in range(k))

        return {
            "id": f"W-{ti}",
            "title": f"Fix {topic['ident']} {common(2)} when {topic['words'][0]} {common(1)}",
            "description": f"The {topic['snake']} {common(4)} in {topic['words'][1]} is "
            f"{common(3)}. We should {common(4)} so the {common(3)} works again. Please make "
            "sure tests pass and the cache retry logic is fine.",
            "failure_context": f"{topic['code']}: {common(3)} {topic['words'][2]} timed out "
            f"after 30s in {topic['path']}",
            "files": [topic["path"], f"tests/test_{topic['snake']}.py"],
            "pr": {"title": f"{common(2)} {other['words'][0]}", "branch": f"fix/{topic['snake']}"},
        }


class IndexedConnection(sqlite3.Connection):
    """A test's connection, with a RecallIndex of its own (as the daemon has one per open
    database)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.index = RecallIndex()


def open_db(path: Path) -> IndexedConnection:
    from minionsd.storage.database import migrate

    conn = sqlite3.connect(path, isolation_level=None, factory=IndexedConnection)
    migrate(conn)
    return conn


def add(conn: sqlite3.Connection, rid: str, body: str, counts: bool = True,
        **fields: Any) -> None:
    row = {
        "type": "semantic", "scope": "global", "status": "active", "trust": "human",
        "title": "", "source": f"notes/archive/{rid}.md", "paths": [], "tags": [],
        "importance": 0.5, "confidence": 0.5, "pinned": 0, "created_at": "2026-01-01T00:00:00.000Z",
        "expires_at": None, "meta": {},
    } | fields
    conn.execute(
        """INSERT INTO memory_records (id, type, scope, status, trust, title, body, source, paths,
               tags, importance, confidence, pinned, created_at, updated_at, expires_at, meta,
               search_aux, term_counts)
           VALUES (:id, :type, :scope, :status, :trust, :title, :body, :source, :paths, :tags,
               :importance, :confidence, :pinned, :created_at, :created_at, :expires_at, :meta,
               :aux, :counts)""",
        row | {
            "id": rid, "body": body, "paths": json.dumps(row["paths"]),
            "tags": json.dumps(row["tags"]), "meta": json.dumps(row["meta"]),
            "aux": index_aux_text(row["title"], body, row["paths"], row["tags"]),
            "counts": None,
        },
    )
    # The term counts written with the record (without them: a row from an older version).
    if counts:
        aux = index_aux_text(row["title"], body, row["paths"], row["tags"])
        conn.execute("UPDATE memory_records SET term_counts = ? WHERE id = ?",
                     (fts.term_counts(conn, row["title"], body, aux), rid))


def fill(conn: sqlite3.Connection, corpus: Corpus, seed: int = 8) -> None:
    rng = random.Random(seed)
    conn.execute("BEGIN")
    for i, ti, title, body, paths in corpus.notes():
        r = rng.random()
        scope = ("global" if r < 0.5 else "project:alpha" if r < 0.8 else "project:beta"
                 if r < 0.9 else "agent:dallas")
        add(
            conn, f"M-{i:06d}", body, title=title, paths=paths, scope=scope,
            status="active" if rng.random() < 0.92 else "superseded",
            type=rng.choice(["semantic"] * 6 + ["episodic"] * 3 + ["procedural"]),
            trust=rng.choice(["human", "system", "agent", "agent", "external"]),
            meta={"topic": ti},
        )
        if i % 5000 == 4999:
            conn.execute("COMMIT")
            conn.execute("BEGIN")
    conn.execute("COMMIT")


def search(conn: sqlite3.Connection, terms: list[str], index: RecallIndex | None = None,
           **kw: Any) -> list[dict[str, Any]]:
    args = {"project": "alpha", "agent": "dallas", "now_iso": NOW, "limit": 50} | kw
    return fetch_candidates(index or conn.index, conn, terms, **args)


def fts5_scored(conn: sqlite3.Connection, terms: list[str], index: RecallIndex | None = None,
                **kw: Any) -> list[dict[str, Any]]:
    """search with FTS5's length normalisation, so its scores are comparable to naive's."""
    return search(conn, terms, index, length_b=fts.BM25_B, **kw)


def naive(conn: sqlite3.Connection, terms: list[str], **kw: Any) -> list[dict[str, Any]]:
    args = {"project": "alpha", "agent": "dallas", "now_iso": NOW, "limit": 50} | kw
    return fetch_candidates_naive(conn, terms, **args)


# --- tests ---------------------------------------------------------------------------------------


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    c = open_db(tmp_path / "state.db")
    yield c
    c.close()


def ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in records]


def test_scope_filter(conn: sqlite3.Connection) -> None:
    for rid, scope in [("M-g", "global"), ("M-pa", "project:alpha"), ("M-pb", "project:beta"),
                       ("M-ad", "agent:dallas"), ("M-ar", "agent:ripley")]:
        add(conn, rid, "flaky websocket reconnect", scope=scope)
    terms = ["websocket"]
    assert sorted(ids(search(conn, terms))) == ["M-ad", "M-g", "M-pa"]
    assert sorted(ids(search(conn, terms, project=None, agent=None))) == ["M-g"]
    assert sorted(ids(search(conn, terms, project="beta", agent="ripley"))) == [
        "M-ar", "M-g", "M-pb",
    ]


def test_status_expiry_and_procedural_filters(conn: sqlite3.Connection) -> None:
    add(conn, "M-active", "kafka consumer lag")
    add(conn, "M-super", "kafka consumer lag", status="superseded")
    add(conn, "M-retr", "kafka consumer lag", status="retracted")
    add(conn, "M-exp", "kafka consumer lag", status="expired")
    add(conn, "M-past", "kafka consumer lag", expires_at="2026-05-31T23:59:59.999Z")
    add(conn, "M-now", "kafka consumer lag", expires_at=NOW)
    add(conn, "M-future", "kafka consumer lag", expires_at="2026-06-01T00:00:00.001Z")
    for trust in ("human", "system", "agent", "external"):
        add(conn, f"M-proc-{trust}", "kafka consumer lag", type="procedural", trust=trust)
        add(conn, f"M-epi-{trust}", "kafka consumer lag", type="episodic", trust=trust)
    found = set(ids(search(conn, ["kafka"])))
    assert found == {
        "M-active", "M-future", "M-proc-human", "M-proc-system",
        "M-epi-human", "M-epi-system", "M-epi-agent", "M-epi-external",
    }


def test_record_shape(conn: sqlite3.Connection) -> None:
    add(conn, "M-1", "The TokenRefresher retries forever", title="Token refresh",
        paths=["src/auth/token.py"], tags=["auth"], pinned=1, meta={"k": 1})
    (rec,) = search(conn, ["tokenrefresher", "retry", "absentword"])
    assert set(rec) >= {
        "id", "type", "scope", "status", "trust", "title", "body", "source", "author",
        "project", "agent", "task", "pr", "paths", "tags", "importance", "confidence", "pinned",
        "created_at", "updated_at", "expires_at", "superseded_by", "retracted_reason", "meta",
        "bm25", "matched_terms",
    }
    assert rec["paths"] == ["src/auth/token.py"] and rec["tags"] == ["auth"]
    assert rec["meta"] == {"k": 1} and rec["pinned"] is True
    assert rec["bm25"] < 0
    assert rec["matched_terms"] == 2  # "retry" meets "retries" through the porter stem


def test_works_on_a_read_only_row_factory_connection(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    add(conn, "M-1", "graphql schema stitching")
    ro = sqlite3.connect(f"file:{tmp_path / 'state.db'}?mode=ro", uri=True)
    ro.row_factory = sqlite3.Row
    try:
        (rec,) = search(ro, ["graphql"], index=conn.index)
        assert rec["id"] == "M-1" and isinstance(rec, dict)
    finally:
        ro.close()


def test_nothing_to_find(conn: sqlite3.Connection) -> None:
    assert search(conn, ["anything"]) == []
    add(conn, "M-1", "some body")
    assert search(conn, []) == []
    assert search(conn, ["absent"]) == []
    assert search(conn, ["body"], limit=0) == []


def test_rare_terms_are_the_naming_terms_few_records_hold(conn: sqlite3.Connection) -> None:
    """A naming term held by at most RARE_DF records is reported with each record holding it;
    one held by more (v2 here), or a term that is not a naming term, is not."""
    add(conn, "M-1", "ERR_QUOTA means the ledger refused; deploy v2 first")
    add(conn, "M-2", "errquota again after the v2 deploy")
    for i in range(RARE_DF + 1):
        add(conn, f"M-v{i}", f"deploy v2 of service {i}")
    terms = ["err", "quota", "errquota", "deploy", "v2"]
    found = {r["id"]: r["rare_terms"] for r in search(conn, terms, naming={"errquota", "v2"})}
    assert found["M-1"] == found["M-2"] == ("errquota",)
    assert all(found[f"M-v{i}"] == () for i in range(RARE_DF + 1))
    assert all(r["rare_terms"] == () for r in search(conn, terms))  # no naming terms given
    assert rare_limit(100) == RARE_DF and rare_limit(100_000) == 100


def test_new_record_found_at_once(conn: sqlite3.Connection) -> None:
    add(conn, "M-1", "unrelated")
    assert search(conn, ["zanzibar"]) == []
    add(conn, "M-2", "zanzibar deploy notes")
    assert ids(search(conn, ["zanzibar"])) == ["M-2"]
    add(conn, "M-3", "zanzibar again")  # the term's df (1) is cached now; it still searches
    assert sorted(ids(search(conn, ["zanzibar"]))) == ["M-2", "M-3"]


def test_rows_without_stored_counts_score_like_the_others(conn: IndexedConnection) -> None:
    """A row from before stored counts is counted from its text by FTS5: the same scores (all
    rows are four words long, so avgdl does not depend on which rows are counted)."""
    bodies = ["kafka consumer lag spike", "kafka kafka broker down", "consumer group lag alert",
              "naïve café kafka lag"]
    for i, body in enumerate(bodies):
        add(conn, f"M-{i}", body)
    before = {r["id"]: r["bm25"] for r in fts5_scored(conn, ["kafka", "lag", "cafe"])}
    conn.execute("UPDATE memory_records SET term_counts = NULL WHERE id IN ('M-1', 'M-3')")
    after = {r["id"]: r["bm25"] for r in fts5_scored(conn, ["kafka", "lag", "cafe"],
                                                     index=RecallIndex())}
    assert after == pytest.approx(before, rel=1e-12) and len(after) == 4
    reference = {r["id"]: r["bm25"] for r in naive(conn, ["kafka", "lag", "cafe"])}
    assert after == pytest.approx(reference, rel=1e-9)


def test_a_row_whose_stored_counts_are_no_numbers_is_tokenised(
        conn: IndexedConnection) -> None:
    """A hand-edited count that is no number: the row is counted from its text by FTS5, as
    if nothing were stored (the header, and so the row's length, is left as it was)."""
    for i, body in enumerate(["kafka consumer lag spike", "kafka kafka broker down"]):
        add(conn, f"M-{i}", body)
    before = {r["id"]: r["bm25"] for r in search(conn, ["kafka", "lag"])}
    conn.execute("UPDATE memory_records SET term_counts = '2 4 1' || char(10) || "
                 "'kafka lots' || char(10) WHERE id = 'M-1'")
    after = {r["id"]: r["bm25"] for r in search(conn, ["kafka", "lag"], index=RecallIndex())}
    assert after == pytest.approx(before, rel=1e-12) and len(after) == 2


def test_retrieval_scores_with_its_own_length_normalisation(conn: IndexedConnection) -> None:
    """By default a row's score is bm25 with b = scoring.LENGTH_B, worked out here from the
    words themselves (one column, so every weight is the body's 1)."""
    bodies = ["kafka lag", "kafka consumer lag spike after the broker restart",
              "unrelated note one", "unrelated note two", "another unrelated note"]
    for i, body in enumerate(bodies):
        add(conn, f"M-{i}", body)
    lengths = [len(body.split()) for body in bodies]
    avgdl = sum(lengths) / len(lengths)

    def expected(body: str, b: float) -> float:
        total = 0.0
        for term in ("kafka", "lag"):
            df = sum(term in other.split() for other in bodies)
            idf = math.log((len(bodies) - df + 0.5) / (df + 0.5))
            f = body.split().count(term)
            norm = 1.2 * (1 - b + b * len(body.split()) / avgdl)
            total += idf * f * 2.2 / (f + norm)
        return -total

    for b in (scoring.LENGTH_B, fts.BM25_B):
        got = {r["id"]: r["bm25"] for r in search(conn, ["kafka", "lag"], length_b=b)}
        assert got == pytest.approx({"M-0": expected(bodies[0], b),
                                     "M-1": expected(bodies[1], b)}, rel=1e-9)
    default = fetch_candidates(RecallIndex(), conn, ["kafka", "lag"], project=None,
                               agent=None, now_iso=NOW, limit=5)
    assert [r["bm25"] for r in default] == pytest.approx(
        [expected(bodies[0], scoring.LENGTH_B), expected(bodies[1], scoring.LENGTH_B)])


def test_ties_break_by_id(conn: sqlite3.Connection) -> None:
    for rid in ("M-c", "M-a", "M-b"):
        add(conn, rid, "identical gizmo body")
    assert ids(search(conn, ["gizmo"])) == ["M-a", "M-b", "M-c"]


def test_unicode_rows_score_like_fts5(conn: sqlite3.Connection) -> None:
    add(conn, "M-1", "Café naïve résumé — the déjà-vu bug in crème brûlée")
    add(conn, "M-2", "cafe cafe cafe naive")
    add(conn, "M-3", "日本語 cafe")
    terms = ["cafe", "naive", "bug"]
    fast, ref = fts5_scored(conn, terms), naive(conn, terms)
    assert ids(fast) == ids(ref)
    for a, b in zip(fast, ref, strict=True):
        assert a["bm25"] == pytest.approx(b["bm25"], rel=1e-9)


ARBITRARY_TERMS = st.lists(
    st.one_of(st.text(max_size=12), st.sampled_from(['"', "a b", "NEAR(", "*", "title:x", ""])),
    max_size=8,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(), raw=ARBITRARY_TERMS)
def test_arbitrary_text_never_raises(conn: sqlite3.Connection, text: str, raw: list[str]) -> None:
    if not conn.execute("SELECT 1 FROM memory_records").fetchone():
        add(conn, "M-1", "the cache retry test", title="a \"quoted\" title")
        add(conn, "M-2", "naïve 日本語 text with NEAR and AND OR NOT")
    for terms in (search_terms(text), raw):
        for rec in search(conn, terms):
            assert rec["id"] in ("M-1", "M-2")


@pytest.fixture(scope="module")
def labelled(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[sqlite3.Connection, Corpus]]:
    corpus = Corpus(3000, seed=3)
    c = open_db(tmp_path_factory.mktemp("labelled") / "state.db")
    fill(c, corpus)
    yield c, corpus
    c.close()


def _tasks(corpus: Corpus, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [corpus.task(rng, corpus.topic_z.pick(rng)) for _ in range(n)]


def test_agrees_with_one_or_query(labelled: tuple[sqlite3.Connection, Corpus]) -> None:
    conn, corpus = labelled
    overlaps = []
    for task in _tasks(corpus, 30, seed=5):
        terms = task_terms(task)
        fast, ref = fts5_scored(conn, terms), naive(conn, terms)
        reference = {r["id"]: r["bm25"] for r in ref}
        for rec in fast:  # same score as FTS5's bm25 wherever both found the record
            if rec["id"] in reference:
                assert rec["bm25"] == pytest.approx(reference[rec["id"]], rel=1e-6)
        overlaps.append(len(set(ids(fast)[:8]) & set(ids(ref)[:8])) / 8)
    assert statistics.mean(overlaps) >= 0.9, overlaps


def test_finds_the_tasks_topic(labelled: tuple[sqlite3.Connection, Corpus]) -> None:
    conn, corpus = labelled
    precision = []
    for task in _tasks(corpus, 30, seed=6):
        topic = int(task["id"][2:])
        top = search(conn, task_terms(task))[:8]
        precision.append(sum(r["meta"]["topic"] == topic for r in top) / max(1, len(top)))
    assert statistics.mean(precision) >= 0.9, precision


def test_small_budget_stays_bounded_and_relevant(
    labelled: tuple[sqlite3.Connection, Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    conn, corpus = labelled
    monkeypatch.setattr(planner, "ROW_BUDGET", 60)
    monkeypatch.setattr(planner, "RARE_BUDGET", 30)
    stats = fts.index_stats(conn)
    index = RecallIndex()  # its own: the plan here is made with the small budget
    index.view.sync(conn)
    precision = []
    for task in _tasks(corpus, 20, seed=7):
        terms = task_terms(task)
        dfs = planner.count_dfs(conn, terms, stats, index.view.rows_between)
        plan = planner.plan_query(terms, dfs, stats)
        assert plan is not None
        assert sum(dfs[t] for t in plan.rare) <= 30
        if plan.wide_min_rowid:  # the window holds about the budget's worth of hits
            share = sum(dfs[t] for t in plan.wide) / stats.rows
            assert (stats.max_rowid - plan.wide_min_rowid) * share <= 60 + 1
        top = search(conn, terms, index=index)[:8]
        topic = int(task["id"][2:])
        precision.append(sum(r["meta"]["topic"] == topic for r in top) / max(1, len(top)))
    assert statistics.mean(precision) >= 0.7, precision


def test_common_terms_alone_still_find_something(
    labelled: tuple[sqlite3.Connection, Corpus],
) -> None:
    conn, _ = labelled
    found = search(conn, ["test", "cache", "retry"], limit=10)
    assert len(found) == 10
    assert all(r["matched_terms"] >= 1 for r in found)


def test_concurrent_searches_agree(
    labelled: tuple[sqlite3.Connection, Corpus], monkeypatch: pytest.MonkeyPatch
) -> None:
    from minionsd.memory.retrieval import index as index_mod

    conn, corpus = labelled
    path = conn.execute("PRAGMA database_list").fetchone()[2]
    tasks = _tasks(corpus, 12, seed=9)
    expected = [ids(search(conn, task_terms(t))) for t in tasks]
    monkeypatch.setattr(index_mod, "MAX_DFS", 30)  # force cache resets
    shared = RecallIndex()  # one index, as the daemon's reader threads share one
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        own = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        try:
            for i in range(offset, len(tasks), 3):
                results[i] = ids(search(own, task_terms(tasks[i]), index=shared))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert [results[i] for i in range(len(tasks))] == expected


def test_index_stats_match_the_table(labelled: tuple[sqlite3.Connection, Corpus]) -> None:
    conn, _ = labelled
    stats = fts.index_stats(conn)
    assert stats.rows == conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    assert stats.max_rowid == conn.execute("SELECT max(seq) FROM memory_records").fetchone()[0]
    assert stats.counted == conn.execute(
        "SELECT count(*) FROM memory_records WHERE term_counts IS NOT NULL").fetchone()[0]
    lengths = [fts.counts_length(text) for (text,) in conn.execute(
        "SELECT term_counts FROM memory_records WHERE term_counts IS NOT NULL")]
    assert stats.total_tokens == sum(lengths)
    assert stats.avgdl > 10


def test_stems_agree_with_fts5() -> None:
    conn = sqlite3.connect(":memory:")
    found = fts.stems(conn, ["retries", "retry", "timeouts", "Caching", "a b", "", "naïve"])
    assert found["retries"] == found["retry"] == "retri"
    assert found["timeouts"] == "timeout"
    assert found["Caching"] == "cach"
    assert found["a b"] is None and found[""] is None
    assert found["naïve"] == "naiv"


# --- the benchmark (run as a script) ------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _retrieve(
    conn: IndexedConnection, task: dict[str, Any], fetch: Any = None
) -> tuple[list[str], list[dict[str, Any]], str]:
    """The whole retrieval as the daemon runs it: terms, candidates, rank, dedupe, pack, fence."""
    terms = task_terms(task)
    if fetch is None:
        found = search(conn, terms, limit=50)
    else:
        found = fetch(conn, terms, project="alpha", agent="dallas", now_iso=NOW, limit=50)
    ranked = rank(found, task_files=task_files(task), project="alpha", agent="dallas",
                  now=datetime(2026, 6, 1, tzinfo=UTC))
    text, chosen = pack(dedupe(ranked), top_k=8, max_bytes=8192)
    return [s.id for s, _ in chosen], found, fence(text, f"memory-retrieval:item={task['id']}")


def benchmark(rows: int, db: Path, queries: int, reference: int) -> None:
    corpus = Corpus(rows, seed=7)
    if not db.exists():
        started = time.perf_counter()
        conn = open_db(db)
        fill(conn, corpus)
        conn.close()
        print(f"built {rows} rows in {time.perf_counter() - started:.0f} s")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, factory=IndexedConnection)
    tasks = _tasks(corpus, queries + 50, seed=11)
    for task in tasks[:50]:  # warm the page cache and the stem cache, as a running daemon is
        _retrieve(conn, task)
    wall, cpu, sizes = [], [], []
    for task in tasks[50:]:
        w, c = time.perf_counter(), time.process_time()
        _ids, found, _text = _retrieve(conn, task)
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        sizes.append(len(found))
    print(f"whole retrieval over {queries} tasks ({statistics.mean(sizes):.0f} candidates each):")
    for name, values in (("wall", wall), ("cpu", cpu)):
        print(f"  {name}: p50 {_percentile(values, .5):.2f} ms  p90 {_percentile(values, .9):.2f}"
              f"  p99 {_percentile(values, .99):.2f}  max {max(values):.2f}")
    ref_ms, same8, cand8, rel_fast, rel_ref = [], [], [], [], []
    for task in tasks[50 : 50 + reference]:
        topic = int(task["id"][2:])
        started = time.perf_counter()
        ref_ids, ref_found, _ = _retrieve(conn, task, fetch_candidates_naive)
        ref_ms.append((time.perf_counter() - started) * 1000)
        fast_ids, fast_found, _ = _retrieve(conn, task)
        same8.append(len(set(fast_ids) & set(ref_ids)) / max(1, len(ref_ids)))
        cand8.append(len(set(ids(fast_found)[:8]) & set(ids(ref_found)[:8])) / 8)
        topics = {r["id"]: r["meta"]["topic"] for r in fast_found + ref_found}
        rel_fast.append(sum(topics[i] == topic for i in fast_ids) / max(1, len(fast_ids)))
        rel_ref.append(sum(topics[i] == topic for i in ref_ids) / max(1, len(ref_ids)))
    print(f"one-OR reference over {reference} tasks: p50 {_percentile(ref_ms, .5):.1f} ms")
    print(f"  packed items shared with the reference: {statistics.mean(same8):.3f}"
          f" (min {min(same8):.2f}); lexical top-8 shared: {statistics.mean(cand8):.3f}")
    print(f"  packed items on the task's topic: fast {statistics.mean(rel_fast):.3f},"
          f" reference {statistics.mean(rel_ref):.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", type=Path, required=True, help="built on first use")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--reference", type=int, default=30)
    args = parser.parse_args()
    benchmark(args.rows, args.db, args.queries, args.reference)
    sys.exit(0)


def test_a_huge_token_is_counted_and_stemmed_without_decode_errors(
    conn: IndexedConnection,
) -> None:
    """FTS5 cuts a token at a byte limit, which can split a character: term counts, stems and
    retrieval still work, and the row is found by its other words."""
    word = "字" * 12_000
    add(conn, "M-1", f"{word} kafka lag")
    counts = fts.term_counts(conn, "", f"{word} kafka lag", "")
    assert fts.counts_length(counts) == 3
    assert fts.stems(conn, [word, "kafka"])["kafka"] == "kafka"
    assert ids(search(conn, [word, "kafka"])) == ["M-1"]


def test_tokenising_leaves_the_transaction_and_the_scratch_tables_as_they_were(
        conn: IndexedConnection) -> None:
    """term_counts and stems inside a writer's transaction: they open no savepoint (one would
    make every FTS5 table of the connection write out its pending changes, record after
    record), leave nothing in their scratch tables, and a rollback of the transaction takes
    back only the caller's own writes."""
    add(conn, "M-1", "kafka consumer lag")
    conn.execute("BEGIN IMMEDIATE")
    add_in_transaction = conn.execute(
        "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
        "VALUES ('M-2', 'semantic', 'global', 'human', 'broker down', '2026-01-01', "
        "'2026-01-01')")
    assert add_in_transaction.rowcount == 1
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    assert fts.term_counts(conn, "Retry", "retry the cache", "").startswith("2 4 1\n")
    assert fts.stems(conn, ["retries", "naïve", "x-y"]) == {"retries": "retri",
                                                            "naïve": "naiv", "x-y": None}
    conn.set_trace_callback(None)
    assert statements and not [s for s in statements
                               if s.lstrip().upper().startswith(("SAVEPOINT", "ROLLBACK",
                                                                 "RELEASE"))]
    assert conn.in_transaction
    for table in ("minions_counts", "minions_words"):
        assert conn.execute(f"SELECT count(*) FROM temp.{table}").fetchone()[0] == 0
    conn.execute("ROLLBACK")
    assert [r[0] for r in conn.execute("SELECT id FROM memory_records")] == ["M-1"]
    assert fts.term_counts(conn, "", "kafka", "") == "2 1 1\nkafka 1\n"


def test_term_counts_weigh_columns_like_bm25(conn: IndexedConnection) -> None:
    counts = fts.term_counts(conn, "Retry retries", "retry the cache", "cache")
    assert counts.splitlines()[0] == "2 6 1"
    assert scoring.parse_counts(counts) == {"retri": 9.0, "the": 1.0, "cach": 3.0}


_ABSENT_STEMS = st.text("qxz", min_size=2, max_size=5)  # no word of the corpus has these


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(),
       title=st.lists(st.sampled_from(COMMON), max_size=4).map(" ".join),
       body=st.lists(st.sampled_from(COMMON + FILLER), min_size=8, max_size=60).map(" ".join),
       aux=st.lists(st.sampled_from(COMMON), max_size=6).map(" ".join))
def test_stored_counts_read_like_tokenising_the_row(data: st.DataObject, title: str, body: str,
                                                    aux: str) -> None:
    """Every query gets from a row's stored counts what counting the row's words gives: the
    stems of the query the row holds, with their weighted counts, in query order (the first
    row is parsed with the index's shared tables, as retrieval parses it)."""
    conn = sqlite3.connect(":memory:")
    entry = scoring.parse_stored("M-1", fts.term_counts(conn, title, body, aux), RecallIndex())
    assert entry is not None
    words = sorted(set((title + " " + body + " " + aux).split()))
    stem_of = fts.stems(conn, words)
    # Counted independently: each column's words, stemmed, weighted like bm25.
    weighted: dict[str, float] = {}
    for text, weight in zip((title, body, aux), fts.BM25_WEIGHTS, strict=True):
        for word in text.split():
            weighted[stem_of[word]] = weighted.get(stem_of[word], 0.0) + weight
    own = sorted({stem for stem in stem_of.values() if stem})
    # Queries of the row's own stems (in a drawn order, so each brings new ones) and stems it
    # lacks; asked twice over.
    order = data.draw(st.permutations(own))
    size = max(1, len(order) // 6)
    queries = [tuple(sorted({*order[i:i + size], data.draw(_ABSENT_STEMS)}))
               for i in range(0, len(order), size)]
    for key in queries + queries:
        expected = {stem: weighted[stem] for stem in key if stem in weighted}
        got = entry.weights(key)
        assert got == expected
        assert list(got) == list(expected)


def test_counts_not_two_words_a_line_are_not_used() -> None:
    """A hand-edited row whose lines are not two words each, or whose count is no number, is
    not read (retrieval then counts the row from its text, see the test above)."""
    for stored in ("2 9 1\nalpha 2\nbeta 3 extra\ngamma 4\n",
                   "2 9 1\nalpha 2\nlonely\ngamma 4\n",
                   "2 9 1\nalpha 2\nbeta three\n",
                   "2 9 1\nalpha 2\nbeta nan\n", "2 9 1\nalpha inf\n", "2 9 1\nalpha -1\n",
                   "2 9 1\nalpha 2"):
        assert scoring.parse_stored("M-1", stored) is None, stored
    entry = scoring.parse_stored("M-1", "2 9 1\nalpha 2\nbeta 3\ndelta 0\n")
    assert entry is not None
    assert entry.weights(("alpha", "beta", "delta", "gamma")) == {"alpha": 2.0, "beta": 3.0}
