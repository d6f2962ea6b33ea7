"""Which background components the daemon runs, in start order."""

from __future__ import annotations

from typing import Any

from minionsd.app import App
from minionsd.backup import BackupSurface
from minionsd.consolidate.service import ConsolidationService
from minionsd.recall import RecallSurface
from minionsd.schedule import Scheduler
from minionsd.surfaces import KnowledgeSurface
from minionsd.watch import InboxWatcher
from minionsd.watch_kb import KnowledgeWatcher


def build(app: App) -> list[Any]:
    return [ConsolidationService(app), InboxWatcher(app), KnowledgeWatcher(app),
            KnowledgeSurface(app), RecallSurface(app), BackupSurface(app), Scheduler(app)]
