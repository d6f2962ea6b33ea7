"""Which records retrieval may show: the one statement of the recall filter rules.

A record is recallable when its status is ``active``, it has not expired at read time, its
scope is ``global``, ``project:<project>`` or ``agent:<agent>`` of the asking task, and it is
not ``procedural`` with ``agent`` or ``external`` trust (procedures come only from humans and
the system). The in-memory checks below and the rule storage renders as SQL
(:func:`rule`, storage/recall.py) are built from the same constants, so the candidate search
(in-memory record view) and the reference query (SQL) cannot drift.
"""

from __future__ import annotations

from minionsd.storage.recall import RecallRule

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


def rule(project: str | None, agent: str | None) -> RecallRule:
    """The whole rule for a task of `project` and `agent`, as data storage renders in SQL."""
    return RecallRule(RECALLABLE_STATUS, tuple(scopes(project, agent)), PROCEDURAL,
                      UNTRUSTED_FOR_PROCEDURES)
