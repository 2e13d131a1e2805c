"""Retention of a projected session into a per-reference JSON byte budget (FORMAT.md §5).

Exactly the reference algorithm: (1) drop whole messages, oldest first, never a
checkpoint and never the newest; (2) then repeatedly shorten the longest message to
head + tail + ``\\n[… omitted N UTF-8 bytes …]`` (binary search on the kept byte count).
Sizes are tracked per message instead of re-serialising the whole preview on every
step; the serialisation is a sum of independent parts, so the result is identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..util.text import js_utf8, tag_safe_json, utf8_len
from ..spill.retention import retain_head_tail_bytes, split_budget
from .constants import omission_marker
from .projection import ProjectedMessage


class ReferenceBudgetExceeded(ValueError):
    """The fixed part of a reference (ids, labels, roles) cannot fit the byte budget."""


@dataclass(frozen=True)
class RetentionStats:
    """What a reference's preview kept and omitted of its session."""

    compacted: bool
    original_messages: int
    retained_messages: int
    omitted_messages: int
    omitted_bytes: int
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "compacted": self.compacted,
            "originalMessages": self.original_messages,
            "retainedMessages": self.retained_messages,
            "omittedMessages": self.omitted_messages,
            "omittedBytes": self.omitted_bytes,
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class RetainedReference:
    """A reference's bounded preview, the full data its transcript saves, and the counts."""

    #: The bounded preview data (``sessionId, label, cwd, capturedThroughSeq, conversation``).
    data: dict[str, Any]
    #: The same data with the full conversation (what the transcript saves).
    full_data: dict[str, Any]
    stats: RetentionStats


def preview_data(session_id: str, label: str, cwd: str | None, seq: int | None, conversation: list[dict[str, str]]) -> dict[str, Any]:
    return {"sessionId": session_id, "label": label, "cwd": cwd, "capturedThroughSeq": seq, "conversation": conversation}


def truncate_with_notice(text: str, max_output_bytes: int) -> tuple[str, int]:
    """Longest head+tail+marker within ``max_output_bytes``; ``("", all bytes)`` if none fits."""
    data = js_utf8(text)
    if len(data) <= max_output_bytes:
        return text, 0
    low, high = 0, max_output_bytes
    best = ("", len(data))
    while low <= high:
        kept = (low + high) // 2
        head, tail = split_budget(kept)
        result = retain_head_tail_bytes(data, head, tail)
        omitted = result.omitted_bytes or 0
        candidate = result.text + omission_marker(omitted)
        if utf8_len(candidate) <= max_output_bytes:
            best = (candidate, omitted)
            low = kept + 1
        else:
            high = kept - 1
    return best


def _item_size(role: str, text: str) -> int:
    return utf8_len(tag_safe_json({"role": role, "text": text}))


def retain_reference(
    session_id: str,
    label: str,
    cwd: str | None,
    captured_through_seq: int | None,
    messages: list[ProjectedMessage],
    max_bytes: int,
) -> RetainedReference:
    """Fit one projected session into ``max_bytes`` of tag-safe JSON; see the module docstring."""
    full = [{"role": m.role, "text": m.text} for m in messages]
    base = utf8_len(tag_safe_json(preview_data(session_id, label, cwd, captured_through_seq, [])))
    # retained: [role, text, original, checkpoint, omittedBytes, size]
    retained: list[list[Any]] = [[m.role, m.text, m.text, m.checkpoint, 0, _item_size(m.role, m.text)] for m in messages]

    def size() -> int:
        return int(base + sum(r[5] for r in retained) + max(0, len(retained) - 1))

    omitted_messages = 0
    dropped_bytes = 0
    while size() > max_bytes:
        newest = len(retained) - 1
        drop = next((i for i, r in enumerate(retained) if not r[3] and i != newest), -1)
        if drop < 0:
            break
        removed = retained.pop(drop)
        omitted_messages += 1
        dropped_bytes += utf8_len(removed[2])

    while size() > max_bytes:
        longest, longest_bytes = -1, 0
        for i, r in enumerate(retained):
            b = utf8_len(r[1])
            if b > longest_bytes:
                longest, longest_bytes = i, b
        if longest < 0 or longest_bytes == 0:
            raise ReferenceBudgetExceeded("referenced session snapshot cannot fit the configured byte budget")
        overflow = size() - max_bytes
        target = max(0, longest_bytes - overflow)
        item = retained[longest]
        text, omitted = truncate_with_notice(item[2], target)
        if text == item[1]:
            raise ReferenceBudgetExceeded("referenced session snapshot cannot fit the configured byte budget")
        item[1], item[4], item[5] = text, omitted, _item_size(item[0], text)

    omitted_bytes = dropped_bytes + sum(r[4] for r in retained)
    stats = RetentionStats(
        compacted=any(m.checkpoint for m in messages),
        original_messages=len(messages),
        retained_messages=len(retained),
        omitted_messages=omitted_messages,
        omitted_bytes=omitted_bytes,
        truncated=omitted_messages > 0 or omitted_bytes > 0,
    )
    data = preview_data(session_id, label, cwd, captured_through_seq, [{"role": r[0], "text": r[1]} for r in retained])
    return RetainedReference(data, preview_data(session_id, label, cwd, captured_through_seq, full), stats)
