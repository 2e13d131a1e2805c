"""Exact search across a whole spill root, and whether the model saw each hit.

:func:`search_root` walks the root (sorted by session dir and artifact name) and yields a
:class:`SearchHit` per match in the exact text of every transcript message and tool
output (the byte-level search is :mod:`.artifact_search`), and a :class:`Finding` per
artifact that could not be searched. ``seen`` comes from the notice that links the
artifact: a reference's preview (:func:`reference_seen_ranges`, the same ranges the
reader colours) or a tool notice's head/tail (:func:`tool_seen_ranges`). The CLI
(``spillscope grep``), the TUI's search screen and the notebook's ``insp.search`` all
use it; :func:`find_hits` is the reader's in-message search.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, Union

from ..util.fs import normalize_root
from ..util.text import js_utf8, utf8_len
from ..reference.check import digest_transcript, keep_bytes_for
from ..reference.preview import choose_split, common_prefix, common_suffix, retention_splits, seen_byte_ranges
from .search_pattern import REGEX_OVERLAP, Pattern, PatternError, matches_after
from .search_records import MAX_HITS, TOOL_OUTPUT, TRANSCRIPT, ArtifactEvent, MessageHit, _Located
from .search_source import close_source, open_source, read_range, source_size
from .search_tool import search_tool_output
from .search_transcript import search_message_region, search_transcript
from .findings import Finding, finding

__all__ = ["Pattern", "PatternError", "MessageHit", "SearchHit", "search_root", "search_transcript",
           "search_tool_output", "search_message_region", "reference_seen_ranges", "tool_seen_ranges", "is_seen",
           "Hit", "find_hits", "MAX_HITS"]


@dataclass(frozen=True)
class SearchHit:
    """A hit in a root: where (artifact, message), the exact span, and whether the model saw it."""

    path: str
    session: str | None
    session_dir: str
    kind: str
    message: int | None
    role: str | None
    start: int
    end: int
    #: True inside what a linked preview showed, False in what it omitted, None unlinked.
    seen: bool | None
    before: str
    match: str
    after: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "session": self.session, "kind": self.kind, "message": self.message,
                "start": self.start, "end": self.end, "seen": self.seen}


# What the model saw ---------------------------------------------------------------------
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


# The reader's in-message search ----------------------------------------------------------
@dataclass(frozen=True)
class Hit:
    start: int
    end: int
    seen: bool


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
    return [Hit(h.start, h.end, bool(is_seen(seen, h.byte_start, h.byte_end))) for h in hits[:MAX_HITS]], capped


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
        for m in matches_after(compiled, text, max(own, last_end - lo)):
            s, e = m.start(), m.end()
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


# The whole root ----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Target:
    path: str
    kind: str
    session: str | None
    session_dir: str
    seen_for: Callable[[], SeenRanges] | None  # per message (tool output: key 0)


def _targets(root: str, logs: str | None, rebase: str | None) -> tuple[list[_Target], list[Finding]]:
    from ..formats.transcript.reader import departs_from_title
    from .verify.inspection import inspect_root

    ins = inspect_root(root, logs, rebase=rebase, check_content=False)
    # Only what makes an artifact (or a log's links) unsearchable concerns a search: also a
    # directory, FIFO or device where an artifact belongs (skipped, so said, never in silence).
    skipped = {a.path for a in ins.scan.artifacts() if not a.is_regular and not a.is_symlink}
    findings = [f for f in ins.findings if f.code in ("unreadable", "symlink", "malformed-log")
                or (f.code == "unexpected-entry" and f.path in skipped)]
    refs: dict[str, Any] = {}
    for link in ins.references:
        if link.artifact is not None and link.artifact.path not in refs:
            refs[link.artifact.path] = link
    tools: dict[str, Any] = {}
    for tlink in ins.tool_spills:
        if tlink.artifact is not None and tlink.artifact.path not in tools:
            tools[tlink.artifact.path] = tlink
    out: list[_Target] = []
    for art in sorted(ins.scan.artifacts(), key=lambda a: (a.session_dir, a.name)):
        if not art.is_regular:
            continue
        kind: str = art.kind
        if kind == TRANSCRIPT and art.path in tools:
            kind = TOOL_OUTPUT
        elif kind == TRANSCRIPT:
            try:
                if departs_from_title(art.path):
                    kind = TOOL_OUTPUT
            except OSError:
                pass
        seen_for: Callable[[], SeenRanges] | None = None
        if kind == TRANSCRIPT and art.path in refs:
            seen_for = _reference_seen(art.path, refs[art.path])
        elif kind != TRANSCRIPT and art.path in tools:
            seen_for = _tool_seen(art.path, tools[art.path])
        out.append(_Target(art.path, kind, ins.session_ids.get(art.session_dir), art.session_dir, seen_for))
    return out, findings


def _reference_seen(path: str, link: Any) -> Callable[[], SeenRanges]:
    def compute() -> SeenRanges:
        conv = link.entry.preview.get("conversation")
        conv = conv if isinstance(conv, list) else []
        if link.recomputed is None:
            from ..reference.check import recompute

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


def _tool_seen(path: str, link: Any) -> Callable[[], SeenRanges]:
    def compute() -> SeenRanges:
        from ..spill.policy import FORK_GAP

        notice = link.entry.notice
        try:
            return {0: tool_seen_ranges(path, notice.preview, FORK_GAP if notice.fork_gap else None,
                                        notice.omitted_bytes if notice.omitted_kind == "exact" else None)}
        except OSError:
            return {}

    return compute


def search_root(root: str | os.PathLike[str], pattern: Pattern, *, logs: str | os.PathLike[str] | None = None,
                rebase: str | None = None, max_count: int | None = None,
                cancelled: Callable[[], bool] = lambda: False) -> Iterator[SearchHit | Finding]:
    """Every hit of ``pattern`` under ``root`` as it is found, artifact by artifact (sorted
    by session dir and name), with a :class:`Finding` for each artifact that could not be
    searched to its end. ``max_count`` caps the hits per artifact (grep's ``-m``).
    Raises :class:`PatternError` before anything is read for a bad pattern."""
    pattern.compile()
    root_s = normalize_root(root)  # a directory, or s3://bucket/prefix
    targets, findings = _targets(root_s, None if logs is None else os.fspath(logs), rebase)
    yield from findings
    for t in targets:
        if cancelled():
            return
        seen: SeenRanges | None = None
        events: Iterable[Any]
        if t.kind == TRANSCRIPT:
            events = search_transcript(t.path, pattern, limit=max_count, cancelled=cancelled)
        else:
            events = _tool_events(t.path, pattern, max_count, cancelled)
        for ev in events:
            if isinstance(ev, Finding):
                yield ev
                continue
            if seen is None:
                seen = t.seen_for() if t.seen_for is not None else {}
            key = ev.message if ev.message is not None else 0
            ranges = seen.get(key) if t.seen_for is not None else None
            if t.seen_for is not None and key not in seen:
                ranges = None
            h = ev.hit
            yield SearchHit(t.path, t.session, t.session_dir, t.kind, ev.message, ev.role, h.start, h.end,
                            is_seen(ranges, h.byte_start, h.byte_end), h.before, h.match, h.after)


def _tool_events(path: str, pattern: Pattern, limit: int | None, cancelled: Callable[[], bool]) -> Iterator[ArtifactEvent]:
    try:
        for h in search_tool_output(path, pattern, limit=limit, cancelled=cancelled):
            yield _Located(None, None, h)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
