"""SignalSafeLines (minionsd/agents/mcp_server.py): the stdio MCP server's input, read so that
SIGINT/SIGTERM ends the wait for the next line whenever the signal arrives."""

from __future__ import annotations

import io
import os
import signal
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.agents.mcp_server import SignalSafeLines

# x86_64 and aarch64 numbers of read, poll, select, pselect6 and ppoll: where a thread waiting
# for input sits.
WAITING_SYSCALLS = {0, 7, 23, 270, 271} if os.uname().machine == "x86_64" else {63, 72, 73}


def _syscall(tid: int) -> int | None:
    with open(f"/proc/self/task/{tid}/syscall") as f:
        first = f.read().split()[0]
    return int(first) if first.lstrip("-").isdigit() else None


class Stopped(Exception):
    pass


def _stop(_signum, _frame):
    raise Stopped


@pytest.fixture
def pipe():
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        try:
            os.close(fd)
        except OSError:
            pass


def test_a_signal_taken_by_another_thread_still_ends_the_wait(pipe):
    """The C-level handler may run on any thread; a blocking read() in the main thread is then
    never interrupted and the Python handler waits for the next line. Here it must not: the
    line only comes 10 s later, long after the wait should have ended."""
    read_fd, write_fd = pipe
    previous = signal.signal(signal.SIGUSR1, _stop)
    lines = SignalSafeLines(read_fd)
    written = []
    late = threading.Timer(10.0, lambda: written.append(os.write(write_fd, b"too late\n")))

    main = threading.get_native_id()

    def signal_from_here():
        while _syscall(main) not in WAITING_SYSCALLS:  # until the main thread waits for input
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

    other = threading.Thread(target=signal_from_here)
    try:
        late.start()
        other.start()
        with pytest.raises(Stopped):
            lines.readline(1024)
        assert not written, "the wait ended only when the next line came"
    finally:
        other.join()
        late.cancel()
        late.join()
        lines.close()
        signal.signal(signal.SIGUSR1, previous)


def test_close_gives_back_the_wakeup_fd_it_replaced(pipe):
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    lines = SignalSafeLines(pipe[0])
    lines.close()
    assert signal.set_wakeup_fd(before) == before


def _read_all(source, limit):
    out = []
    while line := source.readline(limit):
        out.append(line)
    return out


@settings(max_examples=150, deadline=None)
@given(data=st.lists(st.binary(max_size=40) | st.sampled_from([b"\n", b"a\n", b"\n\n"]),
                     max_size=12),
       limit=st.integers(min_value=1, max_value=50))
def test_lines_are_those_a_buffered_reader_gives(data, limit):
    """Written in arbitrary chunks, read back in the same lines, partial lines of `limit`
    bytes and a last line without its newline as io.BytesIO.readline(limit) gives them."""
    read_fd, write_fd = os.pipe()
    lines = SignalSafeLines(read_fd)
    try:
        writer = threading.Thread(target=lambda: ([os.write(write_fd, chunk) for chunk in data
                                                   if chunk], os.close(write_fd)))
        writer.start()
        got = _read_all(lines, limit)
        writer.join()
    finally:
        lines.close()
        os.close(read_fd)
    assert got == _read_all(io.BytesIO(b"".join(data)), limit)
