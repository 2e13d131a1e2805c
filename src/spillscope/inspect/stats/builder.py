"""Folding a root into a :class:`~.model.Stats` as it is walked: nothing is held per file.

A source (the dsh walk in :mod:`.dsh`; later any agent dialect) tells a :class:`StatsBuilder`
about each session, file, notice, finding and sweep candidate as it meets them, then drops
them. The builder keeps counters per session, kind, tool and day, the ``top`` largest files
in a heap, and the sweep's candidates -- memory grows with sessions and candidates, never
with files. Builders fed from disjoint parts of a root (worker processes) :meth:`merge`.
"""

from __future__ import annotations

import heapq
import time
from typing import Any

from ..findings import CODES
from .model import (AgeVolume, DayVolume, FileSize, FindingCount, Slice, Stats, SweepCandidate, SweepOutlook,
                    Totals)

_DAY = 86400
_HOUR = 3600
# Positions in a counter list: the seven totals, then (sessions only) oldest and newest mtime,
# and whether the session has a dir on disk (a session only a log names has none).
FILES, BYTES, NOTICES, OMITTED_BYTES, OMITTED_MESSAGES, OMITTED_UNKNOWN, FINDINGS, OLDEST, NEWEST, ON_DISK = range(10)


#: Positions in a (kind, tool) counter list.
C_FILES, C_BYTES, C_FINDINGS, C_NOTICES, C_OMITTED_BYTES, C_OMITTED_MESSAGES, C_OMITTED_UNKNOWN = range(7)


def new_class() -> list[int]:
    return [0, 0, 0, 0, 0, 0, 0]


def _counters() -> list[Any]:
    return [0, 0, 0, 0, 0, 0, 0, None, None, False]


class StatsBuilder:
    """The running counters of one walk (see the module docstring)."""

    def __init__(self, top: int, agent: str) -> None:
        self.top = top
        self.agent = agent
        #: session dir → counters; and → (session id, agent, project) where known.
        self.sessions: dict[str, list[Any]] = {}
        self.meta: dict[str, tuple[str | None, str, str | None]] = {}
        #: (kind, tool) → counters at the ``C_*`` positions: one dict step per file for both tables. A
        #: notice counts under the kind (and tool) of the artifact it names, so the kind and
        #: tool rows add up to the header's notices and omissions.
        self.classes: dict[tuple[str, str | None], list[int]] = {}
        #: hour number (UTC hours since the epoch) → [files, bytes]: fine enough for both
        #: calendar days and ages in whole days measured from ``now`` (known only at the end)
        self.hours: dict[int, list[int]] = {}
        self.codes: dict[str, int] = {}
        #: the largest files as a min-heap of (size, path, session dir, kind, tool, mtime)
        self.heap: list[tuple[int, str, str, str, str | None, float]] = []
        self.candidates: list[SweepCandidate] = []
        #: findings that belong to no session (the root's own entries, the logs dir)
        self.loose_findings = 0

    def session(self, dir_name: str, session_id: str | None = None, agent: str | None = None,
                project: str | None = None) -> list[Any]:
        """The counters of a session (made on first mention); what is known about it is kept."""
        counters = self.sessions.get(dir_name)
        if counters is None:
            counters = self.sessions[dir_name] = _counters()
        if session_id is not None or project is not None or agent is not None:  # else the default: not stored
            old = self.meta.get(dir_name, (None, self.agent, None))
            self.meta[dir_name] = (session_id or old[0], agent or old[1], project or old[2])
        return counters

    def add_file(self, session: list[Any], session_dir: str, path: str, kind: str, tool: str | None,
                 size: int, mtime: float) -> None:
        session[FILES] += 1
        session[BYTES] += size
        session[ON_DISK] = True
        if session[OLDEST] is None or mtime < session[OLDEST]:
            session[OLDEST] = mtime
        if session[NEWEST] is None or mtime > session[NEWEST]:
            session[NEWEST] = mtime
        c = self.classes.get((kind, tool))
        if c is None:
            c = self.classes[(kind, tool)] = new_class()
        c[0] += 1
        c[1] += size
        hour = self.hours.get(int(mtime // _HOUR))
        if hour is None:
            hour = self.hours[int(mtime // _HOUR)] = [0, 0]
        hour[0] += 1
        hour[1] += size
        heap = self.heap
        if len(heap) < self.top:
            heapq.heappush(heap, (size, path, session_dir, kind, tool, mtime))
        elif size > heap[0][0] or (size == heap[0][0] and path > heap[0][1]):
            heapq.heapreplace(heap, (size, path, session_dir, kind, tool, mtime))

    def add_notice(self, session: list[Any] | None, omitted_bytes: int | None, omitted_messages: int = 0,
                   kind: str | None = None, tool: str | None = None) -> None:
        """A notice a session's log carries: ``omitted_bytes`` ``None`` when it gives no count;
        ``kind``/``tool`` those of the artifact it names (its kind and tool rows)."""
        rows = []
        if session is not None:
            rows.append((session, NOTICES, OMITTED_BYTES, OMITTED_MESSAGES, OMITTED_UNKNOWN))
        if kind is not None:
            c = self.classes.get((kind, tool))
            if c is None:
                c = self.classes[(kind, tool)] = new_class()
            rows.append((c, C_NOTICES, C_OMITTED_BYTES, C_OMITTED_MESSAGES, C_OMITTED_UNKNOWN))
        for into, n, ob, om, ou in rows:
            into[n] += 1
            if omitted_bytes is None:
                into[ou] += 1
            else:
                into[ob] += omitted_bytes
            into[om] += omitted_messages

    def add_finding(self, code: str, session: list[Any] | None = None, kind: str | None = None,
                    tool: str | None = None) -> None:
        self.codes[code] = self.codes.get(code, 0) + 1
        if session is None:
            self.loose_findings += 1
        else:
            session[FINDINGS] += 1
        if kind is not None:
            c = self.classes.get((kind, tool))
            if c is None:
                c = self.classes[(kind, tool)] = new_class()
            c[C_FINDINGS] += 1

    def add_candidate(self, candidate: SweepCandidate) -> None:
        self.candidates.append(candidate)

    def merge(self, other: StatsBuilder) -> None:
        """Add ``other``'s counts (a walk of another part of the same root) into this one."""
        for name, counters in other.sessions.items():
            if name not in self.sessions and name not in other.meta:  # the common case: each part walked its own dirs
                self.sessions[name] = counters
                continue
            mine = self.session(name, *other.meta.get(name, (None, None, None)))
            _add(mine, counters)
            mine[ON_DISK] = mine[ON_DISK] or counters[ON_DISK]
            for pos, pick in ((OLDEST, min), (NEWEST, max)):
                if counters[pos] is not None:
                    mine[pos] = counters[pos] if mine[pos] is None else pick(mine[pos], counters[pos])
        for key, counts in other.classes.items():
            c = self.classes.setdefault(key, new_class())
            for i, n in enumerate(counts):
                c[i] += n
        for hour, (files, size) in other.hours.items():
            d = self.hours.setdefault(hour, [0, 0])
            d[0] += files
            d[1] += size
        for code, n in other.codes.items():
            self.codes[code] = self.codes.get(code, 0) + n
        self.heap = heapq.nlargest(self.top, self.heap + other.heap)
        heapq.heapify(self.heap)
        self.candidates += other.candidates
        self.loose_findings += other.loose_findings

    def build(self, root: str, now: float, logs: str | None, sweep: tuple[str, float, int, bool, str],
              findings_scope: str = "", nothing_checked: str | None = None) -> Stats:
        """The finished view; ``sweep`` is (rule, retention seconds, cutoff ms, applies, why);
        ``findings_scope`` and ``nothing_checked`` as :class:`~.model.Stats` has them."""
        default = (None, self.agent, None)
        meta = self.meta
        session_rows = tuple((name, *meta.get(name, default), *c) for name, c in sorted(self.sessions.items()))
        totals = _column_sums([*self.sessions.values(), _loose(self.loose_findings)])
        by_agent: dict[str, list[list[Any]]] = {}
        by_project: dict[str, list[list[Any]]] = {}
        for name, c in self.sessions.items():
            _, agent, project = self.meta.get(name, default)
            by_agent.setdefault(agent, []).append(c)
            by_project.setdefault(project if project is not None else "(unknown)", []).append(c)
        if self.loose_findings:
            by_agent.setdefault(self.agent, []).append(_loose(self.loose_findings))
        by_day: dict[int, list[int]] = {}
        by_age: dict[int, list[int]] = {}
        for hour, (files, size) in self.hours.items():
            # An hour's files are aged from its middle: within half an hour of each one's own age.
            for key, into in ((hour * _HOUR // _DAY, by_day), (max(0, int((now - hour * _HOUR - _HOUR / 2) // _DAY)), by_age)):
                d = into.setdefault(key, [0, 0])
                d[0] += files
                d[1] += size
        days = tuple(DayVolume(time.strftime("%Y-%m-%d", time.gmtime(day * _DAY)), files, size)
                     for day, (files, size) in sorted(by_day.items()))
        ages = tuple(AgeVolume(age, files, size) for age, (files, size) in sorted(by_age.items()))
        top_files = tuple(FileSize(path, sdir, kind, tool, size, mtime)
                          for size, path, sdir, kind, tool, mtime in sorted(self.heap, key=lambda h: (-h[0], h[1])))
        findings = tuple(FindingCount(code, CODES[code][0] if code in CODES else "info", n)
                         for code, n in sorted(self.codes.items(), key=lambda item: (-item[1], item[0])))
        kinds: dict[str, list[list[Any]]] = {}
        tools: dict[str, list[list[Any]]] = {}
        for (kind, tool), (files, size, found, notices, obytes, omessages, ounknown) in self.classes.items():
            row = [files, size, notices, obytes, omessages, ounknown, found]
            kinds.setdefault(kind, []).append(row)
            if tool is not None:
                tools.setdefault(tool, []).append(row)
        rule, retention, cutoff, applies, why = sweep
        outlook = SweepOutlook(rule, retention, cutoff, applies, why,
                               tuple(sorted(self.candidates, key=lambda c: (c.mtime, c.path))))
        return Stats(root, now, logs, self.top, totals, _slices(by_agent), _slices(by_project),
                     _slices(kinds), _slices(tools),
                     days, ages, findings, session_rows, top_files, outlook, findings_scope, nothing_checked)


def _add(into: list[Any], counters: list[Any]) -> None:
    for i in range(OLDEST):
        into[i] += counters[i]


def _loose(findings: int) -> list[Any]:
    return [0, 0, 0, 0, 0, 0, findings]


def _column_sums(rows: list[list[Any]]) -> Totals:
    """The totals of counter lists, summed column by column (C-level, for 100k sessions)."""
    return Totals(*(sum(column) for column in zip(*(r[:OLDEST] for r in rows))))


def _slices(groups: dict[str, list[list[Any]]]) -> tuple[Slice, ...]:
    """Largest first (by bytes), then by name: the order an operator reads them in."""
    out = [Slice(key, _column_sums(rows)) for key, rows in groups.items()]
    return tuple(sorted(out, key=lambda s: (-s.totals.bytes, s.key)))
