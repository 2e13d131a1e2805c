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
  matches the file's) and ``past-retention`` for each sweep candidate. Content is not read:
  checking it is ``verify``'s job;
- the sweep: :class:`..expiry.SweepForecast`, the local backend's own rule (strictly older
  than ``now - retention`` as Node's ``mtimeMs``, trusted dirs only), and for each candidate
  the first notice that still names it.

Memory: the logs' named-path set, a counter per session and the candidates; one session
dir's entries at a time. An ``s3://`` root is listed by :mod:`..s3root` (the sweep never
runs there).
"""

from __future__ import annotations

import os
import time
from typing import Iterable, Iterator

from ...formats.notices import ToolSpillNotice
from ...spill.expiry_rule import DEFAULT_CLEANUP_PERIOD_DAYS
from ...spill.naming import session_dir_name
from ...spill.replay import normalized_name
from ...util.fs import is_remote, normalize_root
from ..verify.expiry import SweepForecast
from ..findings import Finding
from ..link.locate import resolve_locator
from ..logs import SessionLog, iter_logs
from ..scan.tree import ARTIFACT, Artifact, ProgressFn, SessionDir, SessionSpec, root_plan, scan_session_dir
from .builder import StatsBuilder
from .model import Stats, SweepCandidate

AGENT = "dsh"
RULE = "dsh LocalSpillStore start-up sweep (cleanup_period_days)"
DEFAULT_RETENTION_SECONDS = DEFAULT_CLEANUP_PERIOD_DAYS * 86400.0
#: Below this many session dirs the walk runs in-process (forking costs more).
PARALLEL_MIN_DIRS = 256


class _Named:
    """What the logs name: resolved artifact paths (→ the first ``log:line``) and
    replay-normalised names (``{{spillLocator:NAME}}``, which name no path)."""

    def __init__(self) -> None:
        self.paths: dict[str, str] = {}
        self.names: dict[str, str] = {}

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


def _fold_log(b: StatsBuilder, log: SessionLog, root: str, rebase: str | None, named: _Named | None) -> None:
    session = None
    if log.session_id is not None:
        session = b.session(session_dir_name(log.session_id), log.session_id, project=log.cwd)
    for f in log.findings:
        b.add_finding(f.code, session)
    for ref in log.references:
        notice = ref.notice
        if named is not None:
            named.add(ref.locator, root, rebase, f"{ref.log}:{ref.line}")
        if notice is None or session is None:
            continue
        ob, om = notice.get("omittedBytes"), notice.get("omittedMessages")
        b.add_notice(session, ob if isinstance(ob, int) and _count(ob) else None,
                     om if isinstance(om, int) and _count(om) else 0)
    for spill in log.tool_spills:
        if named is not None:
            named.add(spill.locator, root, rebase, f"{spill.log}:{spill.line}")
        if session is not None:
            b.add_notice(session, _tool_omitted(spill.notice))


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tool_omitted(notice: ToolSpillNotice) -> int | None:
    # "none" is a notice with no omission clause at all: no count given, as "unknown" is.
    return notice.omitted_bytes if notice.omitted_kind == "exact" else None


def _fold_session(b: StatsBuilder, s: SessionDir, found: list[Finding], forecast: SweepForecast | None,
                  named: _Named | None) -> None:
    counters = b.session(s.name)
    add_file = b.add_file
    by_path: dict[str, Artifact] = {}
    for art in s.artifacts:
        tool = art.tool_name
        add_file(counters, s.name, art.path, art.kind, tool, art.size, art.mtime)
        if found:
            by_path[art.path] = art
        if named is not None and art.is_regular and named.at(art.path, art.name) is None:
            b.add_finding("orphan-artifact", counters, art.kind, tool)
    for f in found:
        hit = by_path.get(f.path or "")
        b.add_finding(f.code, counters, hit.kind if hit else None, hit.tool_name if hit else None)
    if forecast is not None and forecast.trusts(s.path):
        for art in s.artifacts:
            if forecast.expires(art):
                b.add_finding("past-retention", counters, art.kind, art.tool_name)
                b.add_candidate(SweepCandidate(art.path, s.name, art.size, art.mtime,
                                               named.at(art.path, art.name) if named is not None else None))


# Worker state, set before the fork so the children inherit it (never pickled).
_STATE: tuple[SweepForecast | None, _Named | None, int] | None = None


def _walk_group(specs: list[SessionSpec]) -> StatsBuilder:
    assert _STATE is not None
    forecast, named, top = _STATE
    b = StatsBuilder(top, AGENT)
    for spec in specs:
        s, found = scan_session_dir(*spec)
        _fold_session(b, s, found, forecast, named)
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


def dsh_stats(root: str | os.PathLike[str], logs: str | os.PathLike[str] | None = None, *, top: int = 10,
              retention_seconds: float = DEFAULT_RETENTION_SECONDS, now: float | None = None,
              rebase: str | None = None, workers: int | None = None, progress: ProgressFn | None = None) -> Stats:
    """Stats of a dsh spill root (local or ``s3://``) and, with ``logs``, its session logs.

    ``retention_seconds`` is the store's ``cleanup_period_days`` (default 30 days);
    ``now`` the moment the sweep is forecast for (default: now)."""
    global _STATE
    root = normalize_root(root)
    now = time.time() if now is None else now
    b = StatsBuilder(top, AGENT)
    named = _Named() if logs is not None else None
    if logs is not None:
        for log in iter_logs(logs, progress=progress):
            _fold_log(b, log, root, rebase, named)
    forecast = SweepForecast(root, retention_seconds, now)
    if is_remote(root):
        from ..s3root import scan_s3_root  # the S3 listing (imports the client lazily)

        scan = scan_s3_root(root, progress=progress)
        for f in scan.findings:
            if f.path is None or not any(f.path.startswith(s.path + "/") or f.path == s.path for s in scan.sessions):
                b.add_finding(f.code)
        for s in scan.sessions:
            found = [f for f in scan.findings if f.path is not None and (f.path == s.path or f.path.startswith(s.path + "/"))]
            _fold_session(b, s, found, None, named)
    else:
        done, plan = root_plan(root)
        if done is not None:
            for f in done.findings:
                b.add_finding(f.code)
            plan = []
        specs: list[SessionSpec] = []
        for item in plan:
            if isinstance(item, Finding):
                b.add_finding(item.code)
            else:
                specs.append(item)
        workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
        _STATE = (forecast if forecast.applies else None, named, top)
        try:
            if workers > 1 and len(specs) >= PARALLEL_MIN_DIRS:
                parts: Iterable[StatsBuilder] = _walk_parallel(specs, workers, progress)
            else:
                parts = _walk_serial(specs, progress)
            for part in parts:
                b.merge(part)
        finally:
            _STATE = None
    return b.build(root, now, None if logs is None else os.fspath(logs),
                   (RULE, retention_seconds, forecast.cutoff, forecast.applies, forecast.why))


def _walk_serial(specs: list[SessionSpec], progress: ProgressFn | None) -> Iterator[StatsBuilder]:
    for i, group in enumerate(_groups(specs, max(1, len(specs) // 64))):
        yield _walk_group(group)
        if progress is not None:
            progress("scan", min(len(specs), (i + 1) * 64), len(specs))
