"""Which byte scanners run: the C accelerator ``spillscope._native``, or pure Python.

The extension is optional (an install without a compiler has none) and only ever an
accelerator: every caller has a pure-Python path with identical results. ``NATIVE`` is
the module, or ``None`` when it is missing or ``SPILLSCOPE_NO_NATIVE=1`` is set; callers
read it at call time, so tests can switch paths (``native.NATIVE = None``) in one process.
"""

from __future__ import annotations

import importlib
import os
from mmap import mmap
from typing import Protocol, Union

ENV = "SPILLSCOPE_NO_NATIVE"
Buffer = Union[bytes, bytearray, memoryview, mmap]


class Scanners(Protocol):
    """What ``spillscope._native`` offers (its stub, ``_native.pyi``, says the same)."""

    def deframe(self, buf: Buffer, end: int = ..., /) -> bytes | None: ...
    def deframe_into(self, buf: Buffer, end: int, out: bytearray, /) -> int: ...
    def escaped_stats(self, buf: Buffer, start: int = ..., end: int = ..., /) -> tuple[int, int] | None: ...
    def utf8_stats(self, buf: Buffer, start: int = ..., end: int = ..., /) -> tuple[int, int] | None: ...
    def survey(self, buf: Buffer, end: int, /) -> tuple[bool, tuple[int, int] | None]: ...
    def simd(self, flag: int = ..., /) -> bool: ...
    def message_text(self, raw: Buffer, start: int, end: int, out: Buffer, /) -> tuple[int, int]: ...
    def find_ci(self, buf: Buffer, needle: Buffer, start: int = ..., /) -> int: ...
    def find(self, buf: Buffer, needle: Buffer, start: int = ..., /) -> int: ...
    def count(self, buf: Buffer, byte: int, start: int = ..., end: int = ..., /) -> int: ...
    def halves(self, buf: Buffer, start: int, end: int, needle: bytes, folded: bool, /) -> int: ...
    def avx512(self, flag: int = ..., /) -> bool: ...
    def clean_passes(self, flag: int = ..., /) -> bool: ...
    def canonical(self, buf: Buffer, /) -> bool: ...
    def read_files(self, paths: list[bytes], max_each: int, out: bytearray, /) -> list[tuple[int, int, int]]: ...
    def prefilter(self, paths: list[bytes], kinds: bytes, plain: bytes, escaped: bytes, folded: bool,
                  max_size: int, threads: int, chunk: int = ..., transcript_max: int = ...,
                  share_above: int = ..., /) -> bytes: ...
    def skip_lines(self, fd: int, pos: int, end: int, needle: Buffer, folded: bool, keep: int, /) -> tuple[int, int, int]: ...
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


def describe() -> str:
    """Whether the accelerator runs, and if not why (for ``spillscope --version``)."""
    if NATIVE is not None:
        return "C accelerator: active"
    value = os.environ.get(ENV, "")
    if value not in ("", "0"):
        return f"C accelerator: off ({ENV}={value}; pure Python, identical results)"
    try:
        importlib.import_module("spillscope._native")
    except ImportError as exc:
        # Built only where the install found a compiler and the Python headers.
        return f"C accelerator: not built ({exc}); pure Python, identical results"
    return "C accelerator: off (pure Python, identical results)"
