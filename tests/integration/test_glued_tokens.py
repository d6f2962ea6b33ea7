"""A vendor token glued to what precedes it (`deploy-ghp_…`, `dave_ghp_….md`, `fix-ghp_…`,
`TOKEN_AKIA…`) is redacted wherever redaction runs, end to end through a daemon: a note's body,
an inbox file's name, the slug of a submitted note, episode fields, a task's branch (telemetry
terms) and the prompt."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.integration.test_consolidation import drop, home_with

GH = "ghp_" + "u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"
AWS = "AKIA" + "Q3VN7FJ2LD8XK4PW"
# Lower-cased and cut at `_` by slugs and term extraction: what is left of each token.
SHAPES = ("u8jzpde0igxld6gncfbaepfjbd0kh8oool8d", "q3vn7fj2ld8xk4pw")


def _derived_rows(home: Path) -> str:
    """Every row derived from what was written (the batch journal keeps a note as written
    until its batch is done, as the archive does)."""
    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        return "\n".join(json.dumps(list(row), default=str) for table in
                         ("memory_records", "kb_files", "retrieval_telemetry")
                         for row in conn.execute(f"SELECT * FROM {table}"))
    finally:
        conn.close()


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [shape for shape in SHAPES if shape in lowered]


def test_a_glued_token_reaches_no_record_name_prompt_or_term(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n"
                     "memory_episodic_capture = true\n")
    daemon = make_daemon()
    sent = daemon.call("inbox.submit", author="dave",
                       body=f"cormorantpika: CI uses deploy-{GH} and TOKEN_{AWS} for releases")
    assert not _leaks(sent["name"]), sent
    drop(home / "notes" / "inbox", f"dave_{GH}.md",
         "---\nauthor: dave\n---\ncormorantpika second note\n", age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 2 and not _leaks(json.dumps(result)), result
    assert "notes/archive/" in json.dumps(result) and "dave_redacted-github_token" in json.dumps(
        result)
    daemon.call("episode.capture", outcome="success", task_id=f"cfg-{GH}", agent="codex",
                summary="cormorantpika outcome", files=[f"ci/deploy-{GH}.env"],
                tests=[f"test_{GH}"])
    found = daemon.call("memory.search", query="cormorantpika")
    assert found["total"] == 3, found
    body = next(r["body"] for r in found["records"] if "CI uses" in r["body"])
    assert "deploy-[REDACTED:github_token] and TOKEN_[REDACTED:aws_access_key_id]" in body
    prompt = daemon.call("prompt.assemble", agent="codex", task={
        "id": "T-w", "title": "cormorantpika releases outcome", "pr": {"branch": f"fix-{GH}"}})
    assert prompt["retrieval"]["selected"], prompt["retrieval"]
    rows = daemon.call("telemetry.retrievals", limit=5)["rows"]
    assert rows and "cormorantpika" in rows[0]["terms"]
    names = "\n".join(str(p.relative_to(home)) for p in home.rglob("*")
                      if "archive" not in p.parts or p.name != f"dave_{GH}.md")
    surfaces = {"records": json.dumps(found), "prompt": json.dumps(prompt),
                "terms": json.dumps(rows), "file names": names, "database": _derived_rows(home)}
    surfaces |= {str(p.relative_to(home)): p.read_text() for p in home.rglob("*.md")
                 if p.is_file() and "archive" not in p.parts}
    for surface, text in surfaces.items():
        assert not _leaks(text), f"{_leaks(text)} reached {surface}"
