"""FileWarnings (status.warnings): a file read with U+FFFD is listed until it reads clean; one
written back with U+FFFD stays listed and says so (SPEC §2 v3)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from minionsd.fileio import read_text
from minionsd.memory.filewarn import REWRITTEN, FileWarnings

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def test_a_warning_lasts_until_the_file_reads_clean(tmp_path: Path) -> None:
    warnings = FileWarnings(tmp_path, lambda: NOW)
    path = tmp_path / "notes.md"
    path.write_bytes(b"digest caf\xe9\n")
    assert read_text(path, warnings) == "digest caf\ufffd\n"
    (item,) = warnings.list()
    assert item["file"] == "notes.md" and "offset 10" in item["reason"]
    assert item["at"] == "2026-12-01T00:00:00.000Z"
    read_text(path, warnings)
    assert len(warnings.list()) == 1
    # minionsd wrote it back as read: U+FFFD stands where the bytes were.
    path.write_text("digest caf\ufffd\nmore\n")
    read_text(path, warnings)
    assert [w["reason"] for w in warnings.list()] == [REWRITTEN]
    path.write_text("digest café\n")
    read_text(path, warnings)
    assert warnings.list() == []


def test_a_missing_file_is_none_and_a_gone_file_is_forgotten(tmp_path: Path) -> None:
    warnings = FileWarnings(tmp_path, lambda: NOW)
    assert read_text(tmp_path / "absent.md", warnings) is None
    path = tmp_path / "pinned.md"
    path.write_bytes(b"\xff")
    read_text(path, warnings)
    warnings.forget(path)
    assert warnings.list() == []
