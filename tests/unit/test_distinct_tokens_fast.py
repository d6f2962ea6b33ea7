"""gist.distinct_tokens' shortcuts (a digit found without a step per character, a kept token
not checked again, no backtick count in a line without backticks) agree with the plain rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate import gist


def reference(text: str) -> frozenset[str]:
    found = set()
    for token in gist._TOKEN_RE.findall(text):
        token = token.strip("`").rstrip(".,;:!?)")
        if not token:
            continue
        if any(c.isdigit() for c in token) or gist._IDENT_INNER_RE.search(token) \
                or text.count(f"`{token}`"):
            found.add(token.lower())
    return frozenset(found)


# Letters, digits of every kind (Arabic-Indic, superscripts, fullwidth), the characters
# tokens and identifiers are made of, and backticks.
_PIECES = st.sampled_from([
    "port", "8080", "Port", "PORT", "test-m13", "setup_8", "src/app.py", "UserCache", "x",
    "`", "`code`", "`a b`", " ", "\n", ".", ",", ")", "²", "٣", "\uff18", "Ⅻ", "ǅ", "İ", "ß",
    "é", "v1.2", "a@b", "#12", "=", "+", "::", "ΣΑΣ", "ﬁ",
])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(_PIECES, max_size=30).map("".join),
                 st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                         max_size=60)))
def test_distinct_tokens_matches_the_plain_rule(text):
    assert gist.distinct_tokens(text) == reference(text)


def test_the_usual_cases():
    assert gist.distinct_tokens("port 8080 on `cache` for UserCache in src/app.py") == \
        {"8080", "cache", "usercache", "src/app.py"}
    assert gist.distinct_tokens("release freeze on friday") == frozenset()
    assert gist.distinct_tokens("level ² and ٣ and Ⅻ") == reference("level ² and ٣ and Ⅻ")
