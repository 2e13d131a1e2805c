"""The tool-spill notice (FORMAT.md §3): writing it, recognising it, parsing it back.

A codec with no storage or policy in it: the policy writes notices through it, the
inspector reads logged ones through it.

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

import re
from dataclasses import dataclass
from typing import Any, Literal

#: The local store's retrieval hint, the ``H`` its notices end with (the S3 store has its own).
RETRIEVAL_HINT = "Use read with offset/limit, or grep this path to search within it."
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
    while True:
        nxt = text.find(SEPARATOR + OPEN, start)
        # The candidate is text[start:end]; searched in place, never copied (a tool result
        # can be a 100 MB line, and every copy of it is paid in page faults).
        end = len(text) - len(CLOSE) if nxt < 0 else nxt
        location = text.find(LOCATION, start + len(OPEN), end)
        if text.startswith(OPEN, start, end) and location >= 0:
            accepted = accept(text[start + len(OPEN) : location])
            if accepted is not None and accepted is not False:
                after = location + len(LOCATION)
                # Upstream answers here either way; no later candidate can have a ". " after it.
                return (start, after, accepted) if text.find(GUIDANCE_SEPARATOR, after) >= 0 else None
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
