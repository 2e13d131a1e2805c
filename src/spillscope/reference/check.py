"""Checking a reference's omission notice against its saved transcript (FORMAT.md §7).

:func:`check_notice` recomputes ``originalMessages``, ``omittedMessages`` and
``omittedBytes`` from the preview entry and the transcript, checks each shortened
preview message is head+tail of its original with the right N, and that the notice's
``bytes`` equals the artifact's size. Every disagreement is returned as a
:class:`Disagreement` (field, logged value, recomputed value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .._text import js_utf8
from .transcript import Transcript

_MARKER = re.compile(r"\n\[… omitted (0|[1-9][0-9]*) UTF-8 bytes …\]\Z")


@dataclass(frozen=True)
class Disagreement:
    field: str
    logged: Any
    recomputed: Any
    detail: str = ""


@dataclass(frozen=True)
class Recomputed:
    original_messages: int
    retained_messages: int
    omitted_messages: int
    omitted_bytes: int
    #: For each preview message, the 1-based transcript message it came from (None if unmatched).
    sources: tuple[int | None, ...]


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on slice equality: C-speed comparisons
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def shortened_omission(preview_text: str, original: str) -> int | None:
    """N if ``preview_text`` is a valid retention of ``original`` (identical → 0), else None."""
    if preview_text == original:
        return 0
    orig = js_utf8(original)
    if preview_text == "":
        return len(orig)
    m = _MARKER.search(preview_text)
    if m is None:
        return None
    kept = js_utf8(preview_text[: m.start()])
    if len(kept) > len(orig):
        return None
    if _common_prefix(kept, orig) + _common_suffix(kept, orig) < len(kept):
        return None
    return len(orig) - len(kept)


def marker_count(preview_text: str) -> int | None:
    m = _MARKER.search(preview_text)
    return int(m.group(1)) if m else None


def recompute(conversation: Sequence[Mapping[str, Any]], transcript: Transcript) -> tuple[Recomputed, list[Disagreement]]:
    full = transcript.messages
    problems: list[Disagreement] = []
    sources: list[int | None] = [None] * len(conversation)
    omitted_by_item: list[int] = [0] * len(conversation)
    used: set[int] = set()

    def try_match(i: int, j: int) -> bool:
        item = conversation[i]
        text = item.get("text") if isinstance(item, Mapping) else None
        if not isinstance(text, str) or item.get("role") != full[j].role:
            return False
        n = shortened_omission(text, full[j].text)
        if n is None:
            return False
        sources[i], omitted_by_item[i] = j, n
        used.add(j)
        return True

    # The newest message is never dropped: the last preview item is the last message.
    last_ok = bool(conversation) and bool(full) and try_match(len(conversation) - 1, len(full) - 1)
    j = 0
    for i in range(len(conversation) - (1 if last_ok else 0)):
        limit = len(full) - (1 if last_ok else 0)
        while j < limit and not try_match(i, j):
            j += 1
        if j >= limit:
            problems.append(Disagreement(f"conversation[{i}]", "preview message", None,
                                         "preview message matches no transcript message (not identical, not a head+tail of it)"))
            continue
        j += 1

    for i, item in enumerate(conversation):
        if sources[i] is None or not isinstance(item, Mapping):
            continue
        logged_n = marker_count(str(item.get("text", "")))
        if logged_n is not None and logged_n != omitted_by_item[i]:
            problems.append(Disagreement(f"conversation[{i}].omitted", logged_n, omitted_by_item[i],
                                         f"marker N disagrees with transcript message {sources[i] + 1}"))

    dropped = [k for k in range(len(full)) if k not in used]
    omitted_bytes = sum(len(js_utf8(full[k].text)) for k in dropped) + sum(omitted_by_item)
    return (
        Recomputed(len(full), len(conversation), len(dropped), omitted_bytes,
                   tuple(None if s is None else s + 1 for s in sources)),
        problems,
    )


def check_notice(
    preview_entry: Mapping[str, Any],
    notice: Mapping[str, Any],
    transcript: Transcript,
    *,
    artifact_size: int | None = None,
    stats: Mapping[str, Any] | None = None,
) -> tuple[Recomputed, list[Disagreement]]:
    """Recompute the counts and list every disagreement; see the module docstring."""
    conversation = preview_entry.get("conversation")
    if not isinstance(conversation, list):
        conversation = []
    result, problems = recompute(conversation, transcript)
    for key, value in (("omittedMessages", result.omitted_messages), ("omittedBytes", result.omitted_bytes)):
        if notice.get(key) != value:
            problems.append(Disagreement(key, notice.get(key), value, "notice vs transcript"))
    if stats is not None:
        for key, value in (
            ("originalMessages", result.original_messages),
            ("retainedMessages", result.retained_messages),
            ("omittedMessages", result.omitted_messages),
            ("omittedBytes", result.omitted_bytes),
        ):
            if stats.get(key) != value:
                problems.append(Disagreement(f"stats.{key}", stats.get(key), value, "source metadata vs transcript"))
    meta = transcript.metadata
    if meta is not None:
        if notice.get("sessionId") != meta.session_id:
            problems.append(Disagreement("sessionId", notice.get("sessionId"), meta.session_id, "notice vs transcript metadata"))
        if notice.get("capturedThroughSeq") != meta.captured_through_seq:
            problems.append(Disagreement("capturedThroughSeq", notice.get("capturedThroughSeq"),
                                         meta.captured_through_seq, "notice vs transcript metadata"))
    snapshot = notice.get("fullSnapshot")
    if artifact_size is not None and isinstance(snapshot, Mapping) and snapshot.get("bytes") != artifact_size:
        problems.append(Disagreement("bytes", snapshot.get("bytes"), artifact_size, "notice vs artifact size on disk"))
    return result, problems
