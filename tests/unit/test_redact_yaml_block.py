"""A secret in a YAML block scalar (`key: |` and the indented lines under it) goes whole, and
the front matter it sits in still parses (so a note keeps its scope and title)."""

from __future__ import annotations

import pytest
import yaml

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
