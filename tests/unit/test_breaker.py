"""Storm detection (ORIGINAL §3.2, §9.3; SPEC §3.1 item 1) and full content hashes."""

from __future__ import annotations

import hashlib
import re

import pytest

from minionsd.memory.consolidate.breaker import content_hash, find_storm, storm_hash

# Expected values computed with Node: sha256(s.slice(0, 200) + ":" + s.length).
NODE_HASHES = {
    "": "19e89348f2a9d5f3d0c5fca8e2a7068d9c5d71687a355f759009a5ed2527eb2c",
    "hello": "a9530b787fe88ea8db2ed8844680591a1b4b8cc9a7334f01b9cf1342885c8447",
    "a" * 199 + "\U0001f916b": "e848082d49408068e178d124ae33cc1444c04c0fedb96b1314a6f208e81835e8",
    "x" * 300: "8f0b14615803dbd65220b2f5476fa64149c70caa419a2f777a968bfef71f549d",
    "# Duplicate\nSame content — plan X complete.": (
        "1091a2c12ca6b0e279eaf8257970ebec1edaac3f31926a0f726bcd5392554f6f"
    ),
}


@pytest.mark.parametrize(("text", "expected"), NODE_HASHES.items())
def test_storm_hash_matches_the_original(text, expected):
    assert storm_hash(text) == expected


def test_storm_hash_shape_and_missing_content():
    assert re.fullmatch(r"[0-9a-f]{64}", storm_hash("x"))
    assert storm_hash(None) == storm_hash("")


def test_same_prefix_different_length_differs():
    base = "p" * 200
    assert storm_hash(base + "a") != storm_hash(base + "ab")
    assert storm_hash(base + "a") == storm_hash(base + "b")  # the cheap hash's known blind spot


def test_content_hash_covers_everything():
    base = "p" * 200
    assert content_hash(base + "a") != content_hash(base + "b")
    assert content_hash("é") == hashlib.sha256("é".encode()).hexdigest()


def _batch(same: int, other: int) -> list[str]:
    return [storm_hash("dup")] * same + [storm_hash(f"other {i}") for i in range(other)]


def test_nine_of_ten_is_a_storm():
    assert find_storm(_batch(9, 1)) == storm_hash("dup")


def test_exactly_eighty_percent_is_not():
    assert find_storm(_batch(4, 1)) is None


def test_nine_of_eleven_is_a_storm():
    assert find_storm(_batch(9, 2)) == storm_hash("dup")


def test_five_empty_and_one_real():
    hashes = [storm_hash("")] * 5 + [storm_hash("# real")]
    assert find_storm(hashes) == storm_hash("")


@pytest.mark.parametrize("same", [1, 2])
def test_fewer_than_three_copies_is_never_a_storm(same):
    assert find_storm(_batch(same, 0)) is None


def test_three_copies_alone_are_a_storm():
    assert find_storm(_batch(3, 0)) == storm_hash("dup")


def test_empty_batch():
    assert find_storm([]) is None
