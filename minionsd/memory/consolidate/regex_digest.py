"""The deterministic team digest used when no LLM answer is usable (ORIGINAL §3.4, SPEC §3.1).

The original's shape is kept: a `### <date>: <Agents>: <hints> (<K> insights from <M> notes)`
title, the `**By:** Engine (regex fallback)` line, `#### <Label> (<n>)` groups of bullets ending
in `_(author)_`, and the `_Deduplication: …_` footer. Where the original lost information,
this one does not (SPEC §3.1 v2):

* every note gives one line `- **<title>**: <gist> _(<author>)_ → [KB entry](<path>)`, with
  its title and gist from gist.py (never the file name) and a link to its knowledge entry;
  the note's own bold-key and keyword lines (the original's insight rules) follow it as
  indented sub-bullets, at most `EXTRA_PER_NOTE`, a line that opens with the gist giving
  only what follows it;
* front matter is never scanned as content;
* two lines are merged as duplicates only when they say the same thing: the same numbers,
  identifiers and paths (`port 3000` and `port 8080` stay two facts) and the same words in
  the same order once filler words (articles, `each`/`every`, forms of `be`, ...) are left
  out, so "staging" and "production" lines stay two facts;
* a note's own line is never dropped because notes.md already says something similar; only
  its sub-bullets are;
* process and schedule notes (a release freeze, a weekly reset) get a `Process & Schedule`
  group instead of falling into `Bugs & Gotchas` because their text says "fix" somewhere;
  bug words are matched as words in the title first, then in the body.

This digest has its own categories; KB categories come from `classify.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from minionsd.memory.consolidate import gist
from minionsd.memory.consolidate.types import DigestNote, utf16_cut, utf16_len

INSIGHT_MAX = 300
FINGERPRINT_LEN = 80
MIN_REST_WORDS = 3  # an insight's words after the gist it opens with, to keep it

LABELS = {
    "reviews": "PR Review Findings",
    "feedback": "Review Feedback",
    "build-results": "Build & Test Results",
    "exploration": "Codebase Exploration",
    "bugs-fixes": "Bugs & Gotchas",
    "process": "Process & Schedule",
    "learnings": "Patterns & Conventions",
}
HINTS = {
    "reviews": "PR reviews",
    "feedback": "review feedback",
    "build-results": "build/test results",
    "exploration": "codebase exploration",
    "bugs-fixes": "bug findings",
    "process": "process & schedule",
    "learnings": "learnings",
}
EXTRA_PER_NOTE = 5

_SKIP_HEADING_RE = re.compile(r"^#{3,}\s")
_NUMBERED_RE = re.compile(r"^[0-9]+\.\s+\*\*(.+?)\*\*\s*(?:--|\u2014|\u2013|:|-)\s*(.+)")
_BULLET_RE = re.compile(r"^[-*]\s+\*\*(.+?)\*\*[:\s]+(.+)")
# re.ASCII: word boundaries as in JavaScript, where only [A-Za-z0-9_] are word characters.
_KEYWORD_RE = re.compile(
    r"\b(?:must|never|always|convention|pattern|gotcha|warning|important|rule|tip|note that)\b",
    re.IGNORECASE | re.ASCII,
)


_BUG_RE = re.compile(
    r"\b(?:bugs?|buggy|fix(?:es|ed|ing)?|hotfix|crash(?:es|ed|ing)?|regressions?|errors?|"
    r"exceptions?|fail(?:s|ed|ing|ures?)?|broken|breaks|gotchas?|flaky|leaks?|timeouts?|outages?|incidents?)\b",
    re.IGNORECASE)
_PROCESS_RE = re.compile(
    r"\b(?:release|releases|freeze|frozen|schedules?|scheduled|weekly|daily|nightly|monthly|"
    r"mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|deadlines?|"
    r"on-?call|stand-?ups?|retros?|sprints?|maintenance window|rota|holidays?|meetings?|"
    r"every (?:day|week|night|morning|evening|month))\b",
    re.IGNORECASE)


# Words that never change what a line says: articles, determiners, forms of `be`, pronouns
# and intensifiers. Negations, prepositions (before/after, on/off) and quantifiers (all/any,
# only) change a fact and are kept.
_FILLER_TEXT = """
    a an the this that these those each every is are was were be been being am it its
    we you they i me my our your their us them and also just really very quite please
"""
FILLER_WORDS = frozenset(_FILLER_TEXT.split())


@dataclass
class _Line:
    text: str
    fingerprint: str
    tokens: frozenset[str]
    words: tuple[str, ...]  # what the line says: see same_words
    sources: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)


@dataclass
class _Entry:
    """One note's contribution: its own line, its sub-bullets, its group."""

    category: str
    main: _Line
    subs: list[_Line] = field(default_factory=list)


def digest_category(name: str, content: str) -> str:
    """The digest's own category: file-name rules first, then words of the title, then of
    the body (bug words before process words within each)."""
    name = name.lower()
    if any(key in name for key in ("review", "pr-", "pr4")):
        return "reviews"
    for keys, category in ((("feedback",), "feedback"), (("build", "bt-"), "build-results")):
        if any(key in name for key in keys):
            return category
    if "explore" in name:
        return "exploration"
    title, _ = gist.title_and_gist(content)
    for text in (title, gist.split(content).body):
        if _BUG_RE.search(text):
            return "bugs-fixes"
        if _PROCESS_RE.search(text):
            return "process"
    return "learnings"


_NOT_KEPT_RE = re.compile(r"[^a-z0-9 ]")
# ASCII text: every character but a-z, 0-9 and the space dropped by str.translate.
_ASCII_NOT_KEPT = str.maketrans("", "", "".join(
    chr(c) for c in range(128) if not (chr(c).isdigit() or "a" <= chr(c) <= "z" or c == 32)))


def fingerprint(text: str) -> str:
    """Lower-case, keep only [a-z0-9 ], collapse spaces, first 80 characters."""
    lowered = text.lower()
    if lowered.isascii():
        kept = lowered.translate(_ASCII_NOT_KEPT)
    else:
        kept = _NOT_KEPT_RE.sub("", lowered)
    return " ".join(word for word in kept.split(" ") if word)[:FINGERPRINT_LEN]


def same_words(text: str) -> tuple[str, ...]:
    """The line's words in order, normalised as `fingerprint` does but over the whole text,
    filler words left out (all its words when nothing else is left). Two lines say the same
    thing when these and their distinct tokens are equal."""
    lowered = text.lower()
    kept = lowered.translate(_ASCII_NOT_KEPT) if lowered.isascii() \
        else _NOT_KEPT_RE.sub("", lowered)
    words = [word for word in kept.split(" ") if word]
    return tuple(w for w in words if w not in FILLER_WORDS) or tuple(words)


def _line_insight(line: str) -> str | None:
    for pattern in (_NUMBERED_RE, _BULLET_RE):
        match = pattern.match(line)
        if match:
            rest = match.group(2).strip()
            rest = re.sub(r"^[-\u2014\u2013]\s*", "", rest) or rest
            return f"**{match.group(1).strip()}**: {rest}"
    length = utf16_len(line)
    if not line.startswith("#") and 30 < length < 500 and _KEYWORD_RE.search(line):
        return line
    return None


def _cap(text: str) -> str:
    if utf16_len(text) <= INSIGHT_MAX:
        return text
    return utf16_cut(text, INSIGHT_MAX - 3) + "..."


def note_insights(note: DigestNote) -> list[str]:
    """The original's insight lines of one note's body (front matter is not scanned)."""
    found = []
    for raw in gist.split(note.content).body.split("\n"):
        line = raw.strip()
        if not line or _SKIP_HEADING_RE.match(line):
            continue
        insight = _line_insight(line)
        if insight is not None:
            found.append(_cap(insight))
    return found


def _make(text: str, author: str, link: str | None = None) -> _Line:
    return _Line(text, fingerprint(text), gist.distinct_tokens(text), same_words(text),
                 [author], [link] if link else [])


def _entry(note: DigestNote) -> _Entry:
    title, summary = gist.title_and_gist(note.content)
    text = f"**{_escape_bold(title)}**" + (f": {summary}" if summary else "")
    main = _make(_cap(text), note.author, note.kb_path)
    seen = {fingerprint(gist.plain(summary)), fingerprint(title),
            fingerprint(f"{title}: {summary}")}
    subs = []
    for line in note_insights(note):
        insight = _past_gist(line, summary)
        if insight is None:
            continue  # the gist was all of it
        fp = fingerprint(gist.plain(insight))
        if fp in seen or any(fp and fp in s for s in seen if len(fp) > 20):
            continue  # the main line says it already
        seen.add(fp)
        subs.append(_make(insight, note.author))
    return _Entry(digest_category(note.name, note.content), main, subs[:EXTRA_PER_NOTE])


def _past_gist(insight: str, summary: str | None) -> str | None:
    """An insight line that opens with the note's gist (already on the note's own line) says
    only what follows it; None when too little follows to stand as a line of its own."""
    if not summary or not insight.startswith(summary):
        return insight
    rest = insight[len(summary):].lstrip(" \t-\u2013\u2014:;,.")
    return rest if len(rest.split()) >= MIN_REST_WORDS else None


def _escape_bold(title: str) -> str:
    return title.replace("**", "")


_ASCII_WORD = re.compile(r"\w+", re.ASCII)


def _known(line: _Line, existing_lower: str, existing_words: frozenset[str]) -> bool:
    words = [w for w in line.fingerprint.split(" ") if 4 < len(w) <= 200][:5]
    if len(words) < 3 or not all(t in existing_lower for t in line.tokens):
        return False
    # A pure ASCII word matches r"\bword\b" exactly when it is one of the text's \w+ runs,
    # so a set lookup replaces a regex scan of the whole notes.md per word.
    return all(w in existing_words if _ASCII_WORD.fullmatch(w)
               else re.search(rf"\b{re.escape(w)}\b", existing_lower, re.ASCII)
               for w in words)


def _same_key(line: _Line) -> tuple[frozenset[str], tuple[str, ...]]:
    """Lines with equal keys say the same thing: the same numbers, identifiers and paths, and
    the same words in the same order but for filler words ("after every schema migration" and
    "after each schema migration"). A line with no word at all is only its own text."""
    return line.tokens, line.words or (line.text,)


def _credit(kept: _Line, line: _Line) -> None:
    for author in line.sources:
        if author not in kept.sources:
            kept.sources.append(author)
    kept.links += [link for link in line.links if link not in kept.links]


def _dedupe(entries: list[_Entry], existing: str) -> tuple[list[_Entry], int]:
    """(kept entries, lines removed). A note's own line merges only into another note's own
    line (crediting its author and link); sub-bullets are dropped when notes.md or any kept
    line already says them."""
    existing_lower = existing.lower()
    existing_words = frozenset(_ASCII_WORD.findall(existing_lower))
    kept: list[_Entry] = []
    # The first kept main line, and the first kept line of any kind, for each _same_key.
    kept_mains: dict[tuple, _Entry] = {}
    lines: dict[tuple, _Line] = {}
    removed = 0
    for entry in entries:
        key = _same_key(entry.main)
        twin = kept_mains.get(key)
        if twin is not None:
            _credit(twin.main, entry.main)
            removed += 1
        else:
            kept.append(_Entry(entry.category, entry.main))
            kept_mains[key] = kept[-1]
            lines.setdefault(key, entry.main)
        owner = twin or kept[-1]
        for sub in entry.subs:
            key = _same_key(sub)
            near = lines.get(key)
            if near is not None:
                _credit(near, sub)
                removed += 1
            elif _known(sub, existing_lower, existing_words):
                removed += 1
            else:
                owner.subs.append(sub)
                lines[key] = sub
    return kept, removed


def _title_line(notes: list[DigestNote], kept: list[_Entry], count: int, date: str) -> str:
    agents = ", ".join(dict.fromkeys(n.author[:1].upper() + n.author[1:] for n in notes))
    hints = ", ".join(HINTS[c] for c in dict.fromkeys(e.category for e in kept))
    return f"### {date}: {agents}: {hints} ({count} insights from {len(notes)} notes)\n"


def _render_main(line: _Line) -> str:
    links = " ".join(f"[KB entry]({link})" for link in line.links)
    return f"- {line.text} _({', '.join(line.sources)})_" + (f" \u2192 {links}" if links else "")


def _render_sub(line: _Line, parent: _Line) -> str:
    extra = [a for a in line.sources if a not in parent.sources]
    return f"  - {line.text}" + (f" _({', '.join(line.sources)})_" if extra else "")


def _groups(kept: list[_Entry]) -> str:
    out = []
    for category in dict.fromkeys(e.category for e in kept):
        members = [e for e in kept if e.category == category]
        count = sum(1 + len(e.subs) for e in members)
        out.append(f"#### {LABELS[category]} ({count})\n")
        for entry in members:
            out.append(_render_main(entry.main) + "\n")
            out += [_render_sub(sub, entry.main) + "\n" for sub in entry.subs]
        out.append("\n")
    return "".join(out)


def regex_digest(notes: list[DigestNote], date: str, existing_notes: str = "") -> str:
    """The fallback digest for a batch; `existing_notes` is the current notes.md text.

    Deterministic: the same notes, date, KB paths and notes.md give the same text.
    """
    kept, removed = _dedupe([_entry(n) for n in notes], existing_notes)
    count = sum(1 + len(e.subs) for e in kept)
    text = (_title_line(notes, kept, count, date) + "**By:** Engine (regex fallback)\n\n"
            + _groups(kept))
    if removed > 0:
        text += f"_Deduplication: {removed} duplicate(s) removed._\n"
    return text
