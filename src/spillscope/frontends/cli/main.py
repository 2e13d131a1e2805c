"""The ``spillscope`` command line: ls, cat, grep, verify, prune, watch, demo, tui.

JSON output (``--json``) is the stable interface, documented in docs/cli.md; the human
output is a readable table. Exit codes: 0 ok, 1 findings at or above ``--fail-on``
(verify), a malformed artifact (cat) or a failed deletion (prune), 2 usage or I/O error.

This module holds the parser and ``main()`` (the exit codes); the argument types are in
args.py, ls/verify in inspect_cmds.py, cat/grep/prune/watch in adapters.py and
tui/demo/serve in tui_cmds.py (all re-exported here).
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from typing import TextIO

from ... import __version__
from .args import MAX_COUNT, UsageError, parse_duration, parse_fail_on, port_number, positive_int
from .adapters import cmd_cat, cmd_grep, cmd_prune, cmd_watch
from .inspect_cmds import cmd_ls, cmd_verify
from .output import cell
from .progress import SettingError
from .tui_cmds import cmd_demo, cmd_serve, cmd_tui
from ...formats.sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from ...inspect.search.pattern import REGEX_SYNTAX
from ...reference.constants import DEFAULT_MAX_LINE_BYTES

__all__ = [
    "MAX_COUNT", "UsageError", "build_parser", "cmd_cat", "cmd_demo", "cmd_grep", "cmd_ls", "cmd_prune", "cmd_serve",
    "cmd_tui", "cmd_verify", "cmd_watch", "main", "parse_duration", "parse_fail_on", "port_number", "positive_int",
]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spillscope", description="Inspect the spill storage of an agent harness.")
    p.add_argument("--version", action="version", version=f"spillscope {__version__}")
    sub = p.add_subparsers(dest="command")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("root", help="the spill root")
        sp.add_argument("--logs", help="session logs directory (links notices to artifacts)")
        sp.add_argument("--rebase", metavar="OLD_ROOT", help="treat locators under OLD_ROOT as under ROOT (a moved or copied root)")
        limits(sp)

    def limits(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--max-line-bytes", type=positive_int, default=DEFAULT_MAX_LINE_BYTES, metavar="N",
                        help=f"longest transcript line read (default {DEFAULT_MAX_LINE_BYTES})")
        sp.add_argument("--max-log-line-bytes", type=positive_int, default=DEFAULT_MAX_LOG_LINE_BYTES, metavar="N",
                        help=f"longest session-log line read (default {DEFAULT_MAX_LOG_LINE_BYTES})")

    sp = sub.add_parser("ls", help="sessions and artifacts with kind, size, age and findings")
    common(sp)
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_ls)

    sp = sub.add_parser("cat", help="the reassembled exact text of an artifact")
    sp.add_argument("artifact")
    sp.add_argument("--message", type=positive_int, metavar="N", help="only message N (1-based)")
    sp.add_argument("--json", action="store_true", help="ASCII-only JSON: every value survives exactly")
    sp.add_argument("--raw", action="store_true", help="write control characters as they are, even to a terminal")
    limits(sp)
    sp.set_defaults(func=cmd_cat)

    sp = sub.add_parser("verify", help="check every notice against its artifact; exit 1 on findings")
    common(sp)
    sp.add_argument("--retention", type=parse_duration, metavar="DURATION",
                    help="flag what the backend's expiry sweep would delete at this retention (e.g. 30d; prune's rule)")
    sp.add_argument("--fail-on", type=parse_fail_on, default=parse_fail_on("error"), metavar="CODES",
                    help="comma-separated finding codes or severities (default: error)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_verify)

    sp = sub.add_parser("prune", help="delete expired artifacts as the backend's sweep does (dry run unless --apply)")
    sp.add_argument("root", help="the spill root")
    sp.add_argument("--older-than", type=parse_duration, default=30 * 86400.0, metavar="DURATION",
                    help="delete files whose mtime is strictly older than this (default 30d)")
    sp.add_argument("--apply", action="store_true", help="delete (default: only list what would go)")
    sp.add_argument("--logs", help="session logs: keep every artifact an active log still names")
    sp.add_argument("--keep-active", type=parse_duration, metavar="DURATION",
                    help="a log written within this is active (default 24h; needs --logs)")
    sp.add_argument("--max-log-line-bytes", type=positive_int, default=DEFAULT_MAX_LOG_LINE_BYTES, metavar="N",
                    help=f"longest session-log line parsed (default {DEFAULT_MAX_LOG_LINE_BYTES})")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_prune)

    sp = sub.add_parser("grep", help="search the exact text of every transcript message and tool output; exit 1 if none",
                        epilog=f"-E: {REGEX_SYNTAX}. Unsupported syntax is an error (exit 2).")
    sp.add_argument("pattern", help="a fixed string (default) or, with -E, an RE2 regex (linear time)")
    common(sp)
    sp.add_argument("-i", "--ignore-case", action="store_true")
    sp.add_argument("-E", "--regex", action="store_true", help="PATTERN is an RE2 regex (syntax below)")
    sp.add_argument("--json-pattern", action="store_true",
                    help='PATTERN is a JSON string literal (for NUL, controls, lone surrogates: \'"\\ud800"\')')
    sp.add_argument("--json", action="store_true", help="JSON Lines, one object per hit")
    sp.add_argument("-m", "--max-count", type=positive_int, metavar="N", help="stop after N hits per artifact")
    sp.set_defaults(func=cmd_grep)

    sp = sub.add_parser("watch", help="one line per change under a live spill root")
    sp.add_argument("root")
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--initial", action="store_true", help="first list existing artifacts as added")
    sp.set_defaults(func=cmd_watch)

    sp = sub.add_parser("demo", help="write the demo spill root and open it")
    sp.add_argument("dir", nargs="?", metavar="DIR", help="where to write it (default: a per-user temp dir)")
    sp.add_argument("--dir", dest="dir_option", metavar="DIR", help="the same, as an option")
    sp.add_argument("--no-tui", action="store_true", help="list it instead of opening the TUI")
    sp.set_defaults(func=cmd_demo)

    sp = sub.add_parser("tui", help="open the terminal UI on a spill root")
    common(sp)
    sp.set_defaults(func=cmd_tui)

    sp = sub.add_parser("serve", help="serve the terminal UI to a browser (textual-serve, works offline)")
    common(sp)
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=port_number, default=8000)
    sp.set_defaults(func=cmd_serve)
    return p


def _batched(stream: TextIO) -> None:
    """Write ``stream`` in blocks, not a system call per write: with PYTHONUNBUFFERED=1 (or
    ``python -u``) stdout is write-through, and a grep of a common phrase made two system
    calls per hit (half its time). A terminal keeps line buffering, so lines show as they
    are found; the commands that stream (``watch``, ``cat``) flush each record themselves."""
    if isinstance(stream, io.TextIOWrapper):
        try:
            stream.reconfigure(write_through=False, line_buffering=stream.isatty())
        except (OSError, ValueError):
            pass  # a closed or detached stream: the command says so when it writes


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = {"ls", "cat", "grep", "verify", "prune", "watch", "demo", "tui", "serve"}
    if argv and argv[0] not in commands and not argv[0].startswith("-"):
        argv = ["tui", *argv]  # `spillscope ROOT` opens the TUI
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code not in (0, None) else 0
    if args.command is None:
        parser.print_help()
        return 2
    if args.command in ("ls", "verify"):
        # One batch pass building acyclic records and their JSON: reference counting frees
        # them; the cyclic collector would only re-walk them as they pile up (superlinear).
        gc.disable()
    if args.command not in ("tui", "serve", "demo"):
        _batched(sys.stdout)  # (the TUI's driver does its own writing and flushing)
    try:
        status = int(args.func(args, sys.stdout))
        sys.stdout.flush()  # here, not at exit: a closed pipe is handled below
        return status
    except (UsageError, SettingError) as exc:
        sys.stderr.write(f"spillscope: {cell(exc)}\n")
        return 2
    except ImportError as exc:
        from ...spill.s3 import MissingS3Extra

        if not isinstance(exc, MissingS3Extra):
            raise
        sys.stderr.write(f"spillscope: {cell(exc)}\n")
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the flush at exit, and keep the
        # status the command had already decided (verify decides before it writes).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(getattr(args, "exit_status", 0))
    except OSError as exc:
        # A path the command could not open (permissions, vanished, a port in use):
        # one line saying which and why, never a traceback.
        where = f"{cell(os.fsdecode(exc.filename))}: " if exc.filename is not None else ""
        sys.stderr.write(f"spillscope: {where}{exc.strerror or exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
