"""The retrieval query: which words of a work item are searched for, and which files it touches.

This module owns the mapping from a SPEC §5 ``Task`` to at most 32 search terms and to the list
of files used by the path boost. Pure functions: no SQL, no configuration.

Invariant: terms are lower-case runs of letters/digits (see :mod:`minionsd.ftsquery`), unique,
in first-seen order over the fields in this order: title, description, references,
failure_context, source_plan, files, pr.title, pr.body, pr.branch, pr.files. Stop words (English
function words plus the task boilerplate in :data:`TASK_BOILERPLATE`) are dropped, and so is a
plural after its singular (or the reverse). Unlike free-text search there is no fall-back: a
task made only of stop words has no terms, which retrieval reports as ``no_terms``. Fields of
the wrong type are ignored rather than rejected.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from minionsd.memory.retrieval import synonyms
from minionsd.memory.retrieval.cues import Cues, task_cues
from minionsd.memory.retrieval.taskwords import code_term_list, compounds, with_phrases
from minionsd.text.ftsquery import STOP_WORDS, is_useful_term
from minionsd.text.redact import redact
from minionsd.text.redact_prefix import redact_prefix

MAX_TERMS = 32
MAX_SYNONYM_TERMS = 6  # slots synonyms may take from the task's own last terms
MAX_FILES = 200

# Words that say "this is a task" rather than what it is about. Kept short on purpose: a word
# that only sometimes carries meaning (bug, error, test, request) stays searchable, because the
# candidate search already discounts terms that occur in most notes.
_BOILERPLATE_TEXT = """
    please pls thanks thank hi hello fix fixes fixed fixing issue issues task tasks ticket
    tickets todo implement implements implemented implementing ensure need needs needed want
    wants wanted make makes making sure like currently actually basically something anything
    everything thing things stuff able https www com etc eg ie
"""
TASK_BOILERPLATE: frozenset[str] = frozenset(_BOILERPLATE_TEXT.split())
# Words that tell the story of a task rather than name its subject ("probably", "never",
# "someone sees"). A memory uses them in few notes, so bm25 would weigh them like an error
# code; they are dropped from task text (notes are indexed unchanged).
_NARRATIVE_TEXT = """
    probably maybe perhaps somehow anyway instead again already still lately recently
    sometimes usually always never today yesterday tomorrow tonight morning afternoon evening
    someone somebody nobody everyone everybody anyone anybody people folks guys
    seem seems seemed appear appears appeared happen happens happened happening
    see sees saw seen show shows showed shown look looks looked looking
    tell tells telling told say says said think thought know knows knew guess
    come comes came coming become becomes became goes went gone grow grows grew
    lot lots bit bunch whole huge tiny many several right
"""
TASK_NARRATIVE: frozenset[str] = frozenset(_NARRATIVE_TEXT.split())
TASK_STOP_WORDS: frozenset[str] = STOP_WORDS | TASK_BOILERPLATE | TASK_NARRATIVE


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []


def _pr(task: Mapping[str, Any]) -> Mapping[str, Any]:
    pr = task.get("pr")
    return pr if isinstance(pr, Mapping) else {}


def normalise_path(path: str) -> str:
    """A repository-relative path in one spelling: '/' separators, no './', no trailing '/'."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if not path:
        return ""
    norm = posixpath.normpath(path)
    return "" if norm == "." else norm


def task_files(task: Mapping[str, Any]) -> list[str]:
    """The task's files and its PR's files, normalised, unique, in order."""
    if not isinstance(task, Mapping):
        return []
    files = _strings(task.get("files")) + _strings(_pr(task).get("files"))
    unique = dict.fromkeys(p for p in (normalise_path(f) for f in files) if p)
    return list(unique)[:MAX_FILES]


def _field_terms(text: str, is_path: bool) -> list[str]:
    """The terms of one (redacted) field in order, as ftsquery.code_terms gives them: of a
    text with its phrasal verbs in one word, of a path without its extension (py, ts, md: it
    says little about the topic and would use a term slot)."""
    if is_path:
        stem, _ext = posixpath.splitext(normalise_path(text))
        return code_term_list(stem or text)
    return code_term_list(with_phrases(text))


def _field_texts(task: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """(text, is_path) for every searchable field in query order."""
    yield _text(task.get("title")), False
    yield _text(task.get("description")), False
    for ref in _strings(task.get("references")):
        yield ref, False
    yield _text(task.get("failure_context")), False
    yield _text(task.get("source_plan")), False
    for path in _strings(task.get("files")):
        yield path, True
    pr = _pr(task)
    yield _text(pr.get("title")), False
    yield _text(pr.get("body")), False
    yield _text(pr.get("branch")), False
    for path in _strings(pr.get("files")):
        yield path, True


_MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
# Terms come from the head of each field: 32 terms are found long before its end, and
# redacting a megabyte on the event loop would stall every other client for a second.
FIELD_HEAD_CHARS = 16_384


def without_secrets(text: str) -> str:
    """`text` redacted, each marker left as a space: a token pasted into a task never becomes
    a stored term (SPEC §3.3 item 6), and the marker's own words (`redacted`, `key`) none.
    A text longer than FIELD_HEAD_CHARS is cut there (at a space, so no word is halved)."""
    if len(text) <= FIELD_HEAD_CHARS:
        return _MARKER_RE.sub(" ", redact(text))
    head = redact_prefix(text, FIELD_HEAD_CHARS)
    space = max(head.rfind(" "), head.rfind("\n"))
    return _MARKER_RE.sub(" ", head[:space] if space > 0 else head)


# At most this much of a task's text is redacted for its terms, however many fields it has.
TASK_REDACT_BUDGET = 262_144


def _own_terms(task: Mapping[str, Any], max_terms: int) -> list[str]:
    """The task's own terms: every field's terms in field order (its head, redacted, within
    TASK_REDACT_BUDGET), a plural after its singular or the reverse dropped (FTS5 stems both
    to one term, so the second spelling would only take a slot and count the same word twice
    in bm25), then stop words and one-character or overlong terms dropped, each term once, at
    most `max_terms`. Fields after the last one needed are not read."""
    kept: dict[str, None] = {}
    first_of: dict[str, str] = {}  # plural key -> the first spelling seen
    budget = TASK_REDACT_BUDGET
    for text, is_path in _field_texts(task):
        if not text:
            continue
        if budget <= 0:
            break
        budget -= min(len(text), 8 * FIELD_HEAD_CHARS)
        for term in _field_terms(without_secrets(text), is_path):
            if term in kept:  # it passed every test below when it was kept
                continue
            key = term[:-1] if len(term) > 3 and term[-1] == "s" and term[-2] != "s" else term
            if first_of.setdefault(key, term) != term or not is_useful_term(term,
                                                                            TASK_STOP_WORDS):
                continue
            kept[term] = None
            if len(kept) >= max_terms:
                return list(kept)[: max(0, max_terms)]
    return list(kept)


def _plural_key(term: str) -> str:
    return term[:-1] if len(term) > 3 and term.endswith("s") and not term.endswith("ss") else term


def task_terms(task: Mapping[str, Any], max_terms: int = MAX_TERMS) -> list[str]:
    """The search terms of a task (at most `max_terms`, possibly none): its own words, then
    the synonyms of the paraphrases it uses (:mod:`minionsd.retrieval.synonyms`), which may
    take up to MAX_SYNONYM_TERMS of the last slots."""
    if not isinstance(task, Mapping):
        return []
    own = _own_terms(task, max_terms)
    if not own:
        return own
    extra = synonym_terms(task, own)
    if not extra:
        return own
    room = max(0, max_terms - len(own))
    extra = extra[: max(room, min(MAX_SYNONYM_TERMS, max_terms // 4))]
    return own[: max_terms - len(extra)] + extra


def synonym_terms(task: Mapping[str, Any], own: list[str]) -> list[str]:
    """Synonyms of the task's words that are not among `own` (its terms), nor stop words, nor
    the plural or singular of one of them."""
    text = " ".join(text[:FIELD_HEAD_CHARS] for text, _is_path in _field_texts(task) if text)
    taken = {_plural_key(term) for term in own}
    return [term for term in synonyms.expansions(synonyms.words(text))
            if _plural_key(term) not in taken and is_useful_term(term, TASK_STOP_WORDS)]


# What names one thing rather than a topic: a snake- or kebab-case compound glued
# (ERR_CONN_RESET -> errconnreset), a token with a digit (429, e1234, v2) or a camelCase hump
# (TokenRefresher), as task_terms spells them. Words and compounds are found in one pass
# (taskwords.compounds) and sorted out by string methods (a pattern for the kinds themselves
# backtracks at every word).
_TOKEN_RE = re.compile(r"[^\W_]+")
_SEPARATORS = MappingProxyType(str.maketrans("", "", "-_"))


def naming_terms(task: Mapping[str, Any]) -> frozenset[str]:
    """The terms of a task that name one thing: identifiers, error codes, numbers and the
    task's file names glued (see above), lower-cased like task_terms, from the head of
    each field as the terms are. Whether one of them is rare in the memory is for the
    candidate search to say (only terms can be: a secret is never one)."""
    if not isinstance(task, Mapping):
        return frozenset()
    found: set[str] = set()
    paths: set[str] = set()
    for text, is_path in _field_texts(task):
        if not text:
            continue
        text = text[:FIELD_HEAD_CHARS]
        if is_path:  # the file's name, glued: src/token_refresh.py -> tokenrefresh
            if text not in paths:
                paths.add(text)
                name = text.replace("\\", "/").rstrip("/").rpartition("/")[2]
                found.add("".join(_TOKEN_RE.findall(posixpath.splitext(name)[0])).lower())
            continue
        for word in compounds(text):  # each distinct one once: the answer is a set
            if not word.isalnum():  # a compound, and its parts that name something
                found.add(word.translate(_SEPARATORS).lower())
                found.update(part.lower() for part in _TOKEN_RE.findall(word) if _names(part))
            elif _names(word):
                found.add(word.lower())
    return frozenset(found)


def _names(word: str) -> bool:
    """A token with a digit or a camelCase hump (not a capitalised or all-capital word)."""
    return not word.isalpha() or not (word.islower() or word.isupper() or word.istitle())


def cues(task: Mapping[str, Any]) -> Cues:
    """The dates and words of a task's free-text fields (:mod:`.cues`), for the date and
    author boosts."""
    if not isinstance(task, Mapping):
        return Cues()
    return task_cues(task, [text[:FIELD_HEAD_CHARS] for text, is_path in _field_texts(task)
                            if text and not is_path])
