"""Turning the daemon's answers into pages: the Jinja2 environment (autoescaping on, always),
Markdown through markdown-it-py with raw HTML off, and the filters the templates use.

Untrusted text (note bodies, titles, file names, reasons, task texts) reaches a page only
through autoescaped `{{ }}` or `markdown()`, whose output is safe because markdown-it-py with
`html: False` escapes every tag and refuses `javascript:`-style links; images are not rendered
at all (a page loads nothing from another host), their alt text stays as text.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

TEMPLATES = resources.files("minionsd.gateway.web").joinpath("templates")


def _markdown_engine() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    default_link_open = md.renderer.rules.get("link_open")

    def link_open(tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
        if default_link_open is not None:
            return default_link_open(tokens, idx, options, env)
        return md.renderer.renderToken(tokens, idx, options, env)

    md.renderer.rules["link_open"] = link_open
    return md


_MD = _markdown_engine()


def markdown(text: str | None) -> Markup:
    """Markdown as HTML that can hold no markup of its own (raw HTML is shown as text)."""
    return Markup(_MD.render(text or ""))


def parse_time(value: str | None) -> datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def relative(value: str | None, now: datetime | None = None) -> str:
    """'3 min ago', 'in 2 h', 'just now'; '' for no time."""
    when = parse_time(value)
    if when is None:
        return ""
    now = now or datetime.now(UTC)
    seconds = (now - when).total_seconds()
    ahead = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        return "just now"
    steps = ((86400 * 365, "y"), (86400 * 30, "mo"), (86400, "d"), (3600, "h"), (60, "min"))
    span, unit = next((step for step in steps if seconds >= step[0]), steps[-1])
    amount = max(1, round(seconds / span))
    return f"in {amount} {unit}" if ahead else f"{amount} {unit} ago"


def exact(value: str | None) -> str:
    when = parse_time(value)
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if when else ""


def size(value: Any) -> str:
    if not isinstance(value, int | float):
        return ""
    if value < 1024:
        return f"{int(value)} B"
    if value < 1024 * 1024:
        return f"{value / 1024:.1f} KB"
    return f"{value / 1024 / 1024:.1f} MB"


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def build_environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,  # every template, whatever its file name
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(markdown=markdown, relative=relative, exact=exact, size=size,
                       pretty_json=pretty_json)
    return env
