"""Which records retrieval may show: the one statement of the recall filter rules.

A record is recallable when its status is ``active``, it has not expired at read time, its
scope is ``global``, ``project:<project>`` or ``agent:<agent>`` of the asking task, and it is
not ``procedural`` with ``agent`` or ``external`` trust (procedures come only from humans and
the system). The SQL clause and the in-memory checks below are built from the same constants,
so the candidate search (in-memory record view) and the reference query (SQL) cannot drift.
"""

from __future__ import annotations

from typing import Any

RECALLABLE_STATUS = "active"
PROCEDURAL = "procedural"
UNTRUSTED_FOR_PROCEDURES = ("agent", "external")


def scopes(project: str | None, agent: str | None) -> list[str]:
    """The scopes a task of `project` and `agent` may recall from, widest first."""
    found = ["global"]
    if project:
        found.append(f"project:{project}")
    if agent:
        found.append(f"agent:{agent}")
    return found


def eligible(status: str | None, kind: str | None, trust: str | None) -> bool:
    """The time- and scope-independent part of the rule (see the module docstring)."""
    return status == RECALLABLE_STATUS and not (
        kind == PROCEDURAL and trust in UNTRUSTED_FOR_PROCEDURES)


def unexpired(expires_at: str | None, now_iso: str) -> bool:
    return expires_at is None or expires_at > now_iso


def sql_filter(project: str | None, agent: str | None,
               alias: str = "r") -> tuple[str, dict[str, Any]]:
    """The whole rule as an SQL condition on memory_records `alias`, with its named binds
    (it reads the time from ``:now``, which the caller binds)."""
    binds: dict[str, Any] = {f"scope{i}": s for i, s in enumerate(scopes(project, agent))}
    binds["recallable_status"] = RECALLABLE_STATUS
    binds["procedural"] = PROCEDURAL
    untrusted = {f"untrusted{i}": t for i, t in enumerate(UNTRUSTED_FOR_PROCEDURES)}
    binds |= untrusted
    sql = (
        f"{alias}.status = :recallable_status "
        f"AND ({alias}.expires_at IS NULL OR {alias}.expires_at > :now) "
        f"AND {alias}.scope IN ({', '.join(':' + k for k in binds if k.startswith('scope'))}) "
        f"AND NOT ({alias}.type = :procedural "
        f"AND {alias}.trust IN ({', '.join(':' + k for k in untrusted)}))"
    )
    return sql, binds
