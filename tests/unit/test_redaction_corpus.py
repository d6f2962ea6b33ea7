"""The two-sided redaction corpus (tests/data/redaction): every secret goes, every near miss stays.

secrets.txt holds `<kind> TAB <text>` lines with each secret value between « and »; after
`redact` no 10-character piece of a marked value may remain and `[REDACTED:<kind>]` must appear.
near_misses.txt holds text that looks like a secret and is not one; it must come back unchanged.
`\\n` in either file stands for a line break. Run with `-s` to see the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text.redact import kinds, redact

CORPUS = Path(__file__).resolve().parents[1] / "data" / "redaction"
_MARKED = re.compile(r"«(.*?)»", re.DOTALL)
WINDOW = 10  # no piece this long of a secret may survive


@dataclass(frozen=True)
class SecretCase:
    line: int
    kind: str
    text: str
    secrets: tuple[str, ...]


def _lines(name: str) -> list[tuple[int, str]]:
    rows = []
    for number, raw in enumerate((CORPUS / name).read_text(encoding="utf-8").splitlines(), 1):
        if raw.strip() and not raw.startswith("#"):
            rows.append((number, raw.replace("\\n", "\n")))
    return rows


def secret_cases() -> list[SecretCase]:
    cases = []
    for number, raw in _lines("secrets.txt"):
        kind, marked = raw.split("\t", 1)
        cases.append(SecretCase(number, kind, _MARKED.sub(r"\1", marked),
                                tuple(_MARKED.findall(marked))))
    return cases


def near_misses() -> list[tuple[int, str]]:
    return _lines("near_misses.txt")


def leaked(case: SecretCase, out: str) -> list[str]:
    """The pieces of the case's secrets still present in `out`."""
    found = []
    for secret in case.secrets:
        width = min(WINDOW, len(secret))
        found += [secret[i:i + width] for i in range(len(secret) - width + 1)
                  if secret[i:i + width] in out]
    return found


SECRETS = secret_cases()
NEAR_MISSES = near_misses()


def test_corpus_is_large_and_well_formed():
    assert len(SECRETS) >= 150 and len(NEAR_MISSES) >= 120
    assert all(case.secrets for case in SECRETS), "every secret line marks its value"
    unknown = {case.kind for case in SECRETS} - set(kinds())
    assert not unknown, f"kinds that redact() does not produce: {unknown}"
    families = {case.kind for case in SECRETS}
    assert len(families) >= 45


@pytest.mark.parametrize("case", SECRETS, ids=lambda c: f"line{c.line}-{c.kind}")
def test_secret_is_redacted(case):
    out = redact(case.text)
    assert not leaked(case, out), out
    assert f"[REDACTED:{case.kind}]" in out, out


@pytest.mark.parametrize(("line", "text"), NEAR_MISSES, ids=lambda v: f"line{v}"
                         if isinstance(v, int) else "")
def test_near_miss_is_unchanged(line, text):
    assert redact(text) == text


def test_corpus_figures():
    """The figures for the record: caught / total secrets, false positives / total near misses."""
    caught = sum(1 for case in SECRETS if not leaked(case, redact(case.text)))
    false_positives = sum(1 for _, text in NEAR_MISSES if redact(text) != text)
    print(f"\nredaction corpus: {caught}/{len(SECRETS)} secrets caught, "
          f"{false_positives}/{len(NEAR_MISSES)} near misses changed")
    assert caught == len(SECRETS) and false_positives == 0


_PROSE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(case=st.sampled_from(SECRETS), before=_PROSE, after=_PROSE)
def test_secret_is_redacted_wherever_it_sits(case, before, after):
    """A corpus secret on its own lines between arbitrary text is still removed."""
    out = redact(f"{before}\n{case.text}\n{after}")
    assert not leaked(case, out)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([text for _, text in NEAR_MISSES]), min_size=2, max_size=6))
def test_near_misses_together_are_unchanged(texts):
    """Near misses stay near misses next to each other (a note holds many of them)."""
    text = "\n".join(texts)
    assert redact(text) == text
