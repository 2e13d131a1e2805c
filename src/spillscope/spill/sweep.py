"""The local backend's expiry sweep (FORMAT.md §2), shared by every place that applies it.

One rule, used by :class:`~spillscope.spill.local.LocalSpillStore`'s start-up sweep, by
``spillscope prune`` and by the inspector's ``past-retention`` forecast. It mirrors the
reference's ``cleanup.ts`` (``sweepSpillRoots``/``gatherSweepRoots``):

- a regular file expires when its mtime, as Node's ``Stats.mtimeMs``, is *strictly*
  less than the cutoff ``Date.now() - period`` (integer milliseconds): a file exactly at
  the boundary is kept;
- only entries directly inside ``session-<12 lowercase hex>`` directories of a root are
  considered; symlinks, nested directories and special files are never followed nor
  deleted (and keep their session dir from being pruned);
- a root, and each session dir, must be a real directory owned by the sweeping user and
  not writable by group or others (a root's ancestors too, unless sticky and the child
  is the user's); anything else is skipped with a warning;
- a session dir emptied by the sweep is removed; a root is removed only when it is a
  discovered prior default root (``dsh-spill-`` + 6 ``[A-Za-z0-9]``, directly in the
  temp dir) and nothing is left in it; the active root is never removed;
- every failure is contained: it becomes a warning and the sweep goes on.

Beyond the reference's path-based walk, every step here is relative to a directory
descriptor opened with ``O_NOFOLLOW`` and checked to be the very directory that was
vetted, so a directory swapped for a symlink mid-sweep is never entered. A file written
during the sweep survives: the backend never reuses a name (exclusive create, 48 random
bits), so a new file is either absent from the listing or fails the re-check of identity
and age made just before its ``unlink``, and a session dir or root that gained an entry is
not removable (``rmdir`` fails with ``ENOTEMPTY``, which is not an error).

This module keeps the entry points (discovering and gathering roots, sweeping them) and
re-exports the rest: the rule in :mod:`.expiry_rule`, the trust checks in :mod:`.trust`,
the fd-relative walk in :mod:`.sweep_walk` and the records in :mod:`.sweep_records`.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

from .expiry_rule import (DEFAULT_CLEANUP_PERIOD_DAYS, MS_PER_DAY, cutoff_ms, is_expired, node_mtime_ms, now_ms,
                          validate_period_days)
from .sweep_records import (Identity, KeepFn, Kept, Removal, ResolvedRoot, Skipped, SweepReport, SweepRoot, WarnFn,
                            safe_warn)
from .sweep_walk import SESSION_DIR_RE, sweep_root
from .trust import has_protected_ancestors, is_trusted_dir, resolve_root

__all__ = [
    "DEFAULT_CLEANUP_PERIOD_DAYS", "DEFAULT_ROOT_PREFIX", "DEFAULT_ROOT_RE", "MS_PER_DAY", "SESSION_DIR_RE",
    "Identity", "KeepFn", "Kept", "Removal", "ResolvedRoot", "Skipped", "SweepReport", "SweepRoot", "WarnFn",
    "cutoff_ms", "discover_default_roots", "gather_sweep_roots", "has_protected_ancestors", "is_expired",
    "is_trusted_dir", "node_mtime_ms", "now_ms", "resolve_root", "sweep_spill_roots", "validate_period_days",
]

DEFAULT_ROOT_PREFIX = "dsh-spill-"
#: Node's ``mkdtemp`` shape: exactly six ``[A-Za-z0-9]`` after the prefix.
DEFAULT_ROOT_RE = re.compile(r"^dsh-spill-[A-Za-z0-9]{6}\Z")


def discover_default_roots(base: str, warn: WarnFn, uid: int | None = None) -> list[ResolvedRoot]:
    """Trusted prior default roots (``dsh-spill-XXXXXX``, real directories) directly in ``base``."""
    try:
        names = sorted(os.listdir(base))
    except OSError as exc:
        safe_warn(warn, f"spill-local: failed to scan {base} for default roots: {exc}")
        return []
    found = []
    for name in names:
        if DEFAULT_ROOT_RE.match(name):
            resolved = resolve_root(os.path.join(base, name), False, warn, uid)
            if resolved is not None:
                found.append(resolved)
    return found


def gather_sweep_roots(active_roots: Sequence[str], warn: WarnFn, base: str, uid: int | None = None,
                       discovered: list[ResolvedRoot] | None = None) -> list[SweepRoot]:
    """Discovered default roots (prunable when emptied) plus the active roots, whose identity
    overrides a discovered alias as never prunable. ``discovered`` may be passed when the
    caller had to discover before deciding which roots are active."""
    if discovered is None:
        discovered = discover_default_roots(base, warn, uid)
    roots: dict[Identity, SweepRoot] = {r.identity: SweepRoot(r.path, True) for r in discovered}
    for path in active_roots:
        active = resolve_root(path, True, warn, uid)
        if active is not None:
            roots[active.identity] = SweepRoot(active.path, False)
    return list(roots.values())


def sweep_spill_roots(roots: list[SweepRoot], cutoff: int, warn: WarnFn, *, uid: int | None = None,
                      dry_run: bool = False, keep: KeepFn | None = None) -> SweepReport:
    """Delete expired files in every root's session dirs and prune what they leave empty.

    Never raises for a filesystem failure (each is warned and recorded in ``errors``).
    ``dry_run`` changes nothing and reports what would go; ``keep`` (prune's live-session
    exception) can spare an expired file, which then also keeps its session dir."""
    uid = os.geteuid() if uid is None else uid
    report = SweepReport(cutoff, dry_run)
    merged: dict[Identity, SweepRoot] = {}
    for candidate in roots:
        resolved = resolve_root(candidate.path, False, warn, uid)
        if resolved is None:
            continue
        existing = merged.get(resolved.identity)
        prune = (existing.prune_when_empty if existing else True) and candidate.prune_when_empty
        merged[resolved.identity] = SweepRoot(resolved.path, prune)
    for identity, root in merged.items():
        sweep_root(root, identity, uid, report, warn, keep)
    return report
