"""What a search looks for: :class:`Pattern` (a fixed string or a regex) and :class:`PatternError`.

Separate from the searching so that front ends can build and validate a pattern without the
byte-level machinery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ...util.text import js_normalize

#: A regex match longer than this many code points may be cut at a window edge; a lookbehind
#: sees at least this many code points before a window's first character.
REGEX_OVERLAP = 1 << 14


class PatternError(ValueError):
    """The pattern cannot be searched for (empty, or an invalid regex)."""


@dataclass(frozen=True)
class Pattern:
    """What to look for: a fixed string (default) or a Python regex, optionally ignoring case."""

    text: str
    regex: bool = False
    ignore_case: bool = False

    def compile(self) -> re.Pattern[str]:
        if not self.text:
            raise PatternError("empty pattern")
        flags = re.IGNORECASE if self.ignore_case else 0
        try:
            return re.compile(self.text if self.regex else re.escape(js_normalize(self.text)), flags)
        except re.error as exc:
            raise PatternError(f"invalid regex: {exc}") from None

    @property
    def literal(self) -> str | None:
        """The fixed string searched as bytes, or None when the search needs decoded text."""
        return None if self.regex or self.ignore_case else js_normalize(self.text)

    @property
    def required(self) -> str | None:
        """For a fixed string searched ignoring case: a part of it that every match holds
        as the same ASCII characters, in either case (lowercased here), so windows without
        it need not be decoded; None otherwise."""
        if self.regex or not self.ignore_case:
            return None
        return _required(js_normalize(self.text))


#: The ASCII letters that match a non-ASCII character when case is ignored (i: U+0130,
#: U+0131; k: U+212A KELVIN SIGN; s: U+017F LONG S), as Python's re folds case.
_FOLDS_BEYOND_ASCII = frozenset("iIkKsS")


def _required(text: str) -> str | None:
    """The longest run of ``text`` whose characters each match only ASCII characters
    when case is ignored, lowercased; None when there is none."""
    best, run = "", []
    for ch in text + "\x80":
        if ch < "\x80" and ch not in _FOLDS_BEYOND_ASCII:
            run.append(ch)
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best.lower() or None


def matches_after(compiled: re.Pattern[str], text: str, resume: int) -> Iterator[re.Match[str]]:
    """Non-empty matches in ``text`` as one ``finditer`` over the whole message would give them,
    when the previous hit ended at ``resume`` (an offset into ``text``; negative: none yet).

    Hits never overlap, so the scan *resumes* at the last hit's end: scanning a window from its
    start and dropping hits that begin before ``resume`` instead chains the non-overlapping
    matches from the wrong place (``'""'`` after a hit at 0..3 of ``'"' * 9`` would give 4..7,
    not 3..6). ``pos`` keeps lookbehind and ``^`` exact: they still see the text before it.
    """
    for m in compiled.finditer(text, max(0, resume)):
        if m.end() > m.start():
            yield m
