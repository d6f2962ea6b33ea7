"""The inbox view status keeps (service/inbox_view.py) on a real home, state.db and inotify:
after any mix of changes to the inbox its figures equal a plain full look, it answers from
memory only while nothing moved, and it looks again only at the names that changed."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import sys

import pytest

from minionsd.home import Home
from minionsd.memory.app import App
from minionsd.memory.inbox import Inbox
from minionsd.memory.quarantine import QuarantineCount
from minionsd.service import inotify
from minionsd.service.inbox_view import LOOP_NAMES, InboxView
from minionsd.storage import journal, submissions
from tests.harness import home_app

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")


@pytest.fixture
def app(short_home):
    with home_app(short_home, "[engine]\ninbox_settle_ms = 0\n") as made:
        yield made


class CountingInbox(Inbox):
    """A real Inbox that also counts the names looked at one by one."""

    def __init__(self, home: Home) -> None:
        super().__init__(home)
        self.examined: list[str] = []

    def examine(self, name, **kwargs):
        self.examined.append(name)
        return super().examine(name, **kwargs)


def full_look(app: App) -> dict[str, int]:
    """The figures as status computed them before the view: a full scan of a new Inbox."""
    def reads(conn):
        names = [e.name for e in os.scandir(app.home.inbox)]
        return (submissions.held_names(conn), journal.names_in_open_batches(conn),
                submissions.submitted_among(conn, names))
    holds, busy, submitted = app.db.read_blocking(reads)
    notes = Inbox(app.home).scan(max_bytes=app.config["engine.inbox_max_note_bytes"],
                                 settle_ms=app.config["engine.inbox_settle_ms"],
                                 held_names=holds, configured_agents=app.config.agents,
                                 complete_names=submitted)
    return {"pending": len(notes),
            "eligible": sum(1 for n in notes if n.settled and not n.held and n.name not in busy),
            "held": sum(1 for n in notes if n.held),
            "quarantined": QuarantineCount(app.home.quarantine).get()}


async def events_taken() -> None:
    """Let the loop read the inotify descriptor (queued by the kernel already)."""
    for _ in range(3):
        await asyncio.sleep(0)


def write(app: App, name: str, text: str = "A note about the cache.", hold: bool = False):
    front = "---\nhold: true\n---\n" if hold else ""
    (app.home.inbox / name).write_text(f"{front}# {name}\n\n{text}\n")


def test_memory_answers_only_while_nothing_moved(app):
    view = InboxView(app, Inbox(app.home), QuarantineCount(app.home.quarantine))

    async def run() -> None:
        view.start(asyncio.get_running_loop())
        try:
            assert view.figures_now() is None  # nothing looked at yet
            write(app, "a.md")
            await events_taken()
            figures = app.db.read_blocking(view.refresh)
            assert figures == full_look(app) and figures["pending"] == 1
            await events_taken()
            assert view.figures_now() == figures
            write(app, "b.md")
            await events_taken()
            assert view.figures_now() == full_look(app)  # a new note, looked at on the loop
            assert view.figures_now()["pending"] == 2
            (app.home.inbox / "bad.md").write_bytes(b"# bad\n\xff\n")
            await events_taken()
            assert view.figures_now() is None  # to be quarantined: not on the loop
            assert (app.home.inbox / "bad.md").exists()
            assert app.db.read_blocking(view.refresh) == full_look(app)
            assert not (app.home.inbox / "bad.md").exists()
            await events_taken()  # the move itself is seen: one more look, then quiet
            assert app.db.read_blocking(view.refresh)["quarantined"] == 1
            await events_taken()
            assert view.figures_now()["quarantined"] == 1
            for n in range(LOOP_NAMES + 1):
                write(app, f"burst-{n}.md")
            await events_taken()
            assert view.figures_now() is None  # too many names for the loop
            assert app.db.read_blocking(view.refresh) == full_look(app)
            await app.db.write(submissions.set_hold, "a.md", True, app.now())
            # a hold in state.db: live counts read the holds again after that commit
            assert view.figures_now() == full_look(app) and full_look(app)["held"] == 1
            (app.home.quarantine / "q.md").write_text("x")
            await events_taken()
            assert view.figures_now() is None
            assert app.db.read_blocking(view.refresh)["quarantined"] == 2
            view.invalidate()
            assert view.figures_now() is None
        finally:
            view.stop()

    asyncio.run(run())


def test_a_refresh_looks_again_only_at_the_names_that_changed(app):
    inbox = CountingInbox(app.home)
    view = InboxView(app, inbox, QuarantineCount(app.home.quarantine))

    async def run() -> None:
        view.start(asyncio.get_running_loop())
        try:
            for n in range(40):
                write(app, f"n{n}.md")
            app.db.read_blocking(view.refresh)
            await events_taken()
            app.db.read_blocking(view.refresh)  # the 40 creations, one by one
            inbox.examined.clear()
            write(app, "n3.md", "changed in place")
            (app.home.inbox / "n7.md").unlink()
            await events_taken()
            assert app.db.read_blocking(view.refresh) == full_look(app)
            assert sorted(set(inbox.examined)) == ["n3.md", "n7.md"]
        finally:
            view.stop()

    asyncio.run(run())


def finish(conn, batch_id, now) -> None:
    journal.set_digest(conn, batch_id, "regex", None)
    journal.finish(conn, batch_id, now, False)


@pytest.mark.parametrize("seed", range(6))
def test_after_any_mix_of_changes_the_view_equals_a_full_look(app, seed):
    mix_of_changes(app, seed)


@pytest.mark.parametrize("seed", range(3))
def test_without_inotify_the_figures_are_still_exact(app, seed, monkeypatch):
    """Where no inotify descriptor can be had (not Linux, or the user's inotify instances all
    taken), the view looks at the whole inbox for each answer instead: still exact."""
    monkeypatch.setattr(inotify.Inotify, "open", classmethod(lambda cls: None))
    mix_of_changes(app, seed)


def mix_of_changes(app: App, seed: int) -> None:
    rng = random.Random(seed)
    view = InboxView(app, Inbox(app.home), QuarantineCount(app.home.quarantine))
    names = [f"note-{n}.md" for n in range(12)] + [".hidden.md", "draft.md.swp"]
    batches: list[str] = []
    numbers = itertools.count()

    async def run() -> None:
        view.start(asyncio.get_running_loop())
        try:
            for _ in range(40):
                for _ in range(rng.randrange(1, 4)):
                    name = rng.choice(names)
                    path = app.home.inbox / name
                    op = rng.choice(["write", "hold", "remove", "rename", "touch", "dbhold",
                                     "unhold", "quarantine", "batch", "finish"])
                    if op in ("write", "hold"):
                        write(app, name, f"text {rng.random()}", hold=op == "hold")
                    elif op == "remove":
                        path.unlink(missing_ok=True)
                    elif op == "rename" and path.exists():
                        os.rename(path, app.home.inbox / rng.choice(names))
                    elif op == "touch" and path.exists():
                        os.utime(path)
                    elif op in ("dbhold", "unhold"):
                        await app.db.write(submissions.set_hold, name, op == "dbhold",
                                           app.now())
                    elif op == "batch":  # an open batch holds the note: not eligible
                        batches.append(f"b{next(numbers)}")
                        await app.db.write(journal.create, batches[-1], "2026-06-01",
                                           app.now(), [{"name": name, "content": "x",
                                                        "content_hash": "h", "author": "a",
                                                        "role": "note"}])
                    elif op == "finish" and batches:
                        await app.db.write(finish, batches.pop(0), app.now())
                    elif op == "quarantine" and path.exists():
                        os.rename(path, app.home.quarantine / f"{rng.random()}.md")
                await events_taken()
                now = view.figures_now()
                if now is None:
                    now = app.db.read_blocking(view.refresh)
                assert now == full_look(app)
        finally:
            view.stop()

    asyncio.run(run())


@pytest.fixture
def slow_app(short_home):
    with home_app(short_home, "[engine]\ninbox_settle_ms = 600000\n") as made:
        yield made


def test_a_settling_note_is_the_databases_to_judge_unless_its_claim_is_known(slow_app):
    """A note younger than inbox_settle_ms is eligible only if inbox.submit wrote it (a claim
    in state.db): the loop never guesses that; a claim it was told of is enough."""
    app = slow_app
    view = InboxView(app, Inbox(app.home), QuarantineCount(app.home.quarantine))

    async def run() -> None:
        view.start(asyncio.get_running_loop())
        try:
            await events_taken()
            assert app.db.read_blocking(view.refresh) == full_look(app)
            await app.db.write(submissions.claim_name, "sent.md", "hash", app.now())
            view.claimed("sent.md")
            write(app, "sent.md")
            await events_taken()
            assert view.figures_now() == full_look(app) == {
                "pending": 1, "eligible": 1, "held": 0, "quarantined": 0}
            await app.db.write(submissions.claim_name, "other.md", "hash2", app.now())
            write(app, "other.md")  # claimed in state.db, but the view was not told
            await events_taken()
            assert view.figures_now() is None
            assert app.db.read_blocking(view.refresh) == full_look(app)
            assert full_look(app)["eligible"] == 2
            write(app, "by-hand.md")  # settling: pending, not eligible, and not on the loop
            await events_taken()
            assert view.figures_now() is None
            assert app.db.read_blocking(view.refresh) == full_look(app) == {
                "pending": 3, "eligible": 2, "held": 0, "quarantined": 0}
            assert view.figures_now() is None  # still settling
        finally:
            view.stop()

    asyncio.run(run())
