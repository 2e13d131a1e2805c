"""A watch's changes applied to an inspection at once, path by path, without a pass
over the whole root.

A live view shows a new or vanished artifact as soon as the watch reports it: each
event's path is ``lstat``-ed again (the event says only that something happened there;
the disk says what is there now), its session dir is added when it appeared and dropped
when it is gone, and everything else is kept as it was. What this cannot know (the
references' and tool spills' links, a changed transcript's content) stays as the last
full pass left it, so the caller shows the result as *not verified* and runs a full
pass later; that pass ends exactly equal to the disk.

Nothing here follows a symlink: a session dir's path that is a symlink now is dropped,
and a root path that is not a directory itself now (a symlink, a file, nothing) shows
nothing under it, whatever the events say.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import stat
from bisect import bisect_left
from itertools import compress
from typing import Iterable

from ...spill.naming import session_dir_name
from ..findings import Finding, finding
from ..link.records import ReferenceLink, ToolSpillLink
from ..scan.tree import _NAME, SESSION_DIR, Artifact, RootScan, SessionDir, lstat_artifact
from ..verify.inspection import Inspection
from .events import STATUS_EVENTS, ChangeEvent, root_problem

#: Findings a scan makes from ``lstat`` alone: redone for each path an event names.
_SCAN_CODES = frozenset({"symlink", "unexpected-entry", "insecure-permissions", "unreadable"})


def apply_events(ins: Inspection, events: Iterable[ChangeEvent]) -> tuple[Inspection, set[str]]:
    """``ins`` with the artifacts the events name re-read from the disk, and the paths
    whose entry changed (added, modified, deleted). ``ins`` itself is not modified."""
    root = ins.root
    events = list(events)
    if not events:
        return ins, set()
    why = root_problem(root)
    if why is not None:
        return _without_root(ins, why)
    paths: set[str] = set()
    for ev in events:
        if ev.event in STATUS_EVENTS:
            continue
        parent = os.path.dirname(ev.path)
        if os.path.dirname(parent) == root and SESSION_DIR.match(os.path.basename(parent)):
            paths.add(ev.path)
    if not paths:
        return ins, set()
    sessions = {s.path: s for s in ins.scan.sessions}
    touched: dict[str, SessionDir] = {}  # session dir path → its new copy (or absent: gone)
    # Its artifacts while patching: a copy of the dir's list, kept sorted by name, each
    # path found by bisection and added or removed at its place (a dir of thousands is
    # neither copied into a dict nor sorted again per batch).
    arts_of: dict[str, list[Artifact]] = {}
    gone_dirs: set[str] = set()
    new_findings: list[Finding] = []
    changed: set[str] = set()
    for path in sorted(paths):
        d = os.path.dirname(path)
        if d in gone_dirs:
            continue
        session = touched.get(d)
        if session is None:
            try:
                dst = os.lstat(d)
                is_dir = stat.S_ISDIR(dst.st_mode)
            except OSError:
                is_dir = False
            old = sessions.get(d)
            if not is_dir:
                gone_dirs.add(d)
                if old is not None:
                    changed.update(a.path for a in old.artifacts)
                    changed.add(d)
                continue
            m = SESSION_DIR.match(os.path.basename(d))
            assert m is not None
            if old is None:
                changed.add(d)
                session = SessionDir(d, os.path.basename(d), m.group(1), stat.S_IMODE(dst.st_mode))
                if session.mode & 0o077:
                    new_findings.append(finding("insecure-permissions", path=d,
                                                detail=f"session dir mode {session.mode:04o} (expected 0700)"))
            else:
                session = dataclasses.replace(old, artifacts=[])
            touched[d] = session
            arts_of[d] = list(old.artifacts) if old is not None else []
        arts = arts_of[d]
        name = os.path.basename(path)
        at = bisect_left(arts, name, key=_NAME)
        before = arts[at] if at < len(arts) and arts[at].name == name else None
        found: list[Finding] = []
        art = lstat_artifact(path, name, session.name, found)
        if art is None:
            found = []  # gone: nothing to say about it (a vanished entry is not unreadable)
            if before is not None:
                del arts[at]
                changed.add(path)
        elif art != before:
            if before is not None:
                arts[at] = art
            else:
                arts.insert(at, art)
            changed.add(path)
        if path in changed:
            new_findings += found
    if not changed:
        return ins, set()
    for d, session in touched.items():
        session.artifacts = arts_of[d]
    kept_sessions = [touched.get(s.path, s) for s in ins.scan.sessions if s.path not in gone_dirs]
    kept_sessions += [s for p, s in touched.items() if p not in sessions]
    kept_sessions.sort(key=lambda s: s.name)

    # A finding about a changed path is redone (from lstat) or left to the full pass.
    # (This runs on every batch over every finding: C-level passes over their paths, a
    # dirname only for a path under a session dir that went away.)
    if gone_dirs:
        under = tuple(d + os.sep for d in gone_dirs)
        stale = changed | {p for p in map(_PATH, ins.findings)
                           if p is not None and p.startswith(under) and os.path.dirname(p) in gone_dirs}
    else:
        stale = changed
    scan = RootScan(root, kept_sessions, _without(ins.scan.findings, stale) +
                    [f for f in new_findings if f.code in _SCAN_CODES], ins.scan.exists)
    findings = _without(ins.findings, stale) + new_findings
    checks = dict(ins.artifact_checks)  # a copy, then the changed paths out: not a pass in Python over every check
    for p in changed:
        checks.pop(p, None)
    return dataclasses.replace(ins, scan=scan, findings=findings, artifact_checks=checks), changed


_PATH = operator.attrgetter("path")


def _without(findings: list[Finding], paths: set[str]) -> list[Finding]:
    """``findings`` but those whose path is in ``paths``, in order (a copy either way), with
    C-level passes: on a wide root this runs over thousands of findings every batch."""
    if paths.isdisjoint(map(_PATH, findings)):
        return list(findings)
    return list(compress(findings, map(operator.not_, map(paths.__contains__, map(_PATH, findings)))))


def _without_root(ins: Inspection, why: str) -> tuple[Inspection, set[str]]:
    """Nothing under a root path that is not a directory now; the logs' findings stay."""
    changed = {a.path for a in ins.scan.artifacts()} | {s.path for s in ins.scan.sessions}
    gone = finding("unreadable", path=ins.root, detail=f"spill root {why}")
    if not changed and not ins.scan.exists and gone in ins.scan.findings:
        return ins, set()
    under = ins.root + os.sep

    def keep(f: Finding) -> bool:
        return f.path is None or (f.path != ins.root and not f.path.startswith(under))

    scan = RootScan(ins.root, [], [gone], exists=False)
    findings = [f for f in ins.findings if keep(f)] + [gone]
    return dataclasses.replace(ins, scan=scan, findings=findings, artifact_checks={}), changed | {ins.root}


def changed_sessions(old: Inspection, new: Inspection) -> set[str] | None:
    """The session dir names whose part of the view differs between two inspections of
    the same root (their dir and artifacts, references, tool spills, session id, or the
    findings about them); ``None`` when the root itself differs. What a front end must
    redraw to go from showing ``old`` to showing ``new``, found without redrawing."""
    if old.root != new.root or old.scan.exists != new.scan.exists:
        return None
    a, b = _session_views(old), _session_views(new)
    return {name for name in a.keys() | b.keys() if a.get(name) != b.get(name)}


@dataclasses.dataclass
class _SessionView:
    """What a session's node shows; compared between two inspections."""

    dir: SessionDir | None = None
    refs: list[ReferenceLink] = dataclasses.field(default_factory=list)
    tools: list[ToolSpillLink] = dataclasses.field(default_factory=list)
    session_id: str | None = None
    #: The findings about the session dir or anything in it (by path or locator).
    findings: set[Finding] = dataclasses.field(default_factory=set)


def _session_views(ins: Inspection) -> dict[str, _SessionView]:
    views: dict[str, _SessionView] = {}

    def view(name: str) -> _SessionView:
        v = views.get(name)
        if v is None:
            v = views[name] = _SessionView(session_id=ins.session_ids.get(name))
        return v

    for s in ins.scan.sessions:
        view(s.name).dir = s
    for link in ins.references:
        view(session_dir_name(link.entry.target_session)).refs.append(link)
    for tlink in ins.tool_spills:
        view(session_dir_name(tlink.entry.target_session)).tools.append(tlink)
    under = ins.root.rstrip(os.sep) + os.sep
    for f in ins.findings:
        for where in {f.path, f.locator}:
            if where is not None and where.startswith(under):
                name = where[len(under):].split(os.sep, 1)[0]
                if SESSION_DIR.match(name):
                    view(name).findings.add(f)
    return views
