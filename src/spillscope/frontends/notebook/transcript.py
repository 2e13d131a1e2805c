"""The notebook view of one saved transcript: messages with roles, long texts collapsed.

Separate because a reference opens one and the inspector opens one by path."""

from __future__ import annotations

from typing import Any

from ...util.text import visible
from ...formats.transcript.records import Transcript
from .render import _wrap, esc

#: Messages longer than this are collapsed (with their size) in the HTML view.
COLLAPSE_CHARS = 2000


class TranscriptView:
    """A saved transcript: messages with roles; long texts collapsed with their size."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.to_records()

    def text(self, n: int) -> str:
        """The exact text of message ``n`` (1-based); ``IndexError`` saying the range otherwise."""
        messages = self.transcript.messages
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"message number must be an int, not {type(n).__name__}")
        if not 1 <= n <= len(messages):
            have = f"messages 1 to {len(messages)}" if messages else "no messages"
            raise IndexError(f"no message {n}: this transcript has {have} (numbered from 1)")
        return messages[n - 1].text

    def to_records(self) -> list[dict[str, Any]]:
        return [{"index": m.index, "role": m.role, "text": m.text, "chars": len(m.text)} for m in self.transcript.messages]

    def __repr__(self) -> str:
        meta = self.transcript.metadata
        head = f"Transcript {visible(self.transcript.path, one_line=True)} ({len(self.transcript.messages)} messages"
        head += ")" if self.transcript.complete else f", INCOMPLETE: {self.transcript.incomplete.reason})"  # type: ignore[union-attr]
        lines = [head, f"  session {visible(meta.session_id, one_line=True)} label {visible(meta.label, one_line=True)}" if meta else "  (no metadata)"]
        for m in self.transcript.messages:
            short = visible(m.text[:120], one_line=True) + ("…" if len(m.text) > 120 else "")
            lines.append(f"  [{m.index}] {m.role}: {short}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        meta = self.transcript.metadata
        parts = [f"<b>Transcript</b> {esc(self.transcript.path)}"]
        if meta is not None:
            parts.append(f"<div>session <code>{esc(meta.session_id)}</code> label <code>{esc(meta.label)}</code> "
                         f"captured through seq {esc(meta.captured_through_seq)}</div>")
        if not self.transcript.complete:
            parts.append(f"<div class='bad'>incomplete: {esc(self.transcript.incomplete.reason)}</div>")  # type: ignore[union-attr]
        for m in self.transcript.messages:
            body = f"<pre>{esc(m.text)}</pre>"
            if len(m.text) > COLLAPSE_CHARS:
                body = (f"<details><summary>{len(m.text)} characters, {len(m.text.encode('utf-8', 'replace'))} bytes"
                        f" — show</summary>{body}</details>")
            parts.append(f"<div><b>Message {m.index}: {esc(m.role)}</b>{body}</div>")
        return _wrap("".join(parts))
