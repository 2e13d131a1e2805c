"""Ruling an artifact out on its raw bytes, before any decoding: the needle's encoded forms are
not in it, so neither is the needle.

* A tool output's text is its bytes decoded with replacement: an occurrence of a needle holding
  no U+FFFD is made of valid sequences only, so the needle's UTF-8 bytes are in the file.
* A transcript message's text is its fragment lines' JSON strings, decoded. Where the file holds
  no ``\\u`` and no ``\\/`` escape, every escape in it is one the writer spells as
  :func:`~spillscope.util.text.js_json_string` does, so a needle whole inside one fragment line is
  there as its escaped bytes. A needle of at most 65 code points crosses at most one line break
  (lines hold 64), and then one of its halves (the first ``ceil(n/2)`` code points, or the last
  ``ceil(n/2)``) lies whole on one line: the file must hold one of the two halves' escaped bytes.
  A file with ``\\u`` or ``\\/``, a longer needle, or a file cut off mid-write (which the search
  reports as a finding) is never ruled out here.
* ``-i``: the same with :attr:`.pattern.Pattern.required` (ASCII every match holds, either case),
  found ignoring ASCII case. A regex is never ruled out here.

The scans are the native ``find``/``find_ci`` (``memmem`` and its case-folding twin, the GIL
released) over the file in large reads; a yes costs one pass, and the search then reads what it
needs. Separate because it is a necessary condition on bytes, not a search.
"""

from __future__ import annotations

from ...util import native
from ...util.text import js_json_string
from .pattern import Pattern
from .source import Source, close_source, open_source, read_range, source_size

#: Bytes read per step (a needle crossing a step's edge is found: steps overlap by its length).
STEP = 16 << 20
#: A needle this long (code points) may cross two fragment lines: not ruled out by halves.
MAX_HALVED = 65
#: Bigger files are not prefiltered: the search itself reads them once at about the prefilter's
#: pace (a file with a hit would be read twice), and what a prefilter saves is the per-file and
#: per-window work of many small files.
MAX_SIZE = 8 << 20


def _find(buf: bytes, needle: bytes, ignore_case: bool) -> bool:
    nat = native.NATIVE
    if nat is not None:
        return (nat.find_ci(buf, needle) if ignore_case else nat.find(buf, needle)) >= 0
    return (buf.lower() if ignore_case else buf).find(needle) >= 0


def _holds_any(handle: Source, size: int, needles: list[bytes], ignore_case: bool, guards: list[bytes]) -> bool:
    """Whether the file holds one of ``needles`` (or one of ``guards``, case-sensitive)."""
    overlap = max(len(n) for n in needles + guards) - 1
    pos = 0
    while pos < size:
        buf = read_range(handle, min(STEP, size - pos), pos)
        if not buf:
            return True  # shrank under us: let the search say what it finds
        if any(_find(buf, g, False) for g in guards) or any(_find(buf, n, ignore_case) for n in needles):
            return True
        if pos + len(buf) >= size:
            return False
        pos += max(1, len(buf) - overlap)
    return False


def _searched_for(pattern: Pattern) -> tuple[str, bool] | None:
    """(the text every match holds, found ignoring ASCII case?), or None: a regex."""
    if pattern.literal is not None:
        return pattern.literal, False
    if pattern.required is not None:
        return pattern.required, True
    return None


def tool_output_may_match(handle: Source, size: int, pattern: Pattern) -> bool:
    wanted = _searched_for(pattern)
    if wanted is None or size == 0:
        return wanted is None
    text, ignore_case = wanted
    if "\ufffd" in text:
        return True  # may be an invalid byte sequence, decoded
    try:
        needle = text.encode("utf-8")
    except UnicodeEncodeError:
        return False  # a lone surrogate: written as U+FFFD, never in a tool output's text
    return _holds_any(handle, size, [needle.lower() if ignore_case else needle], ignore_case, [])


def transcript_may_match(handle: Source, size: int, pattern: Pattern) -> bool:
    wanted = _searched_for(pattern)
    if wanted is None or size == 0:
        return True
    text, ignore_case = wanted
    n = len(text)
    if n > MAX_HALVED or read_range(handle, 1, size - 1) != b"\n":
        return True
    halves = {text[: (n + 1) // 2], text[n // 2 :]}
    needles = [js_json_string(h)[1:-1].encode("utf-8", "surrogatepass") for h in halves]
    if any(b"\\u" in x for x in needles):
        return True  # a control or a lone surrogate: escaped as \u, which the guard cannot tell apart
    needles = [x.lower() for x in needles] if ignore_case else needles
    return _holds_any(handle, size, needles, ignore_case, [b"\\u", b"\\/"])


def may_match(path: str, transcript: bool, pattern: Pattern) -> bool:
    """Whether the artifact at ``path`` may hold a match (an unreadable one: yes, and the search
    says why). Opens and closes it: callable from a worker thread."""
    try:
        handle = open_source(path)
    except OSError:
        return True
    try:
        size = source_size(handle)
        if size > MAX_SIZE:
            return True
        return (transcript_may_match if transcript else tool_output_may_match)(handle, size, pattern)
    except OSError:
        return True
    finally:
        close_source(handle)
