"""Session logs (FORMAT.md §4): finding them, reading them line by line, folding the surface.

Logs are JSONL, plain or zstd-compressed (read streaming with ``zstandard``). Line 1 is
the header; every later line is a row. A malformed line does not stop the read: it is
yielded as a :class:`LogLineError` with its line number, and reading continues.
"""

from __future__ import annotations

import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Union

from ..storage.local import file_type, open_regular
from ..util.text import loads_exact
from .limits import DEFAULT_MAX_LOG_LINE_BYTES as DEFAULT_MAX_LINE_BYTES
from .linebuf import LineReader, is_blank

LOG_NAMES = ("session.v3.jsonl", "session.v2.jsonl", "session.v1.jsonl", "session.jsonl")
LOG_PATTERN = re.compile(r"^session(\.v[0-9]+)?\.jsonl(\.zstd)?\Z")
SURFACE_TYPES = ("user/message", "assistant/message", "system/message", "tool/result")


class LogError(Exception):
    """A log that cannot be read at all (missing, unreadable, not zstd...)."""


@dataclass(frozen=True)
class LogLineError:
    """A session-log line that cannot be read, and why (``path:line: reason``)."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class LogRow:
    """One parsed session-log line: its number and its JSON object."""

    line: int
    value: dict[str, Any]


def is_log_name(name: str) -> bool:
    return LOG_PATTERN.match(name) is not None


@dataclass(frozen=True)
class LogProblem:
    """Something under the logs root that should be a log and cannot be read as one: a
    directory, FIFO or symlink with a log's name (``malformed``), or a directory that
    cannot be listed (``unreadable``)."""

    path: str
    reason: str
    unreadable: bool = False


def find_logs(logs_root: str | os.PathLike[str]) -> list[Path]:
    """Every session log below ``logs_root`` (``<project>/<session>/session*.jsonl[.zstd]``)."""
    return find_logs_checked(logs_root)[0]


def find_logs_checked(logs_root: str | os.PathLike[str]) -> tuple[list[Path], list[LogProblem]]:
    """:func:`find_logs`, plus every :class:`LogProblem` met on the way (never silent)."""
    out: list[Path] = []
    problems: list[LogProblem] = []

    def unreadable(exc: OSError) -> None:
        problems.append(LogProblem(os.fspath(exc.filename or logs_root), f"cannot list this logs directory: "
                                   f"{exc.strerror or exc}", unreadable=True))

    for dirpath, dirnames, filenames in os.walk(logs_root, onerror=unreadable, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if is_log_name(d)]):
            if not is_log_name(name):
                continue
            path = Path(dirpath) / name
            try:
                mode = os.lstat(path).st_mode
            except OSError as exc:
                problems.append(LogProblem(os.fspath(path), exc.strerror or str(exc), unreadable=True))
                continue
            if stat.S_ISREG(mode):
                out.append(path)
            else:
                problems.append(LogProblem(os.fspath(path), f"{_kind(mode)} where a session log belongs; not read"))
        # A directory named like a log is reported above, not walked as a project dir.
        dirnames[:] = [d for d in dirnames if not is_log_name(d)]
    return out, problems


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink (never followed)"
    name = file_type(mode)
    return "a device or special file" if name == "special file" else f"a {name}"


#: A line budget: this many malformed lines in a row, with no row between, is not a log
#: (a 32 KB zstd file inflating to a billion empty lines stops here, with a finding).
MAX_BAD_RUN = 1000
#: An inflation budget for ``.zstd`` logs: JSONL rows never compress this well, so a
#: file that inflates past it is a bomb, not a log (its finding says where it stopped).
MAX_ZSTD_RATIO = 4096
ZSTD_SLACK = 64 << 20


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """A binary stream of the log's JSONL text (decompressing ``.zstd`` on the fly)."""
    return _open_log(path)[0]


def _open_log(path: str | os.PathLike[str]) -> tuple[BinaryIO, int | None, str | None]:
    """(stream, inflation budget or None, why the zstd frames are not whole or None)."""
    fd = open_regular(path)
    if not os.fspath(path).endswith(".zstd"):
        return os.fdopen(fd, "rb", buffering=1 << 20), None, None
    try:
        size = os.fstat(fd).st_size
        broken = zstd_frames_problem(fd, size)
    except BaseException:
        os.close(fd)
        raise
    raw = os.fdopen(fd, "rb", buffering=1 << 20)
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - the dependency is declared
        raw.close()
        raise LogError("reading .zstd logs needs the 'zstandard' package") from exc
    reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True, read_across_frames=True)
    return io.BufferedReader(reader, buffer_size=1 << 20), MAX_ZSTD_RATIO * size + ZSTD_SLACK, broken


_ZSTD_MAGIC = 0xFD2FB528


class _Window:
    def __init__(self, fd: int) -> None:
        self.fd, self.start, self.data = fd, 0, b""

    def pread(self, n: int, at: int) -> bytes:
        if at < self.start or at + n > self.start + len(self.data):
            self.start, self.data = at, os.pread(self.fd, max(n, 1 << 20), at)
        return self.data[at - self.start : at - self.start + n]


def zstd_frames_problem(fd: int, size: int) -> str | None:
    """Why the zstd frames in ``fd`` are not whole (cut off, or not zstd), else None.

    The decompressor ends a cut-off stream as if it were complete; walking the frame and
    block headers (no decompression: a few bytes per 128 KiB block) tells the difference."""
    import zstandard

    pread = _Window(fd).pread  # headers come from 1 MiB windows, not one syscall each

    pos = 0
    while pos < size:
        head = pread(18, pos)
        if len(head) < 4:
            return f"cut off inside a frame header at byte {pos} of {size}"
        magic = int.from_bytes(head[:4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            if len(head) < 8:
                return f"cut off inside a skippable frame at byte {pos} of {size}"
            pos += 8 + int.from_bytes(head[4:8], "little")
            if pos > size:
                return f"cut off inside a skippable frame (ends at byte {size})"
            continue
        if magic != _ZSTD_MAGIC:
            return f"not a zstd frame at byte {pos}"
        try:
            params = zstandard.get_frame_parameters(head)
            pos += zstandard.frame_header_size(head)
        except zstandard.ZstdError as exc:
            return f"bad zstd frame header at byte {pos}: {exc}"
        while True:
            block = pread(3, pos)
            if len(block) < 3:
                return f"cut off inside a zstd frame (a block header at byte {pos} of {size} is missing)"
            value = int.from_bytes(block, "little")
            kind, length = (value >> 1) & 3, value >> 3
            if kind == 3:
                return f"corrupt zstd block at byte {pos}"
            pos += 3 + (1 if kind == 1 else length)
            if pos > size:
                return f"cut off inside a zstd frame (a block runs to byte {pos}, the file ends at {size})"
            if value & 1:
                break
        if params.has_checksum:
            pos += 4
            if pos > size:
                return f"cut off inside a zstd frame's checksum (file ends at byte {size})"
    return None


def iter_log(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[Union[LogRow, LogLineError]]:
    """Rows (line 1 is the header) and located line errors; a torn last line is an error too.

    Reading stops, with a located error, where the log is clearly not a log: after
    :data:`MAX_BAD_RUN` malformed lines in a row, or a ``.zstd`` log inflating past its
    budget. A cut-off ``.zstd`` stream is an error at the line where it ends."""
    name = os.fspath(path)
    try:
        stream, budget, broken = _open_log(path)
    except OSError as exc:
        raise LogError(f"{name}: {exc.strerror or exc}") from exc
    with stream:
        line = 0
        bad_run = 0
        inflated = 0
        lines = LineReader(stream)
        raw: bytes | memoryview
        body: memoryview
        while True:
            # The last line's views let go first: its buffer is then reused in place.
            raw = body = memoryview(b"")
            try:
                raw = lines.readline(max_line_bytes + 1)
            except Exception as exc:  # zstd frame errors surface here
                yield LogLineError(name, line + 1, f"cannot decompress: {exc}")
                return
            if not raw:
                if broken is not None:
                    yield LogLineError(name, line + 1, f"zstd stream is not whole, the log ends early: {broken}")
                return
            line += 1
            inflated += len(raw)
            if budget is not None and inflated > budget:
                yield LogLineError(name, line, f"not a session log: inflates past {budget} bytes "
                                               f"({MAX_ZSTD_RATIO}x its compressed size); stopped reading")
                return
            if raw[-1:] != b"\n":
                if len(raw) > max_line_bytes:
                    yield LogLineError(name, line, f"line exceeds {max_line_bytes} bytes")
                    # Skip the rest of the overlong line without holding it.
                    while raw and raw[-1:] != b"\n":
                        raw = stream.readline(1 << 20)
                        inflated += len(raw)
                        if budget is not None and inflated > budget:
                            yield LogLineError(name, line, f"not a session log: inflates past {budget} bytes "
                                                           f"({MAX_ZSTD_RATIO}x its compressed size); stopped reading")
                            return
                    continue
                yield LogLineError(name, line, "torn last line (no final newline)"
                                   + (f"; zstd stream is not whole: {broken}" if broken is not None else ""))
                return
            # A view, not a copy: a line can be 64 MB, and each fresh buffer that big costs
            # its page faults again (big allocations are never reused by malloc).
            body = memoryview(raw)[:-1]
            error = None
            if not body or is_blank(raw):
                error = "empty line"
            else:
                try:
                    value = loads_exact(body)
                except ValueError as exc:
                    error = f"invalid JSON: {exc}"
                else:
                    if not isinstance(value, dict):
                        error = "line is not a JSON object"
            if error is None:
                bad_run = 0
                yield LogRow(line, value)
                continue
            bad_run += 1
            if bad_run >= MAX_BAD_RUN:
                yield LogLineError(name, line, f"not a session log: {MAX_BAD_RUN} malformed lines in a row "
                                               f"(lines {line - MAX_BAD_RUN + 1}-{line}, the last: {error}); stopped reading")
                return
            yield LogLineError(name, line, error)


@dataclass(frozen=True)
class SessionHeader:
    """A session log's first line: the session id, the format version and the working dir."""

    session_id: str
    version: int
    cwd: str | None
    raw: dict[str, Any]


def parse_header(row: dict[str, Any]) -> SessionHeader | None:
    if row.get("type") != "session" or not isinstance(row.get("id"), str):
        return None
    version = row.get("version", 1)
    cwd = row.get("cwd")
    return SessionHeader(row["id"], version if isinstance(version, int) else 1, cwd if isinstance(cwd, str) else None, row)


@dataclass(frozen=True)
class SessionCapture:
    """A session's current surface, captured once (what a reference projects)."""

    header: SessionHeader
    #: Surface events in order (dicts with ``type``, ``seq``, ``data``).
    events: tuple[dict[str, Any], ...]
    captured_through_seq: int | None


def fold_surface(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Apply ``surfaceOp``s: ``append`` adds, ``{op: replace, startSeq, endSeq}`` replaces a range."""
    surface: list[dict[str, Any]] = []
    for row in rows:
        op = row.get("surfaceOp")
        if op == "append":
            surface.append(row)
        elif isinstance(op, dict) and op.get("op") == "replace":
            lo, hi = op.get("startSeq"), op.get("endSeq")
            if not isinstance(lo, int) or not isinstance(hi, int):
                continue
            at = next((i for i, r in enumerate(surface) if isinstance(r.get("seq"), int) and lo <= r["seq"] <= hi), len(surface))
            surface = [r for r in surface if not (isinstance(r.get("seq"), int) and lo <= r["seq"] <= hi)]
            surface.insert(min(at, len(surface)), row)
    return [r for r in surface if r.get("type") in SURFACE_TYPES]


def capture_log(path: str | os.PathLike[str]) -> SessionCapture:
    """Read a source session's log once and fold its current surface."""
    header: SessionHeader | None = None
    rows: list[dict[str, Any]] = []
    last_seq: int | None = None
    for item in iter_log(path):
        if isinstance(item, LogLineError):
            if item.line == 1:
                raise LogError(str(item))
            continue
        if item.line == 1:
            header = parse_header(item.value)
            if header is None:
                raise LogError(f"{os.fspath(path)}:1: not a session header")
            continue
        rows.append(item.value)
        seq = item.value.get("seq")
        if isinstance(seq, int) and not isinstance(seq, bool):
            last_seq = seq if last_seq is None else max(last_seq, seq)
    if header is None:
        raise LogError(f"{os.fspath(path)}: empty log")
    return SessionCapture(header, tuple(fold_surface(rows)), last_seq)
