"""A quick reader for the front matter most notes carry: one `key: value` per line, values
that are plain words, quoted text, whole numbers, dates or flow lists of words. It gives what
the YAML loader of markdown.py gives for such a block (dates stay text, as there), without
running the loader's constructor; any other block (comments, blank lines, nesting, escapes,
tabs, a repeated key, a word YAML reads as true, false or null) gets None, and the caller
runs the loader.
"""

from __future__ import annotations

import re
from typing import Any

_LINE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*): (\S(?:.*\S)?)")
# A plain scalar that YAML 1.1 can only read as text: starts with a letter (no number, date,
# float, sign, indicator), then letters, digits, `_ . / -` and single spaces (no `:` or `#`).
_WORDS_RE = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*(?: [A-Za-z0-9_./-]+)*")
_INT_RE = re.compile(r"0|[1-9][0-9]{0,17}")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
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
    for line in block.split("\n"):
        if not line:
            continue  # the newline that ends the last line
        match = _LINE_RE.fullmatch(line)
        if match is None:
            return None
        key, raw = match.groups()
        if key in _SPECIAL or key in meta:
            return None
        value = _value(raw)
        if value is _NOT_FOUND:
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
    for quoted in (_DOUBLE_RE, _SINGLE_RE):
        match = quoted.fullmatch(raw)
        if match:
            text = match.group(1)
            return text if text.isascii() and text.isprintable() else _NOT_FOUND
    return _NOT_FOUND
