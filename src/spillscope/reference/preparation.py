"""Preparing a cross-session reference (FORMAT.md §5).

:func:`prepare` captures each referenced session once, retains it into the byte
budget, saves the full transcript only for truncated references, and returns the
durable :class:`ReferenceMessage`. It publishes nothing itself; if its task is
cancelled at any await — also after a save has completed — it raises
:class:`asyncio.CancelledError` and returns no message (the artifact stays on disk,
governed by expiry, exactly as upstream).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from ..formats.sessionlog import LOG_NAMES, SessionCapture, capture_log
from ..spill.naming import encode_segment
from ..spill.types import SaveTextSpill, SessionReferenceSource, SpillOwner, SpillStore
from ..util.jsnum import js_is_safe_integer
from ..util.text import js_json_string
from .constants import DEFAULT_MAX_REFERENCE_BYTES, MAX_REFERENCES, transcript_name
from .message import ReferenceMessage, render_reference_text
from .projection import project
from .retention import RetainedReference, retain_reference
from ..formats.transcript.writer import render_transcript


class SessionReferenceError(ValueError):
    """Invalid references (self-reference, too many), unreadable sources, or budget overflow."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ReferenceInput:
    """A session the model asked to reference, and its label."""

    session_id: str
    label: str | None = None


class SessionSource(Protocol):
    async def capture(self, session_id: str) -> SessionCapture: ...


class LogDirectorySource:
    """Captures sessions from a logs root in the §4 layout."""

    def __init__(self, logs_root: str | os.PathLike[str]) -> None:
        self.root = Path(logs_root)

    def find(self, session_id: str) -> Path | None:
        segment = encode_segment(session_id)
        for project_dir in sorted(self.root.iterdir()):
            session_dir = project_dir / segment
            for name in LOG_NAMES:
                for candidate in (session_dir / (name + ".zstd"), session_dir / name):
                    if candidate.is_file():
                        return candidate
        return None

    async def capture(self, session_id: str) -> SessionCapture:
        path = await asyncio.to_thread(self.find, session_id)
        if path is None:
            raise FileNotFoundError(f"no log for session {session_id!r}")
        return await asyncio.to_thread(capture_log, path)


class CaptureSource:
    """Serves pre-made captures (tests, replays of recorded sources)."""

    def __init__(self, captures: Mapping[str, SessionCapture]) -> None:
        self.captures = dict(captures)

    async def capture(self, session_id: str) -> SessionCapture:
        try:
            return self.captures[session_id]
        except KeyError:
            raise FileNotFoundError(f"no capture for session {session_id!r}") from None


def normalize_references(
    target_id: str, references: Sequence[ReferenceInput | tuple[str, str | None] | Mapping[str, Any]], max_references: int
) -> list[tuple[str, str]]:
    """Dedupe by session id (first label wins); refuse self-references and too many."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for ref in references:
        if isinstance(ref, ReferenceInput):
            sid, label = ref.session_id, ref.label
        elif isinstance(ref, tuple):
            sid, label = ref
        elif isinstance(ref, Mapping):
            sid, label = ref.get("sessionId"), ref.get("label")  # type: ignore[assignment]
            # Upstream: ``label !== undefined && typeof label !== 'string'`` -- a label
            # that is present but null is invalid; only an absent one defaults.
            if "label" in ref and label is None:
                label = _NULL  # type: ignore[assignment]
        elif isinstance(ref, list):
            sid, label = None, None  # an array is a JS object without a sessionId
        else:
            raise SessionReferenceError("session reference must be an object", "SESSION_REFERENCE_INVALID_REFERENCE")
        if not isinstance(sid, str) or (label is not None and not isinstance(label, str)):
            raise SessionReferenceError(
                "session reference must contain a string sessionId and optional string label",
                "SESSION_REFERENCE_INVALID_REFERENCE",
            )
        if sid == target_id:
            raise SessionReferenceError(f"session {js_json_string(target_id)} cannot reference itself",
                                        "SESSION_REFERENCE_SELF_REFERENCE")
        if sid in seen:
            continue
        seen.add(sid)
        out.append((sid, label if label is not None else sid))
    if len(out) > max_references:
        raise SessionReferenceError(
            f"a message may reference at most {max_references} sessions", "SESSION_REFERENCE_TOO_MANY"
        )
    return out


_NULL = object()


def validate_config(
    max_reference_bytes: int | float | None, max_references: int | float | None = MAX_REFERENCES
) -> tuple[int, int]:
    """The reference resolver's constructor checks: each budget a positive *safe* integer
    (JavaScript numbers, so 200.0 is fine and 2**53 is not), at most 3 references.
    ``max_reference_bytes=None`` is the reference's "absent" (the 64 KiB floor without a
    model). Returns (max_reference_bytes, max_references) as ints."""
    if max_references is None:  # absent: the default, as ``?? MAX_REFERENCES`` upstream
        max_references = MAX_REFERENCES
    for name, value in (("maxReferences", max_references), ("maxReferenceBytes", max_reference_bytes)):
        if value is not None and (not js_is_safe_integer(value) or value <= 0):
            raise SessionReferenceError(
                f"session-reference: {name} must be a positive safe integer", "SESSION_REFERENCE_INVALID_CONFIG"
            )
    if max_references > MAX_REFERENCES:
        raise SessionReferenceError(
            f"session-reference: maxReferences must not exceed {MAX_REFERENCES}", "SESSION_REFERENCE_INVALID_CONFIG"
        )
    budget = DEFAULT_MAX_REFERENCE_BYTES if max_reference_bytes is None else int(max_reference_bytes)
    return budget, int(max_references)


def retain_capture(capture: SessionCapture, label: str, max_bytes: int) -> RetainedReference:
    return retain_reference(
        capture.header.session_id,
        label,
        capture.header.cwd,
        capture.captured_through_seq,
        project(capture.events),
        max_bytes,
    )


async def _omission(
    store: SpillStore | None, owner: str, retained: RetainedReference, version: int, index: int
) -> dict[str, Any] | None:
    if not retained.stats.truncated:
        return None
    snapshot: dict[str, Any]
    if store is None:
        snapshot = {"status": "unavailable", "reason": "storage-not-configured"}
    else:
        request = SaveTextSpill(
            SpillOwner(owner),
            SessionReferenceSource(retained.full_data["sessionId"], retained.full_data["label"]),
            transcript_name(index),
            render_transcript(retained.full_data, version),
        )
        try:
            ref = await store.save_text(request)
            snapshot = {"status": "saved", **ref.to_json()}
        except asyncio.CancelledError:
            raise
        except Exception:
            # A failed save cannot turn an incomplete preview into a claimed full snapshot.
            snapshot = {"status": "unavailable", "reason": "save-failed"}
    return {
        "sessionId": retained.full_data["sessionId"],
        "capturedThroughSeq": retained.full_data["capturedThroughSeq"],
        "omittedMessages": retained.stats.omitted_messages,
        "omittedBytes": retained.stats.omitted_bytes,
        "fullSnapshot": snapshot,
    }


async def prepare(
    target_session_id: str,
    references: Sequence[ReferenceInput | tuple[str, str | None] | Mapping[str, Any]],
    *,
    source: SessionSource,
    max_reference_bytes: int | float | None,
    store: SpillStore | None = None,
    max_references: int | float | None = MAX_REFERENCES,
) -> ReferenceMessage | None:
    """The durable reference message for ``references``, or ``None`` when there are none.

    Validation is the reference's, in its order and with its codes: the config
    (:func:`validate_config`), then each reference in turn (not an object or a non-string
    ``sessionId``/``label`` → ``..._INVALID_REFERENCE``; itself → ``..._SELF_REFERENCE``),
    then the count. Nothing is read or saved before all of it passes."""
    max_reference_bytes, max_references = validate_config(max_reference_bytes, max_references)
    inputs = normalize_references(target_session_id, references, max_references)
    if not inputs:
        return None
    try:
        captures = await asyncio.gather(*(source.capture(sid) for sid, _ in inputs))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise SessionReferenceError(f"failed to read referenced session: {exc}", "SESSION_REFERENCE_READ_FAILED") from exc
    rendered: list[tuple[RetainedReference, int]] = []
    for capture, (_, label) in zip(captures, inputs):
        try:
            rendered.append((retain_capture(capture, label, max_reference_bytes), capture.header.version))
        except ValueError as exc:
            raise SessionReferenceError(str(exc), "SESSION_REFERENCE_BUDGET_EXCEEDED") from exc
    omissions = await asyncio.gather(
        *(_omission(store, target_session_id, r, v, i) for i, (r, v) in enumerate(rendered))
    )
    # A cancellation that arrived while the saves were finishing is honoured here:
    # nothing is published, even though the artifacts were written.
    await asyncio.sleep(0)
    notices = [n for n in omissions if n is not None]
    preview = [r.data for r, _ in rendered]
    source_meta = {
        "kind": "session-reference",
        "form": "recall",
        "version": 1,
        "references": [
            {
                "sessionId": r.data["sessionId"],
                "label": r.data["label"],
                "capturedFormatVersion": v,
                "capturedThroughSeq": r.data["capturedThroughSeq"],
                **r.stats.to_json(),
                "inputIndex": i,
            }
            for i, (r, v) in enumerate(rendered)
        ],
    }
    return ReferenceMessage(render_reference_text(preview, notices), source_meta, preview, notices)
