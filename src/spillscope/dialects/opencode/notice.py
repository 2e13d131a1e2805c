"""OpenCode's notices, from its source (anomalyco/opencode, formerly sst/opencode).

``Truncate.output`` (``packages/opencode/src/tool/truncate.ts`` @0a3427d9eeea638067269333ed17c52198411b3e):
the first lines within ``maxLines``/``maxBytes`` (direction ``head``) or the last (``tail``),
the whole text written to ``TRUNCATION_DIR/<ToolID.ascending()>``, and::

    head: ${preview}\\n\\n...${removed} ${"bytes"|"lines"} truncated...\\n\\n${hint}
    tail: ...${removed} ${unit} truncated...\\n\\n${hint}\\n\\n${preview}
    hint: The tool call succeeded but the output was truncated. Full output saved to: ${file}
          Use Grep to search the full content or Read with offset/limit to view specific sections.
          (or, with the Task tool allowed: Use the Task tool to have explore agent process this
          file with Grep and Read (with offset/limit). Do NOT read the full file yourself - delegate to save context.)

``removed`` is ``totalBytes - bytes(preview)`` (unit ``bytes``) or ``lines - previewLines``
(unit ``lines``); older builds wrote the hint without its first sentence. The shell tool
(``packages/opencode/src/tool/shell.ts`` @0498793379627b894bacec3691aeb6e17db9d9a6; ``bash.ts``
before) keeps the output's tail within the same limits (a line longer than ``maxBytes`` cut at
a character boundary) and writes::

    ...output truncated...\\n\\nFull output saved to: ${file}\\n\\n${tail}[\\n\\n<shell_metadata>…</shell_metadata>]

so ``tail`` is a suffix of the file. The part's ``state.metadata.outputPath`` names the same file.
"""

from __future__ import annotations

import re

from ..checks import is_prefix, is_suffix
from ..engine import Check, Notice

_HINT_TAILS = ("Use Grep to search the full content or Read with offset/limit to view specific sections.",
               "Use the Task tool to have explore agent process this file with Grep and Read (with offset/limit). "
               "Do NOT read the full file yourself - delegate to save context.")
_HINT = (r"(?:The tool call succeeded but the output was truncated\. )?Full output saved to: (?P<path>[^\n]+)\n(?:"
         + "|".join(re.escape(h) for h in _HINT_TAILS) + ")")
_HEAD = re.compile(r"\n\n\.\.\.(?P<n>\d+) (?P<unit>bytes|lines) truncated\.\.\.\n\n" + _HINT + r"\Z")
_TAIL = re.compile(r"\.\.\.(?P<n>\d+) (?P<unit>bytes|lines) truncated\.\.\.\n\n" + _HINT + r"\n\n")
_SHELL = re.compile(r"\.\.\.output truncated\.\.\.\n\nFull output saved to: (?P<path>[^\n]+)\n\n")
_SHELL_META = re.compile(r"\n\n<(shell|bash|cmd)_metadata>\n.*\n</\1_metadata>\Z", re.S)


def _count(preview: str, n: int, unit: str) -> Check:
    def check(data: bytes) -> str | None:
        if unit == "bytes":
            shown = len(preview.encode("utf-8", "surrogatepass"))
            got = len(data) - shown
        else:
            got = data.count(b"\n") + 1 - (preview.count("\n") + 1)
        return None if got == n else f"the notice says {n} {unit} truncated; the file has {got} more than the preview"
    return ("removed", "size-label-mismatch", check)


def parse(text: str, output_path: str | None = None) -> Notice | None:
    """The notice in a tool part's ``state.output`` (``output_path``: its ``metadata.outputPath``)."""
    m = _SHELL.match(text)
    if m is not None:
        tail = _SHELL_META.sub("", text[m.end():])
        checks: tuple[Check, ...] = (("tail", "preview-mismatch", lambda data: is_suffix(tail, data)),)
        return Notice("shell", m.group("path"), checks, text)
    m = _TAIL.match(text)
    if m is not None:
        preview = text[m.end():]
        shown: tuple[Check, ...] = (("tail", "preview-mismatch", lambda data: is_suffix(preview, data)),) if preview else ()
        return Notice("truncated-tail", m.group("path"), shown + (_count(preview, int(m.group("n")), m.group("unit")),),
                      text)
    m = _HEAD.search(text)
    if m is not None:
        preview = text[:m.start()]
        # An empty preview (a first line over maxBytes) shows nothing to compare: no head check.
        shown = (("head", "preview-mismatch", lambda data: is_prefix(preview, data)),) if preview else ()
        return Notice("truncated-head", m.group("path"), shown + (_count(preview, int(m.group("n")), m.group("unit")),),
                      text)
    if output_path is not None:
        return Notice("output-path", output_path, (), text)
    return None
