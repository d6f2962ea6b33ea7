"""Synonym expansion of task terms (minionsd.memory.retrieval.synonyms and query.task_terms)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval import synonyms
from minionsd.memory.retrieval.query import MAX_SYNONYM_TERMS, MAX_TERMS, task_terms

TOKEN = re.compile(r"^[^\W_]+$")


def test_stem_joins_inflections() -> None:
    assert {synonyms.stem(w) for w in ("throttle", "throttled", "throttling")} == {"throttl"}
    assert synonyms.stem("pipelines") == synonyms.stem("pipeline")
    assert synonyms.stem("ci") == "ci" and synonyms.stem("oom") == "oom"


def test_paraphrases_add_the_group_terms() -> None:
    assert synonyms.expansions(synonyms.words("we are being rate limited")) == ["429", "throttle"]
    assert synonyms.expansions(synonyms.words("Out of memory in the worker")) == ["oom"]
    assert synonyms.expansions(synonyms.words("exit code 137 (SIGKILL)")) == ["oom"]
    assert synonyms.expansions(synonyms.words("the nightly pipeline")) == ["ci"]
    assert synonyms.expansions(synonyms.words("HTTP 429 from the IdP")) == ["throttle"]


def test_phrases_match_whole_and_in_order() -> None:
    assert synonyms.expansions(synonyms.words("memory out of the box")) == []
    assert synonyms.expansions(synonyms.words("a limit on the rate")) == []
    assert synonyms.expansions(synonyms.words("")) == []


def test_task_terms_append_synonyms_after_the_tasks_own_words() -> None:
    terms = task_terms({"id": "W-1", "title": "Export worker ran out of memory"})
    assert terms == ["export", "worker", "ran", "memory", "oom"]
    # A synonym already among the task's words is not added twice (nor its plural).
    assert task_terms({"id": "W-2", "title": "OOM: out of memory"}) == ["oom", "memory"]
    assert task_terms({"id": "W-3", "title": "the and of"}) == []  # still no_terms


def test_synonyms_get_slots_in_a_long_task() -> None:
    words = " ".join(f"word{i}" for i in range(60))
    terms = task_terms({"id": "W-4", "title": "pipeline throttled", "description": words})
    assert len(terms) == MAX_TERMS
    assert terms[:2] == ["pipeline", "throttled"]
    assert terms[-3:] == ["429", "throttle", "ci"]  # in the order of the groups


@given(st.text(max_size=300))
def test_expansions_are_new_index_tokens(text: str) -> None:
    found = synonyms.expansions(synonyms.words(text))
    assert len(found) == len(set(found))
    assert all(TOKEN.match(t) and t == t.lower() for t in found)
    assert not set(found) & set(synonyms.words(text))


@given(st.lists(st.sampled_from(["oom", "rate", "limit", "ci", "pipeline", "db", "prod", "flaky",
                                 "k8s", "x", "error", "timed", "out", "w1", "w2", "w3"]),
                max_size=60))
def test_task_terms_stay_within_the_cap(words: list[str]) -> None:
    terms = task_terms({"id": "W", "description": " ".join(words)})
    assert len(terms) <= MAX_TERMS and len(terms) == len(set(terms))
    own = task_terms({"id": "W", "description": " ".join(words)}, max_terms=MAX_TERMS)
    assert own == terms
    assert sum(t not in words for t in terms) <= max(MAX_SYNONYM_TERMS, MAX_TERMS - len(set(words)))


def test_continued_lines_and_status_codes() -> None:
    assert synonyms.expansions(synonyms.words("we are told to slow down")) == ["429", "throttle"]
    assert synonyms.expansions(synonyms.words("502 Bad Gateway from the LB")) == []  # has 502
    assert synonyms.expansions(synonyms.words("the LB answers bad gateway")) == ["502"]
    assert synonyms.expansions(synonyms.words("users are signed out")) == ["logout"]


def test_common_words_alone_trigger_nothing() -> None:
    for text in ("the page is slow", "refresh the cache", "a timeout in the client",
                 "set the variable", "one page", "run the tests"):
        assert synonyms.expansions(synonyms.words(text)) == [], text


def test_narrative_words_are_not_search_terms() -> None:
    terms = task_terms({"id": "W-5", "title": "Indexer never becomes ready",
                        "description": "Probably someone sees it restart again"})
    assert terms == ["indexer", "ready", "restart"]


@given(st.text(alphabet=st.characters(categories=["Ll", "Nd"]), max_size=60))
def test_stem_keeps_the_first_three_letters(word: str) -> None:
    assert synonyms.stem(word)[:3] == word[:3]
