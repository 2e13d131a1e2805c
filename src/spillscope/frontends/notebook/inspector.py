"""The notebook's entry object: :class:`Inspector` over a spill root (and its logs), and
``open()``, which makes one.

Separate because it is the one that runs the inspector core; the views only render results."""

from __future__ import annotations

import os
from typing import Any, AsyncIterator

from ..format import count
from ...util.fs import normalize_root
from ...util.text import visible
from ...inspect.verify.coverage import coverage, describe, not_checked_line, nothing_checked
from ...inspect.findings import Finding
from ...inspect.search.pattern import Pattern
from ...inspect.search.root import SearchHit, search_root
from ...inspect.verify.inspection import Inspection, inspect_root
from ...inspect.watch.root import awatch_root
from ...inspect.watch.events import ChangeEvent
from ...formats.transcript.reader import read_transcript
from ...spill.naming import session_dir_name
from .agent import AgentInspector
from .findings import Findings
from .reference import Reference
from .render import _badges, _wrap, esc
from .search import SearchResults
from .session import Session
from .stats import StatsView
from .transcript import TranscriptView

class Inspector:
    """A spill root (and optionally its logs), inspected once; call :meth:`refresh` to rescan."""

    def __init__(self, root: str | os.PathLike[str], logs: str | os.PathLike[str] | None = None, *,
                 rebase: str | None = None, retention_seconds: float | None = None) -> None:
        self.root = normalize_root(root)  # a directory or s3://bucket/prefix
        self.logs = None if logs is None else os.path.abspath(os.fspath(logs))
        self.rebase = rebase
        self.retention_seconds = retention_seconds
        self.inspection: Inspection = self._inspect()

    def _inspect(self) -> Inspection:
        return inspect_root(self.root, self.logs, rebase=self.rebase, retention_seconds=self.retention_seconds)

    def refresh(self) -> Inspector:
        self.inspection = self._inspect()
        return self

    @property
    def sessions(self) -> list[Session]:
        names = {s.name for s in self.inspection.scan.sessions}
        names |= {session_dir_name(l.entry.target_session) for l in self.inspection.references}
        return [Session(self.inspection, n) for n in sorted(names)]

    def session(self, key: str) -> Session:
        """By session id or dir name."""
        name = key if key.startswith("session-") else session_dir_name(key)
        return Session(self.inspection, name)

    @property
    def references(self) -> list[Reference]:
        return [Reference(l) for l in self.inspection.references]

    def reference(self, label_or_session: str) -> Reference:
        for r in self.references:
            if label_or_session in (r.link.entry.label, r.link.entry.session_id):
                return r
        known = ", ".join(repr(r.link.entry.label) for r in self.references) or "none"
        raise KeyError(f"no reference with label or session id {label_or_session!r} (labels: {known})")

    def findings(self) -> Findings:
        return Findings(self.inspection.findings).sorted()

    def expired(self) -> list[Reference]:
        return [r for r in self.references if r.status == "expired"]

    def transcript(self, path: str | os.PathLike[str]) -> TranscriptView:
        return TranscriptView(read_transcript(path))

    def search(self, pattern: str, *, regex: bool = False, ignore_case: bool = False,
               max_count: int | None = None) -> SearchResults:
        """Every hit of ``pattern`` in the exact text of the root's transcripts and tool
        outputs (what ``spillscope grep`` finds), with seen/omitted from the logs."""
        hits: list[SearchHit] = []
        bad: list[Finding] = []
        for ev in search_root(self.root, Pattern(pattern, regex, ignore_case), logs=self.logs, rebase=self.rebase,
                              max_count=max_count):
            (bad if isinstance(ev, Finding) else hits).append(ev)  # type: ignore[arg-type]
        return SearchResults(pattern, hits, bad)

    def verify(self) -> Findings:
        """Rescan and return the findings (worst first), saying so when no notice was checked."""
        ins = self.refresh().inspection
        reason = nothing_checked(ins)
        note = None if reason is None else not_checked_line(reason, len(ins.scan.artifacts()))
        return Findings(ins.findings, note).sorted()

    def stats(self, table: str = "sessions", *, top: int = 10) -> StatsView:
        """Where the root's bytes are (what ``spillscope stats`` reports): the ``table``
        (sessions unless asked) with ``to_records``/``to_pandas``/``to_arrow``, and charts.
        The sweep is forecast at this inspector's ``retention_seconds`` (default 30 days)."""
        from ...inspect.stats.dsh import DEFAULT_RETENTION_SECONDS, dsh_stats

        retention = self.retention_seconds if self.retention_seconds is not None else DEFAULT_RETENTION_SECONDS
        return StatsView(dsh_stats(self.root, self.logs, top=top, retention_seconds=retention, rebase=self.rebase), table)

    def to_records(self) -> list[dict[str, Any]]:
        return [r for s in self.sessions for r in s.to_records()]

    async def watch(self) -> AsyncIterator[ChangeEvent]:
        """Change events under the root, as they happen (``async for ev in insp.watch()``),
        and the watch's own (``live``, ``stale``, ``root-missing``…; their ``kind`` is None)."""
        async for batch in awatch_root(self.root):
            for ev in batch:
                yield ev

    def __repr__(self) -> str:
        ins = self.inspection
        lines = [f"Spill root {self.root}: {count(len(ins.scan.sessions), 'session dir')}, {count(len(ins.scan.artifacts()), 'artifact')}, "
                 f"{count(len(ins.references), 'reference')}"]
        for s in self.sessions:
            lines.append("  " + repr(s))
        lines.append("  findings: " + (", ".join(f"{k} {v}" for k, v in ins.summary().items()) or "none"))
        lines += ["  " + visible(line) for line in describe(coverage(ins))]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for s in self.sessions:
            rows.append(f"<tr><td><code>{esc(s.session_id or '')}</code></td><td>{esc(s.dir)}</td><td>{len(s.artifacts)}</td>"
                        f"<td>{len(s.references)}</td><td>{_badges(s.findings().items)}</td></tr>")
        summary = ", ".join(f"{esc(k)} {v}" for k, v in self.inspection.summary().items()) or "no findings"
        cov = coverage(self.inspection)
        bad = cov.unchecked or cov.nothing_checked is not None  # checking nothing is not a pass
        summary += "".join(f"<div{' class=bad' if bad else ''}>{esc(line)}</div>" for line in describe(cov))
        return _wrap(f"<b>Spill root</b> <code>{esc(self.root)}</code><br>{summary}"
                     f"<table><tr><th>session</th><th>dir</th><th>artifacts</th><th>references</th><th>findings</th></tr>"
                     f"{''.join(rows)}</table>")


def open(root: str | os.PathLike[str], logs: str | os.PathLike[str] | None = None,  # noqa: A001
         **kwargs: Any) -> Inspector | AgentInspector:
    """Inspect ``root`` (with ``logs`` to link notices to artifacts) for a notebook. Another
    agent's tree (detected, or ``agent="claude"``…) gives an :class:`AgentInspector`."""
    agent = kwargs.pop("agent", None)
    if agent is not None or (logs is None and not os.fspath(root).startswith("s3://") and os.path.isdir(root)):
        from ...dialects import DialectError, detect

        try:
            name = agent or detect(os.fspath(root)).name
        except DialectError:
            name = "dsh"  # the dsh inspector says what is wrong with the root
        if name != "dsh":
            return AgentInspector(root, name)
    return Inspector(root, logs, **kwargs)
