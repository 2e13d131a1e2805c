"""The records of an operator's view of a root: totals by dimension, volume by day, the
largest sessions and files, and what the sweep will take next.

Every record is frozen; :class:`Stats` holds them and gives each as a named
:class:`Table` (columns and rows of plain values), the one shape the CLI's CSV and tables,
the notebook's ``to_records``/``to_pandas``/``to_arrow`` and the TUI's charts all read. The
JSON shape (:meth:`Stats.to_json`) is part of the CLI's interface (docs/cli.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .tables import TABLES

#: The counters of a :class:`Totals`, in column order (their JSON names).
TOTAL_COLUMNS = ("files", "bytes", "notices", "omittedBytes", "omittedMessages", "omittedUnknown", "findings")


@dataclass(frozen=True, slots=True)
class Totals:
    """What one slice of a root holds.

    ``notices`` counts the notices its session logs carry (reference notices and tool-spill
    notices), ``omittedBytes``/``omittedMessages`` what those notices say the model never
    saw, and ``omittedUnknown`` the notices that give no byte count ("More bytes were
    omitted.", or none): where it is not 0, ``omittedBytes`` is a lower bound."""

    files: int = 0
    bytes: int = 0
    notices: int = 0
    omitted_bytes: int = 0
    omitted_messages: int = 0
    omitted_unknown: int = 0
    findings: int = 0

    def values(self) -> tuple[int, ...]:
        return (self.files, self.bytes, self.notices, self.omitted_bytes, self.omitted_messages,
                self.omitted_unknown, self.findings)

    def to_json(self) -> dict[str, int]:
        return dict(zip(TOTAL_COLUMNS, self.values()))

    @classmethod
    def of(cls, counts: list[int]) -> Totals:
        return cls(*counts[:7])


@dataclass(frozen=True, slots=True)
class Slice:
    """The totals of one value of a dimension (an agent, a project, a tool, a kind)."""

    key: str
    totals: Totals


@dataclass(frozen=True, slots=True)
class SessionTotals:
    """One session dir (or a session a log names whose dir is gone): its totals and ages."""

    dir: str
    session_id: str | None
    agent: str
    project: str | None
    totals: Totals
    #: mtimes (seconds) of its oldest and newest file; ``None`` when it holds none.
    oldest: float | None
    newest: float | None
    #: False for a session only a log names: it has no dir in the root (its bytes are 0
    #: because there is nothing, not because it is empty).
    on_disk: bool = True


@dataclass(frozen=True, slots=True)
class FileSize:
    """One file of the stats: where it is, what it is, its size and mtime."""

    path: str
    session_dir: str
    kind: str
    tool: str | None
    size: int
    mtime: float


@dataclass(frozen=True, slots=True)
class DayVolume:
    """Files written (by mtime) on one UTC day, and their bytes."""

    day: str
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class AgeVolume:
    """Files whose age at ``Stats.now`` is ``days`` whole days (to within half an hour), and their bytes."""

    days: int
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class FindingCount:
    """How many findings of one code (and its severity) the stats counted."""

    code: str
    severity: str
    count: int


@dataclass(frozen=True, slots=True)
class SweepCandidate:
    """A file the sweep will delete next; ``named_at`` is the notice (``log:line``) that
    still names it, if a log does."""

    path: str
    session_dir: str
    size: int
    mtime: float
    named_at: str | None


@dataclass(frozen=True, slots=True)
class SweepOutlook:
    """What the agent's own sweep deletes when it next runs, at ``retention_seconds``.

    ``applies`` is False (with ``why``) where that sweep would not look at the root at all
    -- then nothing is forecast, which is not the same as "nothing is old"."""

    rule: str
    retention_seconds: float
    cutoff_ms: int
    applies: bool
    why: str
    candidates: tuple[SweepCandidate, ...]

    @property
    def files(self) -> int:
        return len(self.candidates)

    @property
    def bytes(self) -> int:
        return sum(c.size for c in self.candidates)

    @property
    def still_named(self) -> tuple[SweepCandidate, ...]:
        return tuple(c for c in self.candidates if c.named_at is not None)

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "retentionSeconds": self.retention_seconds, "cutoffMs": self.cutoff_ms,
                "applies": self.applies, "why": self.why, "files": self.files, "bytes": self.bytes,
                "stillNamed": len(self.still_named),
                "candidates": [{"path": c.path, "sessionDir": c.session_dir, "size": c.size, "mtime": c.mtime,
                                "namedAt": c.named_at} for c in self.candidates]}


@dataclass(frozen=True)
class Table:
    """One table: column names and rows of plain values (str, int, float, bool, None)."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def to_records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


#: The columns of the ``sessions`` and ``top-sessions`` tables (and of ``Stats.session_rows``).
SESSION_COLUMNS = ("dir", "sessionId", "agent", "project", *TOTAL_COLUMNS, "oldestMtime", "newestMtime", "onDisk")


def _session(row: tuple[Any, ...]) -> SessionTotals:
    return SessionTotals(row[0], row[1], row[2], row[3], Totals(*row[4:11]), row[11], row[12], row[13])




@dataclass(frozen=True)
class Stats:
    """An operator's view of one root (see the module docstring)."""

    root: str
    #: Seconds since the epoch the ages, days and the sweep forecast are measured from.
    now: float
    logs: str | None
    top: int
    totals: Totals
    agents: tuple[Slice, ...]
    projects: tuple[Slice, ...]
    kinds: tuple[Slice, ...]
    tools: tuple[Slice, ...]
    days: tuple[DayVolume, ...]
    ages: tuple[AgeVolume, ...]
    findings: tuple[FindingCount, ...]
    #: One row per session, as the ``sessions`` table has it (``SESSION_COLUMNS``): plain
    #: tuples, because 100,000 sessions as records cost a quarter of a walk to build;
    #: :attr:`sessions` makes the records on first use.
    session_rows: tuple[tuple[Any, ...], ...]
    top_files: tuple[FileSize, ...]
    sweep: SweepOutlook
    #: What the finding counts cover, in words ("findings from ..."): a view that counts
    #: fewer findings than ``verify`` would must say which checks it ran.
    findings_scope: str = ""
    #: Why no notice was checked (a ``NOTHING_CHECKED`` code of inspect/verify/coverage.py),
    #: None when one was: "0 findings" then means nothing was looked at, not all is well.
    nothing_checked: str | None = None

    @functools.cached_property
    def sessions(self) -> tuple[SessionTotals, ...]:
        return tuple(_session(row) for row in self.session_rows)

    @property
    def sessions_on_disk(self) -> int:
        """Sessions with a dir in the root (the rest only a log names)."""
        return sum(1 for row in self.session_rows if row[13])

    def sessions_phrase(self) -> str:
        """``3 sessions`` or, where logs name sessions with no dir, ``3 sessions (+4 named by logs, no dir)``."""
        on_disk = self.sessions_on_disk
        gone = len(self.session_rows) - on_disk
        return f"{on_disk:,} sessions" + (f" (+{gone:,} named by logs, no dir)" if gone else "")

    @property
    def top_sessions(self) -> tuple[SessionTotals, ...]:
        ranked = sorted(self.session_rows, key=lambda r: (-r[5], r[0]))  # bytes, then dir
        return tuple(_session(row) for row in ranked[: self.top])

    def table(self, name: str) -> Table:
        if name == "totals":
            return Table(name, ("root", *TOTAL_COLUMNS), ((self.root, *self.totals.values()),))
        if name in ("agents", "projects", "kinds", "tools"):
            key = name[:-1]
            slices: tuple[Slice, ...] = getattr(self, name)
            return Table(name, (key, *TOTAL_COLUMNS), tuple((s.key, *s.totals.values()) for s in slices))
        if name == "days":
            return Table(name, ("day", "files", "bytes"), tuple((d.day, d.files, d.bytes) for d in self.days))
        if name == "ages":
            return Table(name, ("ageDays", "files", "bytes"), tuple((a.days, a.files, a.bytes) for a in self.ages))
        if name == "findings":
            return Table(name, ("code", "severity", "count"), tuple((f.code, f.severity, f.count) for f in self.findings))
        if name == "sessions":
            return Table(name, SESSION_COLUMNS, self.session_rows)
        if name == "top-sessions":
            return Table(name, SESSION_COLUMNS,
                         tuple((s.dir, s.session_id, s.agent, s.project, *s.totals.values(), s.oldest, s.newest, s.on_disk)
                               for s in self.top_sessions))
        if name == "top-files":
            return Table(name, ("path", "sessionDir", "kind", "tool", "size", "mtime"),
                         tuple((f.path, f.session_dir, f.kind, f.tool, f.size, f.mtime) for f in self.top_files))
        if name == "sweep":
            return Table(name, ("path", "sessionDir", "size", "mtime", "namedAt"),
                         tuple((c.path, c.session_dir, c.size, c.mtime, c.named_at) for c in self.sweep.candidates))
        raise KeyError(f"no stats table {name!r} (one of: {', '.join(TABLES)})")

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "now": self.now,
            "logs": self.logs,
            "totals": self.totals.to_json(),
            "findingsScope": self.findings_scope,
            "nothingChecked": self.nothing_checked,
            "agents": self.table("agents").to_records(),
            "projects": self.table("projects").to_records(),
            "kinds": self.table("kinds").to_records(),
            "tools": self.table("tools").to_records(),
            "days": self.table("days").to_records(),
            "ages": self.table("ages").to_records(),
            "findings": self.table("findings").to_records(),
            "sessions": self.table("sessions").to_records(),
            "topSessions": self.table("top-sessions").to_records(),
            "topFiles": self.table("top-files").to_records(),
            "sweep": self.sweep.to_json(),
        }
