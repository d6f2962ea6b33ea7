"""Values shared by the consolidation building blocks, and the UTF-16 measure they use.

Several limits inherited from the original (note excerpt 8,000, insight cap 300, keyword line
bounds) were JavaScript string lengths, i.e. UTF-16 code units. Measuring them the same way
keeps outputs identical for text outside the Basic Multilingual Plane (emoji count as two).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DigestNote:
    """One inbox note as the digest sees it: file name, resolved author, raw content, and
    the path (relative to the home) its knowledge entry gets, when it is known."""

    name: str
    author: str
    content: str
    kb_path: str | None = None


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units (a JavaScript string's `length`)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_cut(text: str, limit: int) -> str:
    """The longest prefix of at most `limit` UTF-16 code units that ends on a whole character."""
    if utf16_len(text) <= limit:
        return text
    units = text.encode("utf-16-le", "surrogatepass")[: limit * 2]
    if units and 0xD800 <= int.from_bytes(units[-2:], "little") <= 0xDBFF:
        units = units[:-2]  # never keep half of a surrogate pair
    return units.decode("utf-16-le", "surrogatepass")


class Abandoned(Exception):
    """Shutdown asked the batch to stop; the journal keeps it open for the next start."""
