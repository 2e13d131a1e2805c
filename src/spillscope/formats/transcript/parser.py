"""The streaming transcript parser (:class:`_Parser`), with its fast and slow fragment paths.

It yields the metadata, then each message's start, fragments and end, and raises
:class:`TranscriptError` (``file:line: reason``) for a malformed file; a file cut off
mid-write ends the stream with an :class:`Incomplete` event. Fragments are parsed in
big batches with one orjson call and, where orjson refuses (lone surrogates as
``\\udXXX``) or a line is unusual, line by line with the stdlib parser. Kept apart from
the entry points in :mod:`.reader` because this state machine is the hot path.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, BinaryIO, Generator

from ...util.lazy import deferred_module
from ...util.text import has_surrogates, js_normalize, loads_exact
from .layout import (FRAGMENT_CODE_POINTS, INTRO, JSON_SPACE, METADATA_KEYS, NOTE_1, NOTE_2, REFERENCE_WARNING, ROLES,
                     TITLE)
from .records import Event, Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, TranscriptMetadata

if TYPE_CHECKING:
    import orjson
else:
    # loaded when fragment lines are first parsed (6.5 ms of CPU to import): a search that
    # only skips and decodes in C, or reads a header, never needs it
    orjson = deferred_module("orjson", globals())

FAST_CHUNK = 1 << 20
FIRST_CHUNK = 1 << 9

_PREAMBLE = [TITLE, "", INTRO, *REFERENCE_WARNING.split("\n"), ""]
_HEADER = re.compile(r"### Message ([0-9]+): (.*)\Z", re.S)


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
            if body.lstrip(JSON_SPACE)[:1] != b'"':
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
