"""The reader's in-message search: :func:`find_hits` in one message of an open document.

A transcript message is searched in its fragment lines on disk (:func:`~.transcript.search_message_region`);
anything else, or irregular lines, in the document's decoded text a chunk at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ...util.text import utf8_len
from .pattern import REGEX_OVERLAP, Pattern, PatternError
from .records import MAX_HITS, MessageHit
from .seen import is_seen
from .transcript import search_message_region

__all__ = ["Hit", "PatternError", "find_hits", "reader_pattern"]


@dataclass(frozen=True)
class Hit:
    """A hit in one document of the TUI's search: its code point span and whether the model saw it."""

    start: int
    end: int
    #: Inside what the linked preview showed, outside it, or None: nothing linked (not known).
    seen: bool | None


class SearchableDocument(Protocol):
    path: str

    @property
    def messages(self) -> Any: ...
    def read(self, k: int, start: int = 0, count: int | None = None) -> str: ...
    def position(self, k: int, cp: int) -> tuple[int, int]: ...


def reader_pattern(query: str) -> Pattern | None:
    """The reader's query syntax: plain text, or ``re:`` + a regex (None when empty).
    An invalid regex raises :class:`PatternError`, whose message says why."""
    if not query:
        return None
    pattern = Pattern(query[3:], regex=True) if query.startswith("re:") else Pattern(query)
    pattern.compile()
    return pattern


def find_hits(document: SearchableDocument, message: int, query: str, seen: list[tuple[int, int]] | None,
              cancelled: Callable[[], bool] = lambda: False) -> tuple[list[Hit], bool]:
    """The matches of ``query`` in one message of an open document (the reader's search):
    plain text, or ``re:`` + a regex; the first :data:`MAX_HITS`, and whether there were
    more. An invalid regex raises :class:`PatternError`."""
    pattern = reader_pattern(query)
    if pattern is None:
        return [], False
    # One hit past the cap, to know there are more.
    hits = _document_hits(document, message, pattern, cancelled, MAX_HITS + 1)
    capped = len(hits) > MAX_HITS
    return [Hit(h.start, h.end, is_seen(seen, h.byte_start, h.byte_end)) for h in hits[:MAX_HITS]], capped


#: Code points of a document read per step of the decoded search (plus the regex overlap).
DOCUMENT_CHUNK = 1 << 20


def _document_hits(document: SearchableDocument, message: int, pattern: Pattern,
                   cancelled: Callable[[], bool], limit: int) -> list[MessageHit]:
    index = getattr(document, "index", None)
    if index is not None:  # a transcript: search its fragment lines on disk
        msg = index.messages[message - 1]
        if index.done or msg is not getattr(index, "_current", None):
            try:
                return list(search_message_region(document.path, msg.start, msg.end, pattern, limit=limit,
                                                  cancelled=cancelled))
            except (ValueError, OSError):
                pass  # irregular lines: the decoded path below is exact for them
    compiled = pattern.compile()
    total = document.messages[message - 1].code_points
    chunk = DOCUMENT_CHUNK
    hits: list[MessageHit] = []
    pos, nb_pos, last_end = 0, 0, -1  # pos: the first code point this step reports from
    while pos < total and len(hits) < limit and not cancelled():
        # Read from before ``pos`` too, so a lookbehind or ^ sees the text there.
        lo = max(0, pos - REGEX_OVERLAP)
        text = document.read(message, lo, pos - lo + chunk + REGEX_OVERLAP)
        own, stop = pos - lo, pos - lo + chunk
        q, nb = own, nb_pos
        for s, e in compiled.spans(text, max(own, last_end - lo)):
            if s >= stop and pos + chunk < total:
                break
            nb += utf8_len(text[q:s])
            q = s
            hits.append(MessageHit(lo + s, lo + e, nb, nb + utf8_len(text[s:e])))
            last_end = lo + e
            if len(hits) >= limit:
                break
        nb_pos = nb + utf8_len(text[q:stop])
        pos += chunk
    return hits
