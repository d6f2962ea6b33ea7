"""A secret in a YAML block scalar (`key: |` and the indented lines under it) goes whole, and
the front matter it sits in still parses (so a note keeps its scope and title)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text.markdown import parse_note
from minionsd.text.redact import redact

AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize("key, indicator", [
    ("aws_secret_access_key", "|"), ("password", ">-"), ("api_token", "|2"),
    ("DB_PASSWORD", "|+"), ('"client_secret"', ">"), ("deploy_key", "|"),
])
def test_block_scalar_secret_goes_and_front_matter_parses(key, indicator):
    note = (f"---\ntitle: Deploy creds\nproject: atlas\n{key}: {indicator}  # from the vault\n"
            f"  {AWS}\n  second-line-of-it-9x\n\n  third\ntags: [ops]\n---\nThe body.\n")
    out = redact(note)
    assert AWS not in out and "second-line" not in out and "third" not in out
    meta, body = parse_note(out)
    assert meta["project"] == "atlas" and meta["title"] == "Deploy creds"
    assert meta["tags"] == ["ops"] and body.strip() == "The body."
    assert meta[key.strip('"')].startswith("[REDACTED:yaml_block_secret]")
    assert redact(out) == out


def test_block_in_a_list_item_keeps_its_siblings():
    text = "items:\n  - password: |\n      hunter2Hunter2\n    other: 1\nx: |\n  keep me\n"
    out = redact(text)
    assert "hunter2" not in out
    assert yaml.safe_load(out) == {"items": [{"password": "[REDACTED:yaml_block_secret]\n",
                                              "other": 1}], "x": "keep me\n"}


def test_block_under_an_ordinary_key_is_kept():
    text = "description: |\n  The token rotation runbook.\n  Step two.\nsort_key: |\n  name\n"
    assert redact(text) == text


def test_block_scalar_at_the_end_of_the_text():
    out = redact("token: >\n  abcdefghijklmnop1234")
    assert "abcdefghijklmnop1234" not in out and yaml.safe_load(out) == {
        "token": "[REDACTED:yaml_block_secret]\n"}


_WORDS = st.text(alphabet="abcdefghij klm", min_size=1, max_size=30).map(str.strip).filter(bool)
_SECRET_LINE = st.text(alphabet="ABCDEFabcdef0123456789+/=-_", min_size=8, max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["note", "summary", "api_token", "db_password",
                                           "signing_key", "aws_secret_access_key"]),
                          st.sampled_from(["|", "|-", ">", ">+", "|2"]),
                          st.lists(st.one_of(_WORDS, _SECRET_LINE), min_size=1, max_size=4),
                          st.integers(2, 4)),
                min_size=1, max_size=4, unique_by=lambda item: item[0]))
def test_front_matter_with_block_scalars_still_parses_after_redaction(blocks):
    lines = ["title: Plum"]
    for key, indicator, values, indent in blocks:
        lines.append(f"{key}: {indicator}")
        lines += [" " * indent + value for value in values]
    text = "\n".join(lines) + "\n"
    before = yaml.safe_load(text)
    after = yaml.safe_load(redact(text))
    assert after["title"] == "Plum" and set(after) == set(before)
    for key, _indicator, _values, _indent in blocks:
        if key in ("note", "summary"):
            assert after[key] == before[key]
        else:
            assert after[key].startswith("[REDACTED:yaml_block_secret]")
