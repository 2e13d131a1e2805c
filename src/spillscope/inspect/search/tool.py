"""Exact search in a tool output: its UTF-8 bytes, read a window at a time.

Separate from the transcript search because a tool output has no framing or escaping: the
needle is searched as plain UTF-8 and windows are cut between characters.
"""

from __future__ import annotations

from typing import Callable, Iterator

from ...storage import Storage
from ...util import native
from ...util.text import utf8_len
from . import whole
from .escapes import decode_utf8
from .message import _MessageSearch, _Window
from .pattern import Pattern
from .prefilter import tool_output_may_match
from . import readahead
from .readahead import Read
from .records import MessageHit
from .source import WINDOW, Source, close_source, open_source, read_range, source_size

class _PlainCodec:
    def __init__(self, handle: Source) -> None:
        self.handle = handle

    decode = staticmethod(decode_utf8)

    @staticmethod
    def measure(buf: bytes | bytearray, start: int, end: int) -> tuple[int, int]:
        nat = native.NATIVE
        got = None if nat is None else nat.utf8_stats(buf, start, end)
        if got is not None:
            return got
        text = decode_utf8(buf[start:end])  # invalid UTF-8: counted as decoded, with U+FFFD
        return len(text), utf8_len(text)

    @staticmethod
    def survey(buf: bytes | bytearray, end: int) -> tuple[bool, tuple[int, int] | None]:
        """Whether ``buf`` is valid UTF-8 (no escapes: the needle's bytes are then
        exactly its occurrences; invalid bytes decode to U+FFFD, which a needle holding
        one must find, so such a window is searched decoded), and ``measure`` of
        ``buf[:end]`` if the native scanner can count it (valid UTF-8)."""
        nat = native.NATIVE
        if nat is None:
            return _valid_utf8(buf), None
        counts = nat.utf8_stats(buf, 0, end)
        valid = counts is not None and (end >= len(buf) or nat.utf8_stats(buf, end, len(buf)) is not None)
        return valid, counts

    @staticmethod
    def boundary(buf: bytes | bytearray, p: int) -> bool:
        return p >= len(buf) or buf[p] & 0xC0 != 0x80

    @staticmethod
    def encode_needle(text: str) -> bytes | None:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return None  # a lone surrogate: written to disk as U+FFFD, so never in a tool output

    def reread(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """(code points, UTF-8 bytes) of raw ``[start, end)``, segment by segment."""
        pos = start
        while pos < end:
            chunk = read_range(self.handle, min(WINDOW, end - pos), pos)
            if not chunk:
                raise OSError("file shrank while searching")
            if pos + len(chunk) < end:
                chunk = chunk[: _char_cut(chunk)]  # never split a character between two decodes
            text = decode_utf8(chunk)
            yield len(text), utf8_len(text)
            pos += len(chunk)



def _valid_utf8(buf: bytes | bytearray) -> bool:
    if buf.isascii():
        return True
    try:
        buf.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _char_cut(chunk: bytes) -> int:
    """Where to cut UTF-8 bytes so that no character is split: before the last
    character's lead byte when the chunk may end inside it (the whole chunk if that
    would leave nothing)."""
    cut = len(chunk)
    while cut > 0 and chunk[cut - 1] & 0xC0 == 0x80 and len(chunk) - cut < 3:
        cut -= 1
    if cut > 0 and chunk[cut - 1] >= 0xC0:
        cut -= 1  # never end on a lead byte
    return cut if cut > 0 else len(chunk)


def _plain_windows(handle: Source, size: int, search: _MessageSearch) -> Iterator[_Window]:
    pos = 0
    carry_raw = search.carry_bytes()
    want = WINDOW
    while pos < size:
        chunk = read_range(handle, min(want, size - pos), pos)
        if not chunk:
            return
        if pos + len(chunk) >= size:
            yield _Window(pos, chunk, len(chunk), True)
            return
        chunk = chunk[: _char_cut(chunk)]
        if len(chunk) <= carry_raw:
            want *= 2  # the carry needs more than this window: read more
            continue
        want = WINDOW
        back = len(chunk) - carry_raw
        while 0 < back < len(chunk) and chunk[back] & 0xC0 == 0x80:
            back -= 1
        if back <= 0:
            want *= 2
            continue
        yield _Window(pos, chunk, back, False)
        pos += back
        search.next_window_at(pos)



def search_tool_output(path: str, pattern: Pattern, *, limit: int | None = None,
                       cancelled: Callable[[], bool] = lambda: False, prefiltered: bool = False,
                       store: Storage | None = None, context: bool = True) -> Iterator[MessageHit]:
    """Hits in a tool output's exact text (its UTF-8 bytes decoded). ``prefiltered``: the
    caller has already asked :func:`.prefilter.may_match`; ``store``: the storage it is in
    (else the one its name gives); ``context`` False: the text of a hit may be left out."""
    # runs of one: each hit handed on as soon as it is found, as before the runs
    for run in search_tool_output_runs(path, pattern, limit=limit, cancelled=cancelled, prefiltered=prefiltered,
                                       store=store, context=context, run_size=1):
        yield from run


def search_tool_output_runs(path: str, pattern: Pattern, *, limit: int | None = None,
                            cancelled: Callable[[], bool] = lambda: False, prefiltered: bool = False,
                            store: Storage | None = None, context: bool = True,
                            run_size: int = whole.RUN) -> Iterator[list[MessageHit]]:
    """:func:`search_tool_output`'s hits in order, in lists of up to ``run_size`` (see
    :data:`.whole.RUN`): each as soon as it is found where the file is searched window by
    window (a file too big to read whole: its hits may be seconds apart)."""
    compiled = pattern.compile()
    handle = open_source(path, store)
    try:
        size = source_size(handle)
        if not prefiltered and not tool_output_may_match(handle, size, pattern):
            return  # the needle's bytes are not in it: nothing to decode or count
        spans = whole.byte_spans(pattern, compiled) if size <= whole.WHOLE_MAX and isinstance(handle, int) else None
        if spans is not None:
            assert isinstance(handle, int)
            buffers = whole.Buffers()
            try:
                data = buffers.read(handle, size)
                counts = whole.plain_text(data) if data is not None else None
                if data is not None and counts is not None:
                    yield from whole.hit_runs(data, spans, limit, cancelled, context, counts, run_size)
                    return
            finally:
                buffers.close()
        codec = _PlainCodec(handle)
        search = _MessageSearch(codec, pattern, compiled, limit)
        for h in search.run(_plain_windows(handle, size, search), cancelled):
            yield [h]
    finally:
        close_source(handle)


#: How a tool output read ahead (.readahead) is searched: its hits in runs of up to ``run_size``
#: (``read``, ``limit``, ``cancelled``, ``context``, ``run_size``).
ReadSearch = Callable[[Read, "int | None", Callable[[], bool], bool, int], Iterator[list[MessageHit]]]


def read_search(pattern: Pattern) -> ReadSearch | None:
    """How a tool output read ahead (up to .readahead.EACH bytes, valid UTF-8) is searched, as
    :func:`search_tool_output_runs` searches it once read (whole, as its bytes); None where
    such a file is not searched so (the caller opens it as any other)."""
    spans = whole.byte_spans(pattern, pattern.compile()) if readahead.EACH <= whole.WHOLE_MAX else None
    if spans is None:
        return None
    found: whole.Spans = spans  # (narrowed: the closure's own name)

    def search(read: Read, limit: int | None, cancelled: Callable[[], bool], context: bool,
               run_size: int) -> Iterator[list[MessageHit]]:
        return whole.hit_runs(read.data, found, limit, cancelled, context, read.counts, run_size)

    return search
