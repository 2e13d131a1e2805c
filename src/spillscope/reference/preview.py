"""A preview message against its original: what was kept, where it was cut, what the model saw.

The byte-level rules of the retention (FORMAT.md §5): a shortened preview message is
``head + tail + marker``; :func:`retention_splits` lists every head/tail cut the writer
could have made, :func:`shortened_omission` says whether a text is a valid retention of a
message (and its N), :func:`seen_byte_ranges` which bytes of the original the model read.
:class:`MessageView` is a message as the checker keeps it (its size and its two ends).
Separate from :mod:`.check` (a whole notice against a whole transcript) so that
:mod:`.join`, the linkers and the search can use these rules without the notice checker,
and the checker can use :mod:`.join` without a cycle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..util.scratch import PIECE
from ..util.text import js_utf8

_MARKER = re.compile(r"\n\[… omitted (0|[1-9][0-9]*) UTF-8 bytes …\]\Z")


def _marker(text: str) -> re.Match[str] | None:
    """The omission marker ending ``text``: only its last candidate is tried (a search
    would try every newline of a 60 MB preview message)."""
    at = text.rfind("\n[… omitted ")
    return _MARKER.match(text, at) if at >= 0 else None


_BLOCK = 1 << 16


Bytes = bytes | bytearray | memoryview


def same_bytes(a: Bytes, b: Bytes) -> bool:
    """``a == b`` for two byte strings of which either may be a view, without a copy of
    either and at ``memcmp`` speed: ``bytes.startswith`` takes any buffer, while comparing
    two memoryviews walks them item by item (30x slower). Two views are compared a
    piece at a time, each piece of one copied (small: its memory is reused)."""
    if len(a) != len(b):
        return False
    if isinstance(b, (bytes, bytearray)):
        a, b = b, a
    if isinstance(a, (bytes, bytearray)):
        return a.startswith(b)
    return all(bytes(a[i : i + PIECE]).startswith(b[i : i + PIECE]) for i in range(0, len(a), PIECE))


def common_prefix(a: Bytes, b: Bytes) -> int:
    """Length of the longest common prefix: whole blocks compared at C speed until one
    differs, then a binary search inside that block (linear; a binary search over the
    whole length re-compares halves of it log n times). Either may be a view: the whole
    prefix is compared in place (a 100 MB preview is not sliced into a copy)."""
    n = min(len(a), len(b))
    if same_bytes(_cut(a, memoryview(a), 0, n), _cut(b, memoryview(b), 0, n)):
        return n
    va, vb = memoryview(a), memoryview(b)
    at = 0
    while same_bytes(va[at : at + _BLOCK], vb[at : at + _BLOCK]):
        at += _BLOCK
    lo, hi = at, min(n, at + _BLOCK)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same_bytes(va[at:mid], vb[at:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: Bytes, b: Bytes) -> int:
    """Length of the longest common suffix (the same, block by block from the ends)."""
    n, la, lb = min(len(a), len(b)), len(a), len(b)
    if same_bytes(_cut(a, memoryview(a), la - n, la), _cut(b, memoryview(b), lb - n, lb)):
        return n
    va, vb = memoryview(a), memoryview(b)
    k = 0  # the last k bytes are known common
    while True:
        step = min(_BLOCK, n - k)
        if not same_bytes(va[la - k - step : la - k], vb[lb - k - step : lb - k]):
            break
        k += step
    lo, hi = k, k + step
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same_bytes(va[la - mid : la - k], vb[lb - mid : lb - k]):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(data: Bytes, view: memoryview, start: int, end: int) -> Bytes:
    """``data[start:end]`` (``0 <= start``) with no copy: ``data`` itself when that is
    all of it (a bytes object keeps its fast compare), else a view."""
    end = min(end, len(data))
    return data if start == 0 and end == len(data) else view[start:end]


class MessageView:
    """What the checker needs of one transcript message: its role, UTF-8 size, and its
    first/last bytes. Built from a full text, or streamed from a huge artifact keeping
    only ``keep`` bytes at each end (a preview message is never longer than that)."""

    __slots__ = ("role", "nbytes", "head", "tail")

    def __init__(self, role: str, nbytes: int, head: bytes, tail: bytes) -> None:
        self.role, self.nbytes, self.head, self.tail = role, nbytes, head, tail

    @classmethod
    def of_text(cls, role: str, text: str) -> MessageView:
        data = js_utf8(text)
        return cls(role, len(data), data, data)


BOM_BYTES = "\ufeff".encode("utf-8")


@dataclass(frozen=True)
class Split:
    """One way a kept preview ``P`` (bytes) came from its original of ``total`` bytes:
    ``P[:head_len]`` decodes the head piece and ``P[head_len:]`` the tail piece. The
    reference decodes each piece with ``new TextDecoder()``, which strips a leading BOM:
    ``head_bom``/``tail_bom`` say a piece began with one the model never saw. Those 3
    bytes still count as kept, so ``omitted`` = total − len(P) − 3 per stripped BOM."""

    head_len: int
    head_bom: bool
    tail_bom: bool
    omitted: int

    def seen_ranges(self, kept_len: int, total: int) -> list[tuple[int, int]]:
        """Byte ranges of the original the model saw (a stripped BOM is not seen)."""
        h0 = 3 if self.head_bom else 0
        tail_len = kept_len - self.head_len
        ranges = ((h0, h0 + self.head_len), (total - tail_len, total))
        return [r for r in ranges if r[1] > r[0]]


def retention_splits(kept: Bytes, head: Bytes, tail: Bytes, total: int) -> list[Split]:
    """Every :class:`Split` of ``kept`` against an original of ``total`` bytes whose first
    bytes are ``head`` and last bytes ``tail`` (each at least ``len(kept) + 3`` bytes, or
    the whole original). The BOM-free split comes first. Empty: not a head+tail of it.

    Any of them may be a view: nothing here copies them (a preview can be 100 MB, and
    every copy that big is fresh memory, paid in page faults)."""
    n = len(kept)
    out: list[Split] = []
    hv, tv = memoryview(head), memoryview(tail)
    suffix = common_suffix(kept, _cut(tail, tv, max(0, len(tail) - n), len(tail))) if n else 0
    for head_bom in (False, True):
        h0 = 3 if head_bom else 0
        if head_bom and hv[:3] != BOM_BYTES:
            continue
        prefix = min(common_prefix(kept, _cut(head, hv, h0, h0 + n)), n)
        lo, hi = n - suffix, prefix  # P[:k] from the head and P[k:] from the tail for k in [lo, hi]
        if lo > hi:
            continue
        if n + h0 <= total:
            out.append(Split(_writer_cut(head, tail, total, n + h0, h0, lo, hi), head_bom, False, total - n - h0))
        if n + h0 + 3 <= total:
            # A stripped BOM right before the tail piece: it starts at total-(n-k), so the
            # BOM sits at tail[len(tail)-(n-k)-3 :]; search it for k in [lo, hi].
            start, end = len(tail) - (n - lo) - 3, len(tail) - (n - hi)
            at = _find_bom(tail, max(0, start), max(0, end)) if end >= 3 else -1
            if at >= 0 and at >= start:
                k = n - (len(tail) - at - 3)
                out.append(Split(k, head_bom, True, total - n - h0 - 3))
    return out


_BOM_RE = re.compile(re.escape(BOM_BYTES))


def _find_bom(data: Bytes, start: int, end: int) -> int:
    """``data.find(BOM_BYTES, start, end)``, also for a view (which has no ``find``)."""
    if isinstance(data, (bytes, bytearray)):
        return data.find(BOM_BYTES, start, end)
    m = _BOM_RE.search(data, start, end)
    return -1 if m is None else m.start()


def _writer_cut(head: Bytes, tail: Bytes, total: int, kept: int, h0: int, lo: int, hi: int) -> int:
    """Which ``k`` in ``[lo, hi]`` (every one explains the preview: a run such as
    ``abab…`` at the cut lets many) the writer cut at: of a budget ``b`` it kept
    ``ceil(b/2)`` bytes moved back to a character boundary and ``floor(b/2)`` moved
    forward to one (§3), so ``b`` is ``kept`` to ``kept + 6``. ``hi`` when none fits."""
    if lo == hi:
        return hi
    for b in range(kept, kept + 7):
        h = min(total, (b + 1) // 2)
        tb = min(total - h, b // 2)
        if h > len(head) or (h == len(head) < total) or tb > len(tail):
            continue  # beyond the bytes kept of the original: cannot tell
        while 0 < h < len(head) and head[h] & 0xC0 == 0x80:
            h -= 1
        t = len(tail) - tb
        while t < len(tail) and tail[t] & 0xC0 == 0x80:
            t += 1
        if h + (len(tail) - t) == kept and lo <= h - h0 <= hi:
            return h - h0
    return hi


def choose_split(splits: list[Split], logged: int | None) -> Split | None:
    """Of :func:`retention_splits`' answers, the split that explains the logged count
    (``None``: not logged), else the BOM-free reading."""
    for split in splits:
        if split.omitted == logged:
            return split
    return splits[0] if splits else None


class PreviewText:
    """A preview message's text measured once: its UTF-8 bytes and, when it ends in the
    omission marker, the kept bytes before it. Matching one preview message against
    thousands of transcript messages must not re-encode or re-search it per candidate."""

    __slots__ = ("text", "whole", "kept", "marker_n")

    def __init__(self, text: str) -> None:
        self.text = text
        self.whole = js_utf8(text)
        m = _marker(text)
        self.kept = js_utf8(text[: m.start()]) if m is not None else None
        self.marker_n = int(m.group(1)) if m is not None else None


def _split_of(pre: PreviewText, view: MessageView) -> tuple[int, Split | None]:
    """(len(P), its split) for a shortened preview text with a marker."""
    kept = pre.kept
    if kept is None:
        return 0, None
    if len(kept) > view.nbytes:
        return len(kept), None
    return len(kept), choose_split(retention_splits(kept, view.head, view.tail, view.nbytes), pre.marker_n)


def shortened_omission(preview_text: str | PreviewText, original: MessageView | str) -> int | None:
    """N if ``preview_text`` is a valid retention of ``original`` (identical → 0), else None."""
    view = MessageView.of_text("", original) if isinstance(original, str) else original
    pre = preview_text if isinstance(preview_text, PreviewText) else PreviewText(preview_text)
    if pre.text == "":
        return view.nbytes
    whole = pre.whole
    if len(whole) == view.nbytes and len(view.head) >= view.nbytes and view.head[: view.nbytes] == whole:
        return 0
    _, split = _split_of(pre, view)
    return None if split is None else split.omitted


def marker_count(preview_text: str) -> int | None:
    m = _marker(preview_text)
    return int(m.group(1)) if m else None


def seen_byte_ranges(preview_text: str, original: MessageView | str) -> list[tuple[int, int]] | None:
    """Byte ranges of the original message that the model saw through this preview text:
    everything when identical, head and tail when shortened, nothing when emptied.
    ``None`` when the preview is not a retention of this message at all."""
    view = MessageView.of_text("", original) if isinstance(original, str) else original
    n = shortened_omission(preview_text, view)
    if n is None:
        return None
    if n == 0:
        return [(0, view.nbytes)]
    if preview_text == "":
        return []
    kept_len, split = _split_of(PreviewText(preview_text), view)
    assert split is not None
    return split.seen_ranges(kept_len, view.nbytes)
