"""fileio under concurrent writers: every temp file is its writer's own inode."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.fileio import (
    append_synced,
    atomic_write_text,
    create_new_text,
    fit_name,
    read_tail,
)


def _race(target, n: int) -> list[BaseException | None]:
    barrier = threading.Barrier(n)
    outcome: list[BaseException | None] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            target(i)
        except BaseException as exc:  # collected for the assertions
            outcome[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outcome


def test_create_new_text_one_winner_whose_text_is_intact(tmp_path: Path) -> None:
    for round_no in range(20):
        path = tmp_path / f"entry-{round_no}.md"
        texts = [f"text of writer {i}\n" * (50 + i) for i in range(8)]
        outcome = _race(lambda i, p=path, t=texts: create_new_text(p, t[i]), 8)
        winners = [i for i, exc in enumerate(outcome) if exc is None]
        assert len(winners) == 1
        assert all(isinstance(exc, FileExistsError) for exc in outcome if exc is not None)
        assert path.read_text() == texts[winners[0]]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"entry-{n}.md" for n in range(20))  # no temp file left behind


def test_atomic_write_text_concurrent_writers_leave_one_whole_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    texts = [f"{i}" * (10_000 + i) for i in range(8)]
    outcome = _race(lambda i: atomic_write_text(path, texts[i]), 8)
    assert outcome == [None] * 8
    assert path.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]


def test_quarantine_count_follows_quick_changes_and_old_directories(tmp_path: Path) -> None:
    import os

    from minionsd.memory.quarantine import QuarantineCount

    directory = tmp_path / "quarantine"
    count = QuarantineCount(directory)
    assert count.get() == 0
    directory.mkdir()
    for n in range(1, 30):  # many changes inside one coarse mtime tick
        (directory / f"n{n}.md").write_text("x")
        (directory / f"n{n}.md.reason.txt").write_text("why")
        assert count.get() == n
    os.utime(directory, (1_000_000_000, 1_000_000_000))  # an old, settled directory
    assert count.get() == 29
    assert count.get() == 29  # served from the cache
    (directory / "n1.md").unlink()
    assert count.get() == 28


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"),
               min_size=1, max_size=300), st.text("-.0123456789md", max_size=20))
def test_fit_name_keeps_the_suffix_and_fits(stem, suffix):
    fitted = fit_name(stem, suffix, 255)
    assert fitted.endswith(suffix) and len(fitted.encode("utf-8")) <= 255
    assert stem.startswith(fitted[: len(fitted) - len(suffix)])
    if len((stem + suffix).encode("utf-8")) <= 255:
        assert fitted == stem + suffix


def test_atomic_writes_work_for_the_longest_file_names(tmp_path):
    """The hidden temp name beside a 255-byte target is cut to a legal length."""
    for name in ("a" * 255, "é" * 127):
        atomic_write_text(tmp_path / name, "kept\n")
        assert (tmp_path / name).read_text() == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["a" * 255, "é" * 127])


def test_read_tail_gives_the_last_bytes_or_none(tmp_path) -> None:
    path = tmp_path / "history.md"
    assert read_tail(path, 10) is None
    path.write_bytes(b"0123456789abcdef")
    assert read_tail(path, 4) == b"cdef"
    assert read_tail(path, 100) == b"0123456789abcdef"
    path.write_bytes(b"")
    assert read_tail(path, 4) == b""


def test_append_synced_appends_and_keeps_the_mode(tmp_path) -> None:
    path = tmp_path / "history.md"
    atomic_write_text(path, "one\n")
    append_synced(path, "twö\n".encode())
    assert path.read_text(encoding="utf-8") == "one\ntwö\n"
    assert path.stat().st_mode & 0o777 == 0o600
    with pytest.raises(FileNotFoundError):
        append_synced(tmp_path / "missing.md", b"x")
