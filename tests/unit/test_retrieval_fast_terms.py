"""A task's terms, naming terms and cues come out exactly as the plain algorithm gives them.

The plain references below are retrieval's task reading written the simple way, with the
general functions of minionsd.text.ftsquery (a regular expression per word, every phrasal
verb tried in turn, a generator per step); the code under test takes ASCII short cuts
(memory/retrieval/taskwords.py) and one loop. Compared on bench tasks (scripts/bench_data.py)
and on generated text: identifiers, phrasal verbs in any case and spacing, secrets, and
non-ASCII letters that fold to ASCII ones.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval import query, synonyms, taskwords
from minionsd.memory.retrieval.cues import Cues, task_cues
from minionsd.memory.retrieval.query import (
    FIELD_HEAD_CHARS,
    TASK_REDACT_BUDGET,
    TASK_STOP_WORDS,
    naming_terms,
    task_terms,
    without_secrets,
)
from minionsd.text.ftsquery import code_terms, normalise_phrases, unique_terms
from tests.conftest import REPO

if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))
import bench_data

_COMPOUND_RE = re.compile(r"[^\W_]+(?:[-_]+[^\W_]+)*")
_TOKEN_RE = re.compile(r"[^\W_]+")


# --- the plain references --------------------------------------------------------------------

def reference_all_terms(task: Mapping[str, Any]) -> Iterator[str]:
    budget = TASK_REDACT_BUDGET
    for text, is_path in query._field_texts(task):
        if not text:
            continue
        if budget <= 0:
            return
        budget -= min(len(text), 8 * FIELD_HEAD_CHARS)
        text = without_secrets(text)
        if is_path:
            stem = query.posixpath.splitext(query.normalise_path(text))[0]
            yield from code_terms(stem or text)
        else:
            yield from code_terms(normalise_phrases(text))


def reference_plural_key(term: str) -> str:
    return term[:-1] if len(term) > 3 and term.endswith("s") and not term.endswith("ss") else term


def reference_one_per_plural(terms: Iterator[str]) -> Iterator[str]:
    seen: dict[str, str] = {}
    for term in terms:
        if seen.setdefault(reference_plural_key(term), term) == term:
            yield term


def reference_task_terms(task: Any, max_terms: int = query.MAX_TERMS) -> list[str]:
    if not isinstance(task, Mapping):
        return []
    own = unique_terms(reference_one_per_plural(reference_all_terms(task)), max_terms,
                       TASK_STOP_WORDS, keep_stop_words_if_empty=False)
    if not own:
        return own
    extra = query.synonym_terms(task, own)
    if not extra:
        return own
    room = max(0, max_terms - len(own))
    extra = extra[: max(room, min(query.MAX_SYNONYM_TERMS, max_terms // 4))]
    return own[: max_terms - len(extra)] + extra


def reference_naming_terms(task: Any) -> frozenset[str]:
    if not isinstance(task, Mapping):
        return frozenset()
    found: set[str] = set()
    paths: set[str] = set()
    for text, is_path in query._field_texts(task):
        if not text:
            continue
        text = text[:FIELD_HEAD_CHARS]
        if is_path:
            if text not in paths:
                paths.add(text)
                name = text.replace("\\", "/").rstrip("/").rpartition("/")[2]
                found.add("".join(_TOKEN_RE.findall(query.posixpath.splitext(name)[0])).lower())
            continue
        for word in _COMPOUND_RE.findall(text):
            glued = word.replace("-", "").replace("_", "")
            if len(glued) < len(word):
                found.add(glued.lower())
                found.update(part.lower() for part in _TOKEN_RE.findall(word)
                             if query._names(part))
            elif query._names(word):
                found.add(word.lower())
    return frozenset(found)


def reference_cues(task: Any) -> Cues:
    if not isinstance(task, Mapping):
        return Cues()
    texts = [text[:FIELD_HEAD_CHARS] for text, is_path in query._field_texts(task)
             if text and not is_path]
    words = frozenset(w for text in texts for w in _TOKEN_RE.findall(text.lower()))
    return dataclasses.replace(task_cues(task, texts), words=words)


# --- generated text --------------------------------------------------------------------------

PIECES = (
    "timed out", "Timed  Out", "time\tout", "set up", "SETTING UP", "backed off", "back off",
    "fell back", "falls back", "log in", "logged out", "sign in", "start up", "look up",
    "roll back off", "timeouts", "timeout", "tests", "test", "class", "classes", "ss", "bus",
    "TokenRefresher", "HTTPServer", "getUser", "ERR_CONN_RESET", "token-refresh", "__init__",
    "--", "_-_", "v2", "429", "e1234", "src/auth/token_refresh.py", "./a/../b.ts", "a\\b.py",
    "README.md", "x.", ".py", "password=hunter2xyz", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "[REDACTED:secret]", "Bearer abcdef0123456789abcdef", "token: s3cr3tValue99",
    "\u017fet up", "\u212aey", "\u0130n", "log \u0130n", "stra\u00dfe", "\u039f\u03a3 ",
    "caf\u00e9", "e\u0301", "\uff21\uff22", "\u00b2", "\u0663", "the", "and", "Please fix",
    "October 13, 2023", "2026-11-02", "in July", "Alice", "May", " ", "\t", "\n", ",", "/",
)
TEXT = st.one_of(
    st.text(),
    st.text(alphabet="aAbBsS09-_ ./\t\nxyzXYZ"),
    st.lists(st.sampled_from(PIECES), max_size=12).map(" ".join),
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=4)), max_size=10).map("".join),
)
TASKS = st.fixed_dictionaries(
    {},
    optional={
        "title": st.one_of(TEXT, st.integers(), st.none()),
        "description": TEXT,
        "references": st.one_of(st.lists(st.one_of(TEXT, st.integers()), max_size=4), TEXT),
        "failure_context": TEXT,
        "source_plan": TEXT,
        "files": st.lists(TEXT, max_size=4),
        "pr": st.one_of(
            st.fixed_dictionaries({}, optional={
                "title": TEXT, "body": TEXT, "branch": TEXT, "files": st.lists(TEXT, max_size=4),
            }),
            TEXT,
        ),
    },
)


# --- the comparisons -------------------------------------------------------------------------

@settings(max_examples=600)
@given(TEXT)
def test_the_word_cuts_equal_ftsquerys(text: str) -> None:
    assert taskwords.code_term_list(text) == list(code_terms(text))
    assert taskwords.compounds(text) == set(_COMPOUND_RE.findall(text))
    assert taskwords.with_phrases(text) == normalise_phrases(text)
    assert taskwords.lower_words(text) == _TOKEN_RE.findall(text.lower())
    assert synonyms.words(text) == _TOKEN_RE.findall(text.lower())


@settings(max_examples=400)
@given(TASKS, st.sampled_from((0, 1, 3, 8, 32)))
def test_task_reading_equals_the_plain_algorithm(task: dict[str, Any], max_terms: int) -> None:
    assert task_terms(task, max_terms) == reference_task_terms(task, max_terms)
    assert naming_terms(task) == reference_naming_terms(task)
    assert query.cues(task) == reference_cues(task)


def test_bench_tasks_read_as_the_plain_algorithm_reads_them() -> None:
    vocab = bench_data.Vocabulary(7)
    for seed in (7, 1234):
        for task, _project, _agent in bench_data.tasks(vocab, seed, 150):
            assert task_terms(task) == reference_task_terms(task)
            assert naming_terms(task) == reference_naming_terms(task)
            assert query.cues(task) == reference_cues(task)


@pytest.mark.parametrize("text", [
    "The request timed out, then the worker backed off and fell back to the cache.",
    "TIMED OUT after SETTING UP; rolled back off-hours",
    "log\tin, log  out, signing in, looked up, cleaned up, shut down, started up",
    "rollback backoff fallback timeout setup",  # already one word: nothing to rewrite
])
def test_phrasal_verbs_are_rewritten_as_before(text: str) -> None:
    assert taskwords.with_phrases(text) == normalise_phrases(text)


def test_the_budget_and_the_term_cap_stop_reading_where_they_did() -> None:
    """Fields past the redaction budget are not read, and reading stops at the term cap."""
    big = "alpha " * (TASK_REDACT_BUDGET // 6 + 10)
    task = {"id": "T", "title": "first words", "description": big,
            "failure_context": "omega unseen", "source_plan": "zeta"}
    assert task_terms(task) == reference_task_terms(task)
    many = {"id": "T", "title": " ".join(f"word{i}" for i in range(100)),
            "description": "Timeouts timeout tests test"}
    assert task_terms(many) == reference_task_terms(many)
    assert len(task_terms(many)) == query.MAX_TERMS
