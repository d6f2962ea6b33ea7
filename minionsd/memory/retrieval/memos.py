"""Memos of pure functions of record text that retrieval calls for the same records again and
again: a body's dedupe words and shingles, a record's rendered pack item, a created_at parsed.

They belong to the RecallIndex (one per open database), so their lifetime is the database's
and nothing is module-global. Each is bounded by entries, and callers memoise only values of
ordinary size (dedupe.SHINGLES_CACHED_CHARS, pack.RENDER_CACHED_CHARS), so at worst ~14 MB of
shingles (128 bodies of up to 4,096 characters, ~26 bytes a character), ~8 MB of rendered items
(1,024 bodies of up to 8,192 characters) and 4,096 parsed dates. Measured on the bench: the
rendered items and shingles save ~12% of the instructions of a task asked before.
"""

from __future__ import annotations

import functools

from minionsd.memory.retrieval import dedupe, pack, rank


class TextMemos:
    def __init__(self) -> None:
        self.comparable = functools.lru_cache(maxsize=128)(dedupe.comparable_body)
        self.rendered = functools.lru_cache(maxsize=1024)(pack.render_fields)
        self.moment = functools.lru_cache(maxsize=4096)(rank.parse_moment)
