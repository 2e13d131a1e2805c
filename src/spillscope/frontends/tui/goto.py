"""The reader's go-to parser: ``m 3``, ``l 120``, ``b 5000``, ``c 100000`` or a bare line number.

Separate because it is pure text parsing, testable without a screen."""

from __future__ import annotations

import re
from dataclasses import dataclass

_GOTO = re.compile(r"^\s*(?:(m|msg|message|l|line|b|byte|c|cp)\s*)?([0-9]+)\s*$", re.I)


@dataclass(frozen=True)
class Goto:
    """Where the reader's go-to prompt asked to go: a message, line, byte or code point."""

    unit: str  # message | line | byte | cp
    value: int


def parse_goto(text: str) -> Goto | None:
    m = _GOTO.match(text)
    if m is None:
        return None
    unit = (m.group(1) or "l").lower()[0]
    return Goto({"m": "message", "l": "line", "b": "byte", "c": "cp"}[unit], int(m.group(2)))
