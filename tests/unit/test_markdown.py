"""Front matter parsing/writing, headings and slugs (ORIGINAL §2.2 item 1, §9.1 scenario 4)."""

from __future__ import annotations

import pytest

from minionsd.errors import MinionsError
from minionsd.text.markdown import (
    FrontMatterError,
    first_heading,
    parse_note,
    read_note,
    render_note,
    safe_slug,
    slugify,
)


def test_no_front_matter_returns_text_unchanged():
    assert parse_note("# Title\n\nbody\n") == ({}, "# Title\n\nbody\n")


def test_front_matter_and_body():
    meta, body = parse_note("---\nid: NOTE-1\nagent: dallas\n---\n\n# T\nx\n")
    assert meta == {"id": "NOTE-1", "agent": "dallas"}
    assert body == "# T\nx\n"


def test_bom_is_stripped():
    meta, body = parse_note("\ufeff---\nagent: a\n---\nbody")
    assert meta == {"agent": "a"}
    assert body == "body"
    assert parse_note("\ufeffplain") == ({}, "plain")


def test_crlf_front_matter():
    meta, body = parse_note("---\r\nid: NOTE-x\r\ntitle: T\r\n---\r\n\r\nline one\r\nline two")
    assert meta == {"id": "NOTE-x", "title": "T"}
    assert body == "line one\r\nline two"


def test_dates_stay_strings():
    meta, _ = parse_note("---\ndate: 2026-05-01\nhold: true\nimportance: 0.5\n---\n")
    assert meta == {"date": "2026-05-01", "hold": True, "importance": 0.5}


def test_empty_block_is_empty_mapping():
    assert parse_note("---\n---\nbody") == ({}, "body")


def test_unclosed_fence_is_not_front_matter():
    text = "---\nagent: x\nno closing fence\n"
    assert parse_note(text) == ({}, text)


def test_invalid_yaml_raises_clear_error():
    with pytest.raises(FrontMatterError, match="not valid YAML"):
        parse_note("---\nkey: [unclosed\n---\nbody")


def test_non_mapping_raises_clear_error():
    with pytest.raises(FrontMatterError, match="must be a mapping") as info:
        parse_note("---\n- a\n- b\n---\nbody")
    assert isinstance(info.value, MinionsError)


def test_render_keeps_order_and_quotes_dangerous_values():
    meta = {"id": "NOTE-1", "title": "a: b", "why": "line1\nline2", "date": "2026-05-01"}
    text = render_note(meta, "# Body\n")
    assert text.startswith("---\nid: NOTE-1\n")
    assert "date: 2026-05-01\n" in text
    assert text.endswith("---\n\n# Body\n")
    assert parse_note(text) == (meta, "# Body\n")


@pytest.mark.parametrize("body", ["", "\n\nleading blanks", "x\r\ny", "---\nnot fm\n"])
def test_round_trip(body):
    meta = {"agent": "dallas", "tags": ["a", "b"], "hold": False}
    assert parse_note(render_note(meta, body)) == (meta, body)


def test_render_without_meta_is_body():
    assert render_note({}, "body") == "body"


def test_first_heading():
    assert first_heading("intro\n## Two\n# One  \n# Later") == "One"
    assert first_heading("## only h2\n#nospace") is None
    assert first_heading("#   \n# Real") == "Real"


def test_slugify():
    assert slugify("Hello, World!", 50) == "hello-world"
    assert slugify("--a__b--", 50) == "a-b"
    assert slugify("abc def", 4) == "abc-"  # the cut may leave a trailing dash
    assert slugify("日本語", 50) == ""


def test_safe_slug_examples():
    assert safe_slug("Weird Slug/With spaces é") == "weird-slug-with-spaces-732e43b7"
    assert safe_slug("ok-slug_1.2") == "ok-slug_1.2"
    assert safe_slug("") == "item"
    assert safe_slug("   ") == "item"
    long = safe_slug("a" * 90)
    assert len(long) <= 80
    assert long.startswith("a" * 71 + "-")
    assert len(long.rsplit("-", 1)[1]) == 8


def test_safe_slug_neutralises_path_characters():
    slug = safe_slug("../bad slug 🤖/?", 100)
    assert slug.startswith("bad-slug-")
    assert "/" not in slug and ".." not in slug


def test_an_unclosed_front_matter_block_is_body_with_a_warning():
    meta, body, warnings = read_note("---\nauthor: x\ntitle: never closed\nThe text.\n")
    assert meta == {} and body.startswith("---\nauthor: x")
    assert len(warnings) == 1 and "never closed" in warnings[0]


@pytest.mark.parametrize("text", [
    "---\n\nA horizontal rule, then prose.\n",
    "---\nauthor: x\n---\nClosed front matter.\n",
    "Prose first.\n---\nkey: value\n",
    "---\nJust a line: with a colon but no key shape? yes\n",
])
def test_no_warning_for_a_rule_or_closed_front_matter(text):
    assert read_note(text)[2] == []
