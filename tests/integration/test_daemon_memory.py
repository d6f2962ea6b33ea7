"""The daemon's threads share two C heaps (service/malloc_arenas.py), seen from outside in the
real daemon's memory map after every kind of thread has worked."""

from __future__ import annotations

import platform

import pytest

from minionsd.service import malloc_arenas
from tests.harness import DaemonProcess
from tests.malloc_heaps import heaps

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")


def test_the_daemons_threads_share_two_malloc_arenas(daemon: DaemonProcess) -> None:
    with daemon.client() as client:
        for n in range(40):  # the preparing threads and the writer
            client.call("memory.add", {"type": "semantic", "scope": "global", "trust": "agent",
                                       "source": "test", "title": f"Ledger fact {n}",
                                       "body": f"The ledger keeps journal {n} balanced. " * 20})
        for word in ("ledger", "journal", "balanced", "keeps"):  # the readers
            client.call("memory.search", {"query": word})
            task = {"id": "T-1", "title": f"fix the {word} totals"}
            client.call("memory.retrieve", {"task": task})
        client.call("status")
    assert heaps(daemon.proc.pid) <= malloc_arenas.ARENAS - 1  # the main arena is the other
