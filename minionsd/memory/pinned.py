"""pinned.md: the operator's pinned context. These functions write only that file.

Entries appended here use the original dashboard's layout (a `### <title>` heading, the
content, and a `*Pinned by human on <date>*` signature) so existing tools keep parsing it.
"""

from __future__ import annotations

from datetime import datetime

from minionsd.clock import date_stamp
from minionsd.errors import InvalidParams
from minionsd.fileio import ReadWarnings, atomic_write_through, lock_for, read_text
from minionsd.home import Home

PINNED_HEADER = "# Pinned Context\n\nCritical notes visible to all agents."
MAX_PINNED_BYTES = 1_048_576
TITLE_MAX = 80


def code_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _check_text(text: object, allow_empty: bool) -> str:
    if not isinstance(text, str):
        raise InvalidParams("'text' must be a string", param="text")
    if not allow_empty and not text.strip():
        raise InvalidParams("'text' must not be empty", param="text")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_PINNED_BYTES:
        raise InvalidParams(f"'text' is larger than {MAX_PINNED_BYTES} bytes", param="text")
    return text


def get(home: Home, warnings: ReadWarnings | None = None) -> dict[str, object]:
    text = read_text(home.pinned, warnings) or ""
    return {"text": text, "code_units": code_units(text)}


def set_text(home: Home, text: object) -> dict[str, int]:
    value = _check_text(text, allow_empty=True)
    with lock_for(home.pinned):
        atomic_write_through(home.pinned, value)
    return {"code_units": code_units(value)}


def render_entry(text: str, now: datetime) -> str:
    """`### <title>` from the first line, the rest as content, then the signature."""
    lines = text.strip().splitlines()
    title = lines[0].lstrip("#").strip()[:TITLE_MAX] or "Note"
    content = "\n".join(lines[1:]).strip() or text.strip()
    return f"\n\n### {title}\n\n{content}\n\n*Pinned by human on {date_stamp(now)}*"


def append(home: Home, text: object, now: datetime,
           warnings: ReadWarnings | None = None) -> dict[str, int]:
    value = _check_text(text, allow_empty=False)
    with lock_for(home.pinned):
        current = read_text(home.pinned, warnings)
        base = current.rstrip("\n") if current and current.strip() else PINNED_HEADER
        updated = base + render_entry(value, now) + "\n"
        if len(updated.encode("utf-8", "surrogatepass")) > MAX_PINNED_BYTES:
            raise InvalidParams(f"pinned.md would exceed {MAX_PINNED_BYTES} bytes",
                                param="text")
        atomic_write_through(home.pinned, updated)
    return {"code_units": code_units(updated)}
