"""The notebook's search results: hits marked seen/omitted, records in the ``grep --json`` shape,
and the artifacts that could not be searched.

Separate because it is a result of :meth:`Inspector.search`, not a view of the root."""

from __future__ import annotations

from typing import Any, Iterator

from ..format import count
from ...util.text import visible
from ...inspect.findings import Finding
from ...inspect.search.root import SearchHit
from .findings import Findings
from .render import _wrap, esc

class SearchResults:
    """Hits of :meth:`Inspector.search`: a table (HTML with the hit marked, green when
    the model saw it, red when omitted), ``to_records()`` in the ``grep --json`` shape
    plus the context, and the artifacts that could not be searched (``findings``)."""

    def __init__(self, pattern: str, hits: list[SearchHit], findings: list[Finding]) -> None:
        self.pattern, self.hits, self.findings = pattern, hits, Findings(findings)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def to_records(self) -> list[dict[str, Any]]:
        return [{**h.to_json(), "role": h.role, "before": h.before, "match": h.match, "after": h.after} for h in self.hits]

    def __repr__(self) -> str:
        lines = [f"{count(len(self.hits), 'hit')} for {visible(self.pattern)!r}"]
        for h in self.hits:
            where = f"message {h.message}" if h.message is not None else "tool output"
            seen = {True: "seen", False: "omitted", None: "unlinked"}[h.seen]
            lines.append(f"  {visible(h.path)} {where} cp {h.start}-{h.end} {seen}: "
                         f"{visible(h.before)}[[{visible(h.match)}]]{visible(h.after)}")
        if len(self.findings):
            lines.append(f"  not searched: {count(len(self.findings), 'artifact')}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for h in self.hits:
            cls = {True: "seen", False: "omitted", None: "unlinked"}[h.seen]
            where = f"message {h.message} ({esc(h.role)})" if h.message is not None else "tool output"
            rows.append(f"<tr><td>{esc(h.path)}</td><td>{esc(h.session or h.session_dir)}</td><td>{where}</td>"
                        f"<td>{h.start}–{h.end}</td><td><span class='hit-{cls}'>{cls}</span></td>"
                        f"<td>{esc(h.before)}<mark class='hit-{cls}'>{esc(h.match)}</mark>{esc(h.after)}</td></tr>")
        style = ("<style>.spillscope .hit-seen{background:#2e7d32;color:#fff}.spillscope .hit-omitted{background:#c62828;"
                 "color:#fff}.spillscope .hit-unlinked{background:#f9a825;color:#000}</style>")
        bad = f"<div class='bad'>not searched: {count(len(self.findings), 'artifact')}</div>" if len(self.findings) else ""
        return _wrap(f"{style}<b>{count(len(self.hits), 'hit')}</b> for <code>{esc(self.pattern)}</code>{bad}"
                     "<table><tr><th>artifact</th><th>session</th><th>where</th><th>code points</th><th>model</th>"
                     f"<th>context</th></tr>{''.join(rows)}</table>")
