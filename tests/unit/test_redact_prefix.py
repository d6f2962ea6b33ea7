"""redact_prefix(text, keep) is redact(text)[:keep] with work bounded by `keep`."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text import redact_prefix as rp
from minionsd.text.redact import redact

FRAGMENTS = [
    "ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT", "AKIAQ7ZK4NDP2XWM8R5T", " password=hunter2X9 ",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n", "-----END RSA PRIVATE KEY-----\n",
    "Bearer abcdef0123456789xyz ", "token: ", "plain words here ", "\n", " ", "https://u:",
    "pw@db.example/x ", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.sig123 ",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=120), st.integers(0, 300))
def test_prefix_equals_the_whole_redaction_cut(parts, keep):
    text = "".join(parts)
    saved = rp.PREFIX_MARGIN, rp.FIRST_HEAD
    # Small heads and a margin longer than any fragment: the cut lands inside secrets often.
    rp.PREFIX_MARGIN, rp.FIRST_HEAD = 120, 1
    try:
        assert rp.redact_prefix(text, keep) == redact(text)[:keep]
    finally:
        rp.PREFIX_MARGIN, rp.FIRST_HEAD = saved


def test_a_megabyte_is_cut_before_it_is_redacted():
    secret = "ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT"
    text = f"rotated {secret} " + "filler words without secrets " * 40_000
    out = rp.redact_prefix(text, 1000)
    assert out == redact(text)[:1000] and secret not in out and len(out) == 1000
