"""A consolidation batch's disk syncs do not grow with the notebooks it appends to: every
notebook the batch changes is replaced with the others, its texts flushed with the KB
entries' names and its rename with the archive's moves, so a batch with notebooks syncs as
often as one without. On a real home and state.db (no daemon). The crash tests
(tests/integration/test_crash_safety.py) show that each note is still filed exactly once
whatever step a kill interrupts."""

from __future__ import annotations

import os
import stat

import pytest

from minionsd import fileio
from minionsd.service.consolidation import ConsolidationService
from tests.harness import home_app

AGENTS = ("dallas", "yana", "omar", "kit")
CONFIG = "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n" + "".join(
    f"[agents.{name}]\nname = \"{name.title()}\"\n" for name in AGENTS)


@pytest.fixture
def counted(monkeypatch):
    """Counts the file syncs the daemon's Python code asks for (fsync and syncfs calls)."""
    calls: list[str] = []
    real_fsync, real_syncfs = os.fsync, fileio._syncfs

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def syncfs(path):
        calls.append("syncfs")
        return real_syncfs(path)

    monkeypatch.setattr(fileio.os, "fsync", fsync)
    monkeypatch.setattr(fileio, "_syncfs", syncfs)
    return calls


def land(app, authors: list[str], tag: str) -> None:
    for i, author in enumerate(authors):
        (app.home.inbox / f"{author}-{tag}-{i:02d}.md").write_text(
            f"---\nagent: {author}\n---\n# Finding {tag} {i}\n\nshard {tag}{i} drains first\n")


def test_a_batch_syncs_as_often_for_four_notebooks_as_for_none(short_home, counted):
    with home_app(short_home, CONFIG) as app:
        pipeline = ConsolidationService(app).pipeline
        land(app, [f"person{i}" for i in range(8)], "none")  # no configured agent
        counted.clear()
        assert pipeline.run(force=True).notebooks == {}
        no_notebook = len(counted)
        land(app, ["dallas"] * 8, "one")
        counted.clear()
        assert pipeline.run(force=True).notes == 8
        one_notebook = len(counted)
        assert one_notebook == no_notebook, (no_notebook, counted)
        land(app, [AGENTS[i % 4] for i in range(8)], "four")
        counted.clear()
        result = pipeline.run(force=True)
        assert result.notes == 8 and result.notebooks == {a: 2 for a in AGENTS}
        assert len(counted) == one_notebook, (one_notebook, counted)
        for author in AGENTS:
            text = (app.home.agents_dir / f"{author}.md").read_text()
            for i in range(8):
                if AGENTS[i % 4] == author:
                    assert text.count(f"shard four{i} drains first") == 1
        assert (app.home.agents_dir / "dallas.md").read_text().count("drains first") == 10
        assert not any(p.name.startswith(".") and ".tmp." in p.name
                       for p in app.home.agents_dir.iterdir())


def test_replace_all_writes_every_file_and_leaves_no_temp(tmp_path):
    files = [(tmp_path / "a.md", "new a\n"), (tmp_path / "sub" / "b.md", "new b\n")]
    (tmp_path / "a.md").write_text("old a\n")
    fileio.replace_all(files)
    assert [p.read_text() for p, _ in files] == ["new a\n", "new b\n"]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p, _ in files)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.md", "b.md"]


def test_replace_all_can_leave_the_renames_to_the_caller(tmp_path, counted):
    extra = tmp_path / "other"
    extra.mkdir()
    left = fileio.replace_all([(tmp_path / "a.md", "a\n"), (tmp_path / "b.md", "b\n")],
                              also_flush=[extra], flush_directories=False)
    assert left == [tmp_path] and (tmp_path / "b.md").read_text() == "b\n"
    assert len(counted) in (1, 3)  # one syncfs, or an fsync per temp file and directory


def test_replace_all_changes_nothing_when_a_file_cannot_be_written(tmp_path):
    (tmp_path / "a.md").write_text("old a\n")
    (tmp_path / "blocker").write_text("a file where a directory should be\n")
    with pytest.raises(OSError):
        fileio.replace_all([(tmp_path / "a.md", "new a\n"),
                            (tmp_path / "blocker" / "b.md", "new b\n")])
    assert (tmp_path / "a.md").read_text() == "old a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md", "blocker"]
