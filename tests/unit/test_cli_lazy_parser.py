"""minionsctl's lazy parser (only the chosen command's subparser is built) answers every command
line exactly as the full parser does: the same namespace, the same usage error from the same
parser, the same help text and exit code."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd import cli
from minionsd.cli import parser as cli_parser
from minionsd.cli.parser import ADDERS, OWNER, ParseError, build_parser, command_word, parse
from tests.conftest import REPO

# A minimal valid command line for every command (the first words are the command's name).
MINIMAL = {
    "init": [], "status": [], "note": ["text"], "inbox": [], "inbox requeue": ["x.md"],
    "consolidate": [], "search": ["q"], "show": ["M-1"], "pin": ["M-1"], "expire": ["M-1"],
    "retract": ["M-1", "--reason", "r"], "supersede": ["M-1", "--by", "M-2"],
    "purge": ["M-1", "--reason", "r"], "kb add": ["--category", "reviews", "--title", "t"],
    "kb list": [], "kb show": ["knowledge/reviews/x.md"], "pinned show": [],
    "pinned set": ["x"], "pinned append": ["x"], "retrieve": ["--task", "-"],
    "prompt": ["--task", "-"], "config get": [], "config set": ["k", "v"],
    "maintenance": ["reindex"], "telemetry": [], "backup": ["/tmp/b"], "restore": ["/tmp/b"],
    "service install": ["--print"], "connect": ["codex", "--print"],
    "token create": ["n", "--agent", "a", "--scope", "read"], "token list": [],
    "token revoke": ["n"], "web": ["--no-open"],
    # Not in COMMANDS (they run on their own), parsed all the same.
    "mcp": [], "hook": ["claude-code", "user-prompt"], "serve": [],
}
PREFIXES = ([], ["--json"], ["--home", "/h"], ["--home=/h"], ["--ho", "/h", "--js"],
            ["--socket", "/s"], ["--url", "http://127.0.0.1:1", "--token-env", "T"],
            ["--token-env=T", "--json"])
# Lines the lazy parser must hand to the full parser (help, errors, unknown words).
AWKWARD = [[], ["-h"], ["--help"], ["--he"], ["--h", "x", "status"], ["--", "status"],
           ["nosuch"], ["statu"], ["--home"], ["--home", "-x", "status"], ["-x", "status"],
           ["--json=1", "status"], ["status", "extra"], ["status", "--bogus"],
           ["status", "-h"], ["kb"], ["kb", "nosuch"], ["kb", "add", "-h"], ["retract", "M-1"],
           ["show"], ["config", "set", "k"], ["maintenance", "nosuch"], ["token", "create", "n",
           "--agent", "a", "--scope", "bad"], ["hook", "a", "b", "c"], ["--home", "/h", "-h",
           "status"], ["status", "--home"], ["search", "--limit", "x", "q"]]


def outcome(run, words: list[str]) -> tuple:
    """What parsing `words` gives: the namespace, the usage error (message and the prog of the
    parser that raised it, whose usage line is printed), or help's exit code and text."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return ("ok", vars(run(words)))
    except ParseError as exc:
        return ("usage", exc.message, exc.parser.prog, exc.parser.format_usage())
    except SystemExit as exc:
        return ("exit", exc.code, out.getvalue(), err.getvalue())


def full(words: list[str]):
    return build_parser().parse_args(words)


def test_the_minimal_table_covers_every_command():
    assert set(cli.COMMANDS) | {"mcp", "hook", "serve"} == set(MINIMAL)


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_every_command_parses_the_same_lazily(name):
    for prefix in PREFIXES:
        for suffix in ([], ["--json"], ["--home", "/other"]):
            words = [*prefix, *name.split(), *MINIMAL[name], *suffix]
            lazy = outcome(parse, words)
            assert lazy[0] == "ok", (words, lazy)
            assert lazy == outcome(full, words), words
            assert command_word(words) == name.split()[0], words


@pytest.mark.parametrize("words", AWKWARD, ids=" ".join)
def test_help_and_usage_errors_are_the_full_parsers(words):
    assert outcome(parse, words) == outcome(full, words)


def test_help_before_the_command_lists_every_command():
    kind, code, text, _ = outcome(parse, ["--home", "/h", "--help", "status"])
    assert (kind, code) == ("exit", 0)
    for word in OWNER:
        assert f"\n    {word} " in text or f"\n    {word}\n" in text, word


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["status", "kb", "add", "show", "--json", "--home", "/h",
                                 "--ho", "--h", "-h", "--help", "--", "x", "M-1", "--reason",
                                 "--socket", "--url", "--token-env", "=", "--home=/x",
                                 "hook", "search", "--limit", "3", "config", "set", "k"]),
                max_size=7))
def test_any_command_line_parses_the_same_lazily(words):
    assert outcome(parse, words) == outcome(full, words)


def test_the_adders_table_names_what_each_adder_adds():
    """ADDERS lists each module's top-level words in --help order, and the parser built for one
    word holds that command alone."""
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices) == [w for _m, _a, words in ADDERS for w in words]
    for word in OWNER:
        only = next(a for a in build_parser(only=word)._actions if a.dest == "command")
        assert list(only.choices) == [word]


def test_a_command_imports_only_its_own_module():
    """`minionsctl status` (no daemon: exit 3) loads the status module and none of the other
    commands' modules, nor the modules a hook or the spinner need."""
    others = {f"minionsd.cli.{m}" for m, _a, _w in ADDERS} - {"minionsd.cli.status"}
    probe = ("import sys; from minionsd.cli import main; code = main(['--home', sys.argv[1], "
             "'status']); print(code, sorted(m for m in sys.modules if m.startswith("
             "('minionsd.', 'dataclasses', 'threading'))))")
    done = subprocess.run([sys.executable, "-c", probe, str(REPO / "no-such-home")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    code, _, loaded = done.stdout.partition(" ")
    assert code == "3", done
    assert "minionsd.cli.status" in loaded
    assert not [m for m in others | {"minionsd.cli.progress", "minionsd.agents", "threading",
                                     "dataclasses"} if f"'{m}'" in loaded], loaded


def test_a_hook_does_not_load_the_fence_tables_or_dataclasses():
    """The hooks run on every prompt: they name the fence (fence_name) but need none of
    fence.py's tables, and the session is a named tuple, not a dataclass (inspect)."""
    probe = ("import io, sys; from minionsd.cli import main; sys.stdin = io.StringIO("
             "'{\"prompt\": \"x\", \"cwd\": \"/\"}'); main(['--home', sys.argv[1], 'hook', "
             "'claude-code', 'user-prompt', '--project', 'p']); print(sorted(m for m in "
             "sys.modules if m.startswith(('minionsd.', 'dataclasses', 'inspect', "
             "'html', 'unicodedata'))))")
    done = subprocess.run([sys.executable, "-c", probe, str(REPO / "no-such-home")], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "minionsd.agents.hooks" in done.stdout, done
    assert "not reachable" in done.stderr  # the hook ran: no daemon there
    for heavy in ("minionsd.text.fence'", "dataclasses", "inspect", "'html", "unicodedata",
                  "minionsd.cli.status"):
        assert heavy not in done.stdout, (heavy, done.stdout)


def test_module_of_names_a_real_module():
    for word in OWNER:
        module = cli_parser.module_of(word)
        assert hasattr(module, "COMMANDS") or hasattr(module, "RUNNERS")
