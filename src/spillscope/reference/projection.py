"""Projection of a referenced session's surface into a conversation (FORMAT.md §5).

Kept: ``user/message`` events whose source is ``user`` or a compaction checkpoint, and
``assistant/message`` events. Text = the ``text`` blocks joined with ``\\n``; empty
texts are skipped. Tools, reasoning, system and injected messages are excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True)
class ProjectedMessage:
    """A message of a session as a reference projects it: role, text, and whether it is a checkpoint."""

    role: str
    text: str
    checkpoint: bool


def is_compact_checkpoint(source: Any) -> bool:
    return isinstance(source, Mapping) and source.get("kind") == "plugin" and source.get("plugin") == "compact"


def text_content(content: Any) -> str:
    if not isinstance(content, list):
        return ""
    return "\n".join(
        b["text"] for b in content if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def project(events: Iterable[Mapping[str, Any]]) -> list[ProjectedMessage]:
    out: list[ProjectedMessage] = []
    for event in events:
        data = event.get("data")
        if not isinstance(data, Mapping):
            continue
        kind = event.get("type")
        if kind == "user/message":
            source = data.get("source")
            checkpoint = is_compact_checkpoint(source)
            if not checkpoint and not (isinstance(source, Mapping) and source.get("kind") == "user"):
                continue
            text = text_content(data.get("content"))
            if text:
                out.append(ProjectedMessage("user", text, checkpoint))
        elif kind == "assistant/message":
            message = data.get("message")
            text = text_content(message.get("content")) if isinstance(message, Mapping) else ""
            if text:
                out.append(ProjectedMessage("assistant", text, False))
    return out
