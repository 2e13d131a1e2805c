"""The ``spillscope`` command line: ls, cat, grep, verify, prune, watch, demo, tui.

JSON output (``--json``) is the stable interface, documented in docs/cli.md; the human
output is a readable table. Exit codes: 0 ok, 1 findings at or above ``--fail-on``
(verify), a malformed artifact (cat) or a failed deletion (prune), 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from . import __version__
from ._format import count, human_age, human_size
from ._text import loads_exact, visible
from .inspect.findings import CODES, SEVERITY_RANK, Finding
from .inspect.listing import ascii_json, listing, listing_json
from ._progress import Progress, SettingError
from .sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from .reference.constants import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from .inspect.verify import Inspection


class UsageError(Exception):
    pass


#: The largest count or byte limit accepted (JavaScript's safe integers, as in the format).
MAX_COUNT = 2**53 - 1


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
    if value > MAX_COUNT:
        raise argparse.ArgumentTypeError(f"too large: {text!r} (at most {MAX_COUNT})")
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {value}")
    return value


def parse_fail_on(text: str) -> set[str]:
    codes: set[str] = set()
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        # An empty value would silently mean "fail on nothing": that must be asked for.
        raise argparse.ArgumentTypeError("empty: name finding codes or severities (or 'none' to fail on nothing)")
    for part in parts:
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
    from .inspect.coverage import coverage, describe

    ins = _run_inspection(args, check_content=True)
    cov = coverage(ins)
    failing = [f for f in ins.findings if f.code in args.fail_on]
    # A verify that compared nothing must not pass, whatever --fail-on says.
    status = 1 if failing or cov.none_checked else 0
    args.exit_status = status  # kept if the reader of our output goes away (`| head`)
    if args.json:
        _write_json(out, {"summary": ins.summary(), "findings": [f.to_json() for f in ins.findings],
                          "failOn": sorted(args.fail_on), "notices": cov.to_json(), "ok": status == 0})
        return status
    out.write(f"verified {_cell(ins.root)}: {count(len(ins.scan.artifacts()), 'artifact')}, "
              f"{count(cov.found, 'notice')} found, {cov.checked} checked, {count(len(ins.findings), 'finding')}\n")
    for f in sorted(ins.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)):
        out.write(f"{f.severity:<7} {f.code:<20} {_cell(f.where)}\n        {_cell(f.detail)}\n")
        if f.locator and f.locator != f.path:
            out.write(f"        locator: {_cell(f.locator)}\n")
    out.write("".join(_cell(line) + "\n" for line in describe(cov)))
    if cov.none_checked:
        out.write(f"FAIL: none of the {count(cov.with_locator, 'notice')} with a locator could be checked "
                  f"({cov.unchecked} outside the root); {count(len(failing), 'finding')} at or above --fail-on\n")
    else:
        out.write(("FAIL" if failing else "OK") + f": {count(len(failing), 'finding')} at or above --fail-on\n")
    return status


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


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    from ._prune import PruneError, prune, prune_json, write_human

    try:
        result = prune(args.root, older_than=args.older_than, apply=args.apply, logs=args.logs,
                       keep_active=args.keep_active, max_log_line_bytes=args.max_log_line_bytes)
    except PruneError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        _write_json(out, prune_json(result))
    else:
        write_human(result, out)
    return 1 if result.report.errors else 0


def cmd_grep(args: argparse.Namespace, out: TextIO) -> int:
    from ._grep import GrepError, grep
    from .inspect.search import Pattern

    try:
        text = args.pattern
        if args.json_pattern:
            try:
                text = loads_exact(text)
            except ValueError as exc:
                raise UsageError(f"--json-pattern: PATTERN is not JSON: {exc}") from None
            if not isinstance(text, str):
                raise UsageError("--json-pattern: PATTERN is not a JSON string")
        return grep(args.root, Pattern(text, regex=args.regex, ignore_case=args.ignore_case), out, sys.stderr,
                    logs=args.logs, rebase=args.rebase, as_json=args.json, max_count=args.max_count)
    except GrepError as exc:
        raise UsageError(str(exc)) from None


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    from ._watch import WatchUsageError, run_watch

    try:
        return run_watch(args.root, out, as_json=args.json, initial=args.initial)
    except WatchUsageError as exc:
        raise UsageError(str(exc)) from None


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import write_demo

    if args.dir is not None and args.dir_option is not None and args.dir != args.dir_option:
        raise UsageError(f"two demo dirs given: {args.dir} and {args.dir_option}")
    where = args.dir if args.dir is not None else args.dir_option
    try:
        demo = write_demo(where)
    except FileExistsError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot write the demo to {exc.filename or where}: {exc.strerror or exc}") from None
    out.write(f"demo written: spill root {demo.root}\n              logs       {demo.logs}\n")
    if args.no_tui or not sys.stdout.isatty():
        ns = argparse.Namespace(root=str(demo.root), logs=str(demo.logs), rebase=None, json=False, retention=None,
                                max_line_bytes=DEFAULT_MAX_LINE_BYTES, max_log_line_bytes=DEFAULT_MAX_LOG_LINE_BYTES)
        return cmd_ls(ns, out)
    return _run_tui(str(demo.root), str(demo.logs), None, {})


def cmd_tui(args: argparse.Namespace, out: TextIO) -> int:
    if not Path(args.root).is_dir():
        raise UsageError(f"{args.root}: not a directory")
    return _run_tui(args.root, args.logs, args.rebase, _limits(args))


def _limits(args: argparse.Namespace) -> dict[str, int]:
    """--max-line-bytes / --max-log-line-bytes for inspect_root (the TUI passes them on)."""
    return {"max_line_bytes": args.max_line_bytes, "max_log_line_bytes": args.max_log_line_bytes}


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    if not Path(args.root).is_dir():
        raise UsageError(f"{args.root}: not a directory")
    from .serve import serve

    out.write(f"serving {args.root} on http://{args.host}:{args.port}\n")
    out.flush()
    serve(args.root, args.logs, host=args.host, port=args.port, rebase=args.rebase, limits=_limits(args))
    return 0


def _run_tui(root: str, logs: str | None, rebase: str | None, limits: dict[str, int]) -> int:
    # Textual reads keys from stdin and draws on stderr; with any of the three redirected it
    # would write escape codes into a file or wait for keys forever. (textual-serve's web
    # driver is the exception: it talks over pipes by design.)
    if not os.environ.get("TEXTUAL_DRIVER"):
        for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin), ("stderr", sys.stderr)):
            if stream is None or not stream.isatty():
                raise UsageError(f"the terminal UI needs a terminal, and {name} is not one; "
                                 "use `spillscope ls` or `spillscope verify` for text output")
    from .tui.app import SpillscopeApp

    app = SpillscopeApp(root, logs, rebase=rebase, limits=limits)
    from . import _webguard

    if _webguard.under_web_driver():  # started by `spillscope serve` for a browser tab
        _webguard.die_with_parent()
        _webguard.guard(app)
        return _webguard.run_served(app.run)
    app.run()
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

    sp = sub.add_parser("grep", help="search the exact text of every transcript message and tool output; exit 1 if none")
    sp.add_argument("pattern", help="a fixed string (default) or, with -E, a Python regex")
    common(sp)
    sp.add_argument("-i", "--ignore-case", action="store_true")
    sp.add_argument("-E", "--regex", action="store_true", help="PATTERN is a regex")
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
    try:
        status = int(args.func(args, sys.stdout))
        sys.stdout.flush()  # here, not at exit: a closed pipe is handled below
        return status
    except (UsageError, SettingError) as exc:
        sys.stderr.write(f"spillscope: {_cell(exc)}\n")
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the flush at exit, and keep the
        # status the command had already decided (verify decides before it writes).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(getattr(args, "exit_status", 0))
    except OSError as exc:
        # A path the command could not open (permissions, vanished, a port in use):
        # one line saying which and why, never a traceback.
        where = f"{_cell(os.fsdecode(exc.filename))}: " if exc.filename is not None else ""
        sys.stderr.write(f"spillscope: {where}{exc.strerror or exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
