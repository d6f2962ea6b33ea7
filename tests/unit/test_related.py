"""The cutoff's relatedness: rare words a candidate shares with the first record packed."""

from __future__ import annotations

import sqlite3
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval.candidates import fetch_candidates, rare_limit
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.memory.retrieval.related import SHARED_MIN, SharedRareWords
from minionsd.storage import fts
from minionsd.text.ftsquery import STOP_WORDS
from tests.unit.test_candidates import NOW, add

# Made-up words that are their own FTS5 stems, so a capped count can find them.
RARE = ["zorblat", "quenfix", "dravkon", "plimtok", "kelvurd", "brontag"]
COMMON = "the cluster was slow after the deploy and the team looked at it"


def _corpus(conn: sqlite3.Connection, best: str, other: str, task_word: str = "ingest",
            fillers: int = 12) -> None:
    add(conn, "M-best", f"{task_word} {task_word} lag {best} {COMMON}")
    add(conn, "M-other", f"{task_word} {other} {COMMON}")
    for i in range(fillers):
        add(conn, f"M-fill{i:02d}", f"{COMMON} note {i}")


def _candidates(conn: sqlite3.Connection, terms: list[str],
                index: RecallIndex | None = None) -> dict[str, dict[str, Any]]:
    found = fetch_candidates(index or RecallIndex(), conn, terms, project=None, agent=None,
                             now_iso=NOW, limit=50)
    return {c["id"]: c for c in found}


def _related(conn: sqlite3.Connection, terms: list[str]) -> bool:
    found = _candidates(conn, terms)
    return SharedRareWords(RecallIndex(), conn, terms)(found["M-best"], found["M-other"])


def test_four_shared_rare_words_make_a_record_related_three_do_not(conn) -> None:
    assert SHARED_MIN == 4
    _corpus(conn, " ".join(RARE[:5]), " ".join(RARE[:4]))
    assert _related(conn, ["ingest", "lag"])
    conn.execute("DELETE FROM memory_records")
    _corpus(conn, " ".join(RARE[:5]), " ".join(RARE[:3]))
    # Common words shared by both (the, cluster, deploy, ...) do not count.
    assert not _related(conn, ["ingest", "lag"])


def test_fewer_shared_words_can_be_asked_for(conn) -> None:
    _corpus(conn, " ".join(RARE[:5]), RARE[0])
    found = _candidates(conn, ["ingest", "lag"])
    related = SharedRareWords(RecallIndex(), conn, ["ingest", "lag"])
    assert not related(found["M-best"], found["M-other"])  # SHARED_MIN by default
    assert related(found["M-best"], found["M-other"], 1)
    assert not related(found["M-best"], found["M-other"], 2)
    # However few are asked for, a common word is not a rare one.
    conn.execute("DELETE FROM memory_records")
    _corpus(conn, " ".join(RARE[:5]), "cluster")
    found = _candidates(conn, ["ingest", "lag"])
    related = SharedRareWords(RecallIndex(), conn, ["ingest", "lag"])
    assert not related(found["M-best"], found["M-other"], 1)
    assert not related(found["M-best"], found["M-other"], 0)


def test_a_record_adds_a_rare_word_of_the_task_no_packed_record_holds(conn) -> None:
    _corpus(conn, RARE[0], RARE[1], task_word="ingest")
    add(conn, "M-disk", f"disk {RARE[2]} {COMMON}")
    terms = ["ingest", "disk", "cluster"]
    index = RecallIndex()
    found = _candidates(conn, terms, index)
    related = SharedRareWords(index, conn, terms, list(found.values()))
    best, disk = found["M-best"], found["M-disk"]
    assert related.adds(disk, [best])  # "disk": one record holds it
    assert not related.adds(disk, [best, disk])  # now a packed one does
    # "ingest" is rare too, but the first record holds it; "cluster" is in every record.
    assert not related.adds(found["M-other"], [best])
    assert related.adds(found["M-other"], [])
    assert not related.adds({"id": "M-x"}, [])
    # A term whose df the index does not hold (here: never asked) is taken as not rare.
    assert not SharedRareWords(RecallIndex(), conn, terms).adds(disk, [best])


def test_the_tasks_own_words_do_not_count(conn) -> None:
    _corpus(conn, " ".join(RARE[:3]), " ".join(RARE[:3]), task_word="ingest sink")
    # Both hold "ingest" and "sink", rare in this memory: when the task says both, 3
    # shared words count; when it says only "sink", 4 do.
    assert not _related(conn, ["ingest", "sink"])
    assert _related(conn, ["sink"])


def test_a_word_in_more_records_than_the_rare_limit_does_not_count(conn) -> None:
    _corpus(conn, " ".join(RARE[:4]), " ".join(RARE[:4]))
    assert _related(conn, ["ingest", "lag"])
    for i in range(rare_limit(20) - 1):  # now in limit + 1 records
        add(conn, f"M-more{i}", f"{RARE[0]} {COMMON}")
    assert not _related(conn, ["ingest", "lag"])


def test_a_record_without_words_is_not_related(conn) -> None:
    _corpus(conn, " ".join(RARE), " ".join(RARE))
    found = _candidates(conn, ["ingest", "lag"])
    related = SharedRareWords(RecallIndex(), conn, ["ingest", "lag"])
    assert not related(found["M-best"], {"id": "M-x"})
    assert not related({"id": "M-x", "words": None}, found["M-other"])


def _reference(conn: sqlite3.Connection, best: dict[str, Any], other: dict[str, Any],
               terms: list[str], least: int = SHARED_MIN) -> bool:
    """Plainly: the stems both hold, minus the task's and the stop words', that at most
    rare_limit rows hold (fts5vocab's exact count) and that are their own stems."""
    rows = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    dfs = dict(conn.execute("SELECT term, doc FROM memory_vocab"))
    task = {s for s in fts.stems(conn, [*terms, *STOP_WORDS]).values() if s}
    shared = (set(best["words"]) & set(other["words"])) - task
    own = fts.stems(conn, list(shared))
    rare = [w for w in shared if own.get(w) == w and 0 < dfs.get(w, 0) <= rare_limit(rows)]
    return len(rare) >= least


def _reference_adds(conn: sqlite3.Connection, record: dict[str, Any],
                    packed: list[Any], terms: list[str]) -> bool:
    """Plainly: a task term's stem the record holds and no packed record does, that at most
    rare_limit rows hold (fts5vocab's exact count)."""
    rows = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    dfs = dict(conn.execute("SELECT term, doc FROM memory_vocab"))
    stems = {s for s in fts.stems(conn, terms).values() if s}
    return any(s in record["words"] and not any(s in held["words"] for held in packed)
               and 0 < dfs.get(s, 0) <= rare_limit(rows) for s in stems)


WORDS = [*RARE, "cluster", "deploy", "ingest", "lag", "tokens", "retries", "queue", "the",
         "this", "was"]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=2,
                max_size=14),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_relatedness_agrees_with_a_plain_count(conn, bodies: list[list[str]],
                                               terms: list[str]) -> None:
    conn.execute("DELETE FROM memory_records")
    for i, words in enumerate(bodies):
        add(conn, f"M-{i:02d}", " ".join(words))
    # The index that found the candidates holds the dfs of the task's terms, which spare
    # their counts; the second object reads what the first had the index remember.
    index = RecallIndex()
    found = list(_candidates(conn, terms, index).values())
    if len(found) < 2:
        return
    # Given the candidates (as retrieval does: a word more of them hold is not counted) or
    # not, the answer is the plain one.
    with_pool = SharedRareWords(index, conn, terms, found)
    alone = SharedRareWords(index, conn, terms)
    fresh = SharedRareWords(RecallIndex(), conn, terms)
    for other in found[1:]:
        expected = _reference(conn, found[0], other, terms)
        assert with_pool(found[0], other) == expected
        assert alone(found[0], other) == expected
        assert fresh(found[0], other) == expected
        assert with_pool.adds(other, [found[0]]) == _reference_adds(conn, other, [found[0]],
                                                                       terms)
        # Asked for fewer (or more) words in common, after the answers above are remembered.
        for least in (1, 2, 5):
            expected = _reference(conn, found[0], other, terms, least)
            assert with_pool(found[0], other, least) == expected
            assert fresh(found[0], other, least) == expected


def test_the_index_remembers_which_words_are_rare_for_the_same_limit(conn) -> None:
    _corpus(conn, " ".join(RARE[:4]), " ".join(RARE[:4]))
    index = RecallIndex()
    found = _candidates(conn, ["ingest", "lag"])
    assert SharedRareWords(index, conn, ["ingest", "lag"])(found["M-best"], found["M-other"])
    limit = rare_limit(14)
    assert index.rarity([*RARE[:4], "cluster"], limit) == dict.fromkeys(RARE[:4], True) | {
        "cluster": False}
    assert index.rarity(RARE[:4], limit + 1) == {}  # another limit: not known
    index.forget()
    assert index.rarity(RARE[:4], limit) == {}


def test_a_task_terms_cached_df_is_used_for_its_rarity(conn) -> None:
    _corpus(conn, " ".join(RARE[:4]), " ".join(RARE[:4]))
    index = RecallIndex()
    # Asking for zorblat as a task's term has the index hold its df (2: rare).
    _candidates(conn, [RARE[0]], index)
    assert index.known_df(RARE[0], 14) == 2
    assert index.known_df(RARE[1], 14) is None
    found = _candidates(conn, ["ingest", "lag"], index)
    assert SharedRareWords(index, conn, ["ingest", "lag"])(found["M-best"], found["M-other"])
    assert index.rarity(RARE[:4], rare_limit(14)) == dict.fromkeys(RARE[:4], True)


def test_the_index_finds_the_stop_words_stems_once(conn) -> None:
    index = RecallIndex()
    stems = index.stop_stems(conn)
    assert stems == {s for s in fts.stems(conn, list(STOP_WORDS)).values() if s}
    assert index.stop_stems(conn) is stems
    index.forget()  # a stem is a function of the word: nothing to drop
    assert index.stop_stems(conn) is stems


def test_stop_words_do_not_count_however_rare(conn) -> None:
    # In a small memory "this", "was", "they" and "only" are in two records: rare, but
    # they say nothing of a topic.
    _corpus(conn, f"{RARE[0]} this was they only", f"{RARE[0]} this was they only")
    assert not _related(conn, ["ingest", "lag"])
