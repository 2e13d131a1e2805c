"""The lazy ``pread`` index over a transcript file (:class:`TranscriptIndex`).

It records, in one pass, where each message and every 128th fragment start, so any
code point offset of a huge message is reached with ``pread`` without decoding what
comes before it; its memory is proportional to the index. Separate from the parser,
which it drives, because it owns random access rather than parsing.
"""

from __future__ import annotations

import os
import threading
from array import array
from itertools import accumulate
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import orjson

from ...util import native
from ...storage import Storage, open_storage
from ...util.text import has_surrogates, js_normalize, loads_exact, utf8_len
from .layout import DEFAULT_MAX_LINE_BYTES, FRAGMENT_CODE_POINTS, JSON_SPACE, ROLES
from .reader import iter_transcript
from .records import Event, Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, TranscriptMetadata

#: Lines longer than this are refused (a fragment is at most 64 × 6 + 2 bytes).
CHECKPOINT_EVERY = 128
#: :meth:`TranscriptIndex.open` indexes a transcript up to this size whole; a bigger one
#: only as far as its first screen needs (the rest is for a background worker).
OPEN_WHOLE_BYTES = 4 << 20


@dataclass
class MessageIndex:
    """Where one message lives in the file. ``checkpoints`` holds, for every
    ``CHECKPOINT_EVERY``-th fragment line, where it starts in the file and how many code
    points, UTF-8 bytes and newlines of the text come before it."""

    index: int
    role: str
    header_line: int
    first_line: int
    start: int
    end: int = 0
    fragments: int = 0
    code_points: int = 0
    utf8_bytes: int = 0
    newlines: int = 0
    #: Flat (file offset, code point, text byte, newline count) quadruples.
    checkpoints: "array[int]" = field(default_factory=lambda: array("q"))


def _index_batch(cur: MessageIndex, ev: Fragment) -> None:
    """Add a batch of fragments to ``cur``: totals, plus a checkpoint every 128 lines.

    The batch is joined once; checkpoint segments are slices of it, and the totals are
    the sums of the segments (each UTF-8 length is taken once, not twice)."""
    texts, offset = ev.texts, ev.offset
    whole = "".join(texts)
    ascii_ = whole.isascii()  # O(1) for a str: then bytes == code points
    first = (-cur.fragments) % CHECKPOINT_EVERY
    nbytes, nl = cur.utf8_bytes, cur.newlines
    prev = 0
    if first < len(texts):
        cps = [0, *accumulate(map(len, texts))]
        raws = [0, *accumulate(map(len, ev.raw))]
        base_cp = cur.code_points
        for i in range(first, len(texts), CHECKPOINT_EVERY):
            seg = whole[prev : cps[i]]
            nbytes += len(seg) if ascii_ else utf8_len(seg)
            nl += seg.count("\n")
            cur.checkpoints.extend((offset + raws[i] + i, base_cp + cps[i], nbytes, nl))
            prev = cps[i]
    rest = whole[prev:] if prev else whole
    nbytes += len(rest) if ascii_ else utf8_len(rest)
    nl += rest.count("\n")
    if ev.surrogates:
        # Halves of a pair in two segments: the batch total counts them joined, as before.
        nbytes = cur.utf8_bytes + utf8_len(whole)
    cur.fragments += len(texts)
    cur.code_points += len(whole)
    cur.utf8_bytes = nbytes
    cur.newlines = nl
    cur.end = ev.end


@dataclass(frozen=True)
class _Counted:
    """Fragment lines of the current message counted by the native scanner: the
    message's new totals after them, their checkpoints, and where they end."""

    lines: int
    code_points: int
    utf8_bytes: int
    newlines: int
    checkpoints: bytes  # native int64 quadruples, as MessageIndex.checkpoints holds them
    end: int


#: Raw bytes the native scanner reads per step (one :meth:`TranscriptIndex.advance` step).
NATIVE_CHUNK = 1 << 20
_NATIVE_HEADERS = {role: role.encode() + b"\n\n" for role in ROLES}


def _closing(stream: BinaryIO, events: Iterator[Event | _Counted]) -> Iterator[Event | _Counted]:
    with stream:
        yield from events


def _events(stream: BinaryIO, path: str, max_line_bytes: int) -> Iterator[Event | _Counted]:
    """The parser's events; with the native scanner, a local file's plain fragment lines
    are counted by it instead (one C pass per chunk, no decoding). The parser reads the
    preamble and the metadata; from message 1 on the scanner takes over. A line it does
    not accept as plain (a lone surrogate, an escaped pair split over two lines) is decoded
    here as the parser's line-by-line path decodes it, and the scanner goes on after it;
    anything that path would not accept goes back to the exact parser, which re-reads the
    file and resumes at that line (so every error and its location are the parser's)."""
    events = iter_transcript(stream, name=path, max_line_bytes=max_line_bytes)
    nat = native.NATIVE
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation: an object store's stream, no descriptor
        nat = None
    if nat is None:
        yield from events
        return
    first: MessageStart | None = None
    for ev in events:
        yield ev
        if isinstance(ev, MessageStart):
            first = ev
            break
    if first is None:
        return
    events.close()  # type: ignore[attr-defined]  # a generator: the scanner owns the file now
    size = os.fstat(fd).st_size
    buf = bytearray(NATIVE_CHUNK)
    view = memoryview(buf)
    k, line, pos = first.index, first.line + 1, first.offset  # line: the last line read
    lines = cp = nbytes = nl = 0
    ended = False  # True once message k's end was yielded
    # The buffer holds file bytes [pos - off, pos - off + n): ``pos`` is at ``off``. It is
    # read again only when the scan reaches its end (or a line it cuts), never per message
    # or per irregular line: 30,000 short messages cost their own bytes.
    n = off = 0
    at_eof = False
    while True:
        if off >= n:
            # Never past the size fstat gave: what the index reports as done is what it read.
            n = os.preadv(fd, [view[: min(NATIVE_CHUNK, size - pos)]], pos) if pos < size else 0
            off = 0
            at_eof = pos + n >= size
        status, used, count, cp, nbytes, nl, cps = nat.index_lines(
            view[off:n], n - off, at_eof, lines, max_line_bytes, pos, cp, nbytes, nl)
        if count:
            lines += count
            line += count
            yield _Counted(count, cp, nbytes, nl, cps, pos + used)
        pos += used
        off += used
        if status == 0 and not at_eof and off > 0:
            off = n  # the buffer's whole lines are counted: read on from the line it cuts
            continue
        # An irregular line, decoded here when it is all in the buffer (it is, unless it
        # is longer than the buffer), and the scan goes on after it in the same buffer.
        stop = buf.find(b"\n", off, n) if status == 2 else -1
        if stop >= 0 and stop - off <= max_line_bytes:
            frag = _fragment_line(bytes(view[off:stop]), line + 1, pos)
            if frag is not None:
                text = frag.texts[0]
                lines, line = lines + 1, line + 1
                cp, nbytes, nl = cp + len(text), nbytes + utf8_len(text), nl + text.count("\n")
                yield frag
                pos, off = frag.end, stop + 1
                continue
        if status == 0 and at_eof and pos >= size and lines:
            yield MessageEnd(k, pos)  # the file ends after the last fragment line
            return
        if status == 1 and lines:
            yield MessageEnd(k, pos)
            ended = True
            role = _native_header(fd, pos + 1, k + 1)
            if role is not None:
                header = f"### Message {k + 1}: ".encode() + _NATIVE_HEADERS[role]
                k, line, pos, off = k + 1, line + 3, pos + 1 + len(header), min(n, off + 1 + len(header))
                lines = cp = nbytes = nl = 0
                ended = False
                yield MessageStart(k, role, line - 1, pos)
                continue
        break
    # Anything else (an irregular line, a file cut off, an odd header): the exact parser.
    yield from _resume(stream, path, max_line_bytes, k, pos, ended)


def _fragment_line(body: bytes, line: int, pos: int) -> Fragment | None:
    """Fragment line ``line`` (``body``, without its newline, at file offset ``pos``) as
    the parser's line-by-line path (``fragments_slow``) reads it, or None when that path
    would not accept it as it stands. The index totals of single-line fragments do not
    depend on how the parser batched them, so counting this one here and the rest
    natively gives the parser's index."""
    if body.lstrip(JSON_SPACE)[:1] != b'"':
        return None
    try:
        text = orjson.loads(body)
        fallback = False
    except orjson.JSONDecodeError:
        try:
            text = loads_exact(body)
            fallback = True
        except ValueError:
            return None
    if not isinstance(text, str):
        return None
    if fallback:
        text = js_normalize(text)
    if not 1 <= len(text) <= FRAGMENT_CODE_POINTS:
        return None
    return Fragment([text], line, pos, [body], fallback and has_surrogates(text))


def _native_header(fd: int, at: int, k: int) -> str | None:
    """The role when the file holds exactly the writer's header of message ``k`` and the
    blank line after it at ``at``, followed by more bytes (a fragment line or not)."""
    head = os.pread(fd, 64, at)
    prefix = f"### Message {k}: ".encode()
    if not head.startswith(prefix):
        return None
    for role, rest in _NATIVE_HEADERS.items():
        if head.startswith(rest, len(prefix)) and len(head) > len(prefix) + len(rest):
            return role
    return None


def _resume(stream: BinaryIO, path: str, max_line_bytes: int, k: int, offset: int,
            ended: bool) -> Iterator[Event]:
    """The exact parser's events from message ``k``'s fragment line at ``offset`` on (or,
    when ``ended``, from after message ``k``): it parses the file again from the start
    and drops what the scanner already yielded."""
    stream.seek(0)
    current = 0
    for ev in iter_transcript(stream, name=path, max_line_bytes=max_line_bytes):
        if isinstance(ev, TranscriptMetadata):
            continue
        if isinstance(ev, MessageStart):
            current = ev.index
            if current <= k:
                continue
        elif isinstance(ev, (Fragment, MessageEnd)) and (current < k or (current == k and ended)):
            continue
        elif isinstance(ev, Fragment) and current == k:
            ev = _lines_from(ev, offset)
            if not ev.raw:
                continue
        yield ev


def _lines_from(ev: Fragment, offset: int) -> Fragment:
    """The lines of a batch that start at or after file ``offset``."""
    at, i = ev.offset, 0
    while i < len(ev.raw) and at < offset:
        at += len(ev.raw[i]) + 1
        i += 1
    if i == 0:
        return ev
    return Fragment(ev.texts[i:], ev.line + i, at, ev.raw[i:], ev.surrogates and i < len(ev.raw))


class TranscriptIndex:
    """A lazy index over a transcript file; see the module docstring.

    :meth:`open` indexes only as far as asked (the first screen of a 1 GB message is
    ready at once); :meth:`advance` continues — from a worker thread if wanted — and
    :meth:`read` indexes on demand up to what it needs. :meth:`build` does it all."""

    def __init__(self, path: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, storage: Storage | None = None) -> None:
        self.path = path
        #: Where the file lies (its root's store, or the one its path names).
        self.storage = storage if storage is not None else open_storage(path)
        self.max_line_bytes = max_line_bytes
        self.metadata: TranscriptMetadata | None = None
        self.messages: list[MessageIndex] = []
        self.incomplete: Incomplete | None = None
        stream, self.size = self.storage.open_sized(path)  # one open (one GET on S3) for both
        self.done = False
        self.indexed_bytes = 0
        self._events = _closing(stream, _events(stream, path, max_line_bytes))
        self._current: MessageIndex | None = None
        self._lock = threading.RLock()
        #: Why indexing stopped before the end of the file, if it did.
        self.error: TranscriptError | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, first_code_points: int = 1 << 17,
             max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, storage: Storage | None = None) -> TranscriptIndex:
        """Index the metadata and the start of message 1 (at least ``first_code_points``).

        Raises :class:`TranscriptError` only when nothing is readable; a later error is
        kept in :attr:`error` (and raised by the :meth:`advance` that meets it)."""
        index = cls(os.fspath(path), max_line_bytes, storage)
        index.ensure(1, first_code_points)
        if index.size <= OPEN_WHOLE_BYTES:
            index.ensure(None)  # a small transcript: indexed whole at once
        if index.error is not None and not index.messages:
            raise index.error  # nothing before the error to show
        if index.metadata is None and index.done:
            inc = index.incomplete
            raise TranscriptError(index.path, inc.line if inc else 1, inc.reason if inc else "empty file")
        return index

    @classmethod
    def build(cls, path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
              storage: Storage | None = None) -> TranscriptIndex:
        index = cls.open(path, first_code_points=0, max_line_bytes=max_line_bytes, storage=storage)
        while not index.advance():
            pass
        if index.error is not None:  # met while opening
            raise index.error
        return index

    def advance(self, steps: int = 16) -> bool:
        """Index up to ``steps`` more events (about a MiB each); True once the file is done."""
        with self._lock:
            for _ in range(steps):
                if self.done:
                    return True
                try:
                    ev = next(self._events)
                except StopIteration:
                    self.done = True
                    self.indexed_bytes = self.size
                    return True
                except TranscriptError as exc:
                    # Indexing stops here for good; what came before stays readable.
                    self.error, self.done = exc, True
                    raise
                self._apply(ev)
            return self.done

    def ensure(self, k: int | None, code_points: int | None = None) -> None:
        """Index until message ``k`` has ``code_points`` indexed (None: all of it), or the
        end (``k`` None: to the end). Never raises a :class:`TranscriptError`: indexing
        stops there, :attr:`error` says why, and what came before stays readable — a
        reader jumping ahead must not fail where the background indexing reports."""
        with self._lock:
            while not self.done:
                if k is not None and len(self.messages) >= k:
                    msg = self.messages[k - 1]
                    if msg is not self._current or (code_points is not None and msg.code_points >= code_points):
                        return
                try:
                    self.advance(1)
                except TranscriptError:
                    return

    def _apply(self, ev: Event | _Counted) -> None:
        cur = self._current
        if isinstance(ev, _Counted):
            assert cur is not None
            cur.fragments += ev.lines
            cur.code_points, cur.utf8_bytes, cur.newlines = ev.code_points, ev.utf8_bytes, ev.newlines
            cur.checkpoints.frombytes(ev.checkpoints)
            cur.end = self.indexed_bytes = ev.end
        elif isinstance(ev, Fragment):
            assert cur is not None
            _index_batch(cur, ev)
            self.indexed_bytes = cur.end
        elif isinstance(ev, MessageStart):
            cur = MessageIndex(ev.index, ev.role, ev.line, ev.line + 2, ev.offset, ev.offset)
            self.messages.append(cur)
            self._current = cur
        elif isinstance(ev, MessageEnd):
            assert cur is not None
            cur.end = ev.end_offset
            self._current = None
        elif isinstance(ev, TranscriptMetadata):
            self.metadata = ev
        elif isinstance(ev, Incomplete):
            self.incomplete = ev
            if cur is not None:
                if cur.fragments == 0:
                    self.messages.pop()
                self._current = None

    @property
    def progress(self) -> float:
        return 1.0 if self.done or self.size == 0 else min(1.0, self.indexed_bytes / self.size)

    def _checkpoint(self, msg: MessageIndex, field_no: int, value: int) -> int:
        """Index of the last checkpoint whose ``field_no`` value is <= ``value``."""
        cps = msg.checkpoints
        lo, hi = 0, len(cps) // 4 - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if cps[4 * mid + field_no] <= value:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _fragments_from(self, msg: MessageIndex, cp_index: int) -> Iterator[str]:
        """Decoded fragments of ``msg`` from checkpoint ``cp_index`` on, read with ``pread``."""
        offset = msg.checkpoints[4 * cp_index]
        reader = self.storage.open_reader(self.path)
        try:
            pending = b""
            while offset < msg.end:
                chunk = reader.pread(min(1 << 16, msg.end - offset), offset)
                if not chunk:
                    break
                offset += len(chunk)
                pending += chunk
                lines = pending.split(b"\n")
                pending = b"" if offset >= msg.end else lines.pop()
                for raw in lines:
                    if raw:
                        yield loads_exact(raw)
        finally:
            reader.close()

    def read(self, k: int, start: int = 0, count: int | None = None) -> str:
        """Code points ``[start, start+count)`` of message ``k`` (1-based), via ``pread``."""
        self.ensure(k, None if count is None else start + count)
        msg = self.messages[k - 1]
        start = max(0, min(start, msg.code_points))
        stop = msg.code_points if count is None else min(msg.code_points, start + max(0, count))
        if stop <= start or not msg.checkpoints:
            return ""
        c = self._checkpoint(msg, 1, start)
        cp = msg.checkpoints[4 * c + 1]
        out: list[str] = []
        for frag in self._fragments_from(msg, c):
            n = len(frag)
            if cp + n > start:
                out.append(frag[max(0, start - cp) : stop - cp])
            cp += n
            if cp >= stop:
                break
        return js_normalize("".join(out))

    def position(self, k: int, cp_offset: int) -> tuple[int, int]:
        """(0-based line, UTF-8 byte offset) of code point ``cp_offset`` in message ``k``."""
        self.ensure(k, cp_offset + 1)
        msg = self.messages[k - 1]
        cp_offset = max(0, min(cp_offset, msg.code_points))
        if not msg.checkpoints:
            return 0, 0
        c = self._checkpoint(msg, 1, cp_offset)
        _, cp, nbytes, lines = msg.checkpoints[4 * c : 4 * c + 4]
        for frag in self._fragments_from(msg, c):
            if cp + len(frag) >= cp_offset:
                part = frag[: cp_offset - cp]
                return lines + part.count("\n"), nbytes + utf8_len(part)
            cp += len(frag)
            nbytes += utf8_len(frag)
            lines += frag.count("\n")
        return lines, nbytes

    def offset_of_line(self, k: int, line: int) -> int:
        """Code point offset where 0-based ``line`` of message ``k`` starts (clamped)."""
        self.ensure(k)
        msg = self.messages[k - 1]
        if line <= 0 or not msg.checkpoints:
            return 0
        line = min(line, msg.newlines)
        c = self._checkpoint(msg, 3, line - 1)
        _, cp, _, lines = msg.checkpoints[4 * c : 4 * c + 4]
        for frag in self._fragments_from(msg, c):
            at = -1
            while lines < line:
                at = frag.find("\n", at + 1)
                if at < 0:
                    break
                lines += 1
            if lines >= line and at >= 0:
                return int(cp + at + 1)
            cp += len(frag)
        return msg.code_points

    def offset_of_byte(self, k: int, byte: int) -> int:
        """Code point offset of the character holding UTF-8 byte ``byte`` of message ``k``."""
        self.ensure(k)
        msg = self.messages[k - 1]
        if byte <= 0 or not msg.checkpoints:
            return 0
        c = self._checkpoint(msg, 2, byte)
        _, cp, nbytes, _ = msg.checkpoints[4 * c : 4 * c + 4]
        for frag in self._fragments_from(msg, c):
            size = utf8_len(frag)
            if nbytes + size > byte:
                for ch in frag:
                    w = utf8_len(ch)
                    if nbytes + w > byte:
                        return cp
                    nbytes += w
                    cp += 1
            cp += len(frag)
            nbytes += size
        return msg.code_points
