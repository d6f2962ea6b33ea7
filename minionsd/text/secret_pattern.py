"""One secret shape of redact.py: its regular expression (compiled on first use), the
replacement, and the needles that let a text without them skip the pattern."""

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

    @property
    def marker(self) -> str:
        return f"{MARKER_PREFIX}{self.kind}]"

    @property
    def replacement(self) -> str:
        return self.template.replace("{marker}", self.marker)


def make_pattern(kind: str, description: str, regex: str, template: str = "{marker}",
                 flags: int = 0, needles: tuple[str | tuple[str, ...], ...] = ()) -> Pattern:
    return Pattern(kind, description, regex, flags, template, needles)
