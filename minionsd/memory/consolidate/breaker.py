"""Duplicate-storm detection and content hashes for consolidation.

Two different hashes live here on purpose. `storm_hash` is the original's cheap fingerprint
(first 200 UTF-16 code units plus the length), kept so storms are judged exactly as before.
`content_hash` covers every byte and is what idempotency keys use: two notes that share a
prefix and a length must never be mistaken for the same note when records are upserted.
"""

from __future__ import annotations

import hashlib
from collections import Counter

STORM_PREFIX_CODE_UNITS = 200
STORM_RATIO = 0.8
STORM_MIN_COPIES = 3


def storm_hash(text: str | None) -> str:
    """SHA-256 hex of (first 200 UTF-16 code units + ":" + length in code units)."""
    units = (text or "").encode("utf-16-le", "surrogatepass")
    # A cut through a surrogate pair leaves a lone half; like Node, hash it as U+FFFD.
    prefix = units[: STORM_PREFIX_CODE_UNITS * 2].decode("utf-16-le", "replace")
    key = f"{prefix}:{len(units) // 2}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def content_hash(text: str) -> str:
    """SHA-256 hex of the whole text as UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
