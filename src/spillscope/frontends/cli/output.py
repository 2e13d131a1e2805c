"""Writing for humans and scripts: untrusted text as one visible cell, and ASCII-only JSON.

Separate because every command and ``main``'s error line write through the same two rules.
"""

from __future__ import annotations

from typing import Any, TextIO

from ...inspect.listing import ascii_json
from ...util.text import visible


def cell(text: object) -> str:
    """Untrusted text for one row of human output: controls visible, newlines and tabs
    too, so no name or detail can start a row of its own (or forge one)."""
    return visible(str(text), one_line=True)


def write_json(out: TextIO, data: Any) -> None:
    out.write(ascii_json(data))
    out.write("\n")
