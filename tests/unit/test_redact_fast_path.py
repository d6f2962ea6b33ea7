"""redact's fast path gives exactly what the plain algorithm gives.

The plain reference below is redaction as the patterns define it: every pass whose needles are
in the case-folded text runs, in order, the token table after the webhook pass, rounds until
nothing changes. The fast path tests the needles of all passes together (`Passes`) and lets a
pass's prefilter rule it out on pure-ASCII text. Compared on the redaction corpus, on bench
records and tasks (scripts/bench_data.py), and on generated text built from near-miss pieces,
non-ASCII letters that case-fold to ASCII ones, and look-alike characters.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text import redact as r
from minionsd.text import redact_tokens as t
from minionsd.text.redact import redact
from minionsd.text.secret_pattern import Passes
from tests.conftest import REPO

if str(REPO / "scripts") not in sys.path:
    sys.path.insert(0, str(REPO / "scripts"))
import bench_data

CORPUS = Path(__file__).resolve().parents[1] / "data" / "redaction"


def reference_once(text: str) -> str:
    lowered = text.casefold()
    for pattern in r._PASSES:
        if pattern.may_match(lowered):
            text = pattern.regex.sub(pattern.template.replace("{marker}", pattern.marker), text)
            lowered = text.casefold()
        if pattern.kind == "webhook_url":
            text = t.TOKEN_RUN.sub(
                lambda run: t.tokens_re().sub(t.token_marker, run.group()), text)
            lowered = text.casefold()
    return text


def reference(text: str) -> str:
    for _ in range(r.MAX_ROUNDS):
        redacted = reference_once(text)
        if redacted == text:
            break
        text = redacted
    return text


def check(text: str) -> None:
    assert redact(text) == reference(text), text[:300]
    folded = text.casefold()
    mask = r._PLAN.allowed(folded)
    for index, pattern in enumerate(r._PASSES):
        assert bool(mask >> index & 1) == pattern.may_match(folded), (pattern.kind, text[:200])
        if text.isascii() and pattern.prefilter and pattern.regex.search(text):
            assert pattern.prefilter_regex.search(text.lower()), (pattern.kind, text[:200])


def corpus_texts() -> list[str]:
    texts = []
    for name in ("secrets.txt", "near_misses.txt"):
        for raw in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            if raw.strip() and not raw.startswith("#"):
                text = raw.replace("\\n", "\n").replace("«", "").replace("»", "")
                texts.append(text.split("\t", 1)[-1])
    return texts


CORPUS_TEXTS = corpus_texts()


@pytest.mark.parametrize("text", CORPUS_TEXTS)
def test_fast_path_equals_reference_on_the_corpus(text):
    check(text)
    check(text.upper())
    check(text.replace(" ", "\t"))


def test_fast_path_equals_reference_on_bench_records_and_tasks():
    vocab = bench_data.Vocabulary(7)
    now = datetime(2026, 11, 30, tzinfo=UTC)
    for params in bench_data.record_stream(vocab, 7, 0, 300, now):
        check(params["title"])
        check(params["body"])
    for task, _, _ in bench_data.tasks(vocab, 7, 100):
        for text in (task["title"], task["description"], *task["files"], task["pr"]["title"],
                     task["pr"]["branch"]):
            check(text)


def test_token_scan_finds_a_token_wherever_the_table_does():
    for text in CORPUS_TEXTS:
        for run in t.TOKEN_RUN.findall(text):
            assert bool(t.tokens_scan().search(run)) == bool(t.tokens_re().search(run)), run


@pytest.mark.parametrize("guards", [(), ("k", "-"), ("e", "key", "-p", "zz")])
def test_needle_tree_tests_each_pattern_as_its_needles_do(guards):
    plan = Passes(r._PASSES, guards)
    assert plan.always == r._PLAN.always
    for text in ("", "key", "secret_key", "mysql -p", "-p mysql", "sshpass", "pass:", "curl -u",
                 "webhook.office.com", "pass", "x-amz-", ":", "<", "auth", "authorization",
                 "k", "-", "zz", "e", *CORPUS_TEXTS[:200]):
        folded = text.casefold()
        mask = plan.allowed(folded)
        assert [bool(mask >> i & 1) for i in range(len(r._PASSES))] == [
            p.may_match(folded) for p in r._PASSES]


# Near-miss pieces: key words in several spellings, separators, closers, values, commands.
_PIECES = st.sampled_from([
    "password", "PASSWORD", "passwd", "pass", "_pass", "bypass", "psk", "DB_PWD", "api_key",
    "API-KEY", "apikey", "token", "Token", "secret", "client_secret", "SECRET_KEY",
    "aws_secret_access_key", "session_token", "private_key", "seed phrase", "mnemonic",
    "GH_PAT", "_auth", '"auth', "dockercfg", "tls.key", "credentials", "CACHE_KEY",
    "STRIPE_KEY", "sort-key", "=", ":", ":=", "=>", " = ", ": ", '"', "'", '"]', "']", "]",
    "[", " ", "\t", "\n", "\r\n", "#", "$", "${", "{{", "<", ">", "|", "|-", ">-", "xxxx",
    "null", "os.environ[", "Xk2pQ9zR7mL4", "s3cr3t-Value_99", "abcdef0123456789abcd",
    "machine host login me password ", "db:5432:app:me:", "10:15:30:45:60", "*:*:*:*:",
    "mysql -u root -p", "sshpass -p ", "curl -u me:", "docker login -p ", "--password ",
    "--token=", "-pass pass:", "Authorization: Bearer ", "Cookie: ", "?sig=", "&signature=",
    "https://u:", "@host", "postgres://app:", "AccountKey=", ";Pwd=", "eyJhbGciOi",
    "ghp_", "sk-ant-", "AKIA", "xoxb-", "[REDACTED:secret]", "[REDACTED:aws_access_key_id],",
])
# Characters that case-fold or IGNORECASE-match to ASCII letters (long s, Kelvin sign, dotless
# and dotted i, sharp s, ligatures), look-alikes (Cyrillic, fullwidth), other non-ASCII.
_ODD = st.sampled_from([
    "\u017f", "\u212a", "\u0131", "\u0130", "\u00df", "\ufb01", "\ufb00", "\u0435", "\u0430",
    "\u0455", "\uff1a", "\uff1d", "\u2014", "\u00e9", "\u4e00", "\U0001f511", "\u200b",
    "\u00a0", "\u1e9e", "\u2126",
])
_TEXT = st.lists(
    st.one_of(_PIECES, _ODD, st.text(max_size=8),
              st.from_regex(r"[A-Za-z0-9+/_.-]{1,24}", fullmatch=True)),
    max_size=30,
).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_TEXT)
def test_fast_path_equals_reference_on_generated_text(text):
    check(text)
    check(text.upper())


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_fast_path_equals_reference_on_any_text(text):
    check(text)
