"""The exact fallback of a transcript search: the streaming parser, searched in decoded windows.

Used when the fast byte path meets something it does not handle (non-writer framing, a file
cut off); it also locates a malformation as a finding. Separate because it shares nothing with
the byte path but the records.
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

from ..util.text import js_normalize, utf8_len
from ..formats.transcript import Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, iter_transcript
from .findings import finding
from .search_pattern import REGEX_OVERLAP
from .search_records import CONTEXT, ArtifactEvent, _hit, _Located

def _exact_transcript(path: str, compiled: re.Pattern[str], emitted: dict[int, int], limit: int | None,
                      cancelled: Callable[[], bool], max_line_bytes: int) -> Iterator[ArtifactEvent]:
    """The exact streaming parser, searched in decoded windows of about a million code points."""
    if limit is not None and limit <= 0:
        return
    found = 0
    role, k = "", 0
    parts: list[str] = []
    size = 0
    base_cp = base_b = 0
    last_end = -1
    pending_high = False

    def flush(final: bool) -> Iterator[_Located]:
        nonlocal parts, size, base_cp, base_b, last_end, found
        text = js_normalize("".join(parts))
        keep = "" if final else text[-REGEX_OVERLAP:]
        limit_at = len(text) - len(keep)
        q, nb = 0, base_b
        for m in compiled.finditer(text):
            s, e = m.start(), m.end()
            if not final and s >= limit_at:
                break
            if e == s or base_cp + s < max(last_end, emitted.get(k, -1)):
                continue
            nb += utf8_len(text[q:s])
            q = s
            yield _Located(k, role, _hit(base_cp + s, base_cp + e, nb, nb + utf8_len(text[s:e]),
                                         text[max(0, s - CONTEXT * 4) : s], text[s:e], text[e : e + CONTEXT * 4]))
            last_end = base_cp + e
            found += 1
            if limit is not None and found >= limit:
                return
        base_cp += limit_at
        base_b += utf8_len(text[:limit_at])
        parts = [keep] if keep else []
        size = len(keep)

    try:
        for ev in iter_transcript(path, max_line_bytes=max_line_bytes):
            if cancelled():
                return
            if isinstance(ev, MessageStart):
                k, role, parts, size, base_cp, base_b, last_end = ev.index, ev.role, [], 0, 0, 0, -1
            elif isinstance(ev, Fragment):
                piece = "".join(ev.texts)
                parts.append(piece)
                size += len(piece)
                # Never cut right after a high surrogate: the next fragment may pair with it.
                pending_high = bool(piece) and "\ud800" <= piece[-1] <= "\udbff"
                if size > (1 << 20) + REGEX_OVERLAP and not pending_high:
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
