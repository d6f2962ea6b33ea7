"""Which background components the daemon runs, in start order."""

from __future__ import annotations

from typing import Any

from minionsd.app import App


def build(app: App) -> list[Any]:
    return []
