"""Pure parts of minionsd/agents: project names from git remotes, the tools' argument checker,
section extraction from an assembled prompt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.agents.project import IdentityError, repo_name_from_url, resolve_agent
from minionsd.agents.schema import SchemaError, check
from minionsd.agents.session import extract_section
from minionsd.agents.tools import TOOLS
from minionsd.text.fence import fence

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=30
                ).filter(lambda s: not s.endswith(".git") and s not in (".", ".."))


@pytest.mark.parametrize("url", [
    "git@host:team/payments.git", "https://host/team/payments", "https://host/team/payments/",
    "https://host/team/payments.git", "ssh://git@host:2222/team/payments.git",
    "git@github.com:payments.git", "/srv/git/payments.git", "file:///srv/git/payments",
    "https://user@host/team/sub/group/payments.git/"])
def test_repo_name_from_common_remote_forms(url):
    assert repo_name_from_url(url) == "payments"


@given(host=NAMES, group=NAMES, name=NAMES, dotgit=st.booleans(), scp=st.booleans())
def test_repo_name_is_the_last_path_segment(host, group, name, dotgit, scp):
    suffix = ".git" if dotgit else ""
    url = f"git@{host}:{group}/{name}{suffix}" if scp else f"https://{host}/{group}/{name}{suffix}"
    assert repo_name_from_url(url) == name


def test_repo_name_of_nothing():
    assert repo_name_from_url("") is None and repo_name_from_url(".git") is None


def test_agent_names(monkeypatch):
    monkeypatch.delenv("MINIONS_AGENT", raising=False)
    assert resolve_agent(None) == "agent" and resolve_agent("dallas") == "dallas"
    monkeypatch.setenv("MINIONS_AGENT", "ripley")
    assert resolve_agent(None) == "ripley" and resolve_agent("dallas") == "dallas"
    for bad in ("-x", "a b", "x" * 65, "ümlaut"):
        with pytest.raises(IdentityError):
            resolve_agent(bad)


SCHEMAS = {tool.name: tool.input_schema for tool in TOOLS}


@pytest.mark.parametrize(("tool", "args", "field"), [
    ("memory_search", {}, "query"), ("memory_search", {"query": ""}, "query"),
    ("memory_search", {"query": "x", "limit": True}, "limit"),
    ("memory_search", {"query": "x", "limit": 0}, "limit"),
    ("memory_search", {"query": "x", "type": "gossip"}, "type"),
    ("memory_search", {"query": "x", "extra": 1}, "extra"),
    ("memory_context", {"task": {"id": 7}}, "task.id"),
    ("memory_context", {"task": {"pr": {"files": [1]}}}, "task.pr.files[0]"),
    ("memory_outcome", {"outcome": "success"}, "task_id"),
    ("memory_outcome", {"outcome": "won", "task_id": "T"}, "outcome"),
    ("memory_retract", {"id": "M-1"}, "reason"),
])
def test_a_bad_argument_is_named(tool, args, field):
    with pytest.raises(SchemaError) as caught:
        check(SCHEMAS[tool], args)
    assert caught.value.field == field


def test_good_arguments_pass():
    check(SCHEMAS["memory_context"], {"text": "x", "task": {"id": "W-1", "extra": "kept"}})
    check(SCHEMAS["memory_search"], {"query": "x", "limit": 5, "type": "semantic",
                                     "scope": None})
    check(SCHEMAS["knowledge_list"], {})


@given(before=st.text(max_size=200), body=st.text(max_size=400), after=st.text(max_size=200))
def test_extract_section_returns_the_whole_fenced_section(before, body, after):
    block = "## Heading\n\n" + fence(body, "team-notes:notes.md")
    prompt = fence(before, "pinned:pinned.md") + "\n\n" + block + "\n\n" + fence(
        after, "personal-memory:knowledge/agents/a.md") + "\n"
    assert extract_section(prompt, "team-notes:notes.md") == block
    assert extract_section(prompt, "memory-retrieval:item=x") is None


def test_hook_invocations_are_recognised_past_global_options():
    from minionsd.cli import is_hook_invocation

    assert is_hook_invocation(["hook", "claude-code", "user-prompt"])
    assert is_hook_invocation(["--home", "hook", "--json", "hook", "claude-code"])
    assert is_hook_invocation(["--socket", "/s", "hook"])
    assert not is_hook_invocation(["--home", "hook", "status"])
    assert not is_hook_invocation(["note", "hook"]) and not is_hook_invocation([])
