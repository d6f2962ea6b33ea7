"""The daemon's shared state: home, current config, database, clock and run-time counters.

Transport-free: RPC handlers, jobs and the watcher all receive this object. Config can be
swapped at run time (config.set, SIGHUP); readers always look at `app.config`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from minionsd import __version__
from minionsd.clock import Clock, iso, system_clock
from minionsd.config import Config
from minionsd.errors import InvalidParams
from minionsd.home import Home
from minionsd.memory.filewarn import FileWarnings
from minionsd.storage.database import Database
from minionsd.threads import DaemonWorkers, run_in_daemon_thread

if TYPE_CHECKING:  # made by daemon.py: retrieval sits above this layer
    from minionsd.memory.retrieval.index import RecallIndex

RESTART_KEYS = ("server.socket", "server.max_request_bytes")
T = TypeVar("T")


@dataclass
class App:
    home: Home
    config: Config
    db: Database
    clock: Clock = system_clock
    environ: dict[str, str] = field(default_factory=dict)
    started_monotonic: float = field(default_factory=time.monotonic)
    version: str = __version__
    bound_socket: Path | None = None  # where the server listens; config may say otherwise
    # Last LLM and config-reload outcomes for `status` ({"at", "reason", ...}); see note_event.
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    login_name: str = ""  # the daemon user's login name (getpass.getuser at the entry point)
    # What retrieval keeps between calls for this database (one per open Database).
    recall_index: RecallIndex | None = None
    # Hand-edited files read with a warning (not UTF-8), for the log and `status.warnings`.
    file_warnings: FileWarnings = field(init=False)
    # The daemon threads blocking work runs on (file reads and writes, consolidation, jobs);
    # closed by whoever made this App, once nothing will be handed to them.
    workers: DaemonWorkers = field(default_factory=DaemonWorkers)

    def __post_init__(self) -> None:
        self.file_warnings = FileWarnings(self.home.root, lambda: self.clock())

    def now(self):
        return self.clock()

    async def off_loop(self, fn: Callable[..., T], *args: Any, name: str = "worker") -> T:
        """fn(*args) on one of this App's worker threads, awaited from the event loop."""
        return await run_in_daemon_thread(fn, *args, workers=self.workers, name=name)

    @property
    def socket_path(self) -> Path:
        configured = self.config.get("server.socket")
        return Path(configured).expanduser() if configured else self.home.default_socket

    def llm_api_key(self) -> str | None:
        return self.environ.get(self.config.get("llm.api_key_env")) or None

    def note_event(self, name: str, **fields: Any) -> None:
        """Remember the latest `name` event (llm_failure, llm_ok, config_reload_failure)."""
        self.events[name] = {"at": iso(self.clock()), **fields}

    def human_authors(self) -> frozenset[str]:
        """Authors whose writing gets `human` trust (SPEC §3.2): `trust.human_authors`, or the
        daemon user's login name when that list is empty."""
        listed = frozenset(name for name in self.config.get("trust.human_authors") or () if name)
        if listed:
            return listed
        return frozenset([self.login_name]) if self.login_name else frozenset()

    def notebook(self, agent: str) -> Path | None:
        """The agent's notebook path; None when it is a symlink leading out of
        knowledge/agents/: never followed (SPEC §2), so the notebook is neither read nor
        written, and the link is named in the log and `status.warnings`."""
        try:
            return self.home.notebook(agent)
        except InvalidParams:
            link = self.home.agents_dir / f"{agent}.md"
            if not link.is_symlink():
                raise
            self.file_warnings.replaced(link, "a symlink leading out of knowledge/agents/: "
                                              "never followed, so this notebook is neither "
                                              "read nor written")
            return None

    def uptime_s(self) -> float:
        return round(time.monotonic() - self.started_monotonic, 3)


class Surface:
    """A component that only adds RPC methods: nothing to start or stop."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
