"""The consolidation component: inbox methods, triggering, status, start-up recovery.

Owns the asyncio side: a lock so one batch runs at a time, the threshold trigger, and the
hand-off of the synchronous Pipeline to a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd.clock import iso
from minionsd.errors import InvalidParams, InvalidState, MinionsError, NotFound, os_error_detail
from minionsd.fileio import fsync_dir, write_temp_synced
from minionsd.home import check_name
from minionsd.memory import quarantine
from minionsd.memory import submission as submission_mod
from minionsd.memory.app import App
from minionsd.memory.consolidate.pipeline import Abandoned, Pipeline
from minionsd.memory.identity import ENGINE
from minionsd.memory.inbox import Inbox, note_project
from minionsd.service.inbox_view import InboxView
from minionsd.service.shared_txn import SharedTransactions
from minionsd.storage import journal, submissions

log = structlog.get_logger()


class ConsolidationService:
    def __init__(self, app: App, *, crash_at: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.inbox = Inbox(app.home, app.file_warnings)
        self.pipeline = Pipeline(app, self.inbox, submit_note=self.submit_sync,
                                 crash_at=crash_at)
        self.quarantined = quarantine.QuarantineCount(app.home.quarantine)
        self.view = InboxView(app, self.inbox, self.quarantined)  # status's inbox figures
        # Submissions arriving together share one transaction and one directory sync.
        self._submits = SharedTransactions(app.db.write_blocking, self._placed,
                                           submissions.alone)
        self._lock = asyncio.Lock()
        self._trigger_task: asyncio.Task | None = None
        self._dirty = False
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.TimerHandle | None = None  # the inbox_max_wait_s timer

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.view.start(self._loop)
        async with self._lock:
            try:
                await self.app.off_loop(self.pipeline.recover, name="consolidation")
            except Abandoned:
                return
            self._note_redo()
        # The start-up reconcile: quarantine what cannot be processed before we report ready.
        report = await self.app.off_loop(self.scan_report, name="inbox-scan")
        log.info("inbox.startup_scan", **report)
        self.poke()

    async def stop(self) -> None:
        self._stopping = True
        self.view.stop()
        self.pipeline.abandon()
        if self._wake is not None:
            self._wake.cancel()
        if self._trigger_task is not None:
            self._trigger_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._trigger_task, 8)
        # Wait for a running batch to reach a step boundary (it stops there).
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._lock.acquire(), 8)

    # --- running batches ----------------------------------------------------------------------

    async def run(self, force: bool = False) -> dict[str, Any]:
        if self._stopping:
            raise InvalidState("the daemon is shutting down")
        async with self._lock:
            result = await self._batch(force)
        self.poke()
        return result.to_wire()

    async def _batch(self, force: bool) -> Any:
        """One pipeline run; a failed one is kept as the `consolidation_failure` event (in
        `status`, with a warning) until a batch runs through."""
        try:
            result = await self.app.off_loop(self.pipeline.run, force, name="consolidation")
        except Abandoned:
            raise
        except Exception as exc:
            self._note_failure(exc)
            raise
        self._note_redo()
        return result

    def _note_failure(self, exc: Exception) -> None:
        detail = (exc.detail if isinstance(exc, MinionsError)
                  else os_error_detail(exc) if isinstance(exc, OSError)
                  else f"{type(exc).__name__}: {exc}")
        self.app.note_event("consolidation_failure", reason=detail[:500])

    def _note_redo(self) -> None:
        """After a run: an open batch whose redo failed keeps (or sets) the failure, even when
        another batch ran; otherwise every batch ran through and the failure goes."""
        if self.pipeline.redo_failure is not None:
            self._note_failure(self.pipeline.redo_failure)
        else:
            self.app.events.pop("consolidation_failure", None)

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """Wait for a running batch to end and start no other until the block exits."""
        async with self._lock:
            yield
        self.poke()

    def poke(self) -> None:
        """Something may have changed in the inbox: check the threshold soon."""
        if self._stopping:
            return
        self._dirty = True
        if self._trigger_task is None or self._trigger_task.done():
            self._trigger_task = asyncio.get_running_loop().create_task(self._auto())

    def poke_threadsafe(self) -> None:
        if self._loop is not None and not self._stopping:
            self._loop.call_soon_threadsafe(self.poke)

    def scan_report(self) -> dict[str, Any]:
        """For the rescan job: reconcile the inbox directory (quarantining bad files)."""
        before = self.quarantined.get()
        state = self.pipeline.inbox_state()
        return {"pending": len(state.notes), "eligible": len(state.eligible()),
                "quarantined": self.quarantined.get() - before}

    async def _auto(self) -> None:
        """Run batches while the threshold is met; look again whenever the inbox moved.

        A poke that arrives while this task sleeps or scans only marks the inbox dirty, so
        the loop takes one more look instead of missing a note that completed the threshold;
        notes still settling are waited for rather than left to the next rescan.
        """
        while not self._stopping:
            self._dirty = False
            cfg = self.app.config
            if not cfg["engine.auto_consolidate_memory"]:
                return
            await asyncio.sleep(cfg["engine.inbox_settle_ms"] / 1000 + 0.05)
            state, due_in = await self.app.off_loop(self.pipeline.work_plan,
                                                    name="inbox-scan")
            self._arm_wake(due_in)
            if state == "work":
                try:
                    async with self._lock:
                        await self._batch(False)
                except Abandoned:
                    return
                except Exception:
                    log.exception("consolidation.failed")
                    return
            elif state == "idle" and not self._dirty:
                return

    def _arm_wake(self, due_in: float | None) -> None:
        """Look again when the oldest eligible note reaches engine.inbox_max_wait_s."""
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if due_in is not None and not self._stopping and self._loop is not None:
            self._wake = self._loop.call_later(max(0.0, due_in) + 0.05, self.poke)

    async def config_changed(self, key: str | None) -> None:
        if key is None or key.startswith("engine."):
            self.view.invalidate()  # settling time, size limit
            self.poke()  # a new threshold or wait bound may make a batch due (or later)

    # --- status -------------------------------------------------------------------------------

    async def status(self) -> dict[str, Any]:
        return self.status_from(await self.app.db.read_light(self.status_reads))

    def status_now(self) -> dict[str, Any] | None:
        """status's part from memory, when the inbox view and the counters are current (no
        system call, no thread); None when status_reads must run on the light lane."""
        inbox, counters = self.view.figures_now(), self.app.db.live.counters()
        if inbox is None or counters is None:
            return None
        return self.status_from((inbox, counters))

    def status_reads(self, conn: Any) -> tuple[dict[str, int], dict[str, Any]]:
        """What status reads from disk, on the light lane (see Daemon.status): the inbox view
        brought up to date, and the journal's counters when memory has none."""
        counters = self.app.db.live.counters()
        return (self.view.refresh(conn),
                counters if counters is not None else journal.counters(conn))

    def status_from(self, reads: tuple[dict[str, int], dict[str, Any]]) -> dict[str, Any]:
        inbox, counters = reads
        return {
            "inbox": dict(inbox),
            "consolidation": {
                "last_at": counters.get("last_at"), "last_mode": counters.get("last_mode"),
                "batches": int(counters.get("batches", 0)),
                "circuit_breaks": int(counters.get("circuit_breaks", 0)),
                "running": self._lock.locked(),
                "last_failure": self.app.events.get("consolidation_failure"),
            },
        }

    # --- inbox methods ------------------------------------------------------------------------

    def submit_sync(self, params: dict[str, Any]) -> dict[str, Any]:
        now = self.app.now()
        submission = submission_mod.prepare_submission(params, now)
        size, limit = len(submission.text.encode("utf-8")), \
            self.app.config["engine.inbox_max_note_bytes"]
        if size > limit:  # the inbox would only quarantine it
            raise InvalidParams(f"the note would be {size} bytes, over "
                                f"engine.inbox_max_note_bytes ({limit})", param="body")
        inbox_dir = self.app.home.inbox
        # The text is written and synced here, before the writer's turn: the writer thread,
        # which every write waits for, only renames it into place and syncs the directory.
        staged = write_temp_synced(inbox_dir / submission.name, submission.text.encode("utf-8"))

        placing: list[str] = []

        def claim_and_place(conn: Any) -> tuple[str, bool, Path]:
            name, fresh = submission_mod.record_submission(conn, submission, inbox_dir, now)
            if not fresh:  # name the file that holds it now (it may have been archived)
                return name, fresh, submission_mod.where_now(conn, name, inbox_dir,
                                                             self.app.home.root)
            # Placed inside the transaction: if that fails the claim rolls back. The
            # directory is synced once for every note of the transaction (_placed).
            placing.append(name)
            self.view.claimed(name)
            os.replace(staged, inbox_dir / name)
            return name, fresh, inbox_dir / name

        try:
            name, written, where = self._submits.run(claim_and_place)
        except BaseException:
            for name in placing:
                self.view.unclaimed(name)
            raise
        finally:
            staged.unlink(missing_ok=True)  # a duplicate, or a failed claim
        return {"name": name, "path": self.app.home.rel(where), "duplicate": not written}

    def _placed(self, conn: Any, outcomes: list[tuple[str, bool, Path]]) -> None:
        """Inside a submissions' transaction, after its notes were placed: one sync makes
        every new name durable before the COMMIT (and so before any caller hears back)."""
        if any(fresh for _name, fresh, _where in outcomes):
            fsync_dir(self.app.home.inbox)

    def methods(self) -> dict[str, Any]:
        async def inbox_submit(body: Any, author: Any, title: Any = None, kind: Any = None,
                               project: Any = None, task: Any = None, pr: Any = None,
                               outcome: Any = None, hold: Any = False,
                               trust: Any = None, project_bound: Any = None) -> dict[str, Any]:
            if author == ENGINE:
                raise InvalidParams(f"'author' {ENGINE!r} is reserved for the daemon's own "
                                    "alerts", param="author")
            params = {"body": body, "author": author, "title": title, "kind": kind,
                      "project": project, "task": task, "pr": pr, "outcome": outcome,
                      "hold": hold, "trust": trust, "project_bound": project_bound}
            result = await self.app.off_loop(self.submit_sync, params, name="submit")
            self.poke()
            return result

        async def inbox_list(quarantined: Any = False, project: Any = None) -> dict[str, Any]:
            if not isinstance(quarantined, bool):
                raise InvalidParams("'quarantined' must be true or false", param="quarantined")
            if project is not None and not isinstance(project, str):
                raise InvalidParams("'project' must be a string", param="project")
            if quarantined:
                return {"quarantined": await self.app.off_loop(
                    quarantine.list_quarantined, self.app.home.quarantine,
                    name="inbox-list")}
            state = await self.app.off_loop(self.pipeline.inbox_state, name="inbox-list")
            return {"notes": [
                {"name": n.name, "author": n.author, "kind": n.kind, "bytes": n.size,
                 "eligible": state.is_eligible(n), "held": n.held,
                 "in_open_batch": n.name in state.busy,
                 "held_by_file": n.meta.get("hold") is True,
                 "modified_at": iso(datetime.fromtimestamp(n.mtime, UTC))}
                for n in state.notes
                if project is None or note_project(n.meta) in (None, project)]}

        async def inbox_hold(name: Any, held: Any) -> dict[str, Any]:
            check_name(name, "name")
            if not isinstance(held, bool):
                raise InvalidParams("'held' must be true or false", param="held")
            if held and not (self.app.home.inbox / name).is_file():
                raise NotFound(f"no note named {name!r} in the inbox", name=name)
            await self.app.db.write(submissions.set_hold, name, held, self.app.now())
            self.poke()
            return {"name": name, "held": held}

        async def inbox_requeue(name: Any) -> dict[str, Any]:
            taken = set(await self.app.db.read(submissions.submitted_names))
            new_name = await self.app.off_loop(
                quarantine.requeue, self.app.home.quarantine, self.app.home.inbox, name, taken,
                name="inbox-requeue")
            self.poke()
            return {"name": new_name, "path": self.app.home.rel(self.app.home.inbox / new_name)}

        async def consolidation_run(force: Any = False) -> dict[str, Any]:
            if not isinstance(force, bool):
                raise InvalidParams("'force' must be true or false", param="force")
            return await self.run(force)

        return {"inbox.submit": inbox_submit, "inbox.list": inbox_list,
                "inbox.hold": inbox_hold, "inbox.requeue": inbox_requeue,
                "consolidation.run": consolidation_run}
