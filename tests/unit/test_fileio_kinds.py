"""fileio's readers on paths that are not regular files: a directory, a FIFO, a socket, a
character device, a symlink loop. None of them blocks; each is read as missing (with a warning
naming what it is) or refused with NotRegularFile, as its caller needs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from minionsd.fileio import (
    NotRegularFile,
    append_synced,
    atomic_write_text,
    check_regular,
    open_for_writing,
    read_shown,
    read_tail,
    read_text,
    replace_all,
)


class Heard:
    """A fileio.ReadWarnings that keeps what it was told, by path."""

    def __init__(self) -> None:
        self.reasons: dict[Path, str] = {}

    def replaced(self, path: Path, reason: str) -> None:
        self.reasons[path] = reason

    def clean(self, path: Path, text: str) -> None:
        self.reasons.pop(path, None)


def odd(tmp_path: Path, kind: str) -> tuple[Path, list[socket.socket]]:
    path = tmp_path / "pinned.md"
    held = []
    if kind == "directory":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        held.append(sock)
    else:
        os.symlink("/dev/zero", path)  # a device that never ends
    return path, held


@pytest.mark.parametrize("kind", ["directory", "FIFO", "socket", "character device"])
def test_a_path_that_is_not_a_regular_file_reads_as_missing_with_a_warning(tmp_path, kind):
    path, held = odd(tmp_path, kind)
    try:
        heard = Heard()
        assert read_text(path, heard) is None
        assert heard.reasons[path].startswith(f"is a {kind}, not a regular file")
        assert read_shown(path, heard) is None
        with pytest.raises(NotRegularFile, match=f"is a {kind}, not a regular file"):
            read_tail(path, 100)
        with pytest.raises(NotRegularFile) as raised:
            check_regular(path)
        assert raised.value.filename == str(path) and raised.value.kind == f"a {kind}"
        if kind != "directory":  # opening a directory to write is EISDIR already
            with pytest.raises(NotRegularFile):
                append_synced(path, b"more")
    finally:
        for sock in held:
            sock.close()


def test_the_warning_goes_when_the_file_is_regular_again_or_gone(tmp_path):
    path = tmp_path / "notes.md"
    os.mkfifo(path)
    heard = Heard()
    read_text(path, heard)
    assert path in heard.reasons
    path.unlink()
    assert read_text(path, heard) is None and heard.reasons == {}
    os.mkfifo(path)
    read_text(path, heard)
    path.unlink()
    path.write_text("regular now\n")
    assert read_text(path, heard) == "regular now\n" and heard.reasons == {}
    assert read_tail(path, 4) == b"now\n"
    check_regular(path)
    check_regular(tmp_path / "absent.md")
    append_synced(path, b"more\n")
    assert path.read_text() == "regular now\nmore\n"


def test_a_symlink_loop_fails_read_text_but_read_shown_skips_it(tmp_path):
    path = tmp_path / "pinned.md"
    os.symlink(path.name, path)
    with pytest.raises(OSError):
        read_text(path)  # a caller that rewrites the file must not take it for empty
    heard = Heard()
    assert read_shown(path, heard) is None
    assert heard.reasons[path].startswith("cannot be read (too many levels of symbolic links)")


def test_a_symlink_to_a_regular_file_is_read_through(tmp_path):
    (tmp_path / "real.md").write_text("through the link\n")
    os.symlink("real.md", tmp_path / "pinned.md")
    assert read_text(tmp_path / "pinned.md") == "through the link\n"


def test_open_for_writing_tells_a_file_a_writer_still_holds(tmp_path):
    path = tmp_path / "ripley-slow.md"
    with open(path, "w") as writer:
        writer.write("---\ntitle: slow\n")
        writer.flush()
        assert open_for_writing(path) is True
        with open(path) as reader:  # readers do not count
            assert reader.read(3) == "---"
            assert open_for_writing(path) is True
    assert open_for_writing(path) is False
    with open(path) as reader:
        assert open_for_writing(path) is False
    assert open_for_writing(tmp_path / "gone.md") is None


def test_writing_over_a_directory_names_the_file_not_the_temp(tmp_path):
    target = tmp_path / "notes.md"
    target.mkdir()
    for write in (lambda: atomic_write_text(target, "digest\n"),
                  lambda: replace_all([(target, "digest\n")])):
        with pytest.raises(IsADirectoryError) as raised:
            write()
        assert raised.value.filename == str(target) and raised.value.filename2 is None
    assert [p.name for p in tmp_path.iterdir()] == ["notes.md"]  # no temp file left
