"""``spillscope grep``: every hit of a pattern in the exact text under a spill root.

Human output: one line per hit (path, message, offsets, seen/omitted) and a line of
context with controls made visible and the hit marked. ``--json``: JSON Lines, one
object per hit (docs/cli.md). Findings about artifacts that could not be searched go to
stderr and never stop the search. Exit 0 with hits, 1 without, 2 on error.
"""

from __future__ import annotations

import os
from typing import TextIO

from ...util.text import visible
from ...inspect.findings import Finding
from ...inspect.scan.listing import ascii_json
from ...inspect.search.pattern import Pattern, PatternError
from ...inspect.search.root import SearchHit, search_root
from .args import UsageError, check_root


class GrepError(Exception):
    """The search cannot run (bad pattern, missing root)."""


def _mark(hit: SearchHit, color: bool) -> str:
    before, match, after = visible(hit.before, one_line=True), visible(hit.match, one_line=True), visible(hit.after, one_line=True)
    # Tabs and newlines would break the one-line context.
    before, match, after = (t.replace("\n", "↵").replace("\t", "→") for t in (before, match, after))
    if color:
        style = "1;32" if hit.seen else "1;31" if hit.seen is False else "1;33"
        return f"{before}\x1b[{style}m{match}\x1b[0m{after}"
    return f"{before}[[{match}]]{after}"


def _where(hit: SearchHit) -> str:
    msg = f"message {hit.message} ({hit.role})" if hit.message is not None else "tool output"
    seen = {True: "seen", False: "omitted", None: "unlinked"}[hit.seen]
    return f"{hit.path}: {msg} cp {hit.start}-{hit.end} {seen}"


def grep(root: str, pattern: Pattern, out: TextIO, err: TextIO, *, logs: str | None = None, rebase: str | None = None,
         as_json: bool = False, max_count: int | None = None) -> int:
    try:
        check_root(root)  # a directory, or a reachable s3://bucket/prefix
    except UsageError as exc:
        raise GrepError(str(exc)) from None
    if logs is not None and not os.path.isdir(logs):
        raise GrepError(f"{logs}: not a directory")
    try:
        pattern.compile()
    except PatternError as exc:
        raise GrepError(str(exc)) from None
    color = not as_json and out.isatty() and "NO_COLOR" not in os.environ
    hits = 0
    for ev in search_root(root, pattern, logs=logs, rebase=rebase, max_count=max_count):
        if isinstance(ev, Finding):
            where = ev.path or ev.locator or ""
            line = f":{ev.line}" if ev.line is not None else ""
            err.write(f"spillscope grep: {ev.code}: {visible(where, one_line=True)}{line}: {visible(ev.detail, one_line=True)}\n")
            continue
        hits += 1
        if as_json:
            out.write(ascii_json(ev.to_json()))
            out.write("\n")
        else:
            out.write(visible(_where(ev), one_line=True) + "\n    " + _mark(ev, color) + "\n")
    out.flush()
    return 0 if hits else 1
