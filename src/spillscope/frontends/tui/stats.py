"""The stats screen (``t``): where the root's bytes are, drawn in the terminal, kept up to date.

Three charts (textual-plotext; docs/tui-charts.md says why that widget): spill volume by
age in days, the largest sessions, findings by code; above them the totals and what the
store's sweep deletes next. The numbers come from :func:`spillscope.inspect.stats.dsh.dsh_stats`
in a thread worker; while the app watches the root, every change it applies (a live patch
or a pass) makes the screen ask again, at most once per :attr:`StatsScreen.interval`.
Labels are untrusted (session ids, finding codes are not, but ids are): each goes through
``visible()`` first, since plotext writes ANSI that is parsed back into styles.
"""

from __future__ import annotations

import math
from typing import Any

import humanize
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ...inspect.verify.coverage import not_checked_line
from ...inspect.stats.model import Stats
from ...util.text import visible
from ..format import UNKNOWN_BYTES, count, omitted_text
from .safe_text import safe

#: Bars per chart at most (the newest ages, the largest sessions, the commonest findings).
BARS = 12


def _size(n: int) -> str:
    return str(humanize.naturalsize(n, binary=True))


def _label(text: str, width: int = 18) -> str:
    """A chart label: inert (controls visible), one line, its middle cut when long."""
    text = visible(text, one_line=True)
    return text if len(text) <= width else text[: width // 2 - 1] + "…" + text[-(width - width // 2):]


class StatsScreen(Screen[None]):
    """Totals, the sweep forecast and three charts of one root (see the module docstring)."""

    BINDINGS = [Binding("escape,t", "app.pop_screen", "Back"), Binding("r", "recount", "Recount")]
    #: Seconds between looks at the app's change counters while it watches.
    interval = 1.0

    def __init__(self, root: str, logs: str | None, rebase: str | None) -> None:
        super().__init__()
        self.root = root
        self.logs = logs
        self.rebase = rebase
        self.stats: Stats | None = None
        #: How many times the numbers were counted (tests wait on it).
        self.counts = 0
        self.head = ""
        self._seen_changes: int | None = None

    def compose(self) -> ComposeResult:
        yield Static(safe("counting…"), id="stats-head")
        with Vertical(id="stats-charts"):
            yield PlotextPlot(id="chart-ages")
            with Horizontal(id="stats-lower"):
                yield PlotextPlot(id="chart-sessions")
                yield PlotextPlot(id="chart-findings")
        yield Footer()

    def on_mount(self) -> None:
        self._seen_changes = self._changes()
        self.recount()
        self.set_interval(self.interval, self._follow)

    def _changes(self) -> int:
        """What the app has applied so far (passes over the root and live patches)."""
        app: Any = self.app
        return int(getattr(app, "passes", 0)) + int(getattr(app, "patches", 0))

    def _follow(self) -> None:
        now = self._changes()
        if now != self._seen_changes:
            self._seen_changes = now
            self.recount()

    def action_recount(self) -> None:
        self.recount()

    @work(thread=True, exclusive=True, group="stats")
    def recount(self) -> None:
        from ...inspect.stats.dsh import dsh_stats

        stats = dsh_stats(self.root, self.logs, top=BARS, rebase=self.rebase)
        self.app.call_from_thread(self.show, stats)

    def show(self, stats: Stats) -> None:
        if not self.is_mounted:
            return  # closed while counting
        self.stats = stats
        self.counts += 1
        t, sw = stats.totals, stats.sweep
        omitted = omitted_text(_size, t.omitted_bytes, t.omitted_unknown, UNKNOWN_BYTES)
        head = [safe(f"{stats.root}", "bold"),
                safe(f"{stats.sessions_phrase()} · {t.files:,} files · {_size(t.bytes)} · "
                     f"{t.notices:,} notices omitted {omitted} and {t.omitted_messages:,} messages · "
                     f"{count(t.findings, 'finding')}")]
        # What that finding count covers: "0 findings" with nothing checked is not a pass.
        if stats.nothing_checked is not None:
            head.append(safe(not_checked_line(stats.nothing_checked, t.files), "bold yellow"))
        else:
            head.append(safe(f"findings from {stats.findings_scope}"))
        if sw.applies:
            named = f" · {len(sw.still_named):,} still named by a log" if stats.logs is not None else ""
            head.append(safe(f"next sweep ({sw.retention_seconds / 86400:g}d): {sw.files:,} files, "
                             f"{_size(sw.bytes)}{named}", "bold yellow" if sw.files else ""))
        else:
            head.append(safe(f"no sweep forecast: {sw.why}"))
        from rich.console import Group

        self.head = "\n".join(line.plain for line in head)  # what the header says, as plain text
        self.query_one("#stats-head", Static).update(Group(*head))
        ages = list(reversed(stats.ages[:BARS]))
        self._bars("#chart-ages", "by age in days", [f"{a.days}d" for a in ages], [a.bytes for a in ages], _unit)
        top = [s for s in reversed(stats.top_sessions) if s.totals.bytes]
        room = max(12, min(36, self.query_one("#chart-sessions").size.width // 3))  # the labels' share of the chart
        self._bars("#chart-sessions", "largest sessions", [_label(s.session_id or s.dir, room) for s in top],
                   [s.totals.bytes for s in top], _unit, horizontal=True)
        codes = list(reversed(stats.findings[:BARS]))
        self._bars("#chart-findings", "findings by code", [_label(f.code, 22) for f in codes],
                   [f.count for f in codes], _count, horizontal=True)

    def _bars(self, selector: str, title: str, labels: list[str], values: list[int], scale: Any,
              *, horizontal: bool = False) -> None:
        chart = self.query_one(selector, PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        if not values:
            plt.title(f"{title}: none")
            chart.refresh()
            return
        unit, divisor, ticks = scale(max(values))
        plt.title(f"{title} ({unit})" if unit else title)
        plt.bar(labels, [v / divisor for v in values], orientation="horizontal" if horizontal else "vertical", width=0.6)
        # The value axis in whole, readable steps (plotext's own are raw floats: "50873.0").
        (plt.xticks if horizontal else plt.yticks)(ticks, [f"{t:g}" for t in ticks])
        chart.refresh()


_UNITS = [("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("TiB", 1024**4)]


def _steps(peak: float) -> list[float]:
    """Four or five round ticks from 0 to past ``peak`` (1, 2 or 5 times a power of ten)."""
    if peak <= 0:
        return [0.0, 1.0]
    raw = peak / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(peak // step) + 2)]


def _unit(peak: int) -> tuple[str, float, list[float]]:
    """Bytes in the binary unit their largest value reads best in."""
    name, divisor = next(((n, d) for n, d in reversed(_UNITS) if peak >= d), _UNITS[0])
    return name, float(divisor), _steps(peak / divisor)


def _count(peak: int) -> tuple[str, float, list[float]]:
    ticks = [float(t) for t in _steps(peak) if t == int(t)] if peak > 4 else [float(t) for t in range(peak + 1)]
    return "", 1.0, ticks
