"""Generate minionsd/confusables.py, the fence's look-alike table, from Unicode confusables.txt.

    python scripts/gen_confusables.py confusables.txt > minionsd/confusables.py
    python scripts/gen_confusables.py confusables.txt --list     # one line per character

confusables.txt is the data file of Unicode Technical Standard #39 (Unicode Security
Mechanisms), https://www.unicode.org/Public/security/<version>/confusables.txt. Each line maps
a source character to its prototype, the string every character a reader could mistake for it
also maps to. The fence (minionsd/fence.py) looks for `<UNTRUSTED-INPUT` and
`</UNTRUSTED-INPUT` as a reader sees them, so it needs, for every character, the ASCII
character of the tag it reads as: the brackets `<` and `>`, the slashes `/` and `\\`, the
dash `-`, or a letter of UNTRUSTED INPUT in either case.

What is kept from the data: every source whose prototype is one of those characters, where the
prototype of `I` is `l` (so `l`, `1`, `|` and the capital-I look-alikes all read as the letter
i). A prototype of two or more bracket or slash characters (`≪` is `<<`) reads as one. Two
groups the data keeps apart are joined on purpose (EXTRA_PROTOTYPES below): the angle brackets
whose prototype is an ornament (`〈` `⟨` go to `❬`), the long dashes (`—` goes to `ー`), and
the Greek and Cyrillic letters whose prototype is a small capital or a barred letter (`т` and
`τ` go to `ᴛ`, `ε` to `ꞓ`). EXTRA_CHARS adds the few characters the data has no entry for that
the fence folded before the table existed, and extra_letters() the tag letters with a stroke,
bar or hook and the enclosed capitals that have no decomposition. The runtime first applies
NFKD per character and drops marks and other invisible characters, so keys are stored in that
form; OPEN and CLOSE list every code point (all of Unicode, as this Python's unicodedata
knows it) whose form starts with a character that reads as a bracket.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import unicodedata
from pathlib import Path

LETTERS = "untrsedip"
# Prototype (as confusables.txt spells it) -> the ASCII character of the tag it reads as.
DATA_PROTOTYPES = {
    **{ch: ch for ch in LETTERS}, **{ch.upper(): ch for ch in LETTERS},
    "l": "i",  # the prototype of "I"
    "<": "<", ">": ">", "/": "/", "\\": "/", "-": "-",
}
EXTRA_PROTOTYPES = {
    "\u276c": "<", "\u276d": ">",  # angle-bracket ornaments: 〈 ⟨ 〈 go to ❬
    "\u30fc": "-",  # KATAKANA PROLONGED SOUND MARK: em dash, horizontal bar, box line
    "\u1d1b": "t",  # LATIN LETTER SMALL CAPITAL T: Cyrillic te, Greek tau
    "\ua793": "e",  # LATIN SMALL LETTER C WITH BAR: Greek epsilon, Cyrillic ukrainian ie
}
EXTRA_CHARS = {
    "\u226e": "<", "\u22d6": "<", "\u27ea": "<", "\u2770": "<", "\u29d8": "<", "\u29fc": "<",
    "\u226f": ">", "\u22d7": ">", "\u27eb": ">", "\u2771": ">", "\u29d9": ">", "\u29fd": ">",
    "_": "-", ".": "-",  # UNTRUSTED_INPUT and UNTRUSTED.INPUT read as the tag name
    "\u0274": "n", "\u0280": "r", "\u1d07": "e", "\u1d05": "d", "\u1d18": "p",  # small caps
    "\ua646": "i",  # CYRILLIC CAPITAL LETTER IOTA (its small form is in the data)
}
# Letters the data has no entry for and NFKD does not take apart, that a reader still takes for
# a letter of the tag (see extra_letters).
_DECORATED_RE = re.compile(r"LATIN (?:CAPITAL|SMALL) LETTER ([A-Z])(?: WITH .+| BAR)")
_LATIN_BLOCKS = ((0x0180, 0x02B0), (0x1D00, 0x1DC0), (0x1E00, 0x1F00), (0x2C60, 0x2C80),
                 (0xA720, 0xA800), (0xAB30, 0xAB70), (0x10780, 0x107C0), (0x1DF00, 0x1E000))
_ENCLOSED_CAPITALS = (0x1F150, 0x1F170, 0x1F1E6)  # negative circled, negative squared, regional


def extra_letters() -> dict[str, str]:
    """Look-alikes outside the data: a tag letter with a stroke, bar, hook or tail that NFKD
    keeps whole (`Ʉ`, `ɨ`, `ŧ`, `đ`), and the enclosed capitals without a decomposition
    (negative circled 🅤, negative squared 🆄, regional indicators 🇺)."""
    found: dict[str, str] = {}
    for lo, hi in _LATIN_BLOCKS:
        for cp in range(lo, hi):
            m = _DECORATED_RE.fullmatch(unicodedata.name(chr(cp), ""))
            if (m and m.group(1).lower() in LETTERS
                    and unicodedata.normalize("NFKD", chr(cp)) == chr(cp)):
                found[chr(cp)] = m.group(1).lower()
    for cp in (0x0110, 0x0111, 0x0126, 0x0127, 0x0166, 0x0167):  # Latin Extended-A: Đ đ Ħ ħ Ŧ ŧ
        m = _DECORATED_RE.fullmatch(unicodedata.name(chr(cp)))
        if m and m.group(1).lower() in LETTERS:
            found[chr(cp)] = m.group(1).lower()
    for start in _ENCLOSED_CAPITALS:
        for i, letter in enumerate("abcdefghijklmnopqrstuvwxyz"):
            if letter in LETTERS:
                found[chr(start + i)] = letter
    return found


_LINE_RE = re.compile(r"^\s*([0-9A-F]+)\s*;\s*([0-9A-F ]+?)\s*;")


def read_confusables(path: Path) -> tuple[dict[str, str], str]:
    """(source -> prototype, header 'Version: ... Date: ...') from a confusables.txt file."""
    table: dict[str, str] = {}
    version = date = "?"
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        if line.startswith("# Version:"):
            version = line.split(":", 1)[1].strip()
        elif line.startswith("# Date:"):
            date = line.split(":", 1)[1].strip()
        m = _LINE_RE.match(line)
        if m:
            table[chr(int(m.group(1), 16))] = "".join(chr(int(x, 16)) for x in m.group(2).split())
    return table, f"Version {version}, dated {date}"


def reading(prototype: str, prototypes: dict[str, str]) -> str | None:
    if prototype in prototypes:
        return prototypes[prototype]
    if len(prototype) > 1 and len(set(prototype)) == 1 and prototype[0] in "<>/\\":
        return prototypes[prototype[0]]  # "≪" is "<<": a bracket all the same
    return None


def build(table: dict[str, str]) -> dict[str, str]:
    """Character (NFKD, marks dropped) -> ASCII reading, for every look-alike of the tag's
    characters."""
    prototypes = {**DATA_PROTOTYPES, **EXTRA_PROTOTYPES}
    reader: dict[str, str] = {}
    sources = [(p, p) for p in prototypes] + list(table.items())
    for source, prototype in sources:
        target = reading(prototype, prototypes)
        if target is None:
            continue
        key = _visible(unicodedata.normalize("NFKD", source))
        if len(key) != 1 or key.casefold() == target:
            continue  # several characters after NFKD (read one by one), or read as itself
        if key.isspace() or (key.isascii() and key != source):
            continue  # "\u00b4" is " " + a mark: the space reads as a space, not as its mark
        if reader.get(key, target) != target:
            raise SystemExit(f"conflict for U+{ord(key):04X}: {reader[key]!r} / {target!r}")
        reader[key] = target
    for ch, target in {**EXTRA_CHARS, **extra_letters()}.items():
        reader.setdefault(ch, target)
    return reader


def _visible(text: str) -> str:
    """`text` without marks, format and control characters (as the fence's _is_invisible)."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Mn", "Me")
                   and (unicodedata.category(ch) != "Cc" or ch in "\t\n\x0b\x0c\r"))


def bracket_chars(reader: dict[str, str], bracket: str) -> str:
    """Every code point whose NFKD form starts with a character that reads as `bracket`."""
    found = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        first = _visible(unicodedata.normalize("NFKD", ch))[:1]
        if first and (first == bracket or reader.get(first) == bracket):
            found.append(ch)
    return "".join(found)


def _escaped(chars: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else f"\\U{ord(c):08x}" if ord(c) > 0xFFFF
                   else f"\\u{ord(c):04x}" for c in chars)


def _wrapped(name: str, chars: str) -> list[str]:
    body = _escaped(chars)
    pieces = re.findall(r"\\U[0-9a-f]{8}|\\u[0-9a-f]{4}|.", body)
    lines, line = [], ""
    for piece in pieces:
        if len(line) + len(piece) > 84:
            lines.append(f'    "{line}"')
            line = ""
        line += piece
    lines.append(f'    "{line}"')
    return [f"{name} = (", *lines, ")"]


def render(reader: dict[str, str], source: Path, header: str) -> str:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    by_target: dict[str, str] = {}
    for ch in sorted(reader):
        by_target[reader[ch]] = by_target.get(reader[ch], "") + ch
    out = [
        '"""Look-alikes of the fence tag\'s characters, for minionsd/fence.py (data only).',
        "",
        "GENERATED, do not edit by hand. Source: Unicode confusables.txt (UTS #39 security data),",
        f"{header}, sha256 {digest[:16]}...; Python unicodedata",
        f"{unicodedata.unidata_version}. Regenerate with",
        "    python scripts/gen_confusables.py confusables.txt > minionsd/confusables.py",
        "(the script's docstring says what is kept and which groups are joined on purpose).",
        "",
        "READER maps a character, in its NFKD form without marks, to the ASCII character of the",
        "fence tag a reader takes it for: `<`, `>`, `/` (slashes and backslashes), `-`, or a",
        "lower-case letter of UNTRUSTED INPUT. OPEN and CLOSE hold every code point whose NFKD",
        "form starts with a character that reads as `<` or `>`.",
        '"""',
        "",
    ]
    names = []
    for target in sorted(by_target):
        name = "_READS_AS_" + {"<": "LT", ">": "GT", "/": "SLASH", "-": "DASH"}.get(
            target, target.upper())
        names.append((name, target))
        out += _wrapped(name, by_target[target])
    out.append("READER: dict[str, str] = {")
    for name, target in names:
        out.append(f"    **dict.fromkeys({name}, {target!r}),")
    out.append("}")
    out += _wrapped("OPEN", bracket_chars(reader, "<"))
    out += _wrapped("CLOSE", bracket_chars(reader, ">"))
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("confusables", type=Path, help="path to confusables.txt")
    parser.add_argument("--list", action="store_true", help="list the table, one char a line")
    args = parser.parse_args()
    table, header = read_confusables(args.confusables)
    reader = build(table)
    if args.list:
        for ch in sorted(reader, key=lambda c: (reader[c], c)):
            print(f"U+{ord(ch):04X}\t{ch}\t{reader[ch]}\t{unicodedata.name(ch, '?')}")
        return
    sys.stdout.write(render(reader, args.confusables, header))


if __name__ == "__main__":
    main()
