"""service/inotify.py: the event buffer the kernel hands back is read whole and right (names
padded with NULs, names that are not UTF-8, events about the directory itself), and a real
descriptor reports a change made in a watched directory before the call that made it returns."""

from __future__ import annotations

import os
import struct
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.service import inotify

NAMES = st.binary(min_size=0, max_size=40).filter(lambda b: b"\0" not in b and b"/" not in b)
EVENTS = st.lists(st.tuples(st.integers(-1, 2**31 - 1), st.integers(0, 2**32 - 1), NAMES,
                            st.integers(0, 3)), max_size=12)


def packed(wd: int, mask: int, name: bytes, pad: int) -> bytes:
    """As the kernel writes one event: the name NUL-terminated and padded."""
    raw = name + b"\0" * (1 + pad) if name else b""
    return struct.pack("iIII", wd, mask, 0, len(raw)) + raw


@given(EVENTS)
def test_a_buffer_of_events_is_read_back_event_by_event(events) -> None:
    data = b"".join(packed(*event) for event in events)
    assert inotify.parse(data) == [inotify.Event(wd, mask, os.fsdecode(name))
                                   for wd, mask, name, _pad in events]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_change_is_queued_before_the_call_that_made_it_returns(tmp_path) -> None:
    events = inotify.Inotify.open()
    assert events is not None
    try:
        wd = events.watch(str(tmp_path))
        assert wd is not None and events.read() == []
        (tmp_path / "a.md").write_text("x")
        os.rename(tmp_path / "a.md", tmp_path / "b\udcff.md")
        seen = events.read()  # no wait: already queued
        assert {e.name for e in seen} == {"a.md", "b\udcff.md"}
        assert all(e.wd == wd for e in seen)
        assert events.read() == []
        assert events.watch(str(tmp_path / "missing")) is None
    finally:
        events.close()
