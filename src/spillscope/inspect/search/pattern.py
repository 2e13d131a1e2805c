"""What a search looks for: :class:`Pattern` (a fixed string or a regex), compiled to a :class:`Matcher`.

A regex runs on RE2 (google-re2), whose time is linear in the text: a pattern from a user, run
over untrusted text, can never take exponential time (``(a+)+$`` over a megabyte of ``a`` takes
as long as ``a``). RE2 has no backreferences and no lookaround; such a pattern is refused with a
:class:`PatternError` that says so (the CLI's exit 2). A fixed string, with or without ``-i``,
stays on Python's ``re`` as an escaped literal (no backtracking to explode) and keeps Python's
Unicode case folding.

Offsets: RE2 reports UTF-8 byte offsets. The decoded text is handed to it encoded with
``surrogatepass``, so a lone surrogate (which the decoded text holds as one code point) is the
three bytes ``ED A0 80``..``ED BF BF``: RE2's ``.`` and negated classes take it as one character,
``\\x{D800}`` names it, and it is three bytes as :func:`~spillscope.util.text.utf8_len` counts it.
Matches start and end on character boundaries (``\\C``, RE2's any-byte, is refused), so each
byte offset maps to exactly one code-point offset. Separate from the searching so that front
ends can build and validate a pattern without the byte-level machinery.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

from ...util.text import js_normalize
from .required import ascii_run, required_literal

#: A regex match longer than this many code points may be cut at a window edge; ``^``, ``$``
#: and ``\b`` see at least this many code points of text on each side of a window.
REGEX_OVERLAP = 1 << 14

#: What ``-E`` accepts, said once for ``--help``, the TUI and the docs.
REGEX_SYNTAX = ("RE2 syntax (linear time): . [] [^] | () (?:) (?P<n>) * + ? {m,n} lazy *? ^ $ \\A \\z \\b \\B "
                "\\d \\w \\s (ASCII) \\pL \\p{Greek} [[:alpha:]] (?i) (?s) (?m) (?U) \\Q..\\E \\x{HHHH}; "
                "no backreferences (\\1), lookaround ((?=, (?!, (?<=, (?<!), atomic or possessive groups, "
                "\\Z (use \\z) or \\C. ^ and $ are the start and end of a whole message or tool output, "
                "not of each line as in grep: write (?m)^...$ for lines")


class PatternError(ValueError):
    """The pattern cannot be searched for (empty, an invalid regex, or syntax RE2 does not have)."""


class Matcher(Protocol):
    """A compiled pattern: the non-empty matches in a text, as code-point spans."""

    def spans(self, text: str, resume: int) -> Iterator[tuple[int, int]]:
        """Non-empty matches in ``text`` as one search over the whole message would give them,
        when the previous hit ended at ``resume`` (an offset into ``text``; negative: none yet).

        Hits never overlap, so the scan *resumes* at the last hit's end: scanning a window from
        its start and dropping hits that begin before ``resume`` instead chains the non-overlapping
        matches from the wrong place (``'""'`` after a hit at 0..3 of ``'"' * 9`` would give
        4..7, not 3..6). The text before ``resume`` stays context: ``^`` and ``\\b`` see it."""
        ...


@dataclass(frozen=True)
class Pattern:
    """What to look for: a fixed string (default) or an RE2 regex, optionally ignoring case."""

    text: str
    regex: bool = False
    ignore_case: bool = False

    def compile(self) -> Matcher:
        return _compile(self)

    @property
    def literal(self) -> str | None:
        """The fixed string searched as bytes, or None when the search needs decoded text."""
        return None if self.regex or self.ignore_case else js_normalize(self.text)

    @property
    def required(self) -> str | None:
        """Text every match holds, so that bytes without it need not be decoded: for a fixed
        string searched ignoring case, a part of it made of ASCII characters (lowercased
        here: found in either case); for a regex, its longest required literal
        (:mod:`.required`; lowercased where case is ignored, see :attr:`required_folded`);
        None otherwise."""
        if self.regex:
            got = required_literal(js_normalize(self.text), self.ignore_case)
            return None if got is None else got[0]
        if not self.ignore_case:
            return None
        return _required(js_normalize(self.text))

    @property
    def required_folded(self) -> bool:
        """Whether :attr:`required` is to be found ignoring ASCII case."""
        if self.regex:
            got = required_literal(js_normalize(self.text), self.ignore_case)
            return got is not None and got[1]
        return True


@functools.lru_cache(maxsize=64)
def _compile(pattern: Pattern) -> Matcher:
    """One compiled matcher per pattern, whatever the number of artifacts searched (RE2 compiled
    a program per file before: 0.2 s over 700 files). Matchers are read-only, safe to share."""
    if not pattern.text:
        raise PatternError("empty pattern")
    if pattern.regex:
        return _re2_matcher(pattern.text, pattern.ignore_case)
    flags = re.IGNORECASE if pattern.ignore_case else 0
    return _PythonLiteral(re.compile(re.escape(js_normalize(pattern.text)), flags))


def _required(text: str) -> str | None:
    """The longest run of ``text`` whose characters each match only ASCII characters
    when case is ignored, lowercased; None when there is none."""
    return ascii_run(text).lower() or None


class _PythonLiteral:
    """A fixed string on Python's ``re`` (escaped: it cannot backtrack beyond its length)."""

    def __init__(self, compiled: re.Pattern[str]) -> None:
        self.compiled = compiled

    def spans(self, text: str, resume: int) -> Iterator[tuple[int, int]]:
        for m in self.compiled.finditer(text, max(0, resume)):
            if m.end() > m.start():
                yield m.start(), m.end()


class _Re2:
    """A regex on RE2, searched in the text's ``surrogatepass`` UTF-8 bytes.

    Matches chain as RE2's own ``finditer`` chains them (an empty match moves the search one
    character on, a non-empty one to its end), and only the non-empty ones are reported."""

    def __init__(self, regexp: Any, unanchored: Any) -> None:
        self.regexp = regexp
        self.unanchored = unanchored

    def spans(self, text: str, resume: int) -> Iterator[tuple[int, int]]:
        data = text.encode("utf-8", "surrogatepass")
        cp = max(0, resume)
        # Where the search starts, in bytes; (at_b, at_cp) is the last position mapped.
        at_b = len(text[:cp].encode("utf-8", "surrogatepass"))
        at_cp = cp
        for s, e in self.byte_spans(data, at_b):
            at_cp += _code_points(data, at_b, s)
            start = at_cp
            at_cp += _code_points(data, s, e)
            at_b = e
            yield start, at_cp

    def byte_spans(self, data: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[tuple[int, int]]:
        """The matches in the UTF-8 bytes ``data`` from byte ``pos`` on, in byte offsets."""
        size = len(data)
        match, unanchored = self.regexp.Match, self.unanchored
        while pos <= size:
            s, e = match(unanchored, data, pos, size)[0]
            if s < 0:
                return
            if e == s:
                if s >= size:
                    return
                pos = s + _char_len(data[s])
                continue
            yield s, e
            pos = e


def _char_len(lead: int) -> int:
    return 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _code_points(data: bytes, start: int, end: int) -> int:
    """Code points in ``data[start:end]`` (whole characters): its bytes less the continuation bytes."""
    if end - start < 64:
        return sum(1 for b in data[start:end] if b & 0xC0 != 0x80)
    return len(data[start:end].decode("utf-8", "surrogatepass"))


#: RE2's messages for what it lacks, said in words a user can act on.
_UNSUPPORTED = (
    ("invalid perl operator: (?=", "lookahead (?=...) is not supported (RE2 runs in linear time and has no lookaround)"),
    ("invalid perl operator: (?!", "lookahead (?!...) is not supported (RE2 runs in linear time and has no lookaround)"),
    ("invalid perl operator: (?<=", "lookbehind (?<=...) is not supported (RE2 runs in linear time and has no lookaround)"),
    ("invalid perl operator: (?<!", "lookbehind (?<!...) is not supported (RE2 runs in linear time and has no lookaround)"),
    ("invalid perl operator: (?P=", "backreferences are not supported (RE2 runs in linear time)"),
    ("invalid perl operator: (?>", "atomic groups (?>...) are not supported (RE2 never backtracks: drop the ?>)"),
    ("invalid escape sequence: \\Z", "\\Z is not supported: use \\z for the end of the text"),
    ("bad repetition operator: ++", "possessive quantifiers are not supported (RE2 never backtracks: use +)"),
    ("bad repetition operator: *+", "possessive quantifiers are not supported (RE2 never backtracks: use *)"),
    ("bad repetition operator: ?+", "possessive quantifiers are not supported (RE2 never backtracks: use ?)"),
)
_BACKREFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")


def _explain(message: str, pattern: str) -> str:
    if message.startswith("invalid perl operator: (?P") and "(?P=" in pattern:
        return "backreferences (?P=name) are not supported (RE2 runs in linear time)"
    for prefix, said in _UNSUPPORTED:
        if message.startswith(prefix):
            return said
    if _BACKREFERENCE.match(message):
        return f"backreferences ({message.rsplit(' ', 1)[-1]}) are not supported (RE2 runs in linear time)"
    return f"invalid regex: {message} (RE2 syntax)"


def _for_re2(pattern: str) -> str:
    """``pattern`` as RE2 can take it: a lone surrogate (UTF-8 cannot carry it) written as
    ``\\x{D800}`` (inside ``\\Q..\\E`` by closing and reopening the quote); ``\\C`` refused,
    since a match must start and end on a character."""
    out: list[str] = []
    quoted = False
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if "\ud800" <= ch <= "\udfff":
            code = f"\\x{{{ord(ch):04X}}}"
            out.append(f"\\E{code}\\Q" if quoted else code)
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if quoted:
                if nxt == "E":
                    quoted = False
                out.append(ch + nxt if nxt == "E" else ch)
                i += 2 if nxt == "E" else 1
                continue
            if nxt == "Q":
                quoted = True
            elif nxt == "C":
                raise PatternError("\\C (any byte) is not supported: a match is whole characters")
            elif "\ud800" <= nxt <= "\udfff":
                i += 1  # an escaped lone surrogate is the surrogate itself
                continue
            out.append(ch + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


#: RE2's memory for one pattern (its program and its DFA cache, allocated as used). The default
#: 8 MiB let a counted pattern such as ``(\w{1,30}){1,30}!`` fill the cache over a few files and
#: fall back to the NFA (50 s over a megabyte instead of 0.01 s).
MAX_MEM = 64 << 20


def _re2_matcher(text: str, ignore_case: bool) -> _Re2:
    # google-re2, imported when a regex is first compiled (start-up stays short). The binding's
    # RE2 object itself, not re2.compile: its LRU cache would share one DFA cache between
    # searches, and its Match objects cost more than the spans they carry.
    from re2 import Options, _re2

    options = Options()
    options.log_errors = False  # the error is ours to say, once, not RE2's on stderr
    # Spans only, no groups: RE2 then finds a match with its DFAs, never the slower NFA
    # that group positions need ((.*a){20} over a megabyte: 30 ms instead of 2 s).
    options.never_capture = True
    options.case_sensitive = not ignore_case
    options.max_mem = MAX_MEM
    regexp = _re2.RE2(_for_re2(js_normalize(text)).encode("utf-8"), options)
    if not regexp.ok():
        raise PatternError(_explain(regexp.error().decode("utf-8", "replace"), text))
    return _Re2(regexp, _re2.RE2.Anchor.UNANCHORED)
