"""Messages a user reads (the console, a job's events, a cause, bench.md), shortened only where they must be.

`clip` keeps a text whole when it fits and otherwise cuts it at a word boundary and
says so with "…": a cause or a gate's feedback is never cut mid-word. The cap is in
characters, or in UTF-8 bytes (`encoding="utf-8"`) where storage counts bytes.
"""
from __future__ import annotations

ELLIPSIS = "…"


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) as one space."""
    return " ".join(str(text).split())


def clip(text: str, limit: int, *, encoding: str | None = None, note: str = "") -> str:
    """`text` whole if it is at most `limit` long; else its longest start that ends a word, then "…" and `note`.

    The result, note included, is never longer than `limit` (characters, or bytes of `encoding`).
    A single word longer than the limit is cut inside it (there is no boundary to cut at).
    """
    text = str(text)

    def size(s: str) -> int:
        return len(s.encode(encoding)) if encoding else len(s)

    if size(text) <= limit:
        return text
    tail = ELLIPSIS + note
    room = limit - size(tail)
    if room <= 0:
        return ELLIPSIS if size(ELLIPSIS) <= limit else ""
    head = text[:room] if not encoding else text.encode(encoding)[:room].decode(encoding, "ignore")
    if len(head) < len(text) and not text[len(head)].isspace():
        boundary = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        if boundary > 0:
            head = head[:boundary]
    return head.rstrip() + tail
