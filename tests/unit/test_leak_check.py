"""The autouse leak check in tests/conftest.py fails a test that leaves a thread running or a
file descriptor open, and passes one that cleans up."""

from __future__ import annotations

import os
from pathlib import Path

pytest_plugins = ["pytester"]

INNER = '''
import os
import threading

import pytest

stop = threading.Event()


def test_leaks_a_thread():
    threading.Thread(target=stop.wait, name="forgotten-worker", daemon=True).start()


def test_leaks_a_file():
    test_leaks_a_file.handle = open(os.devnull)  # kept referenced, never closed


def test_cleans_up():
    worker = threading.Thread(target=lambda: None, name="tidy-worker")
    worker.start()
    with open(os.devnull):
        pass
    worker.join()


@pytest.mark.leaks_allowed("this test checks the opt-out")
def test_opted_out():
    threading.Thread(target=stop.wait, name="allowed-worker", daemon=True).start()


def test_zz_release():
    stop.set()
    test_leaks_a_file.handle.close()
'''


def test_the_leak_check_catches_threads_and_fds(pytester, monkeypatch):
    conftest = Path(__file__).resolve().parent.parent / "conftest.py"
    # the copied conftest imports tests.harness: the repository must be importable there
    repo = str(conftest.parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [repo, os.environ.get(
        "PYTHONPATH")])))
    pytester.makeconftest(conftest.read_text().replace("LEAK_GRACE_S = 5.0",
                                                       "LEAK_GRACE_S = 0.2"))
    pytester.makeini("[pytest]\nmarkers =\n    leaks_allowed(reason): opt out\n")
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=5, errors=2)
    output = result.stdout.str()
    assert "forgotten-worker" in output
    assert "-> /dev/null" in output
    assert "tidy-worker" not in output and "allowed-worker" not in output
