"""The finding rules for notes dropped as files (SPEC §3.6).

"A finding needs an agent and a task; exactly one per task is kept, and only for successful
tasks." inbox.submit refuses a finding that breaks this (submission.py); a file dropped into
the inbox cannot be refused, so before a batch takes it, a `kind: finding` note is checked
the same way: one with no agent, no task, or an outcome other than `success`, or one for a
task that already has a finding, is moved to notes/quarantine/ with a reason naming the key
and how to keep it (nothing is lost: fix it, or make it `kind: note`, and requeue it). A
finding that passes claims its task, as inbox.submit's do, so a later finding for that task,
submitted or dropped, is refused.
"""

from __future__ import annotations

from typing import Any

import structlog

from minionsd.memory.app import App
from minionsd.memory.identity import UNKNOWN
from minionsd.memory.inbox import Inbox, InboxNote
from minionsd.storage import submissions

log = structlog.get_logger()

_KEEP = ("; to keep its text as a plain note, set `kind: note` in its front matter (or fix "
         "the finding), then move it back with `minionsctl inbox requeue NAME`")


def finding_task(meta: dict[str, Any]) -> str | None:
    """The task a finding's front matter names (a string or a number), else None."""
    task = meta.get("task")
    if isinstance(task, bool) or not isinstance(task, str | int):
        return None
    return str(task).strip() or None


def broken_rule(note: InboxNote) -> str | None:
    """Why a `kind: finding` note cannot be kept as a finding on its own terms (no agent,
    no task, not a success), else None. The one-per-task rule needs the database."""
    if note.author == UNKNOWN:
        return ("a finding needs an agent: front matter `agent` or `author`, or a file name "
                "starting with the agent's id")
    if finding_task(note.meta) is None:
        return "a finding needs `task` in its front matter"
    outcome = note.meta.get("outcome")
    if outcome != "success":
        return ("a finding is kept only for a successful task: `outcome` must be "
                f"\"success\", got {outcome!r}")
    return None


def _claim(conn: Any, candidates: list[tuple[str, str, str]], now: Any) -> dict[str, str]:
    """Claim each (name, task, agent)'s task in order; {name: reason} for those whose task
    already has another note's finding."""
    refused = {}
    for name, task, agent in candidates:
        first = submissions.finding_for(conn, task)
        if first is None:
            submissions.claim_finding(conn, task, name, agent, now)
        elif first[0] != name:
            refused[name] = (f"task {task!r} already has a finding: {first[0]} by {first[1]} "
                             "(one finding is kept per task)")
    return refused


def screen(app: App, inbox: Inbox, notes: list[InboxNote]) -> list[InboxNote]:
    """`notes` (eligible, oldest first) without the findings that break the rules, which are
    quarantined with the reason; the findings kept have their task claimed."""
    findings = [n for n in notes if n.kind == "finding"]
    if not findings:
        return notes
    reasons: dict[str, str] = {}
    candidates = []
    for note in findings:
        reason = broken_rule(note)
        if reason is not None:
            reasons[note.name] = reason
        else:
            candidates.append((note.name, finding_task(note.meta) or "", note.author))
    if candidates:
        reasons.update(app.db.write_blocking(_claim, candidates, app.now()))
    for name, reason in reasons.items():
        log.warning("consolidation.finding_refused", name=name, reason=reason)
        inbox.quarantine(name, reason + _KEEP)
    return [n for n in notes if n.name not in reasons]
