"""What the reader shows: a transcript (through the core's lazy index) or a tool output,
behind one small interface. Only the core parses formats; this adapts them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ...storage import open_storage
from ...util.text import js_normalize, utf8_len
from ...formats.transcript.index import TranscriptIndex

#: Tool outputs bigger than this are shown from their start only.
MAX_PLAIN_BYTES = 64 << 20


@dataclass(frozen=True)
class DocMessage:
    """One message of the document view: its role and its size in code points, bytes and lines."""

    index: int
    role: str
    code_points: int
    utf8_bytes: int
    lines: int


class Document(Protocol):
    path: str

    @property
    def messages(self) -> list[DocMessage]: ...
    @property
    def note(self) -> str: ...
    @property
    def done(self) -> bool: ...
    @property
    def error(self) -> str | None: ...

    def advance(self) -> bool: ...

    def read(self, k: int, start: int = 0, count: int | None = None) -> str: ...
    def position(self, k: int, cp: int) -> tuple[int, int]: ...
    def offset_of_line(self, k: int, line: int) -> int: ...
    def offset_of_byte(self, k: int, byte: int) -> int: ...


class TranscriptDocument:
    """A transcript through the core's incremental index: open at once, index in the background."""

    def __init__(self, index: TranscriptIndex) -> None:
        self.index = index
        self.path = index.path

    @classmethod
    def open(cls, path: str) -> TranscriptDocument:
        return cls(TranscriptIndex.open(path))

    @property
    def messages(self) -> list[DocMessage]:
        return [DocMessage(m.index, m.role, m.code_points, m.utf8_bytes, m.newlines + 1) for m in self.index.messages]

    @property
    def note(self) -> str:
        if not self.index.done:
            return f"indexing {self.index.progress:.0%}"
        if self.index.error is not None:
            return f"malformed at line {self.index.error.line}: {self.index.error.reason} (read up to there)"
        inc = self.index.incomplete
        return "" if inc is None else f"incomplete: {inc.reason}"

    @property
    def done(self) -> bool:
        return self.index.done

    @property
    def error(self) -> str | None:
        """Where and why the transcript stops being readable, if it does."""
        return None if self.index.error is None else str(self.index.error)

    def advance(self) -> bool:
        return self.index.advance(1)

    def read(self, k: int, start: int = 0, count: int | None = None) -> str:
        return self.index.read(k, start, count)

    def position(self, k: int, cp: int) -> tuple[int, int]:
        return self.index.position(k, cp)

    def offset_of_line(self, k: int, line: int) -> int:
        return self.index.offset_of_line(k, line)

    def offset_of_byte(self, k: int, byte: int) -> int:
        return self.index.offset_of_byte(k, byte)


class PlainDocument:
    """A tool-output artifact: one message, decoded once (bounded by MAX_PLAIN_BYTES)."""

    def __init__(self, path: str) -> None:
        self.path = path
        store = open_storage(path)  # a local file or an s3:// object (ranged GET)
        reader = store.open_reader(path)
        try:
            size = store.size(path)
            data = reader.pread(min(size, MAX_PLAIN_BYTES), 0)
        finally:
            reader.close()
        self.note = f"showing the first {MAX_PLAIN_BYTES >> 20} MiB of {size} bytes" if size > MAX_PLAIN_BYTES else ""
        self.text = js_normalize(data.decode("utf-8", "replace"))
        self.messages = [DocMessage(1, "tool output", len(self.text), len(data), self.text.count("\n") + 1)]
        self.done = True
        self.error: str | None = None

    def advance(self) -> bool:
        return True

    def read(self, k: int, start: int = 0, count: int | None = None) -> str:
        return self.text[start : None if count is None else start + count]

    def position(self, k: int, cp: int) -> tuple[int, int]:
        head = self.text[:cp]
        return head.count("\n"), utf8_len(head)

    def offset_of_line(self, k: int, line: int) -> int:
        at = -1
        for _ in range(max(0, line)):
            at = self.text.find("\n", at + 1)
            if at < 0:
                return len(self.text)
        return at + 1

    def offset_of_byte(self, k: int, byte: int) -> int:
        return len(self.text.encode("utf-8", "surrogatepass")[: max(0, byte)].decode("utf-8", "ignore"))


def open_document(path: str, kind: str) -> Document:
    if kind == "session-reference-transcript":
        return TranscriptDocument.open(path)
    return PlainDocument(path)
