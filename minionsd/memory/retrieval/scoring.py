"""bm25 for a pool of candidate rows, from the term counts stored with each record.

Each pool row gets bm25 over *all* query terms that occur in the index, with FTS5's formula,
its k1 (1.2) and its column weights (:mod:`minionsd.storage.fts`: title 4, body 1, aux 2); the
row's length and its column-weighted term counts come from the ``term_counts`` text stored
with the record, N and avgdl from ``fts_stats``, the dfs from the planner's counts. With
FTS5's length normalisation (b = 0.75) the score equals what ``bm25(memory_fts, 4, 1, 2)``
gives in one OR query over all terms (the tests check that); retrieval uses ``LENGTH_B``
instead (see there). A row without usable stored counts is tokenised by FTS5 on the reader's
connection: the same numbers, only slower.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minionsd.storage import fts

if TYPE_CHECKING:
    from minionsd.memory.retrieval.index import RecallIndex


# bm25's length normalisation for retrieval. FTS5's 0.75 is tuned for documents of very mixed
# length; memory notes are a sentence to a paragraph, and there 0.75 mostly punishes the note
# that explains a problem for the words its explanation adds, in favour of a one-line note
# sharing one common word with the task. On the evaluation set (docs/retrieval.md section 9)
# MRR is flat from 0.1 to 0.35 and falls beyond: 0.25 is the middle of that plateau.
LENGTH_B = 0.25


@dataclass
class Counted:
    seq: int
    id: str
    freq: Mapping[str, float]  # query stem -> column-weighted occurrences
    length: int  # tokens in title + body + aux
    words: Mapping[str, float] = field(default_factory=dict)  # every stem of the row (shared)


class Stored:
    """A row's stored term counts, parsed (cached in the record view): stem -> weighted count.

    A row is parsed whole when it is read, one split of its ~150 lines; stems and counts are
    shared through the index's tables, so a cached row holds only its dictionary. (Reading only
    the query's lines with a regular expression, and parsing a row whole only once many queries
    had asked for it, bought 3.7% in the cycled count and nothing for fresh tasks: dropped.)
    """

    __slots__ = ("counts", "id", "length", "size")

    def __init__(self, record_id: str, length: int, counts: dict[str, float], size: int) -> None:
        self.id = record_id
        self.length = length
        self.counts = counts
        self.size = size  # bytes the text had, for the cache's bound

    def weights(self, key: tuple[str, ...]) -> dict[str, float]:
        """stem -> weighted count for the stems of `key` (the query's stems, sorted) the row
        holds, in `key` order."""
        get = self.counts.get
        return {stem: value for stem in key if (value := get(stem))}


def parse_counts(text: str, shared: dict[str, str] | None = None,
                 numbers: dict[str, float] | None = None) -> dict[str, float] | None:
    """Every stem line of a stored term_counts text (after its header): stem -> count; None
    when the text is not two words a line, as fts.term_counts writes it, or a count is no
    finite number of zero or more.

    One split of the whole text (a row's stems are looked up by many queries, so it pays to
    parse them all once). The check is that the word count fits the line count (a hand edit
    that moves a word from one line to another passes it, and is read as pairs of words).
    `shared` and `numbers` (the index's tables) let parsed rows share their stem strings and
    their count numbers (a row has ~150 lines, the bench's 100,000 rows ~20 distinct counts).
    """
    words = text.split()
    if len(words) != 2 * text.count("\n") + 1 or not text.endswith("\n"):
        return None
    stems, counts = words[3::2], words[4::2]
    try:
        if numbers is None:
            values = list(map(_count, counts))
        else:  # each count text is checked once, when it is first seen
            values = list(map(numbers.get, counts))
            if None in values:
                for i, value in enumerate(values):
                    if value is None:
                        values[i] = numbers.setdefault(counts[i], _count(counts[i]))
    except ValueError:
        return None
    if shared is not None:
        share = shared.setdefault
        stems = list(map(share, stems, stems))
    return dict(zip(stems, values, strict=True))


def _count(text: str) -> float:
    """A stored count: a finite number, not negative (`nan` or `-1` in a hand-edited row
    would make its score unorderable or nonsense)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"not a count: {text!r}")
    return value


def parse_stored(record_id: str, stored: str | None,
                 index: RecallIndex | None = None) -> Stored | None:
    """A row's stored counts as written by fts.term_counts; None for anything else (a row
    written before counts were stored, or edited by hand into another form)."""
    length = fts.counts_length(stored or "")
    if length is None or stored is None:
        return None
    counts = (parse_counts(stored) if index is None else
              parse_counts(stored, index.shared_strings(), index.numbers))
    return None if counts is None else Stored(record_id, length, counts, len(stored))


def _counts_bytes(entry: Stored) -> int:
    # The parsed dictionary (measured: ~3.3x the text it came from).
    return 400 + 4 * entry.size


def count_pool(conn: sqlite3.Connection, index: RecallIndex, token: int, pool: list[int],
               stem_terms: dict[str, list[str]]) -> list[Counted]:
    """Column-weighted occurrences of each query stem in each pool row, and the row's length,
    from the stored counts (cached in the record view, see Stored). A row without usable
    stored counts is tokenised by FTS5 on this connection: the same numbers, only slower."""
    view = index.view
    found, missing = view.cached("counts", pool)
    if missing:
        parsed: dict[int, Stored] = {}
        retokenise = []
        for seq, record_id, stored in fts.rows_by_seq(conn, "seq, id, term_counts", missing):
            entry = parse_stored(record_id, stored, index)
            if entry is None:
                retokenise.append(seq)
            else:
                parsed[seq] = entry
        if retokenise:
            for seq, record_id, title, body, aux in fts.rows_by_seq(
                    conn, "seq, id, title, body, search_aux", retokenise):
                counts = fts.term_counts(conn, title, body, aux)
                entry = parse_stored(record_id, counts, index)
                if entry is not None:
                    parsed[seq] = entry
        view.remember("counts", parsed, token, _counts_bytes)
        found |= parsed
    key = tuple(sorted(stem_terms))
    return [Counted(seq, entry.id, entry.weights(key), entry.length, entry.counts)
            for seq, entry in found.items()]


def idf(df: int, rows: int) -> float:
    """FTS5's idf, clamped as FTS5 clamps it (a df above `rows` cannot occur in one snapshot,
    and is treated as `rows` if it does)."""
    df = min(df, rows)
    value = math.log((rows - df + 0.5) / (df + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def bm25(freq: Mapping[str, float], stem_idf: dict[str, float], length: int,
         avgdl: float, b: float = LENGTH_B) -> float:
    """bm25 for one row by FTS5's formula with length normalisation `b` (FTS5's own:
    fts.BM25_B), as a negative number like bm25() returns.

    `freq` and `stem_idf` are by stem; a stem's idf is the sum of its terms' idfs (two query
    words with one stem are two phrases to FTS5, each counting the same occurrences).
    """
    norm = fts.BM25_K1 * (1.0 - b + (b * length / avgdl if avgdl else 0.0))
    total = 0.0
    for stem, f in freq.items():
        total += stem_idf[stem] * f * (fts.BM25_K1 + 1.0) / (f + norm)
    return -total
