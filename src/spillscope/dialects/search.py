"""``grep`` over any agent's tree: the exact text of its spill files and of its transcripts' strings.

A spill file is searched as the text it holds (UTF-8; an invalid byte is U+FFFD, counted as
one code point). A transcript (JSON Lines) is searched record by record in its decoded
strings — never in the escaped JSON, where a newline is ``\\n`` and a quote ``\\"`` — each
hit naming its line and the string's place in the record (``message.content[1].content``).
A transcript kept in a database (OpenCode's ``opencode.db``: :meth:`~.base.Dialect.records`)
is searched row by row, each row's JSON as one document, as a JSON file is; its hits name
the row (table, id, rowid) and come in the order the dialect gives the rows.

With ``line_numbers`` each hit also gets its :class:`~spillscope.inspect.search.lines.HitLines`
(``grep -n``, ``-C N``) in the same decoded text its offsets count in: a spill file's text, or
the one string (a transcript's strings count their lines from 1 each, as a dsh transcript's
messages do); ``\n`` ends a line, so ``\r\n`` does too and U+2028 does not. ``sessions``
and ``kinds`` (:data:`KINDS`) keep only the files (and a database's rows) they name, and
nothing else is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Collection, Iterator

from ..inspect.findings import Finding, finding
from ..inspect.search.pattern import Matcher
from ..storage.local import open_regular
from ..util.text import loads_exact
from .base import Dialect
from .sessions import sessions_of

if TYPE_CHECKING:  # the line counter (and the transcript parser under it) loads only for -n/-C
    from ..inspect.search.lines import HitLines
    from .records import StoredRecord

CONTEXT = 40

#: What ``--kind`` names on another agent's tree: its transcripts, and its spill files (each
#: holds one tool's output, so dsh's ``tool-output`` names them too).
KINDS = {"transcript": "transcript", "spill": "spill", "tool-output": "spill"}


class UnknownKind(ValueError):
    """A ``--kind`` this agent's tree has no file of."""


@dataclass(frozen=True, slots=True)
class TextHit:
    """A hit in another agent's spill file or transcript: where (the line, the record's field), its span and
    text."""

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
    #: The hit's line and context lines in the decoded text, when line numbers were asked for.
    lines: HitLines | None = None
    #: The database row the record is (table, id, rowid), for a transcript kept in one
    #: (OpenCode's ``opencode.db``); None in a file.
    row: tuple[str, str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "kind": self.kind, "line": self.line, "field": self.field,
                               "start": self.start, "end": self.end, "match": self.match}
        if self.row is not None:  # a member of a database's hits only: a file's keep their shape
            out["row"] = {"table": self.row[0], "id": self.row[1], "rowid": self.row[2]}
        return out


def search_tree(dialect: Dialect, tree: str, pattern: Matcher, *, max_count: int | None = None,
                line_numbers: bool = False, context: int = 0, sessions: Collection[str] | None = None,
                kinds: Collection[str] | None = None) -> Iterator[TextHit | Finding]:
    """Every hit of ``pattern`` in the dialect's spill files and transcripts, file by file in
    the order :meth:`~.base.Dialect.texts` gives (sorted by path). Raises :class:`UnknownKind`
    for a kind not in :data:`KINDS`, before anything is read."""
    wanted = None
    if kinds is not None:
        unknown = sorted(set(kinds) - KINDS.keys())
        if unknown:
            raise UnknownKind(f"--kind {', '.join(unknown)}: {dialect.title} trees hold "
                              f"{', '.join(sorted(KINDS))} (spill and tool-output are the same)")
        wanted = {KINDS[k] for k in kinds}
    owner = sessions_of(dialect, tree) if sessions is not None else None
    lines = (line_numbers or context > 0, context)
    for path, kind in dialect.texts(tree):
        if wanted is not None and kind not in wanted:
            continue
        # A database holds many sessions' records: it keeps the asked sessions' rows itself.
        stored = dialect.records(path, sessions) if kind == "transcript" else None
        if stored is None and owner is not None and owner.get(path) not in set(sessions or ()):
            continue
        try:
            if stored is not None:
                yield from _limit(_in_records(path, stored, pattern, lines), max_count)
                continue
            with os.fdopen(open_regular(path), "rb") as f:
                if kind == "spill":
                    text = f.read().decode("utf-8", "replace")
                    yield from _limit(_in_text(path, kind, None, None, text, pattern, lines), max_count)
                elif path.endswith(".json"):  # one JSON document (a legacy transcript, an OpenCode part)
                    yield from _limit(_in_json(path, f.read(), pattern, lines), max_count)
                else:
                    yield from _limit(_in_log(path, f, pattern, lines), max_count)
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
             pattern: Matcher, lines: tuple[bool, int], row: tuple[str, str, int] | None = None) -> Iterator[TextHit]:
    spans = pattern.spans(text, -1)  # non-empty matches only: an empty one shows nothing
    located: list[HitLines] = []
    if lines[0]:
        from ..inspect.search.lines import text_lines

        # Lines of this text only, counted in one pass over it for all its hits; -m cuts the
        # hits after, so a capped search counts the lines of hits it will not show (cheap).
        spans_list = list(spans)
        located = text_lines([text], spans_list, lines[1]) if spans_list else []
        spans = iter(spans_list)
    for i, (s, e) in enumerate(spans):
        yield TextHit(path, kind, line, field, s, e, text[max(0, s - CONTEXT):s], text[s:e], text[e:e + CONTEXT],
                      located[i] if lines[0] else None, row)


def _in_log(path: str, f: Any, pattern: Matcher, lines: tuple[bool, int]) -> Iterator[TextHit | Finding]:
    for lineno, raw in enumerate(f, 1):
        try:
            rec = loads_exact(raw)
        except ValueError as exc:
            if raw.endswith(b"\n"):
                yield finding("malformed-log", path=path, line=lineno, detail=f"not JSON: {exc}")
            continue
        scope = rec.get("message", rec) if isinstance(rec, dict) else rec
        for where, text in _strings(scope, "message" if scope is not rec else ""):
            yield from _in_text(path, "transcript", lineno, where, text, pattern, lines)


def _in_json(path: str, raw: bytes, pattern: Matcher, lines: tuple[bool, int]) -> Iterator[TextHit | Finding]:
    try:
        rec = loads_exact(raw)
    except ValueError as exc:
        yield finding("malformed-log", path=path, detail=f"not JSON: {exc}")
        return
    for where, text in _strings(rec, ""):
        yield from _in_text(path, "transcript", None, where, text, pattern, lines)


def _in_records(path: str, records: Iterator[StoredRecord | Finding], pattern: Matcher,
                lines: tuple[bool, int]) -> Iterator[TextHit | Finding]:
    """A database's records, each searched as one JSON document (as a JSON file is), its hits
    naming the row."""
    for rec in records:
        if isinstance(rec, Finding):
            yield rec
            continue
        try:
            doc = loads_exact(rec.data if rec.data is not None else b"")
        except ValueError as exc:
            yield finding("malformed-log", path=path, line=rec.rowid, session=rec.session,
                          detail=f"{rec.table} {rec.id} (rowid {rec.rowid}): data is not JSON: {exc}")
            continue
        row = (rec.table, rec.id, rec.rowid)
        for where, text in _strings(doc, ""):
            yield from _in_text(path, "transcript", None, where, text, pattern, lines, row)


def _strings(value: object, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")
