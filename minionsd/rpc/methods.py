"""The explicit method table: JSON-RPC method name -> handler.

Handlers are thin: check parameter types, call one domain function (through the single
writer for writes), shape the result. Parameter names are the public API (SPEC §5).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from minionsd.config import check_value
from minionsd.errors import ConfigError, InvalidParams, NotFound
from minionsd.memory import purge
from minionsd.memory.app import RESTART_KEYS, App
from minionsd.rpc.protocol import Handler
from minionsd.storage import record_fields, records
from minionsd.storage.database import PREPARING_THREADS
from minionsd.text.redact import redact
from minionsd.text.redact_prefix import redact_prefix
from minionsd.text.wire_json import Encoded

_ADD_OPTIONAL = frozenset({"title", "author", "project", "agent", "task", "pr", "paths", "tags",
                           "importance", "confidence", "expires_at", "created_at", "meta"})


def _new_fields(body: Any, type: Any, scope: Any, trust: Any, source: Any,
                **optional: Any) -> dict[str, Any]:
    """memory.add's params checked and normalised (raises InvalidParams naming the bad one)."""
    unknown = sorted(set(optional) - _ADD_OPTIONAL)
    if unknown:
        raise InvalidParams(f"memory.add: unexpected param '{unknown[0]}'", param=unknown[0])
    return record_fields.validate_new(
        {"body": body, "type": type, "scope": scope, "trust": trust, "source": source}
        | optional)


def _redacted(fields: dict[str, Any]) -> dict[str, Any]:
    """A record is a derived surface like any other: no secret is stored (SPEC §3.1). The
    source is shown in every pack's provenance line, so it is redacted too (an import's URL may
    hold a password)."""
    return {**fields, "title": redact(fields["title"]), "body": redact(fields["body"]),
            "source": redact(fields["source"])}


def _prepare_new(scratch: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """memory.add's record, redacted, then tokenised for the index columns, all before the
    writer sees it."""
    return records.derive(scratch, _redacted(fields))


class _Batch:
    """A batch's run of memory.add, prepared: each call's outcome so far (its fields, or the
    exception that fails it), and the ids and rows text of those to write (records.batch_rows;
    rows is None when they must be inserted one by one)."""

    def __init__(self, outcomes: list[Any], ids: list[str], rows: str | None) -> None:
        self.outcomes = outcomes
        self.ids = ids
        self.rows = rows

    @staticmethod
    def joined(parts: Sequence[_Batch]) -> _Batch:
        """The parts of one batch, prepared apart, as one (rows: one JSON array)."""
        if len(parts) == 1:
            return parts[0]
        texts = [part.rows for part in parts if part.ids]
        rows = None if None in texts else "[" + ",".join(text[1:-1] for text in texts) + "]"
        return _Batch([o for part in parts for o in part.outcomes],
                      [i for part in parts for i in part.ids], rows)


def _prepare_calls(scratch: Any, calls: list[tuple[tuple[Any, ...], dict[str, Any]]],
                   now: datetime) -> _Batch:
    """memory.add's fields, checked, redacted and tokenised, for each call, and the rows the
    writer stores in one statement; an error in one call (InvalidParams, usually) becomes that
    call's outcome."""
    out: list[Any] = []
    for args, kwargs in calls:
        try:
            out.append(_redacted(_new_fields(*args, **kwargs)))
        except Exception as exc:  # this call's reply carries it
            out.append(exc)
    valid = [i for i, fields in enumerate(out) if not isinstance(fields, Exception)]
    for index, derived in zip(valid, records.derive_many(scratch, [out[i] for i in valid]),
                              strict=True):
        out[index] = derived
    ids, rows = records.batch_rows([f for f in out if not isinstance(f, Exception)], now)
    return _Batch(out, ids, rows)


def _search_wire(conn: Any, params: dict[str, Any], now: datetime) -> Encoded:
    """memory.search's answer, encoded for the wire on the reader thread that found it."""
    return Encoded(records.search(conn, params, now))


def _fetch_wire(conn: Any, record_id: Any, now: datetime) -> Encoded:
    return Encoded(records.fetch(conn, record_id, now))


def _require_str(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParams(f"'{name}' must be a non-empty string", param=name)
    return value


def build_methods(app: App, *, status: Callable[[], Awaitable[dict[str, Any]]],
                  config_changed: Callable[[str], Awaitable[None]],
                  extra: dict[str, Handler] | None = None) -> dict[str, Handler]:
    """The core methods; `status` and `config_changed` are the daemon's, `extra` the
    components' own tables."""

    async def config_get(key: str | None = None) -> dict[str, Any]:
        if key is None:
            return {"value": app.config.configured()}
        if not isinstance(key, str):
            raise InvalidParams("'key' must be a string", param="key")
        return {"value": app.config.get(key)}  # an unknown key is refused, with a suggestion

    async def config_set(key: str, value: Any) -> dict[str, Any]:
        if not isinstance(key, str):
            raise InvalidParams("'key' must be a string", param="key")
        try:
            check_value(key, value)
        except ConfigError as exc:
            raise InvalidParams(exc.detail, key=key) from None
        app.config = updated = app.config.set_in_file(key, value)
        await config_changed(key)
        return {"key": key, "value": updated.get(key), "applied": key not in RESTART_KEYS}

    async def memory_add(body: Any, type: Any, scope: Any, trust: Any, source: Any,
                         **optional: Any) -> dict[str, Any]:
        fields = _new_fields(body, type, scope, trust, source, **optional)
        # Off the event loop: a megabyte body takes about a second to redact. The preparing
        # thread queues the write itself: the loop hears back once, when it is committed.
        return {"id": await app.db.write_prepared(_prepare_new, (fields,), records.insert,
                                                  app.now())}

    async def memory_add_many(calls: list[tuple[tuple[Any, ...], dict[str, Any]]]) -> list[Any]:
        """A batch's run of memory.add: checked and prepared together off the event loop, then
        committed together (SPEC §5); each call still succeeds or fails on its own."""
        now = app.now()
        cut = -(-len(calls) // PREPARING_THREADS)
        parts = await asyncio.gather(*(app.db.prepare(_prepare_calls, calls[i:i + cut], now)
                                       for i in range(0, len(calls), cut)))
        batch = _Batch.joined(parts)
        outcomes = batch.outcomes
        writable = [i for i, fields in enumerate(outcomes) if not isinstance(fields, Exception)]
        written: list[Any] = []
        if batch.rows is not None and writable:
            try:  # all in one statement; should it fail, one by one so each fails alone
                await app.db.write_grouped(records.insert_batch, batch.rows)
                written = batch.ids
            except Exception:  # the writes below report each call's own error
                written = []
        if not written:
            written = await app.db.write_each(records.insert,
                                              [(outcomes[i], now) for i in writable])
        for index, outcome in zip(writable, written, strict=True):
            outcomes[index] = outcome if isinstance(outcome, BaseException) else {"id": outcome}
        return outcomes

    memory_add.bulk = memory_add_many  # type: ignore[attr-defined]  # see Dispatcher.bulk

    async def memory_get(id: Any) -> Encoded:
        try:
            return await app.db.read(_fetch_wire, id, app.now())
        except NotFound:
            purged = await app.db.read(purge.explain_missing, id)
            if purged is None:
                raise
            raise purged from None

    async def memory_search(query: Any, type: Any = None, scope: Any = None,
                            status: Any = None, project: Any = None, agent: Any = None,
                            limit: Any = 20, project_bound: Any = None) -> Encoded:
        params = {"query": query, "type": type, "scope": scope, "status": status,
                  "project": project, "agent": agent, "limit": limit,
                  "project_bound": project_bound}
        return await app.db.read(_search_wire, params, app.now())

    async def memory_pin(id: Any) -> dict[str, Any]:
        return await app.db.write(records.pin, _require_str(id, "id"), app.now())

    async def memory_expire(id: Any) -> dict[str, Any]:
        return await app.db.write(records.expire, _require_str(id, "id"), app.now())

    async def memory_retract(id: Any, reason: Any) -> dict[str, Any]:
        if isinstance(reason, str):  # an agent tool writes it: redacted like a note
            # Only the stored part (records.REASON_MAX) is redacted: a megabyte of reason took
            # seconds, and `re` holds the GIL, so a thread alone would stall the loop as well.
            reason = redact_prefix(reason, records.REASON_MAX)
        return await app.db.write(records.retract, _require_str(id, "id"), reason, app.now())

    async def memory_supersede(id: Any, by: Any) -> dict[str, Any]:
        return await app.db.write(records.supersede, _require_str(id, "id"), by, app.now())

    async def memory_purge(id: Any = None, reason: Any = None) -> dict[str, Any]:
        return await purge.purge(app, id, reason)

    table: dict[str, Handler] = {
        "status": status,
        "config.get": config_get,
        "config.set": config_set,
        "memory.add": memory_add,
        "memory.get": memory_get,
        "memory.search": memory_search,
        "memory.pin": memory_pin,
        "memory.expire": memory_expire,
        "memory.retract": memory_retract,
        "memory.supersede": memory_supersede,
        "memory.purge": memory_purge,
    }
    return table | (extra or {})
