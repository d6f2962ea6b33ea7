"""The home directory layout: every path minionsd uses comes from here.

Names and ids that arrive in requests are joined only through `safe_child`, which refuses
anything that could leave its base directory (separators, `..`, NUL, absolute paths, names
that are too long) and re-checks the resolved result.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from minionsd.errors import InvalidParams

KB_CATEGORIES = ("architecture", "conventions", "project-notes", "build-reports", "reviews")
MAX_NAME_BYTES = 200


def resolve_home(cli_home: str | None, environ: dict[str, str] | None = None) -> Path:
    environ = dict(os.environ) if environ is None else environ
    raw = cli_home or environ.get("MINIONS_HOME") or "~/.minions"
    return Path(raw).expanduser().absolute()


def check_name(name: object, what: str = "name", max_bytes: int = MAX_NAME_BYTES) -> str:
    """A single path component from a request: plain, bounded, not hidden."""
    if not isinstance(name, str) or not name:
        raise InvalidParams(f"{what} must be a non-empty string", param=what)
    if "\0" in name or "/" in name or "\\" in name:
        raise InvalidParams(f"{what} must not contain '/', '\\' or NUL", param=what)
    if name in (".", "..") or name.startswith("."):
        raise InvalidParams(f"{what} must not start with '.'", param=what)
    if len(name.encode("utf-8")) > max_bytes:
        raise InvalidParams(f"{what} is longer than {max_bytes} bytes", param=what)
    return name


def safe_child(base: Path, name: object, what: str = "name") -> Path:
    child = base / check_name(name, what)
    if child.resolve().parent != base.resolve():
        raise InvalidParams(f"{what} escapes its directory", param=what)
    return child


def safe_relative(home: Path, rel: object, what: str = "path") -> Path:
    """A home-relative path from a request (e.g. `knowledge/reviews/x.md`)."""
    if not isinstance(rel, str) or not rel:
        raise InvalidParams(f"{what} must be a non-empty string", param=what)
    if "\0" in rel:
        raise InvalidParams(f"{what} must not contain a NUL character", param=what)
    if rel.startswith("/") or "\\" in rel:
        raise InvalidParams(f"{what} must be relative to the home, with '/' separators",
                            param=what)
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            shown = "an empty" if not part else f"a '{part}'"
            raise InvalidParams(f"{what} {rel!r} has {shown} component", param=what)
        if part.startswith("."):
            raise InvalidParams(f"{what} component {part!r} starts with '.' (hidden files are "
                                "not served)", param=what)
        check_name(part, what)
    target = home.joinpath(*parts)
    resolved_home = home.resolve()
    if not target.resolve().is_relative_to(resolved_home):
        raise InvalidParams(f"{what} escapes the home directory", param=what)
    return target


@dataclass(frozen=True)
class Home:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def pinned(self) -> Path:
        return self.root / "pinned.md"

    @property
    def notes(self) -> Path:
        return self.root / "notes.md"

    @property
    def inbox(self) -> Path:
        return self.root / "notes" / "inbox"

    @property
    def archive(self) -> Path:
        return self.root / "notes" / "archive"

    @property
    def notes_history(self) -> Path:
        return self.archive / "notes-history.md"

    @property
    def quarantine(self) -> Path:
        return self.root / "notes" / "quarantine"

    @property
    def knowledge(self) -> Path:
        return self.root / "knowledge"

    @property
    def agents_dir(self) -> Path:
        return self.knowledge / "agents"

    @property
    def swept(self) -> Path:
        return self.knowledge / "_swept"

    @property
    def engine(self) -> Path:
        return self.root / "engine"

    @property
    def db(self) -> Path:
        return self.engine / "state.db"

    @property
    def default_socket(self) -> Path:
        return self.engine / "minionsd.sock"

    @property
    def pidfile(self) -> Path:
        return self.engine / "minionsd.pid"

    @property
    def socket_record(self) -> Path:
        """The running daemon's pid and bound socket (storage.pidfile.SocketRecord)."""
        return self.engine / "minionsd.bound"

    def category_dir(self, category: str) -> Path:
        if category not in KB_CATEGORIES:
            raise InvalidParams(
                f"category must be one of {', '.join(KB_CATEGORIES)}; got {category!r}",
                param="category",
            )
        return self.knowledge / category

    def notebook(self, agent_id: str) -> Path:
        return safe_child(self.agents_dir, f"{check_name(agent_id, 'agent')}.md", "agent")

    def rel(self, path: Path) -> str:
        """A home-relative path with '/' separators, as results report paths."""
        return path.relative_to(self.root).as_posix()

    def directories(self) -> list[Path]:
        """Every directory of the layout, each after its parent."""
        return [self.root / "notes", self.inbox, self.archive, self.quarantine, self.engine,
                self.knowledge, self.agents_dir, *(self.knowledge / c for c in KB_CATEGORIES)]

    def ensure(self) -> None:
        """Create whatever part of the layout is missing, every new directory 0700, so the
        home stays private even when its root was made another way (never touches existing
        files; only engine/ is always set to 0700)."""
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        for directory in self.directories():
            directory.mkdir(exist_ok=True, mode=0o700)
        os.chmod(self.engine, 0o700)
