"""The writer's JSON escaping, seen from inside a de-framed transcript byte stream.

Escape boundaries, whether a window's escapes are the canonical ones ``JSON.stringify`` writes
(so a needle escaped the same way finds every occurrence), de-framing fragment lines and
decoding escaped segments. Separate because these are pure functions on bytes, with no file or
search state.
"""

from __future__ import annotations

import re

from ...util import native
from ...util.text import loads_exact, utf8_len

# Escape-aware helpers for the de-framed (JSON-escaped) stream ----------------------------
_BACKSLASH = 0x5C
_U_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")
_NO_PAIR_ESCAPES = {8, 9, 10, 12, 13}
_ODD_ESCAPE = re.compile(rb"\\[u/]")
#: The bytes an escape's first part can end with: a backslash, ``u`` and the hex digits.
_MAY_END_INSIDE = frozenset(b"\\u0123456789abcdefABCDEF")


def _odd_run_before(buf: bytes | bytearray, p: int) -> bool:
    """True when an odd number of backslashes ends just before ``p``."""
    k = 0
    while p - k - 1 >= 0 and buf[p - k - 1] == _BACKSLASH:
        k += 1
    return k % 2 == 1


def at_escape_boundary(buf: bytes | bytearray, p: int) -> bool:
    """True when ``p`` (in escaped text that starts on a boundary) starts a new character."""
    if p <= 0 or buf[p - 1] not in _MAY_END_INSIDE:
        return True  # after anything else, ``p`` is neither in an escape nor right after a backslash
    if _odd_run_before(buf, p):
        return False
    for j in range(2, 6):  # inside the four hex digits of a \\uXXXX?
        q = p - j
        if q >= 0 and buf[q] == _BACKSLASH and buf[q + 1 : q + 2] == b"u" and not _odd_run_before(buf, q):
            return False
    return True


def canonical_escapes(buf: bytes | bytearray) -> bool:
    """True when every escape is spelled as JSON.stringify spells it (so the escaped
    needle finds every occurrence): no ``\\/``, and ``\\u`` only lowercase for controls
    without a short form and for lone surrogates."""
    nat = native.NATIVE
    if nat is not None:
        return nat.canonical(buf)  # the same rules in one C pass
    first = _ODD_ESCAPE.search(buf)  # one pass for both
    if first is None:
        return True
    if b"\\/" in buf:
        return False  # maybe a literal backslash before '/': the decoded search is exact either way
    prev_high_end = -1
    for m in _U_ESCAPE.finditer(buf):
        if _odd_run_before(buf, m.start()):
            continue  # a literal backslash followed by 'u'
        hexs = m.group(1)
        if hexs != hexs.lower():
            return False
        cp = int(hexs, 16)
        if 0xD800 <= cp <= 0xDBFF:
            prev_high_end = m.end()
            continue
        if 0xDC00 <= cp <= 0xDFFF:
            if prev_high_end == m.start():
                return False  # an escaped pair: JSON.stringify writes it literally
        elif cp >= 0x20 or cp in _NO_PAIR_ESCAPES:
            return False
        prev_high_end = -1
    return True


def decode_escaped(seg: bytes | bytearray) -> str:
    """The exact text of a de-framed escaped segment (starting and ending on boundaries)."""
    # (by the stdlib until orjson is loaded or worth loading, as loads_exact decides)
    text = loads_exact(b'"' + seg + b'"')
    assert isinstance(text, str)
    return text


def measure_escaped(buf: bytes | bytearray, start: int = 0, end: int = -1) -> tuple[int, int]:
    """(code points, UTF-8 bytes) of ``decode_escaped(buf[start:end])``, counted without
    decoding by the native scanner where it can; raises as decoding would."""
    nat = native.NATIVE
    if nat is not None:
        got = nat.escaped_stats(buf, start, end)
        if got is not None:
            return got
    text = decode_escaped(buf[start:] if end < 0 else buf[start:end])
    return len(text), utf8_len(text)


def decode_utf8(seg: bytes | bytearray) -> str:
    return seg.decode("utf-8", "replace")


#: A line that begins with a UTF-8 continuation byte (two after a newline: its opening quote
#: between): a character split over two lines, each then no UTF-8 though the joined text is.
_SPLIT_CHARACTER = re.compile(b"\n.[\x80-\xbf]", re.DOTALL)


def deframe(lines: bytes | bytearray | memoryview, end: int = -1) -> bytes:
    """Fragment lines (``"…"\\n`` each; ``lines[:end]`` if given) → the escaped text;
    ValueError if not framed so (or a line begins with a continuation byte: see
    :data:`_SPLIT_CHARACTER`)."""
    nat = native.NATIVE
    if nat is not None:
        out = nat.deframe(lines, end)  # the same result in one C pass
        if out is None:
            raise ValueError("not plain fragment lines")
        return out
    if end >= 0:
        lines = lines[:end]
    lines = bytes(lines)
    # An empty fragment line ("") vanishes here without changing the text: the parser
    # refuses it, `verify` reports it; the search need not.
    # A line of one quote ('"\n' first, '\n"\n' anywhere) is no JSON string: its quote would
    # open and close it, and the joins below would take it for half of two.
    if (lines[:1] != b'"' or lines[-2:] != b'"\n' or _SPLIT_CHARACTER.search(lines) or lines.startswith(b'"\n')
            or b'\n"\n' in lines):
        raise ValueError("not plain fragment lines")
    body = lines.replace(b'"\n"', b"")
    if body.find(b"\n", 1, len(body) - 1) >= 0:
        raise ValueError("not plain fragment lines")
    return body[1:-2]


def deframe_reusing(lines: bytes | bytearray, end: int, out: bytearray) -> bytes | bytearray:
    """:func:`deframe` of ``lines[:end]``; with the native scanner the text is written into
    ``out`` and ``out`` is returned (valid until its next use: no allocation per window)."""
    nat = native.NATIVE
    if nat is None:
        return deframe(lines, end)
    if nat.deframe_into(lines, end, out) < 0:
        raise ValueError("not plain fragment lines")
    return out


def _ends_high(lines: bytes | bytearray, end: int) -> bool:
    """True when the fragment line ending at ``end`` ends with an escaped high surrogate
    (it may pair with the next line's first code point, so the two stay together)."""
    b = end - 8  # `\udXXX"\n`
    return (b >= 0 and lines[b : b + 3] in (b"\\ud", b"\\uD") and lines[b + 3 : b + 4] in b"89abAB"
            and lines[b + 3 : b + 4] != b"" and not _odd_run_before(lines, b))
