"""The ``ls`` listing: sessions and artifacts with kind, size, age and finding codes.

:func:`listing` builds it from a full inspection (with logs; anything :class:`Inspected`). Without logs, a
listing needs nothing but names and ``lstat``, so :func:`listing_json` builds it in worker
processes, one group of session dirs each, each returning its part already encoded as
JSON text: on a wide root the per-entry Python work is what costs, and it splits
cleanly by session dir. There the common artifact is written straight into JSON text
(see :func:`_session_json`); every other entry goes through the same
:func:`scan_entry` and :func:`artifact_record` as the full listing, and both paths give
the same JSON values (tested equal).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Iterable, Protocol

import orjson

from ...spill.naming import session_dir_name
from ...util.text import ascii_json
from ...storage import Storage, open_storage
from ..findings import Finding, by_location
from .tree import (Artifact, ProgressFn, RootScan, SessionDir, SessionSpec, classify_suffix, open_session_dir, root_plan,
                   scan_entry, scan_objects)
from .order import order

#: Below this many session dirs the listing runs in-process (forking costs more).
PARALLEL_MIN_DIRS = 64
_NONE: list[str] = []


def codes_by_path(findings: Iterable[Finding]) -> dict[str, list[str]]:
    return {k: sorted({f.code for f in v}) for k, v in by_location(findings).items()}


_MODES = [f"{m:04o}" for m in range(0o10000)]  # "0600" for 0o600: a lookup, not a format, per artifact


def artifact_record(a: Artifact, codes: list[str], now: float) -> dict[str, Any]:
    return {
        "name": a.name,
        "path": a.path,
        "kind": a.kind,
        "suggestedName": a.suggested_name,
        "size": a.size,
        "mtime": a.mtime,
        "ageSeconds": round(now - a.mtime, 3),
        "mode": _MODES[a.mode],
        "symlink": a.is_symlink,
        "findings": codes,
    }


def _session_head(s: SessionDir, session_id: str | None, count: int, nbytes: int, codes: list[str]) -> dict[str, Any]:
    return {"dir": s.name, "path": s.path, "sessionId": session_id, "mode": _MODES[s.mode],
            "artifactCount": count, "bytes": nbytes, "findings": codes}


def session_record(s: SessionDir, session_id: str | None, codes: dict[str, list[str]], now: float) -> dict[str, Any]:
    get = codes.get
    record = _session_head(s, session_id, len(s.artifacts), sum(a.size for a in s.artifacts), get(s.path, _NONE))
    record["artifacts"] = [artifact_record(a, get(a.path, _NONE), now) for a in s.artifacts]
    return record


class Inspected(Protocol):
    """What the listing reads of a verify pass's ``Inspection`` (which is built above this
    package, from a scan: the listing names the fields instead of importing it)."""

    root: str
    scan: RootScan
    findings: list[Finding]
    session_ids: dict[str, str]

    def summary(self) -> dict[str, int]: ...


def listing(ins: Inspected, now: float) -> dict[str, Any]:
    codes = codes_by_path(ins.findings)
    return {
        "root": ins.root,
        "sessions": [session_record(s, ins.session_ids.get(s.name), codes, now) for s in ins.scan.sessions],
        "findings": [f.to_json() for f in ins.findings],
        "summary": ins.summary(),
        "totals": {"sessions": len(ins.scan.sessions), "artifacts": sum(len(s.artifacts) for s in ins.scan.sessions),
                   "bytes": sum(a.size for s in ins.scan.sessions for a in s.artifacts)},
    }


def listing_totals(sessions: list[dict[str, Any]]) -> dict[str, int]:
    """The ``totals`` member of a listing, from its session records."""
    return {"sessions": len(sessions), "artifacts": sum(s["artifactCount"] for s in sessions),
            "bytes": sum(s["bytes"] for s in sessions)}


_HEX = "0123456789abcdef"


def _plain_fields(suffix: str) -> str:
    """The ``"kind"`` value through the ``"suggestedName"`` member, as JSON text, for an
    artifact name ending in ``suffix`` -- or ``""`` when such a name is not plain.

    A valid encoding holds only ``[A-Za-z0-9._~-]``, so a name made of 12 hex digits, ``-``
    and a valid encoded suffix needs no JSON escaping and can be written as it is."""
    suggested, kind = classify_suffix(suffix)
    if kind == "unknown" or suggested is None:
        return ""
    return '"' + kind + '","suggestedName":' + ascii_json(suggested) + ","


def _session_json(spec: SessionSpec, now: float, plain: dict[str, str]) -> tuple[str, list[dict[str, Any]], int, int]:
    """One session dir's record as JSON text, its findings, its artifact count and bytes.

    The common artifact -- a 0600 regular file with a well-formed name -- has no findings
    and a fixed shape, so it is formatted straight into JSON text; anything else goes
    through :func:`scan_entry` and :func:`artifact_record` like the full listing does.
    Float formatting is the dear part, so the ``mtime`` values of a dir are formatted by
    one ``orjson.dumps`` call, and ``ageSeconds`` by ``:.3f`` (the same decimal digits
    as ``round(x, 3)``: both round the exact binary value half-even)."""
    session, found, children = open_session_dir(*spec)
    session_codes = codes_by_path(found).get(session.path, _NONE)
    dpath = ascii_json(session.path + os.sep)[:-1]  # the opening quote and the dir, no closing quote
    rows: list[tuple[str, str, os.stat_result | None]] = []  # (name, fields, lstat) or (JSON text, "", None)
    mtimes: list[float] = []
    nbytes = 0
    for child in children:
        cname = child.name
        if cname[12:13] == "-" and not cname[:12].strip(_HEX):
            suffix = cname[13:]
            fields = plain.get(suffix)
            if fields is None:
                fields = plain[suffix] = _plain_fields(suffix)
            if fields:
                try:
                    st = child.stat(follow_symlinks=False)
                except OSError:
                    st = None  # vanished: scan_entry below reports it
                if st is not None and st.st_mode == 0o100600:
                    rows.append((cname, fields, st))
                    mtimes.append(st.st_mtime)
                    nbytes += st.st_size
                    continue
        before = len(found)
        art = scan_entry(child, session.name, found)
        if art is not None:
            rows.append((ascii_json(artifact_record(art, sorted({f.code for f in found[before:]}), now)), "", None))
            nbytes += art.size
    mtime_texts = iter(orjson.dumps(mtimes).decode("ascii")[1:-1].split(","))
    parts = [f'{{"name":"{name}","path":{dpath}{name}","kind":{fields}"size":{st.st_size},'
             f'"mtime":{next(mtime_texts)},"ageSeconds":{now - st.st_mtime:.3f},"mode":"0600",'
             f'"symlink":false,"findings":[]}}' if st is not None else name
             for name, fields, st in rows]
    head = ascii_json(_session_head(session, None, len(parts), nbytes, session_codes))
    return head[:-1] + ',"artifacts":[' + ",".join(parts) + "]}", [f.to_json() for f in found], len(parts), nbytes


#: A group's listing: its JSON text, the findings of each dir, its artifact count and bytes.
Group = tuple[str, list[list[dict[str, Any]]], int, int]


def _scan_group(args: tuple[list[SessionSpec], float]) -> Group:
    """Some session dirs as one JSON text (records joined by commas), and the findings of each."""
    specs, now = args
    plain: dict[str, str] = {}
    texts, found = [], []
    count = nbytes = 0
    for spec in specs:
        text, findings, n, b = _session_json(spec, now, plain)
        texts.append(text)
        found.append(findings)
        count += n
        nbytes += b
    return ",".join(texts), found, count, nbytes


def _scan_group_into(args: tuple[list[SessionSpec], float, int]) -> tuple[int, list[list[dict[str, Any]]], int, int]:
    """Worker: :func:`_scan_group`, its text written into the memfd ``fd`` (the parent's).

    Pickling megabytes of text back through the pool's pipe cost more than the scan's
    own Python work; a write into shared memory and one read in the parent cost little."""
    specs, now, fd = args
    text, found, count, nbytes = _scan_group((specs, now))
    data = memoryview(text.encode("ascii"))
    offset = 0
    while offset < len(data):
        offset += os.pwrite(fd, data[offset:], offset)
    return len(data), found, count, nbytes


def _read_into_text(fd: int, size: int) -> str:
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            raise OSError(f"memfd: {size - offset} bytes short")
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks).decode("ascii")


def _groups(specs: list[SessionSpec], parts: int) -> list[list[SessionSpec]]:
    size = max(1, -(-len(specs) // parts))
    return [specs[i : i + size] for i in range(0, len(specs), size)]


def _scan_parallel(specs: list[SessionSpec], now: float, workers: int,
                   progress: ProgressFn | None = None) -> list[Group]:
    groups = _groups(specs, workers * 4)  # a few groups per worker evens out uneven dirs
    import multiprocessing  # here: every other command (and a small root) starts ~10 ms sooner

    context = multiprocessing.get_context("fork")
    done = 0

    def tell(group: list[SessionSpec]) -> None:
        nonlocal done
        done += len(group)
        if progress is not None:
            progress("scan", done, len(specs))

    if not hasattr(os, "memfd_create"):
        with context.Pool(workers) as pool:
            results: list[Group] = []
            for group, result in zip(groups, pool.imap(_scan_group, [(g, now) for g in groups])):
                results.append(result)
                tell(group)
            return results
    fds: list[int] = []
    try:
        fds += [os.memfd_create("spillscope-ls") for _ in groups]  # before the fork: inherited
        sized: list[tuple[int, list[list[dict[str, Any]]], int, int]] = []
        with context.Pool(workers) as pool:
            for group, sized_result in zip(groups, pool.imap(_scan_group_into, [(g, now, fd) for g, fd in zip(groups, fds)])):
                sized.append(sized_result)
                tell(group)
        return [(_read_into_text(fd, n), found, count, nbytes) for fd, (n, found, count, nbytes) in zip(fds, sized)]
    finally:
        for fd in fds:
            os.close(fd)


def listing_json(root: Storage | str, now: float, *, workers: int | None = None, progress: ProgressFn | None = None) -> str:
    """The no-logs listing as ASCII JSON text, scanned by ``workers`` processes."""
    store = open_storage(root)
    if store.tree is None:  # an object store: one listing of its keys
        return listing_json_objects(store, now, progress)
    root = store.tree
    done, plan = root_plan(root)
    if done is not None:
        early = [f.to_json() for f in done.findings]
        return ascii_json({"root": root, "sessions": [], "findings": early,
                           "summary": dict(sorted(Counter(f["code"] for f in early).items())),
                           "totals": listing_totals([])})
    specs = [item for item in plan if not isinstance(item, Finding)]
    workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    if workers > 1 and len(specs) >= PARALLEL_MIN_DIRS:
        results = _scan_parallel(specs, now, workers, progress)
    elif progress is None:
        results = [_scan_group((specs, now))]
    else:
        results, scanned = [], 0
        for group in _groups(specs, 64):
            results.append(_scan_group((group, now)))
            scanned += len(group)
            progress("scan", scanned, len(specs))
    per_session = iter([f for _, group, _, _ in results for f in group])
    findings: list[dict[str, Any]] = []
    for item in plan:  # keep the order a single scan reports findings in
        findings += [item.to_json()] if isinstance(item, Finding) else next(per_session)
    summary = dict(sorted(Counter(f["code"] for f in findings).items()))
    out = ['{"root":', ascii_json(root), ',"sessions":[']
    for text, _, _, _ in results:  # one copy of the (large) session texts, in the final join
        if text:
            out += [text, ","]
    if out[-1] == ",":
        out.pop()
    totals = {"sessions": len(specs), "artifacts": sum(r[2] for r in results), "bytes": sum(r[3] for r in results)}
    out += ['],"findings":', ascii_json(findings), ',"summary":', ascii_json(summary), ',"totals":', ascii_json(totals), "}"]
    return "".join(out)


def select(data: dict[str, Any], *, session: str | None = None, kind: str | None = None,
           older_than: float | None = None, finding: str | None = None, sort: str = "name") -> dict[str, Any]:
    """A listing narrowed to what an operator asked for, in the order asked for.

    ``session`` matches a session id, its dir name or its 12-hex hash; ``kind``,
    ``older_than`` (seconds, strictly older) and ``finding`` (a code) keep the artifacts
    that match, and the sessions that keep any. Each session's ``artifactCount`` and
    ``bytes`` and the ``totals`` are of what is kept; ``findings`` keeps those about what is
    kept (and, with ``finding``, only that code). ``sort``: ``size`` largest first, ``age``
    oldest first (a session by its oldest artifact), ``name`` the scan's order."""
    wanted_dir = None if session is None else session_dir_name(session)
    by_artifact = kind is not None or older_than is not None or finding is not None
    sessions = []
    for s in data["sessions"]:
        if session is not None and session not in (s["dir"], s["sessionId"], s["dir"][len("session-"):]) \
                and s["dir"] != wanted_dir:
            continue
        arts = [a for a in s["artifacts"]
                if (kind is None or a["kind"] == kind) and (older_than is None or a["ageSeconds"] > older_than)
                and (finding is None or finding in a["findings"])]
        if by_artifact and not arts and not (finding is not None and finding in s["findings"]):
            continue
        sessions.append({**s, "artifacts": arts, "artifactCount": len(arts), "bytes": sum(a["size"] for a in arts)})
    order(sessions, sort)
    kept = {s["path"] for s in sessions} | {a["path"] for s in sessions for a in s["artifacts"]}
    # Narrowed by place (a session, a kind, an age), findings elsewhere go; by code alone,
    # every finding of that code stays (a log line's too: it is what was asked for).
    by_place = session is not None or kind is not None or older_than is not None
    findings = [f for f in data["findings"]
                if (finding is None or f["code"] == finding)
                and (not by_place or f["path"] in kept or f["locator"] in kept)]
    return {**data, "sessions": sessions, "findings": findings,
            "summary": dict(sorted(Counter(f["code"] for f in findings).items())),
            "totals": listing_totals(sessions)}


def listing_json_objects(store: Storage, now: float, progress: ProgressFn | None = None) -> str:
    """The no-logs ``ls --json`` of an object-store root: the same records as a local listing."""
    scan = scan_objects(store, progress=progress)
    codes = codes_by_path(scan.findings)
    findings = [f.to_json() for f in scan.findings]
    sessions = [session_record(s, None, codes, now) for s in scan.sessions]
    return ascii_json({
        "root": scan.root,
        "sessions": sessions,
        "findings": findings,
        "summary": dict(sorted(Counter(f["code"] for f in findings).items())),
        "totals": listing_totals(sessions),
    })
