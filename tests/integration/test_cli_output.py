"""minionsctl's output against a real daemon with data: every command's default output reads as
text (no Python repr, no JSON), carries the key facts, and `--json` prints the daemon's result;
errors under `--json` are JSON on stderr with the documented exit code."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import wait_for
from tests.integration.test_cli import clean_env, ok, run_against_a_dying_daemon, run_ctl

TASK = {"id": "W-7", "title": "Fix the token refresh retry jitter"}


def readable(out: str) -> str:
    """Assert `out` is text for people, not a repr or JSON; return it."""
    assert out.strip(), "no output"
    assert "{'" not in out and not re.search(r"'\w+': ", out), out
    assert not re.search(r"\b(None|True|False)\b", out), out
    assert '{"' not in out and "[{" not in out, out
    try:
        parsed = json.loads(out)
    except ValueError:
        return out
    assert not isinstance(parsed, (dict, list)), out
    return out


@pytest.fixture
def home_with_data(daemon):
    """Six notes consolidated, a held note, a KB entry, pinned text and a retrieval."""
    for i in range(6):
        daemon.call("inbox.submit", body=f"Token refresh case {i} needs jitter in "
                    f"src/auth_{i}.py.", author="dallas", title=f"Token refresh {i}",
                    project="atlas")
    # A batch may already run on its own (the threshold is 5): force until all are in.
    wait_for(lambda: daemon.call("consolidation.run", force=True)
             and daemon.call("status")["inbox"]["pending"] == 0, what="the notes consolidated")
    daemon.call("inbox.submit", body="Still thinking.", author="bob", hold=True)
    daemon.call("knowledge.create", category="conventions", title="Branch names",
                body="Use feat/<ticket>-<slug>.", author="carol")
    daemon.call("pinned.set", text="Run the tests first.\n")
    daemon.call("memory.retrieve", task=TASK, project="atlas")
    env = clean_env(MINIONS_HOME=str(daemon.home))

    def ctl(*args: str, stdin: str | None = None):
        return run_ctl(*args, env=env, stdin=stdin)

    return daemon, ctl


def both(ctl, *args: str, stdin: str | None = None) -> tuple[str, object]:
    """The readable output and the --json output of one command."""
    text = readable(ok(ctl(*args, stdin=stdin)))
    return text, json.loads(ok(ctl(*args, "--json", stdin=stdin)))


def test_status_inbox_search_show_read_as_text(home_with_data):
    daemon, ctl = home_with_data
    out, raw = both(ctl, "status")
    assert raw["pid"] == daemon.proc.pid and f"pid {daemon.proc.pid}" in out
    assert re.search(r"inbox: +1 note pending \(0 eligible, 1 held\)", out), out
    assert "llm:" in out and "not configured" in out and "health:" in out
    jobs = out.split("JOB", 1)[1]
    assert "NEXT RUN" in jobs and "LAST RESULT" in jobs and "not scheduled" in jobs
    for job in raw["jobs"]:
        assert job["id"] in jobs

    out, raw = both(ctl, "inbox")
    assert raw == daemon.call("inbox.list")
    held = raw["notes"][0]["name"]
    assert out.startswith("1 note in the inbox: 0 eligible, 1 held")
    assert re.search(rf"{re.escape(held)} +bob +note +\d+ B +held", out), out

    out, raw = both(ctl, "search", "token", "--limit", "3")
    assert raw == daemon.call("memory.search", query="token", limit=3)
    assert out.startswith(f"{raw['total']} matches, showing the best 3")
    assert re.search(r"^ID +DATE +TYPE +SCOPE +TITLE +SNIPPET$", out, re.M), out
    for record in raw["records"]:
        assert re.search(rf"^{record['id']} +\d{{4}}-\d\d-\d\d +semantic +project:atlas +"
                         rf"{re.escape(record['title'])} ", out, re.M), out
    first = raw["records"][0]

    out, raw = both(ctl, "show", first["id"])
    assert raw == daemon.call("memory.get", id=first["id"])
    assert out.startswith(f"{first['id']}: {first['title']}\n")
    assert re.search(r"^  status: +active$", out, re.M)
    assert re.search(r"^  scope: +project:atlas$", out, re.M)
    assert re.search(r"^  created: +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", out, re.M)
    assert out.rstrip().endswith(raw["body"].rstrip())


def test_lifecycle_commands_answer_with_a_sentence(home_with_data):
    daemon, ctl = home_with_data
    ids = [r["id"] for r in daemon.call("memory.search", query="token", limit=5)["records"]]
    title = daemon.call("memory.get", id=ids[0])["title"]
    out = readable(ok(ctl("pin", ids[0])))
    trust = daemon.call("memory.get", id=ids[0])["trust"]
    assert out.strip() == f"pinned {ids[0]} ({title}): status active, trust {trust}"
    out = readable(ok(ctl("expire", ids[1])))
    assert out.startswith(f"expired {ids[1]} (") and " as of 20" in out
    out = readable(ok(ctl("supersede", ids[2], "--by", ids[0])))
    assert out.strip().endswith(f"is now superseded by {ids[0]}")
    raw = json.loads(ok(ctl("retract", ids[3], "--reason", "wrong file", "--json")))
    assert raw["status"] == "retracted" and raw["retracted_reason"] == "wrong file"
    again = ctl("retract", ids[3], "--reason", "twice")
    assert again.returncode == 1 and again.stderr.startswith("minionsctl: ")
    out = readable(ok(ctl("purge", ids[4], "--reason", "leaked a token")))
    head, *files = out.splitlines()
    assert re.match(rf"purged {ids[4]} at 20\S+ \S+ UTC; {len(files)} files? still holds? its "
                    r"text \(edit by hand\):$", head), head
    assert files and all(line.startswith("  notes") or line.startswith("  knowledge/")
                         for line in files), files


def test_note_consolidate_kb_pinned_read_as_text(home_with_data, tmp_path):
    daemon, ctl = home_with_data
    out = readable(ok(ctl("note", "Deploys need the VPN", "--author", "erin")))
    assert out.startswith("written: notes/inbox/erin-")
    out = readable(ok(ctl("consolidate", "--force")))
    assert re.match(r"batch done \(regex digest\): 1 note archived, 1 record upserted, "
                    r"(0 KB entries|1 KB entry) written", out), out
    out = readable(ok(ctl("consolidate", "--force")))
    assert out.startswith("nothing to consolidate")

    out, raw = both(ctl, "kb", "list")
    assert raw == daemon.call("knowledge.list")
    assert out.startswith(f"{len(raw['entries'])} knowledge entries, newest first")
    branch = next(e for e in raw["entries"] if e["title"] == "Branch names")
    assert re.search(rf"^{re.escape(branch['path'])} +conventions +20\S+ \S+ UTC +Branch names$",
                     out, re.M), out
    out, raw = both(ctl, "kb", "show", branch["path"])
    assert raw == daemon.call("knowledge.get", path=branch["path"])
    assert out.startswith(f"{branch['path']}  [conventions]\n  title: Branch names\n")

    out, raw = both(ctl, "pinned", "show")
    assert out == "Run the tests first.\n" and raw == daemon.call("pinned.get")
    out = readable(ok(ctl("pinned", "append", "Never push to main")))
    assert out.startswith("pinned.md now ") and " code units long" in out
    ok(ctl("pinned", "set", ""))
    empty = ctl("pinned", "show")
    assert empty.stdout == "" and "pinned.md is empty" in empty.stderr


def test_retrieve_and_prompt_print_the_text_and_a_summary(home_with_data, tmp_path):
    _daemon, ctl = home_with_data
    (tmp_path / "task.json").write_text(json.dumps(TASK))
    task = str(tmp_path / "task.json")
    result = ctl("retrieve", "--task", task, "--project", "atlas")
    raw = json.loads(ok(ctl("retrieve", "--task", task, "--project", "atlas", "--json")))
    assert raw["text"] and ok(result) == raw["text"] + "\n"
    assert re.match(rf"retrieve: {len(raw['selected'])} records? selected from "
                    rf"{raw['candidates']} candidates?, ", result.stderr), result.stderr
    readable(result.stderr)
    missing = ctl("retrieve", "--task", task, "--project", "elsewhere-entirely")
    assert missing.stdout == "" and "no memory for this task: no active record matched" \
        in missing.stderr
    prompt = ctl("prompt", "--task", task, "--project", "atlas")
    raw = json.loads(ok(ctl("prompt", "--task", task, "--project", "atlas", "--json")))
    assert ok(prompt) == raw["text"] + "\n"
    assert prompt.stderr.startswith("prompt: ") and "memory mode relevant" in prompt.stderr
    assert "pinned " in prompt.stderr and "relevant_memory " in prompt.stderr


def test_config_maintenance_telemetry_backup_read_as_text(home_with_data, tmp_path):
    daemon, ctl = home_with_data
    out, raw = both(ctl, "config", "get")
    assert raw == daemon.call("config.get")
    assert re.search(r"^engine\.memory_retrieval_top_k = 8$", out, re.M), out
    assert re.search(r'^llm\.model = "[^"]+"$', out, re.M), out
    assert all(" = " in line for line in out.splitlines()), out
    out, raw = both(ctl, "config", "get", "llm.model")
    assert out.strip() == raw["value"]
    assert readable(ok(ctl("config", "set", "server.socket", ""))).strip() == \
        'server.socket = "" (takes effect after a restart)'

    for job, fact in (("expiry", r"^  0 records expired$"),
                      ("rescan", r"^  1 note pending in the inbox$"),
                      ("kb_sweep", r"^  \d+ knowledge files unchanged$"),
                      ("retention", r"^  notebook summaries: disabled$"),
                      ("reindex", r"^  index integrity check passed$")):
        out = readable(ok(ctl("maintenance", job)))
        assert out.startswith(f"{job} done at 20") and re.search(fact, out, re.M), out
        raw = json.loads(ok(ctl("maintenance", job, "--json")))
        assert raw["job"] == job
        # One sentence per report key.
        assert len(out.splitlines()) == 1 + len(raw["report"]), out

    daemon.call("memory.retrieve", task=TASK, project="nowhere")
    out, raw = both(ctl, "telemetry", "--limit", "2")
    assert out.startswith("2 retrievals, newest first")
    assert re.search(r"^AT +TASK +PROJECT +AGENT +CANDIDATES +SELECTED +SIZE +MS +RESULT +TERMS$",
                     out, re.M), out
    assert "W-7" in out and "token, refresh" in out and len(raw["rows"]) == 2
    assert re.search(r"^\S+ \S+ UTC +W-7 +nowhere +- +\d+ +0 +0 B +[\d.]+ +no_results ", out, re.M)
    out = readable(ok(ctl("backup", str(tmp_path / "b"))))
    assert re.match(rf"backup written to {re.escape(str(tmp_path / 'b'))}: \d+ records, "
                    r"\d+ files, [\d.]+ [KM]?B$", out.strip()), out


def test_status_after_a_job_summarises_its_result(home_with_data):
    _daemon, ctl = home_with_data
    ok(ctl("maintenance", "reindex"))
    out = readable(ok(ctl("status")))
    row = next(line for line in out.splitlines() if line.startswith("reindex "))
    assert "not scheduled" in row and "ok: records_indexed=" in row and "=yes" in row, row


def test_quarantined_list_is_a_table(home_with_data):
    daemon, ctl = home_with_data
    (Path(daemon.home) / "notes" / "inbox" / "broken.md").write_bytes(b"bad \xff\xfe bytes\n")
    wait_for(lambda: daemon.call("status")["inbox"]["quarantined"] == 1, what="quarantine")
    out, raw = both(ctl, "inbox", "--quarantined")
    assert raw == daemon.call("inbox.list", quarantined=True)
    assert out.startswith("1 file in notes/quarantine/")
    assert re.search(r"^broken\.md +20\S+ \S+ UTC +not valid UTF-8", out, re.M), out


def json_error(result, code: int) -> dict:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert set(error) >= {"code", "message", "detail"}
    return error


def test_errors_under_json_are_json_on_stderr(daemon, tmp_path):
    env = clean_env(MINIONS_HOME=str(daemon.home))
    error = json_error(run_ctl("show", "M-missing", "--json", env=env), 1)
    assert error["code"] == -32001 and error["message"] == "not_found"
    assert "M-missing" in error["detail"] and error["data"]["id"] == "M-missing"
    error = json_error(run_ctl("--json", "config", "set", "engine.nope", "1", env=env), 1)
    assert error["code"] == -32602 and "engine.nope" in error["detail"]
    error = json_error(run_ctl("--json", "bogus-command", env=env), 2)
    assert error["code"] == "usage" and "bogus-command" in error["detail"]
    error = json_error(run_ctl("kb", "add", "--category", "nonsense", "--title", "t",
                               "--json", env=env, stdin="x"), 2)
    assert error["code"] == "usage" and "nonsense" in error["detail"]
    error = json_error(run_ctl("--json", "note", "-", env=env, stdin=""), 2)
    assert "standard input" in error["detail"]
    error = json_error(run_ctl("--json", "prompt", "--task", "-", env=env, stdin="[1]"), 2)
    assert "--task must be a JSON object" in error["detail"]
    error = json_error(run_ctl("--socket", str(tmp_path / "none.sock"), "--json", "status",
                               env=clean_env()), 3)
    assert error["code"] == "unreachable" and "minionsd --home" in error["detail"]
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    error = json_error(run_ctl("--home", str(blocked / "h"), "--json", "init",
                               env=clean_env()), 1)
    assert error["code"] == "failed" and "cannot set up" in error["detail"]
    # Without --json the same errors stay plain text.
    plain = run_ctl("show", "M-missing", env=env)
    assert plain.returncode == 1 and plain.stderr.startswith("minionsctl: not_found: ")
    usage = run_ctl("bogus-command", env=env)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: minionsctl")


def test_a_daemon_that_dies_mid_call_is_a_json_connection_lost(tmp_path):
    """Under --json the went-away case is told apart from nothing listening, as in text."""
    result, _ = run_against_a_dying_daemon("--json", "status", env=clean_env())
    error = json_error(result, 3)
    assert error["code"] == "connection_lost" and "may or may not" in error["detail"]


def test_home_and_socket_are_read_after_the_command_word_too(tmp_path):
    home = tmp_path / "h"
    done = subprocess.run([sys.executable, "-m", "minionsd.cli", "init", "--home", str(home)],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert (home / "config.toml").is_file()
    # before the command word still works, and a value given there is kept
    down = subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), "status",
                           "--json"], capture_output=True, text=True, timeout=60,
                          env=clean_env())
    assert down.returncode == 3 and str(home) in down.stderr
