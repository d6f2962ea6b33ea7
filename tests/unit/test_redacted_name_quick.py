"""redacted_name's quick check (every part redacted as one text) against its part-by-part walk.

The quick check may only say "nothing to redact" when the walk would change nothing; these
tests build file names around every secret of the redaction corpus (and around near misses)
and compare the two.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate.classify import redacted_name, walk_name_parts
from minionsd.text.redact import redact

CORPUS = Path(__file__).resolve().parents[1] / "data" / "redaction"
_MARKED = re.compile(r"«(.*?)»", re.DOTALL)


def _rows(name: str) -> list[str]:
    text = (CORPUS / name).read_text(encoding="utf-8")
    return [raw.replace("\\n", "\n") for raw in text.splitlines()
            if raw.strip() and not raw.startswith("#")]


SECRETS = sorted({s for row in _rows("secrets.txt") for s in _MARKED.findall(row)})
NEAR_MISSES = [row for row in _rows("near_misses.txt") if len(row) < 200]
WORDS = ["dallas", "fix", "the", "deploy", "keys", "2026-12-04", "a1b2c3d4", "v1.2", "token",
         "password", "bot", "api", "md", "x", "release-freeze", "AKIA", "ghp", "sk"]


def reference(name: str) -> str:
    return walk_name_parts(redact(name))


def quick(name: str) -> str:
    return redacted_name.__wrapped__(name)  # type: ignore[attr-defined]


def test_the_corpus_has_secrets_to_try():
    assert len(SECRETS) > 100 and len(NEAR_MISSES) > 100


@pytest.mark.parametrize("shape", ["dallas-{}-keys.md", "{}.md", "x-{}", "dallas.{}.md",
                                   "dallas{}-keys.md", "{}-2026-12-04.md", "a-b-c-d-{}-e-f.md"])
def test_every_corpus_secret_in_a_name(shape):
    for secret in SECRETS:
        name = shape.format(secret)
        assert quick(name) == reference(name), name


def test_near_misses_in_names():
    for text in NEAR_MISSES:
        for name in (f"dallas-{text}.md", text, text.replace(" ", "-")):
            assert quick(name) == reference(name), name


_SEGMENT = st.one_of(st.sampled_from(WORDS), st.sampled_from(SECRETS),
                     st.sampled_from(NEAR_MISSES).map(lambda t: t[:40]),
                     st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                             max_size=12))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_SEGMENT, st.sampled_from(["-", ".", "_", "", "--"])),
                min_size=1, max_size=8))
def test_quick_check_agrees_with_the_walk(pieces):
    name = "".join(segment + glue for segment, glue in pieces) + ".md"
    assert quick(name) == reference(name)
