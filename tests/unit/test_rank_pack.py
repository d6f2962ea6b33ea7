"""Rerank, dedupe and pack."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval.pack import (
    ADDING_SHARED,
    FOLLOW,
    LAST_FLOOR,
    RELATED_FLOOR,
    dedupe,
    pack,
    render_item,
    score_floor,
)
from minionsd.memory.retrieval.rank import Scored, rank
from minionsd.memory.retrieval.related import SHARED_MIN

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def rec(rid: str, bm25: float = -10.0, **fields: Any) -> dict[str, Any]:
    return {
        "id": rid, "type": "semantic", "scope": "global", "trust": "external",
        "title": "", "body": f"body of {rid}", "source": f"notes/archive/{rid}.md",
        "paths": [], "importance": 0.0, "confidence": 0.0, "pinned": False,
        "created_at": "2020-01-01T00:00:00.000Z", "bm25": bm25,
    } | fields


def order(candidates: list[dict[str, Any]], **kw: Any) -> list[str]:
    args = {"task_files": [], "project": "alpha", "agent": "dallas", "now": NOW} | kw
    return [s.id for s in rank(candidates, **args)]


def test_lexical_order_and_id_ties() -> None:
    assert order([rec("M-b", -5), rec("M-a", -9), rec("M-c", -5)]) == ["M-a", "M-b", "M-c"]
    assert order([rec("M-2"), rec("M-1"), rec("M-3")]) == ["M-1", "M-2", "M-3"]
    assert order([]) == []


def test_lexical_part_is_share_of_best() -> None:
    scored = rank([rec("M-1", -8), rec("M-2", -2)], task_files=[], project=None, agent=None,
                  now=NOW)
    parts = {s.id: dict(s.parts) for s in scored}
    assert parts["M-1"]["lexical"] == 1.0
    assert parts["M-2"]["lexical"] == pytest.approx(0.25)


def test_scope_boost_agent_over_project_over_global() -> None:
    cands = [rec("M-1", scope="global"), rec("M-2", scope="project:alpha"),
             rec("M-3", scope="agent:dallas"), rec("M-4", scope="project:beta")]
    assert order(cands) == ["M-3", "M-2", "M-1", "M-4"]
    assert order(cands, project=None, agent=None) == ["M-1", "M-2", "M-3", "M-4"]


def test_trust_boost_order() -> None:
    cands = [rec(f"M-{t}", trust=t) for t in ("external", "agent", "system", "human")]
    assert order(cands) == ["M-human", "M-system", "M-agent", "M-external"]


def test_path_boost_exact_suffix_and_basename() -> None:
    files = ["src/auth/token.py", "./lib/util.ts"]
    cands = [
        rec("M-none", paths=["docs/readme.md"]),
        rec("M-name", paths=["other/token.py"]),
        rec("M-exact", paths=["src/auth/token.py"]),
        rec("M-suffix", paths=["auth/token.py"]),
        rec("M-body", body="The bug is in lib/util.ts, line 40."),
    ]
    scored = {s.id: dict(s.parts)["path"] for s in rank(
        cands, task_files=files, project=None, agent=None, now=NOW)}
    assert scored == {"M-exact": 0.2, "M-suffix": 0.2, "M-body": 0.2, "M-name": 0.1,
                      "M-none": 0.0}


def test_recency_importance_confidence_pinned() -> None:
    base = rec("M-old")
    assert order([base, rec("M-new", created_at="2026-05-31T00:00:00.000Z")])[0] == "M-new"
    assert order([base, rec("M-imp", importance=1.0)])[0] == "M-imp"
    assert order([base, rec("M-conf", confidence=0.9)])[0] == "M-conf"
    assert order([base, rec("M-pin", pinned=True)])[0] == "M-pin"
    parts = dict(rank([rec("M-x", created_at="2026-04-02T00:00:00.000Z")], task_files=[],
                      project=None, agent=None, now=NOW)[0].parts)
    assert parts["recency"] == pytest.approx(0.08 * 0.5)  # 60 days old: one half-life


def test_boosts_cannot_beat_a_much_stronger_lexical_match() -> None:
    strong = rec("M-strong", -20.0)
    weak = rec("M-weak", -5.0, scope="agent:dallas", trust="human", paths=["src/a.py"],
               importance=1.0, confidence=1.0, pinned=True, created_at="2026-06-01T00:00:00Z",
               matched_terms=5)
    assert order([weak, strong | {"matched_terms": 5}], task_files=["src/a.py"]) == [
        "M-strong", "M-weak",
    ]


def test_bad_values_are_tolerated() -> None:
    cands = [rec("M-1", bm25=None, created_at="not a date", importance="high",
                 confidence=float("nan"), paths="src/a.py", trust=None, scope=None, body=None),
             rec("M-2", created_at="2026-07-01T00:00:00")]  # future and naive
    assert sorted(order(cands)) == ["M-1", "M-2"]


def test_deterministic() -> None:
    cands = [rec(f"M-{i}", -float(i % 5), matched_terms=i % 3) for i in range(30)]
    first = rank(cands, task_files=["x.py"], project="p", agent="a", now=NOW)
    again = rank(list(reversed(cands)), task_files=["x.py"], project="p", agent="a", now=NOW)
    assert [(s.id, s.score) for s in first] == [(s.id, s.score) for s in again]


def test_path_written_in_body() -> None:
    files = ["src/auth/token.py"]
    cases = {
        "M-1": "Fixed in src/auth/token.py.",
        "M-2": "see (auth/token.py) for details",
        "M-3": "token.py is generated",
        "M-4": "mytoken.py and xsrc/auth/token.pyc are different files",
        "M-5": "nothing here",
    }
    cands = [rec(rid, body=body) for rid, body in cases.items()]
    got = {s.id: dict(s.parts)["path"] for s in rank(cands, task_files=files, project=None,
                                                     agent=None, now=NOW)}
    assert got == {"M-1": 0.2, "M-2": 0.2, "M-3": 0.1, "M-4": 0.0, "M-5": 0.0}


def S(rid: str, score: float, body: str, **fields: Any) -> Scored:
    return Scored(score, rec(rid, body=body, **fields))


def test_dedupe_exact_and_near() -> None:
    long_body = " ".join(f"word{i}" for i in range(60))
    items = [
        S("M-1", 0.5, "Retry the  Upload\n"),
        S("M-2", 0.9, "retry the upload"),  # same after case and whitespace folding
        S("M-3", 0.7, long_body),
        S("M-4", 0.8, long_body + " extra"),  # near duplicate of M-3
        S("M-5", 0.1, "something else entirely"),
    ]
    assert [s.id for s in dedupe(items)] == ["M-2", "M-4", "M-5"]


def test_dedupe_catches_copies_that_differ_in_punctuation_markup_or_a_remark() -> None:
    body = ("Celery worker export-2 was SIGKILLed by the kernel OOM killer while building CSV "
            "exports: export_invoices() loads the whole queryset into a list. Fixed by "
            "iterating with .iterator(chunk_size=2000) and setting a memory limit per child.")
    copies = [
        "- Celery worker export-2 was SIGKILLed by the kernel OOM killer while building CSV "
        "exports: `export_invoices()` loads the whole queryset into a list. Fixed by iterating "
        "with `.iterator(chunk_size=2000)` and setting a memory limit per child.",  # Markdown
        body.replace(". ", ", ").lower() + "\n\nFrom the on-call notes.",  # case, remark
        body.replace("whole", "entire") + " (seen again last week)",  # a word, a remark
    ]
    for copy in copies:
        items = [S("M-1", 1.0, body), S("M-2", 0.9, copy)]
        assert [s.id for s in dedupe(items)] == ["M-1"], copy


def test_dedupe_keeps_notes_that_differ_in_substance() -> None:
    base = "Retries are capped at three per call with exponential backoff starting at 100 ms"
    items = [S("M-1", 1.0, base), S("M-2", 0.9, base.replace("three", "five")),
             S("M-3", 0.8, base + " and the whole job gives up after ten failed calls in a row")]
    assert [s.id for s in dedupe(items)] == ["M-1", "M-2", "M-3"]


def test_dedupe_keeps_different_short_bodies() -> None:
    items = [S("M-1", 1, "use retries"), S("M-2", 1, "use timeouts"), S("M-3", 1, "")]
    assert [s.id for s in dedupe(items)] == ["M-1", "M-2", "M-3"]


def test_render_item() -> None:
    text = render_item(rec("M-7", title="Token\nrefresh", body="\nLine one\nLine two\n\n",
                           scope="project:minions", trust="human",
                           created_at="2026-01-02T03:04:05.000Z"))
    assert text == (
        "[id=M-7 | type=semantic | scope=project:minions | trust=human | date=2026-01-02 | "
        "source=notes/archive/M-7.md]\nTitle: Token refresh\nLine one\nLine two"
    )
    bare = render_item({"id": "M-8", "body": "x"})
    assert bare.startswith("[id=M-8 | type=unknown | scope=unknown | trust=unknown | "
                           "date=unknown | source=unknown]")


def test_pack_respects_top_k_and_bytes_and_skips_big_items() -> None:
    items = [
        S("M-1", 5, "a" * 100),
        S("M-2", 4, "b" * 5000),  # does not fit next to M-1 in 1,000 bytes
        S("M-3", 3, "c" * 100),
        S("M-4", 2, "d" * 100),
        S("M-5", 1, "e" * 100),
    ]
    text, chosen = pack(items, top_k=3, max_bytes=1000)
    assert [s.id for s, _ in chosen] == ["M-1", "M-3", "M-4"]
    assert len(text.encode()) <= 1000
    assert len(text.encode()) == sum(n for _, n in chosen) + 2 * (len(chosen) - 1)
    assert text.split("\n\n")[0] == render_item(items[0].record)
    assert pack(items, top_k=0, max_bytes=1000) == ("", [])
    assert pack([], top_k=8, max_bytes=8192) == ("", [])
    assert pack(items, top_k=8, max_bytes=10) == ("", [])


def test_a_record_bigger_than_any_pack_is_packed_cut_with_its_id() -> None:
    """A 20 kB best match is packed last, in the room the others leave: its provenance line,
    as much as fits (cut at a line end), and how to read the rest."""
    body = "\n".join(f"line {i}: the settlement job retries with backoff" for i in range(400))
    big = S("M-big", 5, body)
    items = [big, S("M-2", 4, "a short note about retries")]
    text, chosen = pack(items, top_k=8, max_bytes=8192)
    assert [s.id for s, _ in chosen] == ["M-2", "M-big"]
    last = text.split("\n\n")[-1]
    assert last.startswith("[id=M-big | ") and "line 0: the settlement job" in last
    full = render_item(big.record)
    assert last.endswith(f"\n[cut to fit: {len(full.encode()):,} bytes in all; memory_get "
                         "M-big shows the rest]")
    assert last.splitlines()[-2].startswith("line ")  # cut at a line end
    assert len(text.encode()) == sum(n for _, n in chosen) + 2 and len(text.encode()) <= 8192
    # Alone, it is the pack; with less than CUT_MIN_BYTES left, it is left out as before.
    assert [s.id for s, _ in pack([big], top_k=8, max_bytes=8192)[1]] == ["M-big"]
    assert pack([big], top_k=8, max_bytes=900) == ("", [])
    assert [s.id for s, _ in pack(items, top_k=1, max_bytes=8192)[1]] == ["M-2"]  # top_k
    # The early stop does not skip it (`smallest` is a bound of every record's size).
    assert [s.id for s, _ in pack(iter([big]), top_k=8, max_bytes=8192,
                                   smallest=len(body))[1]] == ["M-big"]


@given(
    st.lists(st.tuples(st.floats(0, 10), st.text(max_size=3000)), max_size=20),
    st.integers(0, 10),
    st.integers(0, 3000),
)
def test_pack_invariants(entries: list[tuple[float, str]], top_k: int, max_bytes: int) -> None:
    items = [S(f"M-{i}", score, body) for i, (score, body) in enumerate(entries)]
    text, chosen = pack(dedupe(items), top_k=top_k, max_bytes=max_bytes)
    assert len(chosen) <= top_k
    assert len(text.encode("utf-8")) <= max_bytes
    sizes = sum(n for _, n in chosen) + 2 * max(0, len(chosen) - 1)
    assert len(text.encode("utf-8")) == sizes


def _brute_force_dedupe(items: list[Scored]) -> list[str]:
    def shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
        if len(words) < 3:
            return frozenset([tuple(words)])
        return frozenset(tuple(words[i : i + 3]) for i in range(len(words) - 2))

    def near(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
        small, large = min(len(a), len(b)), max(len(a), len(b))
        return small >= 0.7 * large and len(a & b) >= 0.9 * small

    kept: list[tuple[str, frozenset[tuple[str, ...]]]] = []
    out = []
    for item in sorted(items, key=lambda s: (-s.score, s.id)):
        words = re.findall(r"\w+", item.record["body"].lower())
        body, sh = " ".join(words), shingles(words)
        if any(body == b or near(sh, o) for b, o in kept):
            continue
        kept.append((body, sh))
        out.append(item.id)
    return out


@given(st.lists(st.tuples(st.integers(0, 3),
                          st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "a.", "B,",
                                                    "`c`", "\n", "- d"]), max_size=40)),
                max_size=25))
def test_dedupe_matches_brute_force(entries: list[tuple[int, list[str]]]) -> None:
    items = [S(f"M-{i:02d}", score, " ".join(words)) for i, (score, words) in enumerate(entries)]
    assert [s.id for s in dedupe(items)] == _brute_force_dedupe(items)


@given(
    st.lists(st.text(max_size=30), max_size=4),
    st.lists(st.tuples(st.text(max_size=200), st.lists(st.text(max_size=20), max_size=3)),
             max_size=6),
)
def test_rank_accepts_any_paths_and_bodies(
    files: list[str], rows: list[tuple[str, list[str]]]
) -> None:
    cands = [rec(f"M-{i}", -float(i + 1), body=body, paths=paths)
             for i, (body, paths) in enumerate(rows)]
    scored = rank(cands, task_files=[*files, "/", "İİİİ/x.py"], project=None, agent=None, now=NOW)
    assert sorted(s.id for s in scored) == sorted(c["id"] for c in cands)
    assert all(0 <= dict(s.parts)["path"] <= 0.2 for s in scored)


def test_pack_distinct_skips_near_duplicates_of_packed_items() -> None:
    words = " ".join(f"w{i}" for i in range(60))
    items = [Scored(3.0, rec("M-a", body=words)),
             Scored(2.0, rec("M-b", body=words + " extra")),  # near duplicate of M-a
             Scored(1.0, rec("M-c", body="something else entirely"))]
    _text, chosen = pack(items, top_k=8, max_bytes=100_000, distinct=True)
    assert [s.id for s, _ in chosen] == ["M-a", "M-c"]
    _text, chosen = pack(items, top_k=8, max_bytes=100_000)
    assert [s.id for s, _ in chosen] == ["M-a", "M-b", "M-c"]


def test_pack_distinct_skips_an_item_too_big_and_packs_the_next() -> None:
    words = " ".join(f"w{i}" for i in range(60))
    items = [Scored(3.0, rec("M-big", body=words + " " + "pad " * 3000)),
             Scored(2.0, rec("M-small", body=words))]
    _text, chosen = pack(items, top_k=8, max_bytes=2000, distinct=True)
    assert [s.id for s, _ in chosen] == ["M-small"]


# --- lazy ranking and packing that stops early ------------------------------------------------

_FILES = ["src/auth/token.py", "lib/cache.ts", "docs/retry.md"]
_lazy_records = st.lists(
    st.builds(
        lambda i, bm25, paths, mention, trust, importance, day: rec(
            f"M-{i:03d}", bm25, paths=paths, trust=trust, importance=importance,
            body=f"note {i} " + (f"see {mention} for details " if mention else "") + "x" * (i % 7),
            created_at=f"2026-05-{day:02d}T00:00:00.000Z"),
        st.integers(0, 40), st.floats(-20, -0.1),
        st.lists(st.sampled_from([*_FILES, "other/token.py", "zzz.py", "auth/token.py"]),
                 max_size=2),
        st.sampled_from([None, *_FILES, "x/cache.ts"]),
        st.sampled_from(["human", "system", "agent", "external"]),
        st.sampled_from([0.0, 0.5, 1.0]), st.integers(1, 28)),
    max_size=25)


@given(_lazy_records, st.lists(st.sampled_from(_FILES), max_size=2))
def test_lazy_ranking_is_the_full_ranking_in_order(records: list[dict[str, Any]],
                                                   files: list[str]) -> None:
    from minionsd.memory.retrieval.rank import rank_lazily

    full = rank(records, task_files=files, project=None, agent=None, now=NOW)
    lazy = list(rank_lazily(records, task_files=files, project=None, agent=None, now=NOW))
    assert [(s.id, s.score, s.parts) for s in lazy] == [(s.id, s.score, s.parts) for s in full]
    keys = [(-s.score, s.id) for s in full]
    assert keys == sorted(keys)
    assert all(s.score == sum(v for _, v in s.parts) for s in full)
    assert all(len(s.parts) == 11 and s.parts[4][0] == "path" for s in full)


def test_lazy_ranking_skips_path_boosts_it_is_not_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from minionsd.memory.retrieval import rank as rank_mod

    calls: list[str] = []
    real = rank_mod._path_boost
    monkeypatch.setattr(rank_mod, "_path_boost",
                        lambda record, files: calls.append(record["id"]) or real(record, files))
    records = [rec(f"M-{i:02d}", -20.0 + i * 0.5) for i in range(30)]  # M-00 is the strongest
    first = next(rank_mod.rank_lazily(records, task_files=["a/b.py"], project=None, agent=None,
                                      now=NOW))
    assert first.id == "M-00"
    assert 1 <= len(calls) < 30  # only records that could still beat M-00 were looked at


@given(_lazy_records, st.integers(200, 3000), st.integers(1, 8))
def test_pack_that_stops_early_packs_the_same(records: list[dict[str, Any]], max_bytes: int,
                                              top_k: int) -> None:
    from minionsd.memory.retrieval.pack import min_size

    ranked = rank(records, task_files=_FILES[:1], project=None, agent=None, now=NOW)
    smallest = min(map(min_size, records), default=0)
    plain = pack(ranked, top_k=top_k, max_bytes=max_bytes, distinct=True)
    early = pack(iter(ranked), top_k=top_k, max_bytes=max_bytes, distinct=True,
                 smallest=smallest)
    assert early[0] == plain[0]
    assert [(s.id, n) for s, n in early[1]] == [(s.id, n) for s, n in plain[1]]


def test_pack_stops_reading_once_nothing_can_fit() -> None:
    records = [rec(f"M-{i}", body="y" * 600) for i in range(20)]
    ranked = rank(records, task_files=[], project=None, agent=None, now=NOW)
    read: list[str] = []

    def reading() -> Any:
        for item in ranked:
            read.append(item.id)
            yield item

    _text, chosen = pack(reading(), top_k=8, max_bytes=1500, smallest=600)
    assert len(chosen) == 2 and len(read) == 2  # a third 600-byte body can never fit in 1500


def test_render_cache_keeps_equal_but_different_values_apart() -> None:
    """1, 1.0 and True are equal as cache keys; each must still render as itself."""
    texts = [render_item({"id": value, "body": "same body"}) for value in (1, 1.0, True, "1")]
    assert [t.split(" | ")[0] for t in texts] == ["[id=1", "[id=1.0", "[id=True", "[id=1"]
    record = {"id": "M-1", "title": "T", "body": "b", "source": "s"}
    assert render_item(record) == render_item(dict(record)) == render_item(record)


# --- the score cutoff (engine.memory_retrieval_min_score_ratio) ------------------------------

def test_score_floor() -> None:
    assert score_floor(2.0, 0.4) == pytest.approx(0.8)
    assert score_floor(2.0, 0.0) == 0.0
    assert score_floor(2.0, 1.5) == 2.0  # clamped to 1
    assert score_floor(2.0, -1.0) == 0.0
    assert score_floor(0.0, 0.5) == 0.0


def test_pack_leaves_out_records_below_the_cutoff() -> None:
    items = [S("M-1", 1.5, "auth 429"), S("M-2", 0.7, "token refresh timeout"),
             S("M-3", 0.45, "mypy stubs"), S("M-4", 0.3, "linker failure")]
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.4)
    assert [s.id for s, _ in chosen] == ["M-1", "M-2"]
    _text, chosen = pack(items, top_k=8, max_bytes=8192)
    assert [s.id for s, _ in chosen] == ["M-1", "M-2", "M-3", "M-4"]


def test_the_cutoff_does_not_split_a_run_of_close_scores() -> None:
    """Below the floor (0.6 here) a record close to the one packed before it (FOLLOW) is
    packed, down to LAST_FLOOR of the floor (0.42); the first clear drop ends the run."""
    assert (FOLLOW, LAST_FLOOR) == (0.8, 0.7)
    items = [S("M-1", 1.5, "a"), S("M-2", 0.7, "b"), S("M-3", 0.58, "c"), S("M-4", 0.48, "d"),
             S("M-5", 0.43, "e"), S("M-6", 0.41, "f")]
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.4)
    # M-6 follows M-5 closely but is below LAST_FLOOR of the floor.
    assert [s.id for s, _ in chosen] == ["M-1", "M-2", "M-3", "M-4", "M-5"]
    gap = [S("M-1", 1.5, "a"), S("M-2", 0.55, "b"), S("M-3", 0.54, "c")]
    _text, chosen = pack(gap, top_k=8, max_bytes=8192, min_score_ratio=0.4)
    assert [s.id for s, _ in chosen] == ["M-1"]  # a clear drop right after the best
    drop = [S("M-1", 1.5, "a"), S("M-2", 0.7, "b"), S("M-3", 0.5, "c"), S("M-4", 0.49, "d")]
    _text, chosen = pack(drop, top_k=8, max_bytes=8192, min_score_ratio=0.4)
    assert [s.id for s, _ in chosen] == ["M-1", "M-2"]  # 0.5 < 0.8 x 0.7: the run ends


def test_a_record_with_a_rare_term_of_the_task_is_not_cut() -> None:
    def R(rid: str, score: float, *rare: str) -> Scored:
        return Scored(score, rec(rid, body=f"body of {rid}", rare_terms=rare))

    items = [R("M-1", 2.0), R("M-2", 0.5), R("M-3", 0.2, "errconnreset"),
             R("M-4", 0.15, "errconnreset"), R("M-5", 0.1, "e1234", "errconnreset"),
             R("M-6", 0.05)]
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.45, rare_left=3)
    # M-4 names nothing M-3 did not; M-5 names a code no packed record holds.
    assert [s.id for s, _ in chosen] == ["M-1", "M-3", "M-5"]
    best_names_it = [R("M-1", 2.0, "errconnreset"), *items[1:]]
    _text, chosen = pack(best_names_it, top_k=8, max_bytes=8192, min_score_ratio=0.45,
                         rare_left=4)
    assert [s.id for s, _ in chosen] == ["M-1", "M-5"]


def test_the_cutoff_stops_reading_once_nothing_after_can_be_packed() -> None:
    read: list[str] = []

    def lazily(items: list[Scored]) -> Iterator[Scored]:
        for item in items:
            read.append(item.id)
            yield item

    items = [S("M-1", 2.0, "a"), S("M-2", 0.5, "b"), S("M-3", 0.4, "c"), S("M-4", 0.3, "d")]
    _text, chosen = pack(lazily(items), top_k=8, max_bytes=8192, min_score_ratio=0.45)
    assert [s.id for s, _ in chosen] == ["M-1"] and read == ["M-1", "M-2"]


def test_the_cutoff_is_relative_to_the_best_record_even_when_it_does_not_fit() -> None:
    items = [S("M-big", 2.0, "x" * 5000), S("M-1", 1.2, "fits"), S("M-2", 0.5, "below")]
    _text, chosen = pack(items, top_k=8, max_bytes=1000, min_score_ratio=0.5)
    assert [s.id for s, _ in chosen] == ["M-1"]


@given(st.lists(st.tuples(st.floats(0, 10), st.sampled_from(["", "x", "y"])), max_size=20),
       st.floats(0, 1), st.integers(1, 10))
def test_pack_cutoff_invariants(entries: list[tuple[float, str]], ratio: float,
                                top_k: int) -> None:
    items = sorted((Scored(score, rec(f"M-{i:02d}", body=f"body {i}",
                                      rare_terms=(rare,) if rare else ()))
                    for i, (score, rare) in enumerate(entries)),
                   key=lambda s: (-s.score, s.id))
    rare_left = sum(bool(s.record["rare_terms"]) for s in items)
    _text, chosen = pack(items, top_k=top_k, max_bytes=100_000, min_score_ratio=ratio,
                         rare_left=rare_left)
    packed = [s for s, _ in chosen]
    best = items[0].score if items else 0.0
    floor = score_floor(best, ratio)
    # Everything at or above the floor is packed, up to top_k, in order.
    above = [s.id for s in items if s.score >= floor][:top_k]
    assert [s.id for s in packed][:len(above)] == above
    # Below it, each packed record follows the last one packed for its score closely, or
    # holds a rare term no record packed before it holds.
    last, named = best, set()
    for item in packed:
        rare = set(item.record["rare_terms"])
        by_score = item.score >= floor or (item.score >= LAST_FLOOR * floor
                                           and item.score >= FOLLOW * last)
        assert by_score or rare - named, (item, last, named)
        if by_score:
            last = item.score
        named |= rare
    if ratio == 0:
        assert len(packed) == min(top_k, len(items))


class _RelatedTo:
    """A relatedness that calls the records `ids` related to whatever record is asked first
    (and records who asked); the task has no rare words."""

    def __init__(self, *ids: str) -> None:
        self.ids = ids
        self.asked: list[tuple[str, str]] = []

    def __call__(self, first: Mapping[str, Any], record: Mapping[str, Any],
                 least: int = SHARED_MIN) -> bool:
        self.asked.append((first["id"], record["id"]))
        return record["id"] in self.ids

    def adds(self, record: Mapping[str, Any], packed: Sequence[Mapping[str, Any]]) -> bool:
        return False


def test_a_record_related_to_the_first_packed_one_is_packed_down_to_the_related_floor() -> None:
    # floor 0.9, last floor 0.63, related floor 0.45: M-2 to M-5 are below the floor and do not
    # follow M-1.
    assert RELATED_FLOOR == 0.5
    items = [S("M-1", 2.0, "a"), S("M-2", 0.8, "b"), S("M-3", 0.7, "c"), S("M-4", 0.5, "d"),
             S("M-5", 0.44, "e")]
    related = _RelatedTo("M-3", "M-4", "M-5")
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.45,
                         related=related)
    # M-2 is not related; M-3 is; M-4 is, below the last floor; M-5 is below the related floor.
    assert [s.id for s, _ in chosen] == ["M-1", "M-3", "M-4"]
    # Only records between the related floor and the floor are asked about, against M-1.
    assert related.asked == [
        ("M-1", "M-2"), ("M-1", "M-3"), ("M-1", "M-4")]
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.45)
    assert [s.id for s, _ in chosen] == ["M-1"]  # without it, as before


def test_relatedness_is_to_the_first_record_packed_not_the_best_one() -> None:
    items = [S("M-big", 2.0, "x" * 5000), S("M-1", 1.0, "fits"), S("M-2", 0.7, "below")]
    related = _RelatedTo("M-2")
    _text, chosen = pack(items, top_k=8, max_bytes=1000, min_score_ratio=0.45,
                         related=related)
    assert [s.id for s, _ in chosen] == ["M-1", "M-2"]
    assert related.asked == [("M-1", "M-2")]


@given(st.lists(st.tuples(st.floats(0, 10), st.booleans()), max_size=20), st.floats(0, 1),
       st.integers(1, 10))
def test_pack_with_relatedness_adds_only_related_records_above_the_related_floor(
        entries: list[tuple[float, bool]], ratio: float, top_k: int) -> None:
    items = sorted((Scored(score, rec(f"M-{i:02d}", body=f"body {i}")) for i, (score, _r)
                    in enumerate(entries)), key=lambda s: (-s.score, s.id))
    marked = {f"M-{i:02d}" for i, (_s, r) in enumerate(entries) if r}
    _text, plain = pack(items, top_k=top_k, max_bytes=100_000, min_score_ratio=ratio)
    _text, chosen = pack(items, top_k=top_k, max_bytes=100_000, min_score_ratio=ratio,
                         related=_RelatedTo(*marked))
    best = items[0].score if items else 0.0
    lowest = RELATED_FLOOR * score_floor(best, ratio)
    got = [s.id for s, _ in chosen]
    # What the plain cutoff packs is packed first; the rest are related and above the
    # related floor, in order, up to top_k.
    plain_ids = [s.id for s, _ in plain]
    assert [i for i in got if i in plain_ids] == plain_ids[:len([i for i in got
                                                               if i in plain_ids])]
    extra = [s for s, _ in chosen if s.id not in plain_ids]
    assert all(s.id in marked and s.score >= lowest for s in extra)
    assert got == [s.id for s in items if s.id in got]
    if len(got) < top_k:  # nothing related above the related floor was left out
        assert plain_ids == [i for i in got if i in plain_ids]
        assert {s.id for s in items if s.id in marked and s.score >= lowest} <= set(got)


class _Sharing:
    """A relatedness under which a record shares `shares[id]` rare words with the first record
    packed and the task's rare stems are `task` (it records what it was asked)."""

    def __init__(self, shares: Mapping[str, int], task: frozenset[str]) -> None:
        self.shares = shares
        self.task = task
        self.asked: list[tuple[str, str, int]] = []

    def __call__(self, first: Mapping[str, Any], record: Mapping[str, Any],
                 least: int = SHARED_MIN) -> bool:
        self.asked.append((first["id"], record["id"], least))
        return self.shares.get(record["id"], 0) >= least

    def adds(self, record: Mapping[str, Any], packed: Sequence[Mapping[str, Any]]) -> bool:
        return any(stem in self.task and not any(stem in held["words"] for held in packed)
                   for stem in record["words"])


def test_a_record_adding_a_rare_word_of_the_task_needs_fewer_shared_words() -> None:
    # floor 0.9, last floor 0.63, related floor 0.45. M-1 holds the task's rare word
    # "retent"; M-2 adds "disk" and shares one rare word with M-1; M-3 adds "disk" too, but
    # M-2 holds it by then; M-4 adds "year" and shares none; M-5 adds nothing and shares one;
    # M-6 adds "tb" and shares three, below the last floor.
    items = [S(rid, score, rid, words={stem: 1, "common": 2})
             for rid, score, stem in (
        ("M-1", 2.0, "retent"), ("M-2", 0.8, "disk"), ("M-3", 0.75, "disk"),
        ("M-4", 0.7, "year"), ("M-5", 0.66, "retent"), ("M-6", 0.6, "tb"),
        ("M-7", 0.4, "x"))]
    task = frozenset({"retent", "disk", "year", "tb", "x"})
    related = _Sharing({"M-2": 1, "M-3": 1, "M-4": 0, "M-5": 1, "M-6": 3, "M-7": 9}, task)
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.45,
                         related=related)
    assert [s.id for s, _ in chosen] == ["M-1", "M-2"]
    # Fewer words are asked for only of a record above the last floor that adds a rare word
    # of the task; nothing below the related floor (M-7) is asked about.
    assert related.asked == [("M-1", "M-2", ADDING_SHARED), ("M-1", "M-3", SHARED_MIN),
                     ("M-1", "M-4", ADDING_SHARED), ("M-1", "M-5", SHARED_MIN),
                     ("M-1", "M-6", SHARED_MIN)]
    # With four words in common a record is packed whether or not it adds a word.
    related = _Sharing({"M-3": SHARED_MIN, "M-5": SHARED_MIN}, task)
    _text, chosen = pack(items, top_k=8, max_bytes=8192, min_score_ratio=0.45,
                         related=related)
    assert [s.id for s, _ in chosen] == ["M-1", "M-3", "M-5"]


def _reference_cutoff(items: list[Scored], ratio: float, top_k: int,
                      shares: Mapping[str, int]) -> list[str]:
    """The cutoff's rules read plainly, for records that all fit."""
    if not items:
        return []
    floor = score_floor(items[0].score, ratio)
    lowest = LAST_FLOOR * floor
    last, named, covered = items[0].score, set(), set()
    packed: list[str] = []
    for item in items:
        if len(packed) == top_k:
            break
        rare = set(item.record["rare_terms"])
        stems = set(item.record["words"]) & TASK_RARE
        by_score = item.score >= floor or (item.score >= lowest and item.score >= FOLLOW * last)
        needed = ADDING_SHARED if stems - covered and item.score >= lowest else SHARED_MIN
        related = (bool(packed) and item.score >= RELATED_FLOOR * floor
                   and shares[item.id] >= needed)
        if by_score or rare - named or related:
            packed.append(item.id)
            if by_score:
                last = item.score
            named |= rare
            covered |= stems
    return packed


TASK_RARE = frozenset({"a", "b", "c"})  # the task's rare stems; "d" is another word


@given(st.lists(st.tuples(st.floats(0, 10), st.sampled_from(["", "x"]),
                          st.sets(st.sampled_from(["a", "b", "c", "d"])), st.integers(0, 5)),
                max_size=20),
       st.floats(0, 1), st.integers(1, 10))
def test_pack_with_relatedness_agrees_with_the_plain_rules(
        entries: list[tuple[float, str, set[str], int]], ratio: float, top_k: int) -> None:
    items = sorted((Scored(score, rec(f"M-{i:02d}", body=f"body {i}",
                                      rare_terms=(rare,) if rare else (),
                                      words=dict.fromkeys(stems, 1)))
                    for i, (score, rare, stems, _n) in enumerate(entries)),
                   key=lambda s: (-s.score, s.id))
    shares = {f"M-{i:02d}": n for i, (_s, _r, _st, n) in enumerate(entries)}
    rare_left = sum(bool(s.record["rare_terms"]) for s in items)
    _text, chosen = pack(items, top_k=top_k, max_bytes=100_000, min_score_ratio=ratio,
                         rare_left=rare_left, related=_Sharing(shares, TASK_RARE))
    assert [s.id for s, _ in chosen] == _reference_cutoff(items, ratio, top_k, shares)
