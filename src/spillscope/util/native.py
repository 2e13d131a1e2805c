"""Which byte scanners run: the C accelerator ``spillscope._native``, or pure Python.

The extension is optional (an install without a compiler has none) and only ever an
accelerator: every caller has a pure-Python path with identical results. ``NATIVE`` is
the module, or ``None`` when it is missing or ``SPILLSCOPE_NO_NATIVE=1`` is set; callers
read it at call time, so tests can switch paths (``native.NATIVE = None``) in one process.
"""

from __future__ import annotations

import os
from typing import Protocol, Union

ENV = "SPILLSCOPE_NO_NATIVE"
Buffer = Union[bytes, bytearray, memoryview]


class Scanners(Protocol):
    """What ``spillscope._native`` offers (its stub, ``_native.pyi``, says the same)."""

    def deframe(self, buf: Buffer, end: int = ..., /) -> bytes | None: ...
    def deframe_into(self, buf: Buffer, end: int, out: bytearray, /) -> int: ...
    def escaped_stats(self, buf: Buffer, start: int = ..., end: int = ..., /) -> tuple[int, int] | None: ...
    def utf8_stats(self, buf: Buffer, start: int = ..., end: int = ..., /) -> tuple[int, int] | None: ...
    def survey(self, buf: Buffer, end: int, /) -> tuple[bool, tuple[int, int] | None]: ...
    def simd(self, flag: int = ..., /) -> bool: ...
    def find_ci(self, buf: Buffer, needle: Buffer, start: int = ..., /) -> int: ...
    def find(self, buf: Buffer, needle: Buffer, start: int = ..., /) -> int: ...
    def canonical(self, buf: Buffer, /) -> bool: ...
    def index_lines(self, buf: Buffer, end: int, at_eof: bool, fragments: int, max_line: int, base: int,
                    cp: int, nbytes: int, newlines: int, /) -> tuple[int, int, int, int, int, int, bytes]: ...


def _load() -> Scanners | None:
    if os.environ.get(ENV, "") not in ("", "0"):
        return None
    try:
        from .. import _native
    except ImportError:
        return None
    return _native


NATIVE: Scanners | None = _load()
