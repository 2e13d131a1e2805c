"""OpenCode's tree: the global ``tool-output/`` dir, ``opencode.db`` or the older JSON storage, and the sweep.

Spills: ``<Global.Path.data>/tool-output/tool_<id>`` (``~/.local/share/opencode``; truncate.ts
``TRUNCATION_DIR``, ``ToolID.ascending()``) — one dir for every project and session, so the
part that names a file is the only link. Parts: SQLite ``opencode.db`` table ``part`` (``id,
message_id, session_id, time_created, time_updated, data`` JSON without the ids:
``packages/opencode/src/session/session.sql.ts`` @063e8306d9895af9bdd175306cfa4fa3291fd83a),
read through a read-only URI (``?mode=ro``: OpenCode may be writing it, in WAL mode);
before v1.2.0 ``storage/part/<messageID>/<partID>.json``. A tool part's ``state.output`` holds
the notice and ``state.metadata.outputPath`` the file.

Sweep (truncate.ts @0a3427d9 ``cleanup``): every hour, first a minute after start, files of
``tool-output`` whose name starts with ``tool_`` and whose mtime is older than 7 days are
removed (``mtime >= cutoff`` is kept), whatever still names them.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from typing import Collection, Iterator

from ...inspect.findings import Finding, finding
from ...util.text import loads_exact
from ..records import Options, Report, RetentionRule, StoredRecord, Transcript, applied_rule
from ..engine import UNUSABLE, Layout, Notice, read_json, link_and_check, lstat_dir, resolve_under, transcript
from .notice import parse
from .probe import DB, TOOL_OUTPUT, data_dir

RULE = RetentionRule(7 * 86400.0, "OpenCode's fixed 7 days (truncate.ts RETENTION, hourly)",
                     "tool-output/tool_* by mtime, every session's, live ones not spared")


def retention_rule(tree: str) -> RetentionRule:
    return RULE


def texts(tree: str) -> Iterator[tuple[str, str]]:
    layout = scan(tree)
    yield from ((f.path, "spill") for f in layout.files if f.is_regular)
    # opencode.db is searched row by row (records below), the older storage's parts as files.
    yield from ((t.path, "transcript") for t in layout.transcripts)


def records(path: str, sessions: Collection[str] | None) -> Iterator[StoredRecord | Finding] | None:
    """The ``message`` and ``part`` rows of ``opencode.db`` (None for a JSON part: a file grep
    reads itself), each its ``data`` column as stored, named by table, id and rowid."""
    if os.path.basename(path) != DB:
        return None
    from .db import rows

    return rows(path, sessions)


def scan(tree: str) -> Layout:
    layout = Layout()
    base = data_dir(tree)
    if base is None:
        return layout
    lstat_dir(layout, os.path.join(base, TOOL_OUTPUT), None, "OpenCode writes files only")
    db = os.path.join(base, DB)
    t = transcript(db, None)
    if t is not None:
        layout.transcripts.append(t)
    parts = os.path.join(base, "storage", "part")
    for root, dirs, files in os.walk(parts):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".json"):
                t = transcript(os.path.join(root, name), None)
                if t is not None:
                    layout.transcripts.append(t)
    return layout


class _Part:
    __slots__ = ("transcript", "line", "session", "data")

    def __init__(self, transcript: Transcript, line: int, session: str | None, data: object) -> None:
        self.transcript, self.line, self.session, self.data = transcript, line, session, data


def _parts(layout: Layout, findings: list[Finding]) -> Iterator[_Part]:
    for t in layout.transcripts:
        if t.path.endswith(".db"):
            yield from _db_parts(t, findings)
            continue
        data = read_json(t, findings)
        if data is UNUSABLE:
            continue
        session = data.get("sessionID") if isinstance(data, dict) else None
        yield _Part(t, 1, session if isinstance(session, str) else None, data)


def _db_parts(t: Transcript, findings: list[Finding]) -> Iterator[_Part]:
    """Every tool part of ``opencode.db``, read-only, creating no file (``line`` is the part's rowid)."""
    from .db import connect, not_opened

    try:
        con = connect(t.path, findings)
    except (OSError, sqlite3.Error) as exc:
        findings.append(not_opened(t.path, exc))
        return
    try:
        rows = con.execute("SELECT rowid, session_id, data FROM part WHERE data LIKE '%outputPath%' "
                           "OR data LIKE '%truncated...%' ORDER BY rowid")
        for rowid, raw_session, raw in rows:
            session = raw_session.decode("utf-8", "replace") if isinstance(raw_session, bytes) else None
            try:
                data = loads_exact(raw if isinstance(raw, (str, bytes)) else b"")
            except ValueError as exc:
                findings.append(finding("malformed-log", path=t.path, line=rowid, session=session,
                                        detail=f"part data is not JSON: {exc}"))
                continue
            yield _Part(t, rowid, session, data)
    except sqlite3.Error as exc:
        findings.append(finding("unreadable", path=t.path, detail=f"cannot read the part table: {exc}"))
    finally:
        con.close()


def _texts_and_notices(layout: Layout, findings: list[Finding]) -> Iterator[tuple[_Part, Notice]]:
    for part in _parts(layout, findings):
        data = part.data
        state = data.get("state") if isinstance(data, dict) else None
        if not isinstance(state, dict):
            continue
        meta = state.get("metadata")
        output_path = meta.get("outputPath") if isinstance(meta, dict) else None
        output = state.get("output")
        notice = parse(output if isinstance(output, str) else "",
                       output_path if isinstance(output_path, str) else None)
        if notice is not None:
            yield part, notice


def inspect_tree(tree: str, options: Options) -> Report:
    from ..engine import Text

    report = Report("opencode", tree, [], [], [], [], applied_rule(RULE, options))
    base = data_dir(tree)
    if base is None:
        return report
    layout = scan(tree)
    pending: list[Finding] = []
    found: dict[str, Notice] = {}

    def texts() -> Iterator[Text]:
        for part, notice in _texts_and_notices(layout, pending):
            # The engine parses texts; hand it each notice under a key it maps back.
            key = f"\x00opencode:{len(found)}"
            found[key] = notice
            yield Text(part.transcript, part.line, part.session, key)

    link_and_check(report, layout, texts(), found.get,
                   functools.partial(resolve_under, anchor=TOOL_OUTPUT, base=os.path.join(base, TOOL_OUTPUT)), options)
    report.findings.extend(pending)
    seconds = report.retention.seconds if report.retention is not None else RULE.seconds
    for f in report.files:
        if f.name.startswith("tool_") and f.mtime < options.now - seconds:
            report.past_retention.append(f.path)
            if options.retention_seconds is not None:
                report.findings.append(finding("past-retention", path=f.path,
                                               detail="OpenCode's hourly cleanup at that age deletes it"))
    return report
