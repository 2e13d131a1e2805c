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

from ...storage import Storage, open_storage
from ...spill.expiry_rule import cutoff_ms, is_expired, node_mtime_ms
from ...spill.trust import is_trusted_dir, resolve_root
from ..findings import Finding, finding
from ..scan.tree import Artifact, RootScan


class SweepForecast:
    """The sweep's rule for one root at one retention, asked session dir by session dir.

    The root's trust is decided once, here; a caller that walks the root itself (``stats``,
    which holds one session dir at a time) asks :meth:`trusts` per session dir and
    :meth:`expires` per artifact, and :func:`forecast_past_retention` does the same over a
    whole scan -- one copy of the rule's application, not two."""

    __slots__ = ("applies", "cutoff", "owner", "why")

    def __init__(self, root: Storage | str, retention_seconds: float, now: float) -> None:
        self.cutoff = cutoff_ms(round(retention_seconds * 1000), round(now * 1e6) // 1000)  # Date.now(): whole ms
        self.owner = -1
        self.applies, self.why = False, ""
        store = open_storage(root)
        if store.tree is None:
            self.why = f"an {store.scheme} root: the local backend's start-up sweep never runs there"
            return
        root = store.tree
        try:
            self.owner = os.lstat(root).st_uid
        except OSError as exc:
            self.why = f"the root cannot be looked at: {exc.strerror or exc}"
            return
        if resolve_root(root, True, lambda message: None, self.owner) is None:
            self.why = "the sweep would skip this root (not a directory its owner alone can write)"
            return
        self.applies = True

    def trusts(self, session_path: str) -> bool:
        """Would the sweep look inside this session dir?"""
        if not self.applies:
            return False
        try:
            return is_trusted_dir(os.lstat(session_path), self.owner)
        except OSError:
            return False

    def expires(self, art: Artifact) -> bool:
        """Would the sweep delete this artifact of a trusted session dir?"""
        return art.is_regular and _expired(art.path, art.mtime, self.cutoff)


def forecast_past_retention(scan: RootScan, retention_seconds: float, now: float,
                            session_ids: dict[str, str], named_by: dict[str, str] | None = None) -> list[Finding]:
    """A ``past-retention`` finding per artifact the sweep would delete at this retention."""
    forecast = SweepForecast(scan.root, retention_seconds, now)
    named_by = named_by or {}
    out = []
    for session in scan.sessions:
        if not forecast.trusts(session.path):
            continue
        for art in session.artifacts:
            if forecast.expires(art):
                out.append(past_retention(art, now, retention_seconds, session_ids.get(art.session_dir),
                                          named_by.get(art.path)))
    return out


def past_retention(art: Artifact, now: float, retention_seconds: float, session: str | None,
                   named_at: str | None) -> Finding:
    """The ``past-retention`` finding for ``art`` (``named_at``: the notice still naming it)."""
    detail = f"{_age(now - art.mtime)} old (retention {_age(retention_seconds)}): the backend's start-up sweep would delete it"
    if named_at is not None:
        detail += f"; still named by a notice at {named_at}"
    return finding("past-retention", path=art.path, session=session, detail=detail)


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
