"""Exact search inside one artifact: a transcript's messages or a tool output.

The retrieval hint says "grep this path", but a phrase crossing a 64-code-point fragment
line, or holding a quote, a backslash, a newline or a lone surrogate, is not in a
transcript as bytes. This module finds it anyway, and fast:

* A transcript message's fragment lines are read a window at a time (whole lines, with
  ``pread``) and *de-framed*: the leading ``"`` and trailing ``"\\n`` of each line are
  removed (``"\\n"`` cannot occur inside a fragment, so one ``bytes.replace`` does it).
  What is left is the message's JSON-escaped text as the writer escaped it.
* A fixed string is escaped the way the writer escapes (:func:`js_json_string`) and
  searched as bytes; a candidate counts only where it starts on an escape boundary (not
  after an odd run of backslashes, not inside ``\\uXXXX``). Windows carry their last
  lines into the next one, so a phrase across a window edge is found once.
* Only around hits is text decoded: code-point and UTF-8 byte offsets are counted from
  the last known position (a message without hits is never decoded).
* Case-insensitive and regex searches, and windows whose escapes are not the writer's
  canonical ones (``\\u0041``, ``\\/``, an escaped surrogate pair), decode the window and
  search the text; a regex match is at most :data:`REGEX_OVERLAP` code points long.
* Anything irregular in a transcript (a framing the fast path does not expect, a file cut
  off) sends it through the exact streaming parser, which also locates a malformation.

``start``/``end`` are code-point offsets into the message's exact text as
:func:`~spillscope.formats.transcript.read_transcript` returns it (a lone surrogate and
an astral character are one code point each); ``byte_start``/``byte_end`` the same span
in UTF-8 bytes (what the seen ranges are measured in).

File access goes through :func:`open_source`, :func:`read_range`, :func:`source_size`
and :func:`close_source` only, so another backend can replace them.

This module keeps only the entry points' names and re-exports what moved, each job in its own
module: the file access in :mod:`.search_source`, the pattern in :mod:`.search_pattern`, the
records in :mod:`.search_records`, the escaped-stream helpers in :mod:`.search_escapes`, the
per-message window search in :mod:`.search_message`, the transcript and tool-output searches in
:mod:`.search_transcript` and :mod:`.search_tool`, the exact fallback in :mod:`.search_exact`.
Constants re-exported here are copies: to change :data:`WINDOW` for a test, set it on the
modules that read it (:mod:`.search_transcript`, :mod:`.search_tool`).
"""

from __future__ import annotations

from .search_escapes import at_escape_boundary, canonical_escapes, decode_escaped, decode_utf8, deframe
from .search_pattern import REGEX_OVERLAP, Pattern, PatternError
from .search_records import CONTEXT, MAX_HITS, TOOL_OUTPUT, TRANSCRIPT, ArtifactEvent, MessageHit, _Located
from .search_source import WINDOW, close_source, open_source, read_range, source_size
from .search_tool import search_tool_output
from .search_transcript import search_message_region, search_transcript

__all__ = [
    "CONTEXT", "MAX_HITS", "REGEX_OVERLAP", "TOOL_OUTPUT", "TRANSCRIPT", "WINDOW",
    "ArtifactEvent", "MessageHit", "Pattern", "PatternError",
    "at_escape_boundary", "canonical_escapes", "close_source", "decode_escaped", "decode_utf8", "deframe",
    "open_source", "read_range", "search_message_region", "search_tool_output", "search_transcript",
    "source_size",
    # Not public, but imported from here (the hit variant of ArtifactEvent): kept importable.
    "_Located",
]
