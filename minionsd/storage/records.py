"""memory_records: insert/upsert, reads with read-time expiry, lifecycle, counts (search:
search.py; rows as the wire shows them: record_wire.py).

Every function takes a sqlite3 connection: writes receive the writer's connection inside its
transaction, reads a read connection. A record whose `expires_at` has passed reads as
`expired` everywhere, even before the expiry job stores that status.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from minionsd.clock import iso
from minionsd.errors import InvalidParams, InvalidState, NotFound
from minionsd.storage import fts, record_rows
from minionsd.storage import search as searching
from minionsd.storage.record_fields import (
    PIN_FLOOR,
    STATUSES,
    TYPES,  # noqa: F401 - re-exported beside STATUSES (the CLI's choices are checked on them)
)
from minionsd.storage.record_wire import (  # noqa: F401 - WIRE_KEYS, plain_snippet re-exported
    EFFECTIVE_STATUS,
    WIRE_KEYS,
    plain_snippet,
    to_wire,
)
from minionsd.storage.stem_memo import ascii_tokens
from minionsd.text import ftsquery

REASON_MAX = 1000  # characters of a retraction reason that are stored


def derive(scratch: sqlite3.Connection, fields: Mapping[str, Any]) -> dict[str, Any]:
    """`fields` with the derived index columns (search_aux, term_counts) computed, so that
    insert() has only SQL left to run. `scratch` is any connection (its TEMP tables tokenise);
    the daemon computes these beside the writer, not on it."""
    aux, tokens = ftsquery.index_aux_and_tokens(fields["title"], fields["body"],
                                                fields["paths"], fields["tags"])
    return {**fields, "search_aux": aux,
            "term_counts": fts.term_counts(scratch, fields["title"], fields["body"], aux,
                                           memo=getattr(scratch, "stem_memo", None),
                                           tokens=tokens)}


# Records whose new tokens are asked of FTS5 together: few enough that their token lists are
# not all held at once (a batch's first records are all new to a daemon just started).
_DEFERRED_AT_MOST = 32


def derive_many(scratch: sqlite3.Connection,
                many: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | Exception]:
    """derive() of each of `many`, in order (the exception it raised in place of one that
    fails). With the scratch connection's stem memo, a record whose ASCII tokens it does not
    all know waits until a few such records are together: one FTS5 call gives the stems of
    all their new tokens (instead of one call per record), then they are counted."""
    memo = getattr(scratch, "stem_memo", None)
    out: list[dict[str, Any] | Exception] = []
    waiting: list[tuple[int, tuple[list[str], list[str]]]] = []  # (position in out, tokens)
    for fields in many:
        try:
            aux, tokens = ftsquery.index_aux_and_tokens(
                fields["title"], fields["body"], fields["paths"], fields["tags"],
                None if memo is None else memo.compounds)
            if memo is not None and tokens is not None:
                counts = fts.remembered_counts(fields["title"], fields["body"], aux, memo,
                                               tokens)
                if counts is None:
                    waiting.append((len(out), tokens))
            else:
                counts = fts.term_counts(scratch, fields["title"], fields["body"], aux)
            out.append({**fields, "search_aux": aux, "term_counts": counts})
        except Exception as exc:  # this record's outcome
            out.append(exc)
        if memo is not None and len(waiting) >= _DEFERRED_AT_MOST:
            _count_waiting(scratch, memo, out, waiting)
            waiting = []
    if memo is not None and waiting:
        _count_waiting(scratch, memo, out, waiting)
    return out


def _count_waiting(scratch: sqlite3.Connection, memo: fts.StemMemo,
                   out: list[dict[str, Any] | Exception],
                   waiting: list[tuple[int, tuple[list[str], list[str]]]]) -> None:
    """term_counts of the records of `out` at the positions `waiting` names, after one FTS5
    call for the stems of all their tokens the memo lacks."""
    columns = [column for index, tokens in waiting
               for column in (*tokens, ascii_tokens(out[index]["search_aux"]))]  # type: ignore[index]
    with contextlib.suppress(sqlite3.Error):  # else each record asks for its own below
        fts.learn_stems(scratch, memo, columns)
    for index, tokens in waiting:
        record = out[index]
        assert isinstance(record, dict)
        try:
            record["term_counts"] = fts.term_counts(scratch, record["title"], record["body"],
                                                    record["search_aux"], memo=memo,
                                                    tokens=tokens)
        except Exception as exc:  # this record's outcome
            out[index] = exc


new_id = record_rows.new_id
batch_rows = record_rows.batch_rows
insert_batch = record_rows.insert_batch


def insert(conn: sqlite3.Connection, fields: Mapping[str, Any], now: datetime,
           content_hash: str | None = None) -> str:
    """Insert a new active record; its derived columns come from derive() when `fields` has
    them, else they are computed here."""
    record_id = new_id(now)
    if "search_aux" not in fields:
        fields = derive(conn, fields)
    conn.execute(record_rows.INSERT_ONE, record_rows.row(fields, record_id, iso(now),
                                                         content_hash))
    return record_id


def upsert_by_hash(conn: sqlite3.Connection, fields: Mapping[str, Any], content_hash: str,
                   now: datetime) -> tuple[str, bool]:
    """Insert unless a record with this content hash exists; (id, inserted)."""
    found = conn.execute("SELECT id FROM memory_records WHERE content_hash = ?",
                         (content_hash,)).fetchone()
    if found:
        return found["id"], False
    return insert(conn, fields, now, content_hash), True


def update_content(conn: sqlite3.Connection, record_id: str, title: str, body: str,
                   now: datetime) -> None:
    """New title and body for a record (a hand-edited KB file); search_aux follows them."""
    row = conn.execute("SELECT paths, tags FROM memory_records WHERE id = ?",
                       (record_id,)).fetchone()
    if row is None:
        raise NotFound(f"no record with id {record_id!r}", id=record_id)
    aux = ftsquery.index_aux_text(title, body, json.loads(row["paths"]), json.loads(row["tags"]))
    conn.execute("""UPDATE memory_records SET title = ?, body = ?, search_aux = ?,
                        term_counts = ?, updated_at = ? WHERE id = ?""",
                 (title, body, aux, fts.term_counts(conn, title, body, aux), iso(now), record_id))


def records_version(conn: sqlite3.Connection) -> int:
    """The newest record_changes id ever given out: it moves whenever a record is written."""
    row = conn.execute(
        "SELECT seq FROM sqlite_sequence WHERE name = 'record_changes'").fetchone()
    return int(row[0]) if row else 0


def prune_changes(conn: sqlite3.Connection, keep: int) -> int:
    """Drop all but the newest `keep` rows of the record_changes log (migration 0006).

    Readers that had not caught up past the pruned rows notice the gap and reload in full.
    """
    cursor = conn.execute(
        "DELETE FROM record_changes WHERE id <= (SELECT max(id) FROM record_changes) - ?",
        (keep,))
    return cursor.rowcount


def fetch(conn: sqlite3.Connection, record_id: object, now: datetime) -> dict[str, Any]:
    if not isinstance(record_id, str) or not record_id:
        raise InvalidParams("'id' must be a non-empty string", param="id")
    row = conn.execute(
        f"SELECT r.*, {EFFECTIVE_STATUS} AS eff_status FROM memory_records r WHERE r.id = :id",
        {"id": record_id, "now": iso(now)},
    ).fetchone()
    if row is None:
        raise NotFound(f"no record with id {record_id!r}", id=record_id)
    return to_wire(row)


# --- search ---------------------------------------------------------------------------------

def search(conn: sqlite3.Connection, params: Mapping[str, Any],
           now: datetime) -> dict[str, Any]:
    """memory.search (storage/search.py)."""
    return searching.search(conn, params, now)


# --- lifecycle ------------------------------------------------------------------------------

def _touch(conn: sqlite3.Connection, record_id: str, now: datetime, **changes: Any) -> None:
    sets = ", ".join(f"{column} = :{column}" for column in changes)
    conn.execute(f"UPDATE memory_records SET {sets}, updated_at = :updated_at WHERE id = :id",
                 changes | {"id": record_id, "updated_at": iso(now)})


def pin(conn: sqlite3.Connection, record_id: str, now: datetime) -> dict[str, Any]:
    record = fetch(conn, record_id, now)
    expires_at = record["expires_at"]
    if expires_at is not None and expires_at <= iso(now):
        expires_at = None  # pinning restores the record, so a passed expiry no longer applies
    _touch(conn, record_id, now, pinned=1, status="active",
           trust="human" if record["trust"] == "human" else "system",
           confidence=max(record["confidence"], PIN_FLOOR),
           importance=max(record["importance"], PIN_FLOOR),
           superseded_by=None, retracted_reason=None, expires_at=expires_at)
    return fetch(conn, record_id, now)


def retract(conn: sqlite3.Connection, record_id: str, reason: object,
            now: datetime) -> dict[str, Any]:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidParams("'reason' must be a non-empty string", param="reason")
    record = fetch(conn, record_id, now)
    if record["status"] == "retracted":
        raise InvalidState(f"record {record_id} is already retracted "
                           f"({record['retracted_reason']})", id=record_id)
    _touch(conn, record_id, now, status="retracted", retracted_reason=reason[:REASON_MAX],
           pinned=0)
    return fetch(conn, record_id, now)


def supersede(conn: sqlite3.Connection, record_id: str, by: object,
              now: datetime) -> dict[str, Any]:
    if not isinstance(by, str) or not by:
        raise InvalidParams("'by' must be the id of the newer record", param="by")
    if by == record_id:
        raise InvalidParams("a record cannot supersede itself", param="by")
    record = fetch(conn, record_id, now)
    try:
        newer = fetch(conn, by, now)
    except NotFound:
        raise NotFound(f"superseding record {by!r} does not exist", id=by) from None
    if record["status"] != "active":
        raise InvalidState(f"record {record_id} is {record['status']}; only an active record "
                           "can be superseded", id=record_id)
    if newer["status"] != "active":
        raise InvalidState(f"record {by} is {newer['status']}; the superseding record must "
                           "be active", id=by)
    _touch(conn, record_id, now, status="superseded", superseded_by=by, pinned=0)
    return fetch(conn, record_id, now)


def expire(conn: sqlite3.Connection, record_id: str, now: datetime) -> dict[str, Any]:
    record = fetch(conn, record_id, now)
    if record["status"] in ("retracted", "superseded"):
        raise InvalidState(f"record {record_id} is {record['status']}; it cannot expire",
                           id=record_id)
    stamp = iso(now)
    expires_at = record["expires_at"] if record["expires_at"] and record["expires_at"] <= stamp \
        else stamp
    _touch(conn, record_id, now, status="expired", expires_at=expires_at, pinned=0)
    return fetch(conn, record_id, now)


def expire_due(conn: sqlite3.Connection, now: datetime) -> int:
    """Persist the expiry of active records whose expires_at has passed."""
    cursor = conn.execute(
        """UPDATE memory_records SET status = 'expired', updated_at = :now
           WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now""",
        {"now": iso(now)},
    )
    return cursor.rowcount


def status_counts(conn: sqlite3.Connection, now: datetime) -> dict[str, int]:
    """Records by status as reads show it (expired at read time included), without a scan.

    The stored counts come from record_counts (migration 0009, kept by triggers); active
    records whose expires_at has passed are counted as expired, from the index of active
    records with an expiry (few, and the expiry job stores their status regularly). One
    statement, so both parts come from one snapshot.
    """
    counts = dict.fromkeys(STATUSES, 0)
    rows = conn.execute(
        """SELECT status, n FROM record_counts
           UNION ALL
           SELECT '', count(*) FROM memory_records INDEXED BY memory_records_expiring
           WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= :now""",
        {"now": iso(now)},
    ).fetchall()
    due = 0
    for status, n in rows:
        if status == "":
            due = n
        elif status in counts:
            counts[status] = n
    counts["active"] -= due
    counts["expired"] += due
    return counts


def status_counts_by_scan(conn: sqlite3.Connection, now: datetime) -> dict[str, int]:
    """The same figures counted over the whole table (tests compare the two)."""
    counts = dict.fromkeys(STATUSES, 0)
    rows = conn.execute(
        f"SELECT {EFFECTIVE_STATUS} AS s, count(*) AS n FROM memory_records r GROUP BY s",
        {"now": iso(now)},
    ).fetchall()
    for row in rows:
        counts[row[0]] = row[1]
    return counts
