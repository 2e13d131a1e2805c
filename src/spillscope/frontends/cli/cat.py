"""``spillscope cat``: an artifact's exact text, streamed, as UTF-8 or as ASCII JSON.

A transcript is reassembled from its fragment lines; a tool output is its bytes. Nothing
is held whole, so a file of gigabytes streams. The kind follows the inspector's rule: a
transcript's name and a start that does not depart from its title, or any other file
whose content is a transcript.

What it writes is decided here, byte for byte (docs/cli.md): by default the text made
inert wherever it goes (it ends on a terminal through any pipe), each message ending a
line; ``--raw`` the exact bytes; ``--json`` ASCII JSON. An artifact cut off mid-write, or
changed while it is read, is said on stderr with exit 1 — never passed off as whole.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterator, TextIO

from ..format import count
from ...storage import read_head
from ...storage.checked import CheckedStream
from ...util.text import ascii_json, js_utf8, lone_surrogate_count, shown_count, visible
from ...inspect.scan.tree import classify_name

if TYPE_CHECKING:
    from ...formats.transcript.records import Incomplete

_encode_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii


class CatError(Exception):
    """The artifact cannot be shown as asked (gone, not a file, no such message)."""


def artifact_kind(path: str) -> str:
    from ...formats.transcript.layout import departs_from_title

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
    """Write the artifact at ``path`` to ``out``; returns the exit status (0, 1 malformed or
    incomplete — cut off mid-write, or changed while read —, 2 no such message). Raises
    :class:`CatError` when it cannot be read at all."""
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
    """Text to ``out`` as UTF-8. Unless ``raw``, made inert by the one escaping rule
    (:func:`~spillscope.util.text.visible`: controls and lone surrogates as visible
    symbols) wherever it goes — a terminal, or a pipe into one (``| head``) — and counted
    for one note at the end; ``raw`` writes controls as they are and lone surrogates as
    U+FFFD, counted for one warning."""

    def __init__(self, out: TextIO, raw: bool) -> None:
        self.out = out
        self.tty = out.isatty()
        self.raw = raw
        self.lone = 0
        self.shown = 0  # code points made visible (lone surrogates included)
        self.line_open = False  # the last text written did not end a line

    def emit(self, text: str) -> None:
        if not text:
            return
        self.lone += lone_surrogate_count(text)
        if not self.raw:
            self.shown += shown_count(text)
            text = visible(text)
        self.write(js_utf8(text))

    def write(self, data: bytes) -> None:
        if not data:
            return
        self.line_open = not data.endswith(b"\n")
        buffer = getattr(self.out, "buffer", None)
        if buffer is not None:
            self.out.flush()
            buffer.write(data)
            buffer.flush()
        else:
            self.out.write(data.decode("utf-8", "replace"))

    def note(self, message: str) -> None:
        """A message on stderr, on a line of its own even when both go to one terminal."""
        self.out.flush()
        if self.line_open and self.tty and sys.stderr.isatty():
            sys.stderr.write("\n")
            self.line_open = False
        sys.stderr.write(message + "\n")

    def warn(self) -> None:
        controls = self.shown - (0 if self.raw else self.lone)
        if controls:
            self.note(f"spillscope: note: {controls} control character(s) shown as visible symbols "
                      "(␛ ␀ ⏎ ⟨U+XXXX⟩); --raw writes them as they are")
        if not self.lone:
            return
        if self.raw:
            self.note(f"spillscope: warning: {self.lone} lone surrogate(s) written as U+FFFD "
                      "(use --json to keep them)")
        else:
            self.note(f"spillscope: note: {self.lone} lone surrogate(s) shown as ⟨lone U+XXXX⟩; "
                      "--raw writes them as U+FFFD, --json keeps them")


def _changed(text: _Text, path: str, change: str | None) -> int:
    """The warning and exit status for an artifact that changed while it was read."""
    if change is None:
        return 0
    text.note(f"spillscope: warning: incomplete artifact ({visible(path, one_line=True)}: {change})")
    return 1


def _cat_file(path: str, kind: str, out: TextIO, message: int | None, as_json: bool, raw: bool) -> int:
    """A tool output: streamed in chunks, so a huge file is never held whole. ``raw``: its
    bytes exactly; else its text (invalid UTF-8 as U+FFFD) made inert, then a newline."""
    if message is not None and message != 1:
        raise CatError(f"{path}: no message {message}: a tool output is one message")
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = _Text(out, raw)
    with CheckedStream(path) as source:
        f = source.stream
        if as_json:
            out.write('{"path": ' + _encode_ascii(path) + ', "kind": ' + _encode_ascii(kind)
                      + ', "metadata": null, "messages": [{"index": 1, "role": null, "text": "')
            while chunk := f.read(1 << 20):
                out.write(_encode_ascii(decoder.decode(chunk))[1:-1])
            out.write(_encode_ascii(decoder.decode(b"", final=True))[1:-1] + '"}]')
            change = source.change()
            out.write(', "complete": ' + ("true" if change is None else "false")
                      + ("" if change is None else ', "changedWhileRead": ' + _encode_ascii(change)) + "}\n")
            return _changed(text, path, change)
        if raw:
            while chunk := f.read(1 << 20):
                text.write(chunk)
        else:
            while chunk := f.read(1 << 20):
                text.emit(decoder.decode(chunk))
            text.emit(decoder.decode(b"", final=True))
            text.emit("\n")
        text.warn()
        return _changed(text, path, source.change())


class _Transcript:
    """One transcript, streamed as JSON or as text."""

    def __init__(self, path: str, kind: str, out: TextIO, want: int | None, raw: bool, max_line_bytes: int) -> None:
        self.path, self.kind, self.out, self.want = path, kind, out, want
        self.raw, self.max_line_bytes = raw, max_line_bytes
        self.last = 0  # messages are numbered 1..n in order (anything else is malformed)
        self.writer = _Text(out, raw)
        self.source: CheckedStream | None = None
        #: How the file changed while it was read (set once read to its end), else None.
        self.change: str | None = None

    def events(self) -> Iterator[Any]:
        from ...formats.transcript.records import MessageStart, TranscriptError
        from ...formats.transcript.reader import iter_transcript

        with CheckedStream(self.path) as source:
            try:
                for ev in iter_transcript(source.stream, name=self.path, max_line_bytes=self.max_line_bytes):
                    if isinstance(ev, MessageStart):
                        self.last = ev.index
                    yield ev
            except TranscriptError:
                # Malformed where it was read: perhaps because it was being rewritten.
                self.change = source.change(at_end=False)
                raise
            self.change = source.change()

    def run(self, as_json: bool) -> int:
        from ...formats.transcript.records import TranscriptError

        try:
            incomplete = self.json() if as_json else self.text()
        except TranscriptError as exc:
            self.writer.note(f"spillscope: malformed artifact: {visible(str(exc), one_line=True)}")
            _changed(self.writer, self.path, self.change)
            return 1
        status = _changed(self.writer, self.path, self.change)
        if incomplete is not None and not status:
            # (A file cut while read ends as a transcript cut off: the change says why.)
            self.writer.note(f"spillscope: warning: incomplete artifact ({visible(self.path, one_line=True)}:{incomplete.line}: {incomplete.reason})")
            status = 1
        if self.want is not None and self.want > self.last:
            self.writer.note(f"spillscope: no message {self.want}: the transcript has {count(self.last, 'message')}")
            return 2
        return status

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
        changed = "" if self.change is None else ',\n  "changedWhileRead": ' + _encode_ascii(self.change)
        write('\n  ],\n  "complete": ' + ("false" if incomplete or self.change else "true") + changed + "\n}\n")
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
                    if emitting and not (self.raw and want is not None):
                        out.emit("\n")  # each message's text ends a line (--message N --raw: exactly the text)
                    emitting = False
        finally:
            out.warn()
        return incomplete
