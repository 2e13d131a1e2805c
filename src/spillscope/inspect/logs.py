"""Reading session logs for the inspector: which session each log is, and every notice in it.

Reference messages (``user/message`` with a ``session-reference`` source) become one
:class:`ReferenceEntry` per referenced session (preview, notice, stats); tool results
whose text ends with a spill notice become :class:`ToolSpillEntry`. A malformed line or
message is a located finding; the rest of the log is still read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..reference.message import ReferenceMessageError, is_reference_message, message_text, parse_reference_text
from ..formats.limits import DEFAULT_MAX_LOG_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ..formats.sessionlog import LogError, LogLineError, find_logs_checked, iter_log, parse_header
from ..spill.naming import session_hash
from ..formats.notices import ToolSpillNotice, parse_spill_notice
from .findings import Finding, finding
from .scan.tree import ProgressFn


@dataclass(frozen=True)
class ReferenceEntry:
    """A session reference found in a session log: which log line, the referenced session and its preview."""

    log: str
    line: int
    seq: int | None
    #: The session that received the reference (the log's own session).
    target_session: str
    #: Position in the message's ``references`` (0-based ``inputIndex``).
    index: int
    session_id: str
    label: str
    preview: Mapping[str, Any]
    stats: Mapping[str, Any] | None
    notice: Mapping[str, Any] | None

    @property
    def snapshot(self) -> Mapping[str, Any] | None:
        snap = self.notice.get("fullSnapshot") if self.notice else None
        return snap if isinstance(snap, Mapping) else None

    @property
    def locator(self) -> str | None:
        snap = self.snapshot
        loc = snap.get("locator") if snap and snap.get("status") == "saved" else None
        return loc if isinstance(loc, str) else None


@dataclass(frozen=True)
class ToolSpillEntry:
    """A tool-spill notice found in a session log: which log line, the tool call and the notice."""

    log: str
    line: int
    seq: int | None
    target_session: str
    call_id: str | None
    tool_name: str | None
    notice: ToolSpillNotice

    @property
    def locator(self) -> str:
        return self.notice.locator


@dataclass
class SessionLog:
    """One session log read for its notices: its session and the references and tool spills it holds."""

    path: str
    session_id: str | None
    cwd: str | None
    references: list[ReferenceEntry] = field(default_factory=list)
    tool_spills: list[ToolSpillEntry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def dir_hash(self) -> str | None:
        return None if self.session_id is None else session_hash(self.session_id)


def read_session_log(path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> SessionLog:
    name = os.fspath(path)
    log = SessionLog(name, None, None)
    tool_names: dict[str, str] = {}
    try:
        for item in iter_log(name, max_line_bytes=max_line_bytes):
            if isinstance(item, LogLineError):
                log.findings.append(finding("malformed-log", path=name, line=item.line, session=log.session_id, detail=item.reason))
                continue
            row = item.value
            if item.line == 1:
                header = parse_header(row)
                if header is None:
                    log.findings.append(finding("malformed-log", path=name, line=1, detail="line 1 is not a session header"))
                else:
                    log.session_id, log.cwd = header.session_id, header.cwd
                continue
            _read_row(log, row, item.line, tool_names)
    except LogError as exc:
        log.findings.append(finding("unreadable", path=name, detail=str(exc)))
    return log


def _read_row(log: SessionLog, row: dict[str, Any], line: int, tool_names: dict[str, str]) -> None:
    kind, data, seq = row.get("type"), row.get("data"), row.get("seq")
    seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else None
    if not isinstance(data, Mapping):
        return
    if kind == "tool/call" and isinstance(data.get("callId"), str) and isinstance(data.get("name"), str):
        tool_names[data["callId"]] = data["name"]
    elif kind == "user/message" and is_reference_message(data):
        _read_reference(log, data, line, seq)
    elif kind == "tool/result":
        message = data.get("message")
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
            return
        for block in message["content"]:
            if not isinstance(block, Mapping) or block.get("type") != "tool-result":
                continue
            inner = block.get("content")
            text = "".join(b.get("text", "") for b in inner if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)) if isinstance(inner, list) else ""
            notice = parse_spill_notice(text)
            if notice is None:
                continue
            call_id = block.get("toolCallId") if isinstance(block.get("toolCallId"), str) else None
            log.tool_spills.append(ToolSpillEntry(log.path, line, seq, log.session_id or "", call_id,
                                                  tool_names.get(call_id or ""), notice))


def _read_reference(log: SessionLog, data: Mapping[str, Any], line: int, seq: int | None) -> None:
    target = log.session_id or ""
    try:
        preview, notices = parse_reference_text(message_text(data))
    except ReferenceMessageError as exc:
        log.findings.append(finding("malformed-notice", path=log.path, line=line, session=log.session_id, detail=str(exc)))
        return
    refs = data["source"].get("references")
    refs = refs if isinstance(refs, list) else []
    by_session: dict[Any, Mapping[str, Any]] = {}
    for notice in notices:
        if not isinstance(notice, Mapping) or not isinstance(notice.get("sessionId"), str):
            log.findings.append(finding("malformed-notice", path=log.path, line=line, session=log.session_id,
                                        detail=f"notice is not an object with a sessionId: {str(notice)[:80]}"))
            continue
        by_session.setdefault(notice["sessionId"], notice)
    for i, entry in enumerate(preview):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("sessionId"), str):
            log.findings.append(finding("malformed-notice", path=log.path, line=line, session=log.session_id,
                                        detail=f"preview entry {i} is not an object with a sessionId"))
            continue
        stats = refs[i] if i < len(refs) and isinstance(refs[i], Mapping) else None
        label = entry["label"] if isinstance(entry.get("label"), str) else entry["sessionId"]
        log.references.append(ReferenceEntry(log.path, line, seq, target, i, entry["sessionId"], label, entry,
                                             stats, by_session.pop(entry["sessionId"], None)))
    for sid in by_session:
        log.findings.append(finding("malformed-notice", path=log.path, line=line, session=log.session_id,
                                    detail=f"notice for {sid!r} has no preview entry"))


def read_logs(logs_root: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
              progress: ProgressFn | None = None) -> list[SessionLog]:
    return list(iter_logs(logs_root, max_line_bytes=max_line_bytes, progress=progress))


def iter_logs(logs_root: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
              progress: ProgressFn | None = None) -> Iterator[SessionLog]:
    """:func:`read_logs` one log at a time, for a caller that folds each and lets it go."""
    paths, problems = find_logs_checked(logs_root)
    for problem in problems:
        # Not a log, but where one belongs: a finding, never a silent skip.
        code = "unreadable" if problem.unreadable else "malformed-log"
        yield SessionLog(problem.path, None, None, findings=[finding(code, path=problem.path, detail=problem.reason)])
    for done, path in enumerate(paths, start=1):
        yield read_session_log(path, max_line_bytes=max_line_bytes)
        if progress is not None:
            progress("logs", done, len(paths))


def logs_by_hash(logs: list[SessionLog]) -> dict[str, SessionLog]:
    return {log.dir_hash: log for log in logs if log.dir_hash is not None}


def relative(path: str, base: str | Path) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return path
