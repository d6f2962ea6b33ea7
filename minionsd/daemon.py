"""minionsd entry point: the one place that wires components, starts and stops them in order.

Start: config -> home layout -> pid lock -> database (migrations) -> socket -> ready.
Stop (SIGTERM/SIGINT): stop accepting requests, let the current batch finish or abandon it
safely, stop background work, close the database, remove socket and pid file, exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import signal
import sqlite3
import sys
import threading
import time
import traceback
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd import __version__, logsetup
from minionsd import config as config_mod
from minionsd.clock import iso, parse_iso
from minionsd.errors import ConfigError, MinionsError
from minionsd.home import Home, resolve_home
from minionsd.memory.app import App
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.rpc.methods import build_methods
from minionsd.rpc.protocol import Dispatcher
from minionsd.rpc.server import RpcServer
from minionsd.service import malloc_arenas
from minionsd.service.systemd import Notifier
from minionsd.service.wiring import Wiring
from minionsd.storage import records
from minionsd.storage.database import Database
from minionsd.storage.pidfile import PidFile, SocketRecord
from minionsd.threads import SharedRun

log = structlog.get_logger()
EXIT_CONFIG = 2
EXIT_RUNTIME = 1
# Socket and components together; the database close and exit fit in the rest of SPEC's 10 s.
STOP_BUDGET_S = 7.5
STOP_FLOOR_S = 0.2


class Daemon:
    def __init__(self, app: App, notifier: Notifier | None = None) -> None:
        self.app = app
        self.notifier = notifier or Notifier({})
        self.stop_event = asyncio.Event()
        self.server: RpcServer | None = None
        self.wiring = Wiring()  # main() sets the built one
        self._shared_reads = SharedRun(self._status_reads)

    async def _status_reads(self) -> list[Any]:
        """What the parts of status that read disk (the inbox scan) read, all in ONE
        light-lane trip."""
        reading = self.wiring.status_on_disk
        if not reading:
            return []
        return await self.app.db.read_light(
            lambda conn: [part.status_reads(conn) for part in reading])

    def status_now(self) -> dict[str, Any] | None:
        """status from memory alone, on the loop, with nothing awaited (so the reply leaves in
        the loop turn that read the request): when the live counts know the records now and
        every component can answer that way (the inbox view saw no change it cannot take in
        here, the job results are in memory). None when something must be read first."""
        app = self.app
        counts = app.db.live.records(iso(app.now()))
        if counts is None:
            return None
        parts = []
        for component in (*self.wiring.status_on_disk, *self.wiring.status):
            part = component.status_now()
            if part is None:
                return None
            parts.append(part)
        return self._result(counts, parts)

    async def status(self) -> dict[str, Any]:
        quick = self.status_now()
        if quick is not None:
            return quick
        app = self.app
        # The database's figures (records, the consolidation journal's counters, job results)
        # come from memory (storage/live_counts.py, read again after every commit): no SQL.
        # The disk reads are shared by concurrent calls (SharedRun): under load a queue of
        # status calls costs two looks at the inbox, not one each, one behind the other.
        now = app.now()
        counts = app.db.live.records(iso(now))
        others = [component.status() for component in self.wiring.status]
        if counts is None:  # more records expire by now than memory keeps: count in SQL
            others.append(app.db.read_light(records.status_counts, now))
        read_parts, *parts = await asyncio.gather(self._shared_reads.get(), *others)
        if counts is None:
            counts = parts.pop()
        parts = [component.status_from(read) for component, read
                 in zip(self.wiring.status_on_disk, read_parts, strict=True)] + parts
        return self._result(counts, parts)

    def _result(self, counts: dict[str, int], parts: list[dict[str, Any]]) -> dict[str, Any]:
        app = self.app
        result: dict[str, Any] = {
            "version": app.version,
            "pid": os.getpid(),
            "uptime_s": app.uptime_s(),
            "home": str(app.home.root),
            "socket": str(app.bound_socket or app.socket_path),
            "records": counts,
            "retrieval": {"enabled": bool(app.config["features.memory_retrieval"]),
                          "shadow": bool(app.config["engine.memory_retrieval_shadow_mode"])},
            "llm": {"configured": app.llm_api_key() is not None,
                    "last_failure": app.events.get("llm_failure"),
                    "last_ok_at": (app.events.get("llm_ok") or {}).get("at")},
            "config": {"path": str(app.config.path),
                       "last_reload_failure": app.events.get("config_reload_failure"),
                       "last_reload_at": (app.events.get("config_reload_ok") or {}).get("at")},
            # Hand-edited files read with a warning (not UTF-8): SPEC §2.
            "warnings": app.file_warnings.list(),
        }
        for part in parts:
            result |= part
        result.setdefault("inbox", {"pending": 0, "eligible": 0, "held": 0, "quarantined": 0})
        result.setdefault("consolidation", {"last_at": None, "last_mode": None, "batches": 0,
                                            "circuit_breaks": 0})
        result.setdefault("jobs", [])
        failed = app.events.get("consolidation_failure")
        if failed:  # the notes stay in the inbox; the next batch tries them again
            result["warnings"] = [*result["warnings"], {
                "file": "notes/inbox", "at": failed["at"],
                "reason": f"the last consolidation batch failed: {failed['reason']}; its notes "
                          "wait in the inbox and the next batch tries them again"}]
        return result

    async def summary(self) -> str:
        """One line for systemd's STATUS=."""
        st = await self.status()
        return (f"inbox {st['inbox']['pending']} pending; {st['consolidation']['batches']} "
                f"batches; {st['records']['active']} active records")

    async def _status_updates(self) -> None:
        while True:
            await asyncio.sleep(30)
            with contextlib.suppress(Exception):
                self.notifier.status(await self.summary())

    async def reload_config(self) -> None:
        try:
            self.app.config = config_mod.load(self.app.config.path, self.app.environ)
        except ConfigError as exc:
            log.error("config.reload_failed", detail=exc.detail)
            self.app.note_event("config_reload_failure", reason=str(exc.detail)[:300])
            return
        self.app.note_event("config_reload_ok")
        log.info("config.reloaded", path=str(self.app.config.path))
        await self.config_changed(None)

    async def config_changed(self, key: str | None) -> None:
        for component in self.wiring.config_listeners:
            await component.config_changed(key)

    async def run(self) -> None:
        app = self.app
        extra: dict[str, Any] = {}
        for source in self.wiring.methods:
            extra |= source.methods()
        dispatcher = Dispatcher(build_methods(app, status=self.status,
                                              config_changed=self.config_changed, extra=extra))
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self.stop_event.set)
        loop.add_signal_handler(signal.SIGHUP, lambda: loop.create_task(self.reload_config()))
        loop.add_signal_handler(signal.SIGUSR1, dump_threads)
        started: list[Any] = []
        try:
            for component in self.wiring.parts:
                started.append(component)  # a half-started component is stopped too
                await component.start()
            self.server = RpcServer(dispatcher, app.socket_path,
                                    app.config["server.max_request_bytes"])
            try:
                await self.server.start()
            except OSError as exc:  # name the key: a typo there shows up only at a restart
                where = ("server.socket in config.toml" if app.config.get("server.socket")
                         else "the default socket path")
                raise OSError(exc.errno, f"cannot listen on {app.socket_path} ({where}): "
                                         f"{exc.strerror or exc}") from exc
        except BaseException as exc:
            log.error("daemon.start_failed", error=f"{type(exc).__name__}: {exc}"[:500])
            await self.stop_all(started)
            raise
        app.bound_socket = app.socket_path
        record = SocketRecord(app.home.socket_record)
        try:
            record.write(app.bound_socket)
        except OSError as exc:  # clients then go by config.toml alone
            log.warning("daemon.socket_record_failed", error=str(exc)[:300])
        log.info("daemon.ready", home=str(app.home.root), socket=str(app.socket_path),
                 pid=os.getpid())
        self.notifier.ready(await self.summary())
        status_task = loop.create_task(self._status_updates())
        await self.stop_event.wait()
        status_task.cancel()
        record.remove()
        log.info("daemon.stopping")
        self.notifier.stopping()
        await self.stop_all(started)

    async def stop_all(self, started: list[Any]) -> None:
        """Close the socket, then stop `started` in reverse order, all within one deadline
        (STOP_BUDGET_S, plus STOP_FLOOR_S for each component stopped after it passed), so
        SIGTERM ends the process inside SPEC's 10 s."""
        deadline = time.monotonic() + STOP_BUDGET_S
        if self.server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.stop(), STOP_BUDGET_S / 4)
        for component in reversed(started):
            name = type(component).__name__
            # Past the deadline a component still gets a moment, enough for the synchronous
            # part of its stop (the consolidation service flags its batch there).
            remaining = max(deadline - time.monotonic(), STOP_FLOOR_S)
            try:
                await asyncio.wait_for(component.stop(), remaining)
            except TimeoutError:
                log.error("daemon.stop_timeout", component=name)
            except Exception as exc:
                log.error("daemon.stop_failed", component=name, error=repr(exc)[:300])
            else:
                log.info("daemon.component_stopped", component=name)


def dump_threads() -> None:
    """SIGUSR1: every thread's current stack, as one `daemon.thread_dump` log event."""
    frames = sys._current_frames()
    threads = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident) if thread.ident is not None else None
        threads.append({"name": thread.name, "ident": thread.ident, "daemon": thread.daemon,
                        "stack": "".join(traceback.format_stack(frame)) if frame else ""})
    log.warning("daemon.thread_dump", count=len(threads), threads=threads)


def file_clock(path: Path) -> Any:
    """Test-only injected clock: "now" is the ISO timestamp in `path` (re-read every call).

    Inert unless MINIONS_TEST_CLOCK_FILE is set; tests move time by rewriting the file.
    """
    def now() -> datetime:
        return parse_iso(path.read_text().strip())

    return now


def crash_hook(spec: str) -> Any:
    """Test-only fault injection: SIGKILL this process at the N-th consolidation step.

    `spec` is `<step>:<n>` (e.g. `kb:3`) or `any:<n>`. Inert unless MINIONS_TEST_CRASH_AT is
    set; the crash-safety tests use it to stop the daemon between any two steps of a batch.
    """
    step_name, _, count = spec.partition(":")
    remaining = [int(count or "1")]

    def maybe_crash(step: str) -> None:
        if step_name in ("any", step):
            remaining[0] -= 1
            if remaining[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)

    return maybe_crash


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="minionsd", description="Run the minionsd daemon "
                                     "in the foreground.")
    parser.add_argument("--home", help="home directory (default $MINIONS_HOME or ~/.minions)")
    parser.add_argument("--config", help="config file (default <home>/config.toml)")
    parser.add_argument("--log-format", choices=("json", "console"))
    parser.add_argument("--version", action="version", version=f"minionsd {__version__}")
    return parser.parse_args(argv)


def build_components(daemon: Daemon, crash_at: Any = None) -> Wiring:
    """Background parts (watcher, consolidation, scheduler...) in start order, and what each
    serves."""
    from minionsd.service import components

    return components.build(daemon.app, daemon.notifier, crash_at=crash_at)


def _is_corrupt(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or (
        "malformed" in str(exc) or "not a database" in str(exc))


def database_problem(home: Home, exc: sqlite3.Error) -> str:
    """One line for a database the daemon cannot use: the file, the cause, the way out."""
    if _is_corrupt(exc):
        return (f"{home.db} is damaged ({exc}); restore a backup with `minionsctl --home "
                f"{home.root} restore BACKUP_DIR --force` (see docs/operations.md, "
                "\"Backup and restore\")")
    return f"cannot use the database {home.db}: {exc}"


def _login_name() -> str:
    """The daemon user's login name, found as `minionsctl note` finds its default author."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logsetup.configure(args.log_format)
    environ = dict(os.environ)
    # Before any thread starts (the database's pools): each would get a C heap of its own.
    log.debug("daemon.malloc_arenas", limit=malloc_arenas.limit(environ))
    home = Home(resolve_home(args.home, environ))
    config_path = Path(args.config).expanduser() if args.config else home.config
    try:
        config = config_mod.load(config_path, environ)
    except ConfigError as exc:
        print(f"minionsd: configuration error: {exc.detail}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        home.ensure()
        pidfile = PidFile(home.pidfile)
        pidfile.acquire()
    except MinionsError as exc:
        print(f"minionsd: {exc.detail}", file=sys.stderr)
        return EXIT_RUNTIME
    except OSError as exc:
        print(f"minionsd: cannot prepare home {home.root}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    try:
        db = Database(home.db)
    except (MinionsError, sqlite3.Error) as exc:
        pidfile.release()
        cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__
        if isinstance(cause, sqlite3.Error) and (_is_corrupt(cause) or exc is cause):
            print(f"minionsd: {database_problem(home, cause)}", file=sys.stderr)
        else:
            print(f"minionsd: {exc.detail}", file=sys.stderr)
        return EXIT_CONFIG
    except OSError as exc:
        pidfile.release()
        print(f"minionsd: cannot open the database {home.db}: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    app = App(home=home, config=config, db=db, environ=environ, login_name=_login_name(),
              recall_index=RecallIndex())
    clock_file = environ.get("MINIONS_TEST_CLOCK_FILE")
    if clock_file:
        app.clock = file_clock(Path(clock_file))
    crash_spec = environ.get("MINIONS_TEST_CRASH_AT")
    crash_at = crash_hook(crash_spec) if crash_spec else None
    daemon = Daemon(app, Notifier(environ))
    code = 0
    try:
        daemon.wiring = build_components(daemon, crash_at)
        asyncio.run(daemon.run())
    except MinionsError as exc:
        print(f"minionsd: {exc.detail}", file=sys.stderr)
        code = EXIT_RUNTIME
    except sqlite3.DatabaseError as exc:
        print(f"minionsd: {database_problem(home, exc)}", file=sys.stderr)
        code = EXIT_CONFIG if _is_corrupt(exc) else EXIT_RUNTIME
    except OSError as exc:
        print(f"minionsd: cannot start: {exc}", file=sys.stderr)
        code = EXIT_RUNTIME
    except Exception as exc:
        log.exception("daemon.failed")
        print(f"minionsd: failed unexpectedly: {type(exc).__name__}: {exc} "
              "(the log above has the traceback)", file=sys.stderr)
        code = EXIT_RUNTIME
    finally:
        db.close()
        app.workers.close()
        SocketRecord(home.socket_record).remove()
        pidfile.release()
        left = [t.name for t in threading.enumerate()
                if t is not threading.current_thread() and t.is_alive()]
        log.info("daemon.stopped", code=code, threads_left=left)
    return code


if __name__ == "__main__":
    sys.exit(main())
