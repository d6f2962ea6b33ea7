"""The vendor token table of redact.py (secret_shapes.TOKENS) as patterns and as one scan.

Every row lies inside a run of token characters 20 or more long; ordinary prose has few such
runs, so the table is only tried inside them, and a run is first scanned by the table without
its named groups (the same matches; without a group around each row the engine rules a row out
on its first character, about 3x faster). Only a run where that scan finds a token is scanned
again with the groups, whose names say which row matched.

Where a token may start: where no identifier character precedes it (or, Telegram, right after
`/bot` in an API URL). A row with a distinctive vendor prefix and a long random tail may also
start right after `-` or `_` (`deploy-ghp_…`, `TOKEN_AKIA…`, `dave_ghp_….md`), and the most
distinctive few right after a letter or digit (`xghp_…`), where a digit early in the tail keeps
identifiers out. Rows without such a prefix (a Mailchimp key is 32 hex digits and `-us1`) or
whose prefix is a common word or abbreviation (`sk-`, `key-`, `hf_`, `rnd_`, `secret_`) keep
the strict edge: inside an identifier (`risk-sk-…`, `cache-key-…`) they would mostly be wrong.
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
AFTER_SEPARATOR = r"(?<=[_-])"
AFTER_WORD = r"(?<=[A-Za-z0-9])"

# Rows that may also start right after `-` or `_`, each with a lookahead naming which of its
# forms may ("" for all of them).
GLUED_AFTER_SEPARATOR: dict[str, str] = {
    "anthropic_key": r"(?=sk-ant-[a-z]{2,6}[0-9]{2}-)",
    "openai_key": r"(?=sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{0,8}[A-Za-z0-9]{16})",
    "github_token": "",
    "gitlab_token": "",
    "slack_token": r"(?=xox[abposre](?:\.xox[abposre])?-(?:[0-9]{1,2}-)?[0-9]{6,}-|xapp-[0-9]-)",
    "stripe_key": "",
    "google_api_key": "",
    "google_oauth": "",
    "npm_token": r"(?=npm_[A-Za-z0-9]{0,35}[0-9])",
    "minionsd_token": r"(?=mnt_(?=[A-Za-z0-9_-]{0,42}[0-9])[A-Za-z0-9_-]{0,42}[A-Z])",
    "pypi_token": r"(?=pypi-AgE)",
    "docker_token": "",
    "nuget_key": "",
    "aws_access_key_id": "",
    "sendgrid_key": "",
    "shopify_token": "",
    "vault_token": "",
    "age_secret_key": "",
    "atlassian_token": "",
    "digitalocean_token": "",
    "databricks_token": "",
    "grafana_token": r"(?=glsa_)",
    "sentry_token": "",
    "newrelic_key": "",
    "postman_key": "",
    "linear_key": "",
    "notion_token": r"(?=ntn_)",
    "square_token": "",
    "supabase_token": "",
    "planetscale_token": "",
    "doppler_token": "",
    "pulumi_token": "",
    "rubygems_key": "",
    "dynatrace_token": "",
    "heroku_key": "",
    "netlify_token": "",
    "flyio_token": "",
    "airtable_token": "",
    "contentful_token": "",
    "sonar_token": "",
    "buildkite_token": "",
    "circleci_token": "",
    "jfrog_token": "",
    "mapbox_secret_token": "",
    "groq_key": "",
    "xai_key": "",
    "brevo_key": "",
    "figma_token": "",
    "tailscale_key": "",
}
# Rows that may also start right after a letter or digit: only forms with a digit early in the
# tail (a real token of these families nearly always has one; a camelCase name seldom does).
GLUED_AFTER_WORD: dict[str, str] = {
    "anthropic_key": GLUED_AFTER_SEPARATOR["anthropic_key"],
    "github_token": r"(?=gh[pousr]_[A-Za-z0-9]{0,29}[0-9]|github_pat_[A-Za-z0-9_]{0,29}[0-9])",
    "gitlab_token": r"(?=glpat-[A-Za-z0-9_-]{0,19}[0-9])",
    "slack_token": GLUED_AFTER_SEPARATOR["slack_token"],
    "aws_access_key_id": r"(?=A[A-Z]{3}[A-Z0-9]{0,15}[0-9])",
}
# Each of those forms starts with one of these characters (the guards start with a literal):
# the scan tests that before it looks behind, at nearly every position inside a word.
_WORD_STARTS = "".join(sorted({guard[3] for guard in GLUED_AFTER_WORD.values()}))


def row_left(kind: str) -> str:
    """Where a token of row `kind` may start, as a regular expression."""
    edges = [TOKEN_LEFT]
    if kind in GLUED_AFTER_SEPARATOR:
        edges.append(AFTER_SEPARATOR + GLUED_AFTER_SEPARATOR[kind])
    if kind in GLUED_AFTER_WORD:
        edges.append(AFTER_WORD + GLUED_AFTER_WORD[kind])
    return "(?:" + "|".join(edges) + ")"


TOKEN_PATTERNS: tuple[Pattern, ...] = tuple(
    _p(kind, desc, row_left(kind) + rx) for kind, desc, rx in TOKENS)
# Group names of the scan: t<i> for a row at a strict edge, s<i> after `-`/`_`, w<i> after a
# letter or digit.
TOKEN_MARKERS = {f"{tier}{i}": p.marker for i, p in enumerate(TOKEN_PATTERNS)
                 for tier in "tsw"}
_TIERS = (("t", TOKEN_LEFT, None), ("s", AFTER_SEPARATOR, GLUED_AFTER_SEPARATOR),
          ("w", f"(?=[{_WORD_STARTS}])" + AFTER_WORD, GLUED_AFTER_WORD))
# A run's edges are characters outside [A-Za-z0-9_-], so the rows' own boundary checks see the
# same thing inside a run as in the whole text.
TOKEN_RUN = re.compile(r"[A-Za-z0-9_.:~+/=-]{20,}")


def _table(grouped: bool) -> str:
    """One alternation per edge (strict, after a separator, after a letter or digit), each of
    the rows that may start there, in table order. At a position only one edge holds (after
    `/bot` the strict one and the letter one; the strict one is tried first)."""
    branches = []
    for tier, edge, glued in _TIERS:
        rows = [f"(?P<{tier}{i}>{(glued or {}).get(kind, '')}{rx})" if grouped
                else (glued or {}).get(kind, "") + rx
                for i, (kind, _, rx) in enumerate(TOKENS) if glued is None or kind in glued]
        branches.append(edge + "(?:" + "|".join(rows) + ")")
    return "|".join(branches)


@functools.cache
def tokens_re() -> re.Pattern[str]:
    """The whole table as one alternation; the group name says which row matched."""
    return re.compile(_table(grouped=True))


@functools.cache
def tokens_scan() -> re.Pattern[str]:
    """The same alternation without the groups: it matches exactly where `tokens_re` does."""
    return re.compile(_table(grouped=False))


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
