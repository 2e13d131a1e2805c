"""The spill seam (FORMAT.md §1): request and result records and the abstract store.

Records are frozen dataclasses; ``to_json``/``from_json`` convert to and from the
camelCase wire shape the reference implementation logs.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, Literal, Mapping, NewType, Union

#: The opaque handle a store returns. For the local backend it is an absolute path;
#: for other backends a URI or key. Consumers never parse it.
Locator = NewType("Locator", str)

class SpillStoreError(Exception):
    """A real storage failure (permissions, ENOSPC, backend down). ``cause`` holds the origin."""

    def __init__(self, message: str, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause


@dataclass(frozen=True)
class SpillOwner:
    """The storage namespace: the session that *receives* the context."""

    session_id: str

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpillOwner:
        return cls(session_id=_str(data, "sessionId"))


@dataclass(frozen=True)
class ToolSource:
    """A tool result (label ``result``) or the durable copy of a dispatch sub-call (``dispatch``)."""

    tool_name: str
    call_id: str
    label: str
    kind: Literal["tool"] = "tool"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "tool", "toolName": self.tool_name, "callId": self.call_id, "label": self.label}


@dataclass(frozen=True)
class SessionReferenceSource:
    """A cross-session reference; ``session_id`` is the *referenced* session."""

    session_id: str
    label: str
    kind: Literal["session-reference"] = "session-reference"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "session-reference", "sessionId": self.session_id, "label": self.label}


SpillSource = Union[ToolSource, SessionReferenceSource]


def source_from_json(data: Mapping[str, Any]) -> SpillSource:
    """Parse a source; older builds omit ``kind`` on tool sources."""
    kind = data.get("kind", "tool")
    if kind == "tool":
        return ToolSource(_str(data, "toolName"), _str(data, "callId"), _str(data, "label"))
    if kind == "session-reference":
        return SessionReferenceSource(_str(data, "sessionId"), _str(data, "label"))
    raise ValueError(f"unknown spill source kind {kind!r}")


@dataclass(frozen=True)
class SaveTextSpill:
    """One save request: the full ``content`` is persisted verbatim as UTF-8."""

    owner: SpillOwner
    source: SpillSource
    suggested_name: str
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "owner": self.owner.to_json(),
            "source": self.source.to_json(),
            "suggestedName": self.suggested_name,
            "content": self.content,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SaveTextSpill:
        return cls(
            owner=SpillOwner.from_json(_map(data, "owner")),
            source=source_from_json(_map(data, "source")),
            suggested_name=_str(data, "suggestedName"),
            content=_str(data, "content"),
        )


@dataclass(frozen=True)
class SpillRef:
    """What a save returns: where the text is, its exact UTF-8 size, and how to read it."""

    locator: Locator
    bytes: int
    retrieval_hint: str

    def to_json(self) -> dict[str, Any]:
        return {"locator": self.locator, "bytes": self.bytes, "retrievalHint": self.retrieval_hint}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpillRef:
        size = data.get("bytes")
        if not isinstance(size, int) or isinstance(size, bool):
            raise ValueError("SpillRef.bytes must be an integer")
        return cls(Locator(_str(data, "locator")), size, _str(data, "retrievalHint"))


class SpillStore(abc.ABC):
    """The seam: one store per context; storage ownership never authorises retrieval."""

    @abc.abstractmethod
    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        """Persist ``request.content``; raise :class:`SpillStoreError` on a real failure."""


def _str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string")
    return value


def _map(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise ValueError(f"{key} must be an object")
    return value
