"""service/malloc_arenas.py: the cap on glibc's malloc arenas, checked in a fresh interpreter
(the cap applies to threads created after it, so it cannot be tried in this process)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from minionsd.service import malloc_arenas

glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

# Eight threads, each allocating (bytes over 512 go to malloc) and holding until all have;
# then glibc's own per-arena report (malloc_stats, on stderr) and our count from the maps.
_PROGRAM = """
import ctypes, os, sys, threading
sys.path.insert(0, {root!r})
from minionsd.service import malloc_arenas
from tests.malloc_heaps import heaps
print(malloc_arenas.limit({environ!r}))
barrier = threading.Barrier(8)
def work():
    held = [bytes(4000 + i) for i in range(200)]
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(heaps(os.getpid()))
sys.stdout.flush()
ctypes.CDLL(None).malloc_stats()
"""


def _run(environ: dict[str, str]) -> tuple[str, int, int]:
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", _PROGRAM.format(root=root, environ=environ)],
                          capture_output=True, text=True, timeout=60, check=True)
    limit, heaps = done.stdout.split()
    return limit, int(heaps), done.stderr.count("Arena ")


@glibc
def test_threads_share_two_arenas_once_the_cap_is_set() -> None:
    limit, heaps, arenas = _run({})
    assert limit == str(malloc_arenas.ARENAS)
    assert arenas == malloc_arenas.ARENAS  # the main arena and one heap
    assert heaps == arenas - 1


@glibc
def test_without_the_cap_each_thread_gets_an_arena_and_the_heap_count_sees_them() -> None:
    # The check above could not fail if threads shared arenas anyway: here they do not.
    limit, heaps, arenas = _run({"MALLOC_ARENA_MAX": "chosen by the user"})
    assert limit == "None"
    assert arenas > malloc_arenas.ARENAS
    assert heaps == arenas - 1


def test_a_user_setting_is_left_alone() -> None:
    assert malloc_arenas.limit({"MALLOC_ARENA_MAX": "4"}) is None
