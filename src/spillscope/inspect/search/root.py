"""Exact search across a whole spill root, and whether the model saw each hit.

:func:`search_root` walks the root (sorted by session dir and artifact name) and yields a
:class:`SearchHit` per match in the exact text of every transcript message and tool
output (the byte-level search is :mod:`.transcript` and :mod:`.tool`), and a :class:`Finding`
per artifact that could not be searched. ``seen`` comes from the notice that links the
artifact (:mod:`.seen`). The CLI (``spillscope grep``), the TUI's search screen and the
notebook's ``insp.search`` all use it.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Iterator

from ...storage import Storage, normalize_root, open_storage
from .pattern import Pattern
from .prefilter import may_match, may_match_many
from .records import TOOL_OUTPUT, TRANSCRIPT, ArtifactEvent, _Located
from ..findings import Finding, finding
from ..scan.tree import RootScan, scan_root
from ...util.gcpause import acyclic

if TYPE_CHECKING:
    # The searchers and the seen ranges (the notice checker under them) load when there is
    # an artifact to search; the verify pass when there are logs to link: a search of a
    # root with nothing to read imports neither (``spillscope grep`` starts fast).
    from .seen import SeenRanges

__all__ = ["SearchHit", "search_root"]


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


@dataclass(frozen=True)
class _Target:
    path: str
    kind: str
    session: str | None
    session_dir: str
    seen_for: Callable[[], SeenRanges] | None  # per message (tool output: key 0)


def _targets(root: str, logs: str | None, rebase: str | None) -> tuple[list[_Target], list[Finding]]:
    scan: RootScan
    refs: dict[str, Any] = {}
    tools: dict[str, Any] = {}
    session_ids: dict[str, str] = {}
    if logs is None:
        # Without logs no notice links an artifact: the inspection (with check_content off)
        # would be the scan and its findings, nothing more, so the scan is all that runs.
        with acyclic():  # as inspect_root scans: acyclic records, freed by reference counting
            scan = scan_root(root)
        all_findings = scan.findings
    else:
        from ..verify.inspection import inspect_root

        ins = inspect_root(root, logs, rebase=rebase, check_content=False)
        scan, all_findings, session_ids = ins.scan, ins.findings, ins.session_ids
        for link in ins.references:
            if link.artifact is not None and link.artifact.path not in refs:
                refs[link.artifact.path] = link
        for tlink in ins.tool_spills:
            if tlink.artifact is not None and tlink.artifact.path not in tools:
                tools[tlink.artifact.path] = tlink
    # Only what makes an artifact (or a log's links) unsearchable concerns a search: also a
    # directory, FIFO or device where an artifact belongs (skipped, so said, never in silence).
    skipped = {a.path for a in scan.artifacts() if not a.is_regular and not a.is_symlink}
    findings = [f for f in all_findings if f.code in ("unreadable", "symlink", "malformed-log")
                or (f.code == "unexpected-entry" and f.path in skipped)]
    out: list[_Target] = []
    for art in sorted(scan.artifacts(), key=lambda a: (a.session_dir, a.name)):
        if not art.is_regular:
            continue
        kind: str = art.kind
        if kind == TRANSCRIPT and art.path in tools:
            kind = TOOL_OUTPUT
        elif kind == TRANSCRIPT:
            from ...formats.transcript.reader import departs_from_title

            try:
                if departs_from_title(art.path):
                    kind = TOOL_OUTPUT
            except OSError:
                pass
        seen_for: Callable[[], SeenRanges] | None = None
        if kind == TRANSCRIPT and art.path in refs:
            from .seen import reference_seen_for

            seen_for = reference_seen_for(art.path, refs[art.path])
        elif kind != TRANSCRIPT and art.path in tools:
            from .seen import tool_seen_for

            seen_for = tool_seen_for(art.path, tools[art.path])
        out.append(_Target(art.path, kind, session_ids.get(art.session_dir), art.session_dir, seen_for))
    return out, findings


#: What ``--kind`` accepts: the kinds, and a short name for the transcript's.
KIND_NAMES = {"transcript": TRANSCRIPT, TRANSCRIPT: TRANSCRIPT, TOOL_OUTPUT: TOOL_OUTPUT, "unknown": "unknown"}


def in_session(selected: Collection[str], session: str | None, session_dir: str) -> bool:
    """Whether a session is one of ``selected``: by the id its log gives it, or its dir's name or path."""
    name = session_dir.rstrip("/").rsplit("/", 1)[-1]
    return session in selected or name in selected or session_dir in selected


def search_root(root: Storage | str | os.PathLike[str], pattern: Pattern, *, logs: str | os.PathLike[str] | None = None,
                rebase: str | None = None, max_count: int | None = None,
                sessions: Collection[str] | None = None, kinds: Collection[str] | None = None,
                cancelled: Callable[[], bool] = lambda: False) -> Iterator[SearchHit | Finding]:
    """Every hit of ``pattern`` under ``root`` as it is found, artifact by artifact (sorted
    by session dir and name), with a :class:`Finding` for each artifact that could not be
    searched to its end. ``max_count`` caps the hits per artifact (grep's ``-m``);
    ``sessions`` (ids or session dir names) and ``kinds`` (:data:`KIND_NAMES`) keep only the
    artifacts they name, and nothing else is read. Raises :class:`PatternError` before
    anything is read for a bad pattern."""
    pattern.compile()
    root_s = normalize_root(root)  # a directory, or s3://bucket/prefix
    targets, findings = _targets(root_s, None if logs is None else os.fspath(logs), rebase)
    if sessions is not None:
        targets = [t for t in targets if in_session(sessions, t.session, t.session_dir)]
        dirs = {t.session_dir for t in targets}
        # A finding about an artifact of another session is not this search's (one without a
        # path, a log's, stays).
        findings = [f for f in findings if f.path is None or f.code == "malformed-log"
                    or os.path.dirname(f.path) in dirs or in_session(sessions, None, os.path.dirname(f.path))]
    if kinds is not None:
        wanted = {KIND_NAMES.get(k, k) for k in kinds}
        targets = [t for t in targets if t.kind in wanted]
    yield from findings
    if not targets:
        return
    from .seen import is_seen
    from .transcript import search_transcript

    local = open_storage(root_s).tree is not None
    for t, may in _prefiltered(targets, pattern, local):
        if cancelled():
            return
        if not may:
            continue
        seen: SeenRanges | None = None
        events: Iterable[Any]
        if t.kind == TRANSCRIPT:
            events = search_transcript(t.path, pattern, limit=max_count, cancelled=cancelled, prefiltered=True)
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


#: Artifacts whose bytes are checked ahead of the one being searched (a bounded look-ahead).
LOOKAHEAD = 256
#: Local artifacts ruled in or out per native call: the first batch small (the first hits come
#: soon), then bigger (fewer calls), one batch checked ahead while the one before is searched.
FIRST_BATCH, BATCH = 64, 4096


def _prefiltered(targets: list[_Target], pattern: Pattern, local: bool) -> Iterator[tuple[_Target, bool]]:
    """Each target, in order, with whether its bytes may hold a match: checked on every core
    (natively in batches for a local root; else ``pread`` and ``memmem`` on a thread pool,
    the GIL released), yielded in the root's order so that results stay in a stable order
    whatever the threads do."""
    if pattern.literal is None and pattern.required is None:
        yield from ((t, True) for t in targets)  # a regex: no prefilter
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    if local and may_match_many([], [], pattern) is not None:
        batches: list[list[_Target]] = []
        at, size = 0, FIRST_BATCH
        while at < len(targets):
            batches.append(targets[at : at + size])
            at, size = at + size, BATCH

        def check(batch: list[_Target]) -> list[bool]:
            got = may_match_many([t.path for t in batch], [t.kind == TRANSCRIPT for t in batch], pattern)
            assert got is not None
            return got

        ahead = ThreadPoolExecutor(1, thread_name_prefix="spillscope-prefilter")
        try:
            pending: deque[Future[list[bool]]] = deque(ahead.submit(check, b) for b in batches[:2])
            for i, batch in enumerate(batches):
                verdicts = pending.popleft().result()
                if i + 2 < len(batches):
                    pending.append(ahead.submit(check, batches[i + 2]))
                yield from zip(batch, verdicts)
        finally:
            ahead.shutdown(wait=False, cancel_futures=True)
        return
    workers = max(1, min(len(targets), os.cpu_count() or 1))
    if workers == 1:
        yield from ((t, may_match(t.path, t.kind == TRANSCRIPT, pattern)) for t in targets)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="spillscope-prefilter")
    try:
        pending_one = deque(pool.submit(may_match, t.path, t.kind == TRANSCRIPT, pattern)
                            for t in targets[:LOOKAHEAD])
        for i, t in enumerate(targets):
            may = pending_one.popleft().result()
            if i + LOOKAHEAD < len(targets):
                nxt = targets[i + LOOKAHEAD]
                pending_one.append(pool.submit(may_match, nxt.path, nxt.kind == TRANSCRIPT, pattern))
            yield t, may
    finally:
        # A search stopped early (cancelled, a cap reached) does not wait for the look-ahead.
        pool.shutdown(wait=False, cancel_futures=True)


def _tool_events(path: str, pattern: Pattern, limit: int | None, cancelled: Callable[[], bool]) -> Iterator[ArtifactEvent]:
    from .tool import search_tool_output

    try:
        for h in search_tool_output(path, pattern, limit=limit, cancelled=cancelled, prefiltered=True):
            yield _Located(None, None, h)
    except OSError as exc:
        yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
