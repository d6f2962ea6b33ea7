"""Restatements (the same fact in other words) and the facts that keep two notes apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval.dedupe import comparable_body, dedupe, restates
from minionsd.memory.retrieval.rank import Scored

NOTE = ("Journal entries must balance: post_entry() in ledger/post.py rejects a JournalEntry "
        "whose debit and credit lines differ, and the batch is rolled back with LEDGER_417.")
RESTATED = ("ledger/post.py rolls the batch back with LEDGER_417 when a JournalEntry has debit "
            "and credit lines that differ: post_entry() rejects unbalanced entries.")


def _same(a: str, b: str) -> bool:
    return restates(comparable_body(a), comparable_body(b))


def test_reordered_sentences_with_the_same_identifiers_restate() -> None:
    assert _same(NOTE, RESTATED) and _same(RESTATED, NOTE)
    assert _same(NOTE, "- `post_entry()` in `ledger/post.py`: " + RESTATED.split(": ")[0]
                 + ", rejecting entries.")  # Markdown marks do not count


def test_a_different_number_identifier_path_unit_or_negation_is_another_fact() -> None:
    for old, new in (("LEDGER_417", "LEDGER_418"), ("post_entry", "post_entries"),
                     ("ledger/post.py", "ledger/import.py"), ("rejects", "never rejects"),
                     ("that differ", "that differ by two")):
        assert not _same(NOTE, RESTATED.replace(old, new)), (old, new)
    minutes = "Tokens from auth/refresh.py live 30 minutes; the proxy caches them for 30 minutes."
    assert not _same(minutes, minutes.replace("minutes", "seconds"))


def test_prose_without_a_number_identifier_or_path_is_never_a_restatement() -> None:
    a = "Deploys on Friday afternoon need a second reviewer from the platform team."
    b = "The platform team wants a second reviewer for Friday afternoon deploys."
    assert not _same(a, b)


def test_notes_sharing_identifiers_but_saying_other_things_are_kept() -> None:
    other = ("post_entry() in ledger/post.py writes the JournalEntry audit row after the commit; "
             "LEDGER_417 reports are mailed to finance every morning from a cron job.")
    assert not _same(NOTE, other)


def test_dedupe_keeps_the_best_scored_of_a_restatement() -> None:
    items = [Scored(0.5, {"id": "M-1", "body": NOTE}), Scored(0.9, {"id": "M-2", "body": RESTATED})]
    assert [s.id for s in dedupe(items)] == ["M-2"]


_WORDS = st.sampled_from(["entries", "balance", "ledger", "rejects", "batch", "credit", "debit",
                          "lines", "journal", "rolled", "back", "the", "and", "with"])


@given(st.lists(_WORDS, min_size=8, max_size=60), st.integers(0, 999), st.integers(0, 999),
       st.sampled_from(["{n}", "ERR_{n}", "src/mod{n}.py", "v{n}"]))
def test_bodies_that_differ_in_a_number_identifier_or_path_are_never_merged(
        words: list[str], a: int, b: int, shape: str) -> None:
    """However alike the rest, two bodies naming different facts are both kept: exact,
    near-copy or restatement."""
    first = " ".join([*words, shape.format(n=a)])
    second = " ".join([*words, shape.format(n=b)])
    items = [Scored(1.0, {"id": "M-1", "body": first}), Scored(0.5, {"id": "M-2", "body": second})]
    kept = [s.id for s in dedupe(items)]
    assert kept == (["M-1"] if a == b else ["M-1", "M-2"])


def _packed(items: list[Scored], max_bytes: int = 8192) -> tuple[str, list[tuple[Scored, int]]]:
    from minionsd.memory.retrieval.pack import pack

    return pack(sorted(items, key=lambda s: -s.score), top_k=8, max_bytes=max_bytes,
                distinct=True)


def test_a_restatement_left_out_is_named_on_its_kept_records_last_line() -> None:
    kept = Scored(0.9, {"id": "M-1", "body": NOTE})
    other = Scored(0.4, {"id": "M-3", "body": "Invoices are numbered per tenant."})
    text, chosen = _packed([kept, Scored(0.5, {"id": "M-2", "body": RESTATED}), other])
    assert [s.id for s, _ in chosen] == ["M-1", "M-3"]
    first = text.split("\n\n")[0]
    assert first.endswith("\nalso: M-2") and "M-2" not in text.split("\n\n")[1]
    assert sum(size for _, size in chosen) + 2 == len(text.encode())


def test_an_exact_copy_is_not_named_and_the_also_line_is_bounded() -> None:
    copies = [Scored(0.8 - i / 100, {"id": f"M-{i}", "body": RESTATED + " " * i})
              for i in range(2, 9)]
    text, chosen = _packed([Scored(0.9, {"id": "M-1", "body": NOTE}),
                            Scored(0.85, {"id": "M-9", "body": NOTE}), *copies])
    assert [s.id for s, _ in chosen] == ["M-1"]
    assert text.endswith("\nalso: M-2, M-3, M-4")  # the exact copy M-9 is not named; ALSO_MAX


def test_the_also_line_counts_in_the_byte_budget() -> None:
    kept = Scored(0.9, {"id": "M-1", "body": NOTE})
    restated = Scored(0.5, {"id": "M-2", "body": RESTATED})
    alone, _ = _packed([kept])
    size = len(alone.encode())
    other = len(_packed([restated])[0].encode())  # what M-2 takes packed on its own
    for budget in (size, size + other, size + other + 1, size + other + 2):
        text, chosen = _packed([kept, restated], budget)
        assert len(text.encode()) <= budget
        # It is compared with M-1 once it would fit itself (then the line always fits).
        assert ("also: M-2" in text) == (budget >= size + 2 + other)
        assert [s.id for s, _ in chosen] == ["M-1"]
        assert chosen[0][1] == len(text.encode())


_BODIES = [NOTE, RESTATED, NOTE.replace("LEDGER_417", "LEDGER_418"),
           RESTATED.replace("LEDGER_417", "LEDGER_418"), "Invoices are numbered per tenant.",
           "- `post_entry()` in `ledger/post.py`: " + RESTATED.split(": ")[0] + ", rejecting."]


@given(st.lists(st.tuples(st.floats(0.01, 2.0), st.integers(0, len(_BODIES) - 1)), max_size=12),
       st.integers(0, 1200), st.integers(1, 8))
def test_packs_with_also_lines_keep_the_byte_invariants(
        entries: list[tuple[float, int]], max_bytes: int, top_k: int) -> None:
    from minionsd.memory.retrieval.pack import ALSO_MAX, pack

    items = [Scored(score, {"id": f"M-{i}", "body": _BODIES[body]})
             for i, (score, body) in enumerate(entries)]
    text, chosen = pack(sorted(items, key=lambda s: (-s.score, s.id)), top_k=top_k,
                        max_bytes=max_bytes, distinct=True)
    assert len(text.encode()) <= max_bytes and len(chosen) <= top_k
    assert sum(size for _, size in chosen) + 2 * max(0, len(chosen) - 1) == len(text.encode())
    packed = {s.id for s, _ in chosen}
    bodies = {s.id: s.record["body"] for s in items}
    for kept, (item, _size) in zip(text.split("\n\n") if chosen else [], chosen, strict=True):
        last = kept.rsplit("\n", 1)[-1]
        if not last.startswith("also: "):
            continue
        named = last.removeprefix("also: ").split(", ")
        assert len(named) <= ALSO_MAX and not packed & set(named)
        assert all(_same(bodies[n], item.record["body"]) for n in named), (named, item.id)
