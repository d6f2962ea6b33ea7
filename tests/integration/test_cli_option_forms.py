"""Option forms argparse accepts before the command word are understood also where minionsctl
looks at the words itself (a usage error, found before the command line is parsed).

A hook never blocks the user's prompt: a usage error in `minionsctl hook ...` exits 0 (Claude
Code blocks the prompt on exit 2), also when the top-level options before `hook` take values,
as in the remote form `connect --url` writes (`minionsctl --url URL --token-env VAR hook ...`),
and when argparse's abbreviations of those options are used. Run as `python -m minionsd.cli`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

URL = "http://127.0.0.1:9"
PROMPT = json.dumps({"session_id": "s", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit",
                     "prompt": "why"})
HOOK = ["hook", "claude-code", "user-prompt"]
BEFORE_HOOK = [
    ["--url", URL, "--token-env", "MINIONS_TOKEN"],
    ["--url", URL],
    ["--token-env", "T"],
    ["--ur", URL, "--to", "T"],
    ["--json", "--url", URL, "--token-env", "T"],
    ["--home", "/nonexistent/minions-home", "--url", URL],
]


def ctl(words: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", *words], input=PROMPT,
                          capture_output=True, text=True, timeout=60, env=env, cwd=REPO)


@pytest.mark.parametrize("before", BEFORE_HOOK, ids=" ".join)
@pytest.mark.parametrize("after", [["--bogus"], ["--agent"]], ids=" ".join)
def test_a_hooks_usage_error_exits_0_whatever_options_come_first(before, after):
    result = ctl([*before, *HOOK, *after])
    assert result.returncode == 0, result
    assert result.stdout == ""
    assert "error:" in result.stderr and ("--bogus" in result.stderr
                                          or "--agent" in result.stderr), result.stderr


@pytest.mark.parametrize("before", BEFORE_HOOK[:2], ids=" ".join)
def test_the_same_options_before_another_command_still_exit_2(before):
    """The value after --url is not taken for the command word: `hook` as a value is not a
    hook."""
    assert ctl([*before, "status", "--bogus"]).returncode == 2
    assert ctl(["--url", "hook", "status", "--bogus"]).returncode == 2


@pytest.mark.parametrize("flag", ["--json", "--jso", "--js", "--j"])
def test_a_usage_error_is_json_with_any_spelling_of_json(flag):
    """`--js` is --json to argparse: a usage error is then reported as the JSON error object
    on stderr, as with --json spelled out."""
    result = ctl([flag, "--home", "/nonexistent/minions-home", "status", "--bogus"])
    assert result.returncode == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "usage" and "--bogus" in error["detail"]


def test_json_after_a_double_dash_is_not_the_option():
    result = ctl(["--home", "/nonexistent/minions-home", "search", "--bogus", "--", "--js"])
    assert result.returncode == 2 and result.stderr.startswith("usage:"), result.stderr
