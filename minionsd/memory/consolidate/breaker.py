"""Duplicate-storm detection and the content hash consolidation keys notes by.

A note's content hash covers every byte of the file (front matter included), so two notes
count as copies only when they are identical: notes that share a long template, a prefix or a
length are different notes and are never archived as a storm. The same hash keys the record
upsert, so a batch redone after a crash finds the record it already wrote.
"""

from __future__ import annotations

import hashlib
from collections import Counter

STORM_RATIO = 0.8
STORM_MIN_COPIES = 3


def content_hash(text: str | None) -> str:
    """SHA-256 hex of the whole text as UTF-8 (None counts as the empty text)."""
    return hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()


def find_storm(hashes: list[str]) -> str | None:
    """The hash making up more than 80% of the batch with at least 3 copies, else None.

    The minimum copy count fixes the original's quirk where a lone note (1/1) or two identical
    notes counted as a storm.
    """
    if not hashes:
        return None
    top, count = Counter(hashes).most_common(1)[0]
    if count >= STORM_MIN_COPIES and count / len(hashes) > STORM_RATIO:
        return top
    return None
