"""Head/tail byte retention of a complete string, as the reference ``TextRetainer`` does it.

The text is encoded as Node would (lone surrogate → U+FFFD), a prefix of ``head_bytes``
and a suffix of ``tail_bytes`` are kept, and when something in between is omitted each
cut is trimmed back to a UTF-8 boundary. The omitted count is measured against the
bytes actually returned.

Kept bytes are decoded as JavaScript's ``new TextDecoder()`` does (:func:`js_decode`):
one leading U+FEFF is stripped from *each* decoded piece (the head, the tail, or the
whole text when nothing is omitted). The omitted count stays byte-based, so a
stripped BOM counts as kept although the model never sees it (FORMAT.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..util.text import js_utf8


@dataclass(frozen=True)
class Retained:
    """A tool result's retained preview, and the UTF-8 bytes omitted from it (None: nothing)."""

    text: str
    #: Exact omitted UTF-8 bytes, or ``None`` when nothing was omitted.
    omitted_bytes: int | None

    @property
    def truncated(self) -> bool:
        return self.omitted_bytes is not None


BOM = "\ufeff"


def js_decode(data: bytes) -> str:
    """``new TextDecoder().decode(data)``: UTF-8 with replacement, one leading BOM stripped.

    Every place that turns kept bytes back into model-visible text goes through here.
    """
    text = data.decode("utf-8", "replace")
    return text[1:] if text.startswith(BOM) else text


def _trim_trailing_partial(data: bytes) -> bytes:
    i = len(data) - 1
    while i >= 0 and (data[i] & 0xC0) == 0x80 and len(data) - i <= 3:
        i -= 1
    if i < 0:
        return data
    lead = data[i]
    expected = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4 if lead < 0xF8 else 0
    if expected == 0:
        return data
    return data[:i] if len(data) - i < expected else data


def _trim_leading_continuation(data: bytes) -> bytes:
    i = 0
    while i < len(data) and (data[i] & 0xC0) == 0x80:
        i += 1
    return data[i:]


def retain_head_tail_bytes(data: bytes, head_bytes: int, tail_bytes: int) -> Retained:
    """Retention over already-encoded UTF-8 ``data`` (lets callers encode once)."""
    if head_bytes < 0 or tail_bytes < 0:
        raise ValueError("byte budgets must be non-negative integers")
    total = len(data)
    prefix_len = min(total, head_bytes)
    suffix_len = min(total - prefix_len, tail_bytes)
    if total - prefix_len - suffix_len == 0:
        return Retained(js_decode(data), None)
    prefix = _trim_trailing_partial(data[:prefix_len])
    suffix = _trim_leading_continuation(data[total - suffix_len :]) if suffix_len else b""
    text = js_decode(prefix) + js_decode(suffix)
    omitted = total - len(prefix) - len(suffix)
    return Retained(text, omitted if omitted > 0 else None)


def retain_head_tail(text: str, head_bytes: int, tail_bytes: int) -> Retained:
    return retain_head_tail_bytes(js_utf8(text), head_bytes, tail_bytes)


def split_budget(budget: int) -> tuple[int, int]:
    """head = ceil(b/2), tail = floor(b/2)."""
    return (budget + 1) // 2, budget // 2
