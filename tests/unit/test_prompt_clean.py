"""The legacy sections clean (redact) only what they can show: the newest notes.md sections or
notebook entries until they alone pass the cap. Cleaning nothing gives exactly the uncleaned
section, and no uncleaned text is ever shown."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory import prompt
from minionsd.text.redact import redact

_part = st.text(alphabet="abcxyz \n", min_size=1, max_size=120).map(
    lambda text: text.strip("\n") + "\n\n")


@settings(max_examples=300, deadline=None)
@given(header=_part, parts=st.lists(_part, max_size=12), cap=st.integers(1, 600))
def test_cleaning_nothing_is_the_plain_selection(header, parts, cap):
    expected = prompt.newest_within(header, parts, cap, prompt._team_footer)
    got = prompt._newest_clean(header, parts, cap, prompt._team_footer, lambda text: text)
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(header=_part, parts=st.lists(_part, max_size=12), cap=st.integers(1, 600))
def test_only_cleaned_text_is_shown(header, parts, cap):
    # the cleaner marks every x, and the raw text's x never survives: a part shown uncleaned
    # would bring one in
    def clean(text: str) -> str:
        return text.replace("x", "[X]")

    body, cut = prompt._newest_clean(header, parts, cap, prompt._team_footer, clean)
    assert "x" not in body.replace("[X]", "")
    whole = clean(header) + "".join(clean(part) for part in parts)
    assert cut == (prompt.utf8_len(whole) > cap)
    if not cut:
        assert body == whole


def test_a_secret_in_a_shown_section_is_redacted_and_older_ones_are_only_counted():
    secret = "ghp_" + "Q7xk2LmN9pRt4VwYz8Ab3Cd5Ef6Gh1Jk0Lm"
    sections = "".join(f"\n\n---\n\n### batch {i}\n\n- note {i} " + "word " * 40
                       for i in range(30))
    text = "# Team Notes\n\nheader\n" + sections + f"\n\n---\n\n### newest\n\n- token {secret}\n"
    section = prompt.team_notes_section(text, 2048, 1 << 20, clean=redact)
    assert section is not None and section.truncated
    assert secret not in section.rendered and "[REDACTED:github_token]" in section.rendered
    assert "older sections of notes.md left out" in section.rendered
