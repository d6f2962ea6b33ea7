"""Reads tests/eval/blind.yaml into the shape scripts/eval.py scores (the shape of set.json).

The blind set is written by hand as topics (records and the tasks about them) plus filler
records; this module turns it into `{"records", "tasks", "groups"}` with the same fields the
first set has, and checks the labels: every key exists, a relevant record is one the task may
see (active, in scope, not procedural with agent or external trust), a forbidden one is not,
and `same_as` links two records of one topic. A mistake stops with a message naming the task
or record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from build_set import eligible

TYPES = ("semantic", "episodic", "procedural")
TRUSTS = ("human", "system", "agent", "external")
DIFFICULTY = {"BE-": "easy", "BH-": "hard"}
RECORD_FIELDS = {"key", "title", "body", "type", "trust", "date", "author", "scope", "paths",
                 "tags", "importance", "superseded_by", "retracted", "expired", "same_as"}
TASK_FIELDS = {"id", "project", "agent", "task", "relevant", "forbidden", "why"}


class LabelError(SystemExit):
    """A mistake in the set's file, named."""


def _record(raw: dict[str, Any], default_scope: str | None) -> dict[str, Any]:
    key = raw.get("key") or "?"
    unknown = set(raw) - RECORD_FIELDS
    if unknown:
        raise LabelError(f"record {key}: unknown field(s) {sorted(unknown)}")
    for field in ("key", "title", "body", "type", "trust", "date", "author"):
        if not raw.get(field):
            raise LabelError(f"record {key}: missing {field}")
    if raw["type"] not in TYPES or raw["trust"] not in TRUSTS:
        raise LabelError(f"record {key}: type must be one of {TYPES}, trust one of {TRUSTS}")
    scope = raw.get("scope") or default_scope
    kind, _, name = (scope or "").partition(":")
    if scope != "global" and not (kind in ("project", "agent") and name):
        raise LabelError(f"record {key}: scope {scope!r} is not global, project:<p> or agent:<a>")
    endings = [f for f in ("superseded_by", "retracted", "expired") if raw.get(f)]
    if len(endings) > 1:
        raise LabelError(f"record {key}: at most one of superseded_by, retracted, expired")
    status = {"superseded_by": "superseded", "retracted": "retracted",
              "expired": "expired"}[endings[0]] if endings else "active"
    return {"key": key, "type": raw["type"], "scope": scope, "trust": raw["trust"],
            "title": raw["title"], "body": " ".join(str(raw["body"]).split()),
            "paths": list(raw.get("paths") or []), "tags": list(raw.get("tags") or []),
            "created_at": f"{raw['date']}T10:00:00Z",
            "source": f"notes/archive/{raw['date']}-{raw['author']}-{key}.md",
            "project": name if kind == "project" else None,
            "agent": name if kind == "agent" else None,
            "importance": float(raw.get("importance", 0.5)), "status": status,
            "superseded_by": raw.get("superseded_by") or "",
            "retracted_reason": raw.get("retracted") or "", "same_as": raw.get("same_as")}


def _task(raw: dict[str, Any], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    tid = raw.get("id") or "?"
    unknown = set(raw) - TASK_FIELDS
    if unknown:
        raise LabelError(f"task {tid}: unknown field(s) {sorted(unknown)}")
    difficulty = DIFFICULTY.get(tid[:3])
    if difficulty is None:
        raise LabelError(f"task {tid}: the id must start with BE- (easy) or BH- (hard)")
    if difficulty == "hard" and not raw.get("why"):
        raise LabelError(f"task {tid}: a hard task says why it is hard")
    relevant, forbidden = list(raw.get("relevant") or []), list(raw.get("forbidden") or [])
    if not relevant:
        raise LabelError(f"task {tid}: no relevant records")
    for key in relevant + forbidden:
        if key not in records:
            raise LabelError(f"task {tid}: unknown record {key}")
    for key in relevant:
        if not eligible(records[key], raw["project"], raw["agent"]):
            raise LabelError(f"task {tid}: {key} is relevant but the rules keep it out")
    for key in forbidden:
        if eligible(records[key], raw["project"], raw["agent"]):
            raise LabelError(f"task {tid}: {key} is forbidden but the rules allow it")
    if len(set(relevant)) != len(relevant) or set(relevant) & set(forbidden):
        raise LabelError(f"task {tid}: a record is listed twice")
    return {"task": {"id": tid, **raw["task"]}, "project": raw["project"],
            "agent": raw["agent"], "difficulty": difficulty, "relevant": relevant,
            "forbidden": forbidden, "split": "main", "why": raw.get("why", "")}


def load_blind(path: Path) -> dict[str, Any]:
    """The set in `path` as scripts/eval.py wants it: records, tasks, groups."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw_records: list[tuple[dict[str, Any], str | None]] = []
    raw_tasks: list[dict[str, Any]] = []
    for topic in data["topics"]:
        raw_records += [(r, topic.get("scope")) for r in topic["records"]]
        raw_tasks += topic["tasks"]
    raw_records += [(r, None) for r in data.get("filler") or []]
    records: dict[str, dict[str, Any]] = {}
    for raw, scope in raw_records:
        rec = _record(raw, scope)
        if rec["key"] in records:
            raise LabelError(f"record {rec['key']} is defined twice")
        records[rec["key"]] = rec
    groups: dict[str, str] = {}
    for rec in records.values():
        for ref in (rec["superseded_by"], rec["same_as"]):
            if ref and ref not in records:
                raise LabelError(f"record {rec['key']}: unknown record {ref}")
        if rec["same_as"]:
            original = records[rec["same_as"]]
            if original["same_as"] or rec["key"] in groups:
                raise LabelError(f"record {rec['key']}: same_as chains are not allowed")
            groups[rec["key"]] = groups[original["key"]] = original["key"]
    tasks = [_task(raw, records) for raw in raw_tasks]
    ids = [t["task"]["id"] for t in tasks]
    if len(set(ids)) != len(ids):
        raise LabelError("a task id is used twice")
    return {"records": list(records.values()), "tasks": tasks, "groups": groups}
