"""Vendor tokens glued to what comes before them (`deploy-ghp_…`, `dave_ghp_….md`,
`TOKEN_AKIA…`, `x-xoxb-…`, `cfg-sk_live_…`, `xghp_…`) are redacted; ordinary identifiers that
hold a vendor prefix (`task_ghost`, `risk-sk-…`, `cache-key-<md5>`) are not."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text import redact_tokens as t
from minionsd.text.redact import redact
from tests.unit.test_redaction_corpus import SECRETS as CORPUS

GH = "ghp_" + "u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"
ANTHROPIC = "sk-ant-api03-" + "R2D2C3POabcdefghijklmnopqrstuvwxyz0123456789-_AA"
GITLAB = "glpat-" + "xYz12AbCdEfGhIjKlMnO"
GH_PAT = "github_pat_" + "11ABCDEFG0123456789abc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"

GLUED = [
    (f"CI uses deploy-{GH} for releases", GH, "github_token"),
    (f"notes/inbox/dave_{GH}.md", GH, "github_token"),
    (f"export TOKEN_{AWS}", AWS, "aws_access_key_id"),
    (f"x-{SLACK}", SLACK, "slack_token"),
    (f"cfg-{STRIPE}", STRIPE, "stripe_key"),
    (f"branch fix-{GH}", GH, "github_token"),
    (f"tests/test_{GH}.py", GH, "github_token"),
    (f"cfg-{OPENAI}", OPENAI, "openai_key"),
    (f"app_{ANTHROPIC}", ANTHROPIC, "anthropic_key"),
    (f"build-{GITLAB}", GITLAB, "gitlab_token"),
    # After a letter or digit: only the most distinctive shapes, with a digit early in the tail.
    (f"x{GH}", GH, "github_token"),
    (f"2{GH}", GH, "github_token"),
    (f"key{AWS}", AWS, "aws_access_key_id"),
    (f"bot{SLACK}", SLACK, "slack_token"),
    (f"my{ANTHROPIC}", ANTHROPIC, "anthropic_key"),
    (f"ci{GITLAB}", GITLAB, "gitlab_token"),
    (f"x{GH_PAT}", GH_PAT, "github_token"),
]

KEPT = [
    "task_ghost", "mask_pan", "AKIA alone", "TOKEN_AKIA", "deploy-ghp_short",
    "dave_ghp_abc123.md", "TOKEN_AKIA12345", "x-xoxb-short",
    "branch task-sk-1 merged; see sk-learn and risk-sk-something-long-here",
    # Rows whose prefix is a common word keep the strict edge.
    "i18n-sk-translations-2024-update-for-release",
    "cache-key-d41d8cd98f00b204e9800998ecf8427e",
    "load_hf_ModelWeightsFromTheHubCache2x",
    "seed_rnd_GeneratesUniqueIdsForEachUserSession",
    "get_secret_ForTheProductionDatabaseUsedByReportingJob",
    "use_glc_renderer_for_the_main_window_context",
    "deploy-to-pypi-Again-and-again-for-every-release",
    "bind_mnt_source_directory_for_the_build_cache_ok",
    "love-xoxo-see-you-tomorrow-my-friends",
    "run_npm_InstallDependenciesForTheWholeMonorepoNow",
    # After a letter: no glue for Stripe, none without a digit early in the tail.
    "task_test_handlesEmptyInputsGracefully",
    "task_live_StreamProcessorUpdates2024",
    "laughs_AndSneezesAreCommonSymptomsInWinter",
    "EURASIAPACIFICSOUTHEAST",
    "desk-ant-colony-simulation-2024-edition",
]


@pytest.mark.parametrize(("text", "secret", "kind"), GLUED)
def test_a_glued_token_is_redacted(text, secret, kind):
    out = redact(text)
    assert secret not in out and f"[REDACTED:{kind}]" in out, out
    # What it was glued to stays.
    assert out == text.replace(secret, f"[REDACTED:{kind}]")


@pytest.mark.parametrize("text", KEPT)
def test_an_identifier_holding_a_prefix_is_kept(text):
    assert redact(text) == text


def _whole_tokens(table: dict[str, str]) -> list[tuple[str, str]]:
    """Corpus secrets that are one whole token of a row in `table`, in a form it lets glue."""
    found = []
    for case in CORPUS:
        if case.kind in table and len(case.secrets) == 1:
            value = case.secrets[0]
            if redact(value) == f"[REDACTED:{case.kind}]" and re.match(table[case.kind], value):
                found.append((case.kind, value))
    return found


AFTER_SEPARATOR = _whole_tokens(t.GLUED_AFTER_SEPARATOR)
AFTER_WORD = _whole_tokens(t.GLUED_AFTER_WORD)


def test_the_corpus_covers_the_glued_families():
    assert len({kind for kind, _ in AFTER_SEPARATOR}) >= 45
    assert {kind for kind, _ in AFTER_WORD} == set(t.GLUED_AFTER_WORD)


_WORD = st.from_regex(r"[A-Za-z0-9]{1,12}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(case=st.sampled_from(AFTER_SEPARATOR), word=_WORD, sep=st.sampled_from("-_"),
       after=st.sampled_from(["", ".md", " and more", "\n", ".2026.env"]))
def test_a_corpus_token_glued_after_a_separator_is_redacted(case, word, sep, after):
    kind, value = case
    out = redact(f"{word}{sep}{value}{after}")
    assert value not in out and f"[REDACTED:{kind}]" in out, out
    assert out.startswith(word + sep)


@settings(max_examples=200, deadline=None)
@given(case=st.sampled_from(AFTER_WORD), word=_WORD)
def test_a_distinctive_token_glued_after_a_letter_or_digit_is_redacted(case, word):
    kind, value = case
    out = redact(f"{word}{value}")
    assert value not in out and out == f"{word}[REDACTED:{kind}]", out


# Identifier pieces: ordinary words, vendor prefixes as words, numbers. Each is glued to the one
# before by `-` or `_` (the edge this relaxes); no piece grows into a token's long random tail.
_PIECE = st.sampled_from([
    "task", "ghost", "mask", "pan", "sk", "gh", "ghp", "ghs", "key", "cache", "hf", "hub",
    "npm", "run", "rnd", "seed", "secret", "name", "glc", "renderer", "xoxo", "xoxb", "sbp",
    "bind", "live", "test", "api", "lin", "AKIA", "ASIA", "SK", "cio", "dapi", "deploy", "fix",
    "TOKEN", "dave", "risk", "proj", "admin", "sq", "shpat", "whsec", "rk", "oy2", "2024",
    "v2", "x", "id", "main", "README", "pypi", "Again", "pul", "nfp", "bkua", "xapp", "glsa",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("-_"), _PIECE), min_size=1, max_size=14))
def test_identifiers_made_of_ordinary_pieces_are_kept(pieces):
    text = "id" + "".join(sep + piece for sep, piece in pieces)
    assert redact(text) == text


@pytest.mark.parametrize(("text", "_secret", "_kind"), GLUED)
def test_the_scan_agrees_with_each_row(text, _secret, _kind):
    """The one-scan table finds a token exactly where a row's own pattern (the documented
    data) finds one."""
    for run in t.TOKEN_RUN.findall(text):
        by_rows = any(p.regex.search(run) for p in t.TOKEN_PATTERNS)
        assert bool(t.tokens_scan().search(run)) == by_rows == bool(t.tokens_re().search(run))
