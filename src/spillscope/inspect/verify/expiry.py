"""The ``past-retention`` forecast: which artifacts the backend's start-up sweep would delete.

It applies :mod:`spillscope.spill.sweep`'s rule exactly (the one ``spillscope prune`` and
``LocalSpillStore`` apply), with ``--retention`` as the period: a regular file whose mtime,
as Node's ``mtimeMs``, is strictly older than ``now - retention`` (whole milliseconds),
inside a ``session-<12 hex>`` dir that the sweeping user owns and that is not writable by
group or others, in a root the sweep trusts. The sweeping user is taken to be the root's
owner (the harness that made the root), not whoever runs the inspector. An artifact the
sweep would skip (unsafe dir) is not forecast: it is not going to be deleted.

``prune --logs`` keeps artifacts a live session log still names; the backend's own sweep
does not, so the forecast does not either: it flags such an artifact, and says which
notice still names it (the case most worth knowing before a harness restarts).
"""

from __future__ import annotations

import os
from typing import Iterable

from ...spill.expiry_rule import cutoff_ms, is_expired, node_mtime_ms
from ...spill.trust import is_trusted_dir, resolve_root
from ..findings import Finding, finding
from ..scan.tree import RootScan


def forecast_past_retention(scan: RootScan, retention_seconds: float, now: float,
                            session_ids: dict[str, str], named_by: dict[str, str] | None = None) -> list[Finding]:
    """A ``past-retention`` finding per artifact the sweep would delete at this retention."""
    try:
        owner = os.lstat(scan.root).st_uid
    except OSError:
        return []
    if resolve_root(scan.root, True, lambda message: None, owner) is None:
        return []
    cutoff = cutoff_ms(round(retention_seconds * 1000), round(now * 1e6) // 1000)  # Date.now(): whole ms
    named_by = named_by or {}
    out = []
    for session in scan.sessions:
        try:
            if not is_trusted_dir(os.lstat(session.path), owner):
                continue
        except OSError:
            continue
        for art in session.artifacts:
            if not art.is_regular or not _expired(art.path, art.mtime, cutoff):
                continue
            age = now - art.mtime
            detail = f"{_age(age)} old (retention {_age(retention_seconds)}): the backend's start-up sweep would delete it"
            if art.path in named_by:
                detail += f"; still named by a notice at {named_by[art.path]}"
            out.append(finding("past-retention", path=art.path, session=session_ids.get(art.session_dir), detail=detail))
    return out


def _expired(path: str, mtime: float, cutoff: int) -> bool:
    # The scan's float mtime is within a microsecond of the truth: decide from it unless it
    # is that close to the cutoff, then look at the exact nanoseconds.
    if abs(mtime * 1000 - cutoff) > 0.01:
        return mtime * 1000 < cutoff
    try:
        return is_expired(os.lstat(path).st_mtime_ns, cutoff)
    except OSError:
        return node_mtime_ms(round(mtime * 1e9)) < cutoff


def named_artifacts(links: Iterable[tuple[str | None, str, int]]) -> dict[str, str]:
    """artifact path → ``log:line`` of the first notice naming it."""
    out: dict[str, str] = {}
    for path, log, line in links:
        if path is not None:
            out.setdefault(path, f"{log}:{line}")
    return out


def _age(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.1f}d" if days >= 1 else f"{seconds / 3600:.1f}h"
