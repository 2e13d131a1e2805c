"""The checks every dialect shares: a spill file's bytes against what a notice says of them.

Each compares exact bytes: a text from a transcript is first encoded as the agent (Node)
wrote it (:func:`spillscope.util.text.js_utf8`: a lone surrogate becomes U+FFFD), and a
file is read through a no-follow descriptor. A check returns ``None`` when it passes, or a
short reason (with the first differing byte offset) when it does not.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from ..storage.local import open_regular
from ..util.text import js_utf8


@dataclass(frozen=True, slots=True)
class Read:
    """A spill file's bytes, or why they could not be read (``gone``: it vanished)."""

    data: bytes | None
    error: str | None = None
    gone: bool = False
    symlink: bool = False


def read_spill(path: str) -> Read:
    """The whole file, never through a symlink; what went wrong otherwise (gone ≠ unreadable)."""
    import errno

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return Read(None, "no such file", gone=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Read(None, "a symlink (never followed)", symlink=True)
        return Read(None, exc.strerror or str(exc))
    try:
        with os.fdopen(fd, "rb") as f:
            return Read(f.read())
    except OSError as exc:
        return Read(None, exc.strerror or str(exc))


def first_difference(a: bytes, b: bytes) -> int:
    """The first byte offset where ``a`` and ``b`` differ (the shorter one's length if one is a prefix)."""
    n = min(len(a), len(b))
    lo, hi = 0, n
    # Bisect on slices (memcmp-speed): a per-byte loop over a 50 MB file would take seconds.
    while lo < hi:
        mid = (lo + hi) // 2
        if a[lo:mid + 1] == b[lo:mid + 1]:
            lo = mid + 1
        else:
            hi = mid
    return lo


def same_bytes(text: str, data: bytes) -> str | None:
    """The file holds exactly ``text`` (as Node writes it)."""
    want = js_utf8(text)
    if want == data:
        return None
    at = first_difference(want, data)
    return f"the file ({len(data)} bytes) differs from the transcript's text ({len(want)} bytes) at byte {at}"


def is_prefix(text: str, data: bytes) -> str | None:
    """``text`` is the file's start."""
    want = js_utf8(text)
    if data.startswith(want):
        return None
    at = first_difference(want, data)
    return f"the preview ({len(want)} bytes) is not the file's start: they differ at byte {at}"


def is_suffix(text: str, data: bytes) -> str | None:
    """``text`` is the file's end."""
    want = js_utf8(text)
    if data.endswith(want):
        return None
    at = first_difference(want[::-1], data[::-1])
    return (f"the tail shown ({len(want)} bytes) is not the file's end: they differ {at} bytes before "
            f"the end (byte {len(data) - at - 1})")


def sha256_matches(hexdigest: str, data: bytes) -> str | None:
    got = hashlib.sha256(data).hexdigest()
    if got == hexdigest.lower():
        return None
    return f"the notice's sha256 {hexdigest} is not the file's ({got})"


def js_length(data: bytes) -> int | None:
    """The JavaScript string length (UTF-16 code units) of the text the file holds (None: not UTF-8)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def to_fixed(numerator: int, denominator: int, digits: int) -> str:
    """JavaScript's ``(numerator / denominator).toFixed(digits)`` for non-negative integers.

    Rounded on the exact quotient, a tie going up ("pick the larger n", ECMA-262
    Number.prototype.toFixed) — Python's ``format`` rounds ties to even and would say 0.2
    where Node says 0.3 for 256/1024. (The double quotient of two integers below 2^53 by a
    power of two is exact, so this is what Node computes.)"""
    scale = 10 ** digits
    n = (2 * numerator * scale + denominator) // (2 * denominator)
    whole, frac = divmod(n, scale)
    return f"{whole}.{frac:0{digits}d}" if digits else str(whole)
