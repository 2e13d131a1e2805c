"""Ruling an artifact out on its raw bytes, before any decoding: the needle's encoded forms are
not in it, so neither is the needle.

* A tool output's text is its bytes decoded with replacement: an occurrence of a needle holding
  no U+FFFD is made of valid sequences only, so the needle's UTF-8 bytes are in the file.
* A transcript message's text is its fragment lines' JSON strings, decoded. Removing every
  ``"\\n"`` (a line's closing quote, its newline and the next line's opening quote: a quote
  inside a fragment is escaped, so the three bytes occur nowhere else) leaves each message's
  escaped text, whatever the lines' lengths. Where the file holds no ``\\u`` and no ``\\/``
  escape, every escape in it is one the writer spells as
  :func:`~spillscope.util.text.js_json_string` does (and no surrogate pair is split over two
  lines), so a needle in a message is there as its escaped bytes. A file with ``\\u`` or
  ``\\/``, a needle that escapes as ``\\u``, or a file cut off mid-write (which the search
  reports as a finding) is never ruled out here.
* ``-i`` and a regex: the same with :attr:`.pattern.Pattern.required` (for ``-i``, ASCII every
  match holds, found ignoring ASCII case; for a regex, the literal every match holds, see
  :mod:`.required`). A regex without such a literal is never ruled out here.

* An escaped needle of 16-65 bytes (:data:`HALVES_MIN`, :data:`HALVES_MAX`) is looked for in a
  transcript by its two halves, in the raw bytes, nothing joined (``pf_halves`` in
  ``_native.c``): where no fragment line between two joins is shorter than the needle less one
  (the writer's 64 code points are at least 64 bytes), a match spans at most two lines, so one
  half lies whole in one line. A shorter line, and so two joins too close, hands the file to
  the join above. Files over 4 MiB are mapped (the page cache read in place), so that an
  absent needle costs one read at several GB/s a core and no copy.

The parser's JSON also takes whitespace about a fragment line's newline ('"\\r\\n"',
'" \\n"', '"\\n  "'), which the writer never writes and these joins do not see: a file with a
space, tab or CR before a newline, or after one that ends a quoted line (:data:`ODD_FRAMING`;
the header's lines hold neither), is never ruled out; the per-message rule
(:func:`message_rule`) decodes any message not framed as the writer frames it.

The scans are the native ``find``/``find_ci`` (``memmem`` and its case-folding twin, the GIL
released) over the file in large reads; a yes costs one pass, and the search then reads what it
needs. :func:`may_match_many` asks the same of many local files in one native call
(``_native.prefilter``: the open, read and scan of every file in C, on every core), so that a
root of thousands of small files costs no Python per ruled-out file. Separate because it is a
necessary condition on bytes, not a search.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Callable, Sequence

from ...util import native
from ...formats.transcript.layout import JSON_SPACE
from ...util.text import js_json_string
from .pattern import Pattern
from .source import Source, close_source, open_source, read_range, source_size

#: Bytes read per step (a needle crossing a step's edge is found: steps overlap by its length).
STEP = 16 << 20
#: Bigger files are not prefiltered in Python: the search itself reads them once at about the
#: Python prefilter's pace (a file with a hit would be read twice), and what a prefilter saves
#: is the per-file and per-window work of many small files.
MAX_SIZE = 8 << 20
#: The native prefilter checks files of any size, a chunk at a time: in C it reads several
#: times faster than the search counts, so a huge file without the needle is not searched
#: (an absent needle over 1 GB of 134 MB transcripts: 0.7 s searched, 0.2 s checked).
NATIVE_CHUNK = 1 << 20
NATIVE_MAX_SIZE = 1 << 62
#: The escaped needles a transcript is checked for by their halves in raw bytes, as
#: ``_native.prefilter`` decides: a shorter one's halves are too common in text, a longer one
#: may span three fragment lines of 64 ASCII code points (a match spans at most two where each
#: holds its length less one).
HALVES_MIN, HALVES_MAX = 16, 65
#: A newline framed by whitespace the parser takes and the writer never writes (``pf_odd_newline``
#: in ``_native.c``): a join these rules would not see.
_SPACE = b"[" + re.escape(JSON_SPACE) + b"]"
ODD_FRAMING = re.compile(_SPACE + b'\n|"\n' + _SPACE)


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
        return pattern.required, pattern.required_folded
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
    got = escaped_needle(pattern)
    if got is None or size == 0 or size > MAX_SIZE:
        return True
    needle, ignore_case = got
    data = read_range(handle, size, 0)
    if len(data) != size or not data.endswith(b"\n"):
        return True  # changed under us, or cut off mid-write: the search says what it finds
    if _find(data, b"\\u", False) or _find(data, b"\\/", False):
        return True  # an escape the writer may not have spelled as the needle's (or a split pair)
    if ODD_FRAMING.search(data):
        return True  # a join framed otherwise than '"\n"'
    # Every fragment line's closing quote, newline and the next line's opening quote go: what
    # is left of a message is its escaped text, whatever its lines' lengths.
    joined = data.replace(b'"\n"', b"")
    return _find(joined, needle, ignore_case)


@functools.lru_cache(maxsize=64)  # asked per file and per transcript message, for one pattern
def escaped_needle(pattern: Pattern) -> tuple[bytes, bool] | None:
    """(the bytes every match holds in a transcript's raw lines, found ignoring ASCII case?):
    the text every match holds, escaped as the writer spells it (lowered where folded); None
    where there is no such text (a regex without a literal) or it escapes as ``\\u``."""
    wanted = _searched_for(pattern)
    if wanted is None:
        return None
    text, folded = wanted
    escaped = js_json_string(text)[1:-1].encode("utf-8", "surrogatepass")
    if b"\\u" in escaped:
        return None
    return (escaped.lower() if folded else escaped), folded


def message_rule(pattern: Pattern) -> Callable[[memoryview, int, int], bool] | None:
    """The halves rule per transcript message: whether the fragment lines ``raw[start:end]``
    of one message may hold a match (False: its joined text cannot, so the whole-message
    search need not decode it); None where the rule does not apply (no accelerator, a
    needle outside :data:`HALVES_MIN`-:data:`HALVES_MAX` escaped bytes). A file that may
    match is often one message in many that does: the others cost a read, not a decode."""
    nat = native.NATIVE
    got = escaped_needle(pattern)
    if nat is None or got is None or not HALVES_MIN <= len(got[0]) <= HALVES_MAX:
        return None
    needle, folded = got
    halves = nat.halves

    def may_hold(raw: memoryview, start: int, end: int) -> bool:
        return halves(raw, start, end, needle, folded) != 0  # -1 (not applied) and 2 (cannot tell): decoded

    return may_hold


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


#: ``_native.prefilter``'s kinds: a tool output, a transcript, an artifact never ruled out.
_TOOL, _TRANSCRIPT, _ALWAYS = 0, 1, 2


#: Threads of a native check, and of a search's big artifacts searched ahead (None: one per CPU
#: this process may run on); a worker of a split search (see .split) sets 1: the workers are
#: the cores.
THREADS: int | None = None


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def threads() -> int:
    """:data:`THREADS` where it is set, else :func:`cores`."""
    return THREADS or cores()


def may_match_many(paths: Sequence[str], transcript: Sequence[bool], pattern: Pattern) -> list[bool] | None:
    """:func:`may_match` of each local file, in one native call on every core (the same rules,
    decided in C per file); None where the accelerator is missing (the caller asks
    :func:`may_match` per file)."""
    nat = native.NATIVE
    if nat is None:
        return None
    wanted = _searched_for(pattern)
    if wanted is None:
        return [True] * len(paths)
    text, ignore_case = wanted
    tool_kind, plain = _TOOL, b""
    never = False
    if "\ufffd" in text:
        tool_kind = _ALWAYS  # may be an invalid byte sequence, decoded
    else:
        try:
            plain = text.encode("utf-8")
        except UnicodeEncodeError:
            never = True  # a lone surrogate: written as U+FFFD, never in a tool output's text
    got = escaped_needle(pattern)
    transcript_kind = _ALWAYS if got is None else _TRANSCRIPT
    escaped = b"" if got is None else got[0]
    if ignore_case:
        plain = plain.lower()
    kinds = bytes(transcript_kind if t else tool_kind for t in transcript)
    # A big transcript is searched window by window, skipping in one pass the lines in which
    # a fixed string cannot start (native.skip_lines, about 3 GB/s a core): checking it here
    # first reads it twice where it holds the needle. Done only where the check is the
    # halves' one (HALVES_MIN-HALVES_MAX bytes, about twice the skip's pace): a file
    # without the needle then costs that one pass, one with it that pass more (the trade
    # measured in docs/benchmarks.md).
    from .message import SKIP_ABOVE, skips_lines
    from .whole import WHOLE_MAX

    transcript_max = NATIVE_MAX_SIZE
    if skips_lines(pattern) and not HALVES_MIN <= len(escaped) <= HALVES_MAX:
        transcript_max = min(SKIP_ABOVE, max(WHOLE_MAX, 0))
    verdicts = nat.prefilter([os.fsencode(p) for p in paths], kinds, plain, escaped, ignore_case, NATIVE_MAX_SIZE,
                             threads(), NATIVE_CHUNK, transcript_max)
    # 2: not opened as a regular file: the search opens it again and says why.
    return [v == 2 or (v == 1 and not (never and not t)) for v, t in zip(verdicts, transcript)]
