"""The words of one task field, cut the way :mod:`minionsd.text.ftsquery` cuts them, faster.

Retrieval reads a task's fields on every call (terms, naming terms, cues), and most fields are
short ASCII text. These functions give exactly what the general ones give (the unit tests
compare them on arbitrary text) with fewer Python steps:

* ASCII text is cut by ``str.translate`` and ``split`` instead of a regular expression: every
  character that is neither a letter, a digit, ``-`` nor ``_`` becomes a space, and each run
  left holds exactly one compound (``[^\\W_]+(?:[-_]+[^\\W_]+)*``, what ftsquery calls one)
  once its ``-``/``_`` ends are stripped, or none when it is only ``-`` and ``_``.
* A plain word without a capital after its first letter has no camelCase hump, so its only
  term is itself lower-cased; anything else goes through ftsquery's own code.
* Of the phrasal verbs ("timed out"), only those an ASCII text holds are rewritten
  (:func:`with_phrases`).

Non-ASCII text always takes ftsquery's own path (case-folding and NFC differ there).
"""

from __future__ import annotations

import re

from minionsd.text.ftsquery import _PHRASES, code_terms, normalise_phrases, phrase_forms

# str.translate tables (a string, so nothing here is mutable): every ASCII character that is
# not part of a compound (letters, digits, '-', '_') becomes a space; in the second, every one
# that is not a letter or a digit.
_NOT_COMPOUND = "".join(c if c.isalnum() or c in "-_" else " " for c in map(chr, range(128)))
_COMPOUND_RE = re.compile(r"[^\W_]+(?:[-_]+[^\W_]+)*")
_NOT_TOKEN = "".join(c if c.isalnum() else " " for c in map(chr, range(128)))
_TOKEN_RE = re.compile(r"[^\W_]+")


def lower_words(text: str) -> list[str]:
    """The runs of letters and digits of `text` lower-cased, in order
    (``re.findall(r"[^\\W_]+", text.lower())``)."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.translate(_NOT_TOKEN).split()
    return _TOKEN_RE.findall(lowered)


def code_term_list(text: str) -> list[str]:
    """``list(ftsquery.code_terms(text))``."""
    if not text.isascii():
        return list(code_terms(text))
    out: list[str] = []
    add = out.append
    for run in text.translate(_NOT_COMPOUND).split():
        if run.isalnum():  # one token (for ASCII: letters and digits only)
            low = run.lower()
            if run[1:] == low[1:]:  # no capital after the first letter: no hump
                add(low)
            else:
                out.extend(code_terms(run))
        else:
            compound = run.strip("-_")
            if compound:
                out.extend(code_terms(compound))
    return out


def compounds(text: str) -> set[str]:
    """The distinct compounds of `text` (``set(re.findall(r"[^\\W_]+(?:[-_]+[^\\W_]+)*",
    text))``), for callers that need each one once in any order."""
    if not text.isascii():
        return set(_COMPOUND_RE.findall(text))
    found = {run.strip("-_") for run in text.translate(_NOT_COMPOUND).split()}
    found.discard("")
    return found


def with_phrases(text: str) -> str:
    """``ftsquery.normalise_phrases(text)``, trying only the phrases that occur in the text.

    normalise_phrases rewrites each phrase in turn, and a rewrite never makes another phrase
    occur: every phrase is two whole words (a verb form, then a particle after spaces or
    tabs), and the one word it becomes is neither a verb form nor a particle of any phrase.
    So the phrases that occur in the text as given (``phrase_forms``, exact for ASCII text) are
    the only ones whose rewrite can change it.
    """
    if not text.isascii():
        return normalise_phrases(text)
    forms = phrase_forms(text)
    if not forms:
        return text
    for pattern, word in _PHRASES:
        if word in forms:
            text = pattern.sub(word, text)
    return text
