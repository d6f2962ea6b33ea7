"""Author identity of inbox notes (ORIGINAL §2.4, §9.1 scenario 13, §9.9 scenario 70)."""

from __future__ import annotations

import pytest

from minionsd.memory.identity import author_trust, has_notebook, is_temporary, note_author


def test_front_matter_agent_wins():
    assert note_author({"agent": "dallas"}, "misc-note.md", []) == "dallas"


def test_author_key_is_second():
    assert note_author({"author": "ripley"}, "misc-note.md", []) == "ripley"
    assert note_author({"agent": "dallas", "author": "ripley"}, "x-y.md", []) == "dallas"


def test_blank_or_structured_front_matter_values_are_ignored():
    assert note_author({"agent": "  ", "author": None}, "ripley-x.md", []) == "ripley"
    assert note_author({"agent": ["a"]}, "ripley-x.md", []) == "ripley"


def test_non_string_front_matter_value_becomes_string():
    assert note_author({"agent": 7}, "x.md", []) == "7"


def test_longest_configured_prefix():
    agents = ["command", "command-center", "dallas"]
    assert note_author({}, "command-center-x-2026-05-01.md", agents) == "command-center"
    assert note_author({}, "command-x.md", agents) == "command"


def test_configured_prefix_needs_a_dash():
    assert note_author({}, "dallasx-note.md", ["dallas"]) == "dallasx"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("command-center-note-2026-05-01.md", "command"),
        ("feedback-dallas-from-ripley.md", "feedback"),
        ("yemi.shin-note.md", "unknown"),
        (".hidden.md", "unknown"),
        ("no-prefix-0.md", "no"),
        ("temp-ab12-x.md", "temp-ab12"),
        ("temp-ab12.md", "temp"),
        ("plain.md", "unknown"),
    ],
)
def test_file_name_fallback(name, expected):
    assert note_author({}, name, []) == expected


def test_is_temporary():
    config = {"dallas": {"temporary": False}, "scratch": {"temporary": True}}
    assert is_temporary("temp-ab12", config)
    assert is_temporary("temp", config)
    assert is_temporary("scratch", config)
    assert not is_temporary("dallas", config)
    assert not is_temporary("template", config)
    assert not is_temporary("unknown", config)


def test_has_notebook():
    config = {"dallas": {"temporary": False}, "scratch": {"temporary": True}, "temp-x": {}}
    assert has_notebook("dallas", config)
    assert not has_notebook("scratch", config)
    assert not has_notebook("temp-x", config)
    assert not has_notebook("ripley", config)
    assert not has_notebook("unknown", config)


def test_trust_follows_the_author_only():
    humans = {"alice"}
    assert author_trust("engine", humans, daemon_wrote=True) == "system"
    assert author_trust("engine", humans) == "agent"  # a claim in a dropped file
    assert author_trust("alice", humans) == "human"
    for author in ("bob", "dallas", "temp-1", "unknown", "", None, "Alice"):
        assert author_trust(author, humans) == "agent"
    assert author_trust("engine", {"engine"}, daemon_wrote=True) == "system"  # its own voice
    assert author_trust("engine", {"engine"}) == "agent"  # listing engine does not make it human


def test_human_authors_default_to_the_login_name(tmp_path):
    from minionsd import config as config_mod
    from minionsd.home import Home
    from minionsd.memory.app import App

    def humans(tree, login):
        cfg = config_mod.Config(tmp_path / "config.toml", tree, None)
        return App(home=Home(tmp_path), config=cfg, db=None, login_name=login).human_authors()

    assert humans({}, "dev") == {"dev"}
    assert humans({"trust": {"human_authors": ["alice", "bob"]}}, "dev") == {"alice", "bob"}
    assert humans({}, "") == frozenset()
