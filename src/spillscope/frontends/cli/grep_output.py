"""How ``spillscope grep`` writes its hits, on a dsh root and on any other agent's tree alike.

One writer for both searches: each hands it a file's hits as :class:`Shown` (where the hit
is, in that search's words, its span and text, its line numbers when asked for), and it
writes them as hits (one line each and a line of marked context, or ``-C N`` numbered
lines), ``-l`` (the file once), ``-c`` (its hit count) or JSON Lines. Controls and escape
sequences in the text are made visible; the only SGR sent is the writer's own colour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, Protocol, Sequence, TextIO, TypeVar

from ...inspect.findings import Finding
from ...util.text import ascii_json, visible

if TYPE_CHECKING:
    from ...inspect.search.lines import HitLines


class GrepError(Exception):
    """The search cannot run (bad pattern, missing root, a kind or filter the tree cannot have)."""


class Output(NamedTuple):
    """How hits are written: ``mode`` is ``hits``, ``files`` (``-l``) or ``count`` (``-c``)
    (``quiet``, ``-q``, writes none: :func:`first_hit`). This and :class:`Shown` are
    NamedTuples, not frozen dataclasses: a dataclass's methods are compiled when its module
    loads, a millisecond each of every ``grep``'s start-up."""

    as_json: bool = False
    mode: str = "hits"
    line_number: bool = False
    context: int = 0
    color: bool = False
    #: The JSON member ``-n`` adds (dsh: ``line``; another agent's hits already use ``line``
    #: for the transcript's JSONL line, and members are never renamed).
    line_key: str = "line"


class Shown(NamedTuple):
    """One hit as the writer shows it: ``head`` and ``tail`` frame where ``-n`` puts ``line N``."""

    path: str
    head: str
    tail: str
    before: str
    match: str
    after: str
    #: SGR of the hit in colour (dsh: green seen, red omitted, yellow unlinked).
    style: str
    record: dict[str, Any]
    lines: HitLines | None


class _HasPath(Protocol):
    @property
    def path(self) -> str: ...


H = TypeVar("H", bound=_HasPath)


def one_line(text: str) -> str:
    # Tabs and newlines would break the one-line context; controls and escapes are made visible.
    return visible(text, one_line=True).replace("\n", "↵").replace("\t", "→")


def by_file(events: Iterator[H | list[H] | Finding]) -> Iterator[Finding | list[H]]:
    """Findings as they come, and each file's hits together (they arrive file by file, a hit
    or a list of one file's hits at a time)."""
    group: list[H] = []
    for ev in events:
        if isinstance(ev, Finding):
            yield ev
            continue
        run = ev if isinstance(ev, list) else [ev]
        if not run:
            continue
        if group and group[0].path != run[0].path:
            yield group
            group = []
        group.extend(run)
    if group:
        yield group


def grep_mode(files_with_matches: bool, count: bool, quiet: bool) -> str:
    """The output mode of ``-l``, ``-c`` and ``-q`` (argparse lets one at most), else ``hits``."""
    return "files" if files_with_matches else "count" if count else "quiet" if quiet else "hits"


def first_hit(events: Iterator[H | list[H] | Finding], err: TextIO) -> int:
    """``-q``: the findings before the first hit written to ``err``; 0 at that hit (the search
    closed there, what runs ahead stopped), 1 when there is none."""
    try:
        for ev in events:
            if not isinstance(ev, Finding):
                return 0
            write_finding(ev, err)
        return 1
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def write_finding(item: Finding, err: TextIO) -> None:
    where = item.path or item.locator or ""
    line = f":{item.line}" if item.line is not None else ""
    err.write(f"spillscope grep: {item.code}: {visible(where, one_line=True)}{line}: "
              f"{visible(item.detail, one_line=True)}\n")


def _mark(hit: Shown, color: bool) -> str:
    before, match, after = one_line(hit.before), one_line(hit.match), one_line(hit.after)
    if color:
        return f"{before}\x1b[{hit.style}m{match}\x1b[0m{after}"
    return f"{before}[[{match}]]{after}"


def _path(path: str, color: bool) -> str:
    shown = visible(path, one_line=True)
    return f"\x1b[35m{shown}\x1b[0m" if color else shown


def write_file(path: str, count: int, hits: Sequence[Shown], how: Output, out: TextIO) -> None:
    """One file's ``count`` hits: ``hits`` is only read in ``hits`` mode (-l/-c need none built)."""
    if how.mode == "files":
        out.write(ascii_json({"path": path}) if how.as_json else _path(path, how.color))
        out.write("\n")
        return
    if how.mode == "count":
        if how.as_json:
            out.write(ascii_json({"path": path, "count": count}) + "\n")
        else:
            out.write(f"{_path(path, how.color)}: {count}\n")
        return
    for h in hits:
        ln = h.lines if how.line_number else None
        if how.as_json:
            record = dict(h.record)
            if ln is not None:
                record[how.line_key] = ln.line
            if how.context:
                assert ln is not None
                record["before_lines"], record["after_lines"] = list(ln.before), list(ln.after)
            out.write(ascii_json(record) + "\n")
            continue
        where = h.head + (f" line {ln.line}" if ln is not None else "") + h.tail
        out.write(_path(where, how.color) if how.color else visible(where, one_line=True))
        if ln is None or not how.context:
            out.write("\n    " + _mark(h, how.color) + "\n")
            continue
        out.write("\n")
        first = ln.line - len(ln.before)
        for i, text in enumerate(ln.before):
            out.write(f"    {first + i}- {one_line(text)}\n")
        out.write(f"    {ln.line}: {_mark(h, how.color)}\n")
        # The line the hit's last character is on: a hit ending in a newline ends on the line
        # that newline closes, and the context after it starts on the next one.
        last = ln.line + h.match[:-1].count("\n")
        for i, text in enumerate(ln.after, 1):
            out.write(f"    {last + i}- {one_line(text)}\n")
        out.write("--\n")


def use_color(color: str, out: TextIO, as_json: bool) -> bool:
    """``--color``: always, never, or auto (a terminal, unless ``NO_COLOR`` is set); never in JSON."""
    import os

    tty = color == "always" or (color == "auto" and out.isatty() and "NO_COLOR" not in os.environ)
    return tty and not as_json
