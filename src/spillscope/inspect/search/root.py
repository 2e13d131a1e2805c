"""Exact search across a whole spill root, and whether the model saw each hit.

:func:`search_root` walks the root (sorted by session dir and artifact name) and yields a
:class:`SearchHit` per match in the exact text of every transcript message and tool
output (the byte-level search is :mod:`.transcript` and :mod:`.tool`), and a :class:`Finding`
per artifact that could not be searched. ``seen`` comes from the notice that links the
artifact (:mod:`.seen`). The CLI (``spillscope grep``), the TUI's search screen and the
notebook's ``insp.search`` all use it.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from contextlib import closing
from itertools import chain, islice
from typing import (TYPE_CHECKING, Any, Callable, Collection, Generator, Generic, Iterable, Iterator, NamedTuple,
                    Sequence, TypeVar)

from ...storage import Storage, normalize_root, open_storage
from .pattern import Pattern
from . import prefilter
from .prefilter import may_match, may_match_many
from .records import TOOL_OUTPUT, TRANSCRIPT, MessageHit, RunEvent
from ..findings import Finding, finding, set_apart
from ..scan.searchable import PlanItem
from ..scan.tree import RootScan, scan_root
from ...util.gcpause import acyclic
# Loaded already by the time a search is (the findings' and the CLI's shown text): imported
# here, not in json_lines, where the import machinery ran once per file of hits.
from ...util.text import ascii_json_string

if TYPE_CHECKING:
    # The searchers and the seen ranges (the notice checker under them) load when there is
    # an artifact to search; the verify pass when there are logs to link: a search of a
    # root with nothing to read imports neither (``spillscope grep`` starts fast).
    from .seen import SeenRanges

__all__ = ["SearchHit", "search_root"]


class SearchHit(NamedTuple):
    """A hit in a root: where (artifact, message), the exact span, and whether the model saw it.
    Immutable; a NamedTuple, as each per-hit record (see .records.MessageHit)."""

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


_JSON_SEEN = {True: "true", False: "false", None: "null"}


def json_lines(hits: Sequence[SearchHit]) -> str:
    """``ascii_json(h.to_json())`` of each hit of one artifact, a line each: the path, session
    and kind (the artifact's) escaped once, each hit's numbers written in (a dense pattern's
    hits are many, and a dict and a JSON encoder call each were most of writing one)."""
    if not hits:
        return ""
    string = ascii_json_string
    h0 = hits[0]
    session = "null" if h0.session is None else string(h0.session)
    head = f'{{"path":{string(h0.path)},"session":{session},"kind":{string(h0.kind)},"message":'
    message, seen = h0.message, h0.seen
    if (message is None or type(message) is int) and all(h[4] == message and h[8] is seen for h in hits):
        # One message and one ``seen`` for all (a tool output's hits, a message's): only the
        # offsets differ, the rest of each line written once (half the time a hit).
        mid = f'{head}{"null" if message is None else message},"start":'
        tail = f',"seen":{_JSON_SEEN[seen]}}}\n'
        return "".join([f'{mid}{int(h[6])},"end":{int(h[7])}{tail}' for h in hits])
    return "".join([f'{head}{"null" if h.message is None else int(h.message)},"start":{int(h.start)},'
                    f'"end":{int(h.end)},"seen":{_JSON_SEEN[h.seen]}}}\n' for h in hits])


class _Target(NamedTuple):
    """An artifact to search (a NamedTuple, as .scan.searchable's files: one a file of the root,
    and a frozen dataclass's ``__init__`` cost a few microseconds each)."""

    path: str
    kind: str
    session: str | None
    session_dir: str
    seen_for: Callable[[], SeenRanges] | None  # per message (tool output: key 0)


def _targets(root: str, local: bool, logs: str | None, rebase: str | None) -> tuple[list[_Target], list[Finding]]:
    """Every artifact to search, in order, and the findings that stop one being searched
    (``local``: the root is a directory)."""
    if logs is None and local:
        return _local_targets(root)
    return _linked_targets(root, logs, rebase)


def _linked_targets(root: str, logs: str | None, rebase: str | None) -> tuple[list[_Target], list[Finding]]:
    """:func:`_targets` through the inspection (each artifact with the notice linking it), or
    an object store's scan where there are no logs."""
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
            from ...formats.transcript.layout import departs_from_title

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


def _local_targets(root: str) -> tuple[list[_Target], list[Finding]]:
    """:func:`_targets` of a local root with no session logs: nothing links an artifact (no
    ``seen``, no session id), so the directory entries say all (:mod:`..scan.searchable`)."""
    return set_apart(_walk_local_targets(root))


def _walk_local_targets(root: str, part: Sequence[PlanItem] | None = None) -> Iterator[_Target | Finding]:
    """:func:`_local_targets` as the walk goes (:func:`..scan.searchable.iter_searchable`);
    ``part``: of these entries of the root only."""
    from ..scan.searchable import iter_searchable

    for f in iter_searchable(root, part):
        if isinstance(f, Finding):
            yield f
            continue
        kind = f.kind
        if kind == TRANSCRIPT:
            from ...formats.transcript.layout import departs_from_title  # only where there is one

            try:
                if departs_from_title(f.path):
                    kind = TOOL_OUTPUT
            except OSError:
                pass
        yield _Target(f.path, kind, None, f.session_dir, None)


#: What ``--kind`` accepts: the kinds, and short names for the transcript's and (``spill``,
#: as on another agent's tree) the tool output's.
KIND_NAMES = {"transcript": TRANSCRIPT, TRANSCRIPT: TRANSCRIPT, TOOL_OUTPUT: TOOL_OUTPUT, "spill": TOOL_OUTPUT,
              "unknown": "unknown"}


def in_session(selected: Collection[str], session: str | None, session_dir: str) -> bool:
    """Whether a session is one of ``selected``: by the id its log gives it, or its dir's name or path."""
    name = session_dir.rstrip("/").rsplit("/", 1)[-1]
    return session in selected or name in selected or session_dir in selected


#: A run of one artifact's hits, in order (at most :data:`HIT_BATCH`).
Batch = list[SearchHit]
#: Hits per batch: one artifact's hits are handed on a list at a time, not a hit at a time.
HIT_BATCH = 1024


def search_root(root: Storage | str | os.PathLike[str], pattern: Pattern, *, logs: str | os.PathLike[str] | None = None,
                rebase: str | None = None, max_count: int | None = None,
                sessions: Collection[str] | None = None, kinds: Collection[str] | None = None,
                cancelled: Callable[[], bool] = lambda: False,
                findings_first: bool = False, context: bool = True,
                part: Sequence[PlanItem] | None = None) -> Generator[SearchHit | Finding, None, None]:
    """Every hit of ``pattern`` under ``root`` as it is found, artifact by artifact (sorted
    by session dir and name), with a :class:`Finding` for each artifact that could not be
    searched to its end. ``max_count`` caps the hits per artifact (grep's ``-m``);
    ``sessions`` (ids or session dir names) and ``kinds`` (:data:`KIND_NAMES`) keep only the
    artifacts they name, and nothing else is read. Raises :class:`PatternError` before
    anything is read for a bad pattern. A walk's findings come as the walk reaches them
    (before the hits of later session dirs), or with ``findings_first`` all before the first
    hit: for a reader that may stop early (a cap on hits shown), which would otherwise never
    see the findings of the dirs after its last hit. ``context`` False: a hit's ``before``,
    ``match`` and ``after`` may be left empty where leaving them costs less (a reader of
    spans only, as ``grep --json``: a dense pattern's hits are many). ``part``: only these
    entries of a local root with no logs (a part of
    :func:`~..scan.searchable.searchable_plan`'s: a search split across processes, see
    :mod:`.split`)."""
    # Lists of one: a reader of hits (the TUI) gets each as it is found, not when a list is full
    # (one of a huge artifact's searched window by window could wait seconds for the next).
    batches = search_root_batches(root, pattern, logs=logs, rebase=rebase, max_count=max_count, sessions=sessions,
                                  kinds=kinds, cancelled=cancelled, findings_first=findings_first, context=context,
                                  part=part, batch=1)
    with closing(batches):  # a reader that stops early stops what runs ahead now
        for ev in batches:
            if isinstance(ev, list):
                yield from ev
            else:
                yield ev


def search_root_batches(root: Storage | str | os.PathLike[str], pattern: Pattern, *,
                        logs: str | os.PathLike[str] | None = None, rebase: str | None = None,
                        max_count: int | None = None, sessions: Collection[str] | None = None,
                        kinds: Collection[str] | None = None, cancelled: Callable[[], bool] = lambda: False,
                        findings_first: bool = False, context: bool = True,
                        part: Sequence[PlanItem] | None = None,
                        batch: int = HIT_BATCH, dense: bool = False) -> Generator[Batch | Finding, None, None]:
    """:func:`search_root`'s events, an artifact's hits in lists (:data:`Batch`) of up to
    ``batch`` each, in the same order: for a reader that takes every hit (``grep``), which
    then costs no generator step per hit in each layer of the search (a dense regex has tens of
    thousands). A list is handed on when full or at the artifact's end: a hit may wait for the
    ones after it. ``dense``: the caller knows that most files may match (a search split
    across processes is, :func:`.split.dense`): no file is checked by the byte prefilter first
    (each part's search checked its first batch again, and read those files twice)."""
    pattern.compile()
    root_s = normalize_root(root)  # a directory, or s3://bucket/prefix
    store = open_storage(root_s)  # chosen once: each artifact is opened in it
    local = store.tree is not None
    wanted = None if kinds is None else {KIND_NAMES.get(k, k) for k in kinds}
    if part is not None and not (local and logs is None and sessions is None and not findings_first):
        raise ValueError("a part of a root is searched only on a local root, with no logs or sessions")
    if local and logs is None and sessions is None and not findings_first:
        # Nothing to link: the walk feeds the search as it goes, and the first files are
        # checked (in C, on other cores) while the walk goes on; each finding of the walk
        # comes out before the next hit.
        walked: list[Finding] = []

        def walk() -> Iterator[_Target]:
            for item in _walk_local_targets(root_s, part):
                if isinstance(item, Finding):
                    walked.append(item)
                elif wanted is None or item.kind in wanted:
                    yield item

        walking = walk()
        first = next(walking, None)
        if first is None:  # nothing to search: nothing of the searchers loads
            yield from walked
            return
        # closing: a reader that stops early stops the look-ahead threads now, not when the
        # generator is collected.
        searched = _searched(chain([first], walking), pattern, local, max_count, cancelled, store, context, batch,
                             dense)
        with closing(searched) as events:
            for ev in events:
                if walked:
                    yield from walked
                    walked.clear()
                yield ev
        yield from walked
        return
    targets, findings = _targets(root_s, local, None if logs is None else os.fspath(logs), rebase)
    if sessions is not None:
        targets = [t for t in targets if in_session(sessions, t.session, t.session_dir)]
        dirs = {t.session_dir for t in targets}
        # A finding about an artifact of another session is not this search's (one without a
        # path, a log's, stays).
        findings = [f for f in findings if f.path is None or f.code == "malformed-log"
                    or os.path.dirname(f.path) in dirs or in_session(sessions, None, os.path.dirname(f.path))]
    if wanted is not None:
        targets = [t for t in targets if t.kind in wanted]
    yield from findings
    if targets:
        yield from _searched(targets, pattern, local, max_count, cancelled, store, context, batch, dense)


def _searched(targets: Iterable[_Target], pattern: Pattern, local: bool, max_count: int | None,
              cancelled: Callable[[], bool], store: Storage, context: bool = True,
              batch: int = HIT_BATCH, dense: bool = False) -> Generator[Batch | Finding, None, None]:
    """The events of each target, in order, each checked by the byte prefilter first (``dense``:
    none is, see :func:`search_root_batches`)."""
    # The searchers load while a batch is checked (their imports are tens of ms of Python,
    # the check C on other threads): not after, on the way to the first search.
    checked = ((t, True) for t in targets) if dense else _prefiltered(targets, pattern, local, meanwhile=searchers)
    # Not in a worker of a split search (see .split): the workers are the cores, and a pool in
    # each would only make them contend (and cost each file an lstat to tell whether it is big).
    if local and prefilter.threads() > 1:
        yield from _big_ones_ahead(checked, pattern, max_count, cancelled, store, context, batch)
        return
    search_read = None
    if dense and local:
        from .tool import read_search  # (loaded with the searchers: once per search, not per file)

        search_read = read_search(pattern)
    if search_read is not None:
        # Most files are searched: the small tool outputs read many at a time (see .readahead).
        from .readahead import read_ahead

        for t, read in read_ahead((t for t, _ in checked), _tool_output_path):
            if cancelled():
                return
            if read is None or t.seen_for is not None:
                yield from _events(t, pattern, max_count, cancelled, store, context, batch)
            else:
                yield from _read_events(t, search_read(read, max_count, cancelled, context, batch), batch)
        return
    for t, may in checked:
        if cancelled():
            return
        if may:
            yield from _events(t, pattern, max_count, cancelled, store, context, batch)


def _tool_output_path(t: _Target) -> str | None:
    return t.path if t.kind != TRANSCRIPT else None


@functools.cache
def searchers() -> tuple[Callable[..., Iterator[list[MessageHit]]], Callable[..., Iterator[RunEvent]]]:
    """The byte-level searches of a tool output and a transcript (their hits in runs), imported
    at the first artifact searched (a search of a root with nothing to read never loads them),
    once: an import statement in :func:`_events` cost each artifact a few microseconds of import
    machinery. A search split across processes (see .split) loads them before it forks, once
    for all."""
    from .tool import search_tool_output_runs
    from .transcript import search_transcript_runs

    return search_tool_output_runs, search_transcript_runs


def _read_events(t: _Target, runs: Iterator[list[MessageHit]], batch_size: int) -> Iterator[Batch]:
    """:func:`_events` of a tool output read ahead (see .readahead) that no notice links, from
    its runs of hits: a dense search's files are many, and this is all of the per-file work
    that each needs."""
    record = tuple.__new__  # as _events' records
    head = (t.path, t.session, t.session_dir, t.kind, None, None)
    batch: Batch = []
    for run in runs:
        batch.extend([record(SearchHit, head + (h.start, h.end, None, h.before, h.match, h.after)) for h in run])
        while len(batch) >= batch_size:
            yield batch[:batch_size]
            batch = batch[batch_size:]
    if batch:
        yield batch


def _events(t: _Target, pattern: Pattern, max_count: int | None, cancelled: Callable[[], bool],
            store: Storage, context: bool = True, batch_size: int = HIT_BATCH) -> Iterator[Batch | Finding]:
    """The hits (and findings) of one artifact of ``store``, in order, the hits in lists of up
    to ``batch_size`` (a finding hands on the hits found before it first). The search hands
    its hits on in runs (a dense regex: tens of thousands), each made a record here, a list at
    a time."""
    tool_output_runs, transcript_runs = searchers()
    seen: SeenRanges | None = None
    if t.seen_for is not None:
        # Only then: the seen ranges' module loads the notice checker (a search of a root
        # with no logs never needs it).
        from .seen import is_seen

    def was_seen(message: int | None, h: MessageHit) -> bool | None:
        """Whether the model saw the hit (None: not known), asked only where a notice links the artifact."""
        nonlocal seen
        if seen is None:
            assert t.seen_for is not None
            seen = t.seen_for()
        return is_seen(seen.get(message if message is not None else 0), h.byte_start, h.byte_end)

    # linked False: nothing links the artifact, every hit's seen is None
    path, session, session_dir, kind, linked = t.path, t.session, t.session_dir, t.kind, t.seen_for is not None
    record = tuple.__new__  # a SearchHit made without its generated __new__'s call (half the time)
    batch: Batch = []

    def add(message: int | None, role: str | None, run: list[MessageHit]) -> None:
        batch.extend([record(SearchHit, (path, session, session_dir, kind, message, role, h.start, h.end,
                                         was_seen(message, h) if linked else None, h.before, h.match, h.after))
                      for h in run])

    def full() -> Iterator[Batch]:
        """The batch's full lists, the rest kept in it."""
        nonlocal batch
        if len(batch) >= batch_size:
            cut = len(batch) - len(batch) % batch_size
            for i in range(0, cut, batch_size):
                yield batch[i : i + batch_size]
            batch = batch[cut:]

    if kind != TRANSCRIPT:
        try:
            for run in tool_output_runs(path, pattern, limit=max_count, cancelled=cancelled, prefiltered=True,
                                        store=store, context=context, run_size=batch_size):
                add(None, None, run)
                yield from full()
        except OSError as exc:
            if batch:
                yield batch
                batch = []
            yield finding("unreadable", path=path, detail=exc.strerror or str(exc))
    else:
        for ev in transcript_runs(path, pattern, limit=max_count, cancelled=cancelled, prefiltered=True,
                                  store=store, context=context, run_size=batch_size):
            if isinstance(ev, Finding):
                if batch:
                    yield batch
                    batch = []
                yield ev
                continue
            add(ev.message, ev.role, ev.hits)
            yield from full()
    if batch:
        yield batch


#: A local artifact this big is searched on a thread of its own, ahead of its turn: its search
#: is C over big windows (reading, joining, counting, matching without the GIL), so several
#: such searches share the cores. Smaller ones are searched in turn: their search is more
#: Python (a record per hit), which threads would only make contend for the GIL.
BIG_ARTIFACT = 8 << 20
#: Artifacts whose search may run ahead of the one whose hits are being yielded.
SEARCH_AHEAD = 8
#: Hits a search ahead holds for one artifact: the rest of its search goes on in its turn, so
#: memory stays bounded (a dense pattern over a huge file) and its first hits come early.
AHEAD_HITS = 4096

_Ahead = tuple[list[Batch | Finding], Iterator[Batch | Finding] | None]
T = TypeVar("T")


class _Job(Generic[T]):
    """One call of a :class:`_Workers`: its result, or its exception, once it has run."""

    value: T  # set once the call has returned (``done``)

    def __init__(self, call: Callable[[], T]) -> None:
        import threading

        self.call = call
        self.ran = threading.Event()
        self.done = False
        self.error: BaseException | None = None

    def result(self) -> T:
        self.ran.wait()
        if self.error is not None:
            raise self.error
        if not self.done:
            raise RuntimeError("not run: its workers were stopped first")
        return self.value


class _Workers:
    """``count`` daemon threads running the calls handed to :meth:`submit` in that order (with
    one, one call at a time, in turn). Not ``concurrent.futures``' pool: importing it (logging
    with it) and starting it were 9 ms of ``grep``'s start-up, on the way to the first search.
    A call not begun when :meth:`stop` is called is not run (its job ran, not done)."""

    def __init__(self, count: int, name: str) -> None:
        import queue
        import threading

        self._todo: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._stopped = False
        self._count = 0
        try:
            for k in range(count):
                threading.Thread(target=self._work, name=f"{name}_{k}", daemon=True).start()
                self._count += 1
        except BaseException:
            self.stop()  # a thread that could not start: those that did end, not wait forever
            raise

    def submit(self, call: Callable[[], T]) -> _Job[T]:
        job = _Job(call)
        self._todo.put(job)
        return job

    def stop(self) -> None:
        self._stopped = True
        for _ in range(self._count):
            self._todo.put(None)  # each thread ends at its next take

    def _work(self) -> None:
        while (job := self._todo.get()) is not None:
            try:
                if not self._stopped:
                    job.value = job.call()
                    job.done = True
            except BaseException as exc:  # handed to the reader, in its turn
                job.error = exc
            finally:
                job.ran.set()


def _big_ones_ahead(checked: Iterator[tuple[_Target, bool]], pattern: Pattern, max_count: int | None,
                    cancelled: Callable[[], bool], store: Storage, context: bool = True,
                    batch: int = HIT_BATCH) -> Iterator[Batch | Finding]:
    """:func:`_events` of each target that may match, in order, big ones searched ahead on
    every core (each holding at most :data:`AHEAD_HITS` hits until its turn, then going on in
    it); whatever is ahead stops when the caller stops."""
    import threading

    stop = threading.Event()

    def stopped() -> bool:
        return stop.is_set() or cancelled()

    def collect(t: _Target) -> _Ahead:
        if stopped():
            return [], None
        events = _events(t, pattern, max_count, stopped, store, context, batch)
        held: list[Batch | Finding] = []
        hits = 0
        for ev in events:
            held.append(ev)
            hits += len(ev) if isinstance(ev, list) else 0
            if hits >= AHEAD_HITS or stopped():
                return held, events  # the rest in its turn, on the caller's thread
        return held, None

    def turn(t: _Target, job: _Job[_Ahead] | None) -> Iterator[Batch | Finding]:
        if job is None:
            yield from _events(t, pattern, max_count, cancelled, store, context, batch)
            return
        held, rest = job.result()
        yield from held
        if rest is not None and not cancelled():
            yield from rest

    pool: _Workers | None = None
    pending: deque[tuple[_Target, _Job[_Ahead] | None]] = deque()
    try:
        for t, may in checked:
            if not may:
                continue
            try:
                big = os.lstat(t.path).st_size >= BIG_ARTIFACT
            except OSError:
                big = False  # the search says why
            job = None
            if big:
                if pool is None:
                    pool = _Workers(prefilter.threads(), "spillscope-search")
                job = pool.submit(functools.partial(collect, t))
            pending.append((t, job))
            while pending and (len(pending) > SEARCH_AHEAD or pending[0][1] is None):
                if cancelled():
                    return
                yield from turn(*pending.popleft())
        while pending:
            if cancelled():
                return
            yield from turn(*pending.popleft())
    finally:
        # A search stopped early (cancelled, its reader gone): what runs ahead stops at its
        # next window, and nothing waits for it.
        stop.set()
        if pool is not None:
            pool.stop()
            for _, job in pending:
                if job is not None and job.ran.is_set() and job.done:
                    rest = job.value[1]
                    if rest is not None and hasattr(rest, "close"):
                        rest.close()  # its file closed now, not when collected


#: Artifacts whose bytes are checked ahead of the one being searched (a bounded look-ahead).
LOOKAHEAD = 256
#: Local artifacts ruled in or out per native call: the first batch small (the first hits come
#: soon), then each four times bigger up to BATCH (fewer calls), the next one gathered by the
#: walk and checked while the one before is searched.
FIRST_BATCH, BATCH = 64, 4096
#: Below this share of the first batch ruled out, the rest is not prefiltered: reading every
#: file twice (the check, then the search) costs more than the few searches it saves (-E over
#: the 1 GB mixed root rules out 24% of the files, the small ones: 1.67 s checked, 1.42 s not).
DENSE = 0.5


def _prefiltered(targets: Iterable[_Target], pattern: Pattern, local: bool,
                 meanwhile: Callable[[], object] = lambda: None) -> Iterator[tuple[_Target, bool]]:
    """Each target, in order, with whether its bytes may hold a match: checked on every core
    (natively in batches for a local root; else ``pread`` and ``memmem`` on a thread pool,
    the GIL released), yielded in the root's order so that results stay in a stable order
    whatever the threads do. ``targets`` is taken as it comes (a walk): the next batch is
    gathered while the one before is checked. ``meanwhile`` is called once before the first
    verdict is handed on, while a batch is checked (whatever the checks leave this thread
    free to do)."""
    if pattern.literal is None and pattern.required is None:
        yield from ((t, True) for t in targets)  # a regex: no prefilter
        return
    it = iter(targets)
    if local and may_match_many([], [], pattern) is not None:
        def batches() -> Iterator[list[_Target]]:
            size = FIRST_BATCH
            while True:
                batch = list(islice(it, size))
                if not batch:
                    return
                yield batch
                size = min(size * 4, BATCH)

        def check(batch: list[_Target]) -> list[bool]:
            got = may_match_many([t.path for t in batch], [t.kind == TRANSCRIPT for t in batch], pattern)
            assert got is not None
            return got

        todo = batches()
        first = next(todo, None)
        if first is None:
            return
        # One native call at a time, each on every core, in turn; a batch not begun when the
        # reader stops is not checked (one begun runs to its end: nothing waits for it).
        checker = _Workers(1, "spillscope-prefilter")
        try:
            checking = checker.submit(functools.partial(check, first))
            second = next(todo, None)  # gathered while the first is checked
            # ``meanwhile`` runs while a check does: the first batch's where it is all there
            # is (a root of a few big files), else the second's, not before it begins (a first
            # batch of 64 small files is checked in a few ms, and the second waited on it).
            if second is None:
                meanwhile()
            verdicts = checking.result()
            if len(first) == FIRST_BATCH and verdicts.count(False) < len(first) * DENSE:
                # Nearly every file may match (a dense pattern): checking the rest would
                # read each twice for nothing.
                if second is not None:
                    meanwhile()
                yield from zip(first, verdicts)
                yield from ((t, True) for t in second or ())
                yield from ((t, True) for t in it)
                return
            pending: deque[tuple[list[_Target], _Job[list[bool]]]] = deque()  # checked in turn
            if second is not None:
                pending.append((second, checker.submit(functools.partial(check, second))))
                meanwhile()
            yield from zip(first, verdicts)
            while pending:
                later = next(todo, None)  # gathered while the one before is checked
                if later is not None:
                    pending.append((later, checker.submit(functools.partial(check, later))))
                batch, job = pending.popleft()
                yield from zip(batch, job.result())
            return
        finally:
            checker.stop()
    from concurrent.futures import Future, ThreadPoolExecutor

    workers = max(1, os.cpu_count() or 1)
    if workers == 1:
        yield from ((t, may_match(t.path, t.kind == TRANSCRIPT, pattern)) for t in it)
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="spillscope-prefilter")
    try:
        ahead_one: deque[tuple[_Target, Future[bool]]] = deque()

        def submit(n: int) -> None:
            for t in islice(it, n):
                ahead_one.append((t, pool.submit(may_match, t.path, t.kind == TRANSCRIPT, pattern)))

        submit(LOOKAHEAD)
        while ahead_one:
            t, one = ahead_one.popleft()
            may = one.result()
            submit(1)
            yield t, may
    finally:
        # A search stopped early (cancelled, a cap reached) does not wait for the look-ahead.
        pool.shutdown(wait=False, cancel_futures=True)
