"""`minionsctl status`: the daemon's `status` result as labelled lines and a jobs table.

Each known section of the result has a line builder in SECTIONS (add new status fields
there). Anything the daemon reports that no builder knows, a new key inside a known section or
a whole new section, is still shown, as `key: value` lines under its section: the formatter
never fails on, or hides, a field it was not written for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, simple

Section = dict[str, Any]


def _inbox(s: Section) -> tuple[str, set[str]]:
    line = (f"{fmt.plural(s.get('pending', 0), 'note')} pending ({s.get('eligible', 0)} "
            f"eligible, {s.get('held', 0)} held), "
            f"{fmt.plural(s.get('quarantined', 0), 'file')} quarantined")
    return line, {"pending", "eligible", "held", "quarantined"}


def _consolidation(s: Section) -> tuple[str, set[str]]:
    last = (f"last {fmt.moment(s['last_at'])} ({s.get('last_mode') or '-'})"
            if s.get("last_at") else "last never")
    parts = [fmt.plural(s.get("batches", 0), "batch"), last,
             f"{fmt.plural(s.get('circuit_breaks', 0), 'duplicate storm')} stopped"]
    if s.get("running"):
        parts.append("a batch is running now")
    line, failure = "; ".join(parts), s.get("last_failure")
    if isinstance(failure, dict):
        line += (f"\n  last batch FAILED {fmt.moment(failure.get('at'))}: "
                 f"{failure.get('reason') or '-'} (its notes wait in the inbox)")
    return line, {"batches", "last_at", "last_mode", "circuit_breaks", "running", "last_failure"}


def _records(s: Section) -> tuple[str, set[str]]:
    return ", ".join(f"{count:,} {status}" for status, count in s.items()), set(s)


def _retrieval(s: Section) -> tuple[str, set[str]]:
    line = "on" if s.get("enabled") else "off (features.memory_retrieval is false)"
    if s.get("enabled") and s.get("shadow"):
        line += " (shadow mode: computed and recorded, prompts keep Team Notes)"
    return line, {"enabled", "shadow"}


def _llm(s: Section) -> tuple[str, set[str]]:
    line = "configured" if s.get("configured") else "not configured (regex digests)"
    ok_at, failure = s.get("last_ok_at"), s.get("last_failure")
    if ok_at:
        line += f"; last answer used {fmt.moment(ok_at)}"
    if isinstance(failure, dict):
        line += (f"\n  last failure: {fmt.moment(failure.get('at'))} "
                 f"({failure.get('purpose') or '-'}) {failure.get('reason') or ''}".rstrip())
        if not ok_at or str(failure.get("at") or "") > str(ok_at):
            line += "\n  (newer than the last answer used: digests use the regex path now)"
    elif failure:
        line += f"\n  last failure: {fmt.text(failure)}"
    return line, {"configured", "last_ok_at", "last_failure"}


def _config(s: Section) -> tuple[str, set[str]]:
    line = str(s.get("path") or "-")
    if s.get("last_reload_at"):
        line += f"; last reloaded {fmt.moment(s['last_reload_at'])}"
    failure = s.get("last_reload_failure")
    if isinstance(failure, dict):
        later = str(s.get("last_reload_at") or "") > str(failure.get("at") or "")
        line += (f"\n  reload failed: {fmt.moment(failure.get('at'))}: "
                 f"{failure.get('reason') or '-'} ("
                 + ("a later reload succeeded)" if later
                    else "the previous settings stay in force)"))
    elif failure:
        line += f"\n  reload failed: {fmt.text(failure)}"
    return line, {"path", "last_reload_at", "last_reload_failure"}


def _health(s: Section) -> tuple[str, set[str]]:
    parts = []
    if "loop_lag_ms" in s:
        parts.append(f"event loop lag {fmt.text(s['loop_lag_ms'])} ms")
    if "watcher_alive" in s:
        parts.append("file watcher " + ("alive" if s["watcher_alive"] else "NOT RUNNING"))
    if "db_ok" in s:
        parts.append("database " + ("ok" if s["db_ok"] else "FAILING"))
    return ", ".join(parts), {"loop_lag_ms", "watcher_alive", "db_ok"}


# Status sections in the order shown: key in the result -> builder of (its text: a summary
# line, then any indented detail lines; the keys it used). Keys a builder did not use are
# listed under its text.
SECTIONS: dict[str, Callable[[Section], tuple[str, set[str]]]] = {
    "inbox": _inbox,
    "consolidation": _consolidation,
    "records": _records,
    "retrieval": _retrieval,
    "llm": _llm,
    "config": _config,
    "health": _health,
}
HEAD_KEYS = {"version", "pid", "uptime_s", "home", "socket", "jobs"}


def _label(key: str) -> str:
    return key.replace("_", " ")


def _event(value: Any) -> str:
    """A reported event (`{at, error, ...}`) as `time: the rest`; other values as words."""
    if isinstance(value, dict) and "at" in value:
        rest = {k: v for k, v in value.items() if k != "at"}
        if not rest:
            return fmt.moment(value["at"])
        said = fmt.text(next(iter(rest.values()))) if len(rest) == 1 else fmt.inline(rest)
        return f"{fmt.moment(value['at'])}: {said}"
    return fmt.text(value)


def _extra_lines(section: Any, used: set[str]) -> list[str]:
    if not isinstance(section, dict):
        return [f"  {fmt.text(section)}"]
    return [f"  {_label(key)}: {_event(value)}" for key, value in section.items()
            if key not in used]


_PAIR = re.compile(r"^\w+=[^,=]*$")


def job_result(last: dict[str, Any] | None) -> str:
    """`ok: unchanged=1` or `FAILED: why`; a summary of `key=value` items loses its zeros."""
    if not last:
        return "-"
    summary = str(last.get("summary") or "")
    items = [item.strip() for item in summary.split(",")] if summary else []
    if items and all(_PAIR.match(item) for item in items):
        words = {"True": "yes", "False": "no"}
        pairs = [item.split("=", 1) for item in items]
        kept = [f"{k}={words.get(v, v)}" for k, v in pairs if v not in ("0", "")]
        summary = ", ".join(kept) if kept else "nothing to do"
    outcome = "ok" if last.get("ok", True) else "FAILED"
    return f"{outcome}: {summary}" if summary else outcome


def _jobs(jobs: list[dict[str, Any]]) -> str:
    rows = [(job.get("id", "?"), fmt.moment(job.get("next_run_at")) if job.get("next_run_at")
             else "not scheduled",
             fmt.moment((job.get("last_result") or {}).get("at")),
             job_result(job.get("last_result"))) for job in jobs]
    return fmt.table(("job", "next run", "last run", "last result"), rows)


def fmt_status(st: dict[str, Any]) -> str:
    lines = [f"minionsd {st.get('version', '?')}  pid {st.get('pid', '?')}  "
             f"up {fmt.duration(st.get('uptime_s'))}",
             fmt.fields([("home", st.get("home")), ("socket", st.get("socket"))]), ""]
    known = [key for key in SECTIONS if key in st]
    unknown = [key for key in st if key not in SECTIONS and key not in HEAD_KEYS]
    width = max((len(key) for key in known + unknown), default=0) + 1
    for key in known:
        section = st[key]
        if isinstance(section, dict):
            line, used = SECTIONS[key](section)
        else:
            line, used = fmt.text(section), set()
        lines.append(f"{(key + ':').ljust(width)} {line}".rstrip())
        if isinstance(section, dict):
            lines.extend(_extra_lines(section, used))
    for key in unknown:
        section = st[key]
        if isinstance(section, dict):
            lines.append(f"{key}:")
            lines.extend(_extra_lines(section, set()))
        else:
            lines.append(f"{(key + ':').ljust(width)} {_event(section)}")
    if st.get("jobs"):
        lines += ["", _jobs(st["jobs"])]
    return "\n".join(lines)


def add_parsers(add: AddParser) -> None:
    add("status", "show daemon, inbox, consolidation, record, retrieval, LLM and job status")


COMMANDS = {"status": simple("status", lambda a: {}, fmt_status)}
