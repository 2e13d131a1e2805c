"""The findings table of the notebook: sortable, filterable by code or severity, as records,
as text and as HTML.

Separate because sessions, searches and the inspector all hand back one."""

from __future__ import annotations

from typing import Any, Iterator

from ..format import count
from ...util.text import visible
from ...inspect.findings import CODES, SEVERITY_RANK, Finding
from .render import _wrap, esc

class Findings:
    """A findings table: sortable (``.sorted(key)``), as records, as HTML. ``not_checked``
    is the line saying the verification checked no notice (and why): shown above the
    table, so "0 findings" from checking nothing never reads as a pass."""

    def __init__(self, findings: list[Finding], not_checked: str | None = None) -> None:
        self.items = list(findings)
        self.not_checked = not_checked

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.items)

    def sorted(self, key: str = "severity") -> Findings:
        if key == "severity":
            return Findings(sorted(self.items, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)), self.not_checked)
        return Findings(sorted(self.items, key=lambda f: str(getattr(f, key) or "")), self.not_checked)

    def where(self, code: str) -> Findings:
        """The findings with this code (or of this severity: ``"error"``, ``"warning"``, ``"info"``).
        An unknown code raises ``ValueError``: a typo must not look like "none found"."""
        if code in SEVERITY_RANK:
            return Findings([f for f in self.items if f.severity == code], self.not_checked)
        if code not in CODES:
            raise ValueError(f"unknown finding code {code!r}; the codes are: {', '.join(CODES)} "
                             "(or a severity: error, warning, info)")
        return Findings([f for f in self.items if f.code == code], self.not_checked)

    def to_records(self) -> list[dict[str, Any]]:
        return [f.to_json() for f in self.items]

    def __repr__(self) -> str:
        lines = [count(len(self.items), 'finding')] + ([visible(self.not_checked)] if self.not_checked else [])
        lines += [f"  {f.severity:<7} {f.code:<20} {visible(f.where, one_line=True)}  {visible(f.detail, one_line=True)}" for f in self.items]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><span class='badge {f.severity}'>{esc(f.severity)}</span></td><td>{esc(f.code)}</td>"
            f"<td>{esc(f.where)}</td><td>{esc(f.session or '')}</td><td>{esc(f.detail)}</td></tr>"
            for f in self.items
        )
        # data-sort lets the table be sorted by clicking a header (see the script below).
        script = ("<script>document.querySelectorAll('table.sortable th').forEach((th,i)=>th.onclick=()=>{"
                  "const t=th.closest('table'),b=t.tBodies[0],r=[...b.rows];const d=th.dataset.d=th.dataset.d==='a'?'d':'a';"
                  "r.sort((x,y)=>(x.cells[i].innerText>y.cells[i].innerText?1:-1)*(d==='a'?1:-1));r.forEach(x=>b.appendChild(x));});</script>")
        note = f"<div class=bad>{esc(self.not_checked)}</div>" if self.not_checked else ""
        return _wrap(f"<b>{count(len(self.items), 'finding')}</b>{note}<table class='sortable'><thead><tr><th>severity</th><th>code</th>"
                     f"<th>where</th><th>session</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>{script}")
