"""Byte buffers reused from one huge input to the next, and UTF-8 written into them.

glibc serves an allocation over 32 MB with an ``mmap`` of its own and unmaps it when it
is freed: every fresh buffer that big is faulted in page by page (a 160 MB log line, the
UTF-8 of its preview, the artifact read to compare them: ~40,000 faults each), while
smaller buffers reuse freed memory. A :class:`Scratch` keeps one ``bytearray`` and writes
each input over the last one's pages; it grows a piece at a time (a mapped block grows
by ``mremap``, no copy) and never shrinks.
"""

from __future__ import annotations

from .text import js_utf8

#: Pieces small enough that glibc reuses their memory from piece to piece: under its
#: default mmap threshold and trim pad (128 KiB). 1 MiB pieces were freed to the kernel
#: and faulted in again, piece after piece (25,000 faults per 160 MB line).
PIECE = 1 << 16
#: Code points encoded at a time (at most 4 bytes each: a piece).
TEXT_PIECE = PIECE // 4


class Scratch:
    """One reusable ``bytearray``; see the module docstring."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = bytearray()

    def take(self, size: int = 0) -> bytearray:
        """The buffer, at least ``size`` bytes long, that no view of an earlier use still
        sees: a view still held (by a caller, or an exception's traceback) keeps the old
        buffer, and this use gets a new one, so no one's bytes change under them."""
        buf = self.buf
        try:
            buf.append(0)  # a bytearray with a view exported refuses to change size
        except BufferError:
            buf = self.buf = bytearray()
        else:
            del buf[-1]
        while len(buf) < size:
            buf.extend(bytes(min(PIECE, size - len(buf))))
        return buf


def put(buf: bytearray, at: int, data: bytes) -> int:
    """Write ``data`` at ``at`` (at most ``len(buf)``), growing ``buf``; where it ends."""
    end = at + len(data)
    buf[at:end] = data
    return end


def put_utf8(buf: bytearray, at: int, text: str) -> int:
    """Write ``js_utf8(text)`` at ``at`` a piece at a time (never the whole encoding as a
    fresh buffer of its own); where it ends. A piece never ends between the two halves
    of a surrogate pair: :func:`js_utf8` of the whole joins them into one code point."""
    n = len(text)
    if n <= TEXT_PIECE:
        return put(buf, at, js_utf8(text))
    i = 0
    while i < n:
        j = min(n, i + TEXT_PIECE)
        if j < n and "\ud800" <= text[j - 1] <= "\udbff" and "\udc00" <= text[j] <= "\udfff":
            j += 1
        at = put(buf, at, js_utf8(text[i:j]))
        i = j
    return at
