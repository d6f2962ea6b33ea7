"""Synonyms for the commonest engineering paraphrases, added to a task's search terms.

This module owns the list and its matching. Pure functions, no SQL. A task that says "rate
limited" should find the note that says "429", one that says "out of memory" the note about
the OOM killer, one about "the pipeline" the note about CI. The index has no synonyms (FTS5
stems words, nothing more), so the task side adds the other spellings of what it names.

Each line of :data:`GROUPS_TEXT` is ``terms | triggers``: when any trigger phrase occurs in
the task's text, the terms are added (a term is a trigger only where it is listed as one:
"renew" adds "refresh", but a task about a refresh, a common word, is not widened to
"renew"). Phrases match on words compared
by a light stem (``throttled``, ``throttling`` and ``throttle`` are one word), contiguous, case
folded. Only the terms are ever added, never the trigger phrases, so a group adds its
distinctive words and not the common ones of its phrases ("time", "code", "out").

Invariant: :func:`expansions` returns lower-case index tokens (letters and digits), unique, in
the order of the groups, none of them among the words of the text it was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from minionsd.memory.retrieval.taskwords import lower_words

GROUPS_TEXT = """
429 throttle       | 429, rate limit, rate limited, rate limiting, too many requests, throttle,
                     slow down
oom                | out of memory, oom killer, oomkilled, sigkill, killed process
ci                 | pipeline, github actions, build job
pipeline           | ci
production         | prod
prod               | production
database           | db
kubernetes k8s     | k8s, kubernetes
flaky intermittent | flaky, intermittent, intermittently, passes on retry, fails randomly,
                     breaks randomly, now and then
ssr hydration      | ssr, server rendered, server side rendering, hydration
flag toggle        | feature flag, toggle, feature switch, dark launch
dst daylight       | dst, daylight saving, summer time, clocks moved, clocks changed
secret             | credential, credentials, api key, password
token              | bearer
timeout            | deadline
segfault sigsegv   | segfault, sigsegv, nil pointer dereference, null pointer
mypy stubs         | type checker, type information, type hints, mypy
index              | btree, b tree
refresh            | renew, renewal
heap               | memory leak, heap snapshot, allocations, holding memory
pii email          | pii, personal data, personal information, contact details
logout             | sign out, signed out, sign outs, signouts, logged out, log out
docker             | container image, container build, image build, container step
env                | environment variable, env var
cors origin        | cross origin, preflight, blocked by cors, blocked by policy
pagination offset  | paginated, page by page, next page
encoding utf       | garbled, mojibake
csv excel          | spreadsheet
query prefetch     | n 1, once per row, once for every row, query per row, queries per row
500                | internal server error
502                | bad gateway
503                | service unavailable
504                | gateway timeout
401                | unauthorized, unauthenticated
403                | forbidden, permission denied
tls certificate    | ssl, cert, certs, x509
"""

_SUFFIXES = ("ing", "ed", "es", "s")


def stem(word: str) -> str:
    """A light stem for matching phrases: a common suffix, then a final 'e', removed. It keeps
    the word's first three letters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word




def words(text: str) -> list[str]:
    """The lower-cased words of `text` (runs of letters and digits)."""
    return lower_words(text)


def parse(text: str) -> list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]:
    """GROUPS_TEXT as (terms, trigger phrases as stem tuples) per group."""
    groups = []
    lines: list[str] = []
    for line in text.strip().splitlines():  # an indented line continues the one above
        if line.startswith(" ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    for line in lines:
        terms_text, _, triggers_text = line.partition("|")
        terms = tuple(words(terms_text))
        phrases = [tuple(stem(w) for w in words(p)) for p in triggers_text.split(",")]
        groups.append((terms, tuple(dict.fromkeys(p for p in phrases if p))))
    return groups


GROUPS = tuple(parse(GROUPS_TEXT))
# First stem of a trigger -> (trigger, group index), so a text is read once; and the first three
# letters of those stems, so most words are passed over without being stemmed (a stem keeps
# the word's first three letters).
def _by_first() -> Mapping[str, tuple[tuple[tuple[str, ...], int], ...]]:
    table: dict[str, list[tuple[tuple[str, ...], int]]] = {}
    for index, (_terms, phrases) in enumerate(GROUPS):
        for phrase in phrases:
            table.setdefault(phrase[0], []).append((phrase, index))
    return MappingProxyType({first: tuple(found) for first, found in table.items()})


_BY_FIRST = _by_first()
_PREFIXES = frozenset(first[:3] for first in _BY_FIRST)


def matched_groups(text_words: Sequence[str]) -> list[int]:
    """Indexes of the groups one of whose triggers occurs in the words, in group order."""
    found: set[int] = set()
    for i, word in enumerate(text_words):
        if word[:3] not in _PREFIXES:
            continue
        for phrase, index in _BY_FIRST.get(stem(word), ()):
            if index not in found and (len(phrase) == 1 or tuple(
                    stem(w) for w in text_words[i : i + len(phrase)]) == phrase):
                found.add(index)
    return sorted(found)


def expansions(text_words: list[str]) -> list[str]:
    """The synonym terms for a text's words: terms of every matched group that the text does
    not already contain."""
    present = set(text_words)
    out: dict[str, None] = {}
    for index in matched_groups(text_words):
        for term in GROUPS[index][0]:
            if term not in present:
                out.setdefault(term)
    return list(out)
