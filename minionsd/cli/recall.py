"""minionsctl's recall commands: `retrieve` (the Relevant Memory pack for a task) and `prompt`
(the whole memory block of an agent's prompt).

Standard output carries exactly the text an agent would get, so it can be piped into one; the
summary line (what was selected, how big, why nothing was) goes to standard error.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from minionsd.cli import fmt
from minionsd.cli.common import AddParser, copy_options, read_task, simple

FALLBACK_REASONS = {
    "disabled": "retrieval is off (features.memory_retrieval)",
    "shadow": "shadow mode: computed and recorded, not used in prompts",
    "no_terms": "the task has no usable search terms",
    "no_results": "no active record matched the task's terms",
    "error": "retrieval failed (the daemon logged retrieval.failed)",
}


def _task_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"task": read_task(args.task)}
    copy_options(args, params, "project", "agent")
    return params


def retrieval_summary(r: dict[str, Any]) -> str:
    terms = ", ".join(r.get("terms") or []) or "none"
    reason = r.get("fallback_reason")
    if reason and not r.get("text"):
        why = FALLBACK_REASONS.get(reason, reason)
        if reason == "no_results" and r.get("candidates"):
            why = (f"{fmt.plural(r['candidates'], 'record')} matched the task's terms, none "
                   "packed (below the score cutoff, or too big for the pack's room)")
        return f"no memory for this task: {why} (terms: {terms})"
    picked = (f"{fmt.plural(len(r.get('selected') or []), 'record')} selected from "
              f"{fmt.plural(r.get('candidates') or 0, 'candidate')}, {fmt.size(r.get('bytes'))}")
    note = f"; {FALLBACK_REASONS.get(reason, reason)}" if reason else ""
    return (f"{picked} in {fmt.text(r.get('duration_ms'))} ms, mode {r.get('mode')}{note} "
            f"(terms: {terms})")


def fmt_retrieve(r: dict[str, Any]) -> str:
    print(f"retrieve: {retrieval_summary(r)}", file=sys.stderr)
    return r.get("text") or ""


def prompt_summary(r: dict[str, Any]) -> str:
    sections = ", ".join(
        f"{s.get('name')} {fmt.size(s.get('bytes'))}{' (truncated)' if s.get('truncated') else ''}"
        for s in r.get("sections") or []) or "none"
    size = fmt.size(len(r.get("text", "").encode("utf-8")))
    line = f"{size}, memory mode {r.get('memory_mode')}; sections: {sections}"
    retrieval = r.get("retrieval")
    if isinstance(retrieval, dict) and r.get("memory_mode") != "relevant":
        line += f"; retrieval: {retrieval_summary(retrieval)}"
    return line


def fmt_prompt(r: dict[str, Any]) -> str:
    print(f"prompt: {prompt_summary(r)}", file=sys.stderr)
    return r.get("text") or ""


def add_parsers(add: AddParser) -> None:
    for name, what in (("retrieve", "print the Relevant Memory pack for a task"),
                       ("prompt", "print the memory block of an agent's prompt for a task")):
        p = add(name, f"{what} (summary on stderr)")
        p.add_argument("--task", required=True, metavar="FILE",
                       help="the task as a JSON object: a file, or - for standard input")
        p.add_argument("--project", help="the project the task runs under")
        p.add_argument("--agent", help="the agent the task runs under")


COMMANDS = {
    "retrieve": simple("memory.retrieve", _task_params, fmt_retrieve),
    "prompt": simple("prompt.assemble", _task_params, fmt_prompt),
}
