"""``spillscope tui``, ``demo`` and ``serve``: launching the terminal UI (locally or for a browser).

Separate because these are the commands that need a terminal or a web driver; textual is
imported only inside them, when they run.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES
from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
from .args import UsageError, check_logs, open_root
from .inspect_cmds import cmd_ls


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from ..demo import write_demo

    if args.dir is not None and args.dir_option is not None and args.dir != args.dir_option:
        raise UsageError(f"two demo dirs given: {args.dir} and {args.dir_option}")
    where = args.dir if args.dir is not None else args.dir_option
    if where is not None:
        open_root(where, "demo", check=False)  # a URL is refused by name, never written as ./s3:/…
    try:
        demo = write_demo(where)
    except FileExistsError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the demo to {exc.filename or where}: {exc.strerror or exc}") from None
    out.write(f"demo written: spill root {demo.root}\n              logs       {demo.logs}\n")
    if args.no_tui or not sys.stdout.isatty():
        ns = argparse.Namespace(root=str(demo.root), logs=str(demo.logs), rebase=None, json=False, retention=None, timeout=None,
                                max_line_bytes=DEFAULT_MAX_LINE_BYTES, max_log_line_bytes=DEFAULT_MAX_LOG_LINE_BYTES)
        return cmd_ls(ns, out)
    return _run_tui(str(demo.root), str(demo.logs), None, {}, None)


def cmd_tui(args: argparse.Namespace, out: TextIO) -> int:
    store = open_root(args.root, "tui", timeout=args.timeout)
    check_logs(args.logs)
    into = export_dir(args.export_dir) if args.export_dir is not None else None
    return _run_tui(store.root, args.logs, args.rebase, _limits(args), into)


def export_dir(path: str) -> str:
    """The export directory given (it must exist), absolute."""
    if not os.path.isdir(path):
        raise UsageError(f"{path}: not a directory (the export directory must exist)")
    return os.path.abspath(path)


def _limits(args: argparse.Namespace) -> dict[str, int]:
    """--max-line-bytes / --max-log-line-bytes for inspect_root (the TUI passes them on)."""
    return {"max_line_bytes": args.max_line_bytes, "max_log_line_bytes": args.max_log_line_bytes}


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..serve import MissingServeExtra, require_textual_serve, serve

    try:
        require_textual_serve()  # first: nothing is printed or bound for a server that cannot run
    except MissingServeExtra as exc:
        raise UsageError(str(exc)) from None
    store = open_root(args.root, "serve", timeout=args.timeout)
    check_logs(args.logs)
    dialect = getattr(args, "dialect", None)  # choose() set it: None or dsh, dsh's own TUI
    agent = None if dialect is None or dialect.name == "dsh" else dialect.name
    into = export_dir(args.allow_export) if args.allow_export is not None else None
    # serve prints the URL (with its token) once it listens, and never returns.
    serve(store.root, args.logs, host=args.host, port=args.port, rebase=args.rebase,
          limits=_limits(args) if agent is None else None, export_dir=into, out=out, timeout=args.timeout,
          agent=agent)
    return 0


def _run_tui(root: str, logs: str | None, rebase: str | None, limits: dict[str, int], export_dir: str | None) -> int:
    refuse_without_terminal()
    from ..tui.app import SpillscopeApp

    return run_app(SpillscopeApp(root, logs, rebase=rebase, limits=limits, export_dir=export_dir))


def refuse_without_terminal() -> None:
    """Textual reads keys from stdin and draws on stderr; with any of the three redirected it
    would write escape codes into a file or wait for keys forever. (textual-serve's web
    driver is the exception: it talks over pipes by design.)"""
    if not os.environ.get("TEXTUAL_DRIVER"):
        for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin), ("stderr", sys.stderr)):
            if stream is None or not stream.isatty():
                raise UsageError(f"the terminal UI needs a terminal, and {name} is not one; "
                                 "use `spillscope ls` or `spillscope verify` for text output")


def run_app(app: Any) -> int:
    """Run a Textual app in this terminal, or, started by ``spillscope serve`` for a browser
    tab, under :mod:`..webguard` (it ends with its server or its tab)."""
    from .. import webguard as _webguard

    if _webguard.under_web_driver():
        _webguard.die_with_parent()
        _webguard.guard(app)
        return _webguard.run_served(app.run)
    app.run()
    return 0
