"""The candidate search plan: which query terms select candidates, bounded by ROW_BUDGET hits.

Why not one OR query over all terms: bm25 must score every row that matches any term, and task
text always holds words like *test*, *cache* or *retry* that occur in most notes, so that query
scores most of the table (a third of a second at 100k notes). Here the FTS5 work is bounded by
``ROW_BUDGET`` hits whatever the terms are:

1. **Document frequencies.** One statement counts each term's matching rows, stopping at
   ``RARE_BUDGET + 1``: a rare term's df is exact, a common term costs no more than the cap.
   For a term that reaches the cap the df is estimated from the newest ``SAMPLE_ROWS`` rows.
   (An exact count of a common term, from fts5vocab, reads its whole doclist: measured, that
   made an uncached retrieval cost 3.8 times as much at 10,000 records, growing with the
   table.) The RecallIndex caches the results.
2. **Pool.** The rarest terms whose hits add up to at most ``RARE_BUDGET`` select candidates
   from every row. Up to ``WIDE_TERMS`` further terms that occur in at most ``COMMON_SHARE`` of
   the rows select candidates too, but only from the newest rows when their hits would not fit
   the rest of the budget (a rowid window). More common terms never select candidates. Each hit
   adds its term's idf to the row; the ``POOL_FACTOR * limit`` rows with the highest sums (then
   the newest) that pass the recall filters form the pool (:mod:`.scoring` then scores it
   with all terms).

So a term too common to select candidates still counts in the score, and the cost does not grow
with the table: what grows is only the chance that, for a topic with thousands of notes, the
pool holds its newest notes rather than the very best-scoring old ones.
"""

from __future__ import annotations

import math
import sqlite3
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minionsd.storage import fts
from minionsd.storage.fts import IndexStats

if TYPE_CHECKING:
    from minionsd.memory.retrieval.index import RecallIndex

# Tuned on 100k synthetic notes (see docs/retrieval.md); larger values buy little recall.
ROW_BUDGET = 800  # FTS5 hits the candidate selection may read, in total
RARE_BUDGET = ROW_BUDGET // 2  # of which the rarest terms, searched in every row
WIDE_TERMS = 6  # further terms that select candidates, in recent rows if need be
COMMON_SHARE = 0.10  # a term in more rows than this share never selects candidates
POOL_FACTOR = 1.5  # rows scored with all terms, per returned candidate
SAMPLE_ROWS = 3000  # newest rows used to estimate a common term's df


@dataclass(frozen=True)
class Plan:
    """Which terms select candidates (see the module docstring) and which are scored."""

    rare: tuple[str, ...]  # searched in every row
    wide: tuple[str, ...]  # searched in rows with rowid > wide_min_rowid
    wide_min_rowid: int
    scored: tuple[str, ...]  # every term that occurs in the index


def count_dfs(conn: sqlite3.Connection, terms: Sequence[str], stats: IndexStats,
              rows_between: Callable[[int, int], int]) -> dict[str, int]:
    """df of each term: exact up to RARE_BUDGET, above it estimated from the newest
    SAMPLE_ROWS rows (`rows_between(after, upto)` says how many records have a seq in that
    range: the record view's count)."""
    cap = RARE_BUDGET + 1
    # One statement, one capped count per term: a common term costs no more than the cap.
    dfs = dict(zip(terms, fts.capped_counts(conn, terms, cap), strict=True))
    common = [t for t in terms if dfs[t] >= cap]
    if common:
        low = max(0, stats.max_rowid - SAMPLE_ROWS)
        window = rows_between(low, stats.max_rowid)
        samples = fts.capped_counts(conn, common, None, after=low)
        for term, hits in zip(common, samples, strict=True):
            estimate = round(hits * stats.rows / window) if window else cap
            dfs[term] = min(max(estimate, cap), max(stats.rows, cap))
    return dfs


def plan_query(terms: Sequence[str], df: dict[str, int], stats: IndexStats) -> Plan | None:
    """Choose the candidate searches; None when no term occurs in the index."""
    present = [t for t in dict.fromkeys(terms) if df.get(t, 0) > 0]
    if not present:
        return None
    order = {t: i for i, t in enumerate(present)}
    ranked = sorted(present, key=lambda t: (df[t], order[t]))
    rare: list[str] = []
    used = 0
    for term in ranked:
        if used + df[term] > RARE_BUDGET:
            break
        rare.append(term)
        used += df[term]
    wide = [t for t in ranked[len(rare) :] if df[t] <= COMMON_SHARE * stats.rows][:WIDE_TERMS]
    if not rare and not wide:
        wide = ranked[:2]  # every term is common: look for the two rarest in recent rows
    wide_df = sum(df[t] for t in wide)
    room = ROW_BUDGET - used
    min_rowid = 0
    if wide_df > room:
        min_rowid = max(0, stats.max_rowid - math.ceil(room * stats.rows / wide_df))
    return Plan(tuple(rare), tuple(wide), min_rowid, tuple(present))


def hit_lists(conn: sqlite3.Connection, index: RecallIndex, token: int,
              groups: Sequence[tuple[str, int]]) -> dict[tuple[str, int], array[int]]:
    """fts.hit_lists(conn, groups, ROW_BUDGET) (each group's first ROW_BUDGET hits above its
    rowid, ascending), built on the lists the view keeps where it can.

    A kept list of a term holds every hit above its own rowid up to a known one: its last hit
    when it is full (it was cut there), else the largest seq when it was read (no row above
    existed then), or all of them when read in this very snapshot and not full. A group takes
    the kept hits above its own rowid and, if that is short of ROW_BUDGET and the list does not
    hold them all, reads only the hits above the known rowid."""
    budget = ROW_BUDGET
    kept = index.view.hit_entries(groups, token)
    out: dict[tuple[str, int], array[int]] = {}
    more: list[tuple[tuple[str, int], array[int], int]] = []  # (group, kept part, above)
    missing: list[tuple[str, int]] = []
    for group in groups:
        after = group[1]
        entry = kept.get(group)
        if entry is None:
            missing.append(group)
            continue
        part = entry.hits[bisect_right(entry.hits, after):]
        full = len(entry.hits) >= budget
        if len(part) >= budget or (entry.current and not full):
            out[group] = part
            continue
        known = entry.hits[-1] if full else entry.largest
        more.append((group, part, max(known, after)))
    if more:
        read = fts.hit_lists(conn, [(group[0], above) for group, _part, above in more],
                             [budget - len(part) for _group, part, _above in more])
        for group, part, above in more:
            out[group] = part + read[(group[0], above)]
    if missing:
        out |= fts.hit_lists(conn, missing, budget)
    index.view.remember_hits(out, token)
    return out


def pool(conn: sqlite3.Connection, index: RecallIndex, token: int, plan: Plan,
         idf: dict[str, float], size: int, scopes: list[str], now_iso: str) -> list[int]:
    """The seqs of the `size` recallable rows the selecting terms point at most strongly.

    Every hit of a selecting term adds that term's idf to its row; rows are taken by that sum,
    then newest first, and the recall filters are checked in the in-memory view in that order
    until `size` rows pass. Hit lists come from FTS5, or from the view's cache while no record
    has changed.
    """
    view = index.view
    groups = [(t, 0) for t in plan.rare] + [(t, plan.wide_min_rowid) for t in plan.wide]
    hits = hit_lists(conn, index, token, groups)
    weights: dict[int, float] = {}
    for group in groups:
        # Dictionary and set operations, not a Python step per hit: most hits are new rows.
        added = dict.fromkeys(hits[group], idf[group[0]])
        for seq in added.keys() & weights.keys():
            added[seq] += weights[seq]
        weights.update(added)
    # (weight, seq) pairs, largest first: by weight, then newest.
    ranked = sorted(zip(weights.values(), weights.keys(), strict=True), reverse=True)
    return view.recallable((seq for _w, seq in ranked), scopes, now_iso, size)
