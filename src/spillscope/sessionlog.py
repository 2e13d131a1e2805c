"""Session logs (FORMAT.md §4): finding them, reading them line by line, folding the surface.

Logs are JSONL, plain or zstd-compressed (read streaming with ``zstandard``). Line 1 is
the header; every later line is a row. A malformed line does not stop the read: it is
yielded as a :class:`LogLineError` with its line number, and reading continues.
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator, Union

from ._fs import open_regular
from ._text import loads_exact

LOG_NAMES = ("session.v3.jsonl", "session.v2.jsonl", "session.v1.jsonl", "session.jsonl")
LOG_PATTERN = re.compile(r"^session(\.v[0-9]+)?\.jsonl(\.zstd)?\Z")
DEFAULT_MAX_LINE_BYTES = 64 << 20
SURFACE_TYPES = ("user/message", "assistant/message", "system/message", "tool/result")


class LogError(Exception):
    """A log that cannot be read at all (missing, unreadable, not zstd...)."""


@dataclass(frozen=True)
class LogLineError:
    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}"


@dataclass(frozen=True)
class LogRow:
    line: int
    value: dict[str, Any]


def is_log_name(name: str) -> bool:
    return LOG_PATTERN.match(name) is not None


def find_logs(logs_root: str | os.PathLike[str]) -> list[Path]:
    """Every session log below ``logs_root`` (``<project>/<session>/session*.jsonl[.zstd]``)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(logs_root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            if is_log_name(name):
                out.append(Path(dirpath) / name)
    return out


def open_log(path: str | os.PathLike[str]) -> BinaryIO:
    """A binary stream of the log's JSONL text (decompressing ``.zstd`` on the fly)."""
    raw = os.fdopen(open_regular(path), "rb", buffering=1 << 20)
    if not os.fspath(path).endswith(".zstd"):
        return raw
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - the dependency is declared
        raw.close()
        raise LogError("reading .zstd logs needs the 'zstandard' package") from exc
    reader = zstandard.ZstdDecompressor().stream_reader(raw, closefd=True, read_across_frames=True)
    return io.BufferedReader(reader, buffer_size=1 << 20)


def iter_log(
    path: str | os.PathLike[str], *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[Union[LogRow, LogLineError]]:
    """Rows (line 1 is the header) and located line errors; a torn last line is an error too."""
    name = os.fspath(path)
    try:
        stream = open_log(path)
    except OSError as exc:
        raise LogError(f"{name}: {exc.strerror or exc}") from exc
    with stream:
        line = 0
        while True:
            try:
                raw = stream.readline(max_line_bytes + 1)
            except Exception as exc:  # zstd frame errors surface here
                yield LogLineError(name, line + 1, f"cannot decompress: {exc}")
                return
            if not raw:
                return
            line += 1
            if raw[-1:] != b"\n":
                if len(raw) > max_line_bytes:
                    yield LogLineError(name, line, f"line exceeds {max_line_bytes} bytes")
                    # Skip the rest of the overlong line without holding it.
                    while raw and raw[-1:] != b"\n":
                        raw = stream.readline(1 << 20)
                    continue
                yield LogLineError(name, line, "torn last line (no final newline)")
                return
            body = raw[:-1]
            if not body.strip():
                yield LogLineError(name, line, "empty line")
                continue
            try:
                value = loads_exact(body)
            except ValueError as exc:
                yield LogLineError(name, line, f"invalid JSON: {exc}")
                continue
            if not isinstance(value, dict):
                yield LogLineError(name, line, "line is not a JSON object")
                continue
            yield LogRow(line, value)


@dataclass(frozen=True)
class SessionHeader:
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
