"""Front matter and body of Markdown notes: parsing, writing, headings and slugs.

Every reader and writer of note-shaped files goes through here, so one rule holds everywhere:
a note is an optional `---` fenced YAML mapping followed by a Markdown body. Parsing strips a
UTF-8 BOM and accepts CRLF; writing uses a real YAML emitter, so a value holding `:`, quotes or
newlines can never break the block (the original wrote raw `key: value` lines).

Dates stay strings in both directions: `date: 2026-05-01` loads as the string "2026-05-01"
and is written back unquoted, so metadata survives a JSON round trip and files stay greppable.

Hand- and LLM-written notes often hold blocks that are not YAML only because of an unquoted
colon (`title: Fix: retry storm`). Such a block, when every line is `key: value` with a
recognised note key, is read line by line instead (`read_note` says so in its warnings); and
`check_note_types` drops recognised keys whose value has the wrong type.
"""

from __future__ import annotations

import functools
import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any

import yaml

from minionsd.errors import MinionsError
from minionsd.text.front_matter_quick import read_simple, unclosed_block

BOM = "\ufeff"
_FENCE = "---"
_SAFE_SLUG_RE = re.compile(r"[A-Za-z0-9._-]+")
_H1_RE = re.compile(r"^#[ \t]+(\S.*)$", re.MULTILINE)
# `key: value`, a tab allowed for the space; `key:` alone is an empty value (as in YAML).
_LINE_RE = re.compile(r"^([A-Za-z_]+):(?:[ \t](.*))?$")
# The front-matter keys SPEC §2 recognises in inbox notes.
NOTE_KEYS = ("id", "agent", "author", "date", "title", "kind", "project", "task", "pr", "hold",
             "importance", "tags")
_TEXT_KEYS = ("id", "agent", "author", "date", "title", "kind", "project", "task", "pr")
SAFE_SLUG_MAX = 80
_MD5_SUFFIX_LEN = 8


class FrontMatterError(MinionsError):
    """A note's front matter is not valid YAML or not a mapping."""

    code = -32602
    message = "Invalid params"


def _without_timestamps(resolvers: dict) -> dict:
    """Copy a resolver table minus the timestamp rule (dates stay plain strings)."""
    return {
        first: [(tag, rx) for tag, rx in rules if tag != "tag:yaml.org,2002:timestamp"]
        for first, rules in resolvers.items()
    }


# libyaml's parser when PyYAML was built with it (several times faster); the safe
# constructor and our resolver table apply either way.
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Loader.yaml_implicit_resolvers = _without_timestamps(yaml.SafeLoader.yaml_implicit_resolvers)
_Dumper.yaml_implicit_resolvers = _without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)


def _split_front_matter(text: str) -> tuple[str, str] | None:
    """Return (yaml text, body) when `text` opens with a closed `---` block, else None.

    Leading blank lines are allowed before the opening fence. One blank line after the closing
    fence belongs to the layout, not to the body (render_note writes it back).
    """
    lines = text.splitlines(keepends=True)
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start == len(lines) or lines[start].rstrip() != _FENCE:
        return None
    for end in range(start + 1, len(lines)):
        if lines[end].rstrip() == _FENCE:
            rest = lines[end + 1 :]
            if rest and rest[0] in ("\n", "\r\n"):
                rest = rest[1:]
            return "".join(lines[start + 1 : end]), "".join(rest)
    # An opening fence that is never closed is a horizontal rule, not front matter.
    return None


def parse_note(text: str) -> tuple[dict, str]:
    """Split a note into (front matter mapping, body); no front matter gives ({}, text)."""
    meta, body, _warnings = read_note(text)
    return meta, body


def read_note(text: str) -> tuple[dict, str, list[str]]:
    """parse_note plus warnings: why a block was read line by line instead of as YAML."""
    if text.startswith(BOM):
        text = text[len(BOM) :]
    split = _split_front_matter(text)
    if split is None:
        return {}, text, unclosed_block(text)
    block, body = split
    quick = read_simple(block)  # most notes' blocks, without the YAML constructor
    if quick is not None:
        return quick, body, []
    try:
        meta = yaml.load(block, Loader=_Loader)  # _Loader derives from SafeLoader
    except yaml.YAMLError as exc:
        lines = read_lines(block)
        if lines is None:
            raise FrontMatterError(f"front matter is not valid YAML: {exc}") from exc
        error = " ".join(str(exc).split())
        return lines, body, [f"front matter is not valid YAML ({error}); read it line by "
                             f"line as `key: value` pairs: {', '.join(lines)}"]
    if meta is None:
        return {}, body, []
    if not isinstance(meta, dict):
        kind = type(meta).__name__
        raise FrontMatterError(f"front matter must be a mapping of keys to values, not a {kind}")
    return meta, body, []


@dataclass(frozen=True)
class NoteParts:
    """A note split once: its front matter as read (`meta`), the same with wrongly typed
    recognised keys dropped (`checked`), the body, and `error`, the FrontMatterError detail
    when the block cannot be read (then both mappings are empty and `body` is None)."""

    meta: dict[str, Any]
    checked: dict[str, Any]
    body: str | None
    error: str | None


PARTS_CACHE_MAX_CHARS = 32_768  # longer notes are remembered only inside a LargeNotes scope


class LargeNotes:
    """Remembers the split of notes longer than PARTS_CACHE_MAX_CHARS while it is open on a
    thread (`with LargeNotes():`), so a batch splits each large note once however many steps
    ask; the splits are let go when the block ends, so no large note outlives its batch in a
    cache. Scopes nest (the inner one reuses the outer's memo)."""

    _current = threading.local()  # the scope open on each thread, if any

    def __init__(self) -> None:
        self.memo: dict[str, NoteParts] = {}
        self._outer: LargeNotes | None = None

    def __enter__(self) -> LargeNotes:
        self._outer = getattr(LargeNotes._current, "scope", None)
        if self._outer is not None:
            self.memo = self._outer.memo
        LargeNotes._current.scope = self
        return self

    def __exit__(self, *_exc: object) -> None:
        LargeNotes._current.scope = self._outer
        if self._outer is None:
            self.memo.clear()

    @staticmethod
    def open_here() -> LargeNotes | None:
        return getattr(LargeNotes._current, "scope", None)


def note_parts(text: str) -> NoteParts:
    """`text` split as parse_note and check_note_types do, remembered for the last notes
    asked about (consolidation asks about each note of a batch many times); a longer note
    only inside a LargeNotes scope. The mappings are shared between callers: copy one before
    changing it."""
    if len(text) > PARTS_CACHE_MAX_CHARS:
        scope = LargeNotes.open_here()
        if scope is None:
            return _split_note(text)
        parts = scope.memo.get(text)
        if parts is None:
            parts = scope.memo[text] = _split_note(text)
        return parts
    return _cached_parts(text)


def _split_note(text: str) -> NoteParts:
    try:
        meta, body = parse_note(text)
    except FrontMatterError as exc:
        return NoteParts({}, {}, None, exc.detail)
    return NoteParts(meta, check_note_types(meta)[0], body, None)


_cached_parts = functools.lru_cache(maxsize=128)(_split_note)


def _line_value(key: str, raw: str) -> Any:
    """A line's value. Text keys keep the text as written (a `#` is not a comment there),
    unquoted when wholly quoted; other keys read as a YAML scalar or flow list if they can."""
    value = raw.strip()
    quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""
    if key in _TEXT_KEYS and not quoted:
        return value
    try:
        loaded = yaml.load(value, Loader=_Loader)
    except yaml.YAMLError:
        return value
    if isinstance(loaded, str | int | float | bool):
        return loaded
    if isinstance(loaded, list) and all(isinstance(v, str | int | float) for v in loaded):
        return loaded
    return value


def read_lines(block: str) -> dict[str, Any] | None:
    """Read a block whose every non-blank, non-comment line is `<recognised key>: <value>`,
    split at the first `: `; `key:` with nothing after it is an empty value (None, as YAML
    reads it). None when any line is not of that form (or a key repeats)."""
    meta: dict[str, Any] = {}
    for line in block.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _LINE_RE.match(line.rstrip("\r"))
        if match is None or match.group(1) not in NOTE_KEYS or match.group(1) in meta:
            return None
        raw = match.group(2)
        meta[match.group(1)] = None if raw is None or not raw.strip() else \
            _line_value(match.group(1), raw)
    return meta or None


def check_note_types(meta: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Drop recognised keys whose value has the wrong type; (kept mapping, warnings naming
    each dropped key). Text keys take a string or a whole number (stored as text), `hold` true
    or false, `importance` a number from 0 to 1, `tags` a list of words or one comma list."""
    kept: dict[str, Any] = {}
    warnings = []
    for key, value in meta.items():
        good, fixed = _typed(key, value)
        if good:
            kept[key] = fixed
        else:
            warnings.append(f"front matter key '{key}' ignored: {_EXPECTED[key]}, "
                            f"got {value!r}"[:300])
    return kept, warnings


_EXPECTED = {**{k: "expected text" for k in _TEXT_KEYS}, "hold": "expected true or false",
             "importance": "expected a number from 0 to 1", "tags": "expected a list of tags"}


def _typed(key: str, value: Any) -> tuple[bool, Any]:
    if key not in NOTE_KEYS:
        return True, value
    if key in _TEXT_KEYS:
        if isinstance(value, str):
            return True, value
        if isinstance(value, int) and not isinstance(value, bool):
            return True, str(value)
        return False, None
    if key == "hold":
        return isinstance(value, bool), value
    if key == "importance":
        number = isinstance(value, int | float) and not isinstance(value, bool)
        return (number and 0 <= value <= 1), value
    if isinstance(value, str):  # tags
        return True, [t.strip() for t in value.split(",") if t.strip()]
    if isinstance(value, list) and all(isinstance(t, str | int | float) and
                                       not isinstance(t, bool) for t in value):
        return True, [str(t) for t in value]
    return False, None


def render_note(meta: dict[str, Any], body: str) -> str:
    """Write a note: a `---` YAML block (key order kept), a blank line, then the body.

    An empty mapping writes the body alone, so parse_note(render_note(m, b)) == (m, b).
    """
    if not meta:
        return body
    block = _plain_block(meta)
    return f"{_FENCE}\n{block or dump_block(meta)}{_FENCE}\n\n{body}"


def dump_block(meta: dict[str, Any]) -> str:
    """The YAML emitter's text for `meta` (render_note's block)."""
    try:
        return yaml.dump(
            meta,
            Dumper=_Dumper,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=10_000,  # no folding: one `key: value` line per scalar stays greppable
        )
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"front matter cannot be written as YAML: {exc}") from exc


# A scalar the emitter writes as it is (no quotes): ASCII words, paths and dates, no
# indicator first, no `: ` or ` #` inside, nothing at either end that YAML would trim.
_PLAIN_RE = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./ -]{0,498}[A-Za-z0-9_./-]|[A-Za-z0-9_/]")


@functools.lru_cache(maxsize=4096)
def _scalar(text: str) -> str | None:
    """`text` as the emitter writes it when it has the shape above: as it is, or in single
    quotes when YAML would read it as something else (`true`, `null`, `12`); else None."""
    if _PLAIN_RE.fullmatch(text) is None:
        return None
    table = _Dumper.yaml_implicit_resolvers
    if any(rx.match(text) for _, rx in table.get(text[0], []) + table.get(None, [])):
        return f"'{text}'"
    return text


def _plain_block(meta: dict[str, Any]) -> str | None:
    """render_note's block written directly where the emitter's output is known (text as
    above, whole numbers, true/false, null, lists of such text), other text and numbers by
    the emitter one key at a time; None when a key or value is neither (then the emitter
    writes the whole block). The emitter is a pure-Python library and costs more than the
    rest of a KB entry; tests compare the two on generated mappings."""
    lines = []
    for name, value in meta.items():
        key = _scalar(name) if type(name) is str else None
        if key is None:
            return None
        if value is None:
            lines.append(f"{key}: null\n")
        elif value is True or value is False:
            lines.append(f"{key}: {'true' if value else 'false'}\n")
        elif type(value) is int:
            lines.append(f"{key}: {value}\n")
        elif type(value) is str and (text := _scalar(value)) is not None:
            lines.append(f"{key}: {text}\n")
        elif type(value) in (str, float):
            lines.append(dump_block({name: value}))  # a line of its own whatever it holds
        elif type(value) is list:
            items = [_scalar(v) if type(v) is str else None for v in value]
            if None in items:
                return None
            lines.append(f"{key}:\n" + "".join(f"- {v}\n" for v in items) if items
                         else f"{key}: []\n")
        else:
            return None
    return "".join(lines)


def first_heading(body: str) -> str | None:
    """Text of the first level-1 ATX heading (`# Title`), trimmed; None when there is none."""
    match = _H1_RE.search(body)
    if match is None:
        return None
    return match.group(1).strip() or None


def slugify(text: str, max_len: int) -> str:
    """Lower-case, runs outside [a-z0-9] become one `-`, ends trimmed, then cut to max_len.

    As in the original, the cut comes last and may leave a trailing `-`.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:max_len]


def safe_slug(slug: str, max_len: int = SAFE_SLUG_MAX) -> str:
    """A file-name-safe slug: kept as is when already safe, else slugified plus an MD5 tag.

    The 8-hex MD5 of the untrimmed input keeps two different raw slugs that slugify alike
    (`a/b` and `a b`) apart.
    """
    trimmed = slug.strip()
    if not trimmed:
        return "item"
    if len(trimmed) <= max_len and _SAFE_SLUG_RE.fullmatch(trimmed):
        return trimmed
    tag = hashlib.md5(slug.encode("utf-8", "surrogatepass")).hexdigest()[:_MD5_SUFFIX_LEN]
    base = slugify(trimmed, max(8, max_len - _MD5_SUFFIX_LEN - 1))
    return f"{base}-{tag}"[:max_len]


def readable_slug(text: str, max_len: int = SAFE_SLUG_MAX) -> str:
    """A file-name-safe slug a person can read: `text` itself when already safe, else its
    slugified form (`VPN for deploys` -> `vpn-for-deploys`); `safe_slug`'s tagged form only
    when slugifying leaves nothing (a title of only non-ASCII characters)."""
    trimmed = text.strip()
    if trimmed and len(trimmed) <= max_len and _SAFE_SLUG_RE.fullmatch(trimmed):
        return trimmed
    return slugify(trimmed, max_len).strip("-") or safe_slug(text, max_len)
