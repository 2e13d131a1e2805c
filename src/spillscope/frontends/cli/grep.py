"""``spillscope grep``: every hit of a pattern in the exact text under a spill root.

Human output: one line per hit (path, message, line with ``-n``, offsets, seen/omitted) and
a line of context with controls made visible and the hit marked (``-C N``: N lines on each
side too). ``-l``: the artifacts with a hit; ``-c``: their hit counts. ``--json``: JSON Lines
(docs/cli.md). Findings about artifacts that could not be searched go to stderr and never
stop the search. ``-q``: nothing written, the search stopped at its first hit. Exit 0 with
hits, 1 without, 2 on error.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Callable, Collection, Iterator, TextIO

from ...inspect.findings import Finding
from ...inspect.search.pattern import Pattern, PatternError
from ...inspect.search.records import TRANSCRIPT
from ...inspect.search.root import Batch, SearchHit, json_lines, search_root_batches, searchers
from ...inspect.scan.searchable import searchable_plan
from ...inspect.search.split import PARTS_PER_WORKER, map_parts, parts, portable, workers, worth_splitting
from .args import UsageError, check_logs, open_root
from .grep_output import GrepError, Output, Shown, by_file, first_hit, use_color, write_file, write_finding

if TYPE_CHECKING:  # the line counter (and the transcript parser under it) loads only for -n/-C
    from ...inspect.search.lines import HitLines

__all__ = ["GrepError", "grep"]

#: The hit's colour by ``seen``: green seen, red omitted, yellow unlinked.
_STYLE = {True: "1;32", False: "1;31", None: "1;33"}


def _shown(hit: SearchHit, lines: HitLines | None) -> Shown:
    msg = f"message {hit.message} ({hit.role})" if hit.message is not None else "tool output"
    seen = {True: "seen", False: "omitted", None: "unlinked"}[hit.seen]
    return Shown(hit.path, f"{hit.path}: {msg}", f" cp {hit.start}-{hit.end} {seen}", hit.before, hit.match,
                 hit.after, _STYLE[hit.seen], hit.to_json(), lines)


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
    how = Output(as_json, mode, line_number or context > 0, context, use_color(color, out, as_json))
    # -l needs one hit per artifact to name it, -q one in all: the search of an artifact stops there.
    limit = 1 if mode in ("files", "quiet") else max_count
    # The text of a hit is shown only in human output: JSON, -l and -c write offsets at most.
    spans_only = as_json or mode != "hits"
    split = plan = None
    if store.tree is not None and logs is None and sessions is None and mode != "quiet" and worth_splitting():
        # A local root of many session dirs and a dense search: parts of it searched and
        # written in forked workers (all cores for the search's Python too), their output in
        # the root's order. Else the one search walks the root's entries listed here.
        plan = searchable_plan(store.tree)
        split = None if plan is None else parts(store.tree, plan, workers() * PARTS_PER_WORKER, pattern)
    if split is not None:
        cut = split

        def job(index: int, send: Callable[[_Piece], None]) -> _Piece:
            o, e = _Spool(), _Spool()
            o.full = e.full = lambda: send((0, o.take(), e.take(), None))
            try:
                # dense: parts() split it because most files may match (split.dense)
                n = _write(search_root_batches(store, pattern, max_count=limit, kinds=kinds, context=not spans_only,
                                               part=cut[index], dense=True), how, o, e)
            except BaseException as exc:  # what came before it is written first, as one process would
                return 0, o.take(), e.take(), portable(exc)
            return n, o.take(), e.take(), None

        # Loaded here, once, not in each worker: forked, a worker has what the parent loaded
        # (each importing the searchers and their parser was 0.1 s of CPU over the two workers
        # of a dense -E on the 1 GB mixed root, its search 1.1 s).
        searchers()
        hits = 0
        for n, text, errors, failed in map_parts(job, len(cut), workers()):
            hits += n
            out.write(text)
            err.write(errors)
            if failed is not None:
                out.flush()
                raise failed
        out.flush()
        return 0 if hits else 1
    events = search_root_batches(store, pattern, logs=logs, rebase=rebase, max_count=limit, sessions=sessions,
                                 kinds=kinds, context=not spans_only, part=plan)
    if mode == "quiet":
        return first_hit(events, err)
    hits = _write(events, how, out, err)
    out.flush()
    return 0 if hits else 1


#: A piece of a part's output: hits, stdout text, stderr text, and the exception that ended it.
_Piece = tuple[int, str, str, "BaseException | None"]
#: Characters of a part's output a worker holds before it hands them over.
SPOOL = 4 << 20


class _Spool(io.StringIO):
    """A worker's output stream: held until it is :data:`SPOOL` characters, then handed over
    (``full``) while the search goes on, so that a dense pattern's output is never held whole."""

    full: Callable[[], None] = staticmethod(lambda: None)

    def write(self, s: str) -> int:
        n = super().write(s)
        if self.tell() >= SPOOL:
            self.full()
        return n

    def take(self) -> str:
        text = self.getvalue()
        self.seek(0)
        self.truncate()
        return text


def _write(events: Iterator[Batch | Finding], how: Output, out: TextIO, err: TextIO) -> int:
    """The hits as ``how`` says (the findings to ``err``), artifact by artifact: how many."""
    hits = 0
    for item in by_file(events):
        if isinstance(item, Finding):
            write_finding(item, err)
            continue
        hits += len(item)
        shown: list[Shown] = []
        if how.mode == "hits" and how.as_json and not how.line_number:
            # Only the record is written: no line of context to make (a dense pattern's
            # hits are many, and this is the whole of each one's output).
            out.write(json_lines(item))
            continue
        if how.mode == "hits":
            lines: list[HitLines | None] = list(_with_lines(item, how.context)) if how.line_number else [None] * len(item)
            shown = [_shown(h, ln) for h, ln in zip(item, lines)]
        write_file(item[0].path, len(item), shown, how, out)
    return hits
