"""The dsh root as a :class:`~.model.Stats`: the logs are folded first, then the root is walked
one session dir at a time (in worker processes on a wide local root).

What is counted, and from where:

- files and bytes: every entry of a session dir, from the scan's ``lstat`` (:mod:`..scan.tree`),
  symlinks and odd entries included at their own size (an ``os.walk`` of the root sums the
  same: that is the test);
- notices, omitted bytes and messages: from each session log (:mod:`..logs`), under the
  session the log belongs to -- what *that* session's model was not shown;
- findings: the scan's (odd entries, permissions, symlinks, unreadable places), the logs'
  (malformed lines and notices), ``orphan-artifact`` with ``--logs`` (a regular file no
  notice names: its locator resolved by :mod:`..link.locate`, or a replay-normalised name that
  matches the file's), what each notice's link decides without content (``expired-locator``,
  ``snapshot-unavailable``, ``outside-root``, ``foreign-owner``, ``bytes-mismatch``...: the
  same findings ``verify`` gives) and ``past-retention`` for each sweep candidate. Content is
  not read: comparing it is ``verify``'s job, and ``Stats.findings_scope`` says so;
- the sweep: :class:`..expiry.SweepForecast`, the local backend's own rule (strictly older
  than ``now - retention`` as Node's ``mtimeMs``, trusted dirs only), and for each candidate
  the first notice that still names it.

Memory: the logs' named-path set, a counter per session and the candidates; one session
dir's entries at a time. An object-store root (``s3://``) is listed by :func:`..scan.tree.scan_objects` (the sweep never
runs there).
"""

from __future__ import annotations

import functools
import heapq
import os
import re
import stat
import time
from typing import Any, Iterable, Iterator

from ...formats.notices import ToolSpillNotice
from ...spill.expiry_rule import DEFAULT_CLEANUP_PERIOD_DAYS
from ...spill.naming import session_dir_name
from ...spill.replay import normalized_name
from ...storage import Storage, open_storage
from ...util.gcpause import acyclic
from ..verify.coverage import why_nothing_checked
from ..verify.expiry import SweepForecast
from ..findings import Finding, set_apart
from ..link.locate import resolve_locator
from ..link.reference import validate_notice
from ..logs import ReferenceEntry, SessionLog, iter_logs
from ..scan.tree import (ARTIFACT, Artifact, ArtifactKind, ProgressFn, SessionDir, SessionSpec, classify_suffix,
                         open_session_dir, root_plan, scan_entry, scan_objects)
from .builder import BYTES, FILES, NEWEST, OLDEST, ON_DISK, StatsBuilder, new_class
from .model import Stats, SweepCandidate

AGENT = "dsh"
RULE = "dsh LocalSpillStore start-up sweep (cleanup_period_days)"
DEFAULT_RETENTION_SECONDS = DEFAULT_CLEANUP_PERIOD_DAYS * 86400.0
#: What a dsh ``stats`` finding count covers (``Stats.findings_scope``).
#: (Short: the TUI's stats screen shows it on one line at 80 columns.) The scan's entries and
#: the logs' notices, links, sizes, expiry and orphans are counted; previews and digests are not.
SCOPE_LOGS = "the scan and the logs; content not compared (run verify)"
SCOPE_NO_LOGS = "the scan only (no logs: no notice checked); content not compared"
#: Below this many session dirs the walk runs in-process (forking costs more).
PARALLEL_MIN_DIRS = 256


class _Named:
    """What the logs name: resolved artifact paths (→ the first ``log:line``) and
    replay-normalised names (``{{spillLocator:NAME}}``, which name no path)."""

    def __init__(self) -> None:
        self.paths: dict[str, str] = {}
        self.names: dict[str, str] = {}
        #: Each notice's in-root artifact path → (its session's counters, kind, tool, the
        #: byte count it logged, its owner's session dir): checked against the root once the
        #: walk is done (:func:`_link_findings`), one ``lstat`` per path.
        self.pending: dict[str, list[tuple[list[Any] | None, str, str | None, int | None, str]]] = {}
        #: For verify's nothing-checked rule: session logs read, notices, locators outside the root.
        self.logs = self.notices = self.outside = 0

    def add(self, locator: str | None, root: str, rebase: str | None, where: str) -> None:
        if locator is None:
            return
        name = normalized_name(locator)
        if name is not None:
            self.names.setdefault(name, where)
            return
        path, _ = resolve_locator(locator, root, rebase)
        if path is not None:
            self.paths.setdefault(path, where)

    def at(self, path: str, file_name: str) -> str | None:
        where = self.paths.get(path)
        if where is None and self.names:
            m = ARTIFACT.match(file_name)
            where = self.names.get(m.group(2)) if m is not None else None
        return where


#: The kind of artifact a reference notice names (a tool-spill notice names a ``tool-output``).
REFERENCE_KIND: ArtifactKind = "session-reference-transcript"


def _fold_log(b: StatsBuilder, log: SessionLog, root: str, rebase: str | None, named: _Named | None) -> None:
    session = None
    if log.session_id is not None:
        session = b.session(session_dir_name(log.session_id), log.session_id, project=log.cwd)
    for f in log.findings:
        b.add_finding(f.code, session)
    if named is not None:
        named.logs += 1
        named.notices += sum(1 for ref in log.references if ref.notice is not None) + len(log.tool_spills)
    for ref in log.references:
        notice = ref.notice
        if named is not None:
            named.add(ref.locator, root, rebase, f"{ref.log}:{ref.line}")
            _reference_findings(b, ref, session, root, rebase, named)
        if notice is None or session is None:
            continue
        ob, om = notice.get("omittedBytes"), notice.get("omittedMessages")
        b.add_notice(session, ob if isinstance(ob, int) and _count(ob) else None,
                     om if isinstance(om, int) and _count(om) else 0, REFERENCE_KIND)
    for spill in log.tool_spills:
        tool = spill.tool_name
        if named is not None:
            named.add(spill.locator, root, rebase, f"{spill.log}:{spill.line}")
            if spill.notice.dialect != "standard":
                b.add_finding("notice-dialect", session, "tool-output", tool)
            # verify compares a tool notice's omission with the artifact's text, not its size: no byte check here
            _locator_findings(b, spill.locator, session, "tool-output", tool, None, spill.target_session,
                              root, rebase, named)
        if session is not None:
            b.add_notice(session, _tool_omitted(spill.notice), 0, "tool-output", tool)


# verify's links (inspect/link/reference.py, tool.py) decide the same findings from the same
# notice; only what needs an artifact's content (previews, digests, transcripts) is left to verify.
def _reference_findings(b: StatsBuilder, ref: ReferenceEntry, session: list[Any] | None, root: str,
                        rebase: str | None, named: _Named) -> None:
    """The findings ``verify`` gives a reference notice without reading its artifact."""
    kind = REFERENCE_KIND
    if ref.notice is None:
        if (ref.stats or {}).get("truncated") is True:
            b.add_finding("malformed-notice", session, kind)
        return
    problems = validate_notice(ref)
    for _ in problems:
        b.add_finding("malformed-notice", session, kind)
    snap = ref.snapshot or {}
    if snap.get("status") == "unavailable" and not problems:
        b.add_finding("snapshot-unavailable", session, kind)
        return
    locator = snap.get("locator")
    if snap.get("status") != "saved" or not isinstance(locator, str):
        return
    size = snap.get("bytes")
    _locator_findings(b, locator, session, kind, None, size if _count(size) else None, ref.target_session,
                      root, rebase, named)


def _locator_findings(b: StatsBuilder, locator: str, session: list[Any] | None, kind: str, tool: str | None,
                      size: int | None, owner: str, root: str, rebase: str | None, named: _Named) -> None:
    if normalized_name(locator) is not None:
        b.add_finding("normalized-locator", session, kind, tool)
        return
    path, _ = resolve_locator(locator, root, rebase)
    if path is None:
        b.add_finding("outside-root", session, kind, tool)
        named.outside += 1
        return
    named.pending.setdefault(path, []).append((session, kind, tool, size, session_dir_name(owner)))


def _link_findings(b: StatsBuilder, root: str, named: _Named, regular: dict[str, int] | None) -> None:
    """Each notice's artifact, looked up once the walk is done: ``expired-locator`` where it
    is not a regular file in a session dir of the root (what the scan lists), else
    ``bytes-mismatch`` and ``foreign-owner`` as verify gives them. ``regular``: the object
    store's listing (path → size); a local root is asked with one ``lstat`` per path."""
    for path, notices in named.pending.items():
        size: int | None = None
        session_dir = os.path.basename(os.path.dirname(path))
        if regular is not None:
            size = regular.get(path)
        elif os.path.dirname(os.path.dirname(path)) == root and SESSION_DIR.fullmatch(session_dir):
            try:
                st = os.lstat(path)
            except PermissionError:
                continue  # unreadable: the scan's finding says so, as verify's ``unverified`` does
            except OSError:
                st = None
            size = st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None
        for session, kind, tool, logged, owner_dir in notices:
            if size is None:
                b.add_finding("expired-locator", session, kind, tool)
                continue
            if session_dir != owner_dir:
                b.add_finding("foreign-owner", session, kind, tool)
            if logged is not None and logged != size:
                b.add_finding("bytes-mismatch", session, kind, tool)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tool_omitted(notice: ToolSpillNotice) -> int | None:
    # "none" is a notice with no omission clause at all: no count given, as "unknown" is.
    return notice.omitted_bytes if notice.omitted_kind == "exact" else None


def _fold_session(b: StatsBuilder, s: SessionDir, found: list[Finding], forecast: SweepForecast | None,
                  named: _Named | None) -> None:
    """A session dir already scanned (the S3 listing): each artifact through the general fold."""
    counters = b.session(s.name)
    counters[ON_DISK] = True
    for art in s.artifacts:
        _fold_artifact(b, counters, art, named)
    _fold_rest(b, counters, s.path, s.artifacts, found, forecast, named)


def _fold_artifact(b: StatsBuilder, counters: list[Any], art: Artifact, named: _Named | None) -> None:
    tool = art.tool_name
    b.add_file(counters, art.session_dir, art.path, art.kind, tool, art.size, art.mtime)
    if named is not None and art.is_regular and named.at(art.path, art.name) is None:
        b.add_finding("orphan-artifact", counters, art.kind, tool)


def _fold_rest(b: StatsBuilder, counters: list[Any], dir_path: str, arts: list[Artifact], found: list[Finding],
               forecast: SweepForecast | None, named: _Named | None) -> None:
    """The scan's findings about a session dir, and its sweep candidates among ``arts``."""
    by_path = {a.path: a for a in arts} if found else {}
    for f in found:
        hit = by_path.get(f.path or "")
        b.add_finding(f.code, counters, hit.kind if hit else None, hit.tool_name if hit else None)
    if forecast is None:
        return
    expiring = [a for a in arts if forecast.expires(a)]
    if expiring and forecast.trusts(dir_path):  # the dir's lstat only where it decides something
        for art in expiring:
            b.add_finding("past-retention", counters, art.kind, art.tool_name)
            b.add_candidate(SweepCandidate(art.path, art.session_dir, art.size, art.mtime,
                                           named.at(art.path, art.name) if named is not None else None))


_HEX = "0123456789abcdef"
SESSION_DIR = re.compile(r"session-[0-9a-f]{12}")


@functools.lru_cache(maxsize=8192)
def _plain(suffix: str) -> tuple[str, ArtifactKind, str | None] | None:
    """(suggested name, kind, tool) for a plain artifact name's encoded suffix, or None."""
    suggested, kind = classify_suffix(suffix)
    if suggested is None or kind == "unknown":
        return None
    return suggested, kind, suggested[:-4] if kind == "tool-output" else None


def _fold_dir(b: StatsBuilder, spec: SessionSpec, forecast: SweepForecast | None, named: _Named | None) -> None:
    """One local session dir, folded as it is listed.

    The common entry -- a 0600 regular file named ``<12 hex>-<valid encoding>``, which the
    scan gives no finding -- is folded straight from its ``lstat`` (the same fast path as
    ``ls``'s listing, :mod:`..listing`); any other entry goes through the scan's own
    :func:`..scan.scan_entry`, its findings and all. Per file that is one ``lstat`` and a
    few dictionary steps: the walk is what costs."""
    session, found, entries = open_session_dir(*spec)
    name = session.name
    counters = b.session(name)
    counters[ON_DISK] = True
    classes, hours, heap, top = b.classes, b.hours, b.heap, b.top
    cut = forecast.cutoff / 1000 + 1e-5 if forecast is not None else float("-inf")
    files = total = 0
    oldest, newest = counters[OLDEST], counters[NEWEST]
    others: list[Artifact] = []
    near_cutoff: list[Artifact] = []
    for child in entries:
        cname = child.name
        if cname[12:13] == "-" and not cname[:12].strip(_HEX):
            suffix = cname[13:]
            plain = _plain(suffix)
            if plain is not None:
                try:
                    st = child.stat(follow_symlinks=False)
                except OSError:
                    st = None  # vanished: scan_entry below reports it
                if st is not None and st.st_mode == 0o100600:
                    size, mtime, path = st.st_size, st.st_mtime, child.path
                    files += 1
                    total += size
                    if oldest is None or mtime < oldest:
                        oldest = mtime
                    if newest is None or mtime > newest:
                        newest = mtime
                    key = (plain[1], plain[2])
                    c = classes.get(key)
                    if c is None:
                        c = classes[key] = new_class()
                    c[0] += 1
                    c[1] += size
                    hour_key = int(mtime // 3600)
                    d = hours.get(hour_key)
                    if d is None:
                        d = hours[hour_key] = [0, 0]
                    d[0] += 1
                    d[1] += size
                    if len(heap) < top:
                        heapq.heappush(heap, (size, path, name, plain[1], plain[2], mtime))
                    else:
                        least = heap[0]
                        if size > least[0] or (size == least[0] and path > least[1]):
                            heapq.heapreplace(heap, (size, path, name, plain[1], plain[2], mtime))
                    if named is not None and named.at(path, cname) is None:
                        b.add_finding("orphan-artifact", counters, plain[1], plain[2])
                    if mtime < cut:  # maybe past the cutoff: decided exactly with the rest
                        near_cutoff.append(Artifact(path, name, cname, plain[0], plain[1], size, mtime, 0o600,
                                                    False, True))
                    continue
        art = scan_entry(child, name, found)
        if art is not None:
            others.append(art)
    counters[FILES] += files
    counters[BYTES] += total
    counters[OLDEST], counters[NEWEST] = oldest, newest
    for art in others:
        _fold_artifact(b, counters, art, named)
    _fold_rest(b, counters, spec[0], near_cutoff + others, found, forecast, named)


# Worker state, set before the fork so the children inherit it (never pickled).
_STATE: tuple[SweepForecast | None, _Named | None, int] | None = None


def _state() -> tuple[SweepForecast | None, _Named | None, int]:
    assert _STATE is not None
    return _STATE


def _walk_group(specs: list[SessionSpec]) -> StatsBuilder:
    forecast, named, top = _state()
    b = StatsBuilder(top, AGENT)
    for spec in specs:
        _fold_dir(b, spec, forecast, named)
    return b


def _groups(specs: list[SessionSpec], parts: int) -> Iterator[list[SessionSpec]]:
    size = max(1, -(-len(specs) // parts))
    for i in range(0, len(specs), size):
        yield specs[i : i + size]


def _walk_parallel(specs: list[SessionSpec], workers: int, progress: ProgressFn | None) -> Iterable[StatsBuilder]:
    import multiprocessing  # here: a small root starts sooner

    groups = list(_groups(specs, workers * 4))  # a few groups per worker evens out uneven dirs
    done = 0
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        for group, part in zip(groups, pool.imap(_walk_group, groups)):
            done += len(group)
            if progress is not None:
                progress("scan", done, len(specs))
            yield part


def dsh_stats(root: Storage | str | os.PathLike[str], logs: str | os.PathLike[str] | None = None, *, top: int = 10,
              retention_seconds: float = DEFAULT_RETENTION_SECONDS, now: float | None = None,
              rebase: str | None = None, workers: int | None = None, progress: ProgressFn | None = None) -> Stats:
    """Stats of a dsh spill root (local or ``s3://``) and, with ``logs``, its session logs.

    ``retention_seconds`` is the store's ``cleanup_period_days`` (default 30 days);
    ``now`` the moment the sweep is forecast for (default: now)."""
    with acyclic():  # a counter list per session: the cyclic GC would re-walk them all, again and again
        return _dsh_stats(root, logs, top, retention_seconds, now, rebase, workers, progress)


def _dsh_stats(root: Storage | str | os.PathLike[str], logs: str | os.PathLike[str] | None, top: int, retention_seconds: float,
               now: float | None, rebase: str | None, workers: int | None, progress: ProgressFn | None) -> Stats:
    global _STATE
    store = open_storage(root)
    root = store.root
    now = time.time() if now is None else now
    b = StatsBuilder(top, AGENT)
    named = _Named() if logs is not None else None
    if logs is not None:
        for log in iter_logs(logs, progress=progress):
            _fold_log(b, log, root, rebase, named)
    forecast = SweepForecast(store, retention_seconds, now)
    if retention_seconds <= 0:  # the store's rule: cleanup_period_days 0 starts no sweep at all
        forecast.applies, forecast.why = False, "a cleanup period of 0 disables the store's sweep"
    if store.tree is None:  # an object store: one listing of its keys
        scan = scan_objects(store, progress=progress)
        by_dir: dict[str, list[Finding]] = {s.name: [] for s in scan.sessions}
        for f in scan.findings:  # each under the session dir its key is in, or the root's own
            first = f.path[len(root) + 1:].split("/", 1)[0] if f.path and f.path.startswith(root + "/") else None
            if first in by_dir:
                by_dir[first].append(f)
            else:
                b.add_finding(f.code)
        for s in scan.sessions:
            _fold_session(b, s, by_dir[s.name], None, named)
        if named is not None:
            _link_findings(b, root, named, {a.path: a.size for s in scan.sessions for a in s.artifacts if a.is_regular})
    else:
        done, plan = root_plan(root)
        if done is not None:
            for f in done.findings:
                b.add_finding(f.code)
            plan = []
        specs, found = set_apart(plan)
        for f in found:
            b.add_finding(f.code)
        workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
        _STATE = (forecast if forecast.applies else None, named, top)
        try:
            if workers > 1 and len(specs) >= PARALLEL_MIN_DIRS:
                for part in _walk_parallel(specs, workers, progress):
                    b.merge(part)
            else:
                _walk_serial(b, specs, progress)
        finally:
            _STATE = None
        if named is not None:
            _link_findings(b, root, named, None)
    reason: str | None
    if named is None:
        scope, reason = SCOPE_NO_LOGS, why_nothing_checked(False, 0, 0, 0)
    else:
        checked = sum(len(notices) for notices in named.pending.values())
        scope = SCOPE_LOGS
        reason = None if checked else why_nothing_checked(True, named.logs, named.notices, named.outside)
    return b.build(root, now, None if logs is None else os.fspath(logs),
                   (RULE, retention_seconds, forecast.cutoff, forecast.applies, forecast.why), scope, reason)


def _walk_serial(b: StatsBuilder, specs: list[SessionSpec], progress: ProgressFn | None) -> None:
    forecast, named, _ = _state()
    for i, spec in enumerate(specs, start=1):
        _fold_dir(b, spec, forecast, named)
        if progress is not None and (i % 256 == 0 or i == len(specs)):
            progress("scan", i, len(specs))
