"""The durable reference message (FORMAT.md §5): rendering it and parsing a logged one.

The text is the prompt block (a tag-safe JSON array of preview data between
``<referenced-sessions>`` tags) and, when any reference was truncated, the omission
section with a tag-safe JSON array of notices. The notices sit outside the bounded
preview, so no budget can remove them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..util.text import loads_exact, tag_safe_json
from .constants import OMISSIONS_HEADER, PROMPT_PREFIX, PROMPT_SUFFIX


class ReferenceMessageError(ValueError):
    """A logged reference message whose text does not follow the format."""


def render_reference_text(preview: list[dict[str, Any]], notices: list[dict[str, Any]]) -> str:
    text = f"{PROMPT_PREFIX}{tag_safe_json(preview)}{PROMPT_SUFFIX}"
    if notices:
        text += OMISSIONS_HEADER + tag_safe_json(notices)
    return text


def parse_reference_text(text: str) -> tuple[list[Any], list[Any]]:
    """(preview entries, notices) as raw JSON values; raises :class:`ReferenceMessageError`."""
    if not text.startswith(PROMPT_PREFIX):
        raise ReferenceMessageError("reference message does not start with the referenced-sessions prompt")
    end = text.find(PROMPT_SUFFIX, len(PROMPT_PREFIX))
    if end < 0:
        raise ReferenceMessageError("reference message has no closing </referenced-sessions> tag")
    try:
        preview = loads_exact(text[len(PROMPT_PREFIX) : end])
    except ValueError as exc:
        raise ReferenceMessageError(f"preview JSON is invalid: {exc}") from None
    if not isinstance(preview, list):
        raise ReferenceMessageError("preview JSON is not an array")
    rest = text[end + len(PROMPT_SUFFIX) :]
    notices: Any = []
    if rest:
        if not rest.startswith(OMISSIONS_HEADER):
            raise ReferenceMessageError("unexpected text after the preview (expected the omission section)")
        try:
            notices = loads_exact(rest[len(OMISSIONS_HEADER) :])
        except ValueError as exc:
            raise ReferenceMessageError(f"notice JSON is invalid: {exc}") from None
        if not isinstance(notices, list):
            raise ReferenceMessageError("notice JSON is not an array")
    return preview, notices


@dataclass(frozen=True)
class ReferenceMessage:
    """A prepared (or logged) reference message: its exact text and source metadata."""

    text: str
    source: dict[str, Any]
    preview: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)

    def to_event_data(self, message_id: str) -> dict[str, Any]:
        """The ``user/message`` data as logged (key order ``source, content, role, id``)."""
        return {"source": self.source, "content": [{"type": "text", "text": self.text}], "role": "user", "id": message_id}


def is_reference_message(data: Any) -> bool:
    return isinstance(data, Mapping) and isinstance(data.get("source"), Mapping) and data["source"].get("kind") == "session-reference"


def message_text(data: Mapping[str, Any]) -> str:
    content = data.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str))


def replay(logged: Mapping[str, Any]) -> ReferenceMessage:
    """Rebuild the message from a logged ``user/message`` without saving or reading a source.

    Raises :class:`ReferenceMessageError` when re-rendering the logged preview and notices
    does not give back the logged text exactly.
    """
    if not is_reference_message(logged):
        raise ReferenceMessageError("not a session-reference message")
    text = message_text(logged)
    preview, notices = parse_reference_text(text)
    rebuilt = render_reference_text(preview, notices)
    if rebuilt != text:
        raise ReferenceMessageError("logged text does not re-render identically from its preview and notices")
    return ReferenceMessage(rebuilt, dict(logged["source"]), preview, notices)
