"""scripts/bench.py --only cli and --only startup run end to end at a tiny size and print their
tables. A smoke test: it checks what is printed, never how fast anything was."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.conftest import REPO


def run_bench(*args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "scripts/bench.py", "--quick", "--cli-runs", "1",
                           *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return done.stdout


def test_bench_cli_prints_every_command():
    out = run_bench("--only", "cli")
    assert re.search(r"^== minionsctl calls at 200 records", out, re.M), out
    for label in ("status", "search", r"show \(memory\.get\)", "retrieve --task -"):
        assert re.search(rf"^   {label} +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), \
            (label, out)
    for label in ("hook user-prompt", "hook session-start"):
        assert re.search(rf"^   {label} +[\d.]+ +[\d.]+ +[\d.]+$", out, re.M), (label, out)


def test_bench_startup_prints_the_figures_and_the_timeline():
    out = run_bench("--only", "startup")
    assert re.search(r"^   200 records +median +\d+ ms", out, re.M), out
    assert re.search(r"^   empty home +median +\d+ ms", out, re.M), out
    for step in ("imports \\(minionsd\\.daemon\\)", "database open \\(migrations\\)",
                 "journal recovery \\(consolidation\\)", "start Scheduler", "socket listening",
                 "status #2"):
        assert re.search(rf"^ +[\d.]+ +[\d.]+ +[\d.]+  {step}", out, re.M), (step, out)


def run_db_space(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "scripts/db_space.py", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_db_space_reports_a_real_home_and_names_what_is_wrong(tmp_path):
    from minionsd.storage.database import Database

    db = tmp_path / "state.db"
    Database(db).close()
    done = run_db_space(str(db), "--top", "3")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^   file / \(title \+ body\) = [\d.]+$", done.stdout, re.M), done.stdout
    assert "--top" in run_db_space("--help").stdout
    missing = run_db_space(str(tmp_path / "nothing.db"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    (tmp_path / "text.db").write_text("not sqlite")
    wrong = run_db_space(str(tmp_path / "text.db"))
    assert wrong.returncode == 1 and "cannot read" in wrong.stderr, wrong.stderr
    assert "Traceback" not in missing.stderr + wrong.stderr
