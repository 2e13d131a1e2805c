"""Claude Code's ``<persisted-output>`` notice, both generations seen in real sessions.

Claude Code is closed source: the contract is real sessions. Generation 2 (CC 2.1.x; three
real stubs in rcgray/claude-code-bug-phantom-reads-17407 @96731ef2, ``dev/misc/wsd-dev-02/``;
the same shape is quoted in anthropics/claude-code#23948)::

    <persisted-output>
    Output too large (22.9KB). Full output saved to: /abs/<sessionId>/tool-results/<id>.txt

    Preview (first 2KB):
    <the file's first ≤2000 characters, cut at a newline>
    ...
    </persisted-output>

The size label is the saved text's JavaScript length (UTF-16 units) / 1024 with
``toFixed(1)`` and no space (85,713 chars in an 85,795-byte file → "83.7KB"; bytes would give
83.8; measured on all three). ``MB``/``bytes`` labels are accepted by the same rule (the CLI's
size formatter; not seen in real data). Generation 1 (CC 2.0.59, only as the model quoted
it in ``dev/misc/session-examples/2.0.59-bad/2.0.59-bad.txt``: whitespace unverified, so it is
read leniently)::

    <persisted-output>Tool result saved to: <abs path>

    Use Read to view</persisted-output>

Only a result that *starts* with ``<persisted-output>`` is a notice: in the real corpus 47 of
the 50 results containing the tag are file contents quoting it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OPEN = "<persisted-output>"
CLOSE = "</persisted-output>"

_V2 = re.compile(
    r"<persisted-output>\nOutput too large \((?P<size>[0-9]+(?:\.[0-9]+)?)\s?(?P<unit>KB|MB|GB|bytes)\)\. "
    r"Full output saved to: (?P<path>[^\n]+)\n\nPreview \(first [^\n)]*\):\n", re.S)
_V2_END = "\n...\n</persisted-output>"
_V1 = re.compile(r"<persisted-output>\s*Tool result saved to:\s*(?P<path>\S[^\n]*?)\s*\n\s*\n\s*Use Read to view\s*</persisted-output>\s*\Z",
                 re.S)


@dataclass(frozen=True, slots=True)
class PersistedNotice:
    """What a notice says: where the file is, and (generation 2) its size label and preview."""

    path: str
    generation: int
    size_label: str | None = None
    unit: str | None = None
    preview: str | None = None


class NoticeError(ValueError):
    """A result that starts like a notice but does not follow either generation."""


def is_notice(text: str) -> bool:
    return text.startswith(OPEN)


def parse_notice(text: str) -> PersistedNotice:
    """The notice in ``text`` (which starts with ``<persisted-output>``); NoticeError if malformed."""
    m = _V2.match(text)
    if m is not None:
        if not text.endswith(_V2_END):
            raise NoticeError("a generation-2 notice without its closing '\\n...\\n</persisted-output>'")
        preview = text[m.end():len(text) - len(_V2_END)]
        return PersistedNotice(m.group("path"), 2, m.group("size"), m.group("unit"), preview)
    m = _V1.match(text)
    if m is not None:
        return PersistedNotice(m.group("path"), 1)
    raise NoticeError("starts with <persisted-output> but is neither notice generation "
                      "('Output too large (…). Full output saved to: …' or 'Tool result saved to: …')")


def size_label_of(units: int, unit: str) -> str:
    """The label Claude Code writes for a text of ``units`` UTF-16 code units."""
    from ..checks import to_fixed

    if unit == "bytes":
        return str(units)
    return to_fixed(units, {"KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[unit], 1)
