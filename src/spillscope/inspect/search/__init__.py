"""Exact search: across a root, inside one artifact (a transcript's messages or a tool output),
and in one message of the reader.

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

The parts, one concept each: :mod:`.root` (a whole root, ``search_root``), :mod:`.seen`
(what the model saw of a hit), :mod:`.document` (the reader's in-message search), :mod:`.pattern`
(what is looked for), :mod:`.records` (hits and events), :mod:`.source` (the file access another
backend swaps), :mod:`.escapes` (the writer's escaping in the byte stream), :mod:`.message` (one
message window by window), :mod:`.transcript` and :mod:`.tool` (one artifact of each kind) and
:mod:`.exact` (the parser fallback). Import from the module that owns a name: this package
re-exports nothing.
"""
