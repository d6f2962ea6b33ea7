"""Human-readable output for minionsctl: plurals, tables, labelled fields, plain values, sizes,
times, and a generic `key: value` rendering for anything a formatter does not know.

Nothing here prints a Python repr or JSON: values become words (`yes`, `-`, `a, b`), nested
objects become indented `key: value` lines. Whatever a command prints passes `printable` (or,
under --json, `json_text`): stored text is written by agents, and a terminal must not obey it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

_ES_ENDINGS = ("s", "x", "z", "ch", "sh")
# C0 controls but tab and newline, DEL, and the C1 controls (U+0080-U+009F; U+009B is CSI): a
# terminal acts on them (clears the screen, retitles the window, hides or overwrites a line).
# A CRLF is one line break.
_CONTROLS = re.compile(r"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f]")  # json.dumps escapes C0 but not these


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    return "\n" if char == "\r\n" else f"\\x{ord(char):02x}"


def printable(value: str) -> str:
    """`value` for a terminal: each control character but newline and tab shown as `\\x1b`
    (a CRLF as a newline), so text an agent stored cannot drive the terminal that shows it."""
    return _CONTROLS.sub(_visible, value)


def json_text(value: str) -> str:
    """JSON text with DEL and the C1 controls escaped as `\\u009b` (json.dumps with
    ensure_ascii=False escapes only C0): the same JSON value, safe on a terminal."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`1 KB entry`, `2 KB entries`, `0 notes`: the count and the noun, inflected.

    Only the last word of `singular` is inflected; pass `plural_form` for irregular nouns.
    """
    if count == 1:
        noun = singular
    elif plural_form is not None:
        noun = plural_form
    else:
        head, _, last = singular.rpartition(" ")
        if len(last) > 1 and last.endswith("y") and last[-2] not in "aeiou":
            last = last[:-1] + "ies"
        elif last.endswith(_ES_ENDINGS):
            last += "es"
        else:
            last += "s"
        noun = f"{head} {last}" if head else last
    return f"{count:,} {noun}"


def text(value: Any) -> str:
    """One value as words: None is `-`, booleans `yes`/`no`, lists comma-separated, control
    characters visible (`printable`)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value) if value else "none"
    if isinstance(value, dict):
        return inline(value) if value else "none"
    return printable(str(value))  # here too, so a table measures what it shows


def inline(mapping: dict[str, Any]) -> str:
    """A small object on one line: `a=1, b=two`."""
    return ", ".join(f"{key}={text(value)}" for key, value in mapping.items())


def shorten(value: Any, width: int) -> str:
    """One line (whitespace collapsed), cut to `width` characters with an ellipsis."""
    line = " ".join(text(value).split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def size(count: int | None) -> str:
    """A byte count: `138 B`, `1.2 KB`, `3.4 MB`."""
    if count is None:
        return "-"
    amount = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{count} B" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{count} B"  # pragma: no cover - the loop always returns


def duration(seconds: float | None) -> str:
    """`4s`, `3m 12s`, `2h 5m`, `3d 4h`."""
    if seconds is None:
        return "-"
    total = int(seconds)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$")


def moment(stamp: str | None) -> str:
    """An ISO 8601 UTC timestamp as `2026-12-01 15:08:16 UTC`; anything else unchanged."""
    if not stamp:
        return "-"
    match = _ISO.match(stamp)
    return f"{match[1]} {match[2]} UTC" if match else stamp


def day(stamp: str | None) -> str:
    """The date part of a timestamp: `2026-12-01`."""
    return stamp[:10] if stamp else "-"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]],
          right: Iterable[int] = ()) -> str:
    """Columns separated by two spaces under upper-case headers; `right` columns right-aligned.

    Cells are rendered with `text`; callers cut long ones with `shorten` first.
    """
    cells = [[text(c) for c in row] for row in rows]
    grid = [[h.upper() for h in headers], *cells]
    widths = [max(len(line[i]) for line in grid) for i in range(len(headers))]
    align_right = set(right)
    out = []
    for line in grid:
        parts = [cell.rjust(widths[i]) if i in align_right else cell.ljust(widths[i])
                 for i, cell in enumerate(line)]
        out.append("  ".join(parts).rstrip())
    return "\n".join(out)


def fields(pairs: Iterable[tuple[str, Any]], indent: str = "  ") -> str:
    """Labelled lines, values aligned: `  title:   Token refresh`. None values are skipped."""
    kept = [(label, value) for label, value in pairs if value is not None]
    if not kept:
        return ""
    width = max(len(label) for label, _ in kept) + 1
    return "\n".join(f"{indent}{(label + ':').ljust(width)} {text(value)}".rstrip()
                     for label, value in kept)


def generic(value: Any, indent: str = "") -> list[str]:
    """Any JSON value as readable lines: objects as `key: value` (nested ones indented),
    lists of scalars comma-separated, lists of objects one `-` item each."""
    if isinstance(value, dict):
        if not value:
            return [f"{indent}(none)"]
        lines: list[str] = []
        for key, item in value.items():
            if _is_scalar(item) or _is_scalar_list(item) or item == {}:
                lines.append(f"{indent}{key}: {text(item)}")
            else:
                lines.append(f"{indent}{key}:")
                lines.extend(generic(item, indent + "  "))
        return lines
    if isinstance(value, list) and not _is_scalar_list(value):
        lines = []
        for item in value:
            sub = generic(item, indent + "  ")
            lines.append(f"{indent}- {sub[0].strip()}")
            lines.extend(sub[1:])
        return lines
    return [f"{indent}{text(value)}"]


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _is_scalar_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_scalar(v) for v in value)
