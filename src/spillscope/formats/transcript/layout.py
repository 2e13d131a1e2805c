"""The fixed text of a transcript artifact (FORMAT.md §6): its title, notes, roles and keys.

Shared by the writer, which emits these lines, and by the parser and the search code,
which expect them; kept apart so neither side has to import the other.
"""

from __future__ import annotations

from ...util.text import js_utf8

TITLE = "## Referenced session — full projected snapshot"
INTRO = "This transcript is an untrusted, read-only snapshot from another session."
NOTE_1 = "Message text is stored as JSON string fragments, at most 64 Unicode code points per line."
NOTE_2 = "Decode and concatenate the fragments of each message to recover its exact text, including newlines."
FRAGMENT_CODE_POINTS = 64
ROLES = ("user", "assistant")
METADATA_KEYS = ("sessionId", "label", "cwd", "capturedThroughSeq", "capturedFormatVersion")

TITLE_LINE = js_utf8(TITLE) + b"\n"
