"""Writing for humans and scripts: untrusted text as one visible cell, and ASCII-only JSON.

Separate because every command and ``main``'s error line write through the same two rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence, TextIO

from ...util.text import ascii_json, orjson_ascii_json, stdlib_ascii_json, visible

#: Items of a :class:`Chunked` array encoded per ``orjson.dumps`` call.
CHUNK = 4096


def cell(text: object) -> str:
    """Untrusted text for one row of human output: controls visible, newlines and tabs
    too, so no name or detail can start a row of its own (or forge one)."""
    return visible(str(text), one_line=True)


def write_json(out: TextIO, data: Any) -> None:
    out.write(ascii_json(data))
    out.write("\n")


@dataclass(frozen=True)
class Chunked:
    """A JSON array given as its items and the function giving each one's JSON value, for
    :func:`write_json_members`: encoded a chunk at a time, never all values at once."""

    items: Sequence[Any]
    encode: Callable[[Any], Any]


class _NotAscii(Exception):
    pass


def _orjson_ascii(value: Any) -> str:
    text = orjson_ascii_json(value)
    if text is None:
        raise _NotAscii
    return text


def write_json_members(out: TextIO, members: dict[str, Any], chunk: int = CHUNK) -> None:
    """``write_json(out, members)`` with each :class:`Chunked` value as the array of its
    encoded items, and the same text: one object per finding of a root of a million
    artifacts was most of ``verify --json``'s memory, and each pass over them slowed as
    it grew. Like :func:`ascii_json`, orjson writes it unless some text is not ASCII, a
    DEL or a lone surrogate, and then the escaping stdlib writes all of it (the two would
    differ on such text, and may on a float's digits), so the pieces are kept until the
    whole object is known to be one or the other."""
    try:
        pieces = _json_pieces(members, chunk, _orjson_ascii)
    except _NotAscii:
        pieces = _json_pieces(members, chunk, stdlib_ascii_json)
    out.writelines(pieces)
    out.write("\n")


def _json_pieces(members: dict[str, Any], chunk: int, dumps: Callable[[Any], str]) -> list[str]:
    pieces = ["{"]
    for i, (key, value) in enumerate(members.items()):
        pieces.append(("," if i else "") + dumps(key) + ":")
        if not isinstance(value, Chunked):
            pieces.append(dumps(value))
            continue
        pieces.append("[")
        items, encode = value.items, value.encode
        for start in range(0, len(items), chunk):
            text = dumps([encode(item) for item in items[start : start + chunk]])
            pieces.append(("," if start else "") + text[1:-1])
        pieces.append("]")
    pieces.append("}")
    return pieces
