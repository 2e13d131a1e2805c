"""Gemini CLI's notices, from its source (google-gemini/gemini-cli @5411f113cafae26161b4969b0237b8e1e024e2c2).

Truncation (``packages/core/src/utils/fileUtils.ts`` ``formatTruncatedToolOutput``, lines
704-725): head 20% / tail 80% of the allowed characters, numbers through
``toLocaleString()`` (so ``8,000``, ``8.000``, ``8 000``… by locale)::

    Output too large. Showing first ${H} and last ${T} characters. For full output see: ${abs}
    ${head}

    ... [${omitted} characters omitted] ...

    ${tail}

``head`` is ``content.slice(0, H)`` and ``tail`` ``content.slice(-T)``: JavaScript slices, so
H and T count UTF-16 units (a slice may split a surrogate pair), and ``omitted`` is
``length - H - T``; the file holds ``content`` (``fsPromises.writeFile``, UTF-8).

Masking (``packages/core/src/context/toolOutputMaskingService.ts`` lines 160-216, 360-366):
the file holds ``JSON.stringify(response, null, 2)`` and the part becomes::

    <tool_output_masked>
    ${preview}

    Output too large. Full output available at: ${filePath}
    </tool_output_masked>

with ``preview`` = ``content.slice(0, 250) + "\\n... [TRUNCATED] ...\\n" + content.slice(-250)``
when ``content.length > 500``, else ``content`` (a shell result's preview is made from its
sections instead: only its file's presence is checked).
"""

from __future__ import annotations

import re

from ..engine import Check, MalformedNotice, Notice

TRUNCATED = "Output too large. Showing first "
_COUNT = r"\d[\d.,' \u00a0\u202f\u066c]*"
_TRUNCATED = re.compile(rf"Output too large\. Showing first (?P<h>{_COUNT}) and last (?P<t>{_COUNT}) characters\. "
                        r"For full output see: (?P<path>[^\n]*)\n")
_OMITTED = re.compile(r"\n\n\.\.\. \[(?P<n>[^\]\n]+) characters omitted\] \.\.\.\n\n")
MASKED_OPEN = "<tool_output_masked>\n"
_MASKED_TAIL = re.compile(r"\n\nOutput too large\. Full output available at: (?P<path>[^\n]*)\n</tool_output_masked>\Z")
_MASK_CUT = "\n... [TRUNCATED] ...\n"


def units(text: str) -> bytes:
    """``text`` as JavaScript sees it: UTF-16 code units (lone surrogates kept)."""
    return text.encode("utf-16-le", "surrogatepass")


def _file_units(data: bytes) -> bytes | None:
    try:
        return units(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def locale_int(text: str) -> int:
    """A ``toLocaleString()`` integer in any locale's grouping (``32,000``, ``32.000``, ``32 000``)."""
    digits = re.sub(r"[\s,.'\u00a0\u202f\u066c]", "", text)
    if not digits.isdigit():
        raise MalformedNotice(f"not a count: {text!r}")
    return int(digits)


def _head_check(head: bytes, what: str) -> Check:
    def check(data: bytes) -> str | None:
        got = _file_units(data)
        if got is None:
            return "the file is not UTF-8"
        return None if got.startswith(head) else (
            f"the {what} shown ({len(head) // 2} UTF-16 units) is not the file's start "
            f"(they differ at unit {_first_unit(got, head)})")
    return ("head", "preview-mismatch", check)


def _tail_check(tail: bytes, what: str) -> Check:
    def check(data: bytes) -> str | None:
        got = _file_units(data)
        if got is None:
            return "the file is not UTF-8"
        return None if got.endswith(tail) else (
            f"the {what} shown ({len(tail) // 2} UTF-16 units) is not the file's end")
    return ("tail", "preview-mismatch", check)


def _first_unit(a: bytes, b: bytes) -> int:
    from ..checks import first_difference

    return first_difference(a, b) // 2


#: Distillation (``context/toolDistillationService.ts`` 116-240, ``context/truncation.ts`` 18-19):
#: a proportionally truncated text under this prefix, then ``\n\nFull output saved to: ${savedPath}``
#: (and maybe an intent summary). The file holds the whole text (or ``JSON.stringify`` of the parts):
#: only its presence is checked.
DISTILLED = "[Message Normalized: Tool output exceeded size limit]"
_DISTILLED_PATH = re.compile(r"\n\nFull output saved to: (?P<path>[^\n]+)(?:\Z|\n\n--- Strategic Significance)")


def parse(text: str) -> Notice | None:
    if text.startswith(TRUNCATED):
        return _truncated(text)
    if text.startswith(MASKED_OPEN):
        return _masked(text)
    if text.startswith(DISTILLED):
        m = _DISTILLED_PATH.search(text)
        return None if m is None else Notice("distilled", m.group("path"), (), text)
    return None


def _truncated(text: str) -> Notice:
    m = _TRUNCATED.match(text)
    if m is None:
        raise MalformedNotice("starts like Gemini CLI's truncation notice but its first line does not follow it")
    h, t = locale_int(m.group("h")), locale_int(m.group("t"))
    body = units(text[m.end():])
    head = body[:2 * h]
    rest = body[2 * h:].decode("utf-16-le", "surrogatepass")
    om = _OMITTED.match(rest)
    if om is None:
        raise MalformedNotice(f"no '... [N characters omitted] ...' marker after the {h} head characters")
    omitted = locale_int(om.group("n"))
    tail = units(rest[om.end():])
    if len(tail) != 2 * t:
        raise MalformedNotice(f"the notice says the last {t} characters follow; {len(tail) // 2} do")

    def count(data: bytes) -> str | None:
        got = _file_units(data)
        if got is None:
            return "the file is not UTF-8"
        total = len(got) // 2
        return None if total - h - t == omitted else (
            f"the notice says {omitted} characters omitted; the file's {total} - {h} - {t} = {total - h - t}")

    checks: tuple[Check, ...] = (_head_check(head, "head"), _tail_check(tail, "tail"),
                                 ("omitted", "size-label-mismatch", count))
    return Notice("truncated", m.group("path"), checks, text)


def _masked(text: str) -> Notice | None:
    m = _MASKED_TAIL.search(text)
    if m is None:
        return None  # a masked result that names no file (or a quoted tag): nothing to link
    preview = text[len(MASKED_OPEN):m.start()]
    pu = units(preview)
    cut = units(_MASK_CUT)
    checks: tuple[Check, ...]
    if len(pu) == 2 * 250 + len(cut) + 2 * 250 and pu[500:500 + len(cut)] == cut:
        checks = (_head_check(pu[:500], "head"), _tail_check(pu[-500:], "tail"))
    elif len(pu) <= 2 * 500:
        def whole(data: bytes) -> str | None:
            got = _file_units(data)
            return None if got == pu else "the preview is the whole output (≤ 500 characters) and the file differs"
        checks = (("bytes", "content-mismatch", whole),)
    else:
        checks = ()  # a shell result's sectioned preview: presence only
    return Notice("masked", m.group("path"), checks, text)
