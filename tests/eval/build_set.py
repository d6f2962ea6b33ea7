"""Build the retrieval evaluation set (tests/eval/set.json) from the hand-written sources.

    .venv/bin/python tests/eval/build_set.py          # rewrites tests/eval/set.json

Deterministic: no randomness, no clock. What it owns:

* ``topics.yaml``: hand-written topics (records and the tasks that should recall them);
* ``filler.yaml``: hand-written everyday notes nobody asks for here;
* ``holdout.yaml``: held-out tasks for the same records, kept out of any tuning;
* mechanical variants made here: a near-duplicate copy for every ``dup`` key (reworded in one
  of the ways copies arise: re-wrapped, Markdown-marked, a word changed, a remark appended), a
  copy of each active project record in another project (out of scope for the topic's tasks),
  and template notes (dependency bumps, flaky tests, slow endpoints, config keys, error codes)
  so the memory is a few hundred records of the same vocabulary.

Every record gets a ``key``; every task gets ``relevant`` (keys a senior engineer wants),
``forbidden`` (records of its topics the eligibility rules exclude: wrong scope, not active,
procedural with agent or external trust) and ``groups`` (near-duplicate groups, key -> group).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REFERENCE_DATE = "2026-11-15T00:00:00Z"
PROJECTS = ("atlas", "borealis", "cobalt")
TYPES = {"sem": "semantic", "epi": "episodic", "proc": "procedural"}
TASK_FIELDS = ("title", "description", "references", "failure_context", "source_plan", "files",
               "pr")


def _created_at(age: int) -> str:
    from datetime import datetime, timedelta
    base = datetime.fromisoformat(REFERENCE_DATE.replace("Z", "+00:00"))
    return (base - timedelta(days=age, hours=age % 7, minutes=age % 53)).strftime(
        "%Y-%m-%dT%H:%M:%S.000Z")


def _scope(raw: str | None, project: str) -> str:
    if raw in (None, "project"):
        return "global" if project == "global" else f"project:{project}"
    return raw


def _record(raw: dict[str, Any], project: str, key: str, topic: str | None) -> dict[str, Any]:
    scope = _scope(raw.get("s"), project)
    proj = scope.split(":", 1)[1] if scope.startswith("project:") else None
    rec = {"key": key, "topic": topic, "type": TYPES[raw.get("t", "sem")], "scope": scope,
           "trust": raw.get("tr", "human"), "title": raw.get("ti", ""), "body": raw["b"],
           "paths": list(raw.get("p", [])), "tags": list(raw.get("tg", [])),
           "created_at": _created_at(int(raw.get("age", 30))),
           "source": f"notes/archive/{key}.md", "project": proj,
           "importance": raw.get("imp", 0.5), "status": raw.get("st", "active")}
    if scope.startswith("agent:"):
        rec["agent"] = scope.split(":", 1)[1]
    if rec["status"] == "superseded":
        rec["superseded_by"] = raw["by"]
    if rec["status"] == "retracted":
        rec["retracted_reason"] = raw.get("why", "wrong")
    return rec


# --- near-duplicate copies ------------------------------------------------------------------

def _dup_body(body: str, style: int) -> str:
    words = body.split()
    if style == 0:  # re-wrapped at 60 columns, last full stop dropped
        lines, line = [], ""
        for word in words:
            if len(line) + len(word) > 60:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}".strip()
        lines.append(line)
        return "\n".join(lines).rstrip(".")
    if style == 1:  # Markdown: a bullet, identifiers in backticks
        marked = [f"`{w.rstrip('.,;:')}`{w[len(w.rstrip('.,;:')):]}"
                  if any(c in w for c in "_()/=") else w for w in words]
        return "- " + " ".join(marked)
    if style == 2:  # one word changed, a remark appended
        swaps = {"must": "should", "never": "not", "is": "was", "are": "were", "the": "our"}
        for i, word in enumerate(words):
            if word in swaps:
                words[i] = swaps[word]
                break
        return " ".join(words) + " (seen again last week)"
    # style 3: sentence case lost, different punctuation, a source line
    return body[0].lower() + body[1:].replace(";", ",") + "\n\nFrom the on-call notes."


def _dup_record(original: dict[str, Any], key: str, style: int) -> dict[str, Any]:
    copy = dict(original, key=key, body=_dup_body(original["body"], style),
                trust="agent" if original["trust"] != "agent" else "system",
                title=original["title"] if style % 2 else "",
                created_at=_created_at(5 + style * 3), source=f"notes/archive/{key}.md",
                status="active")
    copy.pop("superseded_by", None)
    copy.pop("retracted_reason", None)
    return copy


def _stale_record(original: dict[str, Any], index: int) -> dict[str, Any]:
    """An earlier, no longer valid version of a topic's first note: a draft with wrong figures
    (retracted) or a temporary workaround (expired)."""
    key = f"{original['key']}~old"
    stale = dict(original, key=key, source=f"notes/archive/{key}.md",
                 created_at=_created_at(int(original["created_at"][8:10]) + 120))
    if index % 2:
        stale["body"] = re.sub(r"\d+", lambda m: str(int(m.group()) * 2 + 1), original["body"])
        stale["body"] += " (figures from the first investigation)"
        stale["status"], stale["retracted_reason"] = "retracted", "figures were wrong"
    else:
        stale["body"] = "Until the proper fix ships: " + original["body"].split(". ")[0] + "."
        stale["status"] = "expired"
    return stale


# --- template notes ------------------------------------------------------------------------

_LIBS = {"atlas": ["django", "celery", "psycopg", "requests", "pydantic", "sqlalchemy", "boto3"],
         "borealis": ["react", "vite", "zod", "axios", "express", "pino", "playwright"],
         "cobalt": ["grpc-go", "zap", "sarama", "pgx", "cobra", "prometheus/client_golang",
                    "aws-sdk-go-v2"]}
_MODULES = {"atlas": ["src/orders/service.py", "src/accounts/models.py", "src/api/filters.py",
                      "src/reports/pdf.py", "src/search/index.py", "src/notifications/mail.py",
                      "src/inventory/stock.py"],
            "borealis": ["web/src/pages/Checkout.tsx", "web/src/hooks/useCart.ts",
                         "bff/src/routes/products.ts", "web/src/components/SearchBox.tsx",
                         "bff/src/middleware/auth.ts", "web/src/store/session.ts",
                         "web/src/pages/Account.tsx"],
            "cobalt": ["internal/ingest/consumer.go", "cmd/ledger/main.go",
                       "internal/edge/report.go", "internal/auth/verify.go",
                       "internal/billing/usage.go", "internal/queue/kafka.go",
                       "cmd/gateway/main.go"]}
_ENDPOINTS = ["/api/v2/orders", "/api/v2/products", "/api/v2/search", "/api/v2/accounts/me",
              "/api/v2/reports", "/api/v2/stock", "/api/v2/invoices"]
_CODES = ["E1042", "ERR_QUOTA_EXCEEDED", "PG-40001", "E_STALE_CURSOR", "ERR_SCHEMA_DRIFT",
          "E_UPSTREAM_RESET", "ERR_NO_SHARD"]

_LINT = ("unused import", "line too long", "missing docstring", "unsorted imports")
_MEANINGS = ("the quota for the tenant is used up",
             "a concurrent update won; retry the transaction",
             "the client cursor is older than the retention window",
             "the stored schema differs from the code; run the schema check",
             "the upstream closed the connection; safe to retry once",
             "no shard owns the key range yet", "the request arrived after the cut-off")


def _template_notes(project: str) -> list[dict[str, Any]]:
    libs, mods = _LIBS[project], _MODULES[project]
    notes = []
    for i, lib in enumerate(libs):
        notes.append({"t": "sem", "tr": ("human", "agent", "system")[i % 3], "age": 20 + i * 11,
                      "b": f"Bumped {lib} from 1.{i + 3}.0 to 1.{i + 4}.2; the changelog lists "
                           f"no breaking change for us, but {mods[i]} needed a one-line import "
                           "update."})
    for i, mod in enumerate(mods):
        stem = mod.rsplit("/", 1)[1].split(".")[0]
        notes.append({"t": "epi", "tr": "system", "age": 6 + i * 9, "p": [mod],
                      "b": f"Task W-{400 + i}: changed {mod}; the tests for {stem} passed "
                           f"locally but the first CI run failed on lint ({_LINT[i % 4]}) and "
                           "passed after the fix."})
        notes.append({"t": "sem", "tr": ("agent", "human")[i % 2], "age": 15 + i * 13,
                      "p": [mod],
                      "b": f"{stem} is covered by {3 + i} unit tests and one integration test; "
                           f"the integration test needs the local stack from make dev."})
    for i, endpoint in enumerate(_ENDPOINTS):
        notes.append({"t": "sem", "tr": ("human", "system")[i % 2], "age": 9 + i * 17,
                      "b": f"{project}: {endpoint} has a p95 of {120 + i * 35} ms in the last "
                           f"dashboard review; the budget is {300 + i * 50} ms, so it is not a "
                           "priority."})
    for i, code in enumerate(_CODES):
        notes.append({"t": "sem", "tr": ("human", "agent")[i % 2], "age": 30 + i * 7,
                      "b": f"Error code {code} in {project} means the request was valid but "
                           f"{_MEANINGS[i]}."})
    for i, name in enumerate(("REQUEST_TIMEOUT_S", "MAX_PAGE_SIZE", "CACHE_TTL_S",
                              "WORKER_POOL_SIZE", "RETRY_LIMIT")):
        notes.append({"t": "sem", "tr": "human", "age": 40 + i * 19,
                      "b": f"{project.upper()}_{name} defaults to {(30, 100, 300, 8, 3)[i]}; "
                           "changing it needs a restart and a note in the ops log."})
    return notes


# --- assembly ------------------------------------------------------------------------------

def eligible(rec: dict[str, Any], project: str | None, agent: str | None) -> bool:
    """SPEC §3.3.2 for one record and one task context."""
    scopes = {"global"} | ({f"project:{project}"} if project else set()) | (
        {f"agent:{agent}"} if agent else set())
    return (rec["status"] == "active" and rec["scope"] in scopes
            and not (rec["type"] == "procedural" and rec["trust"] in ("agent", "external")))


def _task(raw: dict[str, Any], project: str, records: dict[str, dict[str, Any]]
          ) -> dict[str, Any]:
    task = {"id": raw["id"]} | {f: raw[f] for f in TASK_FIELDS if f in raw}
    wanted_topics = {records[k]["topic"] for k in raw["want"]}
    forbidden = [k for k, rec in records.items() if rec["topic"] in wanted_topics
                 and not eligible(rec, project, raw["agent"])]
    for key in raw["want"]:
        assert eligible(records[key], project, raw["agent"]), (raw["id"], key)
    return {"task": task, "project": project, "agent": raw["agent"], "difficulty": raw["d"],
            "relevant": raw["want"], "forbidden": forbidden}


def build() -> dict[str, Any]:
    topics = yaml.safe_load((HERE / "topics.yaml").read_text(encoding="utf-8"))
    filler = yaml.safe_load((HERE / "filler.yaml").read_text(encoding="utf-8"))
    records: dict[str, dict[str, Any]] = {}
    groups: dict[str, str] = {}
    tasks: list[dict[str, Any]] = []
    style = 0
    for topic in topics:
        name, project = topic["topic"], topic["project"]
        for raw in topic["records"]:
            if "dup" in raw:
                records[raw["k"]] = _dup_record(records[raw["dup"]], raw["k"], style % 4)
                groups[raw["k"]] = groups[raw["dup"]] = raw["dup"]
                style += 1
            else:
                records[raw["k"]] = _record(raw, project, raw["k"], name)
        # The same note in another project: out of scope for this topic's tasks.
        for raw in topic["records"]:
            rec = records[raw["k"]]
            if ("dup" not in raw and rec["status"] == "active"
                    and rec["scope"] == f"project:{project}"):
                other = PROJECTS[(PROJECTS.index(project) + 1) % 3]
                key = f"{raw['k']}@{other}"
                records[key] = dict(rec, key=key, scope=f"project:{other}", project=other,
                                    source=f"notes/archive/{key}.md")
            elif "dup" not in raw and rec["status"] == "active" and rec["scope"] == "global":
                key = f"{raw['k']}@ash"  # an agent's own copy: out of scope for other agents
                records[key] = dict(rec, key=key, scope="agent:ash", agent="ash",
                                    trust="agent", source=f"notebook:ash/{key}")
        first = next((r for r in topic["records"] if "dup" not in r), None)
        if first is not None:
            records[f"{first['k']}~old"] = _stale_record(records[first["k"]], len(tasks) + style)
        tasks.append({})  # a place holder counting topics, dropped below
    for project, notes in filler.items():
        for i, raw in enumerate(notes + (_template_notes(project) if project != "global" else [])):
            key = f"fill-{project}-{i:03d}"
            records[key] = _record(raw | {"age": raw.get("age", 7 + i * 5)}, project, key, None)
    tasks = []
    for topic in topics:
        for raw in topic["tasks"]:
            tasks.append(_task(raw, raw.get("project", topic["project"]), records)
                         | {"split": "main"})
    holdout = yaml.safe_load((HERE / "holdout.yaml").read_text(encoding="utf-8"))
    for raw in holdout:
        tasks.append(_task(raw, raw["project"], records) | {"split": "holdout"})
    ordered = sorted(records.values(), key=lambda r: (r["created_at"], r["key"]))
    return {"reference_date": REFERENCE_DATE, "records": ordered, "tasks": tasks,
            "groups": groups}


def main() -> int:
    data = build()
    out = HERE / "set.json"
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    kinds: dict[str, int] = {}
    for rec in data["records"]:
        for label in (rec["type"], rec["status"], "trust " + rec["trust"],
                      "scope " + rec["scope"].split(":")[0]):
            kinds[label] = kinds.get(label, 0) + 1
    main_tasks = [t for t in data["tasks"] if t["split"] == "main"]
    hard = sum(t["difficulty"] == "hard" for t in main_tasks)
    print(f"{out}: {len(data['records'])} records, {len(main_tasks)} tasks ({hard} hard) "
          f"and {len(data['tasks']) - len(main_tasks)} held-out tasks")
    print("  " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
