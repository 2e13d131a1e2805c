"""The notebook view of one session dir: its artifacts and the references into it.

Separate because it is the inspector's unit of browsing, with its own table and findings. A
session is a view of one :class:`Inspection` (the pass it was made from: its artifacts,
references and findings agree); the :class:`Inspector` that makes sessions imports this
module, never the other way round."""

from __future__ import annotations

from typing import Any

from ..format import count, human_age, human_size
from ...util.text import visible
from ...inspect.scan.tree import Artifact
from ...inspect.verify.inspection import Inspection
from ...spill.naming import session_dir_name
from .findings import Findings
from .reference import Reference
from .render import _badges, _wrap, esc

class Session:
    """A session dir (and what the logs say was referenced into it)."""

    def __init__(self, inspection: Inspection, dir_name: str) -> None:
        self.inspection = ins = inspection
        self.dir = dir_name
        self.session_id = ins.session_ids.get(dir_name)
        scanned = next((s for s in ins.scan.sessions if s.name == dir_name), None)
        self.artifacts: list[Artifact] = scanned.artifacts if scanned else []
        self.references = [Reference(l) for l in ins.references if session_dir_name(l.entry.target_session) == dir_name]

    def findings(self) -> Findings:
        paths = {a.path for a in self.artifacts}
        refs = {id(f) for r in self.references for f in r.link.findings}
        return Findings([f for f in self.inspection.findings if f.path in paths or id(f) in refs])

    def to_records(self) -> list[dict[str, Any]]:
        return [{"dir": self.dir, "sessionId": self.session_id, "name": a.name, "kind": a.kind, "size": a.size,
                 "mtime": a.mtime, "mode": f"{a.mode:04o}"} for a in self.artifacts]

    def __repr__(self) -> str:
        return (f"Session {self.dir} ({visible(self.session_id or 'id unknown', one_line=True)}): {count(len(self.artifacts), 'artifact')}, "
                f"{count(len(self.references), 'reference')}")

    def _repr_html_(self) -> str:
        import time

        now = time.time()
        rows = "".join(f"<tr><td>{esc(a.name)}</td><td>{esc(a.kind)}</td><td>{human_size(a.size)}</td>"
                       f"<td>{human_age(now - a.mtime)}</td><td>{_badges(self.inspection.findings_for(a.path))}</td></tr>"
                       for a in self.artifacts)
        refs = "".join(f"<li>{esc(r.link.entry.label)} → {esc(r.status)} {_badges(r.link.findings)}</li>" for r in self.references)
        return _wrap(f"<b>Session</b> <code>{esc(self.session_id or self.dir)}</code> ({esc(self.dir)})"
                     f"<table><tr><th>artifact</th><th>kind</th><th>size</th><th>age</th><th>findings</th></tr>{rows}</table>"
                     f"<div>references:<ul>{refs}</ul></div>")
