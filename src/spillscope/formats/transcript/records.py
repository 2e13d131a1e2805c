"""The records of a transcript: the parsed events, the collected transcript and its error.

The streaming parser yields these events, :func:`read_transcript` collects them into a
:class:`Transcript`, and the index consumes them; they live apart so each of those can
import them without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


class TranscriptError(ValueError):
    """A malformed transcript, located: ``str(err)`` is ``path:line: reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class TranscriptMetadata:
    """A transcript's metadata block (FORMAT.md §6), as written."""

    session_id: str
    label: str
    cwd: str | None
    captured_through_seq: int | None
    captured_format_version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "label": self.label,
            "cwd": self.cwd,
            "capturedThroughSeq": self.captured_through_seq,
            "capturedFormatVersion": self.captured_format_version,
        }


@dataclass(frozen=True)
class MessageStart:
    """A message header: its 1-based index and role, and where its fragment lines begin."""

    index: int
    role: str
    line: int
    offset: int


@dataclass(frozen=True)
class Fragment:
    """Consecutive fragment lines of one message, decoded (a batch, for speed).

    ``texts[i]`` came from file line ``line + i`` (``raw[i]``, without its newline),
    which starts at byte ``offset + sum(len(r) + 1 for r in raw[:i])``."""

    texts: list[str]
    line: int
    offset: int
    raw: list[bytes]
    #: True when a text holds a surrogate (only the stdlib fallback can produce one).
    surrogates: bool = False

    @property
    def end(self) -> int:
        """File offset just past the batch's last line."""
        return self.offset + sum(map(len, self.raw)) + len(self.raw)

    def code_points(self) -> list[int]:
        return list(map(len, self.texts))


@dataclass(frozen=True)
class MessageEnd:
    """The end of a message's fragment lines: the byte offset after its last."""

    index: int
    end_offset: int


@dataclass(frozen=True)
class Incomplete:
    """The file was cut off mid-write; ``line`` is where the stream stopped."""

    line: int
    reason: str


Event = Union[TranscriptMetadata, MessageStart, Fragment, MessageEnd, Incomplete]


@dataclass(frozen=True)
class TranscriptMessage:
    """A message's exact text, decoded from its fragment lines."""

    index: int
    role: str
    text: str
    line: int


@dataclass(frozen=True)
class Transcript:
    """A whole transcript read into memory: its metadata and messages, and whether it was cut off."""

    path: str
    #: ``None`` only when the file was cut off before its metadata block was complete.
    metadata: TranscriptMetadata | None
    messages: tuple[TranscriptMessage, ...]
    #: ``None`` when complete; otherwise why it looks cut off mid-write.
    incomplete: Incomplete | None = None

    @property
    def complete(self) -> bool:
        return self.incomplete is None
