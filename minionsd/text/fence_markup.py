"""What a Markdown or HTML renderer drops from inside a word, for the fence's tag check.

`</UN**TRUSTED**-INPUT>`, `</UNTRUSTED\\-INPUT>`, `</UNTRUS<b></b>TED-INPUT>`,
`</UNTRUSTED-<!-- x -->INPUT>` and `</U N T R U S T E D-INPUT>` all render (or read) as the
fence tag: emphasis and code markers, a backslash before punctuation, inline HTML tags and
comments, and spaces between letters are skipped after a tag's bracket (minionsd.text.fence).
Pure functions.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator

# Emphasis, strike-through, code, highlight, superscript and insertion markers.
MARKERS = frozenset("*_`~^=+")
_PUNCTUATION = frozenset(string.punctuation)
# An inline HTML comment or tag, as written (an entity-encoded one is shown, not rendered).
HTML_RE = re.compile(r"<!--.{0,200}?-->|</?[A-Za-z][^<>]{0,200}>", re.DOTALL)
# Between two letters of the tag, in plain ASCII: what past_markup skips, for the shortcut's
# regex in fence.py. A backslash or a '<' there leaves the work to the exact check.
GAP = r"[\s*_`~^=+]*"
# Dropped before looking for the word "untrusted" in plain ASCII text: whitespace, markers
# and invisible control characters; then the word may still be split by HTML tags.
_DROP = str.maketrans(dict.fromkeys([*"*_`~^=+ \t\n\r\x0b\x0c\x7f", *map(chr, range(0x20))]))
_SPLIT_WORD_RE = re.compile("(?:<!--.{0,200}?-->|</?[a-z][^<>]{0,200}>)*".join("untrusted"),
                            re.DOTALL)


def past_markup(text: str, items: Iterator[tuple[str, int, int]]
                ) -> Iterator[tuple[str, int, int]]:
    """`items` (reader characters of `text` with their spans) without the markup a renderer
    drops inside a word, and without whitespace."""
    skip_to = -1
    for item in items:
        ch, start, end = item
        if start < skip_to:
            continue
        raw = text[start:end]
        if ch.isspace() or ch in MARKERS or raw in MARKERS:
            continue
        if raw == "\\" and text[end:end + 1] in _PUNCTUATION:
            continue  # a Markdown escape: the next character shows as itself
        if raw == "<":
            tag = HTML_RE.match(text, start)
            if tag is not None:
                skip_to = tag.end()
                continue
        yield item


def plainly_tag_free(text: str) -> bool:
    """True for ASCII text without '&', '%' or '\\' where the letters "untrusted" never
    follow each other, markup and invisible characters aside (markers, whitespace, and HTML
    tags or comments). In such text every letter a reader sees is written as itself (no ASCII
    character is a look-alike of one of those letters), and a tag needs the whole word. Most
    memory is like this, and this is a few C-level passes instead of a look at every '<'."""
    if not text.isascii() or "&" in text or "%" in text or "\\" in text:
        return False
    squeezed = text.lower().translate(_DROP)
    if "untrusted" in squeezed:
        return False
    return "<" not in squeezed or _SPLIT_WORD_RE.search(squeezed) is None
