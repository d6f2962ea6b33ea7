"""Candidate records for task-aware retrieval: a bounded FTS5 search, read-only.

This module owns the entry point that turns query terms into a pool of candidate records with
a lexical score, and keeps one invariant: it only returns records retrieval may show
(:mod:`.eligibility`). Terms are always quoted (:mod:`minionsd.ftsquery`), so no text can cause
an FTS5 syntax error. The search is planned (:mod:`.planner`: selective terms, bounded hits)
and scored (:mod:`.scoring`: FTS5's bm25 from stored counts); what it keeps between calls
lives in the caller's :class:`~minionsd.retrieval.index.RecallIndex`.

All reads of one call happen in one read transaction, so the view of the records, the index
statistics and the document frequencies come from one snapshot (a df can never exceed the row
count it is divided by).
"""

from __future__ import annotations

import math
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Collection
from typing import Any

from minionsd.memory.retrieval import eligibility, planner, scoring
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.storage import fts, recall, records
from minionsd.storage.fts import index_stats
from minionsd.text.ftsquery import match_expression

# A naming term (query.naming_terms: an identifier, an error code, a file name) is rare when at
# most this many records hold it, or this share of them in a large memory: a record matching
# one is the note about that thing, and the pack's cutoff does not drop it (pack.pack).
RARE_DF = 5
RARE_SHARE = 0.001


def rare_limit(rows: int) -> int:
    return max(RARE_DF, int(rows * RARE_SHARE))


def fetch_candidates(
    index: RecallIndex,
    conn: sqlite3.Connection,
    terms: list[str],
    *,
    project: str | None,
    agent: str | None,
    now_iso: str,
    limit: int,
    length_b: float = scoring.LENGTH_B,
    naming: Collection[str] = (),
    bound: bool = False,
) -> list[dict[str, Any]]:
    """Up to `limit` retrievable records matching the terms, best bm25 first; with `bound`
    (a caller bound to `project`), none of another project (an `agent:` or `global` record
    whose project column names another one; record_filters.BOUND_CONDITION in SQL).

    Each dict has the Record keys (JSON columns decoded, ``pinned`` a bool) plus ``bm25``
    (more negative is better; `length_b` is its length normalisation, fts.BM25_B for FTS5's
    own bm25), ``matched_terms`` (how many of `terms` it contains) and ``rare_terms`` (the
    terms of `naming` it contains that are rare in the memory, :func:`rare_limit`, as a
    tuple) and ``words`` (every FTS5 stem of the record, a mapping shared with the index's
    cache: do not change it; :mod:`.related` reads it). Ties are broken by id.
    """
    terms = [t for t in dict.fromkeys(terms) if t]
    if not terms or limit <= 0:
        return []
    with recall.snapshot(conn):
        return _fetch(index, conn, terms, project, agent, now_iso, limit, length_b,
                      frozenset(naming), bound)


def _fetch(index: RecallIndex, conn: sqlite3.Connection, terms: list[str],
           project: str | None, agent: str | None, now_iso: str,
           limit: int, length_b: float, naming: frozenset[str],
           bound: bool = False) -> list[dict[str, Any]]:
    view = index.view
    token = view.sync(conn)
    stats = index_stats(conn)
    if stats.rows == 0:
        return []
    dfs = index.document_frequencies(conn, terms, stats, token)
    plan = planner.plan_query(terms, dfs, stats)
    if plan is None:
        return []
    idf = {t: scoring.idf(dfs[t], stats.rows) for t in plan.scored}
    size = math.ceil(planner.POOL_FACTOR * limit)
    scopes = eligibility.scopes(project, agent)
    if bound and project is not None:
        pool = _in_project(conn, index, token, project,
                           lambda want: planner.pool(conn, index, token, plan, idf, want,
                                                     scopes, now_iso), size)
    else:
        pool = planner.pool(conn, index, token, plan, idf, size, scopes, now_iso)
    if not pool:
        return []
    # The scored terms grouped by their FTS5 stem (terms that are no single token dropped).
    stem_terms: dict[str, list[str]] = defaultdict(list)
    for term, stem in index.stems(conn, plan.scored).items():
        if stem is not None:
            stem_terms[stem].append(term)
    stem_idf = {stem: sum(idf[t] for t in group) for stem, group in stem_terms.items()}
    # stem -> the naming terms among its terms that are rare, for the stems that have any.
    most = rare_limit(stats.rows)
    rare_naming = {t for t in plan.scored if t in naming and dfs[t] <= most}
    rare = {stem: named for stem, group in stem_terms.items()
            if (named := tuple(t for t in group if t in rare_naming))} if rare_naming else {}
    counted = scoring.count_pool(conn, index, token, pool, stem_terms)
    terms_per_stem = {stem: len(group) for stem, group in stem_terms.items()}
    # (score, id, seq, row): seqs are unique, so the sort never compares two rows.
    best = sorted(
        (scoring.bm25(c.freq, stem_idf, c.length, stats.avgdl, length_b), c.id, c.seq, c)
        for c in counted)[:limit]
    rows = _full_rows(conn, index, token, [seq for _score, _id, seq, _c in best])
    out = []
    for score, _id, seq, counted_row in best:
        record = rows.get(seq)
        if record is None:  # deleted since the pool was read; skip rather than fail
            continue
        matched = sum(map(terms_per_stem.__getitem__, counted_row.freq))
        named = tuple(t for stem in counted_row.freq if stem in rare for t in rare[stem]) \
            if rare else ()
        out.append(dict(record, bm25=score, matched_terms=matched, rare_terms=named,
                        words=counted_row.words))
    return out


def _in_project(conn: sqlite3.Connection, index: RecallIndex, token: int, project: str,
                pool_of: Callable[[int], list[int]], size: int) -> list[int]:
    """The first `size` of the pool (`pool_of(n)`: its first n seqs) that are not another
    project's records. The pool's scopes are global, project:<project> and agent:<id>, so
    only the project column can name another project. Twice the size is asked for at first,
    so that the pool is rarely made twice."""
    want = 2 * size
    pool = pool_of(want)
    while True:
        projects = _projects(conn, index, token, pool)
        kept = [seq for seq in pool if projects.get(seq, (None,))[0] in (None, project)]
        if len(kept) >= size or len(pool) < want:
            return kept[:size]
        want *= 2
        pool = pool_of(want)


def _projects(conn: sqlite3.Connection, index: RecallIndex, token: int,
              seqs: list[int]) -> dict[int, tuple[str | None]]:
    """Each record's project column, as a 1-tuple (a cached None would read as missing)."""
    found, missing = index.view.cached("project", seqs)
    if missing:
        fetched = {seq: (name,) for seq, name in fts.rows_by_seq(conn, "seq, project", missing)}
        index.view.remember("project", fetched, token, _project_bytes)
        found |= fetched
    return found


def _project_bytes(value: tuple[str | None]) -> int:
    return 120 + len(value[0] or "")


_ROW_SQL = ", ".join(records.WIRE_KEYS)


def _decode(row: tuple[Any, ...]) -> dict[str, Any]:
    return records.to_wire(dict(zip(records.WIRE_KEYS, row, strict=True)))


def _full_rows(conn: sqlite3.Connection, index: RecallIndex, token: int,
               seqs: list[int]) -> dict[int, dict[str, Any]]:
    """Decoded records by seq (shared dicts from the view's cache: do not change them)."""
    found, missing = index.view.cached("rows", seqs)
    if missing:
        rows = fts.rows_by_seq(conn, f"seq, {_ROW_SQL}", missing)
        fetched = {row[0]: _decode(row[1:]) for row in rows}
        index.view.remember("rows", fetched, token, _row_bytes)
        found |= fetched
    return found


def _row_bytes(record: dict[str, Any]) -> int:
    """Roughly what a decoded row holds in memory (its text dominates)."""
    return 600 + sum(len(record[k] or "") for k in ("title", "body", "source")) + 64 * (
        len(record["paths"]) + len(record["tags"]))


def fetch_candidates_naive(
    conn: sqlite3.Connection,
    terms: list[str],
    *,
    project: str | None,
    agent: str | None,
    now_iso: str,
    limit: int,
) -> list[dict[str, Any]]:
    """Reference: one OR query over all terms, FTS5's bm25 (slow on large tables).

    Same filters and result shape as :func:`fetch_candidates`, without ``matched_terms``, and
    the same scores where that one is given FTS5's length normalisation (fts.BM25_B); tests
    and the benchmark compare the two.
    """
    expr = match_expression(list(dict.fromkeys(terms)))
    if expr is None or limit <= 0:
        return []
    out = []
    for row in recall.one_or_search(conn, expr, eligibility.rule(project, agent), now_iso,
                                    limit):
        record = _decode(row[:-1])
        record["bm25"] = row[-1]
        out.append(record)
    return out
