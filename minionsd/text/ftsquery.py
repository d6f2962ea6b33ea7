"""Turning free text into safe FTS5 queries, and the text that makes identifiers findable.

This module owns the word rules shared by ``memory.search``, retrieval and indexing:

* how text splits into terms (runs of letters and digits, as FTS5's unicode61 tokenizer splits
  it, plus the pieces and joined forms of code identifiers, see :func:`code_terms`);
* the English stop-word list (:data:`STOP_WORDS`);
* how terms become a MATCH expression (:func:`quote_term`, :func:`match_expression`);
* what goes into the indexed-only ``search_aux`` column (:func:`index_aux_text`).

Invariant: every term this module returns is one run of letters/digits (no quotes, spaces or
operators), and every MATCH expression it builds is an OR of double-quoted strings, so no
input text can produce an FTS5 syntax error, a column filter or any other query operator.
The query side and the index side use the same identifier rules, so ``TokenRefresher``,
``token_refresher`` and ``token-refresher`` all meet at the term ``tokenrefresher``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence

# English function words: articles, pronouns, auxiliaries, prepositions, conjunctions and the
# commonest adverbs. Words that mean something in code (null, none, true, new, get, set, run,
# open, test, error, ...) are deliberately absent.
_STOP_WORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else even ever every few for from further had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it its
    itself just let me more most much must mustn my myself neither no nor not now of off often
    on once only or other ought our ours ourselves out over own per quite rather really same
    shall shan she should shouldn so some such than that the their theirs them themselves then
    there these they this those though through thus to too under until up upon us very via was
    wasn we were weren what whatever when whenever where whereas wherever whether which while
    who whom whose why will with within without won would wouldn yet you your yours yourself
    yourselves ll re ve s t d m
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORD_TEXT.split())

MAX_TERM_CHARS = 100
_MIN_TERM_CHARS = 2
_MAX_JOINED_PARTS = 8

# A run of letters/digits: what unicode61 keeps as one token ('_' and '-' separate tokens).
_TOKEN_RE = re.compile(r"[^\W_]+")
# Tokens glued by '_' or '-': snake_case, SCREAMING_CASE, kebab-case.
_COMPOUND_RE = re.compile(r"[^\W_]+(?:[-_]+[^\W_]+)*")
# Humps of a camelCase / PascalCase token; acronyms stay together (HTTPServer -> HTTP, Server).
_CAMEL_PART_RE = re.compile(r"[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z]+[0-9]*|[0-9]+")
_HAS_HUMP_RE = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
# Phrasal verbs whose noun form is the usual engineering word. Porter stemming already joins
# "timeouts"/"timeout" and "retried"/"retry"; it cannot join "timed out" with "timeout".
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), word)
    for pattern, word in (
        (r"\btim(?:e|es|ed|ing)[ \t]+out\b", "timeout"),
        (r"\bset(?:s|ting)?[ \t]+up\b", "setup"),
        (r"\bshut(?:s|ting)?[ \t]+down\b", "shutdown"),
        (r"\broll(?:s|ed|ing)?[ \t]+back\b", "rollback"),
        (r"\bback(?:s|ed|ing)?[ \t]+off\b", "backoff"),
        (r"\bfall(?:s|ing)?[ \t]+back\b|\bfell[ \t]+back\b", "fallback"),
        (r"\bclean(?:s|ed|ing)?[ \t]+up\b", "cleanup"),
        (r"\blog(?:s|ged|ging)?[ \t]+in\b", "login"),
        (r"\blog(?:s|ged|ging)?[ \t]+out\b", "logout"),
        (r"\bsign(?:s|ed|ing)?[ \t]+in\b", "signin"),
        (r"\bstart(?:s|ed|ing)?[ \t]+up\b", "startup"),
        (r"\blook(?:s|ed|ing)?[ \t]+up\b", "lookup"),
    )
)


# Matches wherever any of _PHRASES could (and in a few more places), in lower-cased text: one
# quick scan finds the texts with no phrasal verb at all, which are most of them.
_MAYBE_PHRASE_RE = re.compile(
    r"\b(?:tim(?:e|es|ed|ing)|set(?:s|ting)?|shut(?:s|ting)?|roll(?:s|ed|ing)?|"
    r"back(?:s|ed|ing)?|fall(?:s|ing)?|fell|clean(?:s|ed|ing)?|log(?:s|ged|ging)?|"
    r"sign(?:s|ed|ing)?|start(?:s|ed|ing)?|look(?:s|ed|ing)?)[ \t]+(?:up|down|back|off|out|in)\b")


def quote_term(term: str) -> str:
    """Quote `term` as an FTS5 string: inside quotes every character is literal text.

    A NUL would end the string early for FTS5's parser, so it becomes a space.
    """
    return '"' + term.replace("\x00", " ").replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str | None:
    """An OR of the quoted terms, or None when there is nothing to search for."""
    quoted = [quote_term(t) for t in terms if t]
    return " OR ".join(quoted) if quoted else None


def normalise_phrases(text: str) -> str:
    """Rewrite phrasal verbs to their one-word form ("timed out" -> "timeout")."""
    for pattern, word in _PHRASES:
        text = pattern.sub(word, text)
    return text


# Every place (overlapping ones too) where _MAYBE_PHRASE_RE matches: the candidate phrases.
_MAYBE_PHRASE_AT_RE = re.compile(f"(?=({_MAYBE_PHRASE_RE.pattern}))")


def phrase_forms(text: str) -> list[str]:
    """The one-word forms of the phrasal verbs that occur in `text`."""
    if not text.isascii():
        # casefold, not lower: under IGNORECASE a long s or a Kelvin sign is an ASCII letter.
        if not _MAYBE_PHRASE_RE.search(text.casefold()):
            return []
        return [word for pattern, word in _PHRASES if pattern.search(text)]
    # ASCII: a phrase occurs exactly where a candidate is the whole of its match (a phrase
    # and its candidate start at a word boundary and end at one), so the phrases are checked
    # against the few candidates found in one pass instead of searching the text for each.
    candidates = set(_MAYBE_PHRASE_AT_RE.findall(text.lower()))
    if not candidates:
        return []
    return [word for pattern, word in _PHRASES
            if any(pattern.fullmatch(candidate) for candidate in candidates)]


def _camel_parts(token: str) -> list[str]:
    if not _HAS_HUMP_RE.search(token):
        return []
    parts = _CAMEL_PART_RE.findall(token)
    return [p.lower() for p in parts] if len(parts) > 1 else []


def code_terms(text: str) -> Iterator[str]:
    """Every term of `text` in order, lower-cased, with identifier pieces and joined forms.

    For each token (a run of letters/digits) this yields the token itself, then the humps of
    a camelCase token; after a snake_case or kebab-case compound it yields the parts glued
    together. Nothing is filtered or de-duplicated here.
    """
    text = unicodedata.normalize("NFC", text)
    for compound in _COMPOUND_RE.finditer(text):
        yield from _compound_terms(compound.group(0))


def _compound_terms(compound: str) -> Iterator[str]:
    tokens = _TOKEN_RE.findall(compound)
    for token in tokens:
        yield token.lower()
        yield from _camel_parts(token)
    if 1 < len(tokens) <= _MAX_JOINED_PARTS:
        yield "".join(tokens).lower()


# ASCII text split by str.translate: every character that is not part of a token (or of a
# compound: tokens glued by '-' or '_') becomes a space. For ASCII, [^\W_] is [A-Za-z0-9].
_ASCII_NOT_TOKEN = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_ASCII_NOT_COMPOUND = str.maketrans(
    {chr(c): " " for c in range(128) if not (chr(c).isalnum() or chr(c) in "-_")})


def _rich_compounds(normalised: str) -> list[str]:
    """The compounds _COMPOUND_RE finds in `normalised` (NFC) that can give more than their
    own lower-cased tokens, each distinct one once, first seen first: glued by '-' or '_', or
    with a camelCase hump (every hump has an upper-case letter after the first character, so
    "word", "Word" and "2024" are left out). ASCII text is cut by str.translate instead (a
    run of letters, digits, '-' and '_' holds exactly one compound once its '-'/'_' ends are
    stripped), several times faster."""
    if normalised.isascii():
        runs = dict.fromkeys(normalised.translate(_ASCII_NOT_COMPOUND).split())
        compounds = [run.strip("-_") for run in runs if not run.islower() or "-" in run
                     or "_" in run]
    else:
        compounds = list(dict.fromkeys(_COMPOUND_RE.findall(normalised)))
    return [c for c in compounds
            if "_" in c or "-" in c or (c[1:] != c[1:].lower() and _HAS_HUMP_RE.search(c))]


def _plain_tokens(normalised: str) -> Iterable[str]:
    """The tokens of `normalised` (NFC), lower-cased."""
    if normalised.isascii():
        return normalised.lower().translate(_ASCII_NOT_TOKEN).split()
    return [t.lower() for t in _TOKEN_RE.findall(normalised)]


def _rich_terms(normalised: str) -> Iterator[str]:
    """code_terms(text) without most of its plain tokens: every term that is not one of the
    text's own tokens (lower-cased) comes out, in the same order (a repeated compound gives
    nothing new, so it is looked at once). `normalised` is the text in NFC."""
    for compound in _rich_compounds(normalised):
        yield from _compound_terms(compound)


def is_useful_term(term: str, stop_words: frozenset[str] = STOP_WORDS) -> bool:
    return _MIN_TERM_CHARS <= len(term) <= MAX_TERM_CHARS and term not in stop_words


def unique_terms(
    candidates: Iterable[str],
    max_terms: int,
    stop_words: frozenset[str] = STOP_WORDS,
    *,
    keep_stop_words_if_empty: bool = True,
) -> list[str]:
    """First-seen unique terms without stop words and one-character tokens.

    When that leaves nothing and `keep_stop_words_if_empty` is true, the filtered-out words
    are returned instead (a search for "the who" still searches for something).
    """
    kept: dict[str, None] = {}
    fallback: dict[str, None] = {}
    for term in candidates:
        if is_useful_term(term, stop_words):
            kept.setdefault(term)
            if len(kept) >= max_terms:
                break
        elif (
            keep_stop_words_if_empty
            and 0 < len(term) <= MAX_TERM_CHARS
            and len(fallback) < max_terms
        ):
            fallback.setdefault(term)
    return list(kept or fallback)[: max(0, max_terms)]


def search_terms(text: str, max_terms: int = 32) -> list[str]:
    """Terms for a free-text `memory.search` query (any text is accepted)."""
    return unique_terms(code_terms(normalise_phrases(text)), max_terms)


# Index side, pure-ASCII text. Each of _PHRASES as the tokens it needs (its verb's forms, its
# particle), in _PHRASES' order: a phrase occurs in ASCII text only where its verb form and its
# particle are tokens of that text (the phrase spans two whole tokens with only blanks between),
# so a record whose tokens hold no such pair has no phrase, and most records are answered by
# two set look-ups instead of a regular-expression scan.
_PHRASE_TOKENS: tuple[tuple[frozenset[str], str], ...] = tuple(
    (frozenset(verbs.split()), particle) for verbs, particle in (
        ("time times timed timing", "out"),
        ("set sets setting", "up"),
        ("shut shuts shutting", "down"),
        ("roll rolls rolled rolling", "back"),
        ("back backs backed backing", "off"),
        ("fall falls falling fell", "back"),
        ("clean cleans cleaned cleaning", "up"),
        ("log logs logged logging", "in"),
        ("log logs logged logging", "out"),
        ("sign signs signed signing", "in"),
        ("start starts started starting", "up"),
        ("look looks looked looking", "up"),
    ))
# In pure-ASCII text, a run of letters, digits, '-' and '_' (one compound) that has an
# upper-case letter or a '-'/'_' in it, matched whole: after the character before it (the text
# gets a leading space), lower-case letters and digits taken without backtracking, then the
# first such character, then the rest of the run. Runs without one (most words) fail at once.
_ASCII_RICH_RUN_RE = re.compile(r"[^\w-]([a-z0-9]*+[A-Z_-][\w-]*)", re.ASCII)


def _ascii_rich_compounds(text: str) -> list[str]:
    """_rich_compounds of pure-ASCII `text`, with the runs that can give more than their own
    tokens found by one regular expression instead of looking at every run."""
    picked = dict.fromkeys(_ASCII_RICH_RUN_RE.findall(" " + text))
    compounds = [run.strip("-_") for run in picked]
    return [c for c in compounds
            if "_" in c or "-" in c or (c[1:] != c[1:].lower() and _HAS_HUMP_RE.search(c))]


MEMO_COMPOUNDS = 2_000  # identifiers whose terms a compound memo keeps; emptied when full


def _memo_terms(compound: str, memo: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """_compound_terms(compound), remembered in `memo` (the same identifiers recur)."""
    terms = memo.get(compound)
    if terms is None:
        if len(memo) >= MEMO_COMPOUNDS:
            memo.clear()
        terms = memo[compound] = tuple(_compound_terms(compound))
    return terms


def _ascii_aux_words(sources: Sequence[str], plain: set[str],
                     memo: dict[str, tuple[str, ...]] | None) -> dict[str, None]:
    """index_aux_text's extra terms (identifier forms and phrase forms) of pure-ASCII
    `sources`, whose plain tokens are `plain`; `memo`: see index_aux_and_tokens."""
    maybe_phrase = any(particle in plain and not verbs.isdisjoint(plain)
                       for verbs, particle in _PHRASE_TOKENS)
    extra: dict[str, None] = {}
    for source in sources:
        if memo is None:
            terms = [term for compound in _ascii_rich_compounds(source)
                     for term in _compound_terms(compound)]
        else:
            terms = [term for compound in _ascii_rich_compounds(source)
                     for term in _memo_terms(compound, memo)]
        if maybe_phrase:
            terms += phrase_forms(source)
        for term in terms:
            if term not in plain and len(term) <= MAX_TERM_CHARS:
                extra.setdefault(term)
        if len(extra) >= _AUX_MAX_EXTRA_TERMS:
            break
    return extra


_AUX_MAX_PATHS = 50
_AUX_MAX_TAGS = 50
_AUX_MAX_ITEM_CHARS = 300
_AUX_MAX_EXTRA_TERMS = 300


def index_aux_text(
    title: str, body: str, paths: Sequence[str], tags: Sequence[str]
) -> str:
    """Text for the indexed-only ``search_aux`` column of a record.

    It holds the paths and tags (which may not appear in the body), and the identifier forms
    FTS5 would not produce from title and body on its own: camelCase humps, snake/kebab parts
    glued together, path stems, and one-word forms of phrasal verbs. Plain tokens already in
    title, body, paths or tags are left out so they are not counted twice. Bounded to a few KB.
    """
    return index_aux_and_tokens(title, body, paths, tags)[0]


def index_aux_and_tokens(
    title: str, body: str, paths: Sequence[str], tags: Sequence[str],
    memo: dict[str, tuple[str, ...]] | None = None,
) -> tuple[str, tuple[list[str], list[str]] | None]:
    """index_aux_text, and when title and body are pure ASCII their plain tokens in order
    (lower-cased: FTS5's tokens before stemming), which it cuts them into anyway. `memo`, a
    dictionary the caller keeps from record to record (bounded here), remembers the terms of
    the identifiers met in ASCII text."""
    paths = [str(p)[:_AUX_MAX_ITEM_CHARS] for p in list(paths)[:_AUX_MAX_PATHS]]
    tags = [str(t)[:_AUX_MAX_ITEM_CHARS] for t in list(tags)[:_AUX_MAX_TAGS]]
    texts = [t if isinstance(t, str) else "" for t in (title, body)]
    sources = [*paths, *tags, *texts]
    if all(s.isascii() for s in sources):  # NFC changes no ASCII text
        cut = [s.lower().translate(_ASCII_NOT_TOKEN).split() for s in sources]
        plain = set().union(*cut)
        words = list(_ascii_aux_words(sources, plain, memo))[:_AUX_MAX_EXTRA_TERMS]
        aux = "\n".join(part for part in (" ".join(paths), " ".join(tags), " ".join(words))
                         if part)
        return aux, (cut[-2], cut[-1])
    return _aux_text(paths, tags, sources), None


def _aux_text(paths: list[str], tags: list[str], sources: list[str]) -> str:
    normalised = [unicodedata.normalize("NFC", s) for s in sources]
    # Tokens FTS5 already gets from title, body and the verbatim paths and tags.
    plain = {t for s in normalised for t in _plain_tokens(s)}
    extra: dict[str, None] = {}
    for source, nfc in zip(sources, normalised, strict=True):
        # Plain tokens are all in `plain`: only identifier forms and phrases can be new.
        for term in (*_rich_terms(nfc), *phrase_forms(source)):
            if term not in plain and len(term) <= MAX_TERM_CHARS:
                extra.setdefault(term)
        if len(extra) >= _AUX_MAX_EXTRA_TERMS:
            break
    words = list(extra)[:_AUX_MAX_EXTRA_TERMS]
    return "\n".join(part for part in (" ".join(paths), " ".join(tags), " ".join(words)) if part)


_MAX_PHRASE_TOKENS = 16
# What separates two words of a query even without a space (`ECONNRESET,timeout`): marks that
# never join the parts of an identifier or a path.
_WORD_BREAK_RE = re.compile(r"[\s,;()\[\]{}<>\"'!?|]+")


def search_expression(text: str, max_terms: int = 32) -> str | None:
    """The MATCH expression for a free-text `memory.search` query: the OR of
    :func:`search_phrases`, or None when nothing is searchable."""
    return " OR ".join(search_phrases(text, max_terms)) or None


def search_phrases(text: str, max_terms: int = 32) -> list[str]:
    """The quoted FTS5 strings a free-text `memory.search` query searches for (OR-ed).

    A plain word is one term. An identifier or path (`ERR_CONN_RESET`,
    `src/auth/token_refresh.py`) is searched whole: as a phrase of its tokens in order, plus
    its glued form from the indexed aux column, but not as its separate parts, which are
    common words that would match most of the table and bury the hit. Words are split at
    white space and at marks no identifier holds (commas, semicolons, brackets, quotes), so a
    list such as `ECONNRESET,timeout` is two words. Stop words are dropped unless nothing
    else remains. Never raises; empty when nothing is searchable.
    """
    text = normalise_phrases(text)
    wanted: dict[str, None] = {}
    fallback: dict[str, None] = {}
    for word in _WORD_BREAK_RE.split(unicodedata.normalize("NFC", text)):
        tokens = [t.lower() for t in _TOKEN_RE.findall(word)][:_MAX_PHRASE_TOKENS]
        if len(tokens) == 1:
            if len(tokens[0]) <= MAX_TERM_CHARS:
                term = quote_term(tokens[0])
                (wanted if is_useful_term(tokens[0]) else fallback).setdefault(term)
            continue
        if tokens:
            wanted.setdefault(quote_term(" ".join(tokens)))
        for compound in _COMPOUND_RE.finditer(word):
            parts = _TOKEN_RE.findall(compound.group(0))
            if 1 < len(parts) <= _MAX_JOINED_PARTS:
                wanted.setdefault(quote_term("".join(parts).lower()))
    return list(wanted or fallback)[:max_terms]
