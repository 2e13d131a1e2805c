"""Searching a whole message (or tool output) as UTF-8 bytes, in one pass.

The window-by-window search (:mod:`.message`) decodes every window to a ``str`` for a regex
and counts offsets as it goes: over a dense root that decoding, not the regex, is the search's
cost (0.7 s of 3 s over 1 GB). A text that fits in memory (:data:`WHOLE_MAX`) whose bytes the
native scanner takes as plain UTF-8 (a tool output as it is on disk; a message once its fragment
lines are joined and its escapes undone in C, ``native.message_text``) is searched here instead:
RE2 runs on its bytes (it takes UTF-8), a fixed string is a ``memmem``, and only each hit's
offsets and context are worked out in Python. The text is then exactly what the decoder gives,
so the hits are the window search's; anything the C decoder declines (a lone surrogate, a raw
control or quote, invalid UTF-8) goes the window way, which says what is wrong with it. A fixed
string ignoring case keeps Python's case folding (not RE2's): only the stretches around its
ASCII part, found in C, are decoded for it.
"""

from __future__ import annotations

import os
import threading
from itertools import islice
from typing import Callable, Iterator, Union

from ...util import native
from ...util.text import js_normalize
from .pattern import Matcher, Pattern, _Re2
from .records import CONTEXT, MessageHit, _hit


def _whole_max(default: int = 64 << 20) -> int:
    try:
        return int(os.environ.get("SPILLSCOPE_WHOLE_MAX") or default)
    except ValueError:
        return default  # a stray value in the environment never stops a search


#: The largest text searched whole (bytes read at once); ``SPILLSCOPE_WHOLE_MAX`` sets it
#: (0: always window by window, as the tests of that path ask).
WHOLE_MAX = _whole_max()

#: Bytes of text on each side of a hit decoded for its context: at least CONTEXT code points.
_CONTEXT_BYTES = CONTEXT * 4

#: A text's UTF-8 bytes: a view of a reused buffer (see :class:`Buffers`) where it can be.
Text = Union[bytes, bytearray, memoryview]
Spans = Callable[[Text], Iterator[tuple[int, int]]]


def byte_spans(pattern: Pattern, compiled: Matcher) -> Spans | None:
    """How to find ``pattern``'s matches in UTF-8 bytes (non-overlapping, leftmost first, as
    the text search finds them), or None where only the text search can."""
    nat = native.NATIVE
    if nat is None or WHOLE_MAX <= 0:
        return None
    if isinstance(compiled, _Re2):
        return compiled.byte_spans
    if pattern.regex:
        return None
    if pattern.ignore_case:
        return _folded_literal(pattern, compiled)
    try:
        needle = js_normalize(pattern.text).encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate: never in the bytes this path takes

    def literal(data: Text) -> Iterator[tuple[int, int]]:
        find, n = nat.find, len(needle)
        p = find(data, needle, 0)
        while p >= 0:
            yield p, p + n
            p = find(data, needle, p + n)

    return literal


def _folded_literal(pattern: Pattern, compiled: Matcher) -> Spans | None:
    """A fixed string ignoring case (Python's folding, one character for one): its matches hold
    its ASCII part (:attr:`Pattern.required`) found ignoring ASCII case, and a match is as
    many code points as the string; so only the text around each place that part is found
    (at most 4 bytes a code point each side, places close together taken as one stretch) is
    decoded and searched, resuming after the last match as a search of the whole text does."""
    nat = native.NATIVE
    req = pattern.required
    if nat is None or req is None or not pattern.required_folded:
        return None
    part = req.encode("ascii")
    width = 4 * len(js_normalize(pattern.text))

    def spans(data: Text) -> Iterator[tuple[int, int]]:
        find_ci, size, m = nat.find_ci, len(data), len(part)
        last_end = 0
        p = find_ci(data, part, 0)
        while p >= 0:
            hi = min(size, p + m + width)
            q = find_ci(data, part, p + 1)
            while 0 <= q <= hi + width:  # the next place's stretch meets this one: one stretch
                hi = min(size, q + m + width)
                q = find_ci(data, part, q + 1)
            lo = max(last_end, p - width)
            while lo > last_end and data[lo] & 0xC0 == 0x80:
                lo -= 1  # a character's first byte (further out: the stretch only grows)
            while hi < size and data[hi] & 0xC0 == 0x80:
                hi += 1
            seg = str(data[lo:hi], "utf-8")
            at_cp, at_b = 0, lo
            for s, e in compiled.spans(seg, 0):
                start = at_b + len(seg[at_cp:s].encode("utf-8"))
                end = start + len(seg[s:e].encode("utf-8"))
                at_cp, at_b = e, end
                yield start, end
                last_end = end
            p = q

    return spans


class Buffers:
    """The buffers a search of one file reads into and decodes into, reused from file to file
    (taken from a small pool, given back on :meth:`close`): a fresh object per file or message
    cost more in page faults than the work on its bytes. Buffers only grow; views of them
    (:class:`memoryview`) are valid until the next read or decode."""

    _pool: list[bytearray] = []
    _lock = threading.Lock()

    def __init__(self) -> None:
        with Buffers._lock:
            pool = Buffers._pool
            self.raw = pool.pop() if pool else bytearray()
            self.text = pool.pop() if pool else bytearray()

    def _sized(self, name: str, size: int) -> bytearray:
        buf: bytearray = getattr(self, name)
        if len(buf) < size:
            # No copy of old bytes; a little room to grow, but never past what the pool keeps.
            buf = bytearray(max(size, min(size + (size >> 3), KEEP)))
            setattr(self, name, buf)
        return buf

    def read(self, fd: int, size: int) -> memoryview | None:
        """The local file ``fd``'s first ``size`` bytes (None if it has fewer now)."""
        buf = self._sized("raw", size)
        view = memoryview(buf)[:size]
        if os.preadv(fd, [view], 0) != size:
            return None
        return view

    def message_text(self, raw: memoryview, start: int, end: int) -> tuple[memoryview, tuple[int, int]] | None:
        """The UTF-8 text of the fragment lines ``raw[start:end]`` (see the module) and its
        (code points, bytes), or None."""
        nat = native.NATIVE
        assert nat is not None
        buf = self._sized("text", end - start)
        n, cps = nat.message_text(raw, start, end, buf)
        return None if n < 0 else (memoryview(buf)[:n], (cps, n))

    def close(self) -> None:
        with Buffers._lock:
            pool = Buffers._pool
            for buf in (self.raw, self.text):
                if len(pool) < POOL and len(buf) <= KEEP:
                    pool.append(buf)
        self.raw = self.text = bytearray()


#: Buffers kept for reuse (two per file searched at once), and the biggest kept.
POOL, KEEP = 6, 16 << 20


def plain_text(data: memoryview) -> tuple[int, int] | None:
    """A tool output's (code points, UTF-8 bytes) where its bytes are its text as they are
    (valid UTF-8), else None."""
    nat = native.NATIVE
    return None if nat is None else nat.utf8_stats(data)


#: Hits handed on together (a run) unless the caller says how many: a dense pattern's hits are
#: tens of thousands, and each layer above (the message, the artifact, the root) then takes a
#: list, not a hit at a time. A reader that shows each hit as it is found asks for runs of one.
RUN = 256


def hit_runs(data: Text, spans: Spans, limit: int | None, cancelled: Callable[[], bool] = lambda: False,
             context: bool = True, counts: tuple[int, int] | None = None, run_size: int = RUN
             ) -> Iterator[list[MessageHit]]:
    """The hits of ``spans`` in the valid UTF-8 ``data``, with code point and byte offsets and
    (``context``) the match and the context each side (up to ``limit``), in order, in lists
    of up to ``run_size``. ``counts``: the data's (code points, bytes) where the caller has
    them already (:func:`plain_text`)."""
    nat = native.NATIVE
    assert nat is not None
    stats = nat.utf8_stats
    found = 0
    at_b = at_cp = 0  # the last position mapped: byte offset and code points before it
    size = len(data)
    if limit is not None and limit <= 0:
        return
    whole = counts if counts is not None else stats(data)
    # ASCII (code points as many as bytes): a byte offset is a code point offset and every
    # byte starts a character, so each hit costs no count and no walk to a character's start
    # (a dense regex over ASCII tool outputs: a third of its time per hit).
    ascii = whole is not None and whole[0] == size
    run: list[MessageHit] = []
    hit = tuple.__new__  # a MessageHit made without its generated __new__'s call (half the time)
    if ascii and not context and limit is None:
        # Offsets are the byte offsets and no text is kept: a run at a time, nothing per hit
        # but its record (a dense -E over ASCII tool outputs); cancelled asked once a run.
        found_spans = spans(data)
        while run := [hit(MessageHit, (s, e, s, e, "", "", "")) for s, e in islice(found_spans, run_size)]:
            yield run
            if cancelled():
                return
        return
    for s, e in spans(data):
        if ascii:
            start, end = s, e
        else:
            got = stats(data, at_b, s)
            assert got is not None
            start = at_cp + got[0]
            got = stats(data, s, e)
            assert got is not None
            end = start + got[0]
            at_b, at_cp = e, end
        if not context:
            run.append(hit(MessageHit, (start, end, s, e, "", "", "")))
        else:
            lo = max(0, s - _CONTEXT_BYTES)
            hi = min(size, e + _CONTEXT_BYTES)
            if not ascii:
                while lo < s and data[lo] & 0xC0 == 0x80:
                    lo += 1  # a character's first byte
                while hi < size and data[hi] & 0xC0 == 0x80:
                    hi -= 1
            run.append(_hit(start, end, s, e, str(data[lo:s], "utf-8"), str(data[s:e], "utf-8"),
                            str(data[e:hi], "utf-8")))
        found += 1
        if (limit is not None and found >= limit) or (found & 1023 == 0 and cancelled()):
            break
        if len(run) >= run_size:
            yield run
            run = []
    if run:
        yield run
