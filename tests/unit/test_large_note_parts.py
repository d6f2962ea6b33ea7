"""A large note (over PARTS_CACHE_MAX_CHARS) is split once per batch: markdown.LargeNotes
remembers its split while a batch runs and lets it go after; the answers are the plain
split's."""

from __future__ import annotations

import threading

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.service.consolidation import ConsolidationService
from minionsd.text import markdown
from minionsd.text.markdown import PARTS_CACHE_MAX_CHARS, LargeNotes, note_parts
from tests.harness import home_app

CONFIG = ("[engine]\nauto_consolidate_memory = false\ninbox_settle_ms = 0\n"
          "inbox_max_note_bytes = 1048576\n")


def heavy(keys: int, body: str = "The body heavytoken.\n") -> str:
    lines = "".join(f"k{n}: [v{n}, {{x: {n}}}]\n" for n in range(keys))
    return f"---\ntitle: Heavy\nnested: {{a: [1, {{b: c}}]}}\n{lines}---\n{body}"


@settings(max_examples=30, deadline=None)
@given(keys=st.integers(min_value=1500, max_value=2500),
       body=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_a_remembered_split_is_the_plain_split(keys, body):
    text = heavy(keys, body)
    assert len(text) > PARTS_CACHE_MAX_CHARS
    plain = markdown._split_note(text)
    with LargeNotes():
        first = note_parts(text)
        assert note_parts(str(text)) is first  # an equal text finds it too
        with LargeNotes():  # a nested scope shares the memo
            assert note_parts(text) is first
    assert first == plain
    assert note_parts(text) is not first  # outside a scope nothing is kept


def test_a_scope_is_per_thread_and_forgets_on_exit():
    text = heavy(2000)
    seen: list[object] = []
    with LargeNotes() as scope:
        note_parts(text)
        assert len(scope.memo) == 1
        other = threading.Thread(target=lambda: seen.append(LargeNotes.open_here()))
        other.start()
        other.join()
    assert seen == [None] and scope.memo == {} and LargeNotes.open_here() is None


def test_a_batch_parses_a_large_notes_front_matter_once(tmp_path, monkeypatch):
    """The scan reads the note once; the batch once more (it was 10 times in all)."""
    parses: list[int] = []
    real = yaml.load

    def counting(stream, Loader):
        if isinstance(stream, str) and len(stream) > PARTS_CACHE_MAX_CHARS:
            parses.append(len(stream))
        return real(stream, Loader=Loader)

    monkeypatch.setattr(markdown.yaml, "load", counting)
    with home_app(tmp_path / "home", CONFIG) as app:
        (app.home.inbox / "root-heavy.md").write_text(heavy(3000))
        result = ConsolidationService(app).pipeline.run(force=True)
        assert result.notes == 1 and result.records_upserted == 1
    assert len(parses) == 2, parses
