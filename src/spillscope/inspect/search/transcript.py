"""Exact search in a transcript: fragment lines read in windows and searched as escaped bytes.

Reads whole fragment lines with ``pread``, de-frames them, and hands the windows to
:class:`~.message._MessageSearch`; anything irregular falls back to the exact parser
(:mod:`.exact`). Separate from the tool-output search because of the framing, the
escape boundaries and the message headers.
"""

from __future__ import annotations

import io
import re
from typing import Callable, Iterator

from ...util import native
from ...util.text import js_json_string
from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
from ...formats.transcript import NOTE_2, ROLES, TITLE_LINE, MessageStart, TranscriptError, iter_transcript
from ..findings import finding
from .escapes import (_ends_high, at_escape_boundary, canonical_escapes, decode_escaped, deframe_reusing,
                             measure_escaped)
from .exact import _exact_transcript
from .message import SKIP_ABOVE, _MessageSearch, _Window, skips_lines
from .pattern import Matcher, Pattern
from . import whole
from .prefilter import message_rule, transcript_may_match
from .records import ArtifactEvent, MessageHit, RunEvent, _Located, _LocatedRun
from ...storage import Storage
from .source import WINDOW, ReusedReads, Source, close_source, open_source, read_range, source_size

class _TranscriptCodec:
    def __init__(self, handle: Source) -> None:
        self.handle = handle

    decode = staticmethod(decode_escaped)
    measure = staticmethod(measure_escaped)
    boundary = staticmethod(at_escape_boundary)

    @staticmethod
    def survey(buf: bytes | bytearray, end: int) -> tuple[bool, tuple[int, int] | None]:
        """Whether ``buf``'s escapes are canonical, and ``measure`` of ``buf[:end]`` where
        the native scanner counts it in the same pass (plain escaped text); else None:
        decoding every window would cost more than counting lazily."""
        nat = native.NATIVE
        return (canonical_escapes(buf), None) if nat is None else nat.survey(buf, end)

    def encode_needle(self, text: str) -> bytes | None:
        return js_json_string(text)[1:-1].encode("utf-8")

    def reread(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(code points, UTF-8 bytes) of the text of the fragment lines at raw
        ``[start, end)``, segment by segment. The native scanner counts plain lines without
        de-framing them; a segment with anything else is de-framed and measured."""
        pos, want = start, WINDOW
        reads, text = ReusedReads(self.handle), bytearray()
        while pos < end:
            chunk = reads.read(min(want, end - pos), pos)
            if not chunk:
                raise OSError("file shrank while searching")
            cut = len(chunk) if pos + len(chunk) >= end else _line_cut(chunk)
            if cut <= 0:
                want *= 2
                continue
            want = WINDOW
            nat = native.NATIVE
            if nat is not None:
                # Plain lines (no lone surrogate: no pair split over two lines) measure
                # the same one by one as joined.
                status, used, _, cps, nbytes = nat.index_lines(chunk, cut, True, 1, 1 << 30, 0, 0, 0, 0)[:5]
                if status == 0 and used == cut:
                    yield cps, nbytes
                    pos += cut
                    continue
            yield measure_escaped(deframe_reusing(chunk, cut, text))
            pos += cut


#: Bytes of lines one ``native.skip_lines`` call may take (about 30 ms).
SKIP_SPAN = 64 << 20

#: The first window of a message (then doubling up to :data:`WINDOW`).
FIRST_WINDOW = 1 << 9


class _Irregular(Exception):
    """The fast path met something it does not handle: the exact parser takes over."""


def _line_cut(chunk: bytes | bytearray) -> int:
    """Where to cut a chunk of fragment lines: after its last whole line, but never right
    after an escaped high surrogate (0 when no cut fits)."""
    cut = chunk.rfind(b"\n") + 1
    while cut > 0 and _ends_high(chunk, cut):
        cut = chunk.rfind(b"\n", 0, cut - 1) + 1
    return cut


class _MessageWindows:
    """Windows of whole fragment lines of one message, from raw ``start`` to the blank
    line that ends it (or the end of the file); :attr:`end` is then where it ended."""

    def __init__(self, handle: Source, start: int, size: int, search: _MessageSearch) -> None:
        self.handle, self.start, self.size, self.search = handle, start, size, search
        self.end = -1

    def __iter__(self) -> Iterator[_Window]:
        pos, size = self.start, self.size
        carry_raw = self.search.carry_bytes()
        # Start small and double: a short message costs its own bytes, not a whole window of
        # what follows it (30,000 short messages would read 30,000 windows).
        want = min(FIRST_WINDOW, WINDOW)
        reads = ReusedReads(self.handle)
        text = bytearray()  # the escaped text of each window, reused (a window is done before the next)
        nat = native.NATIVE
        skip = self.search.skip_needle() if nat is not None and isinstance(self.handle, int) else None
        while True:
            while skip is not None and pos < size and self.search.may_skip_at(pos) and not self.search.stop_asked():
                # Lines no match can start in are only counted, in C (one read, every block
                # checked, joined, counted and searched): a rare needle deep in a huge message
                # costs one pass instead of a decoded window per MiB. A span at a time, so
                # that a cancel is seen within one.
                assert nat is not None and isinstance(self.handle, int)
                to, cps, nbytes = nat.skip_lines(self.handle, pos, min(size, pos + SKIP_SPAN), *skip)
                if to <= pos:
                    break
                self.search.skipped(to, cps, nbytes)
                pos = to
            # ``chunk`` and ``data`` are reused by the next window (each is searched before it).
            chunk = reads.read(min(want, size - pos), pos) if pos < size else b""
            if not chunk:
                raise _Irregular()
            final = pos + len(chunk) >= size
            length = len(chunk)  # the whole lines of ``chunk`` this window takes
            if not final:
                length = _line_cut(chunk)
                if length <= 0:
                    want *= 2  # a line longer than the window: read more
                    continue
            try:
                data = deframe_reusing(chunk, length, text)
            except ValueError:
                # The message ends in this window (a blank line), or the lines are irregular.
                if chunk[:1] == b"\n":
                    self.end = pos  # the previous window ended it (and carried nothing)
                    return
                i = chunk.find(b"\n\n", 0, length)
                if i < 0:
                    raise _Irregular() from None
                length = i + 1
                try:
                    data = deframe_reusing(chunk, length, text)
                except ValueError:
                    raise _Irregular() from None
                final = True
            if final:
                self.end = pos + length
                yield _Window(pos, data, len(data), True)
                return
            # The next window starts some whole lines back, holding at least the carry. No line
            # start after ``length - carry_raw`` can hold it (its raw bytes are fewer), so the walk
            # back line by line starts there: a regex's 96 KiB carry was ~1500 rfind calls a window.
            back = chunk.rfind(b"\n", 0, max(0, length - carry_raw)) + 1
            lines = chunk.count(b"\n", back, length)
            while back > 0 and not ((length - back) - 3 * lines >= carry_raw and not _ends_high(chunk, back)):
                back = chunk.rfind(b"\n", 0, back - 1) + 1
                lines += 1
            if back <= 0:
                want *= 2  # the carry needs more than this window: read more
                continue
            want = min(want * 2, WINDOW) if want < WINDOW else WINDOW
            carry = len(data) - ((length - back) - 3 * lines)
            yield _Window(pos, data, carry, False)
            pos += back
            self.search.next_window_at(pos)



def search_message_region(path: str, start: int, end: int, pattern: Pattern, *, limit: int | None = None,
                          cancelled: Callable[[], bool] = lambda: False) -> Iterator[MessageHit]:
    """Hits in one transcript message whose fragment lines are raw ``[start, end)``
    (as :class:`~spillscope.formats.transcript.MessageIndex` records them).

    Raises ``ValueError`` if the region is not plain fragment lines."""
    compiled = pattern.compile()
    handle = open_source(path)
    try:
        codec = _TranscriptCodec(handle)
        search = _MessageSearch(codec, pattern, compiled, limit)
        try:
            yield from search.run(_MessageWindows(handle, start, end, search), cancelled)
        except _Irregular:
            raise ValueError("not plain fragment lines") from None
    finally:
        close_source(handle)


_HEADER = re.compile(rb"### Message ([1-9][0-9]*): ([a-z]+)\n\n")
#: The blank line that ends a message and the next one's header.
_NEXT_HEADER = b"\n\n### Message "


def search_transcript(path: str, pattern: Pattern, *, limit: int | None = None,
                      cancelled: Callable[[], bool] = lambda: False,
                      max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, prefiltered: bool = False,
                      store: Storage | None = None, context: bool = True) -> Iterator[ArtifactEvent]:
    """Hits (and at most one finding) in a transcript, message by message. ``prefiltered``:
    the caller has already asked :func:`.prefilter.may_match`; ``store``: the storage it is
    in (else the one its name gives); ``context`` False: the text of a hit may be left out."""
    # runs of one: each hit handed on as soon as it is found, as before the runs
    for ev in search_transcript_runs(path, pattern, limit=limit, cancelled=cancelled, max_line_bytes=max_line_bytes,
                                     prefiltered=prefiltered, store=store, context=context, run_size=1):
        if isinstance(ev, _LocatedRun):
            message, role = ev.message, ev.role
            for h in ev.hits:
                yield _Located(message, role, h)
        else:
            yield ev


def search_transcript_runs(path: str, pattern: Pattern, *, limit: int | None = None,
                           cancelled: Callable[[], bool] = lambda: False,
                           max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, prefiltered: bool = False,
                           store: Storage | None = None, context: bool = True,
                           run_size: int = whole.RUN) -> Iterator[RunEvent]:
    """:func:`search_transcript`'s events in order, a message's hits in lists of up to
    ``run_size`` (see :data:`.whole.RUN`): each as soon as it is found where a message is
    searched window by window."""
    compiled = pattern.compile()
    emitted: dict[int, int] = {}  # message → end of its last hit (for the exact fallback)
    count = 0
    try:
        handle = open_source(path, store)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
        return
    try:
        try:
            if not prefiltered and not transcript_may_match(handle, source_size(handle), pattern):
                return  # no encoded form of the needle in its bytes (see .prefilter)
            for ev in _fast_transcript(handle, path, pattern, compiled, limit, cancelled, context, run_size):
                assert ev.message is not None
                emitted[ev.message] = ev.hits[-1].end
                count += len(ev.hits)
                yield ev
            return
        except (_Irregular, ValueError):
            pass  # an undecodable escape, or lines the fast path does not expect
        except OSError as exc:
            yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
            return
    finally:
        close_source(handle)
    for exact in _exact_transcript(path, compiled, emitted, None if limit is None else limit - count, cancelled,
                                   max_line_bytes):
        yield _LocatedRun(exact.message, exact.role, [exact.hit]) if isinstance(exact, _Located) else exact


def _fast_transcript(handle: Source, path: str, pattern: Pattern, compiled: Matcher, limit: int | None,
                     cancelled: Callable[[], bool], context: bool = True,
                     run_size: int = whole.RUN) -> Iterator[_LocatedRun]:
    size = source_size(handle)
    head = read_range(handle, min(size, 1 << 16), 0)
    if not head.startswith(TITLE_LINE):
        raise _Irregular()
    marker = b"\n" + NOTE_2.encode() + b"\n\n"
    at = head.find(marker)
    if at < 0:
        raise _Irregular()
    pos = at + len(marker)
    if read_range(handle, 1, size - 1) != b"\n":
        raise _Irregular()  # cut off mid-write: the exact parser says how
    # The preamble and metadata, checked by the exact parser (it stops at message 1).
    try:
        for ev in iter_transcript(io.BytesIO(head[:pos] + b"### Message 1: user\n\n")):
            if isinstance(ev, MessageStart):
                break
        else:
            raise _Irregular()
    except TranscriptError:
        raise _Irregular() from None
    whole_text = size <= whole.WHOLE_MAX and not (size > SKIP_ABOVE and skips_lines(pattern))
    spans = whole.byte_spans(pattern, compiled) if whole_text and isinstance(handle, int) else None
    buffers = whole.Buffers() if spans is not None else None
    try:
        yield from _messages(handle, pos, size, pattern, compiled, limit, cancelled, spans, buffers, context, run_size)
    finally:
        if buffers is not None:
            buffers.close()


def _messages(handle: Source, pos: int, size: int, pattern: Pattern, compiled: Matcher, limit: int | None,
              cancelled: Callable[[], bool], spans: whole.Spans | None,
              buffers: whole.Buffers | None, context: bool = True, run_size: int = whole.RUN
              ) -> Iterator[_LocatedRun]:
    """The hits of each message from raw ``pos`` on: the whole file read once and each
    message searched whole where ``spans`` says how (see .whole), else window by window."""
    raw = None
    may_hold = None
    if spans is not None and buffers is not None:
        assert isinstance(handle, int)
        raw = buffers.read(handle, size)  # None: changed while read, so window by window
        may_hold = message_rule(pattern)
    k = 0
    found = 0
    while True:
        k += 1
        line = bytes(raw[pos : pos + 64]) if raw is not None else read_range(handle, 64, pos)
        m = _HEADER.match(line)
        if m is None or int(m.group(1)) != k or m.group(2).decode() not in ROLES:
            raise _Irregular()
        role = m.group(2).decode()
        left = None if limit is None else limit - found
        start = pos + m.end()
        text = None
        if raw is not None and spans is not None and buffers is not None:
            # The blank line before the next header (bytes.find is slow on "\n\n" in a text of
            # newlines). A blank line anywhere else leaves "\n" in the lines: deframing
            # refuses them and the window search says what they are.
            blank = _native_find(raw, _NEXT_HEADER, start - 1)
            end = size if blank < 0 else blank + 1
            if end > start and may_hold is not None and not may_hold(raw, start, end):
                # The needle's escaped halves are nowhere in its lines: nothing to decode (the
                # file's prefilter, per message; like it, a rule on bytes, not a validation).
                if end >= size:
                    return
                pos = end + 1
                continue
            text = buffers.message_text(raw, start, end) if end > start else None
        if text is not None and spans is not None:
            for run in whole.hit_runs(text[0], spans, left, cancelled, context, text[1], run_size):
                found += len(run)
                yield _LocatedRun(k, role, run)
            if cancelled() or (limit is not None and found >= limit):
                return
            message_end = end
        else:
            search = _MessageSearch(_TranscriptCodec(handle), pattern, compiled, left)
            windows = _MessageWindows(handle, start, size, search)
            for h in search.run(windows, cancelled):
                found += 1
                yield _LocatedRun(k, role, [h])
            if search.cancelled or (limit is not None and found >= limit):
                return
            if search.done():
                windows.end = _find_blank(handle, start, size)  # stopped early: find the next message
            message_end = windows.end
        if message_end <= start:
            raise _Irregular()  # a header without fragment lines
        if message_end >= size:
            return
        pos = message_end + 1  # past the blank line


def _native_find(buf: memoryview, needle: bytes, start: int) -> int:
    """``buf.find(needle, start)`` in C (the whole-message path runs only with it)."""
    nat = native.NATIVE
    assert nat is not None
    return nat.find(buf, needle, start)


def _find_blank(handle: Source, start: int, size: int) -> int:
    """Offset just past the message's last fragment line: the blank line's offset, or EOF."""
    pos = start
    prev = b""
    while pos < size:
        chunk = read_range(handle, min(WINDOW, size - pos), pos)
        if not chunk:
            break
        if prev == b"\n" and chunk[:1] == b"\n":
            return pos
        i = chunk.find(b"\n\n")
        if i >= 0:
            return pos + i + 1
        prev = chunk[-1:]
        pos += len(chunk)
    return size
