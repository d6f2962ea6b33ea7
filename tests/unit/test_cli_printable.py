"""fmt.printable and fmt.json_text: what minionsctl prints passes one of them (run.py), so a
control character in stored text is shown, never obeyed by the terminal."""

from __future__ import annotations

import json
import re

import pytest

from minionsd.cli.fmt import json_text, printable, shorten, table

RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize(("raw", "shown"), [
    ("plain text\nsecond line\tcol", "plain text\nsecond line\tcol"),
    ("a\x1b[31mred", "a\\x1b[31mred"),
    ("bell\x07", "bell\\x07"),
    ("csi\x9b1m", "csi\\x9b1m"),
    ("del\x7f nul\x00", "del\\x7f nul\\x00"),
    ("windows\r\nline", "windows\nline"),
    ("carriage\rreturn", "carriage\\x0dreturn"),
    ("unicode é 中 🔑 and U+2028\u2028", "unicode é 中 🔑 and U+2028\u2028"),
])
def test_printable(raw, shown):
    assert printable(raw) == shown
    assert printable(shown) == shown


def test_json_text_is_the_same_json_value():
    value = {"body": "\x1b[8m\x7f\x85\x9b\u00a0é", "n": 1}
    text = json_text(json.dumps(value, ensure_ascii=False))
    assert not RAW.findall(text) and json.loads(text) == value


def test_a_table_measures_what_it_shows():
    out = table(["id", "title"], [["M-1", "a\x1b[8mb"], ["M-22", "plain"]])
    lines = out.splitlines()
    assert lines[1] == "M-1   a\\x1b[8mb"
    assert lines[2] == "M-22  plain"
    assert shorten("x\x1b[2Jy", 6) == "x\\x1b…"
