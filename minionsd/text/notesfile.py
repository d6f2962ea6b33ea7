"""The team digest `notes.md` as text: header, digest sections, batch markers, size bound.

notes.md is a free-text header followed by digest sections, newest at the bottom. Every
section begins with a `---` line, a blank line and a `### ` title (the original's
`\\n\\n---\\n\\n### ` layout). Sections written by minionsd end with a batch marker
`<!-- minions:batch=<id> -->`, so a batch redone after a crash can see that its digest already
landed. Bounding moves the OLDEST sections out to the history file; the header and the newest
section always stay and nothing is dropped (the original cut away the newest digest).

All functions are pure: the caller reads and writes the files under the notes lock.
"""

from __future__ import annotations

import itertools
import re

from minionsd.text.textcut import utf8_len

SEPARATOR = "\n\n---\n\n"
NOTES_HEADER = (
    "# Team Notes\n\n"
    "Team digest written by minionsd consolidation. Newest sections are at the bottom; older\n"
    "ones move to notes/archive/notes-history.md when this file grows past its size limit.\n"
)
HISTORY_HEADER = (
    "# Team Notes History\n\n"
    "Digest sections moved out of notes.md to keep it small, oldest first.\n"
)
_BOUNDARY_RE = re.compile(r"^---[ \t]*\n\n(?=### )", re.MULTILINE)
_ENTRY_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_MARKER_PREFIX = "<!-- minions:"


def check_entry_id(entry_id: str) -> str:
    """Return `entry_id` when it is safe inside a marker comment, else raise ValueError."""
    if not _ENTRY_ID_RE.fullmatch(entry_id):
        raise ValueError(f"entry id must match [A-Za-z0-9][A-Za-z0-9._:-]*, got {entry_id!r}")
    return entry_id


def neutralise_markers(text: str) -> str:
    """Escape anything that looks like a minionsd marker, so text cannot forge one."""
    return text.replace(_MARKER_PREFIX, "&lt;!-- minions:")


_MARKER_LINE_RE = re.compile(r"^[ \t]*<!-- minions:[^\n>]*-->[ \t]*(?:\r?\n|\Z)", re.MULTILINE)
_MARKER_ANY_RE = re.compile(r"<!-- minions:[^\n>]*-->")


def strip_markers(text: str) -> str:
    """`text` without minionsd's bookkeeping comments (batch and entry markers), for readers
    such as prompt sections; the files keep them, since a redo after a crash relies on them."""
    return _MARKER_ANY_RE.sub("", _MARKER_LINE_RE.sub("", text))


def batch_marker(entry_id: str) -> str:
    """The HTML comment that ends a section written for batch `entry_id`."""
    return f"<!-- minions:batch={check_entry_id(entry_id)} -->"


def render_section(digest: str, entry_id: str) -> str:
    """A digest ready to append: separator, the digest, a blank line, the batch marker."""
    body = neutralise_markers(digest.strip("\n"))
    return f"{SEPARATOR}{body}\n\n{batch_marker(entry_id)}\n"


def contains_entry(text: str, entry_id: str) -> bool:
    """True when `text` already holds the section of batch `entry_id`."""
    return batch_marker(entry_id) in text


def append_section(current: str | None, section: str) -> str:
    """notes.md after appending `section`; a missing or empty file starts with the header."""
    base = current if current and current.strip() else NOTES_HEADER
    return base.rstrip("\n") + section


def split_sections(text: str) -> tuple[str, list[str]]:
    """(header, sections), oldest first; `header + "".join(sections) == text`.

    Each section starts with its own `---` line and runs up to the next section boundary, so
    it carries its trailing blank lines.
    """
    starts = [m.start() for m in _BOUNDARY_RE.finditer(text)]
    if not starts:
        return text, []
    bounds = [*starts, len(text)]
    return text[: starts[0]], [text[a:b] for a, b in itertools.pairwise(bounds)]


def bound_notes(text: str, max_bytes: int) -> tuple[str, str]:
    """(kept notes.md text, moved-out text): oldest sections leave until it fits max_bytes.

    The header and the newest section always stay, so the result can still exceed max_bytes
    when they alone are larger. The moved text is whole sections, oldest first, ready for
    `append_history`.
    """
    header, sections = split_sections(text)
    size, cut = utf8_len(text), 0
    while size > max_bytes and cut < len(sections) - 1:
        size -= utf8_len(sections[cut])
        cut += 1
    return header + "".join(sections[cut:]), "".join(sections[:cut])


def history_addition(tail: bytes, moved: str) -> bytes:
    """The bytes to append to notes-history.md for the `moved` sections, given `tail`, the
    file's last bytes (the whole file, or at least twice `moved`'s size).

    Sections `tail` already holds are skipped, and so is the beginning of the rest that
    `tail` already ends with: an append that a crash cut short is completed, not repeated.
    The result joins the sections as :func:`append_history` does; b"" when nothing is
    missing.
    """
    text = tail.decode("utf-8", "replace")
    _, sections = split_sections(moved)
    fresh = [s.rstrip("\n") for s in sections if s.strip("\n") not in text]
    if not fresh:
        # All there; a crash may still have cut the last one's final newline.
        last = sections[-1].rstrip("\n").encode("utf-8") if sections else b""
        return b"\n" if last and tail.endswith(last) else b""
    chunk = ("\n\n" + "\n\n".join(fresh) + "\n").encode("utf-8")
    return chunk[_overlap(tail, chunk):]


def _overlap(tail: bytes, chunk: bytes) -> int:
    """The length of the longest beginning of `chunk` (shorter than all of it) that `tail`
    ends with."""
    head = chunk[:64]
    start = max(0, len(tail) - len(chunk) + 1)
    at = tail.find(head, start)
    while at != -1:  # only where chunk's first 64 bytes occur: no scan of every offset
        if chunk.startswith(tail[at:]):
            return len(tail) - at
        at = tail.find(head, at + 1)
    for size in range(min(len(head) - 1, len(tail)), 0, -1):
        if tail.endswith(chunk[:size]):
            return size
    return 0


def append_history(history: str | None, moved: str) -> str:
    """notes-history.md after appending moved sections; sections already there are skipped.

    Skipping makes a bound that is redone after a crash (history written, notes.md not yet)
    leave a single copy of each section.
    """
    base = history if history and history.strip() else HISTORY_HEADER
    _, sections = split_sections(moved)
    fresh = [s.rstrip("\n") for s in sections if s.strip("\n") not in base]
    if not fresh:
        return base
    return base.rstrip("\n") + "\n\n" + "\n\n".join(fresh) + "\n"
