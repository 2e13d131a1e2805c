"""Session references: projection, retention, the transcript codec, the durable message,
preparation and notice checking (FORMAT.md §5–§7)."""

from .check import Disagreement, Recomputed, check_notice
from .message import ReferenceMessage, ReferenceMessageError, parse_reference_text, render_reference_text, replay
from .prepare import (
    CaptureSource,
    LogDirectorySource,
    ReferenceInput,
    SessionReferenceError,
    SessionSource,
    prepare,
)
from .projection import ProjectedMessage, project
from .retention import ReferenceBudgetExceeded, RetainedReference, RetentionStats, retain_reference
from .transcript import (
    Incomplete,
    Transcript,
    TranscriptError,
    TranscriptIndex,
    TranscriptMessage,
    TranscriptMetadata,
    iter_transcript,
    parse_transcript,
    read_transcript,
    render_transcript,
)

__all__ = [
    "CaptureSource",
    "Disagreement",
    "Incomplete",
    "LogDirectorySource",
    "ProjectedMessage",
    "Recomputed",
    "ReferenceBudgetExceeded",
    "ReferenceInput",
    "ReferenceMessage",
    "ReferenceMessageError",
    "RetainedReference",
    "RetentionStats",
    "SessionReferenceError",
    "SessionSource",
    "Transcript",
    "TranscriptError",
    "TranscriptIndex",
    "TranscriptMessage",
    "TranscriptMetadata",
    "check_notice",
    "iter_transcript",
    "parse_reference_text",
    "prepare",
    "project",
    "read_transcript",
    "render_reference_text",
    "render_transcript",
    "replay",
    "retain_reference",
]
