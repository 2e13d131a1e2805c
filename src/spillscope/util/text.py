"""JavaScript string semantics in Python: the one place that knows how the reference
implementation (Node) measures, encodes and serialises text.

A JavaScript string is a sequence of UTF-16 code units and may hold lone surrogates.
A Python ``str`` can hold the same values, but it can also hold a high and a low
surrogate as two separate code points where JavaScript would see one pair. Every
function here first brings text to the *canonical* form (pairs combined, lone
surrogates kept) so that lengths, slices and bytes agree with Node exactly.
"""

from __future__ import annotations

import functools
import re
import sys
from typing import TYPE_CHECKING, Any

from .lazy import deferred_module

if TYPE_CHECKING:
    import json

    import orjson
else:
    # loaded when first used: most start-ups encode no JSON (the two are 6 ms of grep's 50)
    json = deferred_module("json", globals())
    orjson = deferred_module("orjson", globals())


@functools.cache
def _surrogates() -> re.Pattern[str]:
    """Any surrogate code point: compiled on first use (a class of 2,048 code points above
    U+00FF is a millisecond of ``re``'s compiler, at the start-up of every command)."""
    return re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    """True when ``text`` holds any surrogate code point (paired or lone)."""
    if text.isascii():
        return False
    return _surrogates().search(text) is not None


def js_normalize(text: str) -> str:
    """Combine adjacent high+low surrogates into one code point, as a JS string would."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def js_utf8(text: str) -> bytes:
    """UTF-8 bytes as Node writes them: each lone surrogate becomes U+FFFD (3 bytes)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed.encode("utf-8")


def utf8_len(text: str) -> int:
    """``Buffer.byteLength(text, 'utf8')``."""
    if text.isascii():
        return len(text)
    return len(js_utf8(text))


def utf16_units(text: str) -> list[int]:
    """The UTF-16 code units of ``text`` (what ``charCodeAt`` walks over)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]


def lone_surrogate_count(text: str) -> int:
    """How many lone surrogates ``text`` holds once pairs are combined."""
    if not has_surrogates(text):
        return 0
    return len(_surrogates().findall(js_normalize(text)))


def _escape_lone(match: re.Match[str]) -> str:
    return "\\u%04x" % ord(match.group(0))


def _finish_js_json(out: str) -> str:
    # json.dumps(ensure_ascii=False) leaves surrogates raw; JSON.stringify writes each
    # lone surrogate as a lowercase \\udXXX escape and keeps pairs literal.
    if not has_surrogates(out):
        return out
    return _surrogates().sub(_escape_lone, js_normalize(out))


#: Up to this many code points a string is encoded by the stdlib's C encoder: as fast as
#: orjson on a fragment or a needle (0.5 µs), and a search that encodes nothing longer never
#: imports orjson (6 ms: uuid, datetime, platform). orjson is several times faster on more.
SHORT_STRING = 256


def js_json_string(text: str) -> str:
    """``JSON.stringify(text)`` for a string, exactly."""
    if len(text) <= SHORT_STRING:
        # escapes the same set of controls with the same spelling (see below)
        return _finish_js_json(json.encoder.encode_basestring(text))
    try:
        return orjson.dumps(text).decode("utf-8")
    except TypeError:
        # orjson refuses lone surrogates; the stdlib encoder escapes the same set of
        # controls with the same spelling, so only the surrogates need fixing.
        return _finish_js_json(json.dumps(text, ensure_ascii=False))


def ascii_json(value: Any) -> str:
    """ASCII-only JSON: :func:`orjson_ascii_json` where it gives it, else
    :func:`stdlib_ascii_json`."""
    text = orjson_ascii_json(value)
    return stdlib_ascii_json(value) if text is None else text


def orjson_ascii_json(value: Any) -> str | None:
    """orjson's JSON of ``value`` where it is :func:`stdlib_ascii_json`'s text (ASCII, and no
    DEL, which the stdlib escapes and orjson does not), else None (also where orjson refuses
    ``value``: a lone surrogate, an int beyond 64 bits). For strings, ints, bools, None and
    lists and dicts of them the two agree elsewhere; a float's digits may not (``1e-7``,
    ``1e-07``)."""
    try:
        raw = orjson.dumps(value)
    except TypeError:
        return None
    return raw.decode("ascii") if raw.isascii() and b"\x7f" not in raw else None


def stdlib_ascii_json(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=True, separators=(",", ":"))``."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def ascii_json_string(text: str) -> str:
    """:func:`ascii_json` of a string, by the stdlib's C encoder: a few strings written need
    no orjson (6.5 ms of CPU to import)."""
    return json.encoder.encode_basestring_ascii(text)


def js_stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify(value, null, indent)`` for JSON-shaped values (str keys, ints)."""
    if indent is None:
        try:
            return orjson.dumps(value).decode("utf-8")
        except TypeError:
            out = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    else:
        out = json.dumps(value, ensure_ascii=False, indent=indent)
    return _finish_js_json(out)


def tag_safe_json(value: Any) -> str:
    """Compact JSON with every ``<`` written as ``\\u003c`` (the reference's tag-safe form)."""
    return js_stringify(value).replace("<", "\\u003c")


def loads_exact(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON keeping lone surrogates: orjson on the fast path, stdlib where it refuses.

    Strings that came back through the fallback are normalised so that two escaped
    halves of a pair become one code point, as in JavaScript.
    Untrusted input: every failure is a ``ValueError`` — including JSON nested deeper
    than the stdlib parser can recurse (orjson stops at 1024 levels; ``json`` would raise
    ``RecursionError``, which no caller expects from bad input).
    """
    global _stdlib_rent
    if (_stdlib_rent < STDLIB_BUDGET and len(data) <= STDLIB_BUDGET and "orjson" not in sys.modules
            and _opens(data) <= MAX_JSON_DEPTH):
        # Until orjson is loaded, the stdlib parses, to the same values as orjson would: it
        # is slower (about 2.8 µs a call and 1.5 ns a byte more), but importing orjson costs
        # 6.5 ms of CPU, and most searches parse little (a transcript's metadata block, a
        # few hits' context). Once what the stdlib took longer could have paid for that
        # import, orjson is imported (a rent-or-buy choice: at most twice the better of the
        # two). What the stdlib refuses goes on to orjson, for its errors. Only JSON that
        # cannot nest deeper than orjson's limit (counting every bracket): the stdlib's depth
        # is the recursion limit's, which a caller (or the fallback below, in another thread)
        # may have raised, and past orjson's limit it would accept what orjson refuses, or
        # overflow the C stack.
        _stdlib_rent += len(data) + STDLIB_CALL  # (an estimate: threads may race on it)
        try:
            return _loads_stdlib(data)
        except (ValueError, RecursionError):
            pass
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # Its message only: the exception's traceback holds this frame, and with it
        # ``data`` (a log line can be 100 MB), in a cycle that only the cyclic collector
        # frees, and a verify pass runs with the collector paused.
        first = str(exc)
    if _too_deep(first):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    text = str(data, "utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data
    # What orjson refused for another reason (a lone surrogate) may still be nested up to
    # its limit: give the recursive stdlib parser room for that many levels, no more.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + MAX_JSON_DEPTH + 64)
    try:
        return _normalize_tree(json.loads(text))
    except RecursionError:
        raise ValueError(f"JSON nested too deep to parse (orjson: {first})") from None
    finally:
        sys.setrecursionlimit(limit)


#: orjson's own limit; deeper JSON is refused by it and would recurse in ``json``.
MAX_JSON_DEPTH = 1024
#: How much :func:`loads_exact` parses with the stdlib before it imports orjson, in bytes at
#: the stdlib's extra cost per byte (1.5 ns: 4 MiB, about orjson's import), a call counting as
#: STDLIB_CALL bytes more.
STDLIB_BUDGET, STDLIB_CALL = 4 << 20, 2048
_stdlib_rent = 0


def _opens(data: bytes | bytearray | memoryview | str) -> int:
    """How many ``[`` and ``{`` ``data`` holds: a bound on how deep it nests."""
    if isinstance(data, memoryview):
        data = bytes(data)  # (at most STDLIB_BUDGET bytes here)
    if isinstance(data, str):
        return data.count("[") + data.count("{")
    return data.count(b"[") + data.count(b"{")


def _loads_stdlib(data: bytes | bytearray | memoryview | str) -> Any:
    """What ``orjson.loads(data)`` returns, by the stdlib: ValueError or RecursionError where
    it refuses ``data`` (what orjson refuses too, or not: the caller asks orjson then)."""
    return _normalize_tree(json.loads(data if isinstance(data, str) else str(data, "utf-8"), parse_int=_orjson_int))


def _orjson_int(digits: str) -> int:
    """An integer within 64 bits (signed below zero, unsigned above), as orjson reads it;
    ValueError beyond, where orjson reads a float, or refuses the number, or the text (then
    the stdlib reads an int): the caller asks orjson, and decides as it always did."""
    value = int(digits)
    if not -(1 << 63) <= value < (1 << 64):
        raise ValueError("an integer beyond 64 bits")
    return value


def _too_deep(message: str) -> bool:
    return "recursion limit" in message or "depth" in message.lower()


def _normalize_tree(value: Any) -> Any:
    if isinstance(value, str):
        return js_normalize(value)
    if isinstance(value, list):
        return [_normalize_tree(v) for v in value]
    if isinstance(value, dict):
        return {js_normalize(k): _normalize_tree(v) for k, v in value.items()}
    return value


def code_point_slices(text: str, size: int = 64) -> list[str]:
    """JavaScript ``text.matchAll(/[\\s\\S]{1,size}/gu)``: slices of ``size`` code points."""
    text = js_normalize(text)
    return [text[i : i + size] for i in range(0, len(text), size)]


def visible(text: str, *, one_line: bool = False) -> str:
    """Make controls and lone surrogates visible for display; never interpreted.

    C0 controls map to the Unicode control pictures (``␀``, ``␛``...), a lone CR to
    ``⏎``, DEL to ``␡``, C1 controls and bidi/format controls to ``⟨U+XXXX⟩``, and a
    lone surrogate to ``⟨lone U+D800⟩``. Newlines and tabs stay as they are, unless
    ``one_line``: then they are shown too (``␊``, ``␉``), so a name or text put in a
    row of a table can never start a row of its own.
    """
    shown = _shown(one_line)
    # Most text (every plain file name in a 100k listing) has nothing to show: one scan.
    if shown.search(text) is None:
        return text
    return shown.sub(_show, js_normalize(text))


def shown_count(text: str, *, one_line: bool = False) -> int:
    """How many code points :func:`visible` replaces in ``text`` (lone surrogates included)."""
    shown = _shown(one_line)
    if shown.search(text) is None:
        return 0
    return len(shown.findall(js_normalize(text)))


def _show(match: re.Match[str]) -> str:
    cp = ord(match.group())
    if cp == 0x0D:
        return "⏎"
    if cp < 0x20:
        return chr(0x2400 + cp)
    if cp == 0x7F:
        return "␡"
    if 0xD800 <= cp <= 0xDFFF:
        return "⟨lone U+%04X⟩" % cp
    return "⟨U+%04X⟩" % cp  # C1 controls, bidi and format controls


# Bidi overrides/isolates, line/paragraph separators and the BOM reorder or hide text
# on a terminal, so they are shown by name.
_FORMAT_CONTROLS = frozenset(
    [0x200E, 0x200F, 0x2028, 0x2029, 0xFEFF, 0x061C]
    + list(range(0x202A, 0x202F))
    + list(range(0x2066, 0x206A))
)


@functools.cache
def _shown(one_line: bool) -> re.Pattern[str]:
    """Every code point :func:`visible` replaces (newline and tab stay, unless ``one_line``):
    compiled on first use, as :func:`_surrogates` (a JSON-only command never shows text)."""
    kept = "\x00-\x1f" if one_line else "\x00-\x08\x0b-\x1f"
    return re.compile(f"[{kept}\x7f-\x9f\ud800-\udfff" + "".join(chr(c) for c in sorted(_FORMAT_CONTROLS)) + "]")
