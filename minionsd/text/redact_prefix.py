"""Redacting only the head of a long text that is stored cut (a retraction reason)."""

from __future__ import annotations

from minionsd.text.redact import redact

# Longer than any secret a pattern can leave half-matched at a cut (a long JWT, a URL's query).
PREFIX_MARGIN = 16_384
FIRST_HEAD = 65_536  # the smallest head tried first


def redact_prefix(text: str, keep: int) -> str:
    """`redact(text)[:keep]`, with work bounded by what is kept rather than by `text`.

    A growing head of the text is redacted until the redacted head is PREFIX_MARGIN longer
    than `keep`: a secret the cut left unrecognised sits in that tail, never in the part kept.
    (`re` holds the GIL for a whole scan, so a megabyte would stall every other thread.)
    """
    size = max(4 * (keep + PREFIX_MARGIN), FIRST_HEAD)
    while True:
        if size >= len(text):
            return redact(text)[:keep]
        head = redact(text[:size])
        if len(head) >= keep + PREFIX_MARGIN:
            return head[:keep]
        size *= 4
