"""The notebook on another agent's tree: ``spillscope.open("~/.claude/projects")`` → :class:`AgentInspector`.

A :class:`spillscope.dialects.base.Report` as rich objects: the spill files with their verdicts
(``_repr_html_``, ``to_records()``), the findings (:class:`Findings`), and one file's notice beside
its start (:meth:`AgentInspector.spill`). Untrusted text is escaped with controls visible.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ...dialects import detect, get
from ...dialects.base import Dialect
from ...dialects.records import Link, Options, Report, SpillFile
from ...dialects.checks import read_spill
from ..format import count, human_size
from .findings import Findings
from .render import _badges, _wrap, esc

#: How much of a spill file a view shows beside its notice.
HEAD_BYTES = 4096


class AgentInspector:
    """One agent's tree, inspected: ``.files``, ``.links``, ``.findings``, ``.spill(name)``."""

    def __init__(self, tree: str | os.PathLike[str], agent: str | None = None) -> None:
        self.tree = os.fspath(tree)
        self.dialect: Dialect = get(agent) if agent is not None else detect(self.tree)
        self.report: Report = self.dialect.inspect(self.tree, Options(now=time.time()))
        self.findings = Findings(self.report.findings)

    @property
    def files(self) -> list[SpillFile]:
        return self.report.files

    @property
    def links(self) -> list[Link]:
        return self.report.links

    def spill(self, name: str | int) -> SpillView:
        """One spill file (by name, path or index) with its notice and its start."""
        files = self.report.files
        if isinstance(name, int):
            return SpillView(self, files[name])
        for f in files:
            if name in (f.name, f.path):
                return SpillView(self, f)
        raise KeyError(f"no spill file named {name!r} in {self.tree}")

    def to_records(self) -> list[dict[str, Any]]:
        links = self.report.status_of()
        out = []
        for f in self.report.files:
            link = links.get(f.path)
            out.append({"path": f.path, "name": f.name, "session": f.session, "size": f.size, "mtime": f.mtime,
                        "status": link.status if link else "orphan", "form": link.form if link else None,
                        "transcript": link.transcript if link else None, "line": link.line if link else None,
                        "checks": list(link.checks) if link else []})
        return out

    def __repr__(self) -> str:
        n = self.report.notices()
        return (f"{self.dialect.title}: {self.tree} — {count(len(self.report.files), 'spill file')}, "
                f"{n['checked']} of {n['found']} notices checked, {count(len(self.report.findings), 'finding')}")

    def _repr_html_(self) -> str:
        by_path: dict[str, list[Any]] = {}
        for f in self.report.findings:
            for where in {f.path, f.locator} - {None}:
                by_path.setdefault(str(where), []).append(f)
        rows = "".join(
            f"<tr><td>{esc(r['status'])}</td><td>{esc(r['name'])}</td><td>{esc(human_size(r['size']))}</td>"
            f"<td>{esc(r['form'] or '')}</td><td>{esc(os.path.basename(r['transcript'] or ''))}"
            f"{':' + str(r['line']) if r['line'] else ''}</td><td>{esc(', '.join(r['checks']))}</td>"
            f"<td>{_badges(by_path.get(r['path'], []))}</td></tr>"
            for r in self.to_records())
        return _wrap(f"<b>{esc(repr(self))}</b><table><tr><th>verdict</th><th>file</th><th>size</th><th>notice</th>"
                     f"<th>named at</th><th>checks</th><th>findings</th></tr>{rows}</table>")


class SpillView:
    """One spill file: its notice (as the model saw it) beside the file's own start."""

    def __init__(self, inspector: AgentInspector, spill: SpillFile) -> None:
        self.file = spill
        self.link = inspector.report.status_of().get(spill.path)
        self.findings = Findings([f for f in inspector.report.findings if spill.path in (f.path, f.locator)])

    @property
    def head(self) -> str:
        got = read_spill(self.file.path)
        return "" if got.data is None else got.data[:HEAD_BYTES].decode("utf-8", "replace")

    def __repr__(self) -> str:
        status = self.link.status if self.link else "orphan"
        return f"{self.file.name}: {status} ({human_size(self.file.size)})"

    def _repr_html_(self) -> str:
        link = self.link
        notice = ("<i>nothing names this file (orphan)</i>" if link is None else
                  f"<b>{esc(link.status)}</b> {esc(link.form)} — checks: {esc(', '.join(link.checks) or 'none')}<br>"
                  f"{esc(link.transcript)}:{link.line}<pre>{esc(link.notice) if link.notice else '(the transcript kept the full text)'}</pre>")
        return _wrap(f"<b>{esc(self.file.name)}</b> {_badges(list(self.findings))}<div class='side'>"
                     f"<div>{notice}</div><div><pre>{esc(self.head)}</pre></div></div>")
