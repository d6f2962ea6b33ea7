"""Task -> retrieval terms and files."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval.query import (
    MAX_TERMS,
    TASK_BOILERPLATE,
    TASK_STOP_WORDS,
    naming_terms,
    normalise_path,
    task_files,
    task_terms,
)


def test_fields_in_order_and_code_aware() -> None:
    task = {
        "id": "W-1",
        "title": "TokenRefresher timeouts",
        "description": "The request timed out with ERR_CONN_RESET.",
        "references": ["docs/auth.md"],
        "failure_context": "AssertionError in test_refresh",
        "source_plan": "plan: rotate keys",
        "files": ["src/auth/token_refresh.py"],
        "pr": {"title": "Harden refresh", "body": "Backoff added", "branch": "feat/jitter",
               "files": ["src/auth/jitter.py"]},
    }
    assert task_terms(task) == [
        "tokenrefresher", "token", "refresher", "timeouts", "request", "err", "conn", "reset",
        "errconnreset", "docs", "auth", "md", "assertionerror", "assertion", "error", "test",
        "refresh", "testrefresh", "plan", "rotate", "keys", "src", "tokenrefresh", "harden",
        "backoff", "added", "feat", "jitter",
    ]


def test_inflections_meet() -> None:
    # "timed out" becomes "timeout", and the plural after its singular is dropped.
    assert task_terms({"title": "timeout", "description": "timed out, timeouts"}) == ["timeout"]
    assert task_terms({"title": "Tests", "description": "test"}) == ["tests"]
    assert task_terms({"title": "class classes"}) == ["class", "classes"]


def test_stop_words_and_boilerplate_leave_nothing() -> None:
    task = {"title": "Please fix the issue", "description": "It should be so, thanks!"}
    assert task_terms(task) == []
    assert task_terms({"title": "!!! ... ???"}) == []
    assert "fix" in TASK_BOILERPLATE and "fix" in TASK_STOP_WORDS
    for word in ("test", "error", "bug", "request", "cache", "retry", "null"):
        assert word not in TASK_STOP_WORDS


def test_missing_and_wrong_types_are_tolerated() -> None:
    assert task_terms({}) == []
    assert task_terms({"id": "W-1"}) == []
    weird: dict[str, Any] = {
        "title": 5, "description": None, "references": "single-ref", "failure_context": ["x"],
        "files": "src/one.py", "pr": "not a dict",
    }
    assert task_terms(weird) == ["single", "ref", "singleref", "src", "one"]
    assert task_terms({"pr": {"files": [1, None, "lib/two.ts"]}}) == ["lib", "two"]
    assert task_terms("nope") == []  # type: ignore[arg-type]
    assert task_files("nope") == []  # type: ignore[arg-type]


def test_at_most_32_unique_terms() -> None:
    task = {"description": " ".join(f"word{i} word{i}" for i in range(100))}
    terms = task_terms(task)
    assert len(terms) == MAX_TERMS == 32
    assert terms == [f"word{i}" for i in range(32)]
    assert task_terms(task, max_terms=3) == ["word0", "word1", "word2"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("src/a.py", "src/a.py"),
        ("./src/a.py", "src/a.py"),
        ("src\\win\\a.py", "src/win/a.py"),
        ("src//a/../b.py ", "src/b.py"),
        ("src/dir/", "src/dir"),
        ("", ""),
        ("./", ""),
        (".", ""),
    ],
)
def test_normalise_path(raw: str, expected: str) -> None:
    assert normalise_path(raw) == expected


def test_task_files() -> None:
    task = {"files": ["./src/a.py", "src/a.py", "", "lib/b.ts"], "pr": {"files": ["src\\c.go"]}}
    assert task_files(task) == ["src/a.py", "lib/b.ts", "src/c.go"]
    assert task_files({"files": "one.py", "pr": {"files": None}}) == ["one.py"]
    assert task_files({}) == []


TASKS = st.fixed_dictionaries(
    {},
    optional={
        "title": st.one_of(st.text(), st.integers(), st.none()),
        "description": st.text(),
        "references": st.one_of(st.lists(st.one_of(st.text(), st.integers())), st.text()),
        "failure_context": st.text(),
        "source_plan": st.text(),
        "files": st.lists(st.text()),
        "pr": st.one_of(
            st.fixed_dictionaries({}, optional={
                "title": st.text(), "body": st.text(), "branch": st.text(),
                "files": st.lists(st.text()),
            }),
            st.text(),
        ),
    },
)


@given(TASKS)
def test_any_task_gives_bounded_unique_terms(task: dict[str, Any]) -> None:
    terms = task_terms(task)
    assert len(terms) <= 32
    assert len(set(terms)) == len(terms)
    for term in terms:
        assert term == term.lower() and term.isalnum() and term not in TASK_STOP_WORDS
    for path in task_files(task):
        assert path and "\\" not in path and not path.startswith("./")


def test_naming_terms_are_identifiers_codes_numbers_and_file_names() -> None:
    task = {"id": "W-1", "title": "ERR_CONN_RESET in TokenRefresher after the v2 deploy: 429",
            "description": "the double-entry check in ledger/post.py fails",
            "files": ["src/auth/token_refresh.py", "README.md"],
            "pr": {"branch": "fix/refresh-429", "files": ["web/app.ts"]}}
    assert naming_terms(task) == {"errconnreset", "tokenrefresher", "v2", "429", "doubleentry",
                                  "tokenrefresh", "readme", "refresh429", "app"}
    assert naming_terms(task) <= {*task_terms(task, 100), "app"}  # spelled as terms are
    assert naming_terms({"id": "W-2", "title": "The export page is slow again"}) == set()
    assert naming_terms("not a task") == set()  # type: ignore[arg-type]


def _whole(text: str) -> str:
    import re

    from minionsd.text.redact import redact
    return re.sub(r"\[REDACTED:[a-z0-9_]+\]", " ", redact(text))


def test_a_long_field_is_redacted_by_its_head_only() -> None:
    """A megabyte pasted into a task: its terms come from a redacted head of the field (the
    same as redacting the whole text and cutting it), never from a secret cut in half."""
    from minionsd.memory.retrieval.query import FIELD_HEAD_CHARS, without_secrets
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    text = f"deploy token {secret} " + "rollback window staging " * 60_000
    head = without_secrets(text)
    assert len(head) <= FIELD_HEAD_CHARS and secret not in head and "ghp_" not in head
    assert _whole(text).startswith(head)  # what redacting all of it would have given
    terms = task_terms({"id": "T", "title": "x", "description": text})
    assert "deploy" in terms and not any(secret.lower()[:8] in term for term in terms)
    # Short fields are redacted whole, as before.
    assert without_secrets(f"use {secret} now").split() == ["use", "now"]
