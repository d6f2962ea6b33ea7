"""One secret shape of redact.py: its regular expression (compiled on first use), the
replacement, and the needles (and prefilter) that let a text without them skip the pattern;
`Passes` tests the needles of a whole ordered set at once."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

MARKER_PREFIX = "[REDACTED:"


@dataclass(frozen=True)
class Pattern:
    """One secret shape: `regex` matches it, `template` (re.sub syntax) replaces it.

    `{marker}` in the template stands for `[REDACTED:<kind>]`.
    """

    kind: str
    description: str
    source: str  # the regular expression, compiled on first use (see `regex`)
    flags: int
    template: str
    # Lower-case strings a match always contains one of; a text holding none of them skips
    # the scan (a substring test costs far less than running the regex over a megabyte). A
    # tuple among them stands for strings a match contains all of (a command and its flag).
    needles: tuple[str | tuple[str, ...], ...] = ()
    # A regular expression that finds a match in the lower-cased text wherever `source` finds
    # one in the text, for pure-ASCII texts (where lower-casing and case-folding agree with
    # re.IGNORECASE); a cheap scan that lets most texts holding a needle skip the pattern.
    prefilter: str = ""

    def may_match(self, lowered: str) -> bool:
        """False when `lowered` (the text, lower-cased) cannot hold a match."""
        if not self.needles:
            return True
        for needle in self.needles:
            if needle.__class__ is str:
                if needle in lowered:
                    return True
            elif all(part in lowered for part in needle):
                return True
        return False

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        # Compiled when first used, not at import: the set takes a tenth of a second to
        # compile, which every daemon start and CLI command importing this module would pay.
        return re.compile(self.source, self.flags)

    @functools.cached_property
    def prefilter_regex(self) -> re.Pattern[str] | None:
        return re.compile(self.prefilter) if self.prefilter else None

    @property
    def marker(self) -> str:
        return f"{MARKER_PREFIX}{self.kind}]"

    @functools.cached_property
    def replacement(self) -> str:
        return self.template.replace("{marker}", self.marker)


def make_pattern(kind: str, description: str, regex: str, template: str = "{marker}",
                 flags: int = 0, needles: tuple[str | tuple[str, ...], ...] = (),
                 prefilter: str = "") -> Pattern:
    return Pattern(kind, description, regex, flags, template, needles, prefilter)


class Passes:
    """An ordered set of patterns whose needles are tested together: `allowed(lowered)` is a
    bit mask with bit i set exactly when `patterns[i].may_match(lowered)`.

    The needles form a tree: a needle sits under the longest other needle or guard inside it
    ("secret_key" under "secret"), a needle pair's second string under its first. A string is
    tested only when its parent was found, and a subtree is skipped when every pattern it could
    let through is let through already, so a text costs a few substring tests, not one each.
    """

    def __init__(self, patterns: tuple[Pattern, ...], guards: tuple[str, ...] = ()) -> None:
        self.patterns = patterns
        self.always = 0
        singles = {n for p in patterns for n in p.needles if isinstance(n, str)}
        # A guard is a string inside several needles, tested first so that a text without it
        # skips them all; it lets no pattern through itself.
        paths: dict[tuple[str, ...], int] = {_chain(g, singles | set(guards)): 0 for g in guards}
        singles |= set(guards)
        for index, pattern in enumerate(patterns):
            if not pattern.needles:
                self.always |= 1 << index
            for needle in pattern.needles:
                if isinstance(needle, str):
                    path = _chain(needle, singles)
                else:
                    path = (*_chain(needle[0], singles), *needle[1:])
                paths[path] = paths.get(path, 0) | 1 << index
        trie: dict = {}
        for path, bits in paths.items():
            node = trie
            for part in path:
                node = node.setdefault(part, [0, {}])
                node_bits = node
                node = node[1]
            node_bits[0] |= bits
        # Pre-order rows: (string, bits set when found, bits of its subtree, row after it).
        rows: list[list] = []

        def flatten(children: dict) -> int:
            every = 0
            for part, (bits, grandchildren) in children.items():
                row = [part, bits, 0, 0]
                rows.append(row)
                row[2] = bits | flatten(grandchildren)
                row[3] = len(rows)
                every |= row[2]
            return every

        flatten(trie)
        self.rows = tuple(tuple(row) for row in rows)

    def allowed(self, lowered: str) -> int:
        mask = self.always
        rows = self.rows
        index = 0
        end = len(rows)
        while index < end:
            part, bits, below, after = rows[index]
            if mask & below == below or part not in lowered:
                index = after
            else:
                mask |= bits
                index += 1
        return mask


def _chain(needle: str, singles: set[str]) -> tuple[str, ...]:
    """`needle` preceded by its ancestors: the longest other needle inside it, that one's, ...
    (each is in any text `needle` is in, so testing them first changes no answer)."""
    inside = [n for n in singles if n != needle and n in needle]
    if not inside:
        return (needle,)
    return (*_chain(max(inside, key=lambda n: (len(n), n)), singles), needle)
