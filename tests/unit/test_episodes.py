"""Episode decisions (SPEC §3.5, §5 episode.capture, §7 "Episodes"; ORIGINAL §7.4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.errors import InvalidParams
from minionsd.memory.episodes import (
    MAX_ITEM_CHARS,
    MAX_LIST_ITEMS,
    MAX_STDOUT_SUMMARY_CHARS,
    MAX_SUMMARY_CHARS,
    EpisodeDecision,
    build_episode,
)

GH_TOKEN = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"


def _params(**extra):
    return {"outcome": "success", "task_id": "W-123", "agent": "dallas", **extra}


def _record(**extra):
    decision = build_episode(_params(**extra), capture_enabled=True)
    assert decision.store, decision.reason
    return decision.record


def test_full_record_shape():
    record = _record(
        outcome="failure",
        project="shop",
        pr=42,
        failure_class="build-failure",
        files=["src/app.py", "src/db.py"],
        tests=["tests/test_app.py::test_checkout"],
        summary="Checkout broke because the price column is NULL for legacy rows.",
    )
    assert record == {
        "type": "episodic",
        "trust": "system",
        "scope": "project:shop",
        "title": "Task W-123: failure (build-failure)",
        "body": (
            "Outcome: failure\n"
            "Task: W-123\n"
            "Agent: dallas\n"
            "Project: shop\n"
            "PR: 42\n"
            "Failure class: build-failure\n"
            "\n"
            "Files (2):\n"
            "- src/app.py\n"
            "- src/db.py\n"
            "\n"
            "Tests (1):\n"
            "- tests/test_app.py::test_checkout\n"
            "\n"
            "Summary:\n"
            "Checkout broke because the price column is NULL for legacy rows.\n"
        ),
        "source": "episode:W-123",
        "agent": "dallas",
        "project": "shop",
        "task": "W-123",
        "pr": "42",
        "paths": ["src/app.py", "src/db.py"],
        "tags": ["episode", "failure", "build-failure"],
        "meta": {
            "outcome": "failure",
            "failure_class": "build-failure",
            "files": ["src/app.py", "src/db.py"],
            "tests": ["tests/test_app.py::test_checkout"],
            "pr": "42",
        },
    }


def test_minimal_record():
    record = _record()
    assert record["scope"] == "agent:dallas"
    assert record["title"] == "Task W-123: success"
    assert record["body"] == "Outcome: success\nTask: W-123\nAgent: dallas\n"
    assert record["project"] is None
    assert record["pr"] is None
    assert record["paths"] == []
    assert record["meta"] == {
        "outcome": "success",
        "failure_class": None,
        "files": [],
        "tests": [],
        "pr": None,
    }


@pytest.mark.parametrize("outcome", ["success", "partial", "failure"])
def test_each_outcome_is_stored(outcome):
    assert _record(outcome=outcome)["meta"]["outcome"] == outcome


def test_blank_project_falls_back_to_agent_scope():
    assert _record(project="  ")["scope"] == "agent:dallas"


@pytest.mark.parametrize(("pr", "stored"), [("#17", "#17"), (17, "17"), (17.0, "17"), (None, None)])
def test_pr_is_stored_as_string(pr, stored):
    record = _record(pr=pr)
    assert record["pr"] == stored
    assert record["meta"]["pr"] == stored


# --- skip reasons -----------------------------------------------------------------------


def test_disabled():
    decision = build_episode(_params(), capture_enabled=False)
    assert decision == EpisodeDecision(reason="disabled")
    assert not decision.store


def test_injection_flagged():
    decision = build_episode(_params(injection_flagged=True), capture_enabled=True)
    assert decision.reason == "injection_flagged"
    assert decision.record is None


def test_injection_flag_false_stores():
    assert _record(injection_flagged=False)["type"] == "episodic"


def test_disabled_wins_over_injection_and_nonce():
    params = _params(injection_flagged=True, expected_nonce="n1", nonce="n2")
    assert build_episode(params, capture_enabled=False).reason == "disabled"


def test_injection_wins_over_nonce():
    params = _params(injection_flagged=True, expected_nonce="n1", nonce="n2")
    assert build_episode(params, capture_enabled=True).reason == "injection_flagged"


@pytest.mark.parametrize(
    ("nonce", "expected", "reason"),
    [
        ("abc", "abc", None),
        ("abc", "abd", "nonce_mismatch"),
        (None, "abc", "nonce_mismatch"),
        ("", "abc", "nonce_mismatch"),
        ("abc", None, None),  # nothing to check against
        (None, None, None),
        ("abc", "", None),  # an empty expectation is no expectation
        ("\ud800x", "\ud800x", None),  # lone surrogates from JSON do not crash the check
    ],
)
def test_nonce_rules(nonce, expected, reason):
    params = _params()
    if nonce is not None:
        params["nonce"] = nonce
    if expected is not None:
        params["expected_nonce"] = expected
    assert build_episode(params, capture_enabled=True).reason == reason


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"outcome": "done"}, "outcome"),
        ({"outcome": None}, "outcome"),
        ({"outcome": "Success"}, "outcome"),
        ({"task_id": ""}, "task_id"),
        ({"task_id": "   "}, "task_id"),
        ({"task_id": 12}, "task_id"),
        ({"task_id": None}, "task_id"),
        ({"task_id": "W-1\nW-2"}, "task_id"),
        ({"task_id": "x" * 201}, "task_id"),
        ({"agent": ""}, "agent"),
        ({"agent": ["dallas"]}, "agent"),
        ({"project": 3}, "project"),
        ({"failure_class": {}}, "failure_class"),
        ({"pr": True}, "pr"),
        ({"pr": [1]}, "pr"),
        ({"pr": float("nan")}, "pr"),
        ({"files": "a.py"}, "files"),
        ({"files": ["a.py", 3]}, "files"),
        ({"tests": [None]}, "tests"),
        ({"summary": 5}, "summary"),
        ({"stdout": b"bytes"}, "stdout"),
        ({"nonce": 5}, "nonce"),
        ({"expected_nonce": 5}, "expected_nonce"),
        ({"injection_flagged": "yes"}, "injection_flagged"),
        ({"injection_flagged": 1}, "injection_flagged"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_invalid_params_name_the_param(change, param):
    params = {**_params(), **change}
    with pytest.raises(InvalidParams) as err:
        build_episode(params, capture_enabled=True)
    assert err.value.data["param"] == param
    assert param in err.value.detail


def test_missing_required_params():
    for name in ("outcome", "task_id", "agent"):
        params = _params()
        del params[name]
        with pytest.raises(InvalidParams) as err:
            build_episode(params, capture_enabled=True)
        assert err.value.data["param"] == name


def test_validation_happens_even_when_disabled():
    with pytest.raises(InvalidParams):
        build_episode(_params(outcome="nope"), capture_enabled=False)


def test_params_must_be_an_object():
    with pytest.raises(InvalidParams):
        build_episode(["success"], capture_enabled=True)  # type: ignore[arg-type]


# --- bounds -----------------------------------------------------------------------------


def test_files_and_tests_are_bounded():
    files = [f"src/{i}/" + "x" * 400 for i in range(60)]
    tests = [f"t{i}" for i in range(55)]
    record = _record(files=files, tests=tests)
    meta = record["meta"]
    assert len(meta["files"]) == MAX_LIST_ITEMS
    assert len(meta["tests"]) == MAX_LIST_ITEMS
    assert all(len(f) == MAX_ITEM_CHARS for f in meta["files"])
    assert meta["files"][0] == files[0][:MAX_ITEM_CHARS]
    assert meta["tests"][-1] == "t49"
    assert record["paths"] == meta["files"]
    assert "Files (first 50 of 60):" in record["body"]
    assert "Tests (first 50 of 55):" in record["body"]


def test_blank_list_entries_are_dropped():
    assert _record(files=["a.py", " ", "", "b.py"])["meta"]["files"] == ["a.py", "b.py"]


def test_explicit_summary_is_cut():
    record = _record(summary="y" * (MAX_SUMMARY_CHARS + 10))
    assert "y" * MAX_SUMMARY_CHARS + "\n" in record["body"]
    assert "y" * (MAX_SUMMARY_CHARS + 1) not in record["body"]


# --- summary and stdout ------------------------------------------------------------------


def test_stdout_stands_in_for_a_missing_summary():
    record = _record(stdout="Ran 12 tests, all green.\n")
    assert record["body"].endswith("Summary:\nRan 12 tests, all green.\n")


def test_blank_summary_counts_as_missing():
    record = _record(summary="  \n", stdout="from stdout")
    assert record["body"].endswith("Summary:\nfrom stdout\n")


def test_summary_wins_over_stdout():
    record = _record(summary="the summary", stdout="the stdout")
    assert "the summary" in record["body"]
    assert "the stdout" not in record["body"]


def test_event_stream_stdout_is_not_a_summary():
    stdout = '{"type":"assistant","message":"hi"}\n{"type": "result"}\n'
    record = _record(stdout=stdout)
    assert "Summary" not in record["body"]
    assert "assistant" not in record["body"]


def test_stdout_is_redacted_then_cut_to_4000():
    # The secret sits across the 4,000-character line: cutting first would keep a prefix of
    # the token too short for its pattern, so redaction must come first.
    stdout = "a" * (MAX_STDOUT_SUMMARY_CHARS - 10) + " " + GH_TOKEN + " " + "b" * 5000
    record = _record(stdout=stdout)
    summary = record["body"].split("Summary:\n", 1)[1]
    assert "ghp_16C7e4" not in summary
    assert len(summary.rstrip("\n")) == MAX_STDOUT_SUMMARY_CHARS
    assert summary.startswith("a" * (MAX_STDOUT_SUMMARY_CHARS - 10) + " [REDACTED")


def test_everything_textual_is_redacted():
    record = _record(
        project="shop",
        failure_class="config-error",
        files=[f"config/.env?token={GH_TOKEN}"],
        tests=["test_login[password=hunter22]"],
        summary=f"pushed with {GH_TOKEN} and postgres://app:s3cr3t@db/app",
    )
    flat = repr(record)
    for secret in ("ghp_16C7e4", "hunter22", "s3cr3t"):
        assert secret not in flat
    assert "[REDACTED:github_token]" in record["body"]
    assert "postgres://app:[REDACTED:connection_string]@db/app" in record["body"]


# --- properties ---------------------------------------------------------------------------

_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "outcome": st.sampled_from(["success", "partial", "failure"]) | _ANY_JSON,
            "task_id": st.text(max_size=40) | _ANY_JSON,
            "agent": st.text(max_size=40) | _ANY_JSON,
            "project": st.text(max_size=40) | _ANY_JSON,
            "pr": _ANY_JSON,
            "files": st.lists(st.text(max_size=50), max_size=60) | _ANY_JSON,
            "tests": st.lists(st.text(max_size=50), max_size=60) | _ANY_JSON,
            "summary": st.text() | _ANY_JSON,
            "stdout": st.text() | _ANY_JSON,
            "nonce": st.text(max_size=5) | _ANY_JSON,
            "expected_nonce": st.text(max_size=5) | _ANY_JSON,
            "injection_flagged": st.booleans() | _ANY_JSON,
        },
    ),
    st.booleans(),
)
def test_only_invalid_params_or_a_decision(params, enabled):
    try:
        decision = build_episode(params, capture_enabled=enabled)
    except InvalidParams as err:
        assert err.data.get("param")
        return
    assert decision.store != (decision.reason is not None)
    if decision.store:
        record = decision.record
        assert len(record["meta"]["files"]) <= MAX_LIST_ITEMS
        assert all(len(f) <= MAX_ITEM_CHARS for f in record["meta"]["tests"])
        assert record["scope"].startswith(("project:", "agent:"))
