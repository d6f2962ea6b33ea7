"""Recall: memory.retrieve, prompt.assemble, telemetry.retrievals and episode.capture.

Retrieval: task -> terms -> FTS5 candidates (scope/status/trust filtered) -> deterministic
rerank -> dedupe -> pack within top_k and max_bytes -> fence. Every retrieval writes one
telemetry row. Prompt assembly uses the pack only when retrieval is active and non-empty and
its telemetry row was stored; any failure falls back to the legacy Team Notes + Personal
Memory pair, so an agent always gets its prompt.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from datetime import datetime
from typing import Any

import structlog

from minionsd.clock import iso
from minionsd.errors import InvalidParams
from minionsd.fileio import read_shown
from minionsd.memory import prompt
from minionsd.memory.app import App, Surface
from minionsd.memory.episodes import build_episode
from minionsd.memory.identity import has_notebook
from minionsd.memory.retrieval import candidates as candidates_mod
from minionsd.memory.retrieval import pack as pack_mod
from minionsd.memory.retrieval import rank as rank_mod
from minionsd.memory.retrieval import related as related_mod
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.memory.retrieval.memos import TaskQuery
from minionsd.storage import read_txn, records, telemetry
from minionsd.storage.record_filters import check_project_bound
from minionsd.text.fence import fence
from minionsd.text.redact import redact
from minionsd.text.task import check_optional_name, check_task
from minionsd.text.wire_json import Encoded

log = structlog.get_logger()


def _terms_and_pack(app: App, conn: Any, task: dict[str, Any], project: str | None,
                    agent: str | None, now: datetime,
                    bound: bool = False) -> tuple[list[str], dict[str, Any] | None]:
    """A task's terms, and (when it has any) its pack with the fenced text and its size.
    `bound`: the caller is bound to `project` (no record of another project is a candidate)."""
    if app.recall_index is None:  # an App made without one (tests, tools)
        app.recall_index = RecallIndex()
    parts = app.recall_index.memos.task_query(task)
    terms = list(parts.terms)
    if not terms:
        return terms, None
    found = _pack(app, conn, task, terms, project, agent, now, parts, bound=bound)
    if found["selected"]:
        found["bytes"] = prompt.utf8_len(found["pack"])
        found["text"] = fence(found["pack"], prompt.relevant_source(task["id"]),
                              app.config["engine.untrusted_fence_max_bytes"])
    return terms, found


def _pack(app: App, conn: Any, task: dict[str, Any], terms: list[str], project: str | None,
          agent: str | None, now: datetime, parts: TaskQuery | None = None, *,
          bound: bool = False) -> dict[str, Any]:
    """The read-only part of a retrieval, run on a reader connection. `parts`: the task's
    query, when the caller has it."""
    cfg = app.config
    if app.recall_index is None:  # an App made without one (tests, tools)
        app.recall_index = RecallIndex()
    if parts is None:
        parts = TaskQuery.of(task, terms)
    index = app.recall_index
    # One read snapshot: the cutoff's relatedness (.related) reads while packing.
    with read_txn.snapshot(conn):
        found = candidates_mod.fetch_candidates(
            index, conn, terms, project=project, agent=agent, now_iso=iso(now),
            limit=cfg["engine.memory_retrieval_candidate_limit"], naming=parts.naming,
            bound=bound)
        memos = index.memos
        ranked = rank_mod.rank_lazily(found, task_files=list(parts.files),
                                      project=project, agent=agent, now=now, memos=memos,
                                      cues=parts.cues)
        text, chosen = pack_mod.pack(
            ranked, distinct=True, top_k=cfg["engine.memory_retrieval_top_k"],
            max_bytes=cfg["engine.memory_retrieval_max_bytes"],
            min_score_ratio=cfg["engine.memory_retrieval_min_score_ratio"],
            smallest=min(map(pack_mod.min_size, found), default=0), memos=memos,
            rare_left=sum(bool(c["rare_terms"]) for c in found),
            related=related_mod.SharedRareWords(index, conn, terms, found))
    selected = [{"id": s.record["id"], "type": s.record["type"], "scope": s.record["scope"],
                 "trust": s.record["trust"], "date": s.record["created_at"][:10],
                 "source": s.record["source"], "score": round(s.score, 6), "bytes": size}
                for s, size in chosen]
    return {"candidates": len(found), "selected": selected, "pack": text}


class TelemetryQueue:
    """Telemetry rows of retrievals whose callers do not wait for them (memory.retrieve).

    Rows are written together, at most FLUSH_DELAY_S after the first one arrives, in one
    unsynced transaction: a transaction per retrieval would cost more than the retrieval's
    own reads. A retrieval that must know its row is stored (prompt assembly) writes the
    waiting rows with its own and waits; telemetry.retrievals flushes before it reads; stopping
    the daemon flushes. A crash can lose the rows of the last FLUSH_DELAY_S.
    """

    FLUSH_DELAY_S = 0.05

    def __init__(self, app: App) -> None:
        self.app = app
        self._rows: list[dict[str, Any]] = []
        self._timer: asyncio.TimerHandle | None = None

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.FLUSH_DELAY_S, self.flush)

    def _take(self) -> list[dict[str, Any]]:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        rows, self._rows = self._rows, []
        return rows

    def flush(self) -> None:
        rows = self._take()
        if not rows:
            return
        try:
            queued = self.app.db.write_unsynced_nowait(telemetry.insert_each, rows)
        except RuntimeError as exc:  # the database closed (a retrieval ended during shutdown)
            log.error("retrieval.telemetry_failed", rows=len(rows), error=str(exc))
            return
        queued.add_done_callback(lambda done: _log_telemetry_failure(done, len(rows)))

    async def write_with(self, row: dict[str, Any]) -> None:
        """Store `row` now, with any waiting rows; raises if `row` cannot be stored (a waiting
        row that fails is logged and does not affect it)."""
        await self.app.db.write_unsynced(_store_with, self._take(), row)


def _store_with(conn: Any, waiting: list[dict[str, Any]], row: dict[str, Any]) -> None:
    telemetry.insert_each(conn, waiting)
    telemetry.insert(conn, row)


def _log_telemetry_failure(done: Future[Any], count: int) -> None:
    error = done.exception()
    if error is not None:
        log.error("retrieval.telemetry_failed", rows=count,
                  error=f"{type(error).__name__}: {error}")


def _outcome(app: App, conn: Any, task: dict[str, Any], project: str | None,
             agent: str | None, now: datetime, started: float,
             failure: BaseException | None = None,
             bound: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """One retrieval's result and its telemetry row. With retrieval on, this runs on a reader
    thread with its connection `conn`: the task's terms, the ranking, the fence, the result
    all made there, so the event loop that serves every client only hands the answer on.
    `failure`: the read could not run at all (the result says error, as for any failure)."""
    cfg = app.config
    enabled = bool(cfg["features.memory_retrieval"])
    shadow = bool(cfg["engine.memory_retrieval_shadow_mode"])
    result: dict[str, Any] = {"mode": "off", "terms": [], "candidates": 0, "selected": [],
                              "bytes": 0, "text": "", "duration_ms": 0.0,
                              "fallback_reason": "disabled"}
    error = None
    if enabled:
        result["mode"] = "shadow" if shadow else "active"
        result["fallback_reason"] = None
        try:
            if failure is not None:
                raise failure
            terms, found = _terms_and_pack(app, conn, task, project, agent, now, bound)
            result["terms"] = terms
            if found is None:
                result["fallback_reason"] = "no_terms"
            else:
                result["candidates"] = found["candidates"]
                result["selected"] = found["selected"]
                if not found["selected"]:
                    result["fallback_reason"] = "no_results"
                else:
                    result["bytes"] = found["bytes"]
                    result["text"] = found["text"]
        except Exception as exc:
            log.exception("retrieval.failed", task=task["id"])
            error = f"{type(exc).__name__}: {exc}"
            result.update(fallback_reason="error", selected=[], text="", bytes=0)
        if shadow and result["fallback_reason"] is None:
            result["fallback_reason"] = "shadow"
    result["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
    row = {"at": iso(now), "task_id": task["id"], "project": project, "agent": agent,
           "terms": result["terms"], "candidates": result["candidates"],
           "selected_ids": [s["id"] for s in result["selected"]], "bytes": result["bytes"],
           "duration_ms": result["duration_ms"], "shadow": shadow and enabled,
           "fallback_reason": result["fallback_reason"], "error": error}
    return result, row


async def _retrieved(app: App, task: dict[str, Any], project: str | None, agent: str | None,
                     finish: Any = None, bound: bool = False) -> tuple[Any, dict[str, Any]]:
    """(result, telemetry row) of one retrieval; `finish(result)`, when given, runs where the
    result was made (on the reader thread) and its value is returned in the result's place."""
    started = time.perf_counter()
    now = app.now()

    def done(conn: Any, failure: BaseException | None = None) -> tuple[Any, dict[str, Any]]:
        result, row = _outcome(app, conn, task, project, agent, now, started, failure, bound)
        return (result if finish is None else finish(result)), row

    if not app.config["features.memory_retrieval"]:
        return done(None)
    try:
        return await app.db.read(done)
    except Exception as exc:  # the read could not run (the reader pool closed)
        return done(None, exc)


async def retrieve(app: App, task: dict[str, Any], project: str | None,
                   agent: str | None, queue: TelemetryQueue, *,
                   wait_for_telemetry: bool = True, bound: bool = False) -> dict[str, Any]:
    """One retrieval and its telemetry row.

    With `wait_for_telemetry` the row is committed before this returns and a failure to store
    it is reported as ``telemetry_error`` (prompt assembly then falls back to the legacy
    pair); without, the row is queued (see TelemetryQueue) and a failure is only logged.
    """
    result, row = await _retrieved(app, task, project, agent, bound=bound)
    if not wait_for_telemetry:
        queue.add(row)
        return result
    try:
        await queue.write_with(row)
    except Exception as exc:
        log.exception("retrieval.telemetry_failed", task=task["id"])
        result["telemetry_error"] = f"{type(exc).__name__}: {exc}"
    return result


async def retrieve_encoded(app: App, task: dict[str, Any], project: str | None,
                           agent: str | None, queue: TelemetryQueue, *,
                           bound: bool = False) -> Encoded:
    """memory.retrieve's answer: :func:`retrieve` without waiting for the telemetry row, its
    result encoded for the wire on the reader thread that made it."""
    result, row = await _retrieved(app, task, project, agent, Encoded, bound)
    queue.add(row)
    return result


def _notebook_text(app: App, agent: str) -> str | None:
    """The agent's notebook as the prompt shows it; None (with a warning) when it cannot be
    read, so it never fails the prompt (SPEC §2)."""
    try:
        path = app.notebook(agent)
    except (OSError, RuntimeError) as exc:  # resolving a symlink loop (RuntimeError on 3.11)
        app.file_warnings.replaced(app.home.agents_dir / f"{agent}.md",
                                   f"cannot be read ({exc}): left out until it can")
        return None
    return read_shown(path, app.file_warnings) if path is not None else None


def _legacy(app: App, agent: str | None) -> list[prompt.Section]:
    """Team Notes and Personal Memory, from files a person may edit by hand: what they show is
    redacted on its way into the prompt, as every derived surface is (SPEC §3.1)."""
    cfg = app.config
    fence_max = cfg["engine.untrusted_fence_max_bytes"]
    sections = []
    team = prompt.team_notes_section(read_shown(app.home.notes, app.file_warnings),
                                     cfg["engine.team_notes_max_bytes"],
                                     fence_max, clean=redact)
    if team is not None:
        sections.append(team)
    if agent is not None and has_notebook(agent, cfg.agents):
        personal = prompt.personal_section(_notebook_text(app, agent), agent,
                                           cfg["engine.personal_memory_max_bytes"], fence_max,
                                           clean=redact)
        if personal is not None:
            sections.append(personal)
    return sections


async def assemble(app: App, task: dict[str, Any], project: str | None,
                   agent: str | None, queue: TelemetryQueue, *,
                   bound: bool = False) -> dict[str, Any]:
    """The prompt's memory block. A caller bound to `project` gets no legacy pair: notes.md
    and the notebooks hold every project's notes, and cannot be told apart by project."""
    cfg = app.config
    fence_max = cfg["engine.untrusted_fence_max_bytes"]
    sections: list[prompt.Section] = []
    pinned_text = await app.off_loop(read_shown, app.home.pinned, app.file_warnings,
                                     name="pinned-read")
    pinned = prompt.pinned_section(pinned_text, cfg["engine.pinned_max_code_units"], fence_max)
    if pinned is not None:
        sections.append(pinned)
    retrieval = await retrieve(app, task, project, agent, queue, bound=bound)
    use_pack = (retrieval["mode"] == "active" and retrieval["fallback_reason"] is None
                and "telemetry_error" not in retrieval)
    if use_pack:
        sections.append(prompt.relevant_section(retrieval["text"], task["id"]))
    elif not bound:
        sections += await app.off_loop(_legacy, app, agent, name="legacy-memory")
    return {"text": prompt.render(sections), "memory_mode": "relevant" if use_pack else "legacy",
            "sections": [s.to_wire() for s in sections], "retrieval": retrieval}


class RecallSurface(Surface):
    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.telemetry = TelemetryQueue(app)

    async def stop(self) -> None:
        self.telemetry.flush()

    def _capture(self, params: dict[str, Any]) -> dict[str, Any]:
        decision = build_episode(params, capture_enabled=self.app.config[
            "engine.memory_episodic_capture"])
        if decision.record is None:
            return {"captured": False, "reason": decision.reason}
        fields = {"author": decision.record.get("agent"), "importance": 0.5,
                  "confidence": 0.8, "expires_at": None, "created_at": None} | decision.record
        record_id = self.app.db.write_blocking(records.insert, fields, self.app.now())
        return {"captured": True, "id": record_id}

    def methods(self) -> dict[str, Any]:
        app = self.app

        async def memory_retrieve(task: Any, project: Any = None, agent: Any = None,
                                  project_bound: Any = None) -> dict[str, Any]:
            clean = check_task(task)
            project = check_optional_name(project, "project")
            bound = check_project_bound(project_bound, project)
            # The row is queued, not awaited: the caller does not depend on it, and
            # telemetry.retrievals waits for queued writes before it reads.
            return await retrieve_encoded(app, clean, project,
                                          check_optional_name(agent, "agent"), self.telemetry,
                                          bound=bound)

        async def prompt_assemble(task: Any, project: Any = None, agent: Any = None,
                                  project_bound: Any = None) -> dict[str, Any]:
            clean = check_task(task)
            project = check_optional_name(project, "project")
            bound = check_project_bound(project_bound, project)
            return await assemble(app, clean, project, check_optional_name(agent, "agent"),
                                  self.telemetry, bound=bound)

        async def telemetry_retrievals(limit: Any = None) -> dict[str, Any]:
            self.telemetry.flush()  # rows of retrievals that returned before this call
            await app.db.settled()
            return await app.db.read(telemetry.recent, limit)

        async def episode_capture(**params: Any) -> dict[str, Any]:
            try:
                return await app.off_loop(self._capture, params, name="episode")
            except InvalidParams:
                raise
            except Exception as exc:  # best effort: never fail the caller's task
                log.exception("episode.capture_failed")
                return {"captured": False, "reason": f"internal error: {type(exc).__name__}"}

        return {"memory.retrieve": memory_retrieve, "prompt.assemble": prompt_assemble,
                "telemetry.retrievals": telemetry_retrievals, "episode.capture": episode_capture}
