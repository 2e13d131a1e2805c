"""Line numbers and context lines of hits (``grep -n``, ``-C N``), in the exact decoded text.

A line is what ``\\n`` separates in the text a hit's offsets count in: a transcript message's
exact text (each message counts from line 1) or a tool output's UTF-8 bytes decoded with
replacement. The text is streamed (the transcript parser's fragments; a tool output read a
megabyte at a time through an incremental decoder, which decodes as ``bytes.decode`` does), so
a gigabyte message costs a pass, not its size in memory; only the artifacts that have hits are
read, and only when a line or context is asked for. A context line longer than
:data:`LINE_CUT` code points is cut there and marked with ``…``.

Separate from the search: the search never counts lines (its hot path stays bytes), and this
module only reads what it is told has hits.
"""

from __future__ import annotations

import codecs
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Sequence

from ...formats.transcript import Fragment, MessageEnd, MessageStart, iter_transcript
from ...util.text import js_normalize
from .source import WINDOW, close_source, open_source, read_range, source_size

#: Code points of a context line kept (the rest is cut, marked ``…``).
LINE_CUT = 400
CUT_MARK = "…"


@dataclass(frozen=True)
class HitLines:
    """Where a hit is in lines: its start's line (1-based) and up to N whole lines on each side."""

    line: int
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()


class _Walk:
    """One text, fed in pieces: the line of each hit's start, the lines before it and the lines
    after the line its last character is on."""

    def __init__(self, spans: Sequence[tuple[int, int]], context: int) -> None:
        self.order = sorted(range(len(spans)), key=lambda i: spans[i])
        self.spans = spans
        self.context = context
        self.next = 0  # index into ``order``: the next hit whose start is ahead
        self.pos = 0  # code points consumed
        self.newlines = 0  # lines completed
        self.recent: deque[str] = deque(maxlen=context or 1)
        self.current: list[str] = []
        self.current_len = 0
        self.spanning: list[int] = []  # hits started, whose last character is ahead
        self.collecting: list[tuple[int, int]] = []  # (hit, first line number it collects)
        self.line: dict[int, int] = {}
        self.before: dict[int, tuple[str, ...]] = {}
        self.after: dict[int, list[str]] = {}

    def _idle(self, end: int) -> bool:
        """Nothing to do before ``end``: no hit starts there and nobody waits for lines."""
        return (not self.spanning and not self.collecting
                and (self.next >= len(self.order) or self.spans[self.order[self.next]][0] >= end))

    def feed(self, text: str) -> None:
        if not text:
            return
        end = self.pos + len(text)
        if self._idle(end):
            # The common case: count the lines, keep the last ones (and the open one) only.
            n = text.count("\n")
            if n:
                parts = text.rsplit("\n", self.context) if self.context else [text[text.rfind("\n") + 1 :]]
                if self.context:
                    head = parts[0]  # the first line this piece completes, or several ending in the one wanted
                    at = head.rfind("\n")
                    first = "".join(self.current) + head if at < 0 else head[at + 1 :]
                    for line in (first, *parts[1:-1]):
                        self.recent.append(_cut(line))
                self.current, self.current_len = [], 0
                self._add(parts[-1])
                self.newlines += n
            else:
                self._add(text)
            self.pos = end
            return
        k = 0
        while k < len(text):
            nl = text.find("\n", k)
            stop = len(text) if nl < 0 else nl
            self._add(text[k:stop])
            line_end = self.pos + stop  # the newline's offset (or the piece's end)
            while self.next < len(self.order) and self.spans[self.order[self.next]][0] <= line_end:
                if nl < 0 and self.spans[self.order[self.next]][0] == line_end:
                    break  # starts in the next piece
                h = self.order[self.next]
                self.next += 1
                self.line[h] = self.newlines + 1
                self.before[h] = tuple(self.recent) if self.context else ()
                self.spanning.append(h)
            still = []
            for h in self.spanning:
                if self.spans[h][1] - 1 <= line_end and (nl >= 0 or self.spans[h][1] - 1 < line_end):
                    if self.context:
                        self.collecting.append((h, self.newlines + 2))
                else:
                    still.append(h)
            self.spanning = still
            if nl < 0:
                break
            self._complete()
            k = nl + 1
        self.pos = end

    def _add(self, piece: str) -> None:
        if self.current_len <= LINE_CUT and piece:
            self.current.append(piece[: LINE_CUT + 1 - self.current_len])
            self.current_len += min(len(piece), LINE_CUT + 1 - self.current_len)

    def _complete(self) -> None:
        line = _cut("".join(self.current))
        self.newlines += 1
        number = self.newlines
        if self.context:
            self.recent.append(line)
        kept = []
        for h, first in self.collecting:
            if number >= first:
                self.after.setdefault(h, []).append(line)
            if len(self.after.get(h, ())) < self.context:
                kept.append((h, first))
        self.collecting = kept
        self.current, self.current_len = [], 0

    def finish(self) -> list[HitLines]:
        if self.current and self.collecting:
            self._complete()  # the last line, without a newline after it
        for h in self.spanning:  # cut off: the text ended inside the hit
            self.line.setdefault(h, self.newlines + 1)
        return [HitLines(self.line.get(i, self.newlines + 1), self.before.get(i, ()),
                         tuple(self.after.get(i, ())[: self.context])) for i in range(len(self.spans))]


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CUT else line[:LINE_CUT] + CUT_MARK


def text_lines(pieces: Iterable[str], spans: Sequence[tuple[int, int]], context: int = 0) -> list[HitLines]:
    """:class:`HitLines` of each span (code points) of the text ``pieces`` make."""
    walk = _Walk(spans, context)
    for piece in pieces:
        walk.feed(piece)
    return walk.finish()


def tool_output_lines(path: str, spans: Sequence[tuple[int, int]], context: int = 0) -> list[HitLines]:
    """:class:`HitLines` in a tool output's text (its bytes decoded with replacement)."""
    handle = open_source(path)
    try:
        size = source_size(handle)

        def pieces() -> Iterable[str]:
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            pos = 0
            while pos < size:
                chunk = read_range(handle, min(WINDOW, size - pos), pos)
                if not chunk:
                    break
                pos += len(chunk)
                yield decoder.decode(chunk, final=pos >= size)
            yield decoder.decode(b"", final=True)

        return text_lines(pieces(), spans, context)
    finally:
        close_source(handle)


def transcript_lines(path: str, hits: Sequence[tuple[int, int, int]], context: int = 0) -> list[HitLines]:
    """:class:`HitLines` of ``(message, start, end)`` hits in a transcript: each message's text
    counts its own lines from 1."""
    by_message: dict[int, list[int]] = {}
    for i, (k, _, _) in enumerate(hits):
        by_message.setdefault(k, []).append(i)
    out: list[HitLines | None] = [None] * len(hits)
    walk: _Walk | None = None
    members: list[int] = []
    high = ""  # a high surrogate ending a fragment: the next one's first code point may pair with it
    for ev in iter_transcript(path):
        if isinstance(ev, MessageStart):
            members = by_message.get(ev.index, [])
            walk = _Walk([hits[i][1:] for i in members], context) if members else None
            high = ""
        elif isinstance(ev, Fragment) and walk is not None:
            # The message's text pairs surrogates across fragment lines (an astral character
            # cut in two is one code point): pieces are joined the same way before counting.
            piece = high + "".join(ev.texts)
            high = piece[-1] if piece and "\ud800" <= piece[-1] <= "\udbff" else ""
            walk.feed(js_normalize(piece[: len(piece) - len(high)]))
        elif isinstance(ev, MessageEnd) and walk is not None:
            walk.feed(high)
            for i, got in zip(members, walk.finish()):
                out[i] = got
            walk = None
        if walk is None and all(x is not None for x in out):
            break
    if walk is not None:  # the transcript ended inside a message (cut off)
        walk.feed(high)
        for i, got in zip(members, walk.finish()):
            out[i] = got
    return [x if x is not None else HitLines(1) for x in out]
