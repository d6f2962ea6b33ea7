"""The `Task` parameter of memory.retrieve and prompt.assemble (SPEC §5): type checks only."""

from __future__ import annotations

from typing import Any

from minionsd.errors import InvalidParams
from minionsd.text.fence import scrub_surrogates

_TEXT_FIELDS = ("title", "description", "failure_context", "source_plan")
_LIST_FIELDS = ("references", "files")
_PR_TEXT = ("title", "body", "branch")
MAX_TEXT = 200_000
MAX_ITEMS = 500


def _text(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"'{name}' must be a string", param=name)
    if len(value) > MAX_TEXT:
        raise InvalidParams(f"'{name}' is longer than {MAX_TEXT} characters", param=name)
    # JSON can carry lone UTF-16 surrogates ("\ud800"); they have no UTF-8 form, and nothing
    # downstream (SQLite, the socket, logs) could store or send them.
    return scrub_surrogates(value)


def _strings(value: Any, name: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParams(f"'{name}' must be a list of strings", param=name)
    if len(value) > MAX_ITEMS:
        raise InvalidParams(f"'{name}' has more than {MAX_ITEMS} items", param=name)
    return [scrub_surrogates(v) for v in value]


def check_task(task: Any) -> dict[str, Any]:
    """Return a clean Task dict; unknown keys are ignored (clients may send more)."""
    if not isinstance(task, dict):
        raise InvalidParams("'task' must be an object", param="task")
    task_id = task.get("id")
    if not isinstance(task_id, str | int) or isinstance(task_id, bool) or str(task_id) == "":
        raise InvalidParams("'task.id' must be a non-empty string", param="task.id")
    clean: dict[str, Any] = {"id": scrub_surrogates(str(task_id)[:200])}
    for name in _TEXT_FIELDS:
        value = _text(task.get(name), f"task.{name}")
        if value is not None:
            clean[name] = value
    for name in _LIST_FIELDS:
        value = _strings(task.get(name), f"task.{name}")
        if value is not None:
            clean[name] = value
    pr = task.get("pr")
    if pr is not None:
        if not isinstance(pr, dict):
            raise InvalidParams("'task.pr' must be an object", param="task.pr")
        clean_pr: dict[str, Any] = {}
        for name in _PR_TEXT:
            value = _text(pr.get(name), f"task.pr.{name}")
            if value is not None:
                clean_pr[name] = value
        files = _strings(pr.get("files"), "task.pr.files")
        if files is not None:
            clean_pr["files"] = files
        clean["pr"] = clean_pr
    return clean


def check_optional_name(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 200:
        raise InvalidParams(f"'{name}' must be a non-empty string of at most 200 characters",
                            param=name)
    return scrub_surrogates(value)
