"""The blind labelled sets (tests/eval/blind.yaml, tests/eval/third.yaml) load into the shape
scripts/eval.py scores, are as large and as hard as their briefs asked, and a label that
contradicts the eligibility rules or names a record that does not exist stops the load with a
message naming it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EVAL_DIR = REPO / "tests" / "eval"
if str(EVAL_DIR) not in sys.path:
    sys.path.insert(0, str(EVAL_DIR))

from blind_set import LabelError, load_blind  # noqa: E402
from build_set import eligible  # noqa: E402

BLIND = EVAL_DIR / "blind.yaml"
THIRD = EVAL_DIR / "third.yaml"
WORD = re.compile(r"[a-z0-9_]{4,}")


@pytest.mark.parametrize(("path", "least"), [(BLIND, 60), (THIRD, 45)])
def test_the_set_is_large_a_third_hard_and_labels_the_rules_allow(path: Path, least: int):
    data = load_blind(path)
    tasks, records = data["tasks"], {r["key"]: r for r in data["records"]}
    assert len(tasks) >= least
    assert sum(t["difficulty"] == "hard" for t in tasks) * 3 >= len(tasks)
    assert all(t["why"] for t in tasks if t["difficulty"] == "hard")
    for item in tasks:
        assert all(eligible(records[k], item["project"], item["agent"]) for k in item["relevant"])
        assert not any(eligible(records[k], item["project"], item["agent"])
                       for k in item["forbidden"])
    statuses = {r["status"] for r in records.values()}
    assert statuses == {"active", "superseded", "retracted", "expired"}


def test_restatements_come_in_groups_that_share_most_of_their_words():
    data = load_blind(BLIND)
    records = {r["key"]: r for r in data["records"]}
    members: dict[str, list[str]] = {}
    for key, group in data["groups"].items():
        members.setdefault(group, []).append(key)
    assert len(members) >= 7
    for group, keys in members.items():
        assert group in keys and len(keys) >= 2, group
        words = [set(WORD.findall(records[k]["body"].lower())) for k in keys]
        shared = set.intersection(*words)  # the same fact: many of the same words
        assert len(shared) >= 0.4 * min(len(w) for w in words), (group, words)
        assert len({records[k]["title"] for k in keys}) == len(keys), group  # in other words


@pytest.mark.parametrize("path", [BLIND, THIRD])
def test_no_marked_restatement_differs_in_a_number_identifier_or_path(path: Path):
    """Two records that differ in a number, an identifier or a path are two facts (the
    digest's rule, which packing follows): a set never marks such a pair as one."""
    from minionsd.memory.retrieval.dedupe import comparable_body

    data = load_blind(path)
    records = {r["key"]: r for r in data["records"]}
    for key, group in data["groups"].items():
        if key == group:
            continue
        a, b = (comparable_body(records[k]["body"], records[k]["title"] or "")
                for k in (key, group))
        assert a.same_facts(b), (key, group, a.facts() ^ b.facts())


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "set.yaml"
    path.write_text(text, encoding="utf-8")
    return path


SMALL = """
topics:
- name: one
  scope: project:alpha
  records:
  - {key: r1, type: semantic, trust: human, author: a, date: 2026-01-01, title: T1, body: B1}
  - {key: r2, type: procedural, trust: agent, author: a, date: 2026-01-02, title: T2, body: B2}
  - {key: r3, scope: project:beta, type: semantic, trust: human, author: a, date: 2026-01-03,
     title: T3, body: B3, same_as: r1}
  tasks:
  - {id: BE-1, project: alpha, agent: x, task: {title: t}, relevant: RELEVANT, forbidden: FORBIDDEN}
"""


@pytest.mark.parametrize(("relevant", "forbidden", "message"), [
    ("[r1]", "[]", None),
    ("[r2]", "[]", "BE-1: r2 is relevant but the rules keep it out"),
    ("[r3]", "[]", "BE-1: r3 is relevant but the rules keep it out"),
    ("[r1]", "[r1]", "BE-1: r1 is forbidden but the rules allow it"),
    ("[r1]", "[r3, r2]", None),
    ("[r9]", "[]", "BE-1: unknown record r9"),
    ("[]", "[]", "BE-1: no relevant records"),
])
def test_labels_are_checked_against_the_rules(tmp_path, relevant, forbidden, message):
    path = _write(tmp_path, SMALL.replace("RELEVANT", relevant).replace("FORBIDDEN", forbidden))
    if message is None:
        data = load_blind(path)
        assert data["groups"] == {"r1": "r1", "r3": "r1"}
        assert [r["status"] for r in data["records"]] == ["active"] * 3
        return
    with pytest.raises(LabelError, match=re.escape(message)):
        load_blind(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("same_as: r1", "same_as: r7", "record r3: unknown record r7"),
    ("title: T2,", "title: T2, expired: true, retracted: gone,",
     "record r2: at most one of superseded_by, retracted, expired"),
    ("scope: project:beta", "scope: team", "record r3: scope 'team' is not global"),
    ("id: BE-1", "id: X-1", "task X-1: the id must start with BE- (easy) or BH- (hard)"),
    ("id: BE-1", "id: BH-1", "task BH-1: a hard task says why it is hard"),
    ("body: B1}", "body: B1, colour: red}", "record r1: unknown field(s) ['colour']"),
])
def test_a_mistake_in_the_file_names_the_record_or_task(tmp_path, old, new, message):
    text = SMALL.replace("RELEVANT", "[r1]").replace("FORBIDDEN", "[]").replace(old, new)
    with pytest.raises(LabelError, match=re.escape(message)):
        load_blind(_write(tmp_path, text))
