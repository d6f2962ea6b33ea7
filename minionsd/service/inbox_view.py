"""status's inbox figures (pending, eligible, held, quarantined) kept in memory, exact.

A full look at notes/inbox/ is a listing, a `stat` per note and a few SQL reads: under load,
with hundreds of notes waiting, it was most of what `status` cost, and each of those system
calls gives the interpreter lock away and waits to get it back. The view keeps what the last
look found, note by note, and knows when that is no longer what a look would find now:

* the directories: an inotify descriptor on notes/inbox/ and notes/quarantine/, read by the
  event loop whenever it is readable (service/inotify.py). The kernel queues an event before
  the call that made the change returns, so a change made before a `status` request was sent
  is taken in before that request is handled. The names it reports are looked at again, and
  only they; a queue overflow, or a watched directory going away, means a full look.
* the database: holds and which notes open batches hold change only by the daemon's own
  commits; storage/live_counts.py reads them again on the writer after such a commit, before
  its callers hear back (`inbox`). A name inbox.submit claims always arrives with its file
  (an event), and inbox.submit tells the view as it places it (claimed); a claim pruned
  after a day names a note settled either way.
* time: a note still settling becomes eligible (or is quarantined) by time alone, so while
  the view holds one it is not trusted; and a full look is taken at least every FULL_EVERY_S
  (changes inotify cannot see: a write through a hard link from outside the inbox).

When nothing moved, `status` answers from memory on the loop (figures_now); otherwise one
trip to the light lane brings the view up to date (refresh) for every status waiting. Where
inotify is missing (not Linux), every refresh is a full look, as before.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import structlog

from minionsd.memory.app import App
from minionsd.memory.inbox import Inbox, InboxNote, WouldMove, is_candidate_name
from minionsd.memory.quarantine import QuarantineCount
from minionsd.service import inotify
from minionsd.storage import journal, submissions

log = structlog.get_logger()
FULL_EVERY_S = 30.0
LOOP_NAMES = 16  # at most this many changed names are looked at on the loop
CLAIMS_KEPT = 4096


class InboxView:
    def __init__(self, app: App, inbox: Inbox, quarantined: QuarantineCount) -> None:
        self.app = app
        self.inbox = inbox
        self.quarantined = quarantined
        self._lock = threading.Lock()
        # What the directories' events said since the last refresh (guarded by _lock).
        self._changed: set[str] = set()
        self._full = True  # look at everything next time
        self._quarantine_moved = True
        # The view (written by refresh on the light lane, read on the loop).
        self._notes: dict[str, InboxNote] = {}
        self._submitted: set[str] = set()
        self._figures: dict[str, int] | None = None
        self._settling = False  # a note in the view is still settling
        self._version = -1  # live counts' inbox_version when holds and batches were read
        self._full_at = 0.0
        self._refreshing = False
        self._looking = threading.Lock()  # one look at a time (the loop's or the light lane's)
        self._claimed: set[str] = set()  # placed by inbox.submit, claim committed
        self._events: inotify.Inotify | None = None
        self._inbox_wd: int | None = None
        self._quarantine_wd: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- events (on the loop) -----------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._events = inotify.Inotify.open()
        if self._events is None:
            return
        self._loop = loop
        self._watch()
        loop.add_reader(self._events.fd, self._take_events)

    def stop(self) -> None:
        if self._events is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._events.fd)
        self._events.close()
        self._events = None

    def _watch(self) -> None:
        """(Re)add both watches; a directory missing now is looked at in full every time."""
        assert self._events is not None
        self._inbox_wd = self._events.watch(str(self.app.home.inbox))
        self._quarantine_wd = self._events.watch(str(self.app.home.quarantine))

    def _take_events(self) -> None:
        if self._events is None:
            return
        try:
            events = self._events.read()
        except OSError as exc:
            log.warning("inbox_view.read_failed", error=str(exc))
            events = [inotify.Event(-1, inotify.IN_Q_OVERFLOW, "")]
        with self._lock:
            for event in events:
                if event.mask & inotify.IN_Q_OVERFLOW:
                    self._full = self._quarantine_moved = True
                elif event.wd == self._inbox_wd:
                    if event.mask & inotify.GONE:
                        self._full, self._inbox_wd = True, None
                    elif is_candidate_name(event.name):  # others are never counted
                        self._changed.add(event.name)
                elif event.wd == self._quarantine_wd:
                    self._quarantine_moved = True
                    if event.mask & inotify.GONE:
                        self._quarantine_wd = None

    def invalidate(self) -> None:
        """Look at everything next time (the inbox settings changed)."""
        with self._lock:
            self._full = self._quarantine_moved = True

    def claimed(self, name: str) -> None:
        """inbox.submit is placing `name` in the transaction that claims it: a note complete
        on arrival, which needs no settling time (told before the file appears, so its event
        finds the claim known; the claim counts from then on, like the write it belongs to,
        whose caller has not heard back)."""
        with self._lock:
            self._claimed.add(name)

    def unclaimed(self, name: str) -> None:
        """The transaction that claimed `name` failed: the file, if placed, settles as any."""
        with self._lock:
            self._claimed.discard(name)
            self._changed.add(name)

    def _current(self) -> bool:
        """Everything but the names in _changed and the database's holds and open batches
        is as a look now would find it (called with _lock)."""
        return not (self._full or self._quarantine_moved or self._refreshing
                    or self._events is None or self._inbox_wd is None
                    or self._quarantine_wd is None or self._settling
                    or self._figures is None
                    or time.monotonic() - self._full_at > FULL_EVERY_S)

    def figures_now(self) -> dict[str, int] | None:
        """The inbox figures when the view is, or can be made here, exactly what a look now
        would find; else None (then refresh() on the light lane). On the loop: holds and
        open batches come from live counts (read on the writer after the commit that changed
        them); when a few names changed, and none of them needs the database (a note
        settling whose claim is unknown) or would be quarantined, they are looked at here (a
        `stat` each, a read of a new note), saving the trip to the light lane."""
        inbox = self.app.db.live.inbox
        with self._lock:
            if not self._current() or len(self._changed) > LOOP_NAMES or inbox is None:
                return None
            if not self._changed and inbox[0] == self._version:
                return self._figures
        if not self._looking.acquire(blocking=False):
            return None  # a refresh is under way on the light lane
        try:
            with self._lock:
                if not self._current():
                    return None
                changed, self._changed = self._changed, set()
            try:
                return self._look_here(changed, inbox)
            except (WouldMove, OSError):
                with self._lock:  # the light lane looks at them (and quarantines)
                    self._changed |= changed
                return None
        finally:
            self._looking.release()

    def _look_here(self, changed: set[str],
                   inbox: tuple[int, frozenset[str], frozenset[str]]) -> dict[str, int]:
        version, holds, busy = inbox
        notes = dict(self._notes)
        with self._lock:
            complete = self._submitted | self._claimed
        settings = self._settings(set(holds))
        for name in changed:
            note = self.inbox.examine(name, **settings, complete=name in complete,
                                      may_move=False)
            if note is not None and not note.settled:
                raise WouldMove(name)  # settling or not is the database's to say
            if note is None:
                notes.pop(name, None)
            else:
                notes[name] = note
        return self._keep(notes, complete & notes.keys(), set(holds), set(busy), version,
                          self._figures["quarantined"], changed - notes.keys())

    def _settings(self, holds: set[str]) -> dict[str, Any]:
        cfg = self.app.config
        return {"max_bytes": cfg["engine.inbox_max_note_bytes"],
                "settle_ms": cfg["engine.inbox_settle_ms"], "held_names": holds,
                "configured_agents": cfg.agents}

    def _keep(self, notes: dict[str, InboxNote], submitted: set[str], holds: set[str],
              busy: set[str], version: int, quarantined: int,
              gone: set[str]) -> dict[str, int]:
        held = [note.name in holds or note.meta.get("hold") is True for note in notes.values()]
        figures = {"pending": len(notes),
                   "eligible": sum(1 for note, h in zip(notes.values(), held, strict=True)
                                   if note.settled and not h and note.name not in busy),
                   "held": sum(held), "quarantined": quarantined}
        settling = any(not note.settled for note in notes.values())
        with self._lock:
            self._notes, self._submitted = notes, submitted
            self._claimed -= gone  # a claim whose note is not placed yet stays
            if len(self._claimed) > CLAIMS_KEPT:  # the database says it as well
                self._claimed.clear()
            self._settling, self._version, self._figures = settling, version, figures
        return figures

    # --- looking (on the light lane) ----------------------------------------------------------

    def refresh(self, conn: Any) -> dict[str, int]:
        """Bring the view up to date and return its figures: the names the directory's events
        reported (and notes still settling) are looked at again, or everything when a full
        look is due. Runs on the light lane (conn is its read connection)."""
        with self._looking:
            with self._lock:
                changed, self._changed = self._changed, set()
                full = self._full or self._events is None or self._inbox_wd is None \
                    or time.monotonic() - self._full_at > FULL_EVERY_S
                quarantine_moved = self._quarantine_moved or self._quarantine_wd is None
                self._full = self._quarantine_moved = False
                self._refreshing = True  # figures_now answers None until the view is whole
                if self._events is not None and (self._inbox_wd is None
                                                 or self._quarantine_wd is None):
                    self._watch()
            try:
                return self._look(conn, changed, full, quarantine_moved)
            except BaseException:
                with self._lock:  # what was taken is looked at again, in full, next time
                    self._full = self._quarantine_moved = True
                raise
            finally:
                with self._lock:
                    self._refreshing = False

    def _look(self, conn: Any, changed: set[str], full: bool,
              quarantine_moved: bool) -> dict[str, int]:
        inbox = self.app.db.live.inbox
        if inbox is not None:
            version, holds, busy = inbox[0], set(inbox[1]), set(inbox[2])
        else:  # live counts failed to read them: the database, and never trusted on the loop
            version = -1
            holds = submissions.held_names(conn)
            busy = journal.names_in_open_batches(conn)
        moved_before = self.inbox.quarantined_here
        settings = self._settings(holds)
        if full:
            self._full_at = time.monotonic()
            try:
                names = [entry.name for entry in os.scandir(self.app.home.inbox)]
            except FileNotFoundError:
                names = []
            submitted = set(submissions.submitted_among(conn, names))
            notes = {note.name: note for note in self.inbox.scan(
                **settings, complete_names=frozenset(submitted))}
        else:
            notes = dict(self._notes)
            again = changed | {name for name, note in notes.items() if not note.settled}
            fresh = submissions.submitted_among(conn, sorted(again)) if again else frozenset()
            submitted = (self._submitted - again) | set(fresh)
            for name in again:
                note = self.inbox.examine(name, **settings, complete=name in fresh)
                if note is None:
                    notes.pop(name, None)
                else:
                    notes[name] = note
        if quarantine_moved or self._figures is None \
                or self.inbox.quarantined_here != moved_before:  # this look moved a file
            quarantined = self.quarantined.get()
        else:
            quarantined = self._figures["quarantined"]
        gone = set(self._claimed) - notes.keys() if full else changed - notes.keys()
        return self._keep(notes, submitted & notes.keys(), holds, busy, version, quarantined,
                          gone)
