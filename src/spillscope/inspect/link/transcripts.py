"""Reading transcripts for a verify pass: each read once (streamed, bounded memory), metered, checked.

:class:`_Digests` plans and shares one read per transcript however many notices name it;
:func:`_check_transcript` checks a transcript on its own (one no notice named). Separate
from the linkers because reading bytes and reporting progress is one job, and comparing
what was read with a notice is another.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from ...storage import Storage
from ...reference.check import digest_transcript, keep_bytes_for
from ...formats.transcript.records import TranscriptError
from ..findings import finding
from .records import ArtifactCheck
from .locate import resolve_locator
from ..logs import ReferenceEntry
from ..scan.tree import Artifact, ProgressFn


class _ByteMeter:
    """Reports transcript bytes read as ``progress("verify", done, total)``."""

    def __init__(self, progress: ProgressFn, total: int) -> None:
        self.progress, self.total = progress, total
        self.done = self.size = self.part = 0

    def start(self, size: int) -> Callable[[int], None]:
        self.size, self.part = size, 0
        return self.text

    def text(self, n: int) -> None:
        # Decoded text bytes stand in for file bytes inside a file: capped at its size.
        self.part = min(self.part + n, self.size)
        self.progress("verify", min(self.done + self.part, self.total), self.total)

    def end(self) -> None:
        self.done += self.size
        self.size = self.part = 0
        self.progress("verify", min(self.done, self.total), self.total)

    def finish(self) -> None:
        self.progress("verify", self.total, self.total)


def _digest(art: Artifact, keep: int, max_line_bytes: int, meter: _ByteMeter | None) -> tuple[Any, list[Any], Any]:
    if meter is None:
        return digest_transcript(art.path, keep, max_line_bytes)
    try:
        return digest_transcript(art.path, keep, max_line_bytes, meter.start(art.size))
    finally:
        meter.end()


class _Digests:
    """Each transcript is read once however many notices name it: with the largest
    ``keep`` any of them needs, and held only until the last of them is checked (8,000
    notices naming one 8 MB transcript must not read it 8,000 times)."""

    def __init__(self, max_line_bytes: int, meter: _ByteMeter | None) -> None:
        self.max_line_bytes, self.meter = max_line_bytes, meter
        self.keep: dict[tuple[str, int, float], int] = {}
        self.left: Counter[tuple[str, int, float]] = Counter()
        self.held: dict[tuple[str, int, float], Any] = {}

    def want(self, entry: ReferenceEntry, root: Storage, rebase: str | None, by_path: dict[str, Artifact]) -> None:
        locator = entry.locator
        path = resolve_locator(locator, root, rebase)[0] if locator is not None else None
        art = by_path.get(path) if path is not None else None
        if art is None or not art.is_regular:
            return
        conversation = entry.preview.get("conversation")
        key = (art.path, art.size, art.mtime)
        self.keep[key] = max(self.keep.get(key, 0), keep_bytes_for(conversation if isinstance(conversation, list) else []))
        self.left[key] += 1

    def get(self, art: Artifact, keep: int) -> tuple[Any, list[Any], Any]:
        """:func:`_digest` of ``art`` (raising what it raised), read at most once."""
        key = (art.path, art.size, art.mtime)
        if key not in self.held:
            try:
                self.held[key] = _digest(art, max(keep, self.keep.get(key, 0)), self.max_line_bytes, self.meter)
            except (TranscriptError, OSError) as exc:
                self.held[key] = exc
        got = self.held[key]
        self.left[key] -= 1
        if self.left[key] <= 0:
            del self.held[key]
        if isinstance(got, BaseException):
            raise got
        return got  # type: ignore[no-any-return]


def _check_transcript(art: Artifact, session: str | None, max_line_bytes: int, meter: _ByteMeter | None = None,
                      keep: int = 1) -> ArtifactCheck:
    check = ArtifactCheck(art)
    try:
        meta, views, incomplete = _digest(art, keep, max_line_bytes, meter)
    except TranscriptError as exc:
        check.findings.append(finding("malformed-artifact", path=art.path, line=exc.line, session=session, detail=exc.reason))
        return check
    except OSError as exc:
        check.findings.append(finding("unreadable", path=art.path, session=session, detail=exc.strerror or str(exc)))
        return check
    check.messages = len(views)
    if incomplete is not None:
        check.findings.append(finding("incomplete-artifact", path=art.path, line=incomplete.line, session=session, detail=incomplete.reason))
    return check
