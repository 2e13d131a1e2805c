"""Session references: projection, retention, the transcript codec, the durable message,
preparation and notice checking (FORMAT.md §5–§7)."""

from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports

if TYPE_CHECKING:
    from .check import Disagreement, Recomputed, check_notice
    from .message import ReferenceMessage, ReferenceMessageError, parse_reference_text, render_reference_text, replay
    from .preparation import CaptureSource, LogDirectorySource, ReferenceInput, SessionReferenceError, SessionSource, prepare
    from .projection import ProjectedMessage, project
    from .retention import ReferenceBudgetExceeded, RetainedReference, RetentionStats, retain_reference
    from ..formats.transcript import Incomplete, Transcript, TranscriptError, TranscriptIndex, TranscriptMessage, TranscriptMetadata, iter_transcript, parse_transcript, read_transcript, render_transcript

_EXPORTS = {
    "check": ("Disagreement", "Recomputed", "check_notice"),
    "message": ("ReferenceMessage", "ReferenceMessageError", "parse_reference_text", "render_reference_text", "replay"),
    "preparation": ("CaptureSource", "LogDirectorySource", "ReferenceInput", "SessionReferenceError", "SessionSource", "prepare"),
    "projection": ("ProjectedMessage", "project"),
    "retention": ("ReferenceBudgetExceeded", "RetainedReference", "RetentionStats", "retain_reference"),
    "..formats.transcript": ("Incomplete", "Transcript", "TranscriptError", "TranscriptIndex", "TranscriptMessage", "TranscriptMetadata", "iter_transcript", "parse_transcript", "read_transcript", "render_transcript"),
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["CaptureSource", "Disagreement", "Incomplete", "LogDirectorySource", "ProjectedMessage", "Recomputed", "ReferenceBudgetExceeded", "ReferenceInput", "ReferenceMessage", "ReferenceMessageError", "RetainedReference", "RetentionStats", "SessionReferenceError", "SessionSource", "Transcript", "TranscriptError", "TranscriptIndex", "TranscriptMessage", "TranscriptMetadata", "check_notice", "iter_transcript", "parse_reference_text", "parse_transcript", "prepare", "project", "read_transcript", "render_reference_text", "render_transcript", "replay", "retain_reference"]
