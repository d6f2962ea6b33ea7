"""Knowledge-base classification, entry names and layout, and collision-free names.

The classifier is the original's deterministic keyword rule (ORIGINAL §3.7) and is the only
source of KB categories; the LLM never picks one. An entry is the note's body under ONE
front-matter block: the note's own keys merged with `source`, `agent`, `category` and `date`
(the original stacked two blocks). Names never overwrite: `unique_path` finds a free one.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from minionsd.fileio import fit_name
from minionsd.memory.consolidate import gist
from minionsd.text.markdown import (
    PARTS_CACHE_MAX_CHARS,
    FrontMatterError,
    note_parts,
    render_note,
    safe_slug,
    slugify,
)
from minionsd.text.redact import redact

CATEGORIES = ("architecture", "conventions", "project-notes", "build-reports", "reviews")
TITLE_SLUG_MAX = 50
AUTHOR_SLUG_MAX = 64
_OWN_KEYS = ("source", "agent", "category", "date")
# The `-<8 hex>` tag and `-<YYYY-MM-DD>` stamp that end minionsd's inbox names.
_STEM_STAMP_RE = re.compile(r"(?:-[0-9a-f]{8})?-\d{4}-\d{2}-\d{2}(?:-\d+)?$")
_MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")
_DATED_NAME_RE = re.compile(r"^(?P<stem>.+)-(?P<date>\d{4}-\d{2}-\d{2})(?P<n>-\d+)?\.md$")

_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (category, file-name substrings, content substrings)
    ("reviews", ("review", "pr-", "pr4", "feedback"), ()),
    ("build-reports", ("build", "bt-"), ("build pass", "build fail", "lint")),
    (
        "architecture",
        (),
        ("architecture", "design doc", "system design", "data flow", "how it works"),
    ),
    (
        "conventions",
        (),
        ("convention", "pattern", "always use", "never use", "rule:", "best practice"),
    ),
)


def classify(name: str, content: str | None) -> str:
    """KB category of a note: lower-cased substring rules, first match wins. Remembered for
    the last notes asked about (a batch asks three times per note), up to the size
    markdown.note_parts remembers."""
    if content is not None and len(content) > PARTS_CACHE_MAX_CHARS:
        return _classify(name, content)
    return _remembered_classify(name, content)


def _classify(name: str, content: str | None) -> str:
    name, text = name.lower(), (content or "").lower()
    for category, in_name, in_content in _RULES:
        if any(k in name for k in in_name) or any(k in text for k in in_content):
            return category
    return "project-notes"


_remembered_classify = functools.lru_cache(maxsize=256)(_classify)


def title_slug(name: str, content: str | None) -> str:
    """Slug of the note's title (front matter `title`, first heading, else first sentence:
    gist.py), else of its file name; never empty.

    A file-name stem loses the date stamp and 8-hex tag that inbox names carry
    (`dallas-npm-fails-4477d56a-2026-12-01`). A title of only non-ASCII characters slugifies
    to nothing; the file name then stands in, and an MD5 tag as a last resort, so no entry is
    ever named `<date>-<author>-.md`.
    """
    title = gist.note_title(content) if content else None
    title = None if title == gist.UNTITLED else title
    stem = name[:-3] if name.endswith(".md") else name
    stem = _STEM_STAMP_RE.sub("", stem) or stem
    # Redacted before slugging: a lower-cased, dashed token is no longer a shape the redactor
    # knows, and the slug becomes a KB path, a record's source and front matter.
    title = redact(title) if title else None
    slug = slugify(title or "", TITLE_SLUG_MAX).strip("-")
    if slug:
        return slug
    stem = redacted_name(stem)  # only when the title gives nothing: it costs more
    slug = slugify(stem, TITLE_SLUG_MAX).strip("-")
    return slug or safe_slug(f"note {title or stem}", TITLE_SLUG_MAX)


def entry_name(date: str, author: str, name: str, content: str | None) -> str:
    """`<date>-<author>-<title slug>.md`; the author is made file-name safe first, and a
    slug that starts with the author again (`alice-release-freeze`) loses that prefix."""
    author_slug = safe_slug(author, AUTHOR_SLUG_MAX)
    slug = title_slug(name, content)
    if slug.startswith(f"{author_slug}-") and len(slug) > len(author_slug) + 1:
        slug = slug[len(author_slug) + 1:]
    return f"{date}-{author_slug}-{slug}.md"


def _merged_meta(
    meta: Mapping[str, Any], own: dict[str, str], extra: Mapping[str, Any] | None
) -> dict[str, Any]:
    merged: dict[str, Any] = dict(own)
    if extra:
        merged.update(extra)
    for key, value in meta.items():
        if key not in merged:
            merged[key] = value
        elif merged[key] != value and f"note_{key}" not in meta:
            # Keep what the author wrote (say, the day they wrote it) under a clear name.
            merged[f"note_{key}"] = value
    return merged


def render_entry(
    content: str,
    *,
    source: str,
    agent: str,
    category: str,
    date: str,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The KB entry text: one merged front-matter block, a blank line, the note body verbatim.

    Our keys come first (`source`, `agent`, `category`, `date`, then `extra`); the note's own
    keys follow. When the note already used one of our keys with another value, its value is
    kept as `note_<key>`. Raises FrontMatterError when the note's front matter is invalid.
    """
    parts = note_parts(content)
    if parts.error is not None or parts.body is None:
        raise FrontMatterError(parts.error or "front matter cannot be read")
    meta, body = parts.checked, parts.body
    own = {"source": source, "agent": agent, "category": category, "date": date}
    return render_note(_merged_meta(meta, own, extra), body)


_NAME_SEPARATORS = re.compile(r"[-.]")
_PARTS_MAX = 12  # separators a token may span (a Slack token has 3)
_PART_MIN = 8  # no secret shape is shorter


@functools.lru_cache(maxsize=4096)
def redacted_name(name: str) -> str:
    """An inbox file name with its secrets redacted, still a plain file name: a token in it
    becomes `redacted-<kind>` (`dallas-ghp_….md` -> `dallas-redacted-github_token.md`)."""
    text = redact(name)
    if text == name and not _a_part_changes(name):
        return _MARKER_RE.sub(r"redacted-\1", name)  # the common case, in two redact calls
    return walk_name_parts(text)


def walk_name_parts(text: str) -> str:
    """redacted_name's part-by-part walk over an already redacted name (the reference its
    quick check must agree with)."""
    # In prose a token glued to a longer word is not one; in a file name words are joined by
    # dashes and dots (`dallas-AKIA…-keys.md`), so every run of whole parts between them is
    # tried on its own too, longest first (a token may hold dashes itself).
    start = 0
    while start < len(text):
        ends = [m.start() for m in _NAME_SEPARATORS.finditer(text, start + 1)] + [len(text)]
        for end in reversed(ends[:_PARTS_MAX]):
            part = text[start:end]
            if len(part) < _PART_MIN:
                break
            cleaned = redact(part)
            if cleaned != part:
                text = text[:start] + cleaned + text[end:]
                break
        following = _NAME_SEPARATORS.search(text, start)
        if following is None:
            break
        start = following.end()
    return _MARKER_RE.sub(r"redacted-\1", text)


# Between the parts redacted together: no secret shape reaches across a NUL, and the newlines
# on both sides give each part the edges it has alone (start and end of a line).
_PART_GLUE = "\n\x00\n"


def _name_parts(text: str) -> list[str]:
    """Every run of whole parts redacted_name tries on its own, for an unchanged name."""
    parts = []
    start = 0
    while start < len(text):
        ends = [m.start() for m in _NAME_SEPARATORS.finditer(text, start + 1)] + [len(text)]
        for end in reversed(ends[:_PARTS_MAX]):
            if end - start < _PART_MIN:
                break
            parts.append(text[start:end])
        following = _NAME_SEPARATORS.search(text, start)
        if following is None:
            break
        start = following.end()
    return parts


def _a_part_changes(name: str) -> bool:
    """False when redacting every part of `name` on its own would change none of them: the
    parts are redacted as one text, one per line. A secret shape in a part is found there too
    (each part keeps its edges), so an unchanged text means unchanged parts; a change (even
    one that only the joining made) sends the caller to the part-by-part walk."""
    parts = _name_parts(name)
    if not parts:
        return False
    joined = _PART_GLUE.join(parts)
    return redact(joined) != joined


def archive_name(date: str, name: str) -> str:
    """Archive file name for a processed inbox note, before collision handling.

    `<date>-<name>`; a name that already ends with the same date (`alice-x-2026-12-01.md`,
    or `…-2026-12-01-2.md`) does not repeat it: `2026-12-01-alice-x.md`. Cut to fit the file
    system when the inbox name was already near its limit. The name is redacted first
    (:func:`redacted_name`): the archive path is every record's and KB entry's source.
    """
    name = redacted_name(name)
    match = _DATED_NAME_RE.match(name)
    if match and match.group("date") == date:
        name = f"{match.group('stem')}{match.group('n') or ''}.md"
    stem, ext = os.path.splitext(name)
    return fit_name(f"{date}-{stem}", ext)


def unique_path(directory: str, name: str, exists: Callable[[str], bool]) -> str:
    """A path in `directory` for `name` that `exists` reports free: name, -2, -3, … before .md.

    The original switched to an epoch-millisecond suffix after -99; counting on keeps this
    function free of clock reads and its output predictable.
    """
    stem, ext = os.path.splitext(name)
    candidate = os.path.join(directory, name)
    n = 2
    while exists(candidate):
        candidate = os.path.join(directory, fit_name(stem, f"-{n}{ext}"))
        n += 1
    return candidate
