"""Exact search inside one artifact: a transcript's messages or a tool output.

The retrieval hint says "grep this path", but a phrase crossing a 64-code-point fragment
line, or holding a quote, a backslash, a newline or a lone surrogate, is not in a
transcript as bytes. This module finds it anyway, and fast:

* A transcript message's fragment lines are read a window at a time (whole lines, with
  ``pread``) and *de-framed*: the leading ``"`` and trailing ``"\\n`` of each line are
  removed (``"\\n"`` cannot occur inside a fragment, so one ``bytes.replace`` does it).
  What is left is the message's JSON-escaped text as the writer escaped it.
* A fixed string is escaped the way the writer escapes (:func:`js_json_string`) and
  searched as bytes; a candidate counts only where it starts on an escape boundary (not
  after an odd run of backslashes, not inside ``\\uXXXX``). Windows carry their last
  lines into the next one, so a phrase across a window edge is found once.
* Only around hits is text decoded: code-point and UTF-8 byte offsets are counted from
  the last known position (a message without hits is never decoded).
* Case-insensitive and regex searches, and windows whose escapes are not the writer's
  canonical ones (``\\u0041``, ``\\/``, an escaped surrogate pair), decode the window and
  search the text; a regex match is at most :data:`REGEX_OVERLAP` code points long.
* Anything irregular in a transcript (a framing the fast path does not expect, a file cut
  off) sends it through the exact streaming parser, which also locates a malformation.

``start``/``end`` are code-point offsets into the message's exact text as
:func:`~spillscope.formats.transcript.read_transcript` returns it (a lone surrogate and
an astral character are one code point each); ``byte_start``/``byte_end`` the same span
in UTF-8 bytes (what the seen ranges are measured in).

File access goes through :func:`open_source`, :func:`read_range`, :func:`source_size`
and :func:`close_source` only, so another backend can replace them.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol, Union

import orjson

from ..util.fs import open_regular
from ..util.text import js_json_string, js_normalize, loads_exact, utf8_len
from ..reference.constants import DEFAULT_MAX_LINE_BYTES
from ..formats.transcript.layout import NOTE_2, ROLES, TITLE_LINE
from ..formats.transcript.records import Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError
from ..formats.transcript.reader import iter_transcript
from .findings import Finding, finding

#: Raw bytes read per window (whole lines; a window never holds more than about this).
WINDOW = 1 << 20
#: A regex match longer than this many code points may be cut at a window edge.
REGEX_OVERLAP = 1 << 14
#: Code points of context kept on each side of a hit (within its line).
CONTEXT = 80
#: Where a reader's search stops.
MAX_HITS = 5000

TRANSCRIPT = "session-reference-transcript"
TOOL_OUTPUT = "tool-output"


# File access: the only functions that touch the file system (another backend swaps them).
def open_source(path: str) -> int:
    return open_regular(path)


def read_range(handle: int, size: int, offset: int) -> bytes:
    return os.pread(handle, size, offset)


def source_size(handle: int) -> int:
    return os.fstat(handle).st_size


def close_source(handle: int) -> None:
    os.close(handle)


class PatternError(ValueError):
    """The pattern cannot be searched for (empty, or an invalid regex)."""


@dataclass(frozen=True)
class Pattern:
    """What to look for: a fixed string (default) or a Python regex, optionally ignoring case."""

    text: str
    regex: bool = False
    ignore_case: bool = False

    def compile(self) -> re.Pattern[str]:
        if not self.text:
            raise PatternError("empty pattern")
        flags = re.IGNORECASE if self.ignore_case else 0
        try:
            return re.compile(self.text if self.regex else re.escape(js_normalize(self.text)), flags)
        except re.error as exc:
            raise PatternError(f"invalid regex: {exc}") from None

    @property
    def literal(self) -> str | None:
        """The fixed string searched as bytes, or None when the search needs decoded text."""
        return None if self.regex or self.ignore_case else js_normalize(self.text)


@dataclass(frozen=True)
class MessageHit:
    """One match inside one message (or tool output): offsets into its exact text."""

    start: int
    end: int
    #: UTF-8 byte offsets of the same span (lone surrogates as 3 bytes, as Node writes them).
    byte_start: int
    byte_end: int
    before: str = ""
    match: str = ""
    after: str = ""


# Escape-aware helpers for the de-framed (JSON-escaped) stream ----------------------------
_BACKSLASH = 0x5C
_U_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")
_NO_PAIR_ESCAPES = {8, 9, 10, 12, 13}
_ODD_ESCAPE = re.compile(rb"\\[u/]")


def _odd_run_before(buf: bytes, p: int) -> bool:
    """True when an odd number of backslashes ends just before ``p``."""
    k = 0
    while p - k - 1 >= 0 and buf[p - k - 1] == _BACKSLASH:
        k += 1
    return k % 2 == 1


def at_escape_boundary(buf: bytes, p: int) -> bool:
    """True when ``p`` (in escaped text that starts on a boundary) starts a new character."""
    if _odd_run_before(buf, p):
        return False
    for j in range(2, 6):  # inside the four hex digits of a \\uXXXX?
        q = p - j
        if q >= 0 and buf[q] == _BACKSLASH and buf[q + 1 : q + 2] == b"u" and not _odd_run_before(buf, q):
            return False
    return True


def canonical_escapes(buf: bytes) -> bool:
    """True when every escape is spelled as JSON.stringify spells it (so the escaped
    needle finds every occurrence): no ``\\/``, and ``\\u`` only lowercase for controls
    without a short form and for lone surrogates."""
    first = _ODD_ESCAPE.search(buf)  # one pass for both
    if first is None:
        return True
    if b"\\/" in buf:
        return False  # maybe a literal backslash before '/': the decoded search is exact either way
    prev_high_end = -1
    for m in _U_ESCAPE.finditer(buf):
        if _odd_run_before(buf, m.start()):
            continue  # a literal backslash followed by 'u'
        hexs = m.group(1)
        if hexs != hexs.lower():
            return False
        cp = int(hexs, 16)
        if 0xD800 <= cp <= 0xDBFF:
            prev_high_end = m.end()
            continue
        if 0xDC00 <= cp <= 0xDFFF:
            if prev_high_end == m.start():
                return False  # an escaped pair: JSON.stringify writes it literally
        elif cp >= 0x20 or cp in _NO_PAIR_ESCAPES:
            return False
        prev_high_end = -1
    return True


def decode_escaped(seg: bytes) -> str:
    """The exact text of a de-framed escaped segment (starting and ending on boundaries)."""
    try:
        text = orjson.loads(b'"' + seg + b'"')
    except orjson.JSONDecodeError:
        text = js_normalize(loads_exact(b'"' + seg + b'"'))
    assert isinstance(text, str)
    return text


def decode_utf8(seg: bytes) -> str:
    return seg.decode("utf-8", "replace")


def deframe(lines: bytes) -> bytes:
    """Fragment lines (``"…"\\n`` each) → the escaped text; ValueError if not framed so."""
    # An empty fragment line ("") vanishes here without changing the text: the parser
    # refuses it, `verify` reports it; the search need not.
    if lines[:1] != b'"' or lines[-2:] != b'"\n':
        raise ValueError("not plain fragment lines")
    body = lines.replace(b'"\n"', b"")
    if body.find(b"\n", 1, len(body) - 1) >= 0:
        raise ValueError("not plain fragment lines")
    return body[1:-2]


def _ends_high(lines: bytes, end: int) -> bool:
    """True when the fragment line ending at ``end`` ends with an escaped high surrogate
    (it may pair with the next line's first code point, so the two stay together)."""
    b = end - 8  # `\udXXX"\n`
    return (b >= 0 and lines[b : b + 3] in (b"\\ud", b"\\uD") and lines[b + 3 : b + 4] in b"89abAB"
            and lines[b + 3 : b + 4] != b"" and not _odd_run_before(lines, b))


# One message, searched window by window ------------------------------------------------
@dataclass
class _Window:
    raw_start: int
    data: bytes  # escaped (transcript) or UTF-8 (tool output) text, starting on a boundary
    carry: int  # offset in ``data`` where the next window starts (len(data) for the last)
    final: bool


class _Codec(Protocol):
    def decode(self, seg: bytes) -> str: ...
    def encode_needle(self, text: str) -> bytes | None: ...
    def boundary(self, buf: bytes, p: int) -> bool: ...
    def canonical(self, buf: bytes) -> bool: ...
    def reread(self, start: int, end: int) -> Iterator[bytes]: ...


class _MessageSearch:
    """Search one message's windows; positions are counted lazily, only up to hits."""

    def __init__(self, codec: _Codec, pattern: Pattern, compiled: re.Pattern[str], limit: int | None) -> None:
        self.codec = codec
        self.compiled = compiled
        lit = pattern.literal
        self.needle_text = lit
        self.needle = codec.encode_needle(lit) if lit is not None else None
        self.impossible = lit is not None and self.needle is None
        self.limit = limit
        self.found = 0
        # Where counting has reached: raw offset of a window start, and text offsets there.
        self.known_raw = -1
        self.known_cp = 0
        self.known_bytes = 0
        self.last_end = -1  # code point where the last hit ended (hits never overlap)
        #: True when a window was counted to its carry point: the next window starts there.
        self._pending_next = False

    def carry_bytes(self) -> int:
        if self.needle is not None:
            return max(0, len(self.needle) - 1)
        return REGEX_OVERLAP * 6

    def done(self) -> bool:
        return self.impossible or (self.limit is not None and self.found >= self.limit)

    def _catch_up(self, raw: int) -> None:
        """Count text from the last known position to the window starting at ``raw``."""
        for seg in self.codec.reread(self.known_raw, raw):
            text = self.codec.decode(seg)
            self.known_cp += len(text)
            self.known_bytes += utf8_len(text)
        self.known_raw = raw

    def window(self, w: _Window) -> Iterator[MessageHit]:
        if self.known_raw == -1:
            self.known_raw = w.raw_start  # the message's first window: offsets 0 there
        if self.done():
            return
        data = w.data
        if self.needle is not None and self.codec.canonical(data):
            yield from self._bytes_window(w)
        else:
            yield from self._text_window(w)

    def _bytes_window(self, w: _Window) -> Iterator[MessageHit]:
        data, needle, codec = w.data, self.needle, self.codec
        assert needle is not None and self.needle_text is not None
        counted = False
        q = 0  # data offset whose text offsets are (cp, nb)
        cp = nb = 0
        p = data.find(needle)
        ncp, nby = len(self.needle_text), utf8_len(self.needle_text)
        while p >= 0:
            if not w.final and p >= w.carry:
                break  # the next window reports it
            if codec.boundary(data, p):
                if not counted:
                    self._catch_up(w.raw_start)
                    counted, cp, nb = True, self.known_cp, self.known_bytes
                text = codec.decode(data[q:p])
                cp, nb, q = cp + len(text), nb + utf8_len(text), p
                if cp >= self.last_end:
                    before, after = self._context_bytes(data, p, p + len(needle))
                    yield MessageHit(cp, cp + ncp, nb, nb + nby, before, self.needle_text, after)
                    self.last_end = cp + ncp
                    self.found += 1
                    if self.done():
                        return
                    p = data.find(needle, p + len(needle))
                    continue
            p = data.find(needle, p + 1)
        if counted and not w.final:
            text = codec.decode(data[q : w.carry])
            self.known_cp, self.known_bytes = cp + len(text), nb + utf8_len(text)
            self.known_raw = -2  # set by the caller: the next window's raw start
            self._pending_next = True

    def _text_window(self, w: _Window) -> Iterator[MessageHit]:
        if self.impossible:
            return
        self._catch_up(w.raw_start)
        head = self.codec.decode(w.data[: w.carry])
        text = head + self.codec.decode(w.data[w.carry :]) if not w.final else head
        base_cp, base_b = self.known_cp, self.known_bytes
        q, nb = 0, base_b
        for m in self.compiled.finditer(text):
            s, e = m.start(), m.end()
            if e == s or (not w.final and s >= len(head)):
                if not w.final and s >= len(head):
                    break
                continue
            if base_cp + s < self.last_end:
                continue
            nb += utf8_len(text[q:s])
            q = s
            mb = utf8_len(text[s:e])
            before = text[max(0, s - CONTEXT * 4) : s]
            after = text[e : e + CONTEXT * 4]
            yield _hit(base_cp + s, base_cp + e, nb, nb + mb, before, text[s:e], after)
            self.last_end = base_cp + e
            self.found += 1
            if self.done():
                return
        if not w.final:
            self.known_cp, self.known_bytes = base_cp + len(head), base_b + utf8_len(head)
            self.known_raw = -2
            self._pending_next = True

    def next_window_at(self, raw: int) -> None:
        """The caller's next window starts at ``raw``: counting there is known if a
        window was just counted to its carry point."""
        if self._pending_next:
            self.known_raw = raw
            self._pending_next = False

    def _context_bytes(self, data: bytes, p: int, e: int) -> tuple[str, str]:
        lo = max(0, p - CONTEXT * 6)
        while lo < p and (data[lo] & 0xC0 == 0x80 or not self.codec.boundary(data, lo)):
            lo += 1
        hi = min(len(data), e + CONTEXT * 6)
        while hi > e and hi < len(data) and (data[hi] & 0xC0 == 0x80 or not self.codec.boundary(data, hi)):
            hi -= 1
        return self.codec.decode(data[lo:p]), self.codec.decode(data[e:hi])


def _hit(s: int, e: int, bs: int, be: int, before: str, match: str, after: str) -> MessageHit:
    before = before[before.rfind("\n") + 1 :][-CONTEXT:]
    cut = after.find("\n")
    after = (after if cut < 0 else after[:cut])[:CONTEXT]
    return MessageHit(s, e, bs, be, before, match, after)


def _trim(h: MessageHit) -> MessageHit:
    return _hit(h.start, h.end, h.byte_start, h.byte_end, h.before, h.match, h.after)


class _TranscriptCodec:
    def __init__(self, handle: int) -> None:
        self.handle = handle

    decode = staticmethod(decode_escaped)
    boundary = staticmethod(at_escape_boundary)
    canonical = staticmethod(canonical_escapes)

    def encode_needle(self, text: str) -> bytes | None:
        return js_json_string(text)[1:-1].encode("utf-8")

    def reread(self, start: int, end: int) -> Iterator[bytes]:
        pos, want = start, WINDOW
        while pos < end:
            chunk = read_range(self.handle, min(want, end - pos), pos)
            if not chunk:
                raise OSError("file shrank while searching")
            cut = len(chunk) if pos + len(chunk) >= end else _line_cut(chunk)
            if cut <= 0:
                want *= 2
                continue
            want = WINDOW
            yield deframe(chunk[:cut])
            pos += cut


class _PlainCodec:
    def __init__(self, handle: int) -> None:
        self.handle = handle

    decode = staticmethod(decode_utf8)

    @staticmethod
    def boundary(buf: bytes, p: int) -> bool:
        return p >= len(buf) or buf[p] & 0xC0 != 0x80

    @staticmethod
    def canonical(buf: bytes) -> bool:
        return True

    @staticmethod
    def encode_needle(text: str) -> bytes | None:
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            return None  # a lone surrogate: written to disk as U+FFFD, so never in a tool output

    def reread(self, start: int, end: int) -> Iterator[bytes]:
        pos = start
        while pos < end:
            chunk = read_range(self.handle, min(WINDOW, end - pos), pos)
            if not chunk:
                raise OSError("file shrank while searching")
            if pos + len(chunk) < end:
                chunk = chunk[: _char_cut(chunk)]  # never split a character between two decodes
            yield chunk
            pos += len(chunk)


class _Irregular(Exception):
    """The fast path met something it does not handle: the exact parser takes over."""


def _line_cut(chunk: bytes) -> int:
    """Where to cut a chunk of fragment lines: after its last whole line, but never right
    after an escaped high surrogate (0 when no cut fits)."""
    cut = chunk.rfind(b"\n") + 1
    while cut > 0 and _ends_high(chunk, cut):
        cut = chunk.rfind(b"\n", 0, cut - 1) + 1
    return cut


class _MessageWindows:
    """Windows of whole fragment lines of one message, from raw ``start`` to the blank
    line that ends it (or the end of the file); :attr:`end` is then where it ended."""

    def __init__(self, handle: int, start: int, size: int, search: _MessageSearch) -> None:
        self.handle, self.start, self.size, self.search = handle, start, size, search
        self.end = -1

    def __iter__(self) -> Iterator[_Window]:
        pos, size = self.start, self.size
        carry_raw = self.search.carry_bytes()
        want = WINDOW
        while True:
            chunk = read_range(self.handle, min(want, size - pos), pos) if pos < size else b""
            if not chunk:
                raise _Irregular()
            final = pos + len(chunk) >= size
            if not final:
                cut = _line_cut(chunk)
                if cut <= 0:
                    want *= 2  # a line longer than the window: read more
                    continue
                chunk = chunk[:cut]
            try:
                data = deframe(chunk)
            except ValueError:
                # The message ends in this window (a blank line), or the lines are irregular.
                if chunk[:1] == b"\n":
                    self.end = pos  # the previous window ended it (and carried nothing)
                    return
                i = chunk.find(b"\n\n")
                if i < 0:
                    raise _Irregular() from None
                chunk = chunk[: i + 1]
                try:
                    data = deframe(chunk)
                except ValueError:
                    raise _Irregular() from None
                final = True
            if final:
                self.end = pos + len(chunk)
                yield _Window(pos, data, len(data), True)
                return
            # The next window starts some whole lines back, holding at least the carry.
            back, lines = len(chunk), 0
            while back > 0:
                back = chunk.rfind(b"\n", 0, back - 1) + 1
                lines += 1
                if (len(chunk) - back) - 3 * lines >= carry_raw and not _ends_high(chunk, back):
                    break
            if back <= 0:
                want *= 2  # the carry needs more than this window: read more
                continue
            want = WINDOW
            carry = len(data) - ((len(chunk) - back) - 3 * lines)
            yield _Window(pos, data, carry, False)
            pos += back
            self.search.next_window_at(pos)


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


def _plain_windows(handle: int, size: int, search: _MessageSearch) -> Iterator[_Window]:
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


# Per-artifact search -------------------------------------------------------------------
@dataclass(frozen=True)
class _Located:
    message: int | None
    role: str | None
    hit: MessageHit


ArtifactEvent = Union[_Located, Finding]


def search_tool_output(path: str, pattern: Pattern, *, limit: int | None = None,
                       cancelled: Callable[[], bool] = lambda: False) -> Iterator[MessageHit]:
    """Hits in a tool output's exact text (its UTF-8 bytes decoded)."""
    compiled = pattern.compile()
    handle = open_source(path)
    try:
        codec = _PlainCodec(handle)
        search = _MessageSearch(codec, pattern, compiled, limit)
        for w in _plain_windows(handle, source_size(handle), search):
            if cancelled():
                return
            for h in search.window(w):
                yield _trim(h)
            if search.done():
                return
    finally:
        close_source(handle)


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
            for w in _MessageWindows(handle, start, end, search):
                if cancelled():
                    return
                for h in search.window(w):
                    yield _trim(h)
                if search.done():
                    return
        except _Irregular:
            raise ValueError("not plain fragment lines") from None
    finally:
        close_source(handle)


_HEADER = re.compile(rb"### Message ([1-9][0-9]*): ([a-z]+)\n\n")


def search_transcript(path: str, pattern: Pattern, *, limit: int | None = None,
                      cancelled: Callable[[], bool] = lambda: False,
                      max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[ArtifactEvent]:
    """Hits (and at most one finding) in a transcript, message by message."""
    compiled = pattern.compile()
    emitted: dict[int, int] = {}  # message → end of its last hit (for the exact fallback)
    count = 0
    try:
        handle = open_source(path)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
        return
    try:
        try:
            for ev in _fast_transcript(handle, path, pattern, compiled, limit, cancelled):
                if isinstance(ev, _Located):
                    assert ev.message is not None
                    emitted[ev.message] = ev.hit.end
                    count += 1
                yield ev
            return
        except (_Irregular, ValueError):
            pass  # an undecodable escape, or lines the fast path does not expect
        except OSError as exc:
            yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
            return
    finally:
        close_source(handle)
    yield from _exact_transcript(path, compiled, emitted, None if limit is None else limit - count, cancelled,
                                 max_line_bytes)


def _fast_transcript(handle: int, path: str, pattern: Pattern, compiled: re.Pattern[str], limit: int | None,
                     cancelled: Callable[[], bool]) -> Iterator[ArtifactEvent]:
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
    k = 0
    found = 0
    while True:
        k += 1
        line = read_range(handle, 64, pos)
        m = _HEADER.match(line)
        if m is None or int(m.group(1)) != k or m.group(2).decode() not in ROLES:
            raise _Irregular()
        role = m.group(2).decode()
        search = _MessageSearch(_TranscriptCodec(handle), pattern, compiled,
                                None if limit is None else limit - found)
        windows = _MessageWindows(handle, pos + m.end(), size, search)
        for w in windows:
            if cancelled():
                return
            for h in search.window(w):
                found += 1
                yield _Located(k, role, _trim(h))
            if search.done():
                break
        if limit is not None and found >= limit:
            return
        if search.done():
            windows.end = _find_blank(handle, pos + m.end(), size)  # stopped early: find the next message
        if windows.end <= pos + m.end():
            raise _Irregular()  # a header without fragment lines
        if windows.end >= size:
            return
        pos = windows.end + 1  # past the blank line


def _find_blank(handle: int, start: int, size: int) -> int:
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


def _exact_transcript(path: str, compiled: re.Pattern[str], emitted: dict[int, int], limit: int | None,
                      cancelled: Callable[[], bool], max_line_bytes: int) -> Iterator[ArtifactEvent]:
    """The exact streaming parser, searched in decoded windows of about a million code points."""
    if limit is not None and limit <= 0:
        return
    found = 0
    role, k = "", 0
    parts: list[str] = []
    size = 0
    base_cp = base_b = 0
    last_end = -1
    pending_high = False

    def flush(final: bool) -> Iterator[_Located]:
        nonlocal parts, size, base_cp, base_b, last_end, found
        text = js_normalize("".join(parts))
        keep = "" if final else text[-REGEX_OVERLAP:]
        limit_at = len(text) - len(keep)
        q, nb = 0, base_b
        for m in compiled.finditer(text):
            s, e = m.start(), m.end()
            if not final and s >= limit_at:
                break
            if e == s or base_cp + s < max(last_end, emitted.get(k, -1)):
                continue
            nb += utf8_len(text[q:s])
            q = s
            yield _Located(k, role, _hit(base_cp + s, base_cp + e, nb, nb + utf8_len(text[s:e]),
                                         text[max(0, s - CONTEXT * 4) : s], text[s:e], text[e : e + CONTEXT * 4]))
            last_end = base_cp + e
            found += 1
            if limit is not None and found >= limit:
                return
        base_cp += limit_at
        base_b += utf8_len(text[:limit_at])
        parts = [keep] if keep else []
        size = len(keep)

    try:
        for ev in iter_transcript(path, max_line_bytes=max_line_bytes):
            if cancelled():
                return
            if isinstance(ev, MessageStart):
                k, role, parts, size, base_cp, base_b, last_end = ev.index, ev.role, [], 0, 0, 0, -1
            elif isinstance(ev, Fragment):
                piece = "".join(ev.texts)
                parts.append(piece)
                size += len(piece)
                # Never cut right after a high surrogate: the next fragment may pair with it.
                pending_high = bool(piece) and "\ud800" <= piece[-1] <= "\udbff"
                if size > (1 << 20) + REGEX_OVERLAP and not pending_high:
                    yield from flush(False)
            elif isinstance(ev, MessageEnd):
                yield from flush(True)
                parts = []
            elif isinstance(ev, Incomplete):
                if parts:
                    yield from flush(True)
                    parts = []
                yield finding("incomplete-artifact", path=path, line=ev.line, detail=ev.reason)
            if limit is not None and found >= limit:
                return
    except TranscriptError as exc:
        yield finding("malformed-artifact", path=path, line=exc.line, detail=exc.reason)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
