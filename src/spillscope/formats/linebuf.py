"""Reading a stream's lines, a long line into one buffer reused from line to line.

``BufferedReader.readline`` builds a line longer than its buffer from 1 MiB pieces and
joins them: the pieces, then the joined line, are fresh memory each time, and at 100 MB
a line that is ~25,000 page faults twice over, for every line (glibc hands allocations
over 32 MB straight to ``mmap`` and back to the kernel when freed; smaller ones it
reuses). :class:`LineReader` reads a short line with that same ``readline`` (one call,
in C) and the rest of a long one, piece by piece, into a ``bytearray`` it keeps: the
next long line is written over pages already faulted in.
"""

from __future__ import annotations

import re
from typing import BinaryIO

from ..util import scratch
from ..util.scratch import Scratch, put

#: A piece of a long line: small enough that glibc reuses its memory from piece to piece
#: (see :data:`..util.scratch.PIECE`).
PIECE = scratch.PIECE

_BLANK = re.compile(rb"[ \t\n\r\x0b\x0c]+")


class LineReader:
    """``stream.readline(limit)`` with the same answers; a line longer than :data:`PIECE`
    comes back as a view of the reader's buffer. Let go of it before the next call and
    the next long line reuses the buffer; a view still held is never written over (that
    line gets a buffer of its own)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.scratch = Scratch()

    def readline(self, limit: int) -> bytes | memoryview:
        first = self.stream.readline(min(limit, PIECE))
        if len(first) < PIECE or first[-1:] == b"\n" or limit <= PIECE:
            return first
        buf = self.scratch.take()
        got = put(buf, 0, first)
        while got < limit:
            piece = self.stream.readline(min(limit - got, PIECE))
            if not piece:
                break
            got = put(buf, got, piece)
            if piece[-1:] == b"\n":
                break
        return memoryview(buf)[:got]


def is_blank(line: bytes | memoryview) -> bool:
    """``line.isspace()`` for a line that may be a view (which has no ``isspace``)."""
    if isinstance(line, bytes):
        return line.isspace()
    return _BLANK.fullmatch(line) is not None
