"""cut_section: an oversized Markdown section cut at line (or word) boundaries, within the
bound, with its heading and a notice."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text.sectioncut import cut_section

WORD = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")),
               min_size=1, max_size=12)
LINE = st.lists(WORD, min_size=1, max_size=30).map(" ".join)
NOTICE = re.compile(r"_\[this section was cut to fit: \d+ earlier lines? left out"
                    r"(, and the start of the last line|, and the end of the heading)?\]_")


def size(text: str) -> int:
    return len(text.encode("utf-8"))


@settings(max_examples=300, deadline=None)
@given(heading=LINE, body=st.lists(LINE, max_size=40), max_bytes=st.integers(0, 600))
def test_cut_keeps_bound_heading_notice_and_whole_words(heading, body, max_bytes):
    section = "### " + heading + "\n" + "".join(line + "\n" for line in body)
    out = cut_section(section, max_bytes)
    if size(section) <= max_bytes:
        assert out == section
        return
    assert size(out) <= max_bytes
    if not out:
        return
    shown = out.splitlines()
    notice = next(i for i, line in enumerate(shown) if NOTICE.fullmatch(line))
    assert notice == 1  # the heading, then the notice
    # The heading is whole, or a run of its first whole words.
    full = "### " + heading
    assert full.startswith(shown[0])
    assert shown[0] == full or full[len(shown[0])].isspace()
    kept = shown[2:]
    shortened = NOTICE.fullmatch(shown[1]).group(1) or ""
    if "heading" in shortened:
        assert shown[0] != full and not kept
        assert int(re.search(r"\d+", shown[1]).group()) == len(body)
    elif shortened:  # the last line, shortened from a word's start
        assert len(kept) == 1 and body[-1].endswith(kept[0])
        start = len(body[-1]) - len(kept[0])
        assert start > 0 and body[-1][start - 1].isspace()
    else:  # the newest whole lines
        assert kept == body[len(body) - len(kept):]
        left = int(re.search(r"\d+", shown[1]).group())
        assert left + len(kept) == len(body)


def test_a_big_digest_section_keeps_its_heading_and_newest_lines():
    lines = [f"- **Insight {i}**: some words about finding {i}" for i in range(200)]
    section = "### 2026-12-05: Engine (50 insights from 50 notes)\n" + "\n".join(lines) + "\n"
    out = cut_section(section, 2000).splitlines()
    assert out[0] == "### 2026-12-05: Engine (50 insights from 50 notes)"
    assert NOTICE.fullmatch(out[1])
    assert out[-1] == lines[-1] and out[2:] == lines[len(lines) - len(out[2:]):]


def test_the_separator_before_a_heading_stays_with_it():
    section = "\n---\n\n### 2030-01-02: Big\n" + "".join(f"- line {i}\n" for i in range(99))
    out = cut_section(section, 300)
    assert out.startswith("\n---\n\n### 2030-01-02: Big\n_[this section was cut to fit: ")
    assert out.endswith("- line 98\n") and len(out.encode()) <= 300
