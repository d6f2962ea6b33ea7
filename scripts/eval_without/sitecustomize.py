"""Switches parts of retrieval off in a daemon started by `scripts/eval.py --without PART`.

Python imports this module at start-up when its directory is on PYTHONPATH, which eval.py
sets, with EVAL_WITHOUT (comma-separated parts), for the daemon it starts and for nothing
else. Each part is switched off by replacing a module-level constant or function of
:mod:`minionsd.memory.retrieval` before the daemon uses it; nothing of this is in the daemon.
"""

from __future__ import annotations

import os
from types import MappingProxyType

BOOSTS = ("scope", "trust", "recency", "path", "importance", "coverage", "pinned", "date",
          "author")
PARTS = ("synonyms", "narrative", "length", "boosts", *BOOSTS, "restated")


def _switch_off(parts: set[str]) -> None:
    from minionsd.memory.retrieval import candidates, dedupe, query, rank
    from minionsd.storage import fts
    from minionsd.text.ftsquery import STOP_WORDS

    def without(part: str) -> bool:
        return part in parts or (part in BOOSTS and "boosts" in parts)

    if without("synonyms"):
        query.synonym_terms = lambda task, own: []
    if without("narrative"):
        query.TASK_STOP_WORDS = STOP_WORDS | query.TASK_BOILERPLATE
    if without("length"):  # FTS5's own length normalisation instead of retrieval's
        defaults = candidates.fetch_candidates.__kwdefaults__
        defaults["length_b"] = fts.BM25_B
    if without("scope"):
        rank.SCOPE_BOOST = MappingProxyType(dict.fromkeys(rank.SCOPE_BOOST, 0.0))
    if without("trust"):
        rank.TRUST_BOOST = MappingProxyType(dict.fromkeys(rank.TRUST_BOOST, 0.0))
    if without("recency"):
        rank.W_RECENCY = 0.0
    if without("path"):
        rank.W_PATH_EXACT = rank.W_PATH_NAME = 0.0
    if without("importance"):
        rank.W_IMPORTANCE = rank.W_CONFIDENCE = 0.0
    if without("coverage"):
        rank.W_COVERAGE = 0.0
    if without("pinned"):
        rank.W_PINNED = 0.0
    if without("date"):
        rank.W_DATE = 0.0
    if without("author"):
        rank.W_AUTHOR = 0.0
    if without("restated"):  # no two bodies share more than all their words
        dedupe.RESTATEMENT = 2.0


_parts = {p for p in os.environ.get("EVAL_WITHOUT", "").split(",") if p}
if _parts and __name__ == "sitecustomize":  # not when eval.py reads PARTS from this file
    _switch_off(_parts)
