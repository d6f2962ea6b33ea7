"""A redaction pattern is skipped for a text without its needles; that must never skip a
secret. For every line of the redaction corpus and generated key=value text, wherever a
pattern matches, its needles are found in the case-folded text."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text.redact import _PASSES, redact

CORPUS = Path(__file__).resolve().parents[1] / "data" / "redaction"


def corpus_texts() -> list[str]:
    texts = []
    for name in ("secrets.txt", "near_misses.txt"):
        for raw in (CORPUS / name).read_text(encoding="utf-8").splitlines():
            if raw.strip() and not raw.startswith("#"):
                text = raw.replace("\\n", "\n").replace("«", "").replace("»", "")
                texts.append(text.split("\t", 1)[-1])
    return texts


def check(text: str) -> None:
    folded = text.casefold()
    for pattern in _PASSES:
        if pattern.regex.search(text):
            assert pattern.may_match(folded), (pattern.kind, text[:200])


@pytest.mark.parametrize("text", corpus_texts())
def test_needles_hold_on_the_corpus(text):
    check(text)
    check(text.upper())
    check(redact(text))


KEYS = ["API_KEY", "client-secret", "Token", "SESSION_TOKEN", "aws_secret_access_key",
        "DB_PASSWORD", "passwd", "auth", '"auth', "private_key", "seed phrase", "GH_PAT",
        "STRIPE_KEY", "mnemonic", "dockercfg", "SecretAccessKey", "sharedaccesskey",
        "\u017fecret", "\u212aey"]
COMMANDS = ["mysql -u root", "sshpass", "docker login -u me", "curl -s", "wget", "http",
            "redis-cli -h db", "mongosh", "sqlcmd -S x", "ldapsearch -x", "7z a", "zip -r",
            "keytool -list", "--password", "--api-key", "-pass pass:", "ngrok authtoken"]
FLAGS = ["-p", "-P", "-a", "-u", "--user", "-w", "-storepass", " -pSecret1", ""]


@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(KEYS), sep=st.sampled_from(["=", ": ", " = ", "\": \"", ":="]),
       value=st.from_regex(r"[A-Za-z0-9+/_-]{6,30}", fullmatch=True),
       command=st.sampled_from(COMMANDS), flag=st.sampled_from(FLAGS),
       noise=st.text(max_size=20))
def test_needles_hold_on_generated_text(key, sep, value, command, flag, noise):
    check(f"{noise}{key}{sep}{value} {noise}")
    check(f"{command} {flag} {value}{noise}")
    check(f"{command}{noise} {flag}{value}")
