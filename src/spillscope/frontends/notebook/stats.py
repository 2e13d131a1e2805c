"""``insp.stats()``: an operator's view of the root as tables a data frame library takes, and charts.

:class:`StatsView` is one table of a :class:`~spillscope.inspect.stats.Stats` (``sessions``
unless another is asked for) with ``to_records()``, ``to_pandas()`` and ``to_arrow()``;
pandas and pyarrow are imported only there, and a clear error says which to install when
one is missing (neither is a dependency of spillscope). Its HTML repr draws the charts as
inline SVG made here -- spill volume by day, the largest sessions, findings by code -- every
label escaped, so untrusted names stay text.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

import humanize

from ...inspect.stats.model import Stats
from ...inspect.stats.tables import TABLES
from ...inspect.verify.coverage import not_checked_line
from ..format import UNKNOWN_BYTES, omitted_text
from .render import _wrap, esc

#: Bars drawn per chart at most (the largest, or the newest days).
CHART_BARS = 30


def _size(n: int) -> str:
    return str(humanize.naturalsize(n, binary=True))


class StatsView:
    """One table of a root's stats; :meth:`table` gives another, :attr:`stats` holds them all."""

    def __init__(self, stats: Stats, table: str = "sessions") -> None:
        if table not in TABLES:
            raise KeyError(f"no stats table {table!r} (one of: {', '.join(TABLES)})")
        self.stats = stats
        self.name = table
        self._table = stats.table(table)

    @property
    def columns(self) -> tuple[str, ...]:
        return self._table.columns

    def table(self, name: str) -> StatsView:
        """Another table of the same stats: one of :data:`~spillscope.inspect.stats.TABLES`."""
        return StatsView(self.stats, name)

    def to_records(self) -> list[dict[str, Any]]:
        return self._table.to_records()

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of this table (pandas is imported here, not before)."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError("StatsView.to_pandas() needs pandas, which spillscope does not install: "
                              "pip install pandas") from exc
        return pandas.DataFrame.from_records(list(self._table.rows), columns=list(self._table.columns))

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table`` of this table (pyarrow is imported here, not before)."""
        try:
            import pyarrow
        except ImportError as exc:
            raise ImportError("StatsView.to_arrow() needs pyarrow, which spillscope does not install: "
                              "pip install pyarrow") from exc
        columns = list(zip(*self._table.rows)) if self._table.rows else [() for _ in self._table.columns]
        return pyarrow.table({name: list(values) for name, values in zip(self._table.columns, columns)})

    def __len__(self) -> int:
        return len(self._table.rows)

    def __repr__(self) -> str:
        t = self.stats.totals
        return (f"Stats of {self.stats.root}: {len(self.stats.sessions)} sessions, {t.files} files, {_size(t.bytes)}; "
                f"table {self.name!r}: {len(self)} rows x {len(self.columns)} columns")

    def _repr_html_(self) -> str:
        s, t = self.stats, self.stats.totals
        # What the finding count covers (or why nothing was checked), as the CLI and TUI say it.
        scope = (not_checked_line(s.nothing_checked, t.files) if s.nothing_checked is not None
                 else f"findings from {s.findings_scope}")
        head = (f"<b>Stats</b> <code>{esc(s.root)}</code><br>{esc(s.sessions_phrase())}, {t.files:,} files, "
                f"{esc(_size(t.bytes))}; {t.notices:,} notices omitted "
                f"{esc(omitted_text(_size, t.omitted_bytes, t.omitted_unknown, UNKNOWN_BYTES))}"
                f" and {t.omitted_messages:,} messages; {t.findings:,} findings ({esc(scope)}). "
                f"Next sweep: {s.sweep.files:,} files, {esc(_size(s.sweep.bytes))}"
                + ("" if s.sweep.applies else f" ({esc(s.sweep.why)})") + "<br>")
        days = s.days[-CHART_BARS:]
        charts = "".join([
            bar_chart("Spill volume by day (UTC)", [d.day for d in days], [d.bytes for d in days], _size),
            bar_chart("Largest sessions", [x.session_id or x.dir for x in s.top_sessions],
                      [x.totals.bytes for x in s.top_sessions], _size, horizontal=True),
            bar_chart("Findings by code", [f.code for f in s.findings[:CHART_BARS]],
                      [f.count for f in s.findings[:CHART_BARS]], str, horizontal=True),
        ])
        rows = self._table.rows[:50]
        cells = "".join("<tr>" + "".join(f"<td>{esc('' if v is None else v)}</td>" for v in row) + "</tr>" for row in rows)
        more = f"<div>… {len(self) - len(rows):,} more rows (to_pandas() has them all)</div>" if len(self) > len(rows) else ""
        return _wrap(f"{head}<div class=\"side\">{charts}</div><div><b>{esc(self.name)}</b></div><table><tr>"
                     + "".join(f"<th>{esc(c)}</th>" for c in self.columns) + f"</tr>{cells}</table>{more}")


def bar_chart(title: str, labels: Sequence[str], values: Sequence[int], fmt: Any, *, horizontal: bool = False) -> str:
    """One bar chart as an inline ``<svg>``: every label and value is escaped text."""
    n = len(values)
    peak = max(values, default=0) or 1
    attr = html.escape
    if horizontal:
        width, row = 360, 16
        height = 24 + row * max(n, 1)
        parts = [f'<text x="0" y="14" font-weight="bold">{attr(title)}</text>']
        for i, (label, v) in enumerate(zip(labels, values)):
            y = 22 + i * row
            w = round(180 * v / peak)
            short = label if len(label) <= 22 else label[:10] + "…" + label[-10:]
            parts.append(f'<text x="0" y="{y + 11}">{esc(short)}</text>'
                         f'<rect x="150" y="{y + 2}" width="{w}" height="{row - 4}" fill="#4a7fb0"><title>{esc(label)}: '
                         f'{esc(fmt(v))}</title></rect><text x="{154 + w}" y="{y + 11}">{esc(fmt(v))}</text>')
    else:
        width, height = 360, 160
        bar = 300 / max(n, 1)
        parts = [f'<text x="0" y="14" font-weight="bold">{attr(title)}</text>']
        for i, (label, v) in enumerate(zip(labels, values)):
            h = round(110 * v / peak)
            x = 40 + i * bar
            parts.append(f'<rect x="{x:.1f}" y="{130 - h}" width="{max(bar - 2, 1):.1f}" height="{h}" fill="#4a7fb0">'
                         f'<title>{esc(label)}: {esc(fmt(v))}</title></rect>')
        if n:
            parts.append(f'<text x="40" y="146">{esc(labels[0])}</text>')
            if n > 1:
                parts.append(f'<text x="340" y="146" text-anchor="end">{esc(labels[-1])}</text>')
            parts.append(f'<text x="0" y="30">{esc(fmt(peak))}</text>')
    if not n:
        parts.append('<text x="0" y="40">(none)</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
            f'font-size="11" role="img" aria-label="{attr(title)}">' + "".join(parts) + "</svg>")
