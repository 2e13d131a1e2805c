"""Reading a stream's lines, a long line into one buffer reused from line to line.

``BufferedReader.readline`` builds a line longer than its buffer from 1 MiB pieces and
joins them: the pieces, then the joined line, are fresh memory each time, and at 100 MB
a line that is ~50,000 page faults twice over, for every line (glibc hands allocations
over 32 MB straight to ``mmap`` and back to the kernel when freed; smaller ones it
reuses). :class:`LineReader` reads a short line with that same ``readline`` (one call,
in C) and the rest of a long one, piece by piece, into a ``bytearray`` it keeps: the
next long line is written over pages already faulted in.
"""

from __future__ import annotations

import re
from typing import BinaryIO

#: A piece of a long line: small enough that glibc reuses its memory from piece to piece.
PIECE = 1 << 20

_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]+")


class LineReader:
    """``stream.readline(limit)`` with the same answers; a line longer than :data:`PIECE`
    comes back as a view of the reader's buffer. Let go of it before the next call and
    the next long line reuses the buffer; a view still held is never written over (that
    line gets a buffer of its own)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.buf = bytearray()

    def readline(self, limit: int) -> bytes | memoryview:
        first = self.stream.readline(min(limit, PIECE))
        if len(first) < PIECE or first[-1:] == b"\n" or limit <= PIECE:
            return first
        self._own()
        got = self._put(0, first)
        while got < limit:
            piece = self.stream.readline(min(limit - got, PIECE))
            if not piece:
                break
            got = self._put(got, piece)
            if piece[-1:] == b"\n":
                break
        return memoryview(self.buf)[:got]

    def _own(self) -> None:
        """Make sure no view of an earlier line still sees the buffer: a bytearray with a
        view exported refuses to change size, so a one-byte grow and shrink tells."""
        try:
            self.buf.append(0)
        except BufferError:
            self.buf = bytearray()
        else:
            del self.buf[-1]

    def _put(self, at: int, piece: bytes) -> int:
        end = at + len(piece)
        if end > len(self.buf):
            # Grows in place (glibc's realloc of a mapped block remaps it, no copy).
            self.buf.extend(bytes(end - len(self.buf)))
        self.buf[at:end] = piece
        return end


def is_blank(line: bytes | memoryview) -> bool:
    """``line.isspace()`` for a line that may be a view (which has no ``isspace``)."""
    if isinstance(line, bytes):
        return line.isspace()
    return _BLANK.fullmatch(line) is not None
