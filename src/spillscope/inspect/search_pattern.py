"""What a search looks for: :class:`Pattern` (a fixed string or a regex) and :class:`PatternError`.

Separate from the searching so that front ends can build and validate a pattern without the
byte-level machinery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..util.text import js_normalize

#: A regex match longer than this many code points may be cut at a window edge.
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
