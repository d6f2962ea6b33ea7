"""Memos of pure functions of record text that retrieval calls for the same records again and
again: a body's dedupe words and shingles, a record's rendered pack item, a created_at parsed;
and of a task's text, which an agent's prompts ask about again and again: its query (terms,
naming terms, files, cues).

They belong to the RecallIndex (one per open database), so their lifetime is the database's
and nothing is module-global. Each is bounded by entries, and callers memoise only values of
ordinary size (dedupe.SHINGLES_CACHED_CHARS, pack.RENDER_CACHED_CHARS), so at worst ~14 MB of
shingles (128 bodies of up to 4,096 characters, ~26 bytes a character), ~8 MB of rendered items
(1,024 bodies of up to 8,192 characters) and 4,096 parsed dates. Measured on the bench: the
rendered items and shingles save ~12% of the instructions of a task asked before.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minionsd.memory.retrieval import dedupe, pack, query, rank
from minionsd.memory.retrieval.cues import Cues

TASK_QUERIES = 256  # tasks whose query is remembered
TASK_KEY_CHARS = 16_384  # a task whose JSON text is longer is worked out every time


@dataclass(frozen=True)
class TaskQuery:
    """What retrieval reads from a task's text (memory/retrieval/query.py)."""

    terms: tuple[str, ...]
    naming: frozenset[str]
    files: tuple[str, ...]
    cues: Cues

    @classmethod
    def of(cls, task: Mapping[str, Any], terms: list[str] | None = None) -> TaskQuery:
        """The task's query (`terms`: its terms, when the caller has them already)."""
        return cls(tuple(query.task_terms(task) if terms is None else terms),
                   query.naming_terms(task), tuple(query.task_files(task)), query.cues(task))


class TextMemos:
    def __init__(self) -> None:
        self.comparable = functools.lru_cache(maxsize=128)(dedupe.comparable_body)
        self.rendered = functools.lru_cache(maxsize=1024)(pack.render_fields)
        self.moment = functools.lru_cache(maxsize=4096)(rank.parse_moment)
        self._queries: OrderedDict[str, TaskQuery] = OrderedDict()
        self._lock = threading.Lock()

    def task_query(self, task: Mapping[str, Any]) -> TaskQuery:
        """TaskQuery.of(task), remembered by the task's JSON text (keys in their order, so
        only the same task in every detail shares an entry)."""
        try:
            key = json.dumps(task, ensure_ascii=False)
        except (TypeError, ValueError):
            return TaskQuery.of(task)
        if len(key) > TASK_KEY_CHARS:
            return TaskQuery.of(task)
        with self._lock:
            found = self._queries.get(key)
            if found is not None:
                self._queries.move_to_end(key)
                return found
        made = TaskQuery.of(task)
        with self._lock:
            self._queries[key] = made
            while len(self._queries) > TASK_QUERIES:
                self._queries.popitem(last=False)
        return made
