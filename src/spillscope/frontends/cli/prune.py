"""``spillscope prune ROOT``: the backend's expiry sweep (spill/sweep.py) for operators.

A dry run unless ``--apply``. It applies exactly the start-up sweep's rule to ROOT alone
(mtime strictly older than ``--older-than``, only in trusted ``session-<12 hex>`` dirs,
symlinks never followed, emptied session dirs removed, ROOT itself never removed), with
one exception the backend does not make: with ``--logs DIR``, every artifact that a
session log written within ``--keep-active`` still names is kept, and so is its session
dir. A log names an artifact when one of its notices (as the inspector links them) has
that locator, or when its bytes mention ``session-<12 hex>/<file name>`` anywhere (any
separator and escaping, any root prefix: a moved, symlinked or Windows root), so a fork's
notice the parser does not know still protects its file. An active log that cannot be
read to its end keeps its session's whole dir; if even its session is unknown, prune
refuses.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator, TextIO

from ...storage.local import directory_problem, file_type, missing_directory, open_regular
from ..format import count, human_age, human_size
from ...util.text import visible
from ...inspect.findings import Finding
from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from ...formats.sessionlog import find_logs_checked
from ...spill.naming import decode_segment, session_dir_name
from ...spill.expiry_rule import cutoff_ms
from ...spill.sweep import sweep_spill_roots
from ...spill.sweep_records import SweepReport, SweepRoot
from ...spill.sweep_walk import SESSION_DIR_RE
from ...spill.trust import resolve_root

#: ``session-<12 hex>`` then separators (``/``, ``\`` however many escaping layers) then a
#: backend file name ``<12 hex>-<encoded name>``.
_MENTION = re.compile(rb"session-([0-9a-f]{12})[/\\]+([0-9a-f]{12}-[A-Za-z0-9._~-]+)")
_CHUNK = 1 << 20
_OVERLAP = 4096  # longer than any mention (a file name is at most 255 bytes)


class PruneError(Exception):
    """ROOT is refused, or an option is unusable: nothing was deleted."""


@dataclass
class ActiveLogs:
    """What the session logs written within ``--keep-active`` still name."""

    logs: list[str] = field(default_factory=list)
    #: (session dir, file name) → where it is named (``log:line`` or ``log``).
    named: dict[tuple[str, str], str] = field(default_factory=dict)
    #: session dir → why all of it is kept (its active log could not be read to the end).
    whole_dirs: dict[str, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)

    def keep(self, path: str) -> str | None:
        session, name = os.path.basename(os.path.dirname(path)), os.path.basename(path)
        if session in self.whole_dirs:
            return self.whole_dirs[session]
        return self.named.get((session, name))


@dataclass
class PruneResult:
    """What ``spillscope prune`` did, or would do, to a dsh root: the sweep's report and its settings."""

    root: str
    applied: bool
    older_than: float
    now_ns: int
    report: SweepReport
    logs: str | None
    keep_active: float | None
    active: ActiveLogs | None


def check_spill_root(root: str) -> str:
    """ROOT's canonical path, or :class:`PruneError` saying why it is not a spill root to prune.

    A spill root is a real directory (not a symlink), owned by the user running prune and
    not writable by group or others (nor replaceable through an ancestor: the sweep's own
    trust rule), that is empty or holds at least one ``session-<12 hex>`` directory."""
    path = os.path.abspath(root)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise PruneError(str(missing_directory(root))) from None
    except OSError as exc:
        raise PruneError(f"{root}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise PruneError(f"{root}: is a symlink, and prune never follows one (give the directory itself: "
                         f"{os.path.realpath(path)})")
    if not stat.S_ISDIR(st.st_mode):
        raise PruneError(f"{root}: not a directory (a {file_type(st.st_mode)})")
    why: list[str] = []
    resolved = resolve_root(path, False, why.append)
    if resolved is None:
        raise PruneError(f"{root}: not a spill root the sweep may touch: it must be owned by you and not writable "
                         f"by group or others, nor any ancestor unless sticky ({'; '.join(why) or 'unsafe'})")
    try:
        entries = list(os.scandir(resolved.path))
    except OSError as exc:
        raise PruneError(f"{root}: {exc.strerror or exc}") from None
    if entries and not any(SESSION_DIR_RE.match(e.name) and e.is_dir(follow_symlinks=False) for e in entries):
        hint = ""
        if SESSION_DIR_RE.match(os.path.basename(resolved.path)):
            hint = " (this is a session dir: give the spill root that holds it)"
        raise PruneError(f"{root}: not a spill root: it holds no session-<12 hex> directory{hint}")
    return resolved.path


def read_active_logs(logs: str, since_ns: int, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> ActiveLogs:
    """The artifacts named by logs whose mtime is at or after ``since_ns``."""
    from ...inspect.logs import read_session_log

    active = ActiveLogs()
    found, problems = find_logs_checked(logs)
    for problem in problems:
        if problem.unreadable:
            # A log below it could be active, and which session's it would be is unknown.
            raise PruneError(f"{problem.path}: {problem.reason}; an active log there could name any artifact, "
                             "so nothing is pruned (fix the permissions or leave out --logs)")
        try:
            is_link = stat.S_ISLNK(os.lstat(problem.path).st_mode)
        except OSError:
            continue
        active.ignored.append(f"{problem.path}: {'a symlink, not followed' if is_link else 'not a regular file'}")
    for log_path in found:
        path = os.fspath(log_path)
        try:
            st = os.lstat(path)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                active.ignored.append(f"{path}: {exc.strerror or exc}")
            continue
        if not stat.S_ISREG(st.st_mode):
            active.ignored.append(f"{path}: {'a symlink, not followed' if stat.S_ISLNK(st.st_mode) else 'not a regular file'}")
            continue
        if st.st_mtime_ns < since_ns:
            continue
        active.logs.append(path)
        log = read_session_log(path, max_line_bytes=max_line_bytes)
        for ref in log.references:
            _name(active, ref.locator, f"{path}:{ref.line}")
        for spill in log.tool_spills:
            _name(active, spill.locator, f"{path}:{spill.line}")
        failure = _scan_mentions(path, active) or _cut_short(path, log.findings)
        if failure is None:
            continue
        session = log.session_id if log.session_id is not None else decode_segment(os.path.basename(os.path.dirname(path)))
        if session is None:
            raise PruneError(f"{path}: a session log written within --keep-active could not be read to its end "
                             f"({failure}) and its session is unknown, so any artifact may be live; nothing was deleted")
        active.whole_dirs.setdefault(session_dir_name(session), f"{path} (active, unreadable: {failure})")
    return active


def _name(active: ActiveLogs, locator: str | None, where: str) -> None:
    if locator is None:
        return
    parts = re.split(r"[/\\]+", locator)
    if len(parts) >= 2 and SESSION_DIR_RE.match(parts[-2]):
        active.named.setdefault((parts[-2], parts[-1]), where)


def _cut_short(path: str, findings: list[Finding]) -> str | None:
    """Why a log's text may end before what was written: a compressed log whose last line
    is torn may hold more in a frame not yet complete (a plain one's bytes were all read)."""
    for f in findings:
        if f.code == "unreadable" or (f.code == "malformed-log" and (
                f.detail.startswith("cannot decompress") or (path.endswith(".zstd") and f.detail.startswith("torn last line")))):
            return f.detail
    return None


def _scan_mentions(path: str, active: ActiveLogs) -> str | None:
    """Record every ``session-<hex>/<file>`` the log's bytes mention; why it failed, or None."""
    try:
        tail = b""
        for chunk in _log_bytes(path):
            buf = tail + chunk
            for m in _MENTION.finditer(buf):
                session = "session-" + m.group(1).decode("ascii")
                name = m.group(2).decode("ascii")
                # A notice's locator is followed by ". Use read…": the dot is not the name's
                # (unless it is), so every trailing-dot form is recorded.
                while True:
                    active.named.setdefault((session, name), path)
                    if not name.endswith("."):
                        break
                    name = name[:-1]
            tail = buf[-_OVERLAP:]
    except Exception as exc:  # OSError, zstd errors, an incomplete frame
        return str(exc) or type(exc).__name__
    return None


def _log_bytes(path: str) -> Iterator[bytes]:
    """The log's text in chunks, never following a symlink. A compressed log whose last
    frame is incomplete (still being written, or cut) raises after yielding what decodes."""
    with os.fdopen(open_regular(path), "rb") as raw:
        if not path.endswith(".zstd"):
            while chunk := raw.read(_CHUNK):
                yield chunk
            return
        import zstandard

        codec = zstandard.ZstdDecompressor()
        frame = codec.decompressobj()
        pending = False
        while data := raw.read(_CHUNK):
            while data:
                pending = True
                out = frame.decompress(data)
                if out:
                    yield out
                data = b""
                if frame.eof:
                    pending = False
                    data, frame = frame.unused_data, codec.decompressobj()
        if pending:
            raise OSError(errno.EIO, "the last zstd frame is incomplete")


def prune(root: str, *, older_than: float, apply: bool = False, logs: str | None = None,
          keep_active: float | None = None, now_ns: int | None = None,
          max_log_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> PruneResult:
    """Check ROOT, read the active logs, then sweep ROOT (a dry run unless ``apply``)."""
    if not older_than > 0:
        raise PruneError("--older-than must be more than 0 (the backend's 0 means: never expire)")
    if keep_active is not None and logs is None:
        raise PruneError("--keep-active needs --logs DIR")
    canonical = check_spill_root(root)
    now_ns = time.time_ns() if now_ns is None else now_ns
    active = None
    if logs is not None:
        problem = directory_problem(logs)
        if problem is not None:
            raise PruneError(str(problem))
        keep_active = 86400.0 if keep_active is None else keep_active
        active = read_active_logs(logs, now_ns - round(keep_active * 1e9), max_line_bytes=max_log_line_bytes)
    cutoff = cutoff_ms(round(older_than * 1000), now_ns // 1_000_000)
    report = sweep_spill_roots([SweepRoot(canonical, False)], cutoff, lambda message: None, dry_run=not apply,
                               keep=None if active is None else active.keep)
    return PruneResult(canonical, apply, older_than, now_ns, report, None if logs is None else os.path.abspath(logs),
                       keep_active, active)


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms since the epoch"  # --older-than beyond the calendar: nothing is that old


def prune_json(result: PruneResult) -> dict[str, Any]:
    report, now = result.report, result.now_ns

    def age(mtime_ns: int | None) -> float | None:
        return None if mtime_ns is None else (now - mtime_ns) / 1e9

    return {
        "root": result.root,
        "applied": result.applied,
        "olderThanSeconds": result.older_than,
        "cutoffMs": report.cutoff_ms,
        "cutoff": _iso(report.cutoff_ms),
        "logs": result.logs,
        "keepActiveSeconds": result.keep_active,
        "activeLogs": [] if result.active is None else result.active.logs,
        "ignoredLogs": [] if result.active is None else result.active.ignored,
        "files": [{"path": r.path, "bytes": r.bytes, "mtime": None if r.mtime_ns is None else r.mtime_ns / 1e9,
                   "ageSeconds": age(r.mtime_ns)} for r in report.files()],
        "dirs": [{"path": r.path, "kind": r.kind} for r in report.removed if r.kind != "file"],
        "kept": [{"path": k.path, "bytes": k.bytes, "mtime": k.mtime_ns / 1e9, "ageSeconds": age(k.mtime_ns),
                  "namedBy": k.reason} for k in report.kept],
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
        "errors": report.errors,
        "fileCount": len(report.files()),
        "bytesFreed": report.bytes_freed,
        "ok": not report.errors,
    }


def write_human(result: PruneResult, out: TextIO) -> None:
    report, root = result.report, result.root
    verb = ("deleted", "removed", "freed") if result.applied else ("would delete", "would remove", "would be freed")

    def rel(path: str) -> str:
        return visible(os.path.relpath(path, root), one_line=True)

    head = "deleting" if result.applied else "dry run, nothing deleted (--apply deletes)"
    out.write(f"prune {visible(root, one_line=True)}: {head}\n")
    out.write(f"  files older than {human_age(result.older_than)}: mtime before {_iso(report.cutoff_ms)}\n")
    if result.active is not None:
        out.write(f"  keeping what {count(len(result.active.logs), 'session log')} written within "
                  f"{human_age(result.keep_active or 0)} name ({visible(result.logs or '', one_line=True)})\n")
        for ignored in result.active.ignored:
            out.write(f"  ignored log {visible(ignored, one_line=True)}\n")
    lines = []
    for r in report.files():
        lines.append(f"{verb[0]:<13} {human_size(r.bytes):>10} {human_age((result.now_ns - (r.mtime_ns or 0)) / 1e9):>5}  {rel(r.path)}\n")
    for r in report.removed:
        if r.kind != "file":
            lines.append(f"{verb[1]:<13} {'':>10} {'':>5}  {rel(r.path)}/  (empty {r.kind.replace('-', ' ')})\n")
    for k in report.kept:
        lines.append(f"{'kept':<13} {human_size(k.bytes):>10} {human_age((result.now_ns - k.mtime_ns) / 1e9):>5}  "
                     f"{rel(k.path)}  (named by {visible(k.reason, one_line=True)})\n")
    for s in report.skipped:
        lines.append(f"{'skipped':<13} {'':>10} {'':>5}  {rel(s.path)}  ({s.reason})\n")
    for e in report.errors:
        lines.append(f"{'error':<13} {visible(e, one_line=True)}\n")
    if lines:
        out.write("\n" + "".join(lines))
    kept = f"; {count(len(report.kept), 'expired file')} kept (named by an active session log)" if report.kept else ""
    size = human_size(report.bytes_freed)
    exact = f" ({report.bytes_freed} bytes)" if report.bytes_freed >= 1024 else ""
    out.write(f"\n{count(len(report.files()), 'file')}, {size}{exact} {verb[2]}{kept}\n")
