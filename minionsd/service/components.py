"""The daemon's background components, built and wired in start order.

Each component receives the parts of the others it uses as constructor arguments, so the
wiring is visible here and a missing part is an error at start-up, never a silent no-op. What
the daemon asks of them beyond start and stop (RPC methods, a part of `status`, word of a
config change) is named here too, in a Wiring (service/wiring.py).
"""

from __future__ import annotations

from collections.abc import Callable

from minionsd.memory import jobs
from minionsd.memory.app import App
from minionsd.memory.backup import BackupSurface
from minionsd.memory.browse import BrowseSurface
from minionsd.memory.recall import RecallSurface
from minionsd.memory.tokens import TokenSurface
from minionsd.memory.web_sessions import WebSessionSurface
from minionsd.service.consolidation import ConsolidationService
from minionsd.service.health import Health
from minionsd.service.schedule import Scheduler
from minionsd.service.surfaces import KnowledgeSurface
from minionsd.service.systemd import Notifier
from minionsd.service.watch import InboxWatcher
from minionsd.service.watch_kb import KnowledgeWatcher
from minionsd.service.wiring import Wiring


def build(app: App, notifier: Notifier, *,
          crash_at: Callable[[str], None] | None = None) -> Wiring:
    consolidation = ConsolidationService(app, crash_at=crash_at)
    inbox_watcher = InboxWatcher(app, on_change=consolidation.poke)
    kb_watcher = KnowledgeWatcher(app)
    upkeep = jobs.InboxUpkeep(
        check_watchers=(inbox_watcher.check_observer, kb_watcher.check_observer),
        scan=consolidation.scan_report, poke=consolidation.poke_threadsafe)
    recall = RecallSurface(app)
    surfaces = [
        KnowledgeSurface(app),
        recall,
        BrowseSurface(app, recall.telemetry),
        TokenSurface(app),
        WebSessionSurface(app),
        BackupSurface(app, pause_consolidation=consolidation.paused),
    ]
    scheduler = Scheduler(app, jobs.job_table(upkeep))
    health = Health(app, notifier, watchers_alive=inbox_watcher.healthy)
    return Wiring(
        parts=[consolidation, inbox_watcher, kb_watcher, *surfaces, scheduler, health],
        methods=[consolidation, *surfaces, scheduler],
        status=[scheduler, health],
        status_on_disk=[consolidation],
        config_listeners=[consolidation, scheduler],
    )
