"""Cuts that never split a character: UTF-8 cuts on a code-point boundary, UTF-16 cuts that
keep surrogate pairs whole, and the notice a cut body ends with. Pure functions; the fence
(minionsd/fence.py) re-exports them.
"""

from __future__ import annotations

import re

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def utf8_len(text: str) -> int:
    """`text`'s size in UTF-8 bytes (a lone surrogate counts as its three bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def scrub_surrogates(text: str) -> str:
    """Replace lone surrogates (possible in JSON input) with U+FFFD; UTF-8 cannot carry them."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")  # far cheaper than the regex when, as almost always, none is there
    except UnicodeEncodeError:
        return _SURROGATE_RE.sub("\ufffd", text)
    return text


def truncate_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """Longest prefix of `text` within `max_bytes` UTF-8 bytes; returns (prefix, was_cut).

    Lone surrogates have no UTF-8 form, so they are replaced by U+FFFD first.
    """
    text = scrub_surrogates(text)
    limit = max(0, max_bytes)
    if len(text) * 4 <= limit:
        return text, False
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    # errors="ignore" drops only the partial character the byte cut left at the end.
    return data[:limit].decode("utf-8", errors="ignore"), True


def truncate_utf16(text: str, max_units: int) -> tuple[str, bool]:
    """Longest prefix of `text` within `max_units` UTF-16 code units; returns (prefix, was_cut).

    A character outside the BMP counts two units and is dropped whole if only one would fit.
    """
    limit = max(0, max_units)
    if len(text) * 2 <= limit:
        return text, False
    units = text.encode("utf-16-le", errors="surrogatepass")
    if len(units) <= 2 * limit:
        return text, False
    cut = units[: 2 * limit]
    last = int.from_bytes(cut[-2:], "little") if cut else 0
    if 0xD800 <= last <= 0xDBFF:
        following = int.from_bytes(units[2 * limit : 2 * limit + 2], "little")
        if 0xDC00 <= following <= 0xDFFF:
            cut = cut[:-2]
    return cut.decode("utf-16-le", errors="surrogatepass"), True


def truncation_notice(original_bytes: int, max_bytes: int) -> str:
    return f"\n[truncated: {original_bytes} bytes in the original, cut to fit {max_bytes}]"
