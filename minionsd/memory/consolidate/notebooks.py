"""Per-agent notebooks (`knowledge/agents/<agent>.md`) as text: entries, re-append, retention.

A notebook is a short header followed by one entry per consolidated note, newest at the
bottom. Each entry opens with a marker line `<!-- minions:entry=<id> -->`; the marker, not the
`### ` heading, delimits entries, so headings inside a note body never split an entry and a
redone batch can see that an entry is already there. Marker-like text in bodies is escaped.

All functions are pure: the caller owns reading, locking and writing the file.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from minionsd.memory.consolidate.gist import first_heading_any
from minionsd.text.markdown import first_heading
from minionsd.text.notesfile import check_entry_id, neutralise_markers

ENTRY_BODY_MAX_BYTES = 4096
_ENTRY_RE = re.compile(r"^<!-- minions:entry=([A-Za-z0-9][A-Za-z0-9._:-]*) -->$", re.MULTILINE)
_MARKER_ANYWHERE_RE = re.compile(_ENTRY_RE.pattern[1:], re.MULTILINE)
_PROVENANCE_KEYS = (("id", "note"), ("task", "task"), ("project", "project"), ("pr", "PR"))


def notebook_header(agent: str) -> str:
    """First lines of a new notebook."""
    return (
        f"# Notebook: {agent}\n\n"
        f"Personal memory of {agent}, written by minionsd consolidation: one entry per note,\n"
        "newest at the bottom.\n"
    )


def entry_marker(entry_id: str) -> str:
    """The line that opens the entry for `entry_id`."""
    return f"<!-- minions:entry={check_entry_id(entry_id)} -->"


def note_title(meta: Mapping[str, Any], body: str, name: str) -> str:
    """Front matter `title`, else the body's first H1, else the file name."""
    title = meta.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip()
    return first_heading(body) or name


def _cut_utf8(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", "ignore")


def _entry_body(body: str, title: str, source: str, max_bytes: int) -> str:
    lines = body.strip("\n").split("\n")
    if lines and first_heading_any(lines[0]) == " ".join(title.split()):
        lines = lines[1:]  # the entry heading already says it
    text = "\n".join(lines).strip("\n")
    if len(text.encode("utf-8")) > max_bytes:
        text = _cut_utf8(text, max_bytes).rstrip() + f"\n\n_(cut; full note: {source})_"
    return neutralise_markers(text)


def _provenance(source: str, meta: Mapping[str, Any]) -> str:
    parts = [f"{label} {meta[key]}" for key, label in _PROVENANCE_KEYS if meta.get(key)]
    extra = f" ({', '.join(parts)})" if parts else ""
    return neutralise_markers(f"**Source:** {source}{extra}")


def render_entry(
    *,
    entry_id: str,
    date: str,
    title: str,
    body: str,
    source: str,
    meta: Mapping[str, Any] | None = None,
    max_body_bytes: int = ENTRY_BODY_MAX_BYTES,
) -> str:
    """One notebook entry: marker, `### <date>: <title>`, provenance line, bounded body.

    `body` is the note without front matter; `source` is where the full note lives (its
    archive path); `meta` (the note's front matter) supplies id, task, project and pr.
    """
    meta = meta or {}
    heading = neutralise_markers(" ".join(title.split()))
    text = _entry_body(body, title, source, max_body_bytes)
    parts = [entry_marker(entry_id), f"### {date}: {heading}", _provenance(source, meta)]
    return "\n".join(parts) + (f"\n\n{text}\n" if text else "\n")


def split_entries(text: str) -> tuple[str, list[str]]:
    """(header, entries), oldest first; `header + "".join(entries) == text`."""
    starts = [m.start() for m in _ENTRY_RE.finditer(text)]
    if not starts:
        return text, []
    bounds = [*starts, len(text)]
    return text[: starts[0]], [text[a:b] for a, b in itertools.pairwise(bounds)]


def has_entry(text: str, entry_id: str) -> bool:
    """True when the notebook already holds the entry for `entry_id`."""
    return any(m.group(1) == entry_id for m in _ENTRY_RE.finditer(text))


def entry_ids(text: str) -> set[str]:
    """The ids of every entry the notebook holds."""
    # _ENTRY_RE without its `^`, so the engine looks for the marker's literal text instead of
    # trying every line, then only matches at a line start are kept (the same matches: a
    # marker line holds no newline, so one cannot hide another).
    return {m.group(1) for m in _MARKER_ANYWHERE_RE.finditer(text)
            if m.start() == 0 or text[m.start() - 1] == "\n"}


def append_entries(current: str | None, agent: str, entries: list[str],
                   known: set[str] | None = None) -> str:
    """The notebook after appending each of `entries` in turn, as append_entry does one by
    one, with the notebook scanned for its entry ids once instead of once per entry (not at
    all when the caller passes `known`, the ids `current` holds)."""
    text = current if current and current.strip() else notebook_header(agent)
    known = entry_ids(text) if known is None else set(known)
    for entry in entries:
        match = _ENTRY_RE.match(entry)
        if match is None:
            raise ValueError("a notebook entry must start with its entry marker")
        if match.group(1) in known:
            continue
        known.add(match.group(1))
        text = text.rstrip("\n") + "\n\n" + entry
    return text


def count_entries(text: str) -> int:
    """Number of entries in a notebook."""
    return len(_ENTRY_RE.findall(text))


def append_entry(current: str | None, agent: str, entry: str) -> str:
    """The notebook after appending `entry`; unchanged when that entry is already there."""
    match = _ENTRY_RE.match(entry)
    if match is None:
        raise ValueError("a notebook entry must start with its entry marker")
    base = current if current and current.strip() else notebook_header(agent)
    if has_entry(base, match.group(1)):
        return base
    return base.rstrip("\n") + "\n\n" + entry


def trim_entries(text: str, max_entries: int) -> tuple[str, list[str]]:
    """(kept text, removed entries oldest first): keep the header and the newest max_entries."""
    header, entries = split_entries(text)
    cut = max(0, len(entries) - max(0, max_entries))
    return header + "".join(entries[cut:]), entries[:cut]
