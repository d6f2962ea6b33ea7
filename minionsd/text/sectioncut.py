"""Cut one Markdown section that alone exceeds a byte bound, at a line boundary.

The section keeps its first line (its heading), then a visible notice saying how many lines
were left out, then its newest (last) whole lines that fit. Text never starts mid-word: when
not even the last line fits, that line's tail is kept from the start of a word, and when the
heading alone is too long it is cut at the end of a word. Pure functions.
"""

from __future__ import annotations

from minionsd.text.textcut import utf8_len


def cut_notice(left_out: int, shortened: str = "") -> str:
    """The line a cut section shows after its heading; `shortened` names a part kept in part
    ("the start of the last line" left out, "the end of the heading" left out)."""
    lines = f"{left_out} earlier line{'s' if left_out != 1 else ''} left out"
    if shortened:
        lines += f", and {shortened}"
    return f"_[this section was cut to fit: {lines}]_\n"


def _is_lead(line: str) -> bool:
    """A line before a section's heading: blank, or a thematic break such as `---`."""
    bare = line.strip().replace(" ", "")
    return not bare or (len(bare) >= 3 and len(set(bare)) == 1 and bare[0] in "-*_")


def _word_tail(line: str, max_bytes: int) -> str:
    """The longest tail of `line` within max_bytes that starts at the start of a word."""
    data = line.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return line
    tail = data[len(data) - max(0, max_bytes):].decode("utf-8", "ignore")
    cut_at = len(line) - len(tail)
    if cut_at > 0 and not line[cut_at - 1].isspace():
        space = next((i for i, ch in enumerate(tail) if ch.isspace()), len(tail))
        tail = tail[space:]
    tail = tail.lstrip()
    return tail if tail.strip() else ""


def _word_head(line: str, max_bytes: int) -> str:
    """The longest head of `line` within max_bytes that ends at the end of a word, + newline."""
    room = max(0, max_bytes - 1)
    head = line.rstrip("\n").encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
    full = line.rstrip("\n")
    if len(head) < len(full) and not full[len(head)].isspace():
        space = max((i for i, ch in enumerate(head) if ch.isspace()), default=0)
        head = head[:space]
    head = head.rstrip()
    return head + "\n" if head else ""


def cut_section(section: str, max_bytes: int) -> str:
    """`section` within max_bytes UTF-8 bytes (itself when it fits), cut as the module says;
    "" when not even part of its heading and the notice fit."""
    if utf8_len(section) <= max_bytes:
        return section
    lines = section.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if not _is_lead(line)), 0)
    lead = "".join(lines[:first])
    heading, body = lines[first], lines[first + 1:]
    if not heading.endswith("\n"):
        heading += "\n"
    if utf8_len(lead) + utf8_len(heading) + utf8_len(cut_notice(len(body))) > max_bytes:
        lead = ""  # the separator before the heading goes first
    kept: list[str] = []
    size = 0
    heading = lead + heading
    for line in reversed(body):
        left_out = len(body) - len(kept) - 1
        if utf8_len(heading) + utf8_len(cut_notice(left_out)) + size + utf8_len(line) > max_bytes:
            break
        kept.insert(0, line)
        size += utf8_len(line)
    left_out = len(body) - len(kept)
    notice = cut_notice(left_out)
    if utf8_len(heading) + utf8_len(notice) > max_bytes:  # the heading alone is too long
        notice = cut_notice(len(body), "the end of the heading")
        heading = _word_head(heading, max_bytes - utf8_len(notice))
        return heading + notice if heading else ""
    if not kept and body and body[-1].strip():
        # Not one whole line fits: the last line's words that do, said in the notice.
        shorter = cut_notice(len(body) - 1, "the start of the last line")
        tail = _word_tail(body[-1], max_bytes - utf8_len(shorter) - utf8_len(heading))
        if tail:
            return heading + shorter + tail
    return heading + notice + "".join(kept)
