"""The tool-output spill policy (FORMAT.md §3) and the spill notice it writes.

:class:`SpillPolicy` bounds an all-text tool result to ``max_inline_bytes``: the full text
is saved through a :class:`SpillStore`, and the model sees a head/tail preview plus
``(Omitted N bytes. Full formatted result stored at: <locator>. <hint>)``. It is best
effort: without an owner or a store, when the save fails, or when even the notice
would exceed the cap, the original result is kept and a warning is reported.

:func:`has_spill_notice` answers exactly as the reference's ``hasSpillNotice`` (the
standard notice only). :func:`parse_spill_notice` is the inspector's lenient reader: it
also accepts the dialects of later forks and says which it saw (``ToolSpillNotice.dialects``):

- ``standard`` -- ``(Omitted N bytes. Full formatted result stored at: L. H)``, also with
  no count at all (``( Full formatted ...``);
- ``more-bytes`` -- the count-less ``More bytes were omitted.`` form;
- ``omitted-images`` -- the token-priced fork's `` Omitted K images.`` after the bytes;
- ``gap`` -- the same fork's ``\n\n[...]\n\n`` between preview head and tail.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from .._jsnum import js_is_integer, js_number_text
from .._text import utf8_len
from .retention import retain_head_tail, split_budget
from .types import RETRIEVAL_HINT, SaveTextSpill, SpillOwner, SpillRef, SpillStore, ToolSource

log = logging.getLogger("spillscope.spill")

OPEN = "("
CLOSE = ")"
LOCATION = " Full formatted result stored at: "
GUIDANCE_SEPARATOR = ". "
SEPARATOR = "\n\n"
FORK_GAP = "\n\n[...]\n\n"
UNKNOWN_OMISSION = "More bytes were omitted."

OmittedKind = Literal["exact", "none", "unknown"]


def describe_omitted_bytes(count: int | None) -> str:
    """``describeOmitted(..., 'bytes')``: exact → ``Omitted N bytes.``, none → empty."""
    return "" if count is None else f"Omitted {count} bytes."


def format_spill_notice(omitted: int | None, locator: str, retrieval_hint: str, images: int = 0) -> str:
    image_notice = f" Omitted {images} images." if images > 0 else ""
    return f"{OPEN}{describe_omitted_bytes(omitted)}{image_notice}{LOCATION}{locator}{GUIDANCE_SEPARATOR}{retrieval_hint}{CLOSE}"


@dataclass(frozen=True)
class ToolSpillNotice:
    """A spill notice recognised at the end of a logged tool result."""

    preview: str
    omitted_kind: OmittedKind
    omitted_bytes: int | None
    omitted_images: int
    locator: str
    retrieval_hint: str
    #: False when the hint is not the local backend's, so the locator was cut at the
    #: first ``. `` after it (the only split the notice format allows then).
    hint_known: bool
    #: True for the fork variant whose preview has a ``[...]`` gap between head and tail.
    fork_gap: bool

    @property
    def dialects(self) -> tuple[str, ...]:
        """Which notice dialects this notice uses (see the module docstring); never empty."""
        out = []
        if self.omitted_kind == "unknown":
            out.append("more-bytes")
        if self.omitted_images:
            out.append("omitted-images")
        if self.fork_gap:
            out.append("gap")
        return tuple(out) or ("standard",)

    @property
    def dialect(self) -> str:
        """:attr:`dialects` as one label, e.g. ``standard`` or ``omitted-images+gap``."""
        return "+".join(self.dialects)


_EXACT = re.compile(r"Omitted (0|[1-9][0-9]*) bytes\.")
_IMAGES = re.compile(r" Omitted ([1-9][0-9]*) images\.\Z")
_MAX_SAFE = 2**53 - 1


def _parse_omission(text: str) -> tuple[OmittedKind, int | None, int] | None:
    images = 0
    m = _IMAGES.search(text)
    if m is not None:
        images = int(m.group(1))
        if images > _MAX_SAFE:
            return None
        text = text[: m.start()]
    if text == "":
        return "none", None, images
    if text == UNKNOWN_OMISSION:
        return "unknown", None, images
    m = _EXACT.fullmatch(text)
    if m is None or int(m.group(1)) > _MAX_SAFE:
        return None
    return "exact", int(m.group(1)), images


def _is_standard_omission(text: str) -> bool:
    """The reference's ``isOmission``: empty, ``More bytes were omitted.`` or a canonical
    safe-integer ``Omitted N bytes.`` (no images clause, no leading zeros)."""
    if text == "" or text == UNKNOWN_OMISSION:
        return True
    m = _EXACT.fullmatch(text)
    return m is not None and int(m.group(1)) <= _MAX_SAFE


def _find_notice(text: str, accept: Any) -> tuple[int, int, Any] | None:
    """The reference's scan: each candidate starts the text or follows ``\n\n(``; the
    first whose omission clause ``accept`` takes decides. (start, after-location, accepted)."""
    if not text.endswith(CLOSE):
        return None
    start = 0
    # Searched once: asking "is there a '. ' after here?" per candidate would rescan the
    # rest of the text for each of thousands of look-alikes (quadratic).
    last_guidance = text.rfind(GUIDANCE_SEPARATOR)
    while True:
        nxt = text.find(SEPARATOR + OPEN, start)
        end = len(text) - len(CLOSE) if nxt < 0 else nxt
        location = text.find(LOCATION, start + len(OPEN), end) if text.startswith(OPEN, start) else -1
        if location >= 0:
            accepted = accept(text[start + len(OPEN) : location])
            if accepted is not None and accepted is not False:
                after = location + len(LOCATION)
                # Upstream answers here either way; no later candidate can have a ". " after it.
                return (start, after, accepted) if last_guidance >= after else None
        if nxt < 0:
            return None
        start = nxt + len(SEPARATOR)


def has_spill_notice(text: str) -> bool:
    """Exactly the reference's ``hasSpillNotice``: does a complete *standard* spill notice
    end ``text``? Fork dialects (``Omitted K images.``) answer False, as upstream."""
    return _find_notice(text, _is_standard_omission) is not None


def parse_spill_notice(text: str, retrieval_hint: str = RETRIEVAL_HINT) -> ToolSpillNotice | None:
    """The notice that ends ``text``, or ``None``. Lenient: the reference's scan, but the
    omission clause may also carry the fork's images count (see the module docstring)."""
    found = _find_notice(text, _parse_omission)
    if found is None:
        return None
    start, after, omission = found
    return _build_notice(text, start, after, omission, retrieval_hint)


def _build_notice(
    text: str, start: int, after: int, omission: tuple[OmittedKind, int | None, int], retrieval_hint: str
) -> ToolSpillNotice:
    suffix = GUIDANCE_SEPARATOR + retrieval_hint + CLOSE
    body = text[after:]
    if body.endswith(suffix) and len(body) > len(suffix):
        locator, hint, known = body[: -len(suffix)], retrieval_hint, True
    else:
        cut = body.find(GUIDANCE_SEPARATOR)
        locator, hint, known = body[:cut], body[cut + len(GUIDANCE_SEPARATOR) : -len(CLOSE)], False
    preview = text[: start - len(SEPARATOR)] if start > 0 else ""
    kind, count, images = omission
    return ToolSpillNotice(preview, kind, count, images, locator, hint, known, FORK_GAP in preview)


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
