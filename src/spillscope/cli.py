"""The ``spillscope`` command line: ls, cat, verify, watch, demo, tui.

JSON output (``--json``) is the stable interface, documented in docs/cli.md; the human
output is a readable table. Exit codes: 0 ok, 1 findings at or above ``--fail-on``
(verify) or a malformed artifact (cat), 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__
from ._format import count, human_age, human_size
from ._text import loads_exact, visible
from .inspect.findings import CODES, SEVERITY_RANK, Finding
from .inspect.listing import ascii_json, listing, listing_json
from ._progress import Progress
from .sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from .reference.constants import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from .inspect.verify import Inspection


class UsageError(Exception):
    pass


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhdw]?)\s*", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 30s, 12h, 7d, 2w)")
    unit = {"": 86400, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
    return float(m.group(1)) * unit


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text!r}")
    return value


def parse_fail_on(text: str) -> set[str]:
    codes: set[str] = set()
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if part in SEVERITY_RANK:
            codes |= {c for c, (sev, _) in CODES.items() if SEVERITY_RANK[sev] >= SEVERITY_RANK[part]}
        elif part in CODES:
            codes.add(part)
        elif part == "none":
            continue
        else:
            raise argparse.ArgumentTypeError(f"unknown finding code or severity {part!r}")
    return codes


def _run_inspection(args: argparse.Namespace, check_content: bool) -> Inspection:
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    if args.logs is not None and not Path(args.logs).is_dir():
        raise UsageError(f"{args.logs}: not a directory")
    from .inspect.verify import inspect_root

    with Progress() as progress:
        return inspect_root(root, args.logs, retention_seconds=getattr(args, "retention", None),
                            rebase=args.rebase, check_content=check_content, progress=progress,
                            max_line_bytes=args.max_line_bytes, max_log_line_bytes=args.max_log_line_bytes)


def _check_listable(root: str) -> None:
    """An unreadable root is an I/O error (exit 2), not an empty listing of 0 sessions."""
    try:
        with os.scandir(root):
            pass
    except (FileNotFoundError, NotADirectoryError):
        return  # reported as "not a directory" where the root is first used
    except OSError as exc:
        raise UsageError(f"{root}: cannot read the spill root: {exc.strerror or exc}") from None


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    now = time.time()
    _check_listable(args.root)
    if args.logs is None:
        # Names and lstat only: the parallel listing (the same JSON as the full path).
        if not Path(args.root).is_dir():
            raise UsageError(f"{args.root}: not a directory")
        with Progress() as progress:
            text = listing_json(args.root, now, progress=progress)
        if args.json:
            out.write(text)
            out.write("\n")
            return 0
        data = loads_exact(text)
    else:
        data = listing(_run_inspection(args, check_content=True), now)
        if args.json:
            _write_json(out, data)
            return 0
    _write_table(data, out)
    return 0


def _cell(text: object) -> str:
    """Untrusted text for one row of human output: controls visible, newlines and tabs
    too, so no name or detail can start a row of its own (or forge one)."""
    return visible(str(text), one_line=True)


def _write_table(data: dict[str, Any], out: TextIO) -> None:
    """The human ``ls``: a block per session dir, a line per artifact, then the rest."""
    artifacts = sum(s["artifactCount"] for s in data["sessions"])
    out.write(f"{_cell(data['root'])}  ({count(len(data['sessions']), 'session')}, {count(artifacts, 'artifact')})\n")
    listed = set()
    for s in data["sessions"]:
        label = s["sessionId"] if s["sessionId"] is not None else "(session id unknown)"
        badge = ("  [" + ", ".join(s["findings"]) + "]") if s["findings"] else ""
        out.write(f"\n{_cell(s['dir'])}  {_cell(label)}  {count(s['artifactCount'], 'artifact')}  {_cell(s['mode'])}{_cell(badge)}\n")
        lines = []
        for a in s["artifacts"]:
            listed.add(a["path"])
            badge = ("  [" + ", ".join(a["findings"]) + "]") if a["findings"] else ""
            lines.append(f"  {_cell(a['kind']):<29} {human_size(a['size']):>10} {human_age(a['ageSeconds']):>5}  {_cell(a['name'])}{_cell(badge)}\n")
        out.write("".join(lines))
    others = [Finding(**f) for f in data["findings"] if f["path"] not in listed]
    if others:
        out.write("\nOther findings:\n")
        for f in others:
            out.write(f"  {f.severity:<7} {f.code:<20} {_cell(f.where)}  {_cell(f.detail)}\n")


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    ins = _run_inspection(args, check_content=True)
    failing = [f for f in ins.findings if f.code in args.fail_on]
    if args.json:
        _write_json(out, {"summary": ins.summary(), "findings": [f.to_json() for f in ins.findings],
                          "failOn": sorted(args.fail_on), "ok": not failing})
    else:
        checked = len(ins.references) + len(ins.tool_spills)
        out.write(f"verified {_cell(ins.root)}: {count(len(ins.scan.artifacts()), 'artifact')}, {count(checked, 'notice')}, {count(len(ins.findings), 'finding')}\n")
        for f in sorted(ins.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)):
            out.write(f"{f.severity:<7} {f.code:<20} {_cell(f.where)}\n        {_cell(f.detail)}\n")
            if f.locator and f.locator != f.path:
                out.write(f"        locator: {_cell(f.locator)}\n")
        out.write(("FAIL" if failing else "OK") + f": {count(len(failing), 'finding')} at or above --fail-on\n")
    return 1 if failing else 0


def _write_json(out: TextIO, data: Any) -> None:
    out.write(ascii_json(data))
    out.write("\n")


def cmd_cat(args: argparse.Namespace, out: TextIO) -> int:
    from ._cat import CatError, cat  # here: `ls` and `verify` need none of it

    try:
        return cat(args.artifact, out, message=args.message, as_json=args.json, raw=args.raw,
                   max_line_bytes=args.max_line_bytes)
    except CatError as exc:
        raise UsageError(str(exc)) from None


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    from .inspect.watch import watch_root

    stop = threading.Event()
    try:
        for batch in watch_root(args.root, stop=stop, initial=args.initial):
            for ev in batch:
                if args.json:
                    out.write(json.dumps(ev.to_json(), ensure_ascii=True) + "\n")
                else:
                    out.write(f"{time.strftime('%H:%M:%S')}  {ev.event:<13} {ev.kind or '-':<29} {_cell(ev.path)}\n")
            out.flush()
    except KeyboardInterrupt:
        stop.set()
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import write_demo

    if args.dir is not None and args.dir_option is not None and args.dir != args.dir_option:
        raise UsageError(f"two demo dirs given: {args.dir} and {args.dir_option}")
    demo = write_demo(args.dir if args.dir is not None else args.dir_option)
    out.write(f"demo written: spill root {demo.root}\n              logs       {demo.logs}\n")
    if args.no_tui or not sys.stdout.isatty():
        ns = argparse.Namespace(root=str(demo.root), logs=str(demo.logs), rebase=None, json=False, retention=None,
                                max_line_bytes=DEFAULT_MAX_LINE_BYTES, max_log_line_bytes=DEFAULT_MAX_LOG_LINE_BYTES)
        return cmd_ls(ns, out)
    return _run_tui(str(demo.root), str(demo.logs), None)


def cmd_tui(args: argparse.Namespace, out: TextIO) -> int:
    if not Path(args.root).is_dir():
        raise UsageError(f"{args.root}: not a directory")
    return _run_tui(args.root, args.logs, args.rebase)


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    if not Path(args.root).is_dir():
        raise UsageError(f"{args.root}: not a directory")
    from .serve import serve

    out.write(f"serving {args.root} on http://{args.host}:{args.port}\n")
    out.flush()
    serve(args.root, args.logs, host=args.host, port=args.port, rebase=args.rebase)
    return 0


def _run_tui(root: str, logs: str | None, rebase: str | None) -> int:
    from .tui.app import SpillscopeApp

    SpillscopeApp(root, logs, rebase=rebase).run()
    return 0


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
    sp.add_argument("--retention", type=parse_duration, metavar="DURATION", help="flag artifacts older than this (e.g. 7d)")
    sp.add_argument("--fail-on", type=parse_fail_on, default=parse_fail_on("error"), metavar="CODES",
                    help="comma-separated finding codes or severities (default: error)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_verify)

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
    sp.add_argument("--port", type=int, default=8000)
    sp.set_defaults(func=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    commands = {"ls", "cat", "verify", "watch", "demo", "tui", "serve"}
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
    try:
        return int(args.func(args, sys.stdout))
    except UsageError as exc:
        sys.stderr.write(f"spillscope: {_cell(exc)}\n")
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
