"""Term counts of pure-ASCII records without a second FTS5 pass (fts.term_counts' fast path
for memory.add's preparing threads).

For ASCII text, unicode61's rule is simple: a token is a run of ASCII letters and digits (every
other ASCII character separates), folded to lower case; the porter stemmer then maps each token
on its own. So a token's stem, asked of FTS5 once, can be remembered, and a record's counts
built from its tokens in Python, in FTS5's order (the index sorts terms by their bytes: for
ASCII, as Python sorts str). The text stored is the same as FTS5 counting it would give
(tests/unit/test_index_ascii_paths.py checks it against FTS5's own counts).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

# fts.stems: FTS5's stems of words, from a TEMP table of the connection.
Stems = Callable[[sqlite3.Connection, Iterable[str]], Mapping[str, "str | None"]]

_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
MEMO_STEMS = 10_000  # tokens remembered (~1 MB); all forgotten at once when full
_MEMO_TOKEN_CHARS = 64  # longer tokens are asked of FTS5 each time, never remembered
# Tokens asked of FTS5 in one call at most: after one call of 20,000 words, FTS5 counted every
# later record a third slower on that connection (measured; calls of 4,000 left no trace).
_ASK_AT_ONCE = 2_000


def ascii_tokens(text: str) -> list[str]:
    """FTS5's tokens of ASCII `text` (unicode61: lower-cased runs of letters and digits), in
    order, before stemming."""
    return text.lower().translate(_ASCII_SEPARATORS).split()


class ScratchConnection(sqlite3.Connection):
    """A connection that tokenises for the preparing threads (Database.prepare), with the
    stem memo they share."""

    stem_memo: StemMemo | None = None


class StemMemo:
    """FTS5's porter stems of ASCII tokens seen before, shared by the threads that prepare
    memory.add (the tokenizer is fixed, so a token's stem never changes). Bounded; emptied
    when full. It also holds the identifiers' terms search_aux is built from."""

    def __init__(self, limit: int = MEMO_STEMS) -> None:
        self.limit = limit
        self._stems: dict[str, str] = _Stems()
        self._lock = threading.Lock()
        # Identifier -> its index terms, for ftsquery.index_aux_and_tokens (bounded there).
        self.compounds: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._stems)

    def learn(self, conn: sqlite3.Connection, columns: Iterable[list[str]],
              stems: Stems) -> None:
        """Remember the stems of every token in `columns` (ASCII letters and digits, lower case)
        the memo lacks, asked of `stems` at once (many records' new tokens in one call)."""
        known = self._stems
        missing = {token for column in columns for token in column if token not in known}
        if missing:
            self.of(conn, missing, stems)

    @property
    def known(self) -> Mapping[str, str]:
        """The stems remembered so far (read without the lock: it may be emptied meanwhile)."""
        return self._stems

    def of(self, conn: sqlite3.Connection, tokens: set[str],
           stems: Stems) -> Mapping[str, str] | None:
        """token -> stem for every token of `tokens` (ASCII letters and digits, lower case),
        from the memo or from `stems` (fts.stems: FTS5 in a TEMP table of `conn`); None should
        it not give one stem per token."""
        known = self._stems
        # (Not set.difference: against a dict subclass it would walk the whole memo.)
        missing = [token for token in tokens if token not in known and not _plain_number(token)]
        if not missing:
            return known
        found: dict[str, str | None] = {}
        for start in range(0, len(missing), _ASK_AT_ONCE):
            found.update(stems(conn, missing[start:start + _ASK_AT_ONCE]))
        if None in found.values():
            return None
        kept = [(token, stem) for token, stem in found.items()
                if len(token) <= _MEMO_TOKEN_CHARS]
        # Copies made together, so the memo's strings sit side by side in memory instead of
        # pinning the (much larger) allocations of the batch their tokens were cut from.
        tokens_copy = "\n".join(token for token, _ in kept).split("\n") if kept else []
        with self._lock:
            if len(known) + len(kept) > self.limit:
                known.clear()
            for token, (_, stem) in zip(tokens_copy, kept, strict=True):
                if len(known) >= self.limit:
                    break
                known[token] = token if stem == token else stem  # type: ignore[assignment]
        return _Both(found, known)  # type: ignore[return-value]


def _plain_number(token: str) -> bool:
    """A token of ASCII digits that FTS5 keeps as it is: the porter stemmer changes only
    letters, and the index cuts a token only far beyond this length (test_index_ascii_paths
    checks it against FTS5)."""
    return len(token) <= _MEMO_TOKEN_CHARS and token.isdigit()


class _Stems(dict[str, str]):
    """The memo's table: a plain number is its own stem without taking a place in it (numbers
    are most of a corpus's distinct tokens)."""

    def __missing__(self, token: str) -> str:
        if _plain_number(token):
            return token
        raise KeyError(token)


class _Both(dict[str, str]):
    """Stems just asked of FTS5, then those the memo knew."""

    def __init__(self, found: Mapping[str, str], known: Mapping[str, str]) -> None:
        super().__init__(found)
        self.known = known

    def __missing__(self, token: str) -> str:
        return self.known[token]


def counts_of_ascii(conn: sqlite3.Connection | None, memo: StemMemo, texts: Sequence[str],
                    repeats: Sequence[int], tokens: tuple[list[str], list[str]] | None,
                    stems: Stems | None, version: str) -> str | None:
    """fts.term_counts of ASCII (title, body, aux), each column's tokens counted `repeats`
    times, from their tokens and remembered stems (`version`: the format's first word), the
    stems of new tokens asked of `stems` (without: None when a token is new); None for other
    text (or should a stem be missing: the memo was emptied by another thread meanwhile)."""
    if not all(text.isascii() for text in texts):
        return None
    if tokens is None:
        columns = [ascii_tokens(text) for text in texts]
    else:
        columns = [tokens[0], tokens[1], ascii_tokens(texts[2])]
    try:  # most records hold no token the memo has not seen
        counts = _stem_counts(memo.known, columns, repeats)
    except KeyError:
        if stems is None or conn is None:
            return None
        distinct = set(columns[1])
        distinct.update(columns[0], columns[2])
        stem_of = memo.of(conn, distinct, stems)
        if stem_of is None:
            return None
        try:
            counts = _stem_counts(stem_of, columns, repeats)
        except KeyError:
            return None
    head = f"{version} {sum(map(len, columns))} 1\n"
    if not counts:
        return head
    ordered = sorted(counts)  # str keys only: the sort compares them directly
    values = list(map(counts.__getitem__, ordered))
    numbers = map(_SMALL_NUMBERS.__getitem__ if max(values) < len(_SMALL_NUMBERS) else str,
                  values)
    return head + "\n".join(map(" ".join, zip(ordered, numbers, strict=True))) + "\n"


def _stem_counts(stem_of: Mapping[str, str], columns: Sequence[list[str]],
                 repeats: Sequence[int]) -> Counter[str]:
    """How many times each stem occurs in `columns`, a column's tokens counted `repeats`
    times; KeyError for a token `stem_of` does not know."""
    get = stem_of.__getitem__
    counts: Counter[str] = Counter()
    for column, times in zip(columns, repeats, strict=True):
        if column:
            counts.update(map(get, column * times if times > 1 else column))
    return counts


_SMALL_NUMBERS = tuple(str(n) for n in range(1024))  # their text, looked up, not formatted
