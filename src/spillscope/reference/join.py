"""Where a shortened preview message was cut: the point between its head and its tail.

A preview message that was too long is ``head + tail + marker`` (FORMAT.md): the model
read the head, then straight on into the tail, with nothing to say where the middle went
except the marker at the end. :func:`join_offset` finds that point so a view can mark it —
exactly when the original message is at hand, else from the retention rule (the byte
budget is split evenly, head first, each cut trimmed back to a UTF-8 boundary), which is
right to within a few bytes and is then said to be an estimate.
"""

from __future__ import annotations

from ..util.text import js_utf8
from .preview import _MARKER, MessageView, seen_byte_ranges


def join_offset(preview_text: str, original: MessageView | None = None) -> tuple[int, bool] | None:
    """``(code point offset in preview_text, exact)`` of the head/tail join, or ``None``
    when the text is not shortened (no marker, nothing omitted from its middle, emptied)
    or does not come from ``original``."""
    m = _MARKER.search(preview_text)
    if m is None or int(m.group(1)) == 0:
        return None
    kept_text = preview_text[: m.start()]
    kept = js_utf8(kept_text)
    if not kept:
        return None
    if original is not None:
        ranges = seen_byte_ranges(preview_text, original)
        if ranges is None or ranges == [(0, original.nbytes)]:
            return None
        # The longest common prefix may run into the tail where both start alike, even
        # mid-code-point: any code point boundary from the true cut up to it splits the
        # text into a prefix and a suffix of the original, so the last such boundary is used.
        head = ranges[0][1] if ranges and ranges[0][0] == 0 else 0
        exact = True
    else:
        head = (len(kept) + 1) // 2
        exact = False
    while 0 < head < len(kept) and (kept[head] & 0xC0) == 0x80:
        head -= 1  # a code point boundary: cuts are trimmed back to one
    # Code points before the join (kept is js_utf8 of kept_text: one U+FFFD per lone surrogate).
    return len(kept[:head].decode("utf-8", "replace")), exact
