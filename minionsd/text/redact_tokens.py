"""The vendor token table of redact.py (secret_shapes.TOKENS) as patterns and as one scan.

Every row lies inside a run of token characters 20 or more long; ordinary prose has few such
runs, so the table is only tried inside them, and a run is first scanned by the table without
its named groups (the same matches; without a group around each row the engine rules a row out
on its first character, about 3x faster). Only a run where that scan finds a token is scanned
again with the groups, whose names say which row matched.
"""

from __future__ import annotations

import functools
import re

from minionsd.text.secret_pattern import Pattern
from minionsd.text.secret_pattern import make_pattern as _p
from minionsd.text.secret_shapes import TOKENS

# A token starts where no identifier character precedes it, or (Telegram) right after `/bot` in
# an API URL.
TOKEN_LEFT = r"(?:(?<![A-Za-z0-9_-])|(?<=/bot))"
TOKEN_PATTERNS: tuple[Pattern, ...] = tuple(
    _p(kind, desc, TOKEN_LEFT + rx) for kind, desc, rx in TOKENS)
TOKEN_MARKERS = {f"t{i}": p.marker for i, p in enumerate(TOKEN_PATTERNS)}
# A run's edges are characters outside [A-Za-z0-9_-], so the rows' own boundary checks see the
# same thing inside a run as in the whole text.
TOKEN_RUN = re.compile(r"[A-Za-z0-9_.:~+/=-]{20,}")


@functools.cache
def tokens_re() -> re.Pattern[str]:
    """The whole table as one alternation; the group name says which row matched."""
    return re.compile(
        TOKEN_LEFT + "(?:"
        + "|".join(f"(?P<t{i}>{rx})" for i, (_, _, rx) in enumerate(TOKENS))
        + ")"
    )


@functools.cache
def tokens_scan() -> re.Pattern[str]:
    """The same alternation without the groups: it matches exactly where `tokens_re` does."""
    return re.compile(TOKEN_LEFT + "(?:" + "|".join(rx for _, _, rx in TOKENS) + ")")


def token_marker(match: re.Match[str]) -> str:
    return TOKEN_MARKERS[match.lastgroup or ""]


def _redact_run(run: re.Match[str]) -> str:
    text = run.group()
    if tokens_scan().search(text) is None:  # most runs are paths and identifiers
        return text
    return tokens_re().sub(token_marker, text)


def redact_tokens(text: str) -> str:
    """`text` with every token of the table replaced by its row's marker."""
    return TOKEN_RUN.sub(_redact_run, text)
