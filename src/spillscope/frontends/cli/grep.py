"""``spillscope grep``: every hit of a pattern in the exact text under a spill root.

Human output: one line per hit (path, message, line with ``-n``, offsets, seen/omitted) and
a line of context with controls made visible and the hit marked (``-C N``: N lines on each
side too). ``-l``: the artifacts with a hit; ``-c``: their hit counts. ``--json``: JSON Lines
(docs/cli.md). Findings about artifacts that could not be searched go to stderr and never
stop the search. Exit 0 with hits, 1 without, 2 on error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection, Iterator, TextIO

from ...inspect.findings import Finding
from ...util.text import ascii_json, visible
from ...inspect.search.pattern import Pattern, PatternError
from ...inspect.search.records import TRANSCRIPT
from ...inspect.search.root import SearchHit, search_root
from .args import UsageError, check_logs, open_root

if TYPE_CHECKING:  # the line counter (and the transcript parser under it) loads only for -n/-C
    from ...inspect.search.lines import HitLines


class GrepError(Exception):
    """The search cannot run (bad pattern, missing root)."""


@dataclass(frozen=True)
class Output:
    """How hits are written: ``mode`` is ``hits``, ``files`` (``-l``) or ``count`` (``-c``)."""

    as_json: bool = False
    mode: str = "hits"
    line_number: bool = False
    context: int = 0
    color: bool = False


def _one_line(text: str) -> str:
    # Tabs and newlines would break the one-line context; controls and escapes are made visible.
    return visible(text, one_line=True).replace("\n", "↵").replace("\t", "→")


def _mark(hit: SearchHit, color: bool) -> str:
    before, match, after = _one_line(hit.before), _one_line(hit.match), _one_line(hit.after)
    if color:
        style = "1;32" if hit.seen else "1;31" if hit.seen is False else "1;33"
        return f"{before}\x1b[{style}m{match}\x1b[0m{after}"
    return f"{before}[[{match}]]{after}"


def _where(hit: SearchHit, lines: HitLines | None) -> str:
    msg = f"message {hit.message} ({hit.role})" if hit.message is not None else "tool output"
    seen = {True: "seen", False: "omitted", None: "unlinked"}[hit.seen]
    line = f" line {lines.line}" if lines is not None else ""
    return f"{hit.path}: {msg}{line} cp {hit.start}-{hit.end} {seen}"


def _path(path: str, color: bool) -> str:
    shown = visible(path, one_line=True)
    return f"\x1b[35m{shown}\x1b[0m" if color else shown


def _with_lines(hits: list[SearchHit], context: int) -> list[HitLines]:
    """Line numbers (and context) of one artifact's hits, from its exact text."""
    from ...inspect.search.lines import HitLines, tool_output_lines, transcript_lines

    h0 = hits[0]
    try:
        if h0.kind == TRANSCRIPT:
            return transcript_lines(h0.path, [(h.message or 0, h.start, h.end) for h in hits], context)
        return tool_output_lines(h0.path, [(h.start, h.end) for h in hits], context)
    except (OSError, ValueError):
        return [HitLines(0) for _ in hits]  # vanished or changed since the search: no line to give


def _by_artifact(events: Iterator[SearchHit | Finding]) -> Iterator[Finding | list[SearchHit]]:
    """Findings as they come, and each artifact's hits together (they arrive artifact by artifact)."""
    group: list[SearchHit] = []
    for ev in events:
        if isinstance(ev, Finding):
            yield ev
            continue
        if group and group[0].path != ev.path:
            yield group
            group = []
        group.append(ev)
    if group:
        yield group


def grep(root: str, pattern: Pattern, out: TextIO, err: TextIO, *, logs: str | None = None, rebase: str | None = None,
         as_json: bool = False, max_count: int | None = None, mode: str = "hits", line_number: bool = False,
         context: int = 0, color: str = "auto", sessions: Collection[str] | None = None,
         kinds: Collection[str] | None = None, timeout: float | None = None) -> int:
    try:
        store = open_root(root, "grep", timeout=timeout)  # a directory, or a reachable s3://bucket/prefix
        check_logs(logs)
    except UsageError as exc:
        raise GrepError(str(exc)) from None
    try:
        pattern.compile()
    except PatternError as exc:
        raise GrepError(str(exc)) from None
    tty = color == "always" or (color == "auto" and out.isatty() and "NO_COLOR" not in os.environ)
    how = Output(as_json, mode, line_number or context > 0, context, tty and not as_json)
    # -l needs one hit per artifact to name it: the search of an artifact stops there.
    limit = 1 if mode == "files" else max_count
    hits = 0
    events = search_root(store, pattern, logs=logs, rebase=rebase, max_count=limit, sessions=sessions, kinds=kinds)
    for item in _by_artifact(events):
        if isinstance(item, Finding):
            where = item.path or item.locator or ""
            line = f":{item.line}" if item.line is not None else ""
            err.write(f"spillscope grep: {item.code}: {visible(where, one_line=True)}{line}: "
                      f"{visible(item.detail, one_line=True)}\n")
            continue
        hits += len(item)
        _write(item, how, out)
    out.flush()
    return 0 if hits else 1


def _write(hits: list[SearchHit], how: Output, out: TextIO) -> None:
    path = hits[0].path
    if how.mode == "files":
        out.write(ascii_json({"path": path}) if how.as_json else _path(path, how.color))
        out.write("\n")
        return
    if how.mode == "count":
        if how.as_json:
            out.write(ascii_json({"path": path, "count": len(hits)}) + "\n")
        else:
            out.write(f"{_path(path, how.color)}: {len(hits)}\n")
        return
    lines: list[HitLines | None] = list(_with_lines(hits, how.context)) if how.line_number else [None] * len(hits)
    for h, ln in zip(hits, lines):
        if how.as_json:
            record = h.to_json()
            if ln is not None:
                record["line"] = ln.line
            if how.context:
                assert ln is not None
                record["before_lines"], record["after_lines"] = list(ln.before), list(ln.after)
            out.write(ascii_json(record) + "\n")
            continue
        out.write(_path(_where(h, ln), how.color) if how.color else visible(_where(h, ln), one_line=True))
        if ln is None or not how.context:
            out.write("\n    " + _mark(h, how.color) + "\n")
            continue
        out.write("\n")
        first = ln.line - len(ln.before)
        for i, text in enumerate(ln.before):
            out.write(f"    {first + i}- {_one_line(text)}\n")
        out.write(f"    {ln.line}: {_mark(h, how.color)}\n")
        last = ln.line + h.match.count("\n")  # the line the hit ends on
        for i, text in enumerate(ln.after, 1):
            out.write(f"    {last + i}- {_one_line(text)}\n")
        out.write("--\n")
