"""``spillscope stats``: where a root's bytes are, what its notices omitted, what the sweep takes next.

Three renderings of one :class:`~spillscope.inspect.stats.Stats`: human tables (sizes by
humanize), ``--json`` (every table, docs/cli.md) and ``--csv`` (one table per invocation,
chosen by ``--table``; ``sessions`` by default), so a spreadsheet or ``pandas.read_csv``
gets one rectangle with a header row.
"""

from __future__ import annotations

import argparse
import csv
import time
from typing import Sequence, TextIO

import humanize

from ...inspect.stats.model import Stats, Table
from ...inspect.stats.tables import TABLES
from ...inspect.verify.coverage import not_checked_line
from ..format import UNKNOWN_BYTES, count, human_age, omitted_text
from .args import UsageError, check_logs, open_root
from .output import cell, write_json
from .progress import Progress

#: ``--csv`` without ``--table``: one row per session, the table most views start from.
DEFAULT_CSV_TABLE = "sessions"
#: The human view lists at most this many days (the newest); ``--json`` and ``--csv`` have all.
HUMAN_DAYS = 14


def size(n: int) -> str:
    """A byte count for people: ``49.7 KiB`` (binary units, as ``ls -h`` and ``du -h``)."""
    return str(humanize.naturalsize(n, binary=True))


def run_stats(args: argparse.Namespace) -> Stats:
    store = open_root(args.root, "stats", timeout=args.timeout)
    check_logs(args.logs)
    from ...dialects import DialectError, Options, detect, get
    from ...inspect.stats.dsh import DEFAULT_RETENTION_SECONDS, dsh_stats

    try:
        dialect = get(args.agent) if args.agent else detect(args.root, hint_logs=args.logs is not None)
    except DialectError as exc:
        raise UsageError(str(exc)) from None
    if dialect.name == "dsh":  # the streaming walk: 100k sessions in bounded memory
        with Progress() as progress:
            retention = DEFAULT_RETENTION_SECONDS if args.retention is None else args.retention
            return dsh_stats(store, args.logs, top=args.top, retention_seconds=retention,
                             rebase=args.rebase, progress=progress)
    from ...dialects.stats import report_stats

    now = time.time()
    # Content compared, as verify does: a finding count lower than verify's would be untrue.
    # The agent's own rule forecasts the sweep unless --retention overrides it.
    report = dialect.inspect(args.root, Options(now=now, retention_seconds=args.retention, check_content=True))
    return report_stats(report, top=args.top, now=now, content_checked=True)


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    if args.json and args.csv:
        raise UsageError("--json and --csv: choose one")
    stats = run_stats(args)
    if args.csv:
        write_csv(stats.table(args.table or DEFAULT_CSV_TABLE), out)
    elif args.json:
        write_json(out, stats.table(args.table).to_records() if args.table else stats.to_json())
    else:
        write_human(stats, out, args.table)
    return 0


def write_csv(table: Table, out: TextIO) -> None:
    """One table as RFC 4180 CSV: a header row, then a row per record (``None`` empty).

    Values are exact (the csv module quotes commas, quotes and line breaks), except on a
    terminal, where text is made inert as every human output is: an escape sequence in a
    session id or a project path must not drive the terminal that shows it."""
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(table.columns)
    inert = _isatty(out)
    w.writerows(["" if v is None else cell(v) if inert and isinstance(v, str) else v for v in row] for row in table.rows)


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False


def _grid(out: TextIO, head: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> None:
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) if rows else len(head[i]) for i in range(len(head))]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if i in right else v.ljust(w) for i, (v, w) in enumerate(zip(values, widths))]
        return "  " + "  ".join(parts).rstrip() + "\n"

    if not rows:
        out.write("  (none)\n")
        return
    out.write(line(head))
    out.writelines(line(r) for r in rows)


def _totals_rows(table: Table) -> list[list[str]]:
    rows = []
    for key, files, nbytes, notices, obytes, omessages, unknown, findings in table.rows:
        omitted = omitted_text(size, obytes, unknown)
        rows.append([cell(key), f"{files:,}", size(nbytes), f"{notices:,}", omitted, f"{omessages:,}", f"{findings:,}"])
    return rows


_TOTALS_HEAD = ["files", "size", "notices", "omitted", "msgs omitted", "findings"]


def write_human(stats: Stats, out: TextIO, only: str | None = None) -> None:
    t = stats.totals
    shown = [only] if only else list(TABLES)
    if not only:
        out.write(f"{cell(stats.root)}: {stats.sessions_phrase()}, {t.files:,} files, {size(t.bytes)}; "
                  f"{t.notices:,} notices omitted {omitted_text(size, t.omitted_bytes, t.omitted_unknown, UNKNOWN_BYTES)} "
                  f"and {t.omitted_messages:,} messages; {count(t.findings, 'finding')}\n")
        out.write(f"findings from {cell(stats.findings_scope)}\n")
        if stats.nothing_checked is not None:
            out.write(cell(not_checked_line(stats.nothing_checked, t.files)) + "\n")
    for name in shown:
        if name in ("totals", "sessions", "ages") and not only:
            continue  # the header says the totals; every session (--table sessions) and ages (by day, counted back) are asked for
        table = stats.table(name)
        out.write(f"\n{_TITLES[name]}\n")
        if name in ("totals", "agents", "projects", "kinds", "tools"):
            _grid(out, [table.columns[0], *_TOTALS_HEAD], _totals_rows(table), {1, 2, 3, 4, 5, 6})
        elif name == "days":
            days = table.rows[-HUMAN_DAYS:] if not only else table.rows
            if len(days) < len(table.rows):
                out.write(f"  (the newest {len(days)} of {len(table.rows)} days; --table days lists all)\n")
            peak = max((d[2] for d in days), default=0)
            _grid(out, ["day (UTC)", "files", "size", ""],
                  [[d[0], f"{d[1]:,}", size(d[2]), "█" * (round(20 * d[2] / peak) if peak else 0)] for d in days], {1, 2})
        elif name == "ages":
            _grid(out, ["age (days)", "files", "size"], [[str(a), f"{n:,}", size(b)] for a, n, b in table.rows], {0, 1, 2})
        elif name == "findings":
            _grid(out, ["code", "severity", "count"], [[c, s, f"{n:,}"] for c, s, n in table.rows], {2})
        elif name in ("sessions", "top-sessions"):
            # A session only a log names has no dir: said, so its 0 bytes do not read as an empty dir.
            rows = [[cell(r[0]) + ("" if r[13] else " (no dir)"), cell(r[1] if r[1] is not None else "-"),
                     f"{r[4]:,}", size(r[5]), f"{r[6]:,}", omitted_text(size, r[7], r[9]), f"{r[10]:,}",
                     human_age(stats.now - r[12]) if r[12] is not None else "-"] for r in table.rows]
            _grid(out, ["dir", "session", "files", "size", "notices", "omitted", "findings", "newest"], rows,
                  {2, 3, 4, 5, 6, 7})
        elif name == "top-files":
            rows = [[size(f.size), human_age(stats.now - f.mtime), cell(f.kind), cell(f.path)] for f in stats.top_files]
            _grid(out, ["size", "age", "kind", "path"], rows, {0, 1})
        elif name == "sweep":
            _write_sweep(stats, out)


def _write_sweep(stats: Stats, out: TextIO) -> None:
    sw = stats.sweep
    days = sw.retention_seconds / 86400
    out.write(f"  rule: {cell(sw.rule)}, retention {days:g}d; cutoff "
              f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(sw.cutoff_ms / 1000))} UTC\n")
    if not sw.applies:
        out.write(f"  nothing forecast: {cell(sw.why)}\n")
        return
    named = sw.still_named
    out.write(f"  next sweep deletes {sw.files:,} files, frees {size(sw.bytes)}"
              + (f"; {len(named):,} of them still named by a log" if stats.logs is not None else "") + "\n")
    for c in named[:10]:
        out.write(f"    still named: {cell(c.path)}  by {cell(c.named_at)}\n")
    if len(named) > 10:
        out.write(f"    … {len(named) - 10:,} more (--table sweep lists every candidate)\n")


_TITLES: dict[str, str] = {
    "totals": "Totals", "agents": "By agent", "projects": "By project", "kinds": "By kind", "tools": "By tool",
    "days": "Spill volume by day", "ages": "Spill volume by age", "findings": "Findings", "sessions": "Sessions",
    "top-sessions": "Largest sessions", "top-files": "Largest files", "sweep": "What the sweep deletes next",
}

