"""The exact fallback of a transcript search: the streaming parser, searched in decoded windows.

Used when the fast byte path meets something it does not handle (non-writer framing, a file
cut off); it also locates a malformation as a finding. Separate because it shares nothing with
the byte path but the records.
"""

from __future__ import annotations

from typing import Callable, Iterator

from ...util.text import js_normalize, utf8_len
from ...formats.transcript import Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, iter_transcript
from ..findings import finding
from .pattern import REGEX_OVERLAP, Matcher
from .records import CONTEXT, ArtifactEvent, _hit, _Located

#: Decoded code points searched at once by the exact fallback (plus the regex overlap).
EXACT_WINDOW = 1 << 20


def _exact_transcript(path: str, compiled: Matcher, emitted: dict[int, int], limit: int | None,
                      cancelled: Callable[[], bool], max_line_bytes: int) -> Iterator[ArtifactEvent]:
    """The exact streaming parser, searched in decoded windows of about a million code points."""
    if limit is not None and limit <= 0:
        return
    found = 0
    role, k = "", 0
    parts: list[str] = []  # decoded text not yet scanned
    size = 0
    context = ""  # scanned text just before ``parts``, so a lookbehind or ^ sees it
    base_cp = base_b = 0  # offsets of parts[0] in the message
    last_end = -1
    pending_high = False

    def flush(final: bool) -> Iterator[_Located]:
        nonlocal parts, size, context, base_cp, base_b, last_end, found
        lead = len(context)
        text = js_normalize(context + "".join(parts))
        stop = len(text) if final else len(text) - REGEX_OVERLAP  # later starts: the next flush
        base = base_cp - lead
        q, nb = lead, base_b
        for s, e in compiled.spans(text, max(lead, max(last_end, emitted.get(k, -1)) - base)):
            if s >= stop:
                break
            nb += utf8_len(text[q:s])
            q = s
            yield _Located(k, role, _hit(base + s, base + e, nb, nb + utf8_len(text[s:e]),
                                         text[max(0, s - CONTEXT * 4) : s], text[s:e], text[e : e + CONTEXT * 4]))
            last_end = base + e
            found += 1
            if limit is not None and found >= limit:
                return
        base_cp = base + stop
        base_b += utf8_len(text[lead:stop])
        context = text[max(0, stop - REGEX_OVERLAP) : stop]
        parts = [text[stop:]] if stop < len(text) else []
        size = len(text) - stop

    try:
        for ev in iter_transcript(path, max_line_bytes=max_line_bytes):
            if cancelled():
                return
            if isinstance(ev, MessageStart):
                k, role, parts, size, context, base_cp, base_b, last_end = ev.index, ev.role, [], 0, "", 0, 0, -1
            elif isinstance(ev, Fragment):
                piece = "".join(ev.texts)
                parts.append(piece)
                size += len(piece)
                # Never cut right after a high surrogate: the next fragment may pair with it.
                pending_high = bool(piece) and "\ud800" <= piece[-1] <= "\udbff"
                if size > EXACT_WINDOW + REGEX_OVERLAP and not pending_high:
                    yield from flush(False)
            elif isinstance(ev, MessageEnd):
                yield from flush(True)
                parts = []
            elif isinstance(ev, Incomplete):
                if parts:
                    yield from flush(True)
                    parts = []
                yield finding("incomplete-artifact", path=path, line=ev.line, detail=ev.reason)
            if limit is not None and found >= limit:
                return
    except TranscriptError as exc:
        yield finding("malformed-artifact", path=path, line=exc.line, detail=exc.reason)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
