"""Checking a reference's omission notice against its saved transcript (FORMAT.md §7).

:func:`check_notice` recomputes ``originalMessages``, ``omittedMessages`` and
``omittedBytes`` from the preview entry and the transcript, checks each shortened
preview message is head+tail of its original with the right N, and that the notice's
``bytes`` equals the artifact's size. Every disagreement is returned as a
:class:`Disagreement` (field, logged value, recomputed value).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..util.text import js_utf8
from ..formats.transcript.records import Transcript, TranscriptMetadata
from .join import join_offset
from .preview import MessageView, PreviewText, marker_count, shortened_omission


@dataclass(frozen=True)
class Disagreement:
    """A field where a logged reference notice and its recount differ."""

    field: str
    logged: Any
    recomputed: Any
    detail: str = ""


@dataclass(frozen=True)
class Recomputed:
    """A reference's counts recomputed from its transcript, and where each preview message came from."""

    original_messages: int
    retained_messages: int
    omitted_messages: int
    omitted_bytes: int
    #: For each preview message, the 1-based transcript message it came from (None if unmatched).
    sources: tuple[int | None, ...]
    #: For each shortened preview message, the code point in its text where its head ends
    #: and its tail begins, found against the original (None: whole, emptied or unmatched).
    joins: tuple[int | None, ...] = ()


def keep_bytes_for(conversation: Sequence[Any]) -> int:
    """How many bytes of each end of a message the checker needs for this preview
    (3 more than the longest: a stripped BOM shifts the head or the tail piece)."""
    sizes = [len(js_utf8(m["text"])) for m in conversation if isinstance(m, Mapping) and isinstance(m.get("text"), str)]
    return max(sizes, default=0) + 4


def digest_transcript(
    path: Any, keep: int, max_line_bytes: int | None = None, on_text: Callable[[int], None] | None = None,
) -> tuple[Any, list[MessageView], Any]:
    """Stream an artifact into (metadata, message views, incomplete) with bounded memory.

    ``on_text(n)`` is told of each batch of ``n`` message-text bytes decoded (a progress
    measure: close to, not equal to, the file bytes read)."""
    from ..formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
    from ..formats.transcript.records import Fragment, MessageEnd, MessageStart, TranscriptMetadata
    from ..formats.transcript.reader import iter_transcript

    meta, views, incomplete = None, [], None
    role, nbytes, head, tail = "", 0, bytearray(), bytearray()

    def close() -> None:
        views.append(MessageView(role, nbytes, bytes(head), bytes(tail)))

    current = False
    for ev in iter_transcript(path, max_line_bytes=max_line_bytes or DEFAULT_MAX_LINE_BYTES):
        if isinstance(ev, Fragment):
            data = js_utf8("".join(ev.texts))
            nbytes += len(data)
            if on_text is not None:
                on_text(len(data))
            if len(head) < keep:
                head += data[: keep - len(head)]
            tail += data
            if len(tail) > 2 * keep + 256:
                del tail[: len(tail) - keep]
        elif isinstance(ev, MessageStart):
            role, nbytes, head, tail, current = ev.role, 0, bytearray(), bytearray(), True
        elif isinstance(ev, MessageEnd):
            close()
            current = False
        elif isinstance(ev, TranscriptMetadata):
            meta = ev
        else:
            incomplete = ev
            if current and nbytes:
                close()
    return meta, views, incomplete


def recompute(conversation: Sequence[Mapping[str, Any]], messages: Transcript | Sequence[MessageView]) -> tuple[Recomputed, list[Disagreement]]:
    full: Sequence[MessageView] = (
        [MessageView.of_text(m.role, m.text) for m in messages.messages] if isinstance(messages, Transcript) else messages
    )
    problems: list[Disagreement] = []
    sources: list[int | None] = [None] * len(conversation)
    omitted_by_item: list[int] = [0] * len(conversation)
    used: set[int] = set()

    measured: dict[int, PreviewText] = {}

    def try_match(i: int, j: int) -> bool:
        item = conversation[i]
        text = item.get("text") if isinstance(item, Mapping) else None
        if not isinstance(text, str) or item.get("role") != full[j].role:
            return False
        if i not in measured:
            measured[i] = PreviewText(text)
        n = shortened_omission(measured[i], full[j])
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
                                         f"marker N disagrees with transcript message {(sources[i] or 0) + 1}"))

    dropped = [k for k in range(len(full)) if k not in used]
    omitted_bytes = sum(full[k].nbytes for k in dropped) + sum(omitted_by_item)
    joins: list[int | None] = []
    for i, item in enumerate(conversation):
        src, text = sources[i], item.get("text") if isinstance(item, Mapping) else None
        found = join_offset(text, full[src]) if src is not None and isinstance(text, str) and omitted_by_item[i] else None
        joins.append(found[0] if found else None)
    return (
        Recomputed(len(full), len(conversation), len(dropped), omitted_bytes,
                   tuple(None if s is None else s + 1 for s in sources), tuple(joins)),
        problems,
    )


def check_notice(
    preview_entry: Mapping[str, Any],
    notice: Mapping[str, Any],
    transcript: Transcript | Sequence[MessageView],
    *,
    artifact_size: int | None = None,
    stats: Mapping[str, Any] | None = None,
    metadata: TranscriptMetadata | None = None,
) -> tuple[Recomputed, list[Disagreement]]:
    """Recompute the counts and list every disagreement; see the module docstring.

    ``transcript`` is a parsed :class:`Transcript`, or message views from
    :func:`digest_transcript` (then pass its ``metadata``)."""
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
    meta = transcript.metadata if isinstance(transcript, Transcript) else metadata
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
