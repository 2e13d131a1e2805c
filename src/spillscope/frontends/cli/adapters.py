"""``spillscope cat``, ``grep``, ``prune`` and ``watch``: argparse adapters over their own modules.

Each imports its module only when run (``ls`` needs none of them) and turns that module's
error into a ``UsageError``; separate so main.py holds only the parser and the exit codes.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from ...util.text import loads_exact
from .args import UsageError, open_root
from .output import write_json


def cmd_cat(args: argparse.Namespace, out: TextIO) -> int:
    from .cat import CatError, cat  # here: `ls` and `verify` need none of it

    store = open_root(args.artifact, "cat", timeout=args.timeout, check=False)  # a scheme cat cannot read is refused by name
    # An object is named as its store names it (S3://b/k is s3://b/k); a path as it was given.
    artifact = args.artifact if store.tree is not None else store.root
    try:
        return cat(artifact, out, message=args.message, as_json=args.json, raw=args.raw,
                   max_line_bytes=args.max_line_bytes)
    except CatError as exc:
        raise UsageError(str(exc)) from None


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    from .prune import PruneError, prune, prune_json, write_human

    open_root(args.root, "prune", check=False)  # never `./s3:/b/p` for s3://b/p: refused by name
    if args.logs is not None:
        open_root(args.logs, "--logs", check=False)
    try:
        older_than = args.older_than if args.older_than is not None else 30 * 86400.0
        result = prune(args.root, older_than=older_than, apply=args.apply, logs=args.logs,
                       keep_active=args.keep_active, max_log_line_bytes=args.max_log_line_bytes)
    except PruneError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        write_json(out, prune_json(result))
    else:
        write_human(result, out)
    return 1 if result.report.errors else 0


def pattern_text(args: argparse.Namespace) -> str:
    """grep's PATTERN as given, or decoded from JSON with ``--json-pattern``."""
    text = args.pattern
    if args.json_pattern:
        try:
            text = loads_exact(text)
        except ValueError as exc:
            raise UsageError(f"--json-pattern: PATTERN is not JSON: {exc}") from None
        if not isinstance(text, str):
            raise UsageError("--json-pattern: PATTERN is not a JSON string")
    return str(text)


def cmd_grep(args: argparse.Namespace, out: TextIO) -> int:
    from .grep import GrepError, grep
    from .grep_output import grep_mode
    from ...inspect.search.pattern import Pattern

    try:
        text = pattern_text(args)
        mode = grep_mode(args.files_with_matches, args.count, args.quiet)
        return grep(args.root, Pattern(text, regex=args.regex, ignore_case=args.ignore_case), out, sys.stderr,
                    logs=args.logs, rebase=args.rebase, as_json=args.json, max_count=args.max_count, mode=mode,
                    line_number=args.line_number, context=args.context, color=args.color, sessions=args.session,
                    kinds=args.kind, timeout=args.timeout)
    except GrepError as exc:
        raise UsageError(str(exc)) from None


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    from .watch import WatchUsageError, run_watch

    try:
        return run_watch(open_root(args.root, "watch", timeout=args.timeout, check=False), out, as_json=args.json,
                         initial=args.initial)
    except WatchUsageError as exc:
        raise UsageError(str(exc)) from None
