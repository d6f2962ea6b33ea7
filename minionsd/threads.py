"""Run blocking work on a daemon thread and await it from the loop.

asyncio.to_thread uses the default executor, which interpreter shutdown waits for; a hung LLM
call there would hold up SIGTERM. A daemon thread is abandoned instead, which is safe for our
work because every step it takes is journalled or idempotent.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_in_daemon_thread(fn: Callable[..., T], *args: Any, name: str = "worker") -> T:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def hand_back(setter: Callable[[Any], None], value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, setter, value)
        except RuntimeError:
            pass  # the loop closed during shutdown; nobody waits for this result any more

    def target() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:
            hand_back(future.set_exception, exc)
        else:
            hand_back(future.set_result, result)

    threading.Thread(target=target, name=name, daemon=True).start()
    return await future
