"""The quick front-matter reader agrees with the YAML loader wherever it answers, and leaves
every other block to it: read_note gives the same mapping, body and warnings either way."""

from __future__ import annotations

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.text import markdown
from minionsd.text.front_matter_quick import read_simple

_KEYS = st.sampled_from(["id", "agent", "title", "tags", "pr", "date", "kind", "x_1", "_k",
                         "yes", "on", "Null", "y", "n", "key-dash", "1st", "A"])
_VALUES = st.sampled_from([
    "dallas", "Docker env failing notes", "W-15264", "yana-00000", "1064", "0", "012", "00",
    "2026-12-05", "2026-12-5", "2026-12-05T10:00:00", "10:30", "1:20", "1_000", "0x1F",
    "0o17", "0b101", "+1", "-1", "1e3", "1.5", ".5", ".inf", ".nan", "NaN", "inf", "y", "n",
    "Y", "yes", "No", "true", "False", "on", "OFF", "null", "Null", "~", "a  b", "a b",
    "src/app.py", "v1.2", "a: b", "a #b", "a#b", "it's", "'it''s'", "'single'", '"double"',
    '"with \\" escape"', '"tab\\there"', '""', "''", '"é"', "é", "x" * 30, "[a, b]", "[]",
    "[tech-debt, flaky-test]", "[1, 2]", "[b, 'c']", "['a, b']", '["x", y]', "[a, ]",
    "[a,b]", "[a, [b]]", "[yes, no]", "{a: 1}",
    "- item", "*ref", "&anchor x", "!tag x", "|", ">", "@at", "`tick`", "%pct", "a, b",
    "trailing ", " leading", "9999999999999999999999", "123456789012345678",
    "3f2a1b9c0d4e5f60", "0b101", "0b12af", "0x1f", "0o17", "1e5", "1e", "12e3", "0a", "00a",
    "1_a", "9Z",
])
_LINES = st.one_of(
    st.tuples(_KEYS, _VALUES).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(["", "# comment", "key:", "key:  two spaces", "key:\tvalue", "  nested: 1",
                     "- item", "key: value # note", "k: v\r", "---", "tags:", "- 'q: x'",
                     "- 1064", "- yes", "- a b", "-", "- ", "- - x", "- k: v", "  - x",
                     "- 3f2a1b"]),
)


def loader(block: str):
    return yaml.load(block, Loader=markdown._Loader)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=8), st.booleans())
def test_the_quick_reader_answers_as_the_loader_does(lines, final_newline):
    block = "\n".join(lines) + ("\n" if final_newline else "")
    quick = read_simple(block)
    if quick is None:
        return  # the loader decides
    full = loader(block)
    assert quick == full
    assert [type(v) for v in quick.values()] == [type(v) for v in full.values()]
    assert list(quick) == list(full)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_any_text_is_read_alike(block):
    quick = read_simple(block)
    if quick is not None:
        assert quick == loader(block)


def test_a_usual_note_is_read_quickly_and_alike():
    block = ('id: yana-00000\nagent: yana\ndate: 2026-12-05\ntitle: "Docker env failing"\n'
             "kind: feedback\nproject: cobalt\ntask: W-15264\npr: 1064\n"
             "tags: [tech-debt, flaky-test]\n")
    assert read_simple(block) == loader(block) == {
        "id": "yana-00000", "agent": "yana", "date": "2026-12-05",
        "title": "Docker env failing", "kind": "feedback", "project": "cobalt",
        "task": "W-15264", "pr": 1064, "tags": ["tech-debt", "flaky-test"]}
    text = f"---\n{block}---\n\n# Body\n"
    assert markdown.read_note(text) == (loader(block), "# Body\n", [])


def test_a_kb_entry_block_is_read_quickly_and_alike():
    block = ("source: notes/archive/2026-12-05-yana-x.md\nagent: yana\ncategory: reviews\n"
             "date: 2026-12-05\nentry_id: 3f2a1b9c0d4e5f60\nid: yana-00000\n"
             "title: 'Test pipeline: TokenBuilder'\npr: '1064'\ntags:\n- tech-debt\n"
             "- flaky-test\n")
    assert read_simple(block) is not None
    assert read_simple(block) == loader(block)


def test_blocks_it_leaves_to_the_loader():
    for block in ("on: 1\n", "a: yes\n", "a: 1\na: 2\n", "a: b\n\nc: d\n", "a: b",
                  "a: b # c\n", "a: 'x''y'\n", "a: ['b, c']\n", "a:\n  - b\n", "a:\n",
                  "a:\n- yes\n", "a:\n- 0x1f\n", "a: 0x1F\n"):
        assert read_simple(block) is None, block
