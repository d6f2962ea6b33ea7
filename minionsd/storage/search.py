"""memory.search: the OR of a query's terms over memory_records, best first by FTS5's
bm25(memory_fts, 4, 1, 2), then by id; `total` counts every match that passes the filters.

The page is always the one the plain query gives (rank every match, sort, cut); it is found
with less work when the query has a rare term (see :func:`_bounded_page`):

FTS5's bm25 is a sum over the query's phrases, each phrase adding
``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len / avglen))`` for a record that holds it (f: its
column-weighted occurrences), which is always below ``idf * (k1 + 1)``; idf is
``log((N - n + 0.5) / (n + 0.5))`` for a phrase held by n of the N records, and 1e-6 when that is
not positive. So a phrase held by many records adds little, and at most a known amount: a
record that holds none of the rare phrases scores at most the sum of the other phrases' bounds.

* A search of active records ranks, under the whole query, only the records that hold a rare
  phrase, in the one walk of the matches that also counts the total; when the k-th best of
  them scores above what a record without a rare phrase can reach, the page is among them.
* A search with other filters ranks the rare phrases first (partial scores, few records);
  when the k-th best partial score beats everything the other phrases could add, no record
  that holds only common phrases can reach the page, and neither can a record whose partial
  score is that far below the k-th; the few records left are ranked with the whole query.

Either way ranks and ties are exactly the plain query's (FTS5 ranks every record on the page
with the whole query). Otherwise the plain query runs.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from minionsd.clock import iso
from minionsd.errors import InvalidParams
from minionsd.storage import fts
from minionsd.storage.read_txn import snapshot
from minionsd.storage.record_fields import STATUSES, check_choice
from minionsd.storage.record_filters import field_filters
from minionsd.storage.record_wire import EFFECTIVE_STATUS, plain_snippet, to_wire
from minionsd.storage.search_reads import (
    best,
    count_matches,
    page_index,
    phrase_counts,
    ranks_and_count,
    ranks_of,
)
from minionsd.text import ftsquery

MAX_SEARCH_LIMIT = 500
WEIGHTS = ", ".join(str(w) for w in fts.BM25_WEIGHTS)
# The bounded page is tried when some phrase has at least CHEAP holders, and when it ranks
# at most 1/SAVING as many records as the plain query would.
CHEAP = 2000
SAVING = 4
# Relative slack for float rounding between FTS5's sums and the bounds computed here.
SLACK = 1e-9


def search(conn: sqlite3.Connection, params: Mapping[str, Any],
           now: datetime) -> dict[str, Any]:
    """memory.search's answer, every statement in one read transaction: the bounds, the
    page, its rows and the total all see the same records."""
    with snapshot(conn):
        return _search(conn, params, now)


def _search(conn: sqlite3.Connection, params: Mapping[str, Any],
            now: datetime) -> dict[str, Any]:
    query = params.get("query")
    if not isinstance(query, str):
        raise InvalidParams("'query' must be a string", param="query")
    limit = params.get("limit", 20)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
        raise InvalidParams(f"'limit' must be an integer from 1 to {MAX_SEARCH_LIMIT}",
                            param="limit")
    statuses = params.get("status") or ["active"]
    if isinstance(statuses, str):
        statuses = [statuses]
    if not isinstance(statuses, list):
        raise InvalidParams("'status' must be a list of statuses", param="status")
    for status in statuses:
        check_choice(status, "status", STATUSES)
    phrases = ftsquery.search_phrases(query)
    if not phrases:
        return {"records": [], "total": 0}
    where = [f"{EFFECTIVE_STATUS} IN ({_placeholders(statuses)})"]
    binds: dict[str, Any] = {"expr": " OR ".join(phrases), "now": iso(now), "limit": limit}
    binds |= {f"s{i}": s for i, s in enumerate(statuses)}
    fields, field_binds = field_filters(params, trust=False, empty_names=True)
    where += fields
    binds |= field_binds
    condition = " AND ".join(where)
    # A search of active records alone tells records apart by the (few) inactive ones instead
    # of looking every match up in memory_records.
    inactive = _inactive(conn, binds["now"]) if statuses == ["active"] and len(where) == 1 \
        else None
    ranked, total = _bounded(conn, phrases, binds, condition, limit, inactive) or (None, None)
    if ranked is None and inactive is not None:
        ranked = _rank_active(conn, binds, limit, inactive)
    # Rank first on the narrow join, then build rows and snippets for the page only: the
    # snippet and the wide row are the expensive part when thousands of records match.
    if ranked is None:
        ranked = [(row[0], row[1]) for row in conn.execute(
            f"""SELECT r.seq, memory_fts.rank
                FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
                WHERE memory_fts MATCH :expr AND memory_fts.rank MATCH 'bm25({WEIGHTS})'
                  AND {condition}
                ORDER BY memory_fts.rank, r.id LIMIT :limit""", binds)]
    if total is None and inactive is not None:  # else counted with the page's ranks
        total = _count_active(conn, binds["expr"], inactive)
    elif total is None:
        total = conn.execute(
            f"""SELECT count(*) FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
                WHERE memory_fts MATCH :expr AND {condition}""", binds).fetchone()[0]
    return {"records": _page_rows(conn, ranked, binds), "total": total}


def _page_rows(conn: sqlite3.Connection, ranked: list[tuple[int, float]],
               binds: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The wire records of the ranked (seq, rank) page, with their snippets, in page order."""
    if not ranked:
        return []
    order = {seq: (rank, i) for i, (seq, rank) in enumerate(ranked)}
    # The snippets are made in an index of the page's bodies alone (search_reads.page_index).
    with page_index(conn, list(order), binds["expr"]) as (table, expression):
        rows = conn.execute(
            f"""SELECT r.*, {EFFECTIVE_STATUS} AS eff_status,
                       snippet({table}, 0, '[', ']', '…', 16) AS snippet
                FROM temp.{table} JOIN memory_records r ON r.seq = {table}.rowid
                WHERE {table} MATCH :page""", {**binds, "page": expression}).fetchall()
    rows = [row for row in rows if row["seq"] in order]
    rows.sort(key=lambda row: order[row["seq"]][1])
    return [to_wire(row) | {"snippet": plain_snippet(row["snippet"]),
                            "rank": order[row["seq"]][0]} for row in rows]


# --- the bounded page ------------------------------------------------------------------------

def phrase_bound(rows: int, holders: int) -> float:
    """More than any one phrase can add to a record's bm25 score, for an index of at most
    `rows` records of which at least `holders` hold the phrase (FTS5's idf, clamped to 1e-6
    when not positive, times k1 + 1: the limit of f (k1 + 1) / (f + k1 D) as f grows)."""
    idf = math.log((rows - holders + 0.5) / (holders + 0.5))
    return max(idf, 1e-6) * (fts.BM25_K1 + 1.0)


def _bounded_page(conn: sqlite3.Connection, phrases: Sequence[str], binds: Mapping[str, Any],
                  condition: str, limit: int,
                  inactive: set[int] | None = None) -> list[tuple[int, float]] | None:
    """The page as (seq, rank), found from the records that hold the rarest phrases (module
    docstring), or None when it cannot be told that way within the budget. `inactive`: the
    records a search of active records leaves out (None: `condition` decides)."""
    found = _bounded(conn, phrases, binds, condition, limit, inactive)
    return None if found is None else found[0]


# (the page or None, the total or None)
Found = tuple[list[tuple[int, float]] | None, int | None]


def _bounded(conn: sqlite3.Connection, phrases: Sequence[str], binds: Mapping[str, Any],
             condition: str, limit: int, inactive: set[int] | None) -> Found | None:
    """_bounded_page's page, and the total when it was counted on the way (a search of
    active records: the walk that ranks the rare phrases' records counts every match too,
    and its total stands even when the page is not found that way), each None if not."""
    if len(phrases) < 2:
        return None
    rows = fts.index_stats(conn).rows
    # An index a little larger than counted only raises the bounds (idf grows with N).
    rows_high = rows + max(10, rows // 1000)
    # Each phrase counted once, to where its bound stops changing: a phrase held by more than
    # half the index has the smallest idf FTS5 gives (a count that stopped at CHEAP would have
    # to be taken again for every phrase that reaches it).
    holders = phrase_counts(conn, phrases, max(CHEAP, rows_high // 2 + 1))
    # Few matches in all: ranking them is as cheap as anything else.
    if max(holders) < CHEAP:
        return None
    if max(holders) > rows_high:
        return None  # the statistics are not the index's: rank the plain way
    order = sorted(range(len(phrases)), key=lambda i: holders[i])
    bounds = [phrase_bound(rows_high, holders[i]) for i in order]
    # The plain query scores at least the largest phrase's records; this way must score
    # far fewer (the rare phrases' records, then those near the page) to be worth it.
    budget = max(holders) // SAVING
    total = None
    for split in range(1, len(order)):
        if sum(holders[i] for i in order[:split]) > budget:
            break
        rest = math.fsum(bounds[split:])
        if math.fsum(bounds[:split]) <= rest:
            continue  # even a record holding every rare phrase could be overtaken
        rare = [phrases[i] for i in sorted(order[:split])]  # in the query's order
        found = _page_from_rare(conn, " OR ".join(rare), rest, binds, condition, limit,
                                inactive, budget)
        if found is not None and found[0] is not None:
            return found
        total = total if found is None else found[1]
    return None if total is None else (None, total)


def _page_from_rare(conn: sqlite3.Connection, rare: str, rest: float,
                    binds: Mapping[str, Any], condition: str, limit: int,
                    inactive: set[int] | None, most: int) -> Found | None:
    """The page (and the total, see _bounded) when the `limit`-th best record holding one of
    the `rare` phrases scores above `rest` (all the other phrases could add); else None, or
    no page with the total."""
    if inactive is not None:
        return _page_among_rare(conn, rare, rest, binds, limit, inactive)
    return _page_from_partial(conn, rare, rest, binds, condition, limit, most)


def _page_among_rare(conn: sqlite3.Connection, rare: str, rest: float,
                     binds: Mapping[str, Any], limit: int, inactive: set[int]) -> Found | None:
    """A search of active records: each active record holding a rare phrase ranked under the
    whole query, in the walk that counts the total. A record holding none scores at most
    `rest`; when the `limit`-th best of those ranked scores more, the page is among them
    (else no page, with the total)."""
    found = ranks_and_count(conn, binds["expr"], WEIGHTS, rare, sorted(inactive), _LOOKUPS)
    if found is None:
        return None
    ranks, total = found
    ranked = sorted((rank, seq) for seq, rank in ranks if seq not in inactive)
    if len(ranked) < limit:
        return None, total
    edge = ranked[limit - 1][0]
    if -edge <= rest + SLACK * (abs(edge) + rest + 1.0):
        return None, total
    # Ties at the edge are broken by id, as the plain query does.
    best = [(rank, seq) for rank, seq in ranked if rank <= edge]
    ids = dict(fts.rows_by_seq(conn, "seq, id", [seq for _, seq in best]))
    page = sorted((rank, ids[seq], seq) for rank, seq in best)[:limit]
    return [(seq, rank) for rank, _, seq in page], total


def _page_from_partial(conn: sqlite3.Connection, rare: str, rest: float,
                       binds: Mapping[str, Any], condition: str, limit: int,
                       most: int) -> Found | None:
    """A search with filters: the page when the `limit`-th best score over the `rare`
    phrases alone, among records that pass `condition`, is above `rest`, and at most `most`
    records come near enough to it to be ranked in full; else None."""
    scored = [(row[0], -row[1]) for row in conn.execute(
        f"""SELECT r.seq, bm25(memory_fts, {WEIGHTS})
            FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
            WHERE memory_fts MATCH :rare AND {condition}""", {**binds, "rare": rare})]
    if len(scored) < limit:
        return None
    scores = sorted((score for _, score in scored), reverse=True)
    threshold = scores[limit - 1]
    slack = SLACK * (abs(threshold) + rest + 1.0)
    if threshold <= rest + slack:
        return None
    # Every record outside these scores below `threshold`, and at least `limit` records
    # score at least that: the page is among them.
    near = [seq for seq, score in scored if score + rest + 2 * slack >= threshold]
    if len(near) > most:
        return None
    ids = dict(fts.rows_by_seq(conn, "seq, id", near))
    ranked = sorted((rank, ids[seq], seq) for seq, rank in
                    ranks_of(conn, binds["expr"], WEIGHTS, near))
    return [(seq, rank) for rank, _, seq in ranked[:limit]], None


# --- the plain ways ----------------------------------------------------------------------------

def _inactive(conn: sqlite3.Connection, now: str) -> set[int]:
    """The records a search of active records leaves out: stored as not active, or active
    with an expiry that has passed (few; read from two indexes alone)."""
    return {row[0] for row in conn.execute(
        """SELECT seq FROM memory_records INDEXED BY memory_records_status
             WHERE status IN ('superseded', 'retracted', 'expired')
           UNION ALL
           SELECT seq FROM memory_records INDEXED BY memory_records_expiring
             WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now""",
        {"now": now})}


def _rank_active(conn: sqlite3.Connection, binds: Mapping[str, Any], limit: int,
                 inactive: set[int]) -> list[tuple[int, float]] | None:
    """The page of a search of active records by (rank, id), ranked in the FTS index alone:
    the best few matches are taken from FTS5, then the ids of the active ones are looked up,
    instead of joining every match with memory_records (half the cost when most records
    match). None when that page cannot be told apart from what lies beyond the matches
    taken (too many inactive ones among them, or a tie at the edge): the caller then ranks
    with the join."""
    for want in (2 * limit + 10, 8 * limit + 100):
        hits = best(conn, binds["expr"], WEIGHTS, want)
        ids = dict(fts.rows_by_seq(conn, "seq, id",
                                   [seq for seq, _ in hits if seq not in inactive]))
        active = sorted((rank, ids[seq], seq) for seq, rank in hits if seq in ids)
        # When more matches may follow, the page must end before them.
        if len(hits) < want or (len(active) >= limit and hits[-1][1] > active[limit - 1][0]):
            return [(seq, rank) for rank, _, seq in active[:limit]]
    return None


# Up to this many inactive records are looked up in the index one by one; more are told
# apart in one pass over the matches.
_LOOKUPS = 100


def _count_active(conn: sqlite3.Connection, expression: str, inactive: set[int]) -> int:
    """Matches among active records: every match, minus the inactive ones."""
    return count_matches(conn, expression, sorted(inactive), _LOOKUPS)


def _placeholders(values: Sequence[str]) -> str:
    return ", ".join(f":s{i}" for i in range(len(values)))
