"""Episodic capture, the pure half: check an `episode.capture` request and decide what to store.

`build_episode(params, capture_enabled=...)` owns every rule of SPEC §3.5 and §7 "Episodes"
that needs no database: parameter validation, the skip reasons, redaction, bounds, scope and
the readable body. It returns an `EpisodeDecision`: either a reason to store nothing, or a
record dict ready for insertion. The RPC handler inserts the record and answers
`{captured: true, id}`, or answers `{captured: false, reason}`; it also turns any failure other
than `InvalidParams` into `{captured: false, reason}`, because capture is best effort and must
never fail the caller's task.

Decisions, in this order:

1. Validation. A malformed request raises `InvalidParams` naming the parameter, whatever the
   setting, so a client's bug shows before capture is switched on. `outcome` is one of
   success / partial / failure; `task_id` and `agent` are non-empty strings; unknown
   parameters are refused.
2. `disabled`: `engine.memory_episodic_capture` is false.
3. `injection_flagged`: the report was flagged as a prompt-injection attempt.
4. `nonce_mismatch`: `expected_nonce` is given and `nonce` is missing or differs. A nonce
   without an expected one cannot be checked and is accepted. Empty strings count as missing.

Bounds (every text value is redacted first, then cut, so a cut never exposes half a secret):

* `files`, `tests`: the first `MAX_LIST_ITEMS` (50) non-blank entries, each cut to
  `MAX_ITEM_CHARS` (300) characters.
* `task_id`, `agent`, `project`, `failure_class`, `pr`: single-line, at most
  `MAX_FIELD_CHARS` (200) characters, else `InvalidParams`; `pr` may be a string or a number
  and is stored as a string.
* `summary`: cut to `MAX_SUMMARY_CHARS` (16,000). Without a summary, and only when `stdout`
  holds no `"type":` marker (a JSON event stream, not prose), the first
  `MAX_STDOUT_SUMMARY_CHARS` (4,000) characters of the redacted stdout stand in for it.
"""

from __future__ import annotations

import hmac
import math
from dataclasses import dataclass
from typing import Any

from minionsd.errors import InvalidParams
from minionsd.text.redact import redact

OUTCOMES = ("success", "partial", "failure")
SKIP_REASONS = ("disabled", "injection_flagged", "nonce_mismatch")
PARAMS = frozenset(
    {
        "outcome",
        "task_id",
        "agent",
        "project",
        "pr",
        "failure_class",
        "files",
        "tests",
        "summary",
        "stdout",
        "nonce",
        "expected_nonce",
        "injection_flagged",
        "trust",
    }
)
# `system` for a capture made on this machine (a hook); the HTTP gateway sends `agent`: what a
# token writes never gets system trust (SPEC §5.2).
TRUSTS = ("system", "agent")
MAX_LIST_ITEMS = 50
MAX_ITEM_CHARS = 300
MAX_FIELD_CHARS = 200
MAX_SUMMARY_CHARS = 16_000
MAX_STDOUT_SUMMARY_CHARS = 4_000
# A JSON event stream (e.g. an agent CLI's stream-json output) is noise, not a summary.
EVENT_STREAM_MARKER = '"type":'


@dataclass(frozen=True)
class EpisodeDecision:
    """Either `record` (store it) or `reason` (store nothing, say why)."""

    record: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def store(self) -> bool:
        return self.record is not None


def build_episode(params: dict[str, Any], *, capture_enabled: bool) -> EpisodeDecision:
    """Validate `episode.capture` params and return what to store, or why nothing is stored."""
    if not isinstance(params, dict):
        raise InvalidParams("episode.capture params must be an object", param="params")
    unknown = sorted(str(k) for k in params if k not in PARAMS)
    if unknown:
        raise InvalidParams(f"unknown parameter {unknown[0]!r}", param=unknown[0])

    outcome = params.get("outcome")
    if outcome not in OUTCOMES:
        raise InvalidParams(
            f"outcome must be one of {', '.join(OUTCOMES)}, got {outcome!r}", param="outcome"
        )
    task_id = _field(params, "task_id", required=True)
    agent = _field(params, "agent", required=True)
    project = _field(params, "project")
    failure_class = _field(params, "failure_class")
    pr = _pr(params.get("pr"))
    files = _string_list(params, "files")
    tests = _string_list(params, "tests")
    summary = _optional_str(params, "summary")
    stdout = _optional_str(params, "stdout")
    nonce = _optional_str(params, "nonce")
    expected_nonce = _optional_str(params, "expected_nonce")
    injection_flagged = params.get("injection_flagged")
    if injection_flagged is not None and not isinstance(injection_flagged, bool):
        raise InvalidParams("injection_flagged must be true or false", param="injection_flagged")
    trust = params.get("trust") or "system"
    if trust not in TRUSTS:
        raise InvalidParams(f"trust must be one of {', '.join(TRUSTS)}, got {trust!r}",
                            param="trust")

    if not capture_enabled:
        return EpisodeDecision(reason="disabled")
    if injection_flagged:
        return EpisodeDecision(reason="injection_flagged")
    if expected_nonce and not (nonce and _same(nonce, expected_nonce)):
        return EpisodeDecision(reason="nonce_mismatch")

    kept_files, files_total = _bounded(files)
    kept_tests, tests_total = _bounded(tests)
    text = _summary(summary, stdout)
    scope = f"project:{project}" if project else f"agent:{agent}"
    title = f"Task {task_id}: {outcome}" + (f" ({failure_class})" if failure_class else "")
    record = {
        "type": "episodic",
        "trust": trust,
        "scope": scope,
        "title": title,
        "body": _render(
            outcome=outcome,
            task_id=task_id,
            agent=agent,
            project=project,
            pr=pr,
            failure_class=failure_class,
            files=(kept_files, files_total),
            tests=(kept_tests, tests_total),
            summary=text,
        ),
        "source": f"episode:{task_id}",
        "agent": agent,
        "project": project,
        "task": task_id,
        "pr": pr,
        "paths": list(kept_files),
        "tags": ["episode", outcome] + ([failure_class] if failure_class else []),
        "meta": {
            "outcome": outcome,
            "failure_class": failure_class,
            "files": list(kept_files),
            "tests": list(kept_tests),
            "pr": pr,
        },
    }
    return EpisodeDecision(record=record)


def _same(a: str, b: str) -> bool:
    # Constant-time, and safe for lone surrogates that JSON can carry.
    return hmac.compare_digest(
        a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass")
    )


def _optional_str(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"{name} must be a string", param=name)
    return value if value.strip() else None


def _field(params: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    """A short single-line identifier, redacted; blank counts as missing."""
    value = _optional_str(params, name)
    if value is None:
        if required:
            raise InvalidParams(f"{name} must be a non-empty string", param=name)
        return None
    return _short(value.strip(), name)


def _short(value: str, name: str) -> str:
    if len(value) > MAX_FIELD_CHARS:
        raise InvalidParams(f"{name} is longer than {MAX_FIELD_CHARS} characters", param=name)
    if any(ch < " " or ch == "\x7f" for ch in value):
        raise InvalidParams(f"{name} must be one line without control characters", param=name)
    return redact(value)


def _pr(value: Any) -> str | None:
    # bool is an int subclass, and true is not a PR number.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InvalidParams("pr must be a string or a number", param="pr")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParams("pr must be a finite number", param="pr")
        value = int(value) if value.is_integer() else value
    text = str(value).strip()
    return _short(text, "pr") if text else None


def _string_list(params: dict[str, Any], name: str) -> list[str]:
    value = params.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidParams(f"{name} must be a list of strings", param=name)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidParams(f"{name}[{i}] must be a string", param=name)
    return [item.strip() for item in value if item.strip()]


def _bounded(items: list[str]) -> tuple[list[str], int]:
    """Keep the first MAX_LIST_ITEMS entries, each redacted then cut; also the full count."""
    kept = [redact(item)[:MAX_ITEM_CHARS] for item in items[:MAX_LIST_ITEMS]]
    return kept, len(items)


def _summary(summary: str | None, stdout: str | None) -> str | None:
    if summary is not None:
        return redact(summary)[:MAX_SUMMARY_CHARS].strip() or None
    if stdout is not None and EVENT_STREAM_MARKER not in stdout:
        return redact(stdout)[:MAX_STDOUT_SUMMARY_CHARS].strip() or None
    return None


def _render(
    *,
    outcome: str,
    task_id: str,
    agent: str,
    project: str | None,
    pr: str | None,
    failure_class: str | None,
    files: tuple[list[str], int],
    tests: tuple[list[str], int],
    summary: str | None,
) -> str:
    """The record body: what a reader of recalled memory needs, one labelled line per fact."""
    lines = [f"Outcome: {outcome}", f"Task: {task_id}", f"Agent: {agent}"]
    if project:
        lines.append(f"Project: {project}")
    if pr:
        lines.append(f"PR: {pr}")
    if failure_class:
        lines.append(f"Failure class: {failure_class}")
    for label, (kept, total) in (("Files", files), ("Tests", tests)):
        if not kept:
            continue
        count = f"{total}" if total == len(kept) else f"first {len(kept)} of {total}"
        lines += ["", f"{label} ({count}):"] + [f"- {item}" for item in kept]
    if summary:
        lines += ["", "Summary:", summary]
    return "\n".join(lines) + "\n"
