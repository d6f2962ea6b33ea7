"""A quick reader for the front matter most notes and KB entries carry: one `key: value` per
line, values that are plain words, quoted text, whole numbers, dates, hex ids, or lists of
those (flow `[a, b]`, or `key:` over `- item` lines). It gives what
the YAML loader of markdown.py gives for such a block (dates stay text, as there), without
running the loader's constructor; any other block (comments, blank lines, nesting, escapes,
tabs, a repeated key, a word YAML reads as true, false or null) gets None, and the caller
runs the loader.
"""

from __future__ import annotations

import re
from typing import Any

_LINE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): (\S(?:.*\S)?)")
_KEY_ALONE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):")
# A plain scalar that YAML 1.1 can only read as text: starts with a letter (no number, date,
# float, sign, indicator), then letters, digits, `_ . / -` and single spaces (no `:` or `#`).
_WORDS_RE = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*(?: [A-Za-z0-9_./-]+)*")
_INT_RE = re.compile(r"0|[1-9][0-9]{0,17}")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DIGITS_LETTERS_RE = re.compile(r"[0-9][0-9a-z]*[a-z][0-9a-z]*")
_DOUBLE_RE = re.compile(r'"([^"\\]*)"')
_SINGLE_RE = re.compile(r"'([^']*)'")
# Plain words the resolver reads as booleans or null, not text.
_SPECIAL = frozenset((
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL"))
_NOT_FOUND = object()


def read_simple(block: str) -> dict[str, Any] | None:
    """The mapping of a front-matter block (without its fences) when every line is a simple
    `key: value`; None when the block needs the YAML loader."""
    if not block or "\r" in block or "\t" in block:
        return None
    meta: dict[str, Any] = {}
    lines = block.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue  # the newline that ends the last line
        match = _LINE_RE.fullmatch(line)
        if match is not None:
            key, raw = match.groups()
            value = _value(raw)
        else:
            # `key:` over `- item` lines: a list written as a block (as the emitter does).
            match = _KEY_ALONE_RE.fullmatch(line)
            if match is None or index >= len(lines) or not lines[index].startswith("- "):
                return None
            key, value = match.group(1), []
            while index < len(lines) and lines[index].startswith("- "):
                value.append(_scalar(lines[index][2:]) if lines[index][2:] else _NOT_FOUND)
                index += 1
            if any(item is _NOT_FOUND for item in value):
                return None
        if key in _SPECIAL or key in meta or value is _NOT_FOUND:
            return None
        meta[key] = value
    if not block.endswith("\n") or "\n\n" in block:
        return None  # a blank line or a last line without its newline: the loader decides
    return meta or None


def _value(raw: str) -> Any:
    if raw[0] == "[":
        if raw[-1] != "]":
            return _NOT_FOUND
        inner = raw[1:-1]
        if not inner:
            return []
        items = [_scalar(item) for item in inner.split(", ")]
        return _NOT_FOUND if any(item is _NOT_FOUND for item in items) else items
    return _scalar(raw)


def _scalar(raw: str) -> Any:
    if _WORDS_RE.fullmatch(raw):
        return _NOT_FOUND if raw in _SPECIAL else raw
    if _INT_RE.fullmatch(raw):
        return int(raw)
    if _DATE_RE.fullmatch(raw):
        return raw
    if _DIGITS_LETTERS_RE.fullmatch(raw) and not raw.startswith(("0b", "0o", "0x")):
        return raw  # a hex id such as `3f2a1b…`: no int, float or date reads it
    for quoted in (_DOUBLE_RE, _SINGLE_RE):
        match = quoted.fullmatch(raw)
        if match:
            text = match.group(1)
            return text if text.isascii() and text.isprintable() else _NOT_FOUND
    return _NOT_FOUND


_UNCLOSED_RE = re.compile(r"\A\s*---[ \t]*\r?\n[A-Za-z_][\w-]*:[ \t]")


def unclosed_block(text: str) -> list[str]:
    """A warning for a note that opens with `---` and a `key: value` line but never closes
    the block: it is read as a horizontal rule and body, so its keys do not count."""
    if not _UNCLOSED_RE.match(text):
        return []
    return ["front matter opened with '---' is never closed by another '---' line: it is read "
            "as part of the body, so its keys (author, project, ...) do not count"]
