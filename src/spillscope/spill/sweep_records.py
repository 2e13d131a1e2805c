"""The sweep's records: the roots it is given, what it removed, kept and skipped, its report,
and the warning sink every step reports through.

Separate so the trust checks, the walk and the callers (prune, the backend) share one
vocabulary without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

WarnFn = Callable[[str], None]
#: ``keep(path) -> reason or None``: an expired file with a reason is kept (``prune --logs``).
KeepFn = Callable[[str], "str | None"]
Identity = tuple[int, int]


@dataclass(frozen=True)
class ResolvedRoot:
    """A spill root resolved for a sweep: its real path and the identity it must keep."""

    path: str
    identity: Identity


@dataclass(frozen=True)
class SweepRoot:
    """One root to sweep; ``prune_when_empty`` only for discovered prior default roots."""

    path: str
    prune_when_empty: bool


@dataclass(frozen=True)
class Removal:
    """A file, session dir or root the sweep removed (or, in a dry run, would remove)."""

    path: str
    kind: Literal["file", "session-dir", "root"]
    bytes: int = 0
    mtime_ns: int | None = None


@dataclass(frozen=True)
class Kept:
    """An expired file kept because ``keep`` gave a reason."""

    path: str
    bytes: int
    mtime_ns: int
    reason: str


@dataclass(frozen=True)
class Skipped:
    """An entry the sweep left alone without looking inside or at its age."""

    path: str
    reason: str


@dataclass
class SweepReport:
    """What an expiry sweep removed, kept and skipped, and what failed."""

    cutoff_ms: int
    dry_run: bool
    removed: list[Removal] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: Failures (unreadable, undeletable): each was also passed to ``warn``.
    errors: list[str] = field(default_factory=list)

    @property
    def bytes_freed(self) -> int:
        return sum(r.bytes for r in self.removed)

    def files(self) -> list[Removal]:
        return [r for r in self.removed if r.kind == "file"]


def safe_warn(warn: WarnFn, message: str) -> None:
    try:
        warn(message)
    except Exception:
        pass  # a warning sink is an observer: its failure must not stop the sweep
