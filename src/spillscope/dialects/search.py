"""``grep`` over any agent's tree: the exact text of its spill files and of its transcripts' strings.

A spill file is searched as the text it holds (UTF-8; an invalid byte is U+FFFD, counted as
one code point). A transcript (JSON Lines) is searched record by record in its decoded
strings — never in the escaped JSON, where a newline is ``\\n`` and a quote ``\\"`` — each
hit naming its line and the string's place in the record (``message.content[1].content``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator

from ..inspect.findings import Finding, finding
from ..inspect.search.pattern import Matcher
from ..storage.local import open_regular
from ..util.text import loads_exact
from .base import Dialect

CONTEXT = 40


@dataclass(frozen=True, slots=True)
class TextHit:
    path: str
    kind: str
    #: The transcript line (1-based); None in a spill file.
    line: int | None
    #: Where in the record the string is (a transcript), or None.
    field: str | None
    #: Code point offsets of the match in the string (or the file's text).
    start: int
    end: int
    before: str
    match: str
    after: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "line": self.line, "field": self.field,
                "start": self.start, "end": self.end, "match": self.match}


def search_tree(dialect: Dialect, tree: str, pattern: Matcher, *,
                max_count: int | None = None) -> Iterator[TextHit | Finding]:
    """Every hit of ``pattern`` in the dialect's spill files and transcripts, file by file."""
    for path, kind in dialect.texts(tree):
        try:
            with os.fdopen(open_regular(path), "rb") as f:
                if kind == "spill":
                    yield from _limit(_in_text(path, kind, None, None, f.read().decode("utf-8", "replace"), pattern),
                                      max_count)
                elif path.endswith(".json"):  # one JSON document (a legacy transcript, an OpenCode part)
                    yield from _limit(_in_json(path, f.read(), pattern), max_count)
                else:
                    yield from _limit(_in_log(path, f, pattern), max_count)
        except OSError as exc:
            yield finding("unreadable", path=path, detail=f"cannot search it: {exc.strerror or exc}")


def _limit(hits: Iterator[TextHit | Finding], max_count: int | None) -> Iterator[TextHit | Finding]:
    n = 0
    for h in hits:
        yield h
        if isinstance(h, TextHit):
            n += 1
            if max_count is not None and n >= max_count:
                return


def _in_text(path: str, kind: str, line: int | None, field: str | None, text: str,
             pattern: Matcher) -> Iterator[TextHit]:
    for s, e in pattern.spans(text, -1):  # non-empty matches only: an empty one shows nothing
        yield TextHit(path, kind, line, field, s, e, text[max(0, s - CONTEXT):s], text[s:e], text[e:e + CONTEXT])


def _in_log(path: str, f: Any, pattern: Matcher) -> Iterator[TextHit | Finding]:
    for lineno, raw in enumerate(f, 1):
        try:
            rec = loads_exact(raw)
        except ValueError as exc:
            if raw.endswith(b"\n"):
                yield finding("malformed-log", path=path, line=lineno, detail=f"not JSON: {exc}")
            continue
        scope = rec.get("message", rec) if isinstance(rec, dict) else rec
        for where, text in _strings(scope, "message" if scope is not rec else ""):
            yield from _in_text(path, "transcript", lineno, where, text, pattern)


def _in_json(path: str, raw: bytes, pattern: Matcher) -> Iterator[TextHit | Finding]:
    try:
        rec = loads_exact(raw)
    except ValueError as exc:
        yield finding("malformed-log", path=path, detail=f"not JSON: {exc}")
        return
    for where, text in _strings(rec, ""):
        yield from _in_text(path, "transcript", None, where, text, pattern)


def _strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")
