"""The tool-output spill policy (FORMAT.md §3).

:class:`SpillPolicy` bounds an all-text tool result to ``max_inline_bytes``: the full text
is saved through a :class:`SpillStore`, and the model sees a head/tail preview plus the
spill notice (formats/notices.py: ``(Omitted N bytes. Full formatted result stored at:
<locator>. <hint>)``). It is best effort: without an owner or a store, when the save
fails, or when even the notice would exceed the cap, the original result is kept and a
warning is reported. The notice's own format, recognition and parsing live in
:mod:`spillscope.formats.notices` (re-exported here).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..util.jsnum import js_is_integer, js_number_text
from ..util.text import utf8_len
from .retention import retain_head_tail, split_budget
from ..formats.notices import (CLOSE, FORK_GAP, GUIDANCE_SEPARATOR, LOCATION, OPEN, SEPARATOR, UNKNOWN_OMISSION,
                               OmittedKind, ToolSpillNotice, describe_omitted_bytes, format_spill_notice,
                               has_spill_notice, parse_spill_notice)
from .types import SaveTextSpill, SpillOwner, SpillRef, SpillStore, ToolSource

#: The policy's own names, and the notice codec's (formats/notices.py), which lived here.
__all__ = ["PolicyOutcome", "SpillPolicy", "flatten_plain_text", "replacement_text",
           "CLOSE", "FORK_GAP", "GUIDANCE_SEPARATOR", "LOCATION", "OPEN", "SEPARATOR", "UNKNOWN_OMISSION", "OmittedKind",
           "ToolSpillNotice", "describe_omitted_bytes", "format_spill_notice", "has_spill_notice", "parse_spill_notice"]

log = logging.getLogger("spillscope.spill")

@dataclass(frozen=True)
class PolicyOutcome:
    """What the model sees after the policy: ``content`` is the original or the replacement."""

    content: tuple[Any, ...]
    replaced: bool
    ref: SpillRef | None = None
    warnings: tuple[str, ...] = field(default=())

    @property
    def text(self) -> str | None:
        """The flattened text of ``content`` (``None`` when it holds a non-text block)."""
        return flatten_plain_text(self.content)


def flatten_plain_text(content: Sequence[Any]) -> str | None:
    """All-text content joined with nothing between blocks, or ``None`` if any block is not text."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            return None
    return "".join(parts)


class SpillPolicy:
    """Bounds oversized all-text tool results; see the module docstring."""

    def __init__(self, max_inline_bytes: int | float | None, store: SpillStore | None = None) -> None:
        # The reference's load-time check: ``undefined`` registers nothing (a no-op
        # policy); otherwise ``Number.isInteger(cap) && cap >= 0`` -- so 400.0 is a
        # valid cap and True, NaN, 1.5 or -1 are not.
        if max_inline_bytes is not None and (not js_is_integer(max_inline_bytes) or max_inline_bytes < 0):
            raise ValueError(
                f"spill-policy: maxInlineBytes must be a non-negative integer (got {js_number_text(max_inline_bytes)})"
            )
        #: ``None`` when the policy is disabled (every result is kept as it is).
        self.max_inline_bytes = None if max_inline_bytes is None else int(max_inline_bytes)
        self.store = store

    async def bound_result(
        self,
        *,
        tool_name: str,
        call_id: str,
        content: str | Sequence[Any],
        owner_session_id: str | None,
        nested: bool = False,
    ) -> PolicyOutcome:
        """The model-facing arm: never ``read`` (no read→spill→read loop), never nested calls."""
        blocks = _as_blocks(content)
        if nested or tool_name == "read":
            return PolicyOutcome(blocks, False)
        return await self._bound(blocks, tool_name, call_id, owner_session_id, "result")

    async def bound_dispatch_log(
        self, *, tool_name: str, sub_call_id: str, content: str | Sequence[Any], owner_session_id: str | None
    ) -> PolicyOutcome:
        """The durable dispatch-log arm: bounds ``read`` too, label ``dispatch``."""
        return await self._bound(_as_blocks(content), tool_name, sub_call_id, owner_session_id, "dispatch")

    async def _bound(
        self, blocks: tuple[Any, ...], tool_name: str, call_id: str, owner: str | None, label: str
    ) -> PolicyOutcome:
        cap = self.max_inline_bytes
        text = flatten_plain_text(blocks)
        if cap is None or text is None:
            return PolicyOutcome(blocks, False)
        total = utf8_len(text)
        if total <= cap:
            return PolicyOutcome(blocks, False)
        if owner is None:
            return _keep(blocks, f"spill-policy: no session owner for {tool_name} {label}; keeping the inline content")
        if self.store is None:
            return _keep(blocks, "spill-policy: no ctx.spillStore backend loaded; keeping the inline content")
        request = SaveTextSpill(SpillOwner(owner), ToolSource(tool_name, call_id, label), f"{tool_name}.txt", text)
        try:
            ref = await self.store.save_text(request)
        except Exception as exc:  # best effort: any store failure keeps the inline result
            return _keep(blocks, f"spill-policy: saveText failed for {tool_name}: Error: {exc}; keeping the inline content")
        replaced = replacement_text(text, total, ref, cap)
        if replaced is None:
            return _keep(
                blocks,
                f"spill-policy: spill notice for {tool_name} exceeds maxInlineBytes; keeping the inline content",
                ref,
            )
        return PolicyOutcome(({"type": "text", "text": replaced},), True, ref)


def replacement_text(text: str, total_bytes: int, ref: SpillRef, cap: int) -> str | None:
    """Preview + notice within ``cap`` bytes, or ``None`` when no within-cap replacement exists.

    The notice is reserved at its worst-case size (N = all bytes) plus the 2-byte join.
    """
    reserve = utf8_len(format_spill_notice(total_bytes, ref.locator, ref.retrieval_hint)) + 2
    head, tail = split_budget(max(0, cap - reserve))
    kept = retain_head_tail(text, head, tail)
    notice = format_spill_notice(kept.omitted_bytes, ref.locator, ref.retrieval_hint)
    out = f"{kept.text}{SEPARATOR}{notice}" if kept.text else notice
    return out if utf8_len(out) <= cap else None


def _as_blocks(content: str | Sequence[Any]) -> tuple[Any, ...]:
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    return tuple(content)


def _keep(blocks: tuple[Any, ...], warning: str, ref: SpillRef | None = None) -> PolicyOutcome:
    log.warning(warning)
    return PolicyOutcome(blocks, False, ref, (warning,))
