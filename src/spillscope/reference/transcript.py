"""The transcript artifact (FORMAT.md §6): the writer, a streaming reader and a lazy index.

* :func:`render_transcript` is byte-identical to the reference writer.
* :func:`iter_transcript` is a streaming parser: it yields the metadata, then each
  message's start, fragments and end, and raises :class:`TranscriptError`
  (``file:line: reason``) for a malformed file. A file cut off mid-write is not an
  error: the stream ends with an :class:`Incomplete` event.
* :func:`read_transcript` collects the stream into exact texts.
* :class:`TranscriptIndex` records, in one pass, where each message and every 128th
  fragment start, so any code point offset of a huge message is reached with ``pread``
  without decoding what comes before it. Its memory is proportional to the index.

Fragments are parsed with orjson and, where orjson refuses (lone surrogates as
``\\udXXX``), with the stdlib parser; a pair split across fragments is joined the way
JavaScript string concatenation would join it.
"""

from __future__ import annotations

import io
import os
import re
import threading
from array import array
from itertools import accumulate
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Generator, Iterator, Union

import orjson

from .._fs import open_regular
from .._text import code_point_slices, has_surrogates, js_json_string, js_normalize, js_stringify, js_utf8, loads_exact, utf8_len
from .constants import DEFAULT_MAX_LINE_BYTES, REFERENCE_WARNING

TITLE = "## Referenced session — full projected snapshot"
INTRO = "This transcript is an untrusted, read-only snapshot from another session."
NOTE_1 = "Message text is stored as JSON string fragments, at most 64 Unicode code points per line."
NOTE_2 = "Decode and concatenate the fragments of each message to recover its exact text, including newlines."
FRAGMENT_CODE_POINTS = 64
ROLES = ("user", "assistant")
METADATA_KEYS = ("sessionId", "label", "cwd", "capturedThroughSeq", "capturedFormatVersion")
#: Lines longer than this are refused (a fragment is at most 64 × 6 + 2 bytes).
CHECKPOINT_EVERY = 128
#: :meth:`TranscriptIndex.open` indexes a transcript up to this size whole; a bigger one
#: only as far as its first screen needs (the rest is for a background worker).
OPEN_WHOLE_BYTES = 4 << 20
FAST_CHUNK = 1 << 20
FIRST_CHUNK = 1 << 9

_PREAMBLE = [TITLE, "", INTRO, *REFERENCE_WARNING.split("\n"), ""]
_HEADER = re.compile(r"### Message ([0-9]+): (.*)\Z", re.S)

Source = Union[str, bytes, os.PathLike[str]]


TITLE_LINE = js_utf8(TITLE) + b"\n"


def departs_from_title(path: str | os.PathLike[str]) -> bool:
    """True when the file's first bytes are not the transcript's title line or a prefix of
    it: its content says it is not a transcript, whatever its name says (a tool called
    ``session-reference-1`` spills to a transcript's name). An empty file, or one cut
    inside the title, does not depart. Refuses symlinks; ``OSError`` propagates."""
    fd = open_regular(path)
    try:
        head = os.pread(fd, len(TITLE_LINE), 0)
    finally:
        os.close(fd)
    return not TITLE_LINE.startswith(head)


def render_transcript(data: dict[str, Any], captured_format_version: int) -> str:
    """The saved full projection, exactly as the reference writer renders it.

    ``data`` holds the preview-data keys (``sessionId``, ``label``, ``cwd``,
    ``capturedThroughSeq``) and the full ``conversation`` of ``{role, text}``.
    """
    capture = {k: v for k, v in data.items() if k != "conversation"}
    capture["capturedFormatVersion"] = captured_format_version
    lines = [TITLE, "", INTRO, REFERENCE_WARNING, "", js_stringify(capture, indent=2), "", NOTE_1, NOTE_2]
    for index, item in enumerate(data.get("conversation", []), start=1):
        lines += ["", f"### Message {index}: {item['role']}", ""]
        lines += [js_json_string(s) for s in code_point_slices(item["text"], FRAGMENT_CODE_POINTS)]
    lines.append("")
    return "\n".join(lines)


class TranscriptError(ValueError):
    """A malformed transcript, located: ``str(err)`` is ``path:line: reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class TranscriptMetadata:
    session_id: str
    label: str
    cwd: str | None
    captured_through_seq: int | None
    captured_format_version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "label": self.label,
            "cwd": self.cwd,
            "capturedThroughSeq": self.captured_through_seq,
            "capturedFormatVersion": self.captured_format_version,
        }


@dataclass(frozen=True)
class MessageStart:
    index: int
    role: str
    line: int
    offset: int


@dataclass(frozen=True)
class Fragment:
    """Consecutive fragment lines of one message, decoded (a batch, for speed).

    ``texts[i]`` came from file line ``line + i`` (``raw[i]``, without its newline),
    which starts at byte ``offset + sum(len(r) + 1 for r in raw[:i])``."""

    texts: list[str]
    line: int
    offset: int
    raw: list[bytes]
    #: True when a text holds a surrogate (only the stdlib fallback can produce one).
    surrogates: bool = False

    @property
    def end(self) -> int:
        """File offset just past the batch's last line."""
        return self.offset + sum(map(len, self.raw)) + len(self.raw)

    def code_points(self) -> list[int]:
        return list(map(len, self.texts))


@dataclass(frozen=True)
class MessageEnd:
    index: int
    end_offset: int


@dataclass(frozen=True)
class Incomplete:
    """The file was cut off mid-write; ``line`` is where the stream stopped."""

    line: int
    reason: str


Event = Union[TranscriptMetadata, MessageStart, Fragment, MessageEnd, Incomplete]


@dataclass(frozen=True)
class TranscriptMessage:
    index: int
    role: str
    text: str
    line: int


@dataclass(frozen=True)
class Transcript:
    path: str
    #: ``None`` only when the file was cut off before its metadata block was complete.
    metadata: TranscriptMetadata | None
    messages: tuple[TranscriptMessage, ...]
    #: ``None`` when complete; otherwise why it looks cut off mid-write.
    incomplete: Incomplete | None = None

    @property
    def complete(self) -> bool:
        return self.incomplete is None


def _open(source: Source) -> tuple[BinaryIO, str]:
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(bytes(source)), "<bytes>"
    path = os.fspath(source)
    return os.fdopen(open_regular(path), "rb", buffering=1 << 20), path


def iter_transcript(
    source: Source | BinaryIO, *, name: str | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[Event]:
    """Parse a transcript (a path, its bytes, or a binary stream) as a stream of events."""
    if isinstance(source, (str, bytes, bytearray, os.PathLike)):
        stream, path = _open(source)
    else:
        yield from _Parser(source, name or "<stream>", max_line_bytes).run()
        return
    with stream:
        yield from _Parser(stream, name or path, max_line_bytes).run()


class _Parser:
    def __init__(self, stream: BinaryIO, path: str, max_line_bytes: int) -> None:
        self.stream = stream
        self.path = path
        self.max = max_line_bytes
        self.line = 0
        self.offset = 0

    def fail(self, reason: str, line: int | None = None) -> TranscriptError:
        return TranscriptError(self.path, self.line if line is None else line, reason)

    def next_line(self) -> tuple[bytes | None, bool]:
        """(line without its newline, had_newline); (None, False) at EOF."""
        raw = self.stream.readline(self.max + 1)
        if not raw:
            return None, False
        self.line += 1
        self.offset += len(raw)
        if raw[-1:] == b"\n":
            return raw[:-1], True
        if len(raw) > self.max:
            raise self.fail(f"line exceeds {self.max} bytes")
        return raw, False

    def text_line(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"invalid UTF-8 at byte {exc.start}") from None

    def fixed(self, expected: str, where: str) -> Generator[Event, None, bool]:
        """One fixed line; returns True when the stream ended (incomplete) instead."""
        raw, nl = self.next_line()
        if raw is None:
            yield Incomplete(self.line, "empty file" if self.line == 0 else f"file ends {where}")
            return True
        if not nl and expected.encode().startswith(raw):
            yield Incomplete(self.line, f"file ends {where}")
            return True
        got = self.text_line(raw)
        if got != expected:
            if self.line == 1:
                raise self.fail("not a session-reference transcript: wrong or missing header")
            raise self.fail(f"unexpected line {where} (expected {expected!r})")
        return False

    def run(self) -> Generator[Event, None, None]:
        for expected in _PREAMBLE:
            if (yield from self.fixed(expected, "inside the preamble")):
                return
        meta = yield from self.metadata()
        if meta is None:
            return
        yield meta
        for expected in ("", NOTE_1, NOTE_2):
            if (yield from self.fixed(expected, "before the first message")):
                return
        yield from self.messages()

    def metadata(self) -> Generator[Event, None, TranscriptMetadata | None]:
        start = self.line + 1
        block: list[bytes] = []
        while True:
            raw, nl = self.next_line()
            if raw is None or not nl:
                # A cut inside the block leaves a prefix: incomplete, whatever bytes it ends on.
                yield Incomplete(self.line, "file ends inside the metadata block")
                return None
            block.append(raw)
            if len(block) == 1 and raw != b"{":
                raise self.fail("invalid metadata block: expected '{'")
            if raw == b"}":
                break
            if len(block) > 64:
                raise self.fail("invalid metadata block: no closing '}' within 64 lines", start)
        try:
            value = loads_exact(b"\n".join(block))
        except ValueError as exc:
            raise self.fail(f"invalid metadata block: {exc}", start) from None
        if not isinstance(value, dict):
            raise self.fail("invalid metadata block: not an object", start)
        missing = [k for k in METADATA_KEYS if k not in value]
        if missing:
            raise self.fail("invalid metadata block: missing " + ", ".join(missing), start)
        sid, label, cwd, seq, ver = (value[k] for k in METADATA_KEYS)
        if not isinstance(sid, str) or not isinstance(label, str):
            raise self.fail("invalid metadata block: sessionId and label must be strings", start)
        if cwd is not None and not isinstance(cwd, str):
            raise self.fail("invalid metadata block: cwd must be a string or null", start)
        if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool) or seq < 0):
            raise self.fail("invalid metadata block: capturedThroughSeq must be a non-negative integer or null", start)
        if not isinstance(ver, int) or isinstance(ver, bool):
            raise self.fail("invalid metadata block: capturedFormatVersion must be an integer", start)
        return TranscriptMetadata(sid, label, cwd, seq, ver)

    def trailing_text(self) -> bool:
        """After an unexpected line: True when no message header follows (bounded lookahead)."""
        pos = self.stream.tell()
        try:
            for _ in range(4096):
                raw = self.stream.readline(self.max + 1)
                if not raw:
                    return True
                if raw.startswith(b"### Message "):
                    return False
            return False
        finally:
            self.stream.seek(pos)

    def messages(self) -> Generator[Event, None, None]:
        expected = 1
        separated = False
        while True:
            if not separated:
                raw, nl = self.next_line()
                if raw is None:
                    # Only truncated references are saved, so a transcript has >= 1 message.
                    if expected == 1:
                        yield Incomplete(self.line, "file ends before the first message")
                    return  # complete
                if raw != b"":
                    if expected > 1 and self.trailing_text():
                        raise self.fail("text after the last message")
                    raise self.fail(f"expected a blank line before message {expected}")
            raw, nl = self.next_line()
            if raw is None:
                yield Incomplete(self.line, f"file ends before the header of message {expected}")
                return
            header = self.text_line(raw)
            m = _HEADER.match(header)
            if m is None or not nl:
                if not nl and f"### Message {expected}: ".startswith(header[: len(f"### Message {expected}: ")]):
                    yield Incomplete(self.line, f"file ends inside the header of message {expected}")
                    return
                if expected > 1 and self.trailing_text():
                    raise self.fail("text after the last message")
                raise self.fail(f"expected '### Message {expected}: <role>'")
            number, role = int(m.group(1)), m.group(2)
            if number != expected:
                raise self.fail(f"message number {number} out of sequence (expected {expected})")
            if role not in ROLES:
                raise self.fail(f"unknown role {role!r} in message {expected}")
            header_line = self.line
            raw, nl = self.next_line()
            if raw is None:
                yield Incomplete(self.line, f"message {expected} has a header but no text (dangling header)")
                return
            if raw != b"":
                raise self.fail(f"expected a blank line after the header of message {expected}")
            yield MessageStart(expected, role, header_line, self.offset)
            state = yield from self.fragments(expected)
            if state == "incomplete":
                return
            if state == "eof":
                return
            separated = True
            expected += 1

    def fragments(self, index: int) -> Generator[Event, None, str]:
        """The fragment lines of message ``index``, in big batches.

        Fast path: read a large chunk, cut it at the blank line that ends the message,
        and parse all complete lines with one orjson call (``[l1,l2,...]``). Anything
        unusual in a chunk — lone-surrogate escapes, a bad line, a cut-off file — sends
        that chunk through the line-by-line path, which knows every error and reason."""
        count = 0
        read = self.stream.read
        buf = b""
        # Start small and double: a short message must cost its own bytes, not a whole
        # chunk of what follows it (30,000 short messages would read 30,000 chunks).
        size = FIRST_CHUNK
        while True:
            chunk = read(size)
            size = min(size * 2, FAST_CHUNK)
            data = buf + chunk if buf else chunk
            base = self.offset  # file offset of data[0]
            # Only the lines up to the blank line that ends the message are split.
            stop = 0 if data[:1] == b"\n" else data.find(b"\n\n")
            parts = (data[: stop + 2] if stop >= 0 else data).split(b"\n")
            tail = parts.pop()  # bytes after the last newline (a partial line, or b"")
            try:
                blank = parts.index(b"")  # fragment lines are never empty: a blank line ends the message
            except ValueError:
                blank = -1
            if blank >= 0:
                lines = parts[:blank]
                end = sum(map(len, lines)) + len(lines)  # offset of the blank line in data
                after = end + 1
            elif chunk:
                if not parts and len(tail) > self.max:
                    self.stream.seek(base)
                    return (yield from self.fragments_slow(index, count))
                lines, buf, after = parts, tail, -1
                end = len(data) - len(tail)
            else:
                # EOF without a blank line: the message runs to the end of the file.
                if tail:
                    self.stream.seek(base)
                    return (yield from self.fragments_slow(index, count))
                lines, after = parts, -2
                end = len(data)
            if lines:
                batch = self.batch(lines, base)
                if batch is None:
                    self.stream.seek(base)
                    return (yield from self.fragments_slow(index, count))
                count += len(lines)
                self.line += len(lines)
                self.offset = base + end
                yield batch
            if after >= 0:
                if count == 0:
                    self.line += 1
                    raise self.fail(f"message {index} has no text fragments")
                self.line += 1
                self.offset = base + after
                self.stream.seek(self.offset)
                yield MessageEnd(index, base + end)
                return "separator"
            if after == -2:
                if count == 0:
                    yield Incomplete(self.line, f"message {index} has a header but no text (dangling header)")
                    return "incomplete"
                yield MessageEnd(index, self.offset)
                return "eof"

    def batch(self, lines: list[bytes], base: int) -> Fragment | None:
        """Parse complete fragment lines at once; ``None`` if any needs the slow path."""
        try:
            texts = orjson.loads(b"[" + b",".join(lines) + b"]")
        except orjson.JSONDecodeError:
            return None
        if len(texts) != len(lines) or set(map(type, texts)) != {str}:
            return None
        # One string per line (JSON allows whitespace around it, as orjson.loads(line) does);
        # two values on a line would change the count, and then the slow path says why.
        if max(map(len, texts)) > FRAGMENT_CODE_POINTS or b'""' in lines:
            return None
        # Lines inside one chunk are at most FAST_CHUNK long; only a carried-over first
        # line, or a limit below the chunk size, needs measuring.
        if len(lines[0]) > self.max or (self.max < FAST_CHUNK and max(map(len, lines)) > self.max):
            return None
        return Fragment(texts, self.line + 1, base, lines)

    def fragments_slow(self, index: int, count: int) -> Generator[Event, None, str]:
        loads = orjson.loads
        limit = self.max + 1
        readline = self.stream.readline
        while True:
            pos = self.offset
            raw = readline(limit)
            if not raw:
                if count == 0:
                    yield Incomplete(self.line, f"message {index} has a header but no text (dangling header)")
                    return "incomplete"
                yield MessageEnd(index, pos)
                return "eof"
            self.line += 1
            self.offset += len(raw)
            nl = raw[-1:] == b"\n"
            body = raw[:-1] if nl else raw
            if not nl and len(body) > self.max:
                raise self.fail(f"line exceeds {self.max} bytes")
            if body == b"":
                if count == 0:
                    raise self.fail(f"message {index} has no text fragments")
                yield MessageEnd(index, pos)
                return "separator"
            if body[:1] != b'"':
                if not nl:
                    yield Incomplete(self.line, "file ends without a final newline")
                    return "incomplete"
                if self.trailing_text():
                    raise self.fail("text after the last message")
                raise self.fail(f"fragment line is not a JSON string (message {index})")
            try:
                text = loads(body)
                fallback = False
            except orjson.JSONDecodeError:
                try:
                    text = loads_exact(body)
                    fallback = True
                except ValueError as exc:
                    if not nl:
                        yield Incomplete(self.line, "file ends without a final newline (cut mid-fragment)")
                        return "incomplete"
                    raise self.fail(f"fragment is not a valid JSON string: {exc}") from None
            if not isinstance(text, str):
                raise self.fail(f"fragment line is not a JSON string (message {index})")
            if fallback:
                text = js_normalize(text)
            cps = len(text)
            if cps > FRAGMENT_CODE_POINTS:
                raise self.fail(f"fragment has {cps} code points (at most {FRAGMENT_CODE_POINTS})")
            if cps == 0:
                raise self.fail(f"empty fragment in message {index}")
            count += 1
            yield Fragment([text], self.line, pos, [body], fallback and has_surrogates(text))
            if not nl:
                yield Incomplete(self.line, "file ends without a final newline")
                return "incomplete"


def _join(parts: list[str], had_surrogates: bool) -> str:
    text = "".join(parts)
    # Halves of a pair split across fragments join as in JavaScript.
    return js_normalize(text) if had_surrogates else text


def read_transcript(source: Source, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Transcript:
    """Read a whole transcript (a path, or its bytes) into exact message texts."""
    meta: TranscriptMetadata | None = None
    messages: list[TranscriptMessage] = []
    parts: list[str] = []
    surrogates = False
    current: MessageStart | None = None
    incomplete: Incomplete | None = None
    path = "<bytes>" if isinstance(source, (bytes, bytearray)) else os.fspath(source)
    for ev in iter_transcript(source, max_line_bytes=max_line_bytes):
        if isinstance(ev, Fragment):
            parts.append("".join(ev.texts))
            surrogates = surrogates or ev.surrogates
        elif isinstance(ev, MessageStart):
            current, parts, surrogates = ev, [], False
        elif isinstance(ev, MessageEnd):
            assert current is not None
            messages.append(TranscriptMessage(current.index, current.role, _join(parts, surrogates), current.line))
            current = None
        elif isinstance(ev, TranscriptMetadata):
            meta = ev
        else:
            incomplete = ev
            if current is not None and parts:
                messages.append(TranscriptMessage(current.index, current.role, _join(parts, surrogates), current.line))
    return Transcript(path, meta, tuple(messages), incomplete)


def parse_transcript(text: str) -> Transcript:
    """Read a transcript given as text (as Node would have written it)."""
    return read_transcript(js_utf8(text))


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


class TranscriptIndex:
    """A lazy index over a transcript file; see the module docstring.

    :meth:`open` indexes only as far as asked (the first screen of a 1 GB message is
    ready at once); :meth:`advance` continues — from a worker thread if wanted — and
    :meth:`read` indexes on demand up to what it needs. :meth:`build` does it all."""

    def __init__(self, path: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.metadata: TranscriptMetadata | None = None
        self.messages: list[MessageIndex] = []
        self.incomplete: Incomplete | None = None
        self.size = os.stat(path).st_size
        self.done = False
        self.indexed_bytes = 0
        self._events = iter_transcript(path, max_line_bytes=max_line_bytes)
        self._current: MessageIndex | None = None
        self._lock = threading.RLock()
        #: Why indexing stopped before the end of the file, if it did.
        self.error: TranscriptError | None = None

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, first_code_points: int = 1 << 17,
             max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> TranscriptIndex:
        """Index the metadata and the start of message 1 (at least ``first_code_points``).

        Raises :class:`TranscriptError` only when nothing is readable; a later error is
        kept in :attr:`error` (and raised by the :meth:`advance` that meets it)."""
        index = cls(os.fspath(path), max_line_bytes)
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
    def build(cls, path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> TranscriptIndex:
        index = cls.open(path, first_code_points=0, max_line_bytes=max_line_bytes)
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

    def _apply(self, ev: Event) -> None:
        cur = self._current
        if isinstance(ev, Fragment):
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
        fd = open_regular(self.path)
        try:
            pending = b""
            while offset < msg.end:
                chunk = os.pread(fd, min(1 << 16, msg.end - offset), offset)
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
            os.close(fd)

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
