"""Title, gist and distinct tokens of a note (SPEC §3.1 v2): front matter title, first
heading, first sentence; never the file name, never front matter read as content."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.consolidate.gist import distinct_tokens, title_and_gist


def test_title_sources_in_order():
    assert title_and_gist("---\ntitle: From meta\n---\n# Heading\n\nGist here.\n") == (
        "From meta", "Gist here.")
    assert title_and_gist("intro line\n## Second level\nbody") == ("Second level", "intro line")
    assert title_and_gist("First sentence. Second one.") == ("First sentence", "Second one.")
    assert title_and_gist("- **Key**: the value\n- other") == ("Key", "the value")
    assert title_and_gist("") == ("Untitled note", "")
    assert title_and_gist("---\nagent: x\n---\n") == ("Untitled note", "")


def test_gist_skips_code_rules_tables_and_comments():
    text = ("# T\n\n```\ncode line\n```\n---\n| a | b |\n|---|---|\n<!-- c -->\n"
            "- [x] Real gist, with `src/app.py`. More.\n")
    assert title_and_gist(text) == ("T", "Real gist, with `src/app.py`.")


def test_front_matter_that_is_not_yaml_is_not_content():
    title, summary = title_and_gist("---\ntitle: [broken\nmust: always\n---\nThe body.\n")
    assert (title, summary) == ("The body", "")


@given(st.text(max_size=300))
def test_any_text_gives_a_one_line_title(text):
    title, summary = title_and_gist(text)
    assert title and "\n" not in title and len(title) <= 120
    assert "\n" not in summary and len(summary) <= 300


def test_distinct_tokens():
    assert distinct_tokens("test-m13 -> setup_8 in src/a.py on port 3000, v2.4.0.") == {
        "test-m13", "setup_8", "src/a.py", "3000", "v2.4.0"}
    assert distinct_tokens("UserCache and `flag` matter") == {"usercache", "flag"}
    assert distinct_tokens("plain words only") == frozenset()
