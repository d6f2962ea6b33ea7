"""decode_line, the protocol boundary: any string arrives as valid Unicode text, and nesting
is measured without recursion."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.rpc.protocol import MAX_NESTING, TooDeep, clean_text, decode_line, dumps

# every code point, lone surrogates included (hypothesis leaves out category Cs by default)
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=()), max_size=60)


@given(ANY_TEXT, ANY_TEXT)
def test_decoded_strings_are_always_valid_text(key, value):
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "m",
                       "params": {key: [value, {"k": value}]}}).encode("ascii")
    message = decode_line(line)
    params = message["params"]
    (clean_key,) = params
    assert clean_key == clean_text(key)
    assert params[clean_key] == [clean_text(value), {"k": clean_text(value)}]
    for text in (clean_key, params[clean_key][0]):
        text.encode("utf-8")  # would raise on a lone surrogate
    dumps(message).decode("utf-8")


@given(st.text(max_size=60))
def test_text_without_surrogates_is_unchanged(value):
    line = json.dumps({"v": value}, ensure_ascii=False).encode("utf-8")
    assert decode_line(line) == {"v": value}


@given(ANY_TEXT)
def test_clean_text_replaces_exactly_the_surrogates(value):
    cleaned = clean_text(value)
    assert len(cleaned) == len(value)
    for before, after in zip(value, cleaned, strict=True):
        assert after == ("\ufffd" if 0xD800 <= ord(before) <= 0xDFFF else before)


@pytest.mark.parametrize("depth", [1, 2, MAX_NESTING])
def test_nesting_up_to_the_limit_is_accepted(depth):
    assert decode_line(b"[" * depth + b"]" * depth) is not None


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 400])
def test_nesting_past_the_limit_is_an_invalid_request(depth):
    with pytest.raises(TooDeep, match=f"nested {depth} levels"):
        decode_line(b'{"a":' * depth + b"1" + b"}" * depth)


@pytest.mark.parametrize("line", [b"[" * 5_000 + b"]" * 5_000, b'{"a":' * 3_000])
def test_nesting_the_parser_cannot_follow_is_a_parse_error(line):
    with pytest.raises(ValueError, match="nested too deeply") as caught:
        decode_line(line)
    assert not isinstance(caught.value, TooDeep)


@pytest.mark.parametrize("line", [b"\xff{}", b'"\xed\xa0\x80"', b"{not json"])
def test_bad_bytes_and_bad_json_are_parse_errors(line):
    with pytest.raises(ValueError, match="not valid UTF-8 JSON"):
        decode_line(line)
