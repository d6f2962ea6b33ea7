"""What a note is about, for people reading derived surfaces: its title, gist and key tokens.

SPEC §3.1 (v2): a note's title is its front matter `title`, else its first heading, else its
first sentence, never its file name; its gist is its first meaningful sentence or bullet.
Front matter is never read as content. `distinct_tokens` picks the parts of a line that make
it a different fact from a similar-looking one (numbers, identifiers, paths), so duplicate
detection can refuse to merge lines that differ in them. Pure functions.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from minionsd.text.markdown import PARTS_CACHE_MAX_CHARS, note_parts

TITLE_MAX = 120
GIST_MAX = 300
UNTITLED = "Untitled note"

_HEADING_RE = re.compile(r"^#{1,6}[ \t]+(.*?)[ \t#]*$")
_RULE_RE = re.compile(r"^(?:[-*_][ \t]*){3,}$")
_FENCE_RE = re.compile(r"^(?:```|~~~)")
_TABLE_SEP_RE = re.compile(r"^\|?[ \t:|-]+\|[ \t:|-]*$")
_MARKER_RE = re.compile(r"^(?:[-*+][ \t]+|\d+[.)][ \t]+|>[ \t]?)+")
_CHECKBOX_RE = re.compile(r"^\[[ xX]\][ \t]+")
_BOLD_KEY_RE = re.compile(r"^\*\*(.+?)\*\*[ \t]*(?:--|\u2014|\u2013|:|-)?[ \t]*")
# A sentence ends at . ! or ? followed by space and a capital, a digit or an opening mark, so
# `src/app.py`, `v1.2` and `e.g. this` stay inside their sentence.
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[ \t]+(?=[A-Z0-9`\"'(\[*])")
_TOKEN_RE = re.compile(r"`[^`]+`|[\w./:@#+=-]+")
_IDENT_INNER_RE = re.compile(r"\w[_./:@#+=-]\w|[a-z][A-Z]")


@dataclass(frozen=True)
class NoteText:
    meta: dict[str, Any]
    body: str


def split(content: str) -> NoteText:
    """Front matter and body; a block that is not valid YAML is cut off, never read as text."""
    parts = note_parts(content)
    if parts.error is None and parts.body is not None:
        return NoteText(dict(parts.meta), parts.body)
    return NoteText({}, _cut_front_matter(content))


def _cut_front_matter(content: str) -> str:
    lines = content.lstrip("\ufeff").split("\n")
    if lines and lines[0].strip() == "---":
        for index in range(1, len(lines)):
            if lines[index].strip() == "---":
                return "\n".join(lines[index + 1:])
    return content


def _clean(text: str) -> str:
    return " ".join(text.split())


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def content_lines(body: str) -> list[str]:
    """The body's prose lines: no headings, rules, code blocks, table rows, comments."""
    out, in_fence = [], False
    for raw in body.split("\n"):
        line = raw.strip()
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or not line or _HEADING_RE.match(line) or _RULE_RE.match(line) \
                or _TABLE_SEP_RE.match(line) or line.startswith(("<!--", "|")):
            continue
        out.append(line)
    return out


def plain(line: str) -> str:
    """A line without its list marker, checkbox or bold key markup (`**Key**: x` -> `Key: x`)."""
    text = _CHECKBOX_RE.sub("", _MARKER_RE.sub("", line.strip()))
    match = _BOLD_KEY_RE.match(text)
    if match:
        rest = text[match.end():]
        text = f"{match.group(1).strip()}: {rest}" if rest else match.group(1).strip()
    return _clean(text)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END_RE.split(text) if s.strip()]


def first_heading_any(body: str) -> str | None:
    """Text of the first ATX heading of any level, outside code blocks."""
    in_fence = False
    for raw in body.split("\n"):
        line = raw.strip()
        if _FENCE_RE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else _HEADING_RE.match(line)
        if match and match.group(1).strip():
            return _clean(match.group(1))
    return None


def _same(a: str, b: str) -> bool:
    return a.rstrip(".!?:").lower() == b.rstrip(".!?:").lower()


def title_and_gist(content: str) -> tuple[str, str]:
    """(title, gist) of a note; the gist is "" when the note says nothing beyond its title.
    Remembered for the last notes asked about (a batch asks several times per note), up to
    the size markdown.note_parts remembers."""
    if len(content) > PARTS_CACHE_MAX_CHARS:
        return find_title_and_gist(content)
    return _remembered_title_and_gist(content)


def find_title_and_gist(content: str) -> tuple[str, str]:
    """title_and_gist without remembering."""
    note = split(content)
    title = note.meta.get("title")
    title = _clean(title) if isinstance(title, str) and title.strip() else None
    title = title or first_heading_any(note.body)
    lines = content_lines(note.body)
    if title is None and lines:
        # A note that opens with `- **Key**: text` is titled by its key.
        opening = _CHECKBOX_RE.sub("", _MARKER_RE.sub("", lines[0]))
        match = _BOLD_KEY_RE.match(opening)
        if match and opening[match.end():].strip():
            title = _clean(match.group(1))
            lines[0] = opening[match.end():]
    # Lazily: the title and gist are the first sentences, so the rest are never cut.
    pieces = (s for line in lines for s in sentences(plain(line)))
    if title is None:
        first = next(pieces, None)
        if first is None:
            return UNTITLED, ""
        title = first.rstrip(".") or UNTITLED
    gist = next((p for p in pieces if not _same(p, title)), "")
    return _cap(title, TITLE_MAX), _cap(gist, GIST_MAX)


_remembered_title_and_gist = functools.lru_cache(maxsize=128)(find_title_and_gist)


def note_title(content: str) -> str:
    return title_and_gist(content)[0]


def distinct_tokens(text: str) -> frozenset[str]:
    """Numbers, identifiers and paths in `text`, lower-cased: `port 8080`, `test-m13`,
    `setup_8`, `src/app.py`, `UserCache`, anything in backticks."""
    found: set[str] = set()
    quoted = "`" in text  # else no token can be in backticks
    for token in _TOKEN_RE.findall(text):
        token = token.strip("`").rstrip(".,;:!?)")
        if not token:
            continue
        if not quoted and token.isalpha() and token.islower():
            continue  # a lower-case word: no digit, no identifier joint, no upper-case hump
        lowered = token.lower()
        if lowered in found:
            continue  # kept already: the checks cannot add it twice
        if _has_digit(token) or _IDENT_INNER_RE.search(token) \
                or (quoted and text.count(f"`{token}`")):
            found.add(lowered)
    return frozenset(found)


_ASCII_DIGIT_RE = re.compile(r"[0-9]")


def _has_digit(token: str) -> bool:
    """any(c.isdigit() for c in token), without a step per character for ASCII tokens (where
    only 0-9 are digits) and for tokens of letters alone (no letter is a digit)."""
    if token.isascii():
        return _ASCII_DIGIT_RE.search(token) is not None
    return not token.isalpha() and any(c.isdigit() for c in token)
