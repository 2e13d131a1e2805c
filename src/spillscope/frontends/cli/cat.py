"""``spillscope cat``: an artifact's exact text, streamed, as UTF-8 or as ASCII JSON.

A transcript is reassembled from its fragment lines; a tool output is its bytes. Nothing
is held whole, so a file of gigabytes streams. The kind follows the inspector's rule: a
transcript's name and a start that does not depart from its title, or any other file
whose content is a transcript.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

from ..format import count
from ...util.fs import open_stream, read_head
from ...util.text import js_utf8, lone_surrogate_count, visible
from ...inspect.scan.listing import ascii_json
from ...inspect.scan.tree import classify_name

if TYPE_CHECKING:
    from ...formats.transcript.records import Incomplete

_encode_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii


class CatError(Exception):
    """The artifact cannot be shown as asked (gone, not a file, no such message)."""


def artifact_kind(path: str) -> str:
    from ...formats.transcript.reader import departs_from_title

    kind = classify_name(os.path.basename(path))[1]
    if kind == "session-reference-transcript" and departs_from_title(path):
        return "tool-output"  # named like a transcript, but its content is not one
    return kind


def _is_transcript(path: str) -> bool:
    try:
        return read_head(path, 64).startswith("## Referenced session".encode())
    except OSError:
        return False


def cat(path: str, out: TextIO, *, message: int | None = None, as_json: bool = False, raw: bool = False,
        max_line_bytes: int) -> int:
    """Write the artifact at ``path`` to ``out``; returns the exit status (0, 1 malformed,
    2 no such message). Raises :class:`CatError` when it cannot be read at all."""
    try:
        kind = artifact_kind(path)
        if kind == "session-reference-transcript" or _is_transcript(path):
            return _Transcript(path, kind, out, message, raw, max_line_bytes).run(as_json)
        return _cat_file(path, kind, out, message, as_json, raw)
    except BrokenPipeError:
        raise
    except FileNotFoundError:
        raise CatError(f"{path}: no such artifact (expired or never written)") from None
    except OSError as exc:
        raise CatError(f"{path}: {exc.strerror or exc}") from None


class _Text:
    """Plain text to ``out`` as UTF-8: controls made visible on a terminal (unless raw),
    lone surrogates as U+FFFD, counted for one warning at the end."""

    def __init__(self, out: TextIO, raw: bool) -> None:
        self.out = out
        self.tty = out.isatty()
        self.visible = self.tty and not raw
        self.lone = 0
        self.line_open = False  # the last text written did not end a line

    def emit(self, text: str) -> None:
        if not text:
            return
        self.lone += lone_surrogate_count(text)
        self.line_open = not text.endswith("\n")
        if self.visible:
            text = visible(text)
        buffer = getattr(self.out, "buffer", None)
        if buffer is not None:
            self.out.flush()
            buffer.write(js_utf8(text))
            buffer.flush()
        else:
            self.out.write(js_utf8(text).decode("utf-8"))

    def note(self, message: str) -> None:
        """A message on stderr, on a line of its own even when both go to one terminal."""
        self.out.flush()
        if self.line_open and self.tty and sys.stderr.isatty():
            sys.stderr.write("\n")
            self.line_open = False
        sys.stderr.write(message + "\n")

    def warn(self) -> None:
        if not self.lone:
            return
        if self.visible:
            # Shown as ⟨lone U+D800⟩ here; only piped or --raw output replaces them.
            self.note(f"spillscope: note: {self.lone} lone surrogate(s) shown as ⟨lone U+XXXX⟩; written to a "
                      "file or pipe they become U+FFFD (use --json to keep them)")
        else:
            self.note(f"spillscope: warning: {self.lone} lone surrogate(s) written as U+FFFD "
                      "(use --json to keep them)")


def _cat_file(path: str, kind: str, out: TextIO, message: int | None, as_json: bool, raw: bool) -> int:
    """A tool output: streamed in chunks, so a huge file is never held whole."""
    if message is not None and message != 1:
        raise CatError(f"{path}: no message {message}: a tool output is one message")
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    with open_stream(path) as f:
        if as_json:
            out.write('{"path": ' + _encode_ascii(path) + ', "kind": ' + _encode_ascii(kind)
                      + ', "metadata": null, "messages": [{"index": 1, "role": null, "text": "')
            while chunk := f.read(1 << 20):
                out.write(_encode_ascii(decoder.decode(chunk))[1:-1])
            out.write(_encode_ascii(decoder.decode(b"", final=True))[1:-1] + '"}], "complete": true}\n')
            return 0
        text = _Text(out, raw)
        while chunk := f.read(1 << 20):
            text.emit(decoder.decode(chunk))
        text.emit(decoder.decode(b"", final=True))
        text.warn()
    return 0


class _Transcript:
    """One transcript, streamed as JSON or as text."""

    def __init__(self, path: str, kind: str, out: TextIO, want: int | None, raw: bool, max_line_bytes: int) -> None:
        self.path, self.kind, self.out, self.want = path, kind, out, want
        self.raw, self.max_line_bytes = raw, max_line_bytes
        self.last = 0  # messages are numbered 1..n in order (anything else is malformed)
        self.writer = _Text(out, raw)

    def events(self) -> Iterator[Any]:
        from ...formats.transcript.records import MessageStart
        from ...formats.transcript.reader import iter_transcript

        for ev in iter_transcript(self.path, max_line_bytes=self.max_line_bytes):
            if isinstance(ev, MessageStart):
                self.last = ev.index
            yield ev

    def run(self, as_json: bool) -> int:
        from ...formats.transcript.records import TranscriptError

        try:
            incomplete = self.json() if as_json else self.text()
        except TranscriptError as exc:
            self.writer.note(f"spillscope: malformed artifact: {visible(str(exc), one_line=True)}")
            return 1
        if incomplete is not None:
            self.writer.note(f"spillscope: warning: incomplete artifact ({visible(self.path, one_line=True)}:{incomplete.line}: {incomplete.reason})")
        if self.want is not None and self.want > self.last:
            self.writer.note(f"spillscope: no message {self.want}: the transcript has {count(self.last, 'message')}")
            return 2
        return 0

    def json(self) -> Incomplete | None:
        from ...formats.transcript.records import Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, TranscriptMetadata

        write, want = self.out.write, self.want
        incomplete = None
        first = True
        open_message = False
        headed = False

        def head(metadata: str) -> None:
            nonlocal headed
            write('{\n  "path": ' + _encode_ascii(self.path) + ',\n  "kind": ' + _encode_ascii(self.kind)
                  + ',\n  "metadata": ' + metadata + ',\n  "messages": [\n')
            headed = True

        try:
            for ev in self.events():
                if isinstance(ev, Fragment):
                    if open_message:
                        write(_encode_ascii("".join(ev.texts))[1:-1])
                elif isinstance(ev, MessageStart):
                    if want is None or ev.index == want:
                        write(("" if first else ",\n") + f'    {{"index": {ev.index}, "role": {_encode_ascii(ev.role)}, "text": "')
                        first, open_message = False, True
                elif isinstance(ev, MessageEnd):
                    if open_message:
                        write('"}')
                        open_message = False
                elif isinstance(ev, TranscriptMetadata):
                    head(json.dumps(ev.to_json(), ensure_ascii=True))
                elif isinstance(ev, Incomplete):
                    incomplete = ev
                    if open_message:
                        write('"}')
                        open_message = False
        except TranscriptError as exc:
            # Still one whole document: what was read before the bad line, and where it is.
            # (A message cut off by the error carries the text read up to it.)
            if open_message:
                write('"}')
            if not headed:
                head("null")
            write('\n  ],\n  "complete": false,\n  "error": ' + ascii_json({"line": exc.line, "reason": exc.reason}) + "\n}\n")
            raise
        if not headed:  # cut off before its metadata: still one whole JSON document
            head("null")
        write('\n  ],\n  "complete": ' + ("false" if incomplete else "true") + "\n}\n")
        return incomplete

    def text(self) -> Incomplete | None:
        from ...formats.transcript.records import Fragment, Incomplete, MessageEnd, MessageStart

        out, want = self.writer, self.want
        incomplete = None
        emitting = False
        parts: list[str] = []
        try:
            for ev in self.events():
                if isinstance(ev, Fragment):
                    if emitting:
                        parts.append("".join(ev.texts))
                        if len(parts) >= 64:
                            out.emit("".join(parts))
                            parts.clear()
                elif isinstance(ev, MessageStart):
                    emitting = want is None or ev.index == want
                    if emitting and want is None:
                        out.emit(f"{'' if ev.index == 1 else chr(10)}### Message {ev.index}: {ev.role}\n\n")
                elif isinstance(ev, (MessageEnd, Incomplete)):
                    if isinstance(ev, Incomplete):
                        incomplete = ev
                    if emitting and parts:
                        out.emit("".join(parts))
                        parts.clear()
                    if want is None and emitting:
                        out.emit("\n")
                    emitting = False
        finally:
            out.warn()
        return incomplete
