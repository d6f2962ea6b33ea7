"""Two notes that differ in one ordinary word reach notes.md as two lines, through the CLI
and a real daemon on the regex path (SPEC §3.1.2: every note contributes a line carrying its
title and gist)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _ctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_staging_and_production_notes_keep_their_own_lines(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n")
    make_daemon()
    for author, env in (("ripley", "staging"), ("dallas", "production")):
        done = _ctl(short_home, "note", f"Before running migrations on {env}, disable the "
                    "cache layer first.", "--title",
                    f"{env.capitalize()} migrations: disable the cache first",
                    "--author", author)
        assert done.returncode == 0, done.stderr
    done = _ctl(short_home, "consolidate", "--force")
    assert done.returncode == 0, done.stderr
    notes_md = (short_home / "notes.md").read_text()
    lines = [line for line in notes_md.splitlines() if line.startswith("- **")]
    assert len(lines) == 2, notes_md
    staging, production = sorted(lines, key=lambda line: "Production" in line)
    assert staging.startswith("- **Staging migrations: disable the cache first**: Before "
                              "running migrations on staging") and "_(ripley)_" in staging
    assert production.startswith("- **Production migrations: disable the cache first**: "
                                 "Before running migrations on production")
    assert "_(dallas)_" in production and "Deduplication" not in notes_md
