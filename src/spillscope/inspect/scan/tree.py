"""Scanning a spill root: root → session dirs → artifacts, from ``os.scandir`` + ``lstat`` only
(a directory), or from one listing of its keys (an object store: :func:`scan_objects`).

Content is never read here (kinds come from names; the transcript reader confirms them
later). Symlinks are reported, never followed. A vanished or unreadable entry is a
finding, and the scan goes on.
"""

from __future__ import annotations

import functools
import operator
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Callable, Iterator, Literal, NamedTuple

from ...spill.naming import decode_segment
from ...storage import ObjectInfo, RootGone, Storage, open_storage
from ...storage.local import file_type
from ..findings import Finding, finding

_NAME = operator.attrgetter("name")
#: Every permission value as one shared int: ``st_mode & 0o7777`` makes a new int object
#: per artifact (above 256 ints are not cached), and a wide root holds one per file.
_PERMS = list(range(0o10000))
ArtifactKind = Literal["session-reference-transcript", "tool-output", "unknown"]
SESSION_DIR = re.compile(r"^session-([0-9a-f]{12})\Z")
ARTIFACT = re.compile(r"^([0-9a-f]{12})-(.+)\Z", re.S)
TRANSCRIPT_NAME = re.compile(r"^session-reference-([1-9][0-9]*)\.txt\Z")


class Artifact(NamedTuple):
    """One entry of a session dir, from ``lstat`` only (a NamedTuple: cheap at 100k)."""

    path: str
    session_dir: str
    name: str
    #: The suggested name, decoded from the file name (``None`` if the name is not an encoding).
    suggested_name: str | None
    kind: ArtifactKind
    size: int
    mtime: float
    mode: int
    is_symlink: bool
    is_regular: bool

    @property
    def tool_name(self) -> str | None:
        if self.kind == "tool-output" and self.suggested_name and self.suggested_name.endswith(".txt"):
            return self.suggested_name[:-4]
        return None


@dataclass(slots=True)
class SessionDir:
    """A session dir of the root and its artifacts, in name order."""

    path: str
    name: str
    hash: str
    mode: int
    artifacts: list[Artifact] = field(default_factory=list)


@dataclass
class RootScan:
    """A spill root's listing: its session dirs and what is wrong with its entries."""

    root: str
    sessions: list[SessionDir]
    findings: list[Finding]
    exists: bool = True

    def artifacts(self) -> list[Artifact]:
        return [a for s in self.sessions for a in s.artifacts]

    def by_path(self) -> dict[str, Artifact]:
        return {a.path: a for s in self.sessions for a in s.artifacts}


def classify_name(name: str) -> tuple[str | None, ArtifactKind]:
    """(decoded suggested name, kind) from an artifact's file name alone."""
    m = ARTIFACT.match(name)
    if m is None:
        return None, "unknown"
    return classify_suffix(m.group(2))


@functools.lru_cache(maxsize=8192)
def classify_suffix(encoded: str) -> tuple[str | None, ArtifactKind]:
    # Cached: a root holds many files with the same suffix (bash.txt, session-reference-1.txt).
    suggested = decode_segment(encoded)
    if suggested is None:
        return None, "unknown"
    if TRANSCRIPT_NAME.match(suggested):
        return suggested, "session-reference-transcript"
    if suggested.endswith(".txt"):
        return suggested, "tool-output"
    return suggested, "unknown"


SessionSpec = tuple[str, str, str, int]  # path, dir name, hash, mode (-1: not read, see root_plan)
#: ``progress(phase, done, total)``: "scan" counts session dirs, "logs" session logs,
#: "verify" transcript bytes read; ``total`` is ``None`` where it is not known.
ProgressFn = Callable[[str, int, "int | None"], None]


def root_plan(root: str, follow_root: bool = True,
              modes: bool = True) -> tuple[RootScan | None, list[Finding | SessionSpec]]:
    """The root's entries in name order: a finding for each stray one, a spec per session
    dir. Returns a finished (empty) :class:`RootScan` instead when the root is unusable
    (with ``follow_root=False``, when the root path is a symlink: reported, not followed).
    ``modes`` False (a search's plan: it never reads a dir's mode): a session dir is known by
    its ``scandir`` type, with no ``lstat`` each, and its mode is -1; any other entry is
    ``lstat``ed as before (1,389 dirs: 7.5 ms listed and ``lstat``ed, 2.5 ms scanned)."""
    try:
        st = os.stat(root) if follow_root else os.lstat(root)
    except FileNotFoundError:
        return RootScan(root, [], [finding("unreadable", path=root, detail="spill root does not exist")], exists=False), []
    except OSError as exc:
        return RootScan(root, [], [finding("unreadable", path=root, detail=exc.strerror or str(exc))], exists=False), []
    if stat.S_ISLNK(st.st_mode):
        return RootScan(root, [], [finding("unreadable", path=root, detail="spill root is a symlink (not followed)")], exists=False), []
    if not stat.S_ISDIR(st.st_mode):
        return RootScan(root, [], [finding("unreadable", path=root, detail="spill root is not a directory")], exists=False), []
    try:
        if not modes:
            with os.scandir(root) as it:
                entries = sorted(((e.name, e) for e in it), key=lambda pair: pair[0])
        else:
            names = os.listdir(root)
    except OSError as exc:
        return RootScan(root, [], [finding("unreadable", path=root, detail=exc.strerror or str(exc))]), []
    if modes:
        return None, [_plan_entry(name, path) for name, path in _in_name_order(root, names)]
    prefix = root if root.endswith(os.sep) else root + os.sep
    plan: list[Finding | SessionSpec] = []
    for name, entry in entries:
        m = SESSION_DIR.match(name)
        try:
            # d_type: no system call, except where the file system leaves it unknown
            session_dir = m is not None and entry.is_dir(follow_symlinks=False)
        except OSError:
            session_dir = False
        if session_dir:
            assert m is not None
            plan.append((prefix + name, name, m.group(1), -1))
        else:
            plan.append(_plan_entry(name, prefix + name))  # the rare other entry: as the scan sees it
    return None, plan


def _plan_entry(name: str, path: str) -> Finding | SessionSpec:
    """The root's entry ``name`` at ``path``, ``lstat``ed: a session dir's spec, or a finding."""
    try:
        est = os.lstat(path)
    except OSError as exc:
        return finding("unreadable", path=path, detail=f"vanished or unreadable: {exc.strerror or exc}")
    m = SESSION_DIR.match(name)
    if stat.S_ISLNK(est.st_mode):
        return finding("symlink", path=path, detail=f"symlink to {_readlink(path)}; not followed")
    if m is None or not stat.S_ISDIR(est.st_mode):
        return finding("unexpected-entry", path=path, detail=f"{file_type(est.st_mode)} not written by the local backend")
    return (path, name, m.group(1), stat.S_IMODE(est.st_mode))


def scan_root(root: Storage | str | os.PathLike[str], *, progress: ProgressFn | None = None,
              follow_root: bool = True) -> RootScan:
    store = open_storage(root)
    if store.tree is None:  # an object store: one listing of its keys
        return scan_objects(store, progress=progress)
    root = store.tree
    done, plan = root_plan(root, follow_root)
    if done is not None:
        return done
    findings: list[Finding] = []
    sessions: list[SessionDir] = []
    total = len(plan) - sum(isinstance(item, Finding) for item in plan)
    for item in plan:
        if isinstance(item, Finding):
            findings.append(item)
            continue
        session, found = scan_session_dir(*item)
        findings += found
        sessions.append(session)
        if progress is not None:
            progress("scan", len(sessions), total)
    return RootScan(root, sessions, findings)


def scan_session_dir(path: str, name: str, hash_: str, mode: int) -> tuple[SessionDir, list[Finding]]:
    """One session dir's artifacts and findings (``lstat`` only; symlinks not followed)."""
    session, findings = _session_head(path, name, hash_, mode)
    try:
        names = os.listdir(path)
    except OSError as exc:
        findings.append(finding("unreadable", path=path, detail=exc.strerror or str(exc)))
        return session, findings
    append = session.artifacts.append
    for child, child_path in _in_name_order(path, names):
        art = lstat_artifact(child_path, child, name, findings)
        if art is not None:
            append(art)
    return session, findings


def _in_name_order(dir_path: str, names: list[str]) -> Iterator[tuple[str, str]]:
    """``(name, path)`` for each of ``names`` (the list is used up) in name order.

    Names, not DirEntry objects, sorted, then taken off the end of the reversed list: each
    path string is made (and lstat'ed) in name order, next to its record, and no DirEntry
    ever exists. With DirEntries, the paths lay in directory (hash) order and every later
    pass over the artifacts -- the path index, the orphan check, the JSON -- jumped about
    memory: on a wide dir those passes cost twice as much per artifact at 500,000 as at
    50,000."""
    names.sort()
    names.reverse()
    prefix = dir_path if dir_path.endswith(os.sep) else dir_path + os.sep
    pop = names.pop
    while names:
        name = pop()
        yield name, prefix + name


def _session_head(path: str, name: str, hash_: str, mode: int) -> tuple[SessionDir, list[Finding]]:
    """An empty :class:`SessionDir` and the findings about the dir itself."""
    findings: list[Finding] = []
    if mode & 0o077:
        findings.append(finding("insecure-permissions", path=path, detail=f"session dir mode {mode:04o} (expected 0700)"))
    return SessionDir(path, name, hash_, mode), findings


def open_session_dir(path: str, name: str, hash_: str, mode: int) -> tuple[SessionDir, list[Finding], list[os.DirEntry[str]]]:
    """An empty :class:`SessionDir`, its own findings, and its entries in name order."""
    session, findings = _session_head(path, name, hash_, mode)
    try:
        children = sorted(os.scandir(path), key=_NAME)
    except OSError as exc:
        findings.append(finding("unreadable", path=path, detail=exc.strerror or str(exc)))
        return session, findings, []
    return session, findings, children


def scan_entry(child: os.DirEntry[str], session_name: str, findings: list[Finding]) -> Artifact | None:
    """One entry of a session dir as an :class:`Artifact` (see :func:`lstat_artifact`)."""
    return lstat_artifact(child.path, child.name, session_name, findings)


def lstat_artifact(path: str, name: str, session_name: str, findings: list[Finding]) -> Artifact | None:
    """The entry at ``path`` (file name ``name``) as an :class:`Artifact`, its findings
    appended to ``findings``; ``None`` (with an ``unreadable`` finding) when it vanished."""
    try:
        cst = os.lstat(path)
    except OSError as exc:
        findings.append(finding("unreadable", path=path, detail=f"vanished mid-scan: {exc.strerror or exc}"))
        return None
    return artifact_from_lstat(path, name, cst, session_name, findings)


def artifact_from_lstat(path: str, name: str, cst: os.stat_result, session_name: str, findings: list[Finding]) -> Artifact:
    """The :class:`Artifact` at ``path`` (file name ``name``) from its ``lstat`` result,
    the findings that result and the name show appended to ``findings``."""
    suggested, kind = classify_name(name)
    fmt = cst.st_mode & 0o170000
    is_link, is_reg = fmt == stat.S_IFLNK, fmt == stat.S_IFREG
    art = Artifact(path, session_name, name, suggested, kind, cst.st_size, cst.st_mtime,
                   _PERMS[cst.st_mode & 0o7777], is_link, is_reg)
    if is_link:
        findings.append(finding("symlink", path=path, detail=f"symlink to {_readlink(path)}; not followed"))
    elif not is_reg:
        findings.append(finding("unexpected-entry", path=path, detail=f"{file_type(cst.st_mode)} where an artifact file belongs"))
    else:
        # Insecure is readable or writable by others, as for the session dir: a file made
        # tighter (0400, or 000 so that nobody can read it) is not, and its unreadability is
        # the one finding such a file earns (it was also "insecure-permissions" for mode 0000).
        if art.mode & 0o077:
            findings.append(finding("insecure-permissions", path=path, detail=f"file mode {art.mode:04o} (expected 0600)"))
        if kind == "unknown":
            findings.append(finding("unexpected-entry", path=path, detail="file name is not <12 hex>-<encoded name>"))
    return art


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


#: What an object-store object is recorded with: the modes the local backend writes (objects
#: have no POSIX mode, and no symlinks: ``insecure-permissions`` and ``symlink`` never apply).
OBJECT_MODE, DIR_MODE = 0o600, 0o700


def scan_objects(store: Storage, *, progress: ProgressFn | None = None) -> RootScan:
    """The :class:`RootScan` of an object-store root (``s3://``; any store that is not a tree):
    one listing of every key, read as the local layout (``session-<12 hex>/<12 hex>-<name>``), so
    the records and findings are a local root's: a stray key is ``unexpected-entry``."""
    root, findings = store.root, []
    sessions: dict[str, SessionDir] = {}
    try:
        objects = list(_with_progress(store.objects(), progress))
    except ImportError:
        raise
    except RootGone as exc:
        return RootScan(root, [], [finding("unreadable", path=root, detail=str(exc))], exists=False)
    except Exception as exc:
        return RootScan(root, [], [finding("unreadable", path=root, detail=store.describe_error(exc))], exists=False)
    for obj in objects:
        if obj.rel.endswith("/") and obj.size == 0:
            continue  # a "folder" marker some tools write: not an object of ours
        dir_name, sep, name = obj.rel.partition("/")
        m = SESSION_DIR.match(dir_name)
        if not sep or m is None or "/" in name:
            findings.append(finding("unexpected-entry", path=obj.url, detail="object not written by the spill backend"
                                    " (not <prefix>/session-<12 hex>/<name>)"))
            continue
        session = sessions.get(dir_name)
        if session is None:
            session = sessions[dir_name] = SessionDir(root + "/" + dir_name, dir_name, m.group(1), DIR_MODE)
        suggested, kind = classify_name(name)
        session.artifacts.append(Artifact(obj.url, dir_name, name, suggested, kind, obj.size,
                                          obj.mtime, OBJECT_MODE, False, True))
        if kind == "unknown":
            findings.append(finding("unexpected-entry", path=obj.url, detail="object name is not <12 hex>-<encoded name>"))
    ordered = [sessions[k] for k in sorted(sessions)]
    for s in ordered:
        s.artifacts.sort(key=lambda a: a.name)
    return RootScan(root, ordered, findings)


def _with_progress(objects: Iterator[ObjectInfo], progress: ProgressFn | None) -> Iterator[ObjectInfo]:
    n = 0
    for obj in objects:
        n += 1
        if progress is not None and n % 1000 == 0:
            progress("scan", n, None)
        yield obj
