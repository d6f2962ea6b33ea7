"""Fixtures the unit tests share (tests/conftest.py holds the whole suite's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from minionsd.storage.database import connect, migrate


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A migrated state.db opened as the daemon opens its connections (a module may define
    its own `conn` instead)."""
    c = connect(tmp_path / "state.db")
    migrate(c)
    yield c
    c.close()
