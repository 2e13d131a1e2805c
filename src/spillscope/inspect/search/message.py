"""Searching one message (or tool output) window by window, counting offsets as it goes.

:class:`_MessageSearch` takes windows from a reader (transcript fragment lines or plain UTF-8)
through a codec, searches escaped bytes for a fixed string where the escapes are canonical and
decoded text otherwise. Separate from the readers, which only cut a file into windows.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, NamedTuple, Protocol

from ...util import native
from ...util.text import js_normalize, utf8_len
from .pattern import REGEX_OVERLAP, Matcher, Pattern
from .records import CONTEXT, MessageHit, _hit

#: Escaped bytes that always hold a hit's CONTEXT code points (at most 6 bytes each, as
#: ``\u0001``), plus one more: an edge that falls inside an escape moves to its end.
CONTEXT_BYTES = (CONTEXT + 1) * 6

#: A transcript bigger than this is searched window by window for a pattern whose lines can
#: be skipped (:func:`skips_lines`), not whole: the skip reads it once, in buffers of 512 KiB,
#: at about 2 GB/s a core, where the whole search reads it, decodes it (1.3 GB/s) into
#: buffers of its size, and above 14 MiB gets fresh ones each time (16 MB transcripts of
#: the bench: 250 MB/s).
SKIP_ABOVE = 4 << 20


def skips_lines(pattern: Pattern) -> bool:
    """Whether a window-by-window search of ``pattern`` skips the lines it cannot start in
    (``native.skip_lines``, AVX2): a fixed string, or one ignoring case with an ASCII part."""
    nat = native.NATIVE
    if nat is None or not nat.simd() or pattern.regex:
        return False
    return not pattern.ignore_case or (pattern.required is not None and pattern.required_folded)


# One message, searched window by window ------------------------------------------------
class _Window(NamedTuple):
    """A window of one message's bytes, from ``raw_start``: searched, then carried on from ``carry``.
    A NamedTuple: a dataclass's methods are compiled when its module loads, a millisecond of
    ``grep``'s start-up for a record nothing compares or prints."""

    raw_start: int
    data: bytes | bytearray  # escaped (transcript) or UTF-8 (tool output) text, starting on a boundary
    carry: int  # offset in ``data`` where the next window starts (len(data) for the last)
    final: bool


class _Codec(Protocol):
    def decode(self, seg: bytes | bytearray) -> str: ...
    def measure(self, buf: bytes | bytearray, start: int, end: int) -> tuple[int, int]: ...
    def survey(self, buf: bytes | bytearray, end: int) -> tuple[bool, tuple[int, int] | None]: ...
    def encode_needle(self, text: str) -> bytes | None: ...
    def boundary(self, buf: bytes | bytearray, p: int) -> bool: ...
    def reread(self, start: int, end: int) -> Iterator[tuple[int, int]]: ...


class _MessageSearch:
    """Search one message's windows. Positions are counted window by window where the
    codec can count cheaply (``survey``), and otherwise lazily, from the last known position
    up to a hit."""

    def __init__(self, codec: _Codec, pattern: Pattern, compiled: Matcher, limit: int | None) -> None:
        self.codec = codec
        self.compiled = compiled
        lit = pattern.literal
        self.needle_text = lit
        self.needle = codec.encode_needle(lit) if lit is not None else None
        self.impossible = lit is not None and self.needle is None
        #: Ignoring case: the escaped, lowercased part of the text every match holds as
        #: plain ASCII (see Pattern.required); a window without it is only counted.
        req = pattern.required
        enc = codec.encode_needle(req) if req else None
        self.prefilter_folded = pattern.required_folded
        #: A fixed string ignoring case: no assertion looks at the text around a window.
        self.compiled_is_literal = not pattern.regex
        self.prefilter = (enc.lower() if self.prefilter_folded else enc) if enc else None
        #: Code points of a fixed string (a match ignoring case spans as many).
        self.text_len = len(js_normalize(pattern.text))
        self.limit = limit
        self.found = 0
        # Where counting has reached: raw offset of a window start, and text offsets there.
        self.known_raw = -1
        self.known_cp = 0
        self.known_bytes = 0
        self.last_end = -1  # code point where the last hit ended (hits never overlap)
        self.cancelled = False
        self.stop_asked: Callable[[], bool] = lambda: False
        #: True when a window was counted to its carry point: the next window starts there.
        self._pending_next = False
        #: Decoded text (a hit's worth of context) before the next window, and the raw offset
        #: of the window it precedes; ``_lead`` is it for the window being searched.
        self._tail = ""
        self._tail_raw = -1
        self._tail_pending = False
        self._lead = ""
        #: Decoded text just before the next window (for lookbehind), valid at ``_context_end``.
        self._context = ""
        self._context_end = -1

    def carry_bytes(self) -> int:
        # The overlap a match may need, plus a hit's context after it: a hit just before the
        # carry point shows the same context as one in the middle of a window.
        if self.needle is not None:
            return max(0, len(self.needle) - 1) + CONTEXT_BYTES
        return REGEX_OVERLAP * 6

    def skip_needle(self) -> tuple[bytes, bool, int] | None:
        """What lines may be skipped unsearched for (see ``native.skip_lines``): the escaped
        needle, whether it is found ignoring ASCII case, and the escaped bytes a window must
        hold before it (a match's start and a hit's context); None for a regex, whose match
        may start anywhere before its required text."""
        if self.needle is not None:
            return self.needle, False, self.carry_bytes()
        if self.prefilter is not None and self.compiled_is_literal and self.prefilter_folded:
            # the ASCII part may be anywhere in the match: all of it may come before
            return self.prefilter, True, CONTEXT_BYTES + 6 * self.text_len
        return None

    def may_skip_at(self, raw: int) -> bool:
        """Whether counting is known at ``raw``, where the caller's next window starts (or
        the message starts there): only then may lines from there be skipped."""
        return self.known_raw in (raw, -1) and not self.done()

    def skipped(self, raw: int, cps: int, nbytes: int) -> None:
        """The caller skipped lines up to ``raw`` holding ``cps`` code points and ``nbytes``
        UTF-8 bytes of text: counting is known there, and no text before it is kept."""
        if self.known_raw == -1:
            self.known_cp = self.known_bytes = 0
        self.known_raw = raw
        self.known_cp += cps
        self.known_bytes += nbytes
        self._tail, self._tail_raw, self._tail_pending = "", -1, False
        self._context, self._context_end = "", -1

    def done(self) -> bool:
        return self.impossible or (self.limit is not None and self.found >= self.limit)

    def run(self, windows: Iterable[_Window], cancelled: Callable[[], bool]) -> Iterator[MessageHit]:
        """The hits of every window, until the limit or a cancel
        (:attr:`cancelled` then says so), checked before each window."""
        self.stop_asked = cancelled  # the reader asks it too, between long skips
        for w in windows:
            if cancelled():
                self.cancelled = True
                return
            yield from self.window(w)
            if self.done():
                return

    def _catch_up(self, raw: int) -> None:
        """Count text from the last known position to the window starting at ``raw``."""
        for cps, nbytes in self.codec.reread(self.known_raw, raw):
            self.known_cp += cps
            self.known_bytes += nbytes
        self.known_raw = raw

    def window(self, w: _Window) -> Iterator[MessageHit]:
        if self.known_raw == -1:
            self.known_raw = w.raw_start  # the message's first window: offsets 0 there
        if self.done():
            return
        data = w.data
        # The previous window's text just before this one (a hit near the window's start shows
        # its context from there), when this window starts where that one said.
        self._lead = self._tail if w.raw_start == self._tail_raw else ""
        if self.needle is not None or self.prefilter is not None:
            canonical, counts = self.codec.survey(data, w.carry)
        else:
            canonical, counts = False, None
        if canonical and self.needle is not None:
            yield from self._bytes_window(w, counts)
        elif canonical and not self._may_match(data) and self._may_skip(w, counts):
            start_cp = self.known_cp
            self._counted_to_carry(w, counts)  # no match can start in this window
            if self.needle_text is None and not w.final:
                self._keep_context(w, start_cp)
        else:
            yield from self._text_window(w)
        if not w.final and not self.done():
            self._keep_tail(data, w.carry)

    def _decoded_before(self, data: bytes | bytearray, end: int) -> tuple[str, bool]:
        """The text of up to CONTEXT_BYTES of ``data`` before ``end`` (from a character and
        escape boundary), decoded, and whether it reaches back to the window's start."""
        lo = max(0, end - CONTEXT_BYTES)
        while lo < end and (data[lo] & 0xC0 == 0x80 or not self.codec.boundary(data, lo)):
            lo += 1
        return self.codec.decode(data[lo:end]), lo == 0

    def _keep_tail(self, data: bytes | bytearray, carry: int) -> None:
        tail, whole_window = self._decoded_before(data, carry)
        if whole_window:
            tail = self._lead + tail  # a short window: the text before it still counts
        self._tail = tail[-CONTEXT:]
        self._tail_pending = True

    def _bytes_window(self, w: _Window, counts: tuple[int, int] | None) -> Iterator[MessageHit]:
        """Hits of a fixed string in canonical escaped bytes; ``counts`` are the text's
        (code points, UTF-8 bytes) up to the carry point, if the codec could count them."""
        data, needle, codec = w.data, self.needle, self.codec
        assert needle is not None and self.needle_text is not None
        counted = False
        q = 0  # data offset whose text offsets are (cp, nb)
        cp = nb = 0
        nat = native.NATIVE
        find = data.find if nat is None else (lambda sub, at: nat.find(data, sub, at))
        p = find(needle, 0)
        ncp, nby = len(self.needle_text), utf8_len(self.needle_text)
        while p >= 0:
            if not w.final and p >= w.carry:
                break  # the next window reports it
            if codec.boundary(data, p):
                if not counted:
                    self._catch_up(w.raw_start)
                    counted, cp, nb = True, self.known_cp, self.known_bytes
                dcp, dnb = codec.measure(data, q, p)
                cp, nb, q = cp + dcp, nb + dnb, p
                if cp >= self.last_end:
                    before, after = self._context_bytes(data, p, p + len(needle))
                    yield _hit(cp, cp + ncp, nb, nb + nby, before, self.needle_text, after)
                    self.last_end = cp + ncp
                    self.found += 1
                    if self.done():
                        return
                    p = find(needle, p + len(needle))
                    continue
            p = find(needle, p + 1)
        if counted and not w.final:
            dcp, dnb = codec.measure(data, q, w.carry)
            self._known_at_carry(cp + dcp, nb + dnb)
        elif not counted:
            self._counted_to_carry(w, counts)

    def _may_match(self, data: bytes | bytearray) -> bool:
        """False when no match can be in canonical ``data``: it lacks the text every match
        holds (:attr:`.pattern.Pattern.required`)."""
        assert self.prefilter is not None
        nat = native.NATIVE
        if not self.prefilter_folded:
            return (data.find(self.prefilter) if nat is None else nat.find(data, self.prefilter)) >= 0
        if nat is not None:
            return nat.find_ci(data, self.prefilter) >= 0
        return data.lower().find(self.prefilter) >= 0

    def _may_skip(self, w: _Window, counts: tuple[int, int] | None) -> bool:
        """Whether a window without the required text may go unsearched. A regex's next window
        needs the text just before it (``^``, ``\\b`` and a hit's context see it), which a
        skipped window keeps only where it is counted as it goes."""
        if self.needle_text is not None or self.compiled_is_literal:
            return True
        return w.final or (self.known_raw == w.raw_start and counts is not None)

    def _keep_context(self, w: _Window, start_cp: int) -> None:
        """After a skipped window, the decoded text just before its carry point: what
        :meth:`_text_window` puts before the next window's text."""
        tail, whole_window = self._decoded_before(w.data, w.carry)
        if whole_window and self._context_end == start_cp:
            tail = self._context + tail  # a short window: the text before it still counts
        self._context = tail[-REGEX_OVERLAP:]
        self._context_end = self.known_cp

    def _counted_to_carry(self, w: _Window, counts: tuple[int, int] | None) -> None:
        """Counting moves past a window no hit needed counted, where it was known at the
        window's start and the codec counted it; otherwise a hit counts later, from the last
        known position."""
        if not w.final and self.known_raw == w.raw_start and counts is not None:
            # Counted as it goes where counting is cheap (the native scanner): a hit deep in
            # a huge message then needs no second read of everything before it.
            self._known_at_carry(self.known_cp + counts[0], self.known_bytes + counts[1])

    def _known_at_carry(self, cp: int, nb: int) -> None:
        self.known_cp, self.known_bytes = cp, nb
        self.known_raw = -2  # set by the caller: the next window's raw start
        self._pending_next = True

    def _text_window(self, w: _Window) -> Iterator[MessageHit]:
        if self.impossible:
            return
        self._catch_up(w.raw_start)
        if self.known_cp != self._context_end:
            self._context = ""  # a bytes window came between: no decoded text before this one
        head = self.codec.decode(w.data[: w.carry])
        own = head + self.codec.decode(w.data[w.carry :]) if not w.final else head
        # The text before the window goes first, so a lookbehind or ^ sees it; offsets in
        # ``text`` are then ``lead`` code points ahead of the window's own.
        lead = len(self._context)
        text = self._context + own
        base_cp, base_b = self.known_cp - lead, self.known_bytes
        q, nb = lead, base_b
        for s, e in self.compiled.spans(text, max(lead, self.last_end - base_cp)):
            if not w.final and s >= lead + len(head):
                break  # the next window reports it
            nb += utf8_len(text[q:s])
            q = s
            mb = utf8_len(text[s:e])
            before = text[max(0, s - CONTEXT * 4) : s]
            if s < CONTEXT * 4 and not lead:
                before = self._lead + before  # no text of its own before this window
            after = text[e : e + CONTEXT * 4]
            yield _hit(base_cp + s, base_cp + e, nb, nb + mb, before, text[s:e], after)
            self.last_end = base_cp + e
            self.found += 1
            if self.done():
                return
        if not w.final:
            self.known_cp, self.known_bytes = self.known_cp + len(head), self.known_bytes + utf8_len(head)
            self._context = text[max(0, lead + len(head) - REGEX_OVERLAP) : lead + len(head)]
            self._context_end = self.known_cp
            self.known_raw = -2
            self._pending_next = True

    def next_window_at(self, raw: int) -> None:
        """The caller's next window starts at ``raw``: counting there is known if a
        window was just counted to its carry point."""
        if self._pending_next:
            self.known_raw = raw
            self._pending_next = False
        if self._tail_pending:
            self._tail_raw = raw
            self._tail_pending = False

    def _context_bytes(self, data: bytes | bytearray, p: int, e: int) -> tuple[str, str]:
        before, whole_window = self._decoded_before(data, p)
        hi = min(len(data), e + CONTEXT_BYTES)
        while hi > e and hi < len(data) and (data[hi] & 0xC0 == 0x80 or not self.codec.boundary(data, hi)):
            hi -= 1
        if whole_window:
            before = self._lead + before  # the window starts within a hit's context
        return before, self.codec.decode(data[e:hi])
