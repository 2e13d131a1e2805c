"""Whether the model saw a hit: the byte ranges a linked notice's preview showed.

A reference's preview (:func:`reference_seen_ranges`, the same ranges the reader colours) or a
tool notice's head/tail (:func:`tool_seen_ranges`); :func:`is_seen` places a hit's bytes in them.
Separate from the searching: the ranges come from the notice and the checker, not the pattern.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from ...util.text import js_utf8
from ...reference.check import digest_transcript, keep_bytes_for
from ...reference.preview import choose_split, common_prefix, common_suffix, retention_splits, seen_byte_ranges
from .source import close_source, open_source, read_range, source_size

SeenRanges = dict[int, Union[list[tuple[int, int]], None]]


def reference_seen_ranges(path: str, conversation: Sequence[Any], sources: Sequence[int | None]) -> SeenRanges:
    """Per transcript message, the UTF-8 byte ranges the model saw through the preview
    (``conversation``, matched to messages by ``sources`` as the checker recomputed them).
    Every message of the transcript is present: a dropped one with no ranges."""
    try:
        _, views, _ = digest_transcript(path, keep_bytes_for(conversation))
    except Exception:
        return {}
    seen: SeenRanges = {i: [] for i in range(1, len(views) + 1)}
    for i, src in enumerate(sources):
        if src is not None and src - 1 < len(views) and i < len(conversation) and isinstance(conversation[i], dict):
            ranges = seen_byte_ranges(str(conversation[i].get("text", "")), views[src - 1])
            seen[src] = ranges if ranges is not None else []
    return seen


_BOM = b"\xef\xbb\xbf"


def tool_seen_ranges(path: str, preview: str, fork_gap: str | None = None,
                     omitted: int | None = None) -> list[tuple[int, int]]:
    """The byte ranges of a tool output that its notice's preview showed: a head and a
    tail (the preview is their concatenation, cut where the writer cut it -- see
    :func:`~spillscope.reference.preview.retention_splits`; ``omitted`` is the notice's
    count -- or ``head + fork_gap + tail``)."""
    if fork_gap is not None and fork_gap in preview:
        head_t, _, tail_t = preview.partition(fork_gap)
        head, tail = js_utf8(head_t), js_utf8(tail_t)
    else:
        head, tail = js_utf8(preview), b""
    handle = open_source(path)
    try:
        size = source_size(handle)
        n = len(head) + len(tail) + 3
        first = read_range(handle, min(size, n), 0)
        last = read_range(handle, min(size, n), max(0, size - n))
    finally:
        close_source(handle)
    if fork_gap is None or fork_gap not in preview:
        split = choose_split(retention_splits(head, first, last, size), omitted)
        return [] if split is None else split.seen_ranges(len(head), size)
    # A BOM stripped by the decoder (FORMAT.md §3) was never seen.
    skip = 3 if first.startswith(_BOM) and not head.startswith(_BOM) else 0
    first = first[skip:]
    h = common_prefix(head, first)
    t = common_suffix(tail, last)
    out = [(skip, skip + h), (size - t, size)]
    return [r for r in out if r[1] > r[0]]


def is_seen(ranges: list[tuple[int, int]] | None, byte_start: int, byte_end: int) -> bool | None:
    """Whether a hit's bytes lie wholly inside a seen range (None: nothing linked)."""
    if ranges is None:
        return None
    return any(a <= byte_start and byte_end <= b for a, b in ranges)


def reference_seen_for(path: str, link: Any) -> Callable[[], SeenRanges]:
    """The seen ranges of a transcript a reference links, worked out when first asked for
    (a search without hits in it never digests the transcript)."""
    def compute() -> SeenRanges:
        conv = link.entry.preview.get("conversation")
        conv = conv if isinstance(conv, list) else []
        if link.recomputed is None:
            from ...reference.check import recompute

            try:
                _, views, _ = digest_transcript(path, keep_bytes_for(conv))
            except Exception:
                return {}
            result, _ = recompute(conv, views)
            sources: Sequence[int | None] = result.sources
        else:
            sources = link.recomputed.sources
        return reference_seen_ranges(path, conv, sources)

    return compute


def tool_seen_for(path: str, link: Any) -> Callable[[], SeenRanges]:
    """The seen ranges of a tool output its notice links (key 0), worked out when first asked for."""
    def compute() -> SeenRanges:
        from ...spill.policy import FORK_GAP

        notice = link.entry.notice
        try:
            return {0: tool_seen_ranges(path, notice.preview, FORK_GAP if notice.fork_gap else None,
                                        notice.omitted_bytes if notice.omitted_kind == "exact" else None)}
        except OSError:
            return {}

    return compute
