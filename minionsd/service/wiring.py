"""What the daemon asks of its components, as typed lists (no looking up methods by name):
start and stop, RPC methods, a part of `status`, word of a config change. The lists are filled
by service/components.py, the one place that builds the components.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

Methods = dict[str, Callable[..., Awaitable[Any]]]


class Component(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class MethodSource(Protocol):
    def methods(self) -> Methods: ...


class StatusPart(Protocol):
    """A part of `status` that memory answers (status_now), or, when memory cannot (None),
    its own awaited read (status)."""

    def status_now(self) -> dict[str, Any] | None: ...

    async def status(self) -> dict[str, Any]: ...


class DiskStatusPart(Protocol):
    """A part of `status` that, when memory cannot answer, reads disk: status_reads runs on
    the light lane, shared by concurrent status calls, and status_from shapes what it read."""

    def status_now(self) -> dict[str, Any] | None: ...

    def status_reads(self, conn: Any) -> Any: ...

    def status_from(self, reads: Any) -> dict[str, Any]: ...


class ConfigListener(Protocol):
    async def config_changed(self, key: str | None) -> None: ...


@dataclass(frozen=True)
class Wiring:
    parts: list[Component] = field(default_factory=list)  # in start order; stopped in reverse
    methods: list[MethodSource] = field(default_factory=list)
    status: list[StatusPart] = field(default_factory=list)
    status_on_disk: list[DiskStatusPart] = field(default_factory=list)
    config_listeners: list[ConfigListener] = field(default_factory=list)
