"""Storm detection (SPEC §3.1 item 1) by full content hash."""

from __future__ import annotations

import hashlib
import re

import pytest

from minionsd.memory.consolidate.breaker import content_hash, find_storm


def test_content_hash_shape_and_missing_content():
    assert re.fullmatch(r"[0-9a-f]{64}", content_hash("x"))
    assert content_hash(None) == content_hash("")


def test_same_prefix_and_length_still_differ():
    # The original's fingerprint (first 200 code units + length) took these for one note.
    base = "p" * 200
    assert content_hash(base + "a") != content_hash(base + "b")


def test_content_hash_covers_everything():
    base = "p" * 200
    assert content_hash(base + "a") != content_hash(base + "b")
    assert content_hash("é") == hashlib.sha256("é".encode()).hexdigest()


def _batch(same: int, other: int) -> list[str]:
    return [content_hash("dup")] * same + [content_hash(f"other {i}") for i in range(other)]


def test_nine_of_ten_is_a_storm():
    assert find_storm(_batch(9, 1)) == content_hash("dup")


def test_exactly_eighty_percent_is_not():
    assert find_storm(_batch(4, 1)) is None


def test_nine_of_eleven_is_a_storm():
    assert find_storm(_batch(9, 2)) == content_hash("dup")


def test_five_empty_and_one_real():
    hashes = [content_hash("")] * 5 + [content_hash("# real")]
    assert find_storm(hashes) == content_hash("")


@pytest.mark.parametrize("same", [1, 2])
def test_fewer_than_three_copies_is_never_a_storm(same):
    assert find_storm(_batch(same, 0)) is None


def test_three_copies_alone_are_a_storm():
    assert find_storm(_batch(3, 0)) == content_hash("dup")


def test_empty_batch():
    assert find_storm([]) is None
