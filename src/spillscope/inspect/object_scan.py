"""Scanning a spill root held in an object store (``s3://bucket/prefix``; any store that is
not a tree): one listing of every key, read as the local layout.

Keys follow the local layout (``prefix/session-<12 hex>/<12 hex>-<name>``), so the scan
yields the same :class:`RootScan` records and the same findings as a local root: a stray
key is ``unexpected-entry``, a key that is gone is ``expired-locator`` downstream. Objects
have no POSIX mode and no symlinks, so ``insecure-permissions`` and ``symlink`` never
apply: session dirs are recorded as 0700 and objects as 0600 (what the local backend
would have written). The store itself (:mod:`spillscope.storage`) is read-only.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterator

from ..storage import ObjectInfo, RootGone, Storage
from .findings import finding
from .scan import SESSION_DIR, Artifact, ProgressFn, RootScan, SessionDir, classify_name

#: What an object is recorded with: the modes the local backend writes.
OBJECT_MODE, DIR_MODE = 0o600, 0o700


def scan_objects(store: Storage, *, progress: ProgressFn | None = None) -> RootScan:
    """The :class:`RootScan` of an object-store root (see the module docstring)."""
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


def listing_json_objects(store: Storage, now: float, progress: ProgressFn | None = None) -> str:
    """The no-logs ``ls --json`` of an object-store root: the same records as a local listing."""
    from .listing import ascii_json, codes_by_path, session_record

    scan = scan_objects(store, progress=progress)
    codes = codes_by_path(scan.findings)
    findings = [f.to_json() for f in scan.findings]
    return ascii_json({
        "root": scan.root,
        "sessions": [session_record(s, None, codes, now) for s in scan.sessions],
        "findings": findings,
        "summary": dict(sorted(Counter(f["code"] for f in findings).items())),
    })
