"""The untrusted-input fence around recalled memory: its shape, escaping, the source attribute.

All recalled memory put in front of an agent goes through :func:`fence`. Three guarantees:

* The fenced block holds exactly one opening tag (its first line) and one closing tag (its
  last line). No reader, human or model, can find another ``<UNTRUSTED-INPUT`` or
  ``</UNTRUSTED-INPUT`` in the body, however it is spelt: any case, spaces, slashes or line
  breaks inside, ``_`` for ``-``, invisible or blank characters, accents, HTML entities (also
  double-encoded), ``%3C``-style escapes, fullwidth forms, every look-alike the Unicode
  confusables data lists for the tag's characters (the table in confusables.py), and markup a
  renderer drops inside a word (emphasis and code markers, backslash escapes, inline HTML tags
  and comments: fence_markup.py). Such an attempt has its opening bracket replaced by ``[<]``.
* The source attribute holds no quotes, angle brackets, backslashes, ampersands or control
  characters and is at most 200 characters, so it cannot end the attribute or the tag.
* Cuts never split a character (textcut.py). Text that does not imitate the fence
  passes byte for byte (``a < b``, ``<div>``): a match needs the fence name after a bracket.
"""

from __future__ import annotations

import functools
import html
import html.entities
import re
import unicodedata
from collections.abc import Iterator

from minionsd.text.confusables import CLOSE, OPEN, READER
from minionsd.text.fence_markup import GAP, MARKERS, past_markup
from minionsd.text.fence_markup import plainly_tag_free as _plainly_tag_free
from minionsd.text.fence_name import FENCE_NAME as FENCE_NAME  # re-exported for callers
from minionsd.text.fence_name import MEMORY_PREAMBLE as MEMORY_PREAMBLE
from minionsd.text.textcut import scrub_surrogates, truncate_utf8, truncation_notice
from minionsd.text.textcut import truncate_utf16 as truncate_utf16  # re-exported for callers

OPEN_MARKER_ESCAPE = "[<]"
FENCE_WORDS = ("untrusted", "input")
SOURCE_MAX_CHARS = 200
DEFAULT_MAX_BYTES = 65536

# Look-alikes from the generated table; bracket look-alikes count as one in any form.
_OPEN_LOOKALIKES = frozenset(OPEN)
_CLOSE_LOOKALIKES = frozenset(CLOSE)
_READER = {**READER, **dict.fromkeys(OPEN, "<"), **dict.fromkeys(CLOSE, ">")}
# Blank on screen but not a format (Cf) or mark character: the Hangul fillers, BRAILLE PATTERN
# BLANK, MUSICAL SYMBOL NULL NOTEHEAD; and unassigned code points Unicode reserves as ignorable.
_INVISIBLE_EXTRA = frozenset("\u115f\u1160\u3164\uffa0\u034f\u2800\U0001d159")
_IGNORABLE_UNASSIGNED = ((0x2065, 0x2065), (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF))

# Where a fence imitation can start in the raw text: a bracket look-alike, or the first
# character of an HTML entity or of a %3C / \u003c / \x3c escape (in any NFKD-equivalent form).
_START_CHARS = "".join(sorted(_OPEN_LOOKALIKES)) + "&\ufe60\uff06%\ufe6a\uff05\\\ufe68\uff3c"
_START_RE = re.compile("[" + re.escape(_START_CHARS) + "]")

# Mirrors html.unescape's tokeniser so that whatever it would decode, we decode too.
_CHARREF_RE = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
# Escapes a reader may decode in their head: %75, \\u0075, \\u{75}, \\x75 for "u" (and %3C
# for "<"); %253C is %3C encoded once more, and is decoded twice like &amp;lt;.
_ESCAPED_CHAR_RE = re.compile(
    r"%([0-9a-f]{2})|\\u([0-9a-f]{4})|\\u\{0{0,4}([0-9a-f]{1,6})\}|\\x([0-9a-f]{2})",
    re.IGNORECASE)
_REDECODED = ("&", "%")  # what a second decoding pass starts from
_ENTITY_LOOKAHEAD = 40

_WS_RE = re.compile(r"\s+")


def _is_invisible(ch: str) -> bool:
    cat = unicodedata.category(ch)
    if cat == "Cc":
        # Python counts \x1c-\x1f and \x85 as spaces, but nothing renders them: a reader
        # sees "un\x1ctrusted" as one word.
        return ch not in "\t\n\x0b\x0c\r"
    if cat == "Cn":  # unassigned: a default-ignorable one is drawn as nothing
        return any(lo <= ord(ch) <= hi for lo, hi in _IGNORABLE_UNASSIGNED)
    return cat in ("Cf", "Mn", "Me") or ch in _INVISIBLE_EXTRA


def _visible_chars(text: str, start: int) -> Iterator[tuple[str, int, int]]:
    """Stage 1: NFKD per character, marks and other invisible characters dropped (so "ú" reads
    as "u", like "u" + U+0301), original spans kept."""
    for i in range(start, len(text)):
        ch = text[i]
        norm = ch if ch.isascii() else unicodedata.normalize("NFKD", ch)
        for out in norm:
            if not _is_invisible(out):
                yield out, i, i + 1


def _named_entity_length(name_part: str) -> int:
    """How many characters of `name_part` (text after '&') html.unescape treats as the name."""
    if name_part in html.entities.html5:
        return len(name_part)
    for x in range(len(name_part) - 1, 1, -1):
        if name_part[:x] in html.entities.html5:
            return x
    return 0


def _decoded_chars(text: str, start: int) -> Iterator[tuple[str, int, int]]:
    """Stage 2: entities and %3C-style escapes decoded, each decoded char spanning its source."""
    stream = _visible_chars(text, start)
    pending: list[tuple[str, int, int]] = []

    def pull(n: int) -> list[tuple[str, int, int]]:
        while len(pending) < n:
            item = next(stream, None)
            if item is None:
                break
            pending.append(item)
        return pending[:n]

    while True:
        head = pull(1)
        if not head:
            return
        ch, span_start, span_end = head[0]
        if ch in "&%\\":
            window = pull(_ENTITY_LOOKAHEAD)
            decoded, used = _decode_at(window)
            if used:
                span_end = window[used - 1][2]
                del pending[:used]
                # "&amp;lt;" and "%253C" read as "<" to anyone who decodes twice; keep decoding.
                for _ in range(4):
                    if decoded not in _REDECODED:
                        break
                    window = [(decoded, span_start, span_end), *pull(_ENTITY_LOOKAHEAD - 1)]
                    more, used_more = _decode_at(window)
                    if used_more <= 1:
                        break
                    span_end = window[used_more - 1][2]
                    del pending[: used_more - 1]
                    decoded = more
                if not decoded.isascii():
                    decoded = unicodedata.normalize("NFKD", decoded)
                for out in decoded:
                    yield out, span_start, span_end
                continue
        del pending[:1]
        yield ch, span_start, span_end


def _decode_at(window: list[tuple[str, int, int]]) -> tuple[str, int]:
    """Decode an entity or escape at the start of `window`; returns (text, items consumed)."""
    return _decode_str("".join(item[0] for item in window))


def _decode_str(s: str) -> tuple[str, int]:
    """Decode an entity or escape at the start of `s`; returns (text, characters consumed)."""
    m = _ESCAPED_CHAR_RE.match(s)
    if m:
        code = int(next(group for group in m.groups() if group is not None), 16)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:  # a lone surrogate reads as nothing
            return "", 0
        return chr(code), m.end()
    m = _CHARREF_RE.match(s)
    if not m:
        return "", 0
    body = m.group(1)
    if body.startswith("#"):
        return html.unescape(m.group(0)), m.end()  # exactly as html.unescape would
    length = _named_entity_length(body)
    if not length:
        return "", 0
    return html.entities.html5[body[:length]], 1 + length


def _reader_first(text: str) -> str:
    """The first character a reader sees in decoded `text` (stages 1 and 3), or ''."""
    for ch in text if text.isascii() else unicodedata.normalize("NFKD", text):
        view = _reader_view(ch)
        if view:
            return view[0]
    return ""


def _ascii_class(target: str) -> str:
    """Regex class of the ASCII characters a reader takes for `target` (see _reader_view)."""
    chars = {target, target.upper()}
    chars |= {k for k, v in _READER.items() if v == target and k.isascii()}
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


def _tag_rest_re() -> re.Pattern[str]:
    """After a bracket, in plain ASCII: the longest start of "/untrusted-input" that is
    there; group 1 is set only when all of it is. Letters and separators as the table says."""
    atoms = [GAP + _ascii_class(c) for c in "untrusted"]
    atoms += [rf"(?:{GAP}{_ascii_class('-')})*"] + [GAP + _ascii_class(c) for c in "inpu"]
    atoms.append(GAP + "(" + _ascii_class("t") + ")")
    pattern = ""
    for atom in reversed(atoms):
        pattern = f"(?:{atom}{pattern})?"
    return re.compile(rf"(?:{GAP}{_ascii_class('/')})*{GAP}" + pattern, re.DOTALL)


_TAG_REST_RE = _tag_rest_re()
_GAP_RE = re.compile(GAP)
_GAP_CHARS = frozenset(" \t\n\r\x0b\x0c") | MARKERS
# Characters whose view is themselves: ASCII text and whitespace, except the starts of escapes.
_NOT_PLAIN_RE = re.compile(r"[^\t\n\x0b\x0c\r\x20-\x24\x27-\x5b\x5d-\x7e]")
# ASCII characters a reader sees (not control characters other than whitespace).
_NOT_ASCII_VISIBLE_RE = re.compile(r"[^\t\n\x0b\x0c\r\x20-\x7e]")
_PLAIN_LOOKAHEAD = 64


def _no_tag_can_start(text: str, start: int) -> bool:
    """A shortcut, so text full of '<' or '&' (HTML, code) does not pay for the exact check
    (:func:`_fence_tag_at`) at each; True only when that would find no tag there either."""
    ch = text[start]
    if ch in "&%\\":
        window = text[start : start + 2 * _ENTITY_LOOKAHEAD]
        if _NOT_ASCII_VISIBLE_RE.search(window):
            return False
        # The same windows and steps as _decoded_chars, on characters that need no NFKD.
        decoded, used = _decode_str(window[:_ENTITY_LOOKAHEAD])
        if not used:
            return True  # the character stands for itself, and it is not a bracket
        for _ in range(4):
            if decoded not in _REDECODED:
                break
            more, used_more = _decode_str(decoded + window[used : used + _ENTITY_LOOKAHEAD - 1])
            if used_more <= 1:
                break
            used += used_more - 1
            decoded = more
        first = _reader_first(decoded)
        if first != "<":
            return first != ""
        if _reader_first(decoded[1:]) or len(decoded) > 1:
            return False  # an entity for several characters: leave it to the exact check
        after = start + used
    elif ch in _OPEN_LOOKALIKES:
        after = start + 1
    else:
        return False  # a compatibility form of '&', '%' or a backslash
    limit = min(len(text), after + _PLAIN_LOOKAHEAD)
    for pos in range(after, limit):  # past spaces and slashes, as _fence_tag_at goes
        view = _single_char_view(text[pos])
        if view == "<":
            return False  # perhaps inline HTML inside the tag: the exact check decides
        if view is None or view == "u" or text[pos] in MARKERS:
            break
        if not (view.isspace() or view == "/"):
            return True  # "<div", "<<", "<=", "<é", "くノ一": nothing that can continue a tag
    else:
        return limit == len(text)
    stop = _NOT_PLAIN_RE.search(text, after, limit)
    if stop:
        limit = stop.start()
    m = _TAG_REST_RE.match(text, after, limit)
    assert m is not None  # every part of the pattern is optional
    if m.group(1):
        return False  # a tag: the exact check finds it and reports its span
    # Stopped by a character that cannot continue a tag (markup after the last letter can
    # be followed by more), or by the end of the text.
    end = m.end()
    if end < limit and text[end] in _GAP_CHARS:
        end = _GAP_RE.match(text, end, limit).end()  # type: ignore[union-attr]
    if end < limit and text[end] == "<":
        return False  # inline HTML may go on with the tag: the exact check decides
    return end < limit or (stop is None and limit == len(text))


def _reader_view(ch: str) -> str:
    """Stage 3 for one visible character: a tag character's look-alike reads as that ASCII
    character, anything else as its case-folded self without the marks folding can add. The
    table holds both cases, so it comes before folding only (Greek capital nu is "n", small
    nu is "v"; "L" is "l", not a look-alike of "I")."""
    hit = _READER.get(ch)
    if hit is not None:
        return hit
    folded = ch.casefold()
    if len(folded) == 1 and (ch.isascii() or not _is_invisible(folded)):
        return folded
    return "".join(out for out in folded if not _is_invisible(out))


def _reader_chars(text: str, start: int) -> Iterator[tuple[str, int, int]]:
    """Stage 3: case folded, look-alikes mapped to the ASCII character they imitate."""
    for ch, s, e in _decoded_chars(text, start):
        for out in _reader_view(ch):
            yield out, s, e


@functools.lru_cache(maxsize=4096)  # pure, and text repeats its characters: keeps scans cheap
def _single_char_view(ch: str) -> str | None:
    """What a reader sees of `ch` alone, when that does not depend on its neighbours."""
    norm = ch if ch.isascii() else unicodedata.normalize("NFKD", ch)
    if len(norm) > 1:
        norm = "".join(c for c in norm if not _is_invisible(c))  # "é" is "e" + a mark
    if len(norm) != 1 or norm in "&%\\" or _is_invisible(norm):
        return None  # may start an escape, or vanish and let the next character count
    view = _reader_view(norm)
    return view if len(view) == 1 else None


def _fence_tag_at(text: str, start: int,
                  words: tuple[str, ...] = FENCE_WORDS) -> tuple[int, int] | None:
    """If a fence (or `words`) open/close imitation starts at `start`, its bracket's span."""
    chars = _reader_chars(text, start)
    first = next(chars, None)
    if first is None or first[0] != "<":
        return None
    bracket = (first[1], first[2])
    chars = past_markup(text, chars)  # markup and spaces inside the tag: "UN**TRUSTED**"
    item = next(chars, None)
    # Slashes in any number: "</", "<//", "<\\/" (a JSON-escaped slash).
    while item is not None and item[0] == "/":
        item = next(chars, None)
    for word_index, word in enumerate(words):
        if word_index:
            while item is not None and item[0] == "-":
                item = next(chars, None)
        for letter in word:
            if item is None or item[0] != letter:
                return None
            item = next(chars, None)
    return bracket


def tag_imitation_spans(text: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """The bracket spans of every imitation of the tag `<words...` or `</words...` (words
    joined by any run of dashes), read as the fence reads its own tag: for other tags, such
    as the LLM prompt's <note> blocks. The fence's shortcuts know only the fence's words."""
    fence_tag = words == FENCE_WORDS
    if fence_tag and _plainly_tag_free(text):
        return []
    spans: list[tuple[int, int]] = []
    last_end = 0
    for m in _START_RE.finditer(text):
        start = m.start()
        if start < last_end or (fence_tag and _no_tag_can_start(text, start)):
            continue
        span = _fence_tag_at(text, start, words)
        if span is not None:
            spans.append(span)
            last_end = span[1]
    return spans


def contains_fence_tag(text: str) -> bool:
    """True when `text` holds something a reader could take for a fence open or close tag."""
    return bool(tag_imitation_spans(text, FENCE_WORDS))


def escape_fence_markers(body: str) -> str:
    """Neutralise every imitation of the fence tags in `body`; leave everything else alone."""
    for _ in range(4):
        spans = tag_imitation_spans(body, FENCE_WORDS)
        if not spans:
            return body
        parts, pos = [], 0
        for s, e in spans:
            parts += [body[pos:s], OPEN_MARKER_ESCAPE]
            pos = e
        body = "".join(parts) + body[pos:]
    # Not reachable with the marker above; kept so a future marker change fails safe.
    return "".join(OPEN_MARKER_ESCAPE if ch in _OPEN_LOOKALIKES else ch for ch in body)


def sanitize_source(source: str) -> str:
    """Make `source` safe inside a double-quoted attribute: see the module docstring."""
    text = unicodedata.normalize("NFKC", scrub_surrogates(source))
    text = _WS_RE.sub(" ", text)
    kept = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat[0] == "C" or cat in ("Pi", "Pf"):
            continue
        if ch in "\"'`\\&" or ch in _OPEN_LOOKALIKES or ch in _CLOSE_LOOKALIKES:
            continue
        kept.append(ch)
    text = _WS_RE.sub(" ", "".join(kept)).strip()
    text = text[:SOURCE_MAX_CHARS].rstrip()
    return text or "unknown"


def fence_with_status(
    body: str, source: str, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[str, bool]:
    """:func:`fence`, and whether the body had to be cut (escaping can make it longer)."""
    # Escaping only lengthens text, so nothing past max_bytes of the raw body can survive;
    # cutting first also bounds the work on a huge body.
    raw, raw_cut = truncate_utf8(body, max_bytes)
    escaped = escape_fence_markers(raw)
    content, cut = truncate_utf8(escaped, max_bytes)
    if cut or raw_cut:
        notice = truncation_notice(len(body.encode("utf-8", errors="replace")), max_bytes)
        room = max_bytes - len(notice.encode("utf-8"))
        kept = truncate_utf8(escaped, room)[0] if room > 0 else ""
        # The notice is ASCII; with an absurdly small limit it is cut too, never the limit.
        content = truncate_utf8(kept + notice, max_bytes)[0]
    text = f'<{FENCE_NAME} source="{sanitize_source(source)}">\n{content}\n</{FENCE_NAME}>'
    return text, cut or raw_cut


def fence(body: str, source: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Wrap `body` as untrusted evidence; the content between the tags is <= max_bytes bytes."""
    return fence_with_status(body, source, max_bytes)[0]
