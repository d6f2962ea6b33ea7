"""Shared fixtures: temp homes with short paths (sockets have a 107-byte limit) and a real
daemon process started on them (tests/harness.py's DaemonProcess, re-exported here with REPO
and wait_for)."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.harness import REPO, DaemonProcess, wait_for

__all__ = ["REPO", "DaemonProcess", "wait_for"]


@pytest.fixture
def short_home() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="mh-", dir="/tmp"))
    try:
        yield root / "home"
    finally:
        shutil.rmtree(root, ignore_errors=True)


# --- leak check: every test must leave no thread running and no file descriptor open -------

LEAK_GRACE_S = 5.0
# Threads a test may leave behind on purpose. Each entry says why it is allowed.
ALLOWED_THREAD_PREFIXES: tuple[str, ...] = (
    "pydevd.",  # a debugger attached to the test run
)


def _open_fds() -> dict[int, str]:
    """fd -> what it points at, for this process (empty where /proc is not mounted)."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return {}
    found = {}
    for name in names:
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the directory handle listdir used, already closed
    return found


def _leaked(before_threads: set[threading.Thread], before_fds: dict[int, str]
            ) -> tuple[list[str], list[str]]:
    threads = [t for t in threading.enumerate() if t not in before_threads and t.is_alive()
               and not t.name.startswith(ALLOWED_THREAD_PREFIXES)]
    fds = [f"{fd} -> {target}" for fd, target in _open_fds().items()
           if before_fds.get(fd) != target]
    return [f"{t.name} (daemon={t.daemon})" for t in threads], fds


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that leaves a thread running or a file descriptor open once it and all
    its fixtures are done (threads get LEAK_GRACE_S to finish). Mark a test with
    @pytest.mark.leaks_allowed("reason") to skip the check."""
    if request.node.get_closest_marker("leaks_allowed"):
        yield
        return
    before_threads = set(threading.enumerate())
    before_fds = _open_fds()
    yield
    deadline = time.monotonic() + LEAK_GRACE_S
    while True:
        threads, fds = _leaked(before_threads, before_fds)
        if not threads and not fds:
            return
        if time.monotonic() > deadline:
            break
        gc.collect()  # an unreferenced socket or file is closed by its finaliser
        time.sleep(0.05)
    pytest.fail(f"the test leaked {len(threads)} thread(s) and {len(fds)} fd(s): "
                f"threads {threads}, fds {fds}", pytrace=False)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
def make_daemon(short_home: Path, request: pytest.FixtureRequest
                ) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def factory(env: dict[str, str] | None = None, args: list[str] | None = None,
                home: Path | None = None, start: bool = True) -> DaemonProcess:
        daemon = DaemonProcess(home or short_home, env, args)
        started.append(daemon)
        return daemon.start() if start else daemon

    yield factory
    for daemon in started:
        daemon.kill()
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for daemon in started:
            print(f"--- daemon log ({daemon.home}) ---\n{daemon.log()}")


@pytest.fixture
def daemon(make_daemon: Callable[..., DaemonProcess]) -> DaemonProcess:
    return make_daemon()


from tests.fake_anthropic import fake_anthropic  # noqa: E402,F401 - fixture re-export
