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

What the real sessions do not show, Claude Code's source does (a public mirror of it,
BelovedYaoo/claude-code-source @1e87ff61, CC ~2.1.88; rules only, no code taken):

* ``src/utils/format.ts`` ``formatFileSize``: under 1024 it is ``"<n> bytes"``; else KB/MB/GB
  with ``toFixed(1)`` and a trailing ``.0`` *dropped* ("50KB", not "50.0KB"; the same function
  writes the real notices' "Preview (first 2KB)" for 2000). A label ending in ``.0`` was a false
  size-label mismatch for one notice in twenty.
* ``src/utils/toolResultStorage.ts`` ``buildLargeToolResultMessage``: the preview is followed by
  ``\\n...\\n`` only when the text goes on (``hasMore``); a text of at most 2000 characters ends
  ``\\n</persisted-output>`` and the preview *is* the whole saved text.
* ``src/tools/BashTool/BashTool.tsx``: Bash (and PowerShell) copy the command's output file to
  ``tool-results/<taskId>.txt``; the label is ``formatFileSize(persistedOutputSize)``, the file's
  *bytes*; the preview is cut from the output with leading blank lines removed
  (``stripEmptyLines``, ``replace(/^(\\s*\\n)+/, '')``).
* ``src/utils/mcpOutputStorage.ts`` ``getLargeOutputInstructions``: an MCP result over its token
  cap is saved as ``tool-results/mcp-<server>-<tool>-<ms>.txt`` and replaced by
  ``Error: result (<n, en-US grouping> characters) exceeds maximum allowed tokens. Output has
  been saved to <path>.`` — n the saved text's JavaScript length (real sessions quote newer
  builds writing ``(<n> characters across <m> lines)``).
* ``getBinaryBlobSavedMessage`` / WebFetch: ``…Binary content (<mime>, <formatFileSize(bytes)>)
  [also ]saved to <path>`` for bytes written as they came (``mcp-*-blob-*``, ``webfetch-*``;
  ReadMcpResource's ``mcp-resource-*``, its toolUseResult ``contents[].blobSavedTo`` naming it).
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
#: The end when the whole text fitted in the preview (``hasMore`` false).
_V2_END_WHOLE = "\n</persisted-output>"
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
    #: Generation 2: the text went on past the preview (``...``); False: the preview is all of it.
    more: bool = True


class NoticeError(ValueError):
    """A result that starts like a notice but does not follow either generation."""


def is_notice(text: str) -> bool:
    return text.startswith(OPEN)


def parse_notice(text: str) -> PersistedNotice:
    """The notice in ``text`` (which starts with ``<persisted-output>``); NoticeError if malformed."""
    m = _V2.match(text)
    if m is not None:
        if text.endswith(_V2_END):
            return PersistedNotice(m.group("path"), 2, m.group("size"), m.group("unit"),
                                   text[m.end():len(text) - len(_V2_END)])
        if text.endswith(_V2_END_WHOLE) and len(text) - len(_V2_END_WHOLE) >= m.end():
            return PersistedNotice(m.group("path"), 2, m.group("size"), m.group("unit"),
                                   text[m.end():len(text) - len(_V2_END_WHOLE)], more=False)
        raise NoticeError("a generation-2 notice without its closing '\\n</persisted-output>'")
    m = _V1.match(text)
    if m is not None:
        return PersistedNotice(m.group("path"), 1)
    raise NoticeError("starts with <persisted-output> but is neither notice generation "
                      "('Output too large (…). Full output saved to: …' or 'Tool result saved to: …')")


def size_label_of(units: int, unit: str) -> str:
    """The number Claude Code's label gives ``units`` in ``unit`` (``toFixed(1)``, unstripped)."""
    from ..checks import to_fixed

    if unit == "bytes":
        return str(units)
    return to_fixed(units, {"KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[unit], 1)


def format_file_size(n: int) -> str:
    """``formatFileSize(n)`` (src/utils/format.ts): ``"812 bytes"``, ``"22.9KB"``, ``"50KB"``, ``"1.2MB"``."""
    from ..checks import to_fixed

    if n < 1024:
        return f"{n} bytes"
    for unit, scale in (("KB", 1024), ("MB", 1024 ** 2)):
        if n < scale * 1024:  # kb < 1024 on the exact quotient (a power-of-two division is exact)
            return _drop_zero(to_fixed(n, scale, 1)) + unit
    return _drop_zero(to_fixed(n, 1024 ** 3, 1)) + "GB"


def _drop_zero(number: str) -> str:
    return number[:-2] if number.endswith(".0") else number


def label_matches(size: str, unit: str, n: int) -> bool:
    """The notice's label (``size`` ``unit``) is what Claude Code writes for ``n``: ``formatFileSize``,
    or the same number with its ``.0`` kept (the same value: no fault can hide between them)."""
    if f"{size}{unit}".replace(" ", "") == format_file_size(n).replace(" ", ""):
        return True
    return unit != "bytes" and n >= 1024 and size == size_label_of(n, unit) and size.endswith(".0")


#: An MCP result over its token cap (mcpOutputStorage.ts): the count is the saved text's JS length.
_TOKEN_CAP = re.compile(r"Error: result \((?P<chars>[0-9][0-9,]*) characters(?: across [0-9][0-9,]* lines?)?\) "
                        r"exceeds maximum allowed tokens\. Output has been saved to (?P<path>[^\n]+?)\.?(?:\n|\Z)")
#: Bytes saved as they came (mcpOutputStorage.ts getBinaryBlobSavedMessage, WebFetchTool.ts).
_BINARY = re.compile(r"Binary content \((?P<mime>[^,()\n]*), (?P<size>[0-9]+(?:\.[0-9]+)?) ?(?P<unit>bytes|KB|MB|GB)\) "
                     r'(?:also )?saved to (?P<path>[^\n"]+?)\]?(?:\n|\Z|(?="))')


@dataclass(frozen=True, slots=True)
class SavedNotice:
    """A result Claude Code replaced by a sentence naming the file it saved (not a ``<persisted-output>``)."""

    form: str
    path: str
    #: ``token-cap``: the saved text's JavaScript length; ``binary``: the file's size label.
    chars: int | None = None
    size_label: str | None = None
    unit: str | None = None


def parse_saved(text: str) -> SavedNotice | None:
    """The MCP token-cap sentence at the start of ``text``, or a binary-content line anywhere in it."""
    m = _TOKEN_CAP.match(text)
    if m is not None:
        return SavedNotice("mcp-token-cap", m.group("path"), chars=int(m.group("chars").replace(",", "")))
    if "Binary content (" in text:
        b = _BINARY.search(text)
        if b is not None:
            return SavedNotice("binary-content", b.group("path"), size_label=b.group("size"), unit=b.group("unit"))
    return None
