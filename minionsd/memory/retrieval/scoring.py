"""bm25 for a pool of candidate rows, from the term counts stored with each record.

Each pool row gets bm25 over *all* query terms that occur in the index, computed with FTS5's
formula and parameters (:mod:`minionsd.fts`): k1 = 1.2, b = 0.75, column weights title 4,
body 1, aux 2; the row's length and its column-weighted term counts come from the
``term_counts`` text stored with the record, N and avgdl from ``fts_stats``, the dfs from
``memory_vocab``. So the score equals what ``bm25(memory_fts, 4, 1, 2)`` gives in one OR
query over all terms. A row without stored counts (written before they existed) is tokenised
by FTS5 on the reader's connection: the same numbers, only slower.
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from minionsd.storage import fts

if TYPE_CHECKING:
    from minionsd.memory.retrieval.index import RecallIndex


@dataclass
class Counted:
    seq: int
    id: str
    freq: Mapping[str, float]  # query stem -> column-weighted occurrences
    length: int  # tokens in title + body + aux


class Stored:
    """A row's stored term counts (cached in the record view), parsed on first use.

    Parsing all of a row's ~150 lines is one split; the parsed form (~3x the text) is kept with
    the entry, its strings shared through the index's string table. (Reading only the query's
    lines with a regular expression, and parsing a row whole only once many queries had asked
    for it, bought 3.7% in the cycled count and nothing for fresh tasks: dropped.)
    """

    __slots__ = ("_counts", "id", "length", "text")

    def __init__(self, record_id: str, length: int, text: str) -> None:
        self.id = record_id
        self.length = length
        self.text = text
        self._counts: dict[str, str] | None = None

    def weights(self, key: tuple[str, ...], index: RecallIndex) -> dict[str, float]:
        """stem -> weighted count for the stems of `key` (the query's stems, sorted) the row
        holds, in `key` order."""
        counts = self._counts
        if counts is None:  # threads may both parse; either result is the same
            counts = self._counts = parse_counts(self.text, index.shared_strings())
        return _numbers(key, counts)


def _numbers(key: tuple[str, ...], counts: dict[str, str]) -> dict[str, float]:
    """The non-zero counts of the stems of `key` in a row parsed whole, in `key` order."""
    return {stem: value for stem in key if stem in counts and (value := float(counts[stem]))}


_COUNT_LINE_RE = re.compile(r"\n(\S+) (\S+)")
_COUNT_LINES_RE = re.compile(r"(?:\S+ \S+\n)*")  # the lines after the header, as written


def parse_counts(text: str, shared: dict[str, str] | None = None) -> dict[str, str]:
    """Every stem line of a stored term_counts text (after its header), the count as text.

    Text as fts.term_counts writes it (two words a line) is split on whitespace; a hand-edited
    row is read line by line (`\\n<stem> <count>`). `shared` (the index's string table) lets rows
    parsed whole share their stem and count strings.
    """
    if _COUNT_LINES_RE.fullmatch(text, text.find("\n") + 1):
        words = text.split()[3:]
        stems, counts = words[0::2], words[1::2]
    else:
        pairs = _COUNT_LINE_RE.findall(text)
        stems, counts = [p[0] for p in pairs], [p[1] for p in pairs]
    if shared is None:
        return dict(zip(stems, counts, strict=True))
    share = shared.setdefault
    return dict(zip(map(share, stems, stems), map(share, counts, counts), strict=True))


def parse_stored(record_id: str, stored: str | None) -> Stored | None:
    """The header of the line form written by fts.term_counts; None for anything else."""
    length = fts.counts_length(stored or "")
    return None if length is None else Stored(record_id, length, stored or "")


def _counts_bytes(entry: Stored) -> int:
    # The text, and its parsed form once the row is parsed whole (measured: ~3.3x the text).
    return 400 + 5 * len(entry.text)


def count_pool(conn: sqlite3.Connection, index: RecallIndex, token: int, pool: list[int],
               stem_terms: dict[str, list[str]]) -> list[Counted]:
    """Column-weighted occurrences of each query stem in each pool row, and the row's length,
    from the stored counts (cached in the record view, see Stored)."""
    view = index.view
    found, missing = view.cached("counts", pool)
    if missing:
        parsed = {}
        for seq, record_id, stored, title, body, aux in fts.rows_by_seq(
                conn, "seq, id, term_counts, "
                "CASE WHEN term_counts IS NULL THEN title END, "
                "CASE WHEN term_counts IS NULL THEN body END, "
                "CASE WHEN term_counts IS NULL THEN search_aux END", missing):
            if stored is None or fts.counts_length(stored) is None:
                stored = fts.term_counts(conn, title or "", body or "", aux or "")
            entry = parse_stored(record_id, stored)
            if entry is not None:
                parsed[seq] = entry
        view.remember("counts", parsed, token, _counts_bytes)
        found |= parsed
    key = tuple(sorted(stem_terms))
    return [Counted(seq, entry.id, entry.weights(key, index), entry.length)
            for seq, entry in found.items()]


def idf(df: int, rows: int) -> float:
    """FTS5's idf, clamped as FTS5 clamps it (a df above `rows` cannot occur in one snapshot,
    and is treated as `rows` if it does)."""
    df = min(df, rows)
    value = math.log((rows - df + 0.5) / (df + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def bm25(freq: Mapping[str, float], stem_idf: dict[str, float], length: int,
         avgdl: float) -> float:
    """FTS5's bm25 for one row, as a negative number like bm25() returns.

    `freq` and `stem_idf` are by stem; a stem's idf is the sum of its terms' idfs (two query
    words with one stem are two phrases to FTS5, each counting the same occurrences).
    """
    norm = fts.BM25_K1 * (1.0 - fts.BM25_B + (fts.BM25_B * length / avgdl if avgdl else 0.0))
    total = 0.0
    for stem, f in freq.items():
        total += stem_idf[stem] * f * (fts.BM25_K1 + 1.0) / (f + norm)
    return -total
