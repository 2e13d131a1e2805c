"""The ``ls`` listing: sessions and artifacts with kind, size, age and finding codes.

:func:`listing` builds it from a full :class:`Inspection` (with logs). Without logs, a
listing needs nothing but names and ``lstat``, so :func:`listing_json` builds it in worker
processes, one group of session dirs each, each returning its part already encoded as
JSON text: on a wide root the per-entry Python work is what costs, and it splits
cleanly by session dir. The two paths share :func:`session_record` and give the same JSON.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections import Counter
from typing import Any, Iterable

import orjson

from .findings import Finding, by_location
from .scan import SessionDir, SessionSpec, root_plan, scan_session_dir
from .verify import Inspection

#: Below this many session dirs the listing runs in-process (forking costs more).
PARALLEL_MIN_DIRS = 64
_NONE: list[str] = []


def codes_by_path(findings: Iterable[Finding]) -> dict[str, list[str]]:
    return {k: sorted({f.code for f in v}) for k, v in by_location(findings).items()}


_MODES = [f"{m:04o}" for m in range(0o10000)]  # "0600" for 0o600: a lookup, not a format, per artifact


def session_record(s: SessionDir, session_id: str | None, codes: dict[str, list[str]], now: float) -> dict[str, Any]:
    get = codes.get
    return {
        "dir": s.name,
        "path": s.path,
        "sessionId": session_id,
        "mode": _MODES[s.mode],
        "artifactCount": len(s.artifacts),
        "findings": get(s.path, _NONE),
        "artifacts": [{
            "name": a.name,
            "path": a.path,
            "kind": a.kind,
            "suggestedName": a.suggested_name,
            "size": a.size,
            "mtime": a.mtime,
            "ageSeconds": round(now - a.mtime, 3),
            "mode": _MODES[a.mode],
            "symlink": a.is_symlink,
            "findings": get(a.path, _NONE),
        } for a in s.artifacts],
    }


def listing(ins: Inspection, now: float) -> dict[str, Any]:
    codes = codes_by_path(ins.findings)
    return {
        "root": ins.root,
        "sessions": [session_record(s, ins.session_ids.get(s.name), codes, now) for s in ins.scan.sessions],
        "findings": [f.to_json() for f in ins.findings],
        "summary": ins.summary(),
    }


def ascii_json(value: Any) -> str:
    """ASCII-only JSON: orjson when its output is already ASCII, else the escaping stdlib."""
    try:
        raw = orjson.dumps(value)
        if raw.isascii():
            return raw.decode("ascii")
    except TypeError:  # a lone surrogate: orjson refuses it, the stdlib escapes it
        pass
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _scan_group(args: tuple[list[SessionSpec], float]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Worker: scan some session dirs; each as (JSON text of its record, its findings)."""
    specs, now = args
    out = []
    for spec in specs:
        session, found = scan_session_dir(*spec)
        out.append((ascii_json(session_record(session, None, codes_by_path(found), now)), [f.to_json() for f in found]))
    return out


def listing_json(root: str, now: float, *, workers: int | None = None) -> str:
    """The no-logs listing as ASCII JSON text, scanned by ``workers`` processes."""
    root = os.path.abspath(root)
    done, plan = root_plan(root)
    if done is not None:
        early = [f.to_json() for f in done.findings]
        return ascii_json({"root": root, "sessions": [], "findings": early,
                           "summary": dict(sorted(Counter(f["code"] for f in early).items()))})
    specs = [item for item in plan if not isinstance(item, Finding)]
    workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    if workers > 1 and len(specs) >= PARALLEL_MIN_DIRS:
        size = -(-len(specs) // (workers * 4))  # a few groups per worker evens out uneven dirs
        groups = [specs[i : i + size] for i in range(0, len(specs), size)]
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = [r for part in pool.map(_scan_group, [(g, now) for g in groups]) for r in part]
    else:
        results = _scan_group((specs, now))
    sessions: list[str] = []
    findings: list[dict[str, Any]] = []
    parts = iter(results)
    for item in plan:  # keep the order a single scan reports findings in
        if isinstance(item, Finding):
            findings.append(item.to_json())
        else:
            text, found = next(parts)
            sessions.append(text)
            findings += found
    summary = dict(sorted(Counter(f["code"] for f in findings).items()))
    return ('{"root":' + ascii_json(root) + ',"sessions":[' + ",".join(sessions) + '],"findings":'
            + ascii_json(findings) + ',"summary":' + ascii_json(summary) + "}")
