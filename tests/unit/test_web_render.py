"""The web view's templates keep untrusted text as text: autoescaping in every template,
Markdown with raw HTML off, no javascript: links, no images; and the small pure helpers
(relative times, the sign-in redirect target, the try-a-task Task, the Origin check)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from minionsd.gateway.identity import Identity
from minionsd.gateway.web import guard
from minionsd.gateway.web.pages import _task_from
from minionsd.gateway.web.render import build_environment, markdown, relative
from minionsd.gateway.web.signin import safe_next
from minionsd.gateway.web.view import Viewer, WebError

ATTACKS = [
    "<script>alert(1)</script>",
    "</title><script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "<svg onload=alert(1)>",
    '"><b onmouseover="alert(1)">x</b>',
    "<iframe src=//evil.example></iframe>",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_markdown_shows_raw_html_as_text(attack: str) -> None:
    html = str(markdown(f"before\n\n{attack}\n\nafter"))
    assert "<script" not in html and "<img" not in html and "<svg" not in html
    assert "<iframe" not in html and "<b " not in html
    assert "&lt;" in html


@pytest.mark.parametrize("link", ["javascript:alert(1)", "JAVASCRIPT:alert(1)",
                                  "vbscript:msgbox(1)", "data:text/html,<script>x</script>",
                                  "java\tscript:alert(1)"])
def test_markdown_makes_no_script_links(link: str) -> None:
    html = str(markdown(f"[click me]({link}) and <{link}>"))
    assert 'href="javascript' not in html.lower() and 'href="vbscript' not in html.lower()
    assert 'href="data:' not in html.lower()


def test_markdown_renders_no_images_and_marks_links() -> None:
    html = str(markdown("![pixel](https://evil.example/p.png) [docs](https://example.org/)"))
    assert "<img" not in html
    assert '<a href="https://example.org/" rel="noopener noreferrer nofollow">docs</a>' in html


MARKDOWN_TAGS = {"p", "em", "strong", "code", "pre", "a", "ul", "ol", "li", "h1", "h2", "h3",
                 "h4", "h5", "h6", "blockquote", "hr", "br"}
MARKDOWN_ATTRS = {"href", "rel", "title", "start", "class"}
TAG = re.compile(r"<(/?)([a-zA-Z0-9]+)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>")


@given(st.text(alphabet=st.sampled_from(list("<>/\"'=: abcjsvgimortnel()[]!#*`\n")),
               max_size=300))
def test_markdown_emits_only_its_own_tags_and_attributes(text: str) -> None:
    html = str(markdown(text))
    for _close, name, attrs in TAG.findall(html):
        assert name.lower() in MARKDOWN_TAGS, html
        names = set(re.findall(r"([a-zA-Z-]+)=", attrs))
        assert names <= MARKDOWN_ATTRS, html


def _viewer(scopes: frozenset[str] = frozenset({"read", "write", "admin"})) -> Viewer:
    return Viewer(Identity(name="t", agent="a", scopes=scopes, project=None), "s" * 43)


@pytest.mark.parametrize("attack", ATTACKS)
def test_record_template_escapes_every_field(attack: str) -> None:
    env = build_environment()
    record = {"id": "M-1", "type": "semantic", "scope": "global", "status": "retracted",
              "trust": "agent", "title": attack, "body": attack, "source": attack,
              "author": attack, "agent": attack, "project": None, "task": attack, "pr": None,
              "paths": [attack], "tags": [attack], "importance": 0.5, "confidence": 0.5,
              "pinned": False, "created_at": "2026-12-01T00:00:00Z",
              "updated_at": "2026-12-01T00:00:00Z", "expires_at": None,
              "superseded_by": None, "retracted_reason": attack, "meta": {}}
    provenance = {"id": "M-1", "kb_entries": [f"knowledge/x/{attack}"], "archived": [attack],
                  "supersedes": [{"id": attack, "title": attack, "status": "superseded"}],
                  "superseded_by": []}
    recalled = {"total": 1, "rows": [{"at": "2026-12-01T00:00:00Z", "task_id": attack,
                                      "project": attack, "agent": attack, "terms": [attack],
                                      "selected_ids": [attack], "fallback_reason": attack,
                                      "shadow": False, "error": attack}]}
    html = env.get_template("record.html").render(
        data={"record": record, "provenance": provenance, "recalled_by": recalled},
        viewer=_viewer(), nav=(), path="/records/M-1", done=None, now=None,
        json_url="/records/M-1.json")
    assert attack not in html
    for tag in ("<script", "<img", "<svg", "<iframe", "<b "):
        assert tag not in html, tag


def test_templates_are_autoescaped_whatever_their_name() -> None:
    env = build_environment()
    template = env.from_string("{{ value }}")
    assert template.render(value="<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"


def test_relative_times() -> None:
    now = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
    assert relative("2026-12-04T11:59:50Z", now) == "just now"
    assert relative("2026-12-04T11:57:00Z", now) == "3 min ago"
    assert relative("2026-12-04T09:00:00Z", now) == "3 h ago"
    assert relative("2026-12-06T12:00:00Z", now) == "in 2 d"
    assert relative(None, now) == "" and relative("not a time", now) == ""


@pytest.mark.parametrize(("value", "expected"), [
    ("/records?q=x", "/records?q=x"), ("//evil.example/", "/"), ("https://evil.example", "/"),
    ("/\\evil.example", "/"), (None, "/"), ("records", "/")])
def test_sign_in_goes_back_to_this_site_only(value: object, expected: str) -> None:
    assert safe_next(value) == expected


def test_a_try_is_always_marked_as_the_views() -> None:
    assert _task_from("why is CI red\nsince Monday")["id"].startswith("web-try:")
    task = _task_from('{"id": "W-7", "title": "fix the flaky test", "files": ["a.py"]}')
    assert task == {"id": "web-try:W-7", "title": "fix the flaky test", "files": ["a.py"]}
    with pytest.raises(WebError):
        _task_from("{not json")
    with pytest.raises(WebError):
        _task_from("x" * 20_001)


def _request(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "POST", "scheme": "http", "path": "/",
                    "headers": [(b"host", b"127.0.0.1:8765"), *raw], "query_string": b"",
                    "server": ("127.0.0.1", 8765)})


def test_origin_check() -> None:
    assert guard.origin_problem(_request({"Origin": "http://127.0.0.1:8765"}), ()) is None
    assert guard.origin_problem(_request({"Sec-Fetch-Site": "same-origin"}), ()) is None
    assert guard.origin_problem(_request({"Origin": "https://team.example"}),
                                ("https://team.example",)) is None
    for headers in ({}, {"Origin": "null"}, {"Origin": "http://evil.example"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://127.0.0.1:8766"}):
        assert guard.origin_problem(_request(headers), ()) is not None, headers


def test_csrf_token_belongs_to_its_session() -> None:
    one, two = guard.csrf_for("a" * 43), guard.csrf_for("b" * 43)
    assert one != two and guard.csrf_matches(one, one)
    assert not guard.csrf_matches(one, two) and not guard.csrf_matches(one, None)
    assert not guard.csrf_matches(None, "")
