"""minionsctl's formatting and parser without a daemon: plurals, tables, the status formatter's
tolerance of fields it does not know, help text on every option, choices that match the
daemon's own lists."""

from __future__ import annotations

import argparse
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd import cli
from minionsd.cli import admin, fmt, inbox, knowledge, records, status


def test_plural_inflects_the_last_word() -> None:
    assert fmt.plural(1, "KB entry") == "1 KB entry"
    assert fmt.plural(2, "KB entry") == "2 KB entries"
    assert fmt.plural(0, "note") == "0 notes"
    assert fmt.plural(3, "match") == "3 matches"
    assert fmt.plural(2, "batch") == "2 batches"
    assert fmt.plural(2, "day") == "2 days"
    assert fmt.plural(1_234, "record") == "1,234 records"
    assert fmt.plural(2, "finished batch", "finished batches") == "2 finished batches"
    assert fmt.plural(1, "finished batch", "finished batches") == "1 finished batch"


@given(st.integers(min_value=0, max_value=10**9),
       st.from_regex(r"[a-z]{2,12}( [a-z]{2,12})?", fullmatch=True))
def test_plural_is_the_count_then_the_noun(count: int, noun: str) -> None:
    said = fmt.plural(count, noun)
    assert said.startswith(f"{count:,} ") and "(" not in said
    assert (said == f"{count:,} {noun}") == (count == 1)
    assert said.split(" ")[1:-1] == noun.split(" ")[:-1]  # only the last word changes


def test_table_aligns_columns_under_upper_case_headers() -> None:
    out = fmt.table(("id", "size"), [("M-1", "12 B"), ("M-22", "1.2 KB")], right=(1,))
    assert out.splitlines() == ["ID      SIZE", "M-1     12 B", "M-22  1.2 KB"]
    assert fmt.table(("a", "b"), [(None, True)]).splitlines()[1] == "-  yes"


def test_values_sizes_times_read_as_words() -> None:
    assert fmt.text(None) == "-" and fmt.text(False) == "no" and fmt.text(["a", 2]) == "a, 2"
    assert fmt.text({"batches": 1, "ok": True}) == "batches=1, ok=yes"
    assert fmt.size(138) == "138 B" and fmt.size(2048) == "2.0 KB"
    assert fmt.size(5 * 1024 * 1024) == "5.0 MB"
    assert fmt.duration(4.2) == "4s" and fmt.duration(192) == "3m 12s"
    assert fmt.duration(7500) == "2h 5m" and fmt.duration(3 * 86400 + 3600 * 4) == "3d 4h"
    assert fmt.moment("2026-12-01T15:08:16.403Z") == "2026-12-01 15:08:16 UTC"
    assert fmt.moment(None) == "-" and fmt.moment("yesterday") == "yesterday"
    assert fmt.shorten("a\n  b " + "c" * 50, 10) == "a b ccccc…"


def test_generic_shows_nested_objects_as_key_value_lines() -> None:
    lines = fmt.generic({"a": 1, "b": {"c": [1, 2], "d": {}}, "e": [{"f": None}]})
    assert lines == ["a: 1", "b:", "  c: 1, 2", "  d: none", "e:", "  - f: -"]


STATUS = {
    "version": "1.0", "pid": 42, "uptime_s": 3725.2, "home": "/h", "socket": "/h/s.sock",
    "records": {"active": 3, "superseded": 1, "retracted": 0, "expired": 0},
    "retrieval": {"enabled": True, "shadow": False},
    "llm": {"configured": True},
    "inbox": {"pending": 2, "eligible": 1, "held": 1, "quarantined": 0},
    "consolidation": {"last_at": "2026-12-01T15:00:00.000Z", "last_mode": "llm",
                      "batches": 1, "circuit_breaks": 0, "running": False},
    "jobs": [{"id": "expiry", "next_run_at": "2026-12-01T16:00:00.000Z",
              "last_result": {"at": "2026-12-01T15:00:00.000Z", "ok": True,
                              "summary": "expired=0"}},
             {"id": "reindex", "next_run_at": None,
              "last_result": {"at": "2026-12-01T15:01:00.000Z", "ok": False,
                              "summary": "database is locked"}}],
    "health": {"loop_lag_ms": 0.9, "watcher_alive": True, "db_ok": True},
}


def assert_no_repr(out: str) -> None:
    assert "{'" not in out and "': " not in out and '{"' not in out, out
    assert not re.search(r"\b(None|True|False)\b", out), out


def test_status_reads_as_sections_and_a_jobs_table() -> None:
    out = status.fmt_status(STATUS)
    assert_no_repr(out)
    assert out.startswith("minionsd 1.0  pid 42  up 1h 2m\n")
    assert "inbox:         2 notes pending (1 eligible, 1 held), 0 files quarantined" in out
    assert "consolidation: 1 batch; last 2026-12-01 15:00:00 UTC (llm)" in out
    assert "records:       3 active, 1 superseded, 0 retracted, 0 expired" in out
    assert "llm:           configured" in out
    rows = out.split("\n\n")[-1].splitlines()
    assert rows[0].split() == ["JOB", "NEXT", "RUN", "LAST", "RUN", "LAST", "RESULT"]
    assert rows[1].startswith("expiry") and rows[1].endswith("ok: nothing to do")
    assert "not scheduled" in rows[2] and rows[2].endswith("FAILED: database is locked")


def test_status_shows_the_last_failures() -> None:
    failing = json.loads(json.dumps(STATUS))
    failing["llm"].update(last_ok_at="2026-12-01T15:01:00.000Z",
                          last_failure={"at": "2026-12-01T15:02:00.000Z", "purpose": "digest",
                                        "reason": "APIStatusError 529 overloaded"})
    failing["config"] = {"path": "/h/config.toml", "last_reload_at": None,
                         "last_reload_failure": {"at": "2026-12-01T15:03:00.000Z",
                                                 "reason": "unknown key 'engine.x'"}}
    out = status.fmt_status(failing)
    assert_no_repr(out.replace("'engine.x'", "engine.x"))
    lines = out.splitlines()
    llm = lines.index("llm:           configured; last answer used 2026-12-01 15:01:00 UTC")
    assert lines[llm + 1] == ("  last failure: 2026-12-01 15:02:00 UTC (digest) "
                              "APIStatusError 529 overloaded")
    assert lines[llm + 2].startswith("  (newer than the last answer used")
    config = lines.index("config:        /h/config.toml")
    assert lines[config + 1] == ("  reload failed: 2026-12-01 15:03:00 UTC: unknown key "
                                 "'engine.x' (the previous settings stay in force)")
    failing["llm"]["last_ok_at"] = "2026-12-01T15:04:00.000Z"  # a later success
    assert "newer than" not in status.fmt_status(failing)
    failing["config"]["last_reload_at"] = "2026-12-01T15:04:00.000Z"
    assert "engine.x' (a later reload succeeded)" in status.fmt_status(failing)


def test_status_shows_fields_it_does_not_know() -> None:
    extended = json.loads(json.dumps(STATUS))
    extended["llm"]["last_hiccup"] = {"at": "2026-12-01T15:02:00.000Z", "error": "timeout"}
    extended["cache"] = {"hits": 3, "last_miss": {"at": "2026-12-01T15:03:00.000Z",
                                                  "key": "k", "why": "cold"}}
    extended["workers"] = 4
    extended["inbox"]["oldest_waiting_s"] = 12
    out = status.fmt_status(extended)
    assert_no_repr(out)
    lines = out.splitlines()
    llm = lines.index("llm:           configured")
    assert lines[llm + 1] == "  last hiccup: 2026-12-01 15:02:00 UTC: timeout"
    cache = lines.index("cache:")
    assert lines[cache + 1:cache + 3] == ["  hits: 3",
                                          "  last miss: 2026-12-01 15:03:00 UTC: key=k, why=cold"]
    assert "workers:       4" in lines and "  oldest waiting s: 12" in lines
    # A section of a type the formatter does not expect is shown, not a crash.
    odd = dict(STATUS, records="unavailable")
    assert "records:       unavailable" in status.fmt_status(odd)


def test_job_result_drops_zero_counts() -> None:
    assert status.job_result(None) == "-"
    assert status.job_result({"ok": True, "summary": "imported=0, unchanged=3, llm=disabled"}
                             ) == "ok: unchanged=3, llm=disabled"
    assert status.job_result({"ok": True, "summary": "integrity_ok=True, kb_imported=0"}
                             ) == "ok: integrity_ok=yes"
    assert status.job_result({"ok": False, "summary": "disk full, retrying"}
                             ) == "FAILED: disk full, retrying"


def test_maintenance_report_is_a_sentence_per_key() -> None:
    out = admin.fmt_maintenance({"job": "kb_sweep", "at": "2026-12-01T15:00:00.000Z",
                                 "report": {"imported": 1, "duplicates_swept": ["a.md", "b.md"],
                                            "llm": {"batches": 1, "failed_batches": 0},
                                            "new_key": [1, 2]}})
    assert out.splitlines() == [
        "kb_sweep done at 2026-12-01 15:00:00 UTC",
        "  1 knowledge file imported",
        "  2 exact duplicates moved to knowledge/_swept/: a.md, b.md",
        "  LLM review: batches 1, failed_batches 0",
        "  new key: 1, 2"]


def test_config_values_print_plainly_and_sections_as_key_value_lines() -> None:
    assert admin.fmt_config_get({"value": 8}, "engine.memory_retrieval_top_k") == "8"
    assert admin.fmt_config_get({"value": "claude-x"}, "llm.model") == "claude-x"
    assert admin.fmt_config_get({"value": ""}, "server.socket") == '""'
    assert admin.fmt_config_get({"value": True}, "features.memory_retrieval") == "true"
    listing = admin.fmt_config_get({"value": {"engine": {"top_k": 8, "names": ["a"]},
                                              "agents": {}}}, None)
    assert listing.splitlines() == ['engine.top_k = 8', 'engine.names = ["a"]', "agents = {}"]


def _walk(parser: argparse.ArgumentParser, path: str = ""):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}".strip())


def test_every_option_of_every_command_has_help() -> None:
    missing = []
    commands = 0
    for path, parser in _walk(cli.build_parser()):
        commands += 1
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{path} {c.dest}" for c in action._choices_actions if not c.help]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert commands > 25 and not missing, missing


def test_options_with_a_fixed_set_of_values_have_choices() -> None:
    parsers = dict(_walk(cli.build_parser()))

    def choices(command: str, dest: str) -> tuple[str, ...]:
        action = next(a for a in parsers[command]._actions if a.dest == dest)
        return tuple(action.choices or ())

    import minionsd.memory.inbox
    import minionsd.storage.records
    from minionsd.home import KB_CATEGORIES
    from minionsd.memory.jobs import job_table

    assert choices("search", "type") == minionsd.storage.records.TYPES == records.TYPES
    assert choices("search", "status") == minionsd.storage.records.STATUSES == records.STATUSES
    assert choices("note", "kind") == minionsd.memory.inbox.KINDS == inbox.KINDS
    assert choices("kb add", "category") == KB_CATEGORIES == knowledge.CATEGORIES
    assert choices("kb list", "category") == KB_CATEGORIES
    assert choices("maintenance", "job") == tuple(job_table(None)) == admin.JOBS  # type: ignore[arg-type]


def test_maintenance_lists_every_item_of_a_long_list() -> None:
    names = [f"knowledge/reviews/{i}.md" for i in range(7)]
    out = admin.fmt_maintenance({"job": "kb_sweep", "at": None,
                                 "report": {"duplicates_swept": names}})
    lines = out.splitlines()
    assert lines[1] == "  7 exact duplicates moved to knowledge/_swept/:"
    assert [line.strip() for line in lines[2:]] == names


def test_every_cli_module_is_under_400_lines() -> None:
    from pathlib import Path

    sizes = {p.name: len(p.read_text().splitlines())
             for p in Path(fmt.__file__).parent.glob("*.py")}
    assert len(sizes) >= 10 and max(sizes.values()) < 400, sizes


@pytest.mark.parametrize(("url", "warned"), [
    ("http://memory.example.com:8765", True),
    ("http://10.1.2.3:8765/", True),
    ("https://memory.example.com", False),
    ("http://127.0.0.1:8765", False),
    ("http://localhost:8765", False),
    ("http://[::1]:8765", False),
])
def test_a_token_sent_in_clear_text_is_warned_about(capsys, url, warned):
    from minionsd.cli.common import warn_if_clear_text

    warn_if_clear_text(url)
    err = capsys.readouterr().err
    assert ("clear text" in err) is warned and "mnt_" not in err


def test_a_retrieval_with_candidates_and_nothing_packed_says_so():
    from minionsd.cli.recall import retrieval_summary

    base = {"fallback_reason": "no_results", "text": "", "terms": ["ledger", "failover"]}
    assert retrieval_summary(base | {"candidates": 0}) == \
        "no memory for this task: no active record matched the task's terms " \
        "(terms: ledger, failover)"
    said = retrieval_summary(base | {"candidates": 2})
    assert said.startswith("no memory for this task: 2 records matched the task's terms, none "
                           "packed (below the score cutoff, or too big for the pack's room)")
