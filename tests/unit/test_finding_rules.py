"""The finding rules a dropped `kind: finding` file is checked by (SPEC §3.6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from minionsd.memory.consolidate.findings import broken_rule, finding_task
from minionsd.memory.inbox import InboxNote


def note(meta: dict, author: str = "ripley") -> InboxNote:
    return InboxNote("n.md", Path("n.md"), 1, 0.0, {"kind": "finding", **meta}, "x", author,
                     False, True)


@pytest.mark.parametrize(("value", "task"), [("W-7", "W-7"), (7, "7"), ("  W-7 ", "W-7"),
                                             ("", None), ("  ", None), (True, None),
                                             (None, None), (["W-7"], None), ({"a": 1}, None)])
def test_finding_task(value, task):
    assert finding_task({"task": value}) == task


def test_a_finding_with_agent_task_and_success_breaks_no_rule():
    assert broken_rule(note({"task": "W-7", "outcome": "success"})) is None


@pytest.mark.parametrize(("meta", "author", "named"), [
    ({"task": "W-7", "outcome": "success"}, "unknown", "agent"),
    ({"outcome": "success"}, "ripley", "`task`"),
    ({"task": "", "outcome": "success"}, "ripley", "`task`"),
    ({"task": "W-7"}, "ripley", "got None"),
    ({"task": "W-7", "outcome": "failure"}, "ripley", "got 'failure'"),
    ({"task": "W-7", "outcome": "Success"}, "ripley", "got 'Success'"),
])
def test_each_broken_rule_is_named(meta, author, named):
    reason = broken_rule(note(meta, author))
    assert reason is not None and named in reason
