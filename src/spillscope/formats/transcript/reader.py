"""Reading a transcript: :func:`iter_transcript`, :func:`read_transcript`, :func:`parse_transcript`.

The entry points over the streaming parser in :mod:`.parser`: open a path, bytes or a
stream, and collect the events into exact message texts (a surrogate pair split across
fragments is joined the way JavaScript string concatenation would join it). The cheap "is
this a transcript at all" check, which needs no parser, is :func:`.layout.departs_from_title`.
"""

from __future__ import annotations

import io
import os
from typing import BinaryIO, Iterator, Union

from ...storage import open_stream
from ...util.text import js_normalize, js_utf8
from .layout import DEFAULT_MAX_LINE_BYTES
from .parser import _Parser
from .records import Event, Fragment, Incomplete, MessageEnd, MessageStart, Transcript, TranscriptMessage, TranscriptMetadata

Source = Union[str, bytes, os.PathLike[str]]


def _open(source: Source) -> tuple[BinaryIO, str]:
    if isinstance(source, (bytes, bytearray)):
        return io.BytesIO(bytes(source)), "<bytes>"
    path = os.fspath(source)
    return open_stream(path), path


def iter_transcript(
    source: Source | BinaryIO, *, name: str | None = None, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[Event]:
    """Parse a transcript (a path, its bytes, or a binary stream) as a stream of events."""
    if isinstance(source, (str, bytes, bytearray, os.PathLike)):
        stream, path = _open(source)
    else:
        yield from _Parser(source, name or "<stream>", max_line_bytes).run()
        return
    with stream:
        yield from _Parser(stream, name or path, max_line_bytes).run()



def _join(parts: list[str], had_surrogates: bool) -> str:
    text = "".join(parts)
    # Halves of a pair split across fragments join as in JavaScript.
    return js_normalize(text) if had_surrogates else text


def read_transcript(source: Source, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Transcript:
    """Read a whole transcript (a path, or its bytes) into exact message texts."""
    meta: TranscriptMetadata | None = None
    messages: list[TranscriptMessage] = []
    parts: list[str] = []
    surrogates = False
    current: MessageStart | None = None
    incomplete: Incomplete | None = None
    path = "<bytes>" if isinstance(source, (bytes, bytearray)) else os.fspath(source)
    for ev in iter_transcript(source, max_line_bytes=max_line_bytes):
        if isinstance(ev, Fragment):
            parts.append("".join(ev.texts))
            surrogates = surrogates or ev.surrogates
        elif isinstance(ev, MessageStart):
            current, parts, surrogates = ev, [], False
        elif isinstance(ev, MessageEnd):
            assert current is not None
            messages.append(TranscriptMessage(current.index, current.role, _join(parts, surrogates), current.line))
            current = None
        elif isinstance(ev, TranscriptMetadata):
            meta = ev
        else:
            incomplete = ev
            if current is not None and parts:
                messages.append(TranscriptMessage(current.index, current.role, _join(parts, surrogates), current.line))
    return Transcript(path, meta, tuple(messages), incomplete)


def parse_transcript(text: str) -> Transcript:
    """Read a transcript given as text (as Node would have written it)."""
    return read_transcript(js_utf8(text))
