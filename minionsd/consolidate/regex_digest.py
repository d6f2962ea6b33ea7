"""The deterministic team digest used when no LLM answer is usable (ORIGINAL §3.4).

Output is byte-for-byte the original's fallback digest, minus the `\\n\\n---\\n\\n` separator
in front (notesfile adds separators and the batch marker). Everything the original did is kept,
quirks included (`- **Key** - text` renders as `**Key**: - text`; digits and short words are
ignored by near-duplicate detection), because tests and readers compare against that shape.
This digest has its own six categories; KB categories come from `classify.py`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from minionsd.consolidate.types import DigestNote, utf16_cut, utf16_len
from minionsd.markdown import first_heading

INSIGHT_MAX = 300
FINGERPRINT_LEN = 80
NEAR_DUPLICATE_RATIO = 0.7

LABELS = {
    "reviews": "PR Review Findings",
    "feedback": "Review Feedback",
    "build-results": "Build & Test Results",
    "exploration": "Codebase Exploration",
    "bugs-fixes": "Bugs & Gotchas",
    "learnings": "Patterns & Conventions",
}
HINTS = {
    "reviews": "PR reviews",
    "feedback": "review feedback",
    "build-results": "build/test results",
    "exploration": "codebase exploration",
    "bugs-fixes": "bug findings",
    "learnings": "learnings",
}

_SKIP_HEADING_RE = re.compile(r"^#{3,}\s")
_NUMBERED_RE = re.compile(r"^[0-9]+\.\s+\*\*(.+?)\*\*\s*(?:--|\u2014|\u2013|:|-)\s*(.+)")
_BULLET_RE = re.compile(r"^[-*]\s+\*\*(.+?)\*\*[:\s]+(.+)")
# re.ASCII: word boundaries as in JavaScript, where only [A-Za-z0-9_] are word characters.
_KEYWORD_RE = re.compile(
    r"\b(?:must|never|always|convention|pattern|gotcha|warning|important|rule|tip|note that)\b",
    re.IGNORECASE | re.ASCII,
)


@dataclass
class _Insight:
    text: str
    fingerprint: str
    category: str
    sources: list[str] = field(default_factory=list)


def digest_category(name: str, content: str) -> str:
    """The digest's own category: file name first, then content (lower-cased substrings)."""
    name, content = name.lower(), content.lower()
    if any(key in name for key in ("review", "pr-", "pr4")):
        return "reviews"
    for keys, category in ((("feedback",), "feedback"), (("build", "bt-"), "build-results")):
        if any(key in name for key in keys):
            return category
    if "explore" in name:
        return "exploration"
    if "bug" in content or "fix" in content:
        return "bugs-fixes"
    return "learnings"


def fingerprint(text: str) -> str:
    """Lower-case, keep only [a-z0-9 ], collapse spaces, first 80 characters."""
    kept = re.sub(r"[^a-z0-9 ]", "", text.lower())
    return re.sub(r" +", " ", kept).strip()[:FINGERPRINT_LEN]


def _line_insight(line: str) -> str | None:
    for pattern in (_NUMBERED_RE, _BULLET_RE):
        match = pattern.match(line)
        if match:
            return f"**{match.group(1).strip()}**: {match.group(2).strip()}"
    length = utf16_len(line)
    if not line.startswith("#") and 30 < length < 500 and _KEYWORD_RE.search(line):
        return line
    return None


def _cap(text: str) -> str:
    if utf16_len(text) <= INSIGHT_MAX:
        return text
    return utf16_cut(text, INSIGHT_MAX - 3) + "..."


def note_insights(note: DigestNote) -> list[str]:
    """Insight lines of one note, or a single `See full note:` pointer when it has none."""
    found = []
    for raw in note.content.split("\n"):
        line = raw.strip()
        if not line or _SKIP_HEADING_RE.match(line):
            continue
        insight = _line_insight(line)
        if insight is not None:
            found.append(_cap(insight))
    return found


def _title(note: DigestNote) -> str:
    return first_heading(note.content) or note.name


def _collect(notes: list[DigestNote]) -> list[tuple[_Insight, str]]:
    """Every candidate insight with its author, in note order."""
    out = []
    for note in notes:
        category = digest_category(note.name, note.content)
        texts = note_insights(note)
        if texts:
            out += [(_Insight(t, fingerprint(t), category), note.author) for t in texts]
        else:
            pointer = f"See full note: {_title(note)}"
            out.append((_Insight(pointer, fingerprint(_title(note)), category), note.author))
    return out


_ASCII_WORD = re.compile(r"\w+", re.ASCII)


def _known(fp: str, existing_lower: str, existing_words: frozenset[str] = frozenset()) -> bool:
    words = [w for w in fp.split(" ") if 4 < len(w) <= 200][:5]
    if len(words) < 3:
        return False
    # A pure ASCII word matches r"\bword\b" exactly when it is one of the text's \w+ runs,
    # so a set lookup replaces a regex scan of the whole notes.md per word.
    return all(w in existing_words if _ASCII_WORD.fullmatch(w)
               else re.search(rf"\b{re.escape(w)}\b", existing_lower, re.ASCII)
               for w in words)


@functools.lru_cache(maxsize=4096)
def _word_set(fp: str) -> frozenset[str]:
    return frozenset(w for w in fp.split(" ") if len(w) > 2)


def _similar(a: str, b: str) -> bool:
    wa, wb = _word_set(a), _word_set(b)
    if len(wa) < 3 or len(wb) < 3:
        return False
    return len(wa & wb) / max(len(wa), len(wb)) > NEAR_DUPLICATE_RATIO


def _credit(kept: _Insight, author: str) -> None:
    if author not in kept.sources:
        kept.sources.append(author)


def _dedupe(candidates: list[tuple[_Insight, str]], existing: str) -> list[_Insight]:
    existing_lower = existing.lower()
    existing_words = frozenset(_ASCII_WORD.findall(existing_lower))
    kept: list[_Insight] = []
    by_fp: dict[str, _Insight] = {}
    for insight, author in candidates:
        if _known(insight.fingerprint, existing_lower, existing_words):
            continue
        if insight.fingerprint in by_fp:
            _credit(by_fp[insight.fingerprint], author)
            continue
        near = next((k for k in kept if _similar(insight.fingerprint, k.fingerprint)), None)
        if near is not None:
            _credit(near, author)
            continue
        insight.sources.append(author)
        kept.append(insight)
        by_fp[insight.fingerprint] = insight
    return kept


def _title_line(notes: list[DigestNote], kept: list[_Insight], date: str) -> str:
    agents = ", ".join(dict.fromkeys(n.author[:1].upper() + n.author[1:] for n in notes))
    categories = list(dict.fromkeys(i.category for i in kept))
    hints = ", ".join(HINTS[c] for c in categories)
    return f"### {date}: {agents}: {hints} ({len(kept)} insights from {len(notes)} notes)\n"


def _groups(kept: list[_Insight]) -> str:
    out = []
    for category in dict.fromkeys(i.category for i in kept):
        members = [i for i in kept if i.category == category]
        out.append(f"#### {LABELS[category]} ({len(members)})\n")
        out += [f"- {i.text} _({', '.join(i.sources)})_\n" for i in members]
        out.append("\n")
    return "".join(out)


def regex_digest(notes: list[DigestNote], date: str, existing_notes: str = "") -> str:
    """The fallback digest for a batch; `existing_notes` is the current notes.md text."""
    candidates = _collect(notes)
    kept = _dedupe(candidates, existing_notes)
    removed = len(candidates) - len(kept)
    text = _title_line(notes, kept, date) + "**By:** Engine (regex fallback)\n\n" + _groups(kept)
    if removed > 0:
        text += f"_Deduplication: {removed} duplicate(s) removed._\n"
    return text
