"""The ``spillscope`` command line: ls, cat, verify, watch, demo, tui.

JSON output (``--json``) is the stable interface, documented in docs/cli.md; the human
output is a readable table. Exit codes: 0 ok, 1 findings at or above ``--fail-on``
(verify) or a malformed artifact (cat), 2 usage or I/O error.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, TextIO

from . import __version__
from ._format import count, human_age, human_size
from ._fs import open_regular
from ._text import js_utf8, loads_exact, lone_surrogate_count, visible
from .inspect.findings import CODES, SEVERITY_RANK, Finding
from .inspect.scan import classify_name
from .inspect.listing import ascii_json, listing, listing_json
from .sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from .reference.constants import DEFAULT_MAX_LINE_BYTES

if TYPE_CHECKING:
    from .inspect.verify import Inspection
    from .reference.transcript import Incomplete

_encode_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii


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


class Progress:
    """A progress bar on stderr: only on a terminal, only once the work has run for half
    a second (``SPILLSCOPE_PROGRESS_AFTER`` seconds), redrawn at most ten times a second,
    cut to the terminal's width, and cleared when done."""

    WIDTH = 24
    UNITS = {"scan": "session dirs", "logs": "logs"}

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.after = float(os.environ.get("SPILLSCOPE_PROGRESS_AFTER", "0.5"))
        self.enabled = stream.isatty()
        self.shown = False
        self.last = 0.0
        # Block characters only where the stream can encode them.
        self.fill = "█░" if (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8" else "#-"

    def callback(self) -> Callable[[str, int, int | None], None] | None:
        """What to hand the core: nothing at all when no bar will be drawn."""
        return self if self.enabled else None

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        final = total is not None and done >= total
        if now - self.start < self.after or (now - self.last < 0.1 and not final):
            return
        self.last = now
        columns = shutil.get_terminal_size().columns
        self.stream.write("\r\x1b[K" + self.render(phase, done, total, now - self.start)[: max(columns - 1, 10)])
        self.stream.flush()
        self.shown = True

    def render(self, phase: str, done: int, total: int | None, elapsed: float) -> str:
        if phase == "verify":
            amount = human_size(done) + (f" / {human_size(total)}" if total is not None else "")
        else:
            amount = f"{done:,}" + (f"/{total:,}" if total is not None else "") + f" {self.UNITS.get(phase, 'items')}"
        if not total:
            return f"{phase:<6} {amount}  {elapsed:.1f}s"
        frac = min(done / total, 1.0)
        filled = int(frac * self.WIDTH)
        bar = self.fill[0] * filled + self.fill[1] * (self.WIDTH - filled)
        return f"{phase:<6} {bar} {frac:4.0%}  {amount}  {elapsed:.1f}s"

    def done(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _run_inspection(args: argparse.Namespace, check_content: bool) -> Inspection:
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    if args.logs is not None and not Path(args.logs).is_dir():
        raise UsageError(f"{args.logs}: not a directory")
    from .inspect.verify import inspect_root

    progress = Progress()
    try:
        return inspect_root(root, args.logs, retention_seconds=getattr(args, "retention", None),
                            rebase=args.rebase, check_content=check_content, progress=progress.callback(),
                            max_line_bytes=args.max_line_bytes, max_log_line_bytes=args.max_log_line_bytes)
    finally:
        progress.done()


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    now = time.time()
    if args.logs is None:
        # Names and lstat only: the parallel listing (the same JSON as the full path).
        if not Path(args.root).is_dir():
            raise UsageError(f"{args.root}: not a directory")
        progress = Progress()
        try:
            text = listing_json(args.root, now, progress=progress.callback())
        finally:
            progress.done()
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


def _write_table(data: dict[str, Any], out: TextIO) -> None:
    """The human ``ls``: a block per session dir, a line per artifact, then the rest."""
    artifacts = sum(s["artifactCount"] for s in data["sessions"])
    out.write(f"{visible(data['root'])}  ({count(len(data['sessions']), 'session')}, {count(artifacts, 'artifact')})\n")
    listed = set()
    for s in data["sessions"]:
        label = s["sessionId"] if s["sessionId"] is not None else "(session id unknown)"
        badge = ("  [" + ", ".join(s["findings"]) + "]") if s["findings"] else ""
        out.write(f"\n{s['dir']}  {visible(label)}  {count(s['artifactCount'], 'artifact')}  {s['mode']}{badge}\n")
        lines = []
        for a in s["artifacts"]:
            listed.add(a["path"])
            badge = ("  [" + ", ".join(a["findings"]) + "]") if a["findings"] else ""
            lines.append(f"  {a['kind']:<29} {human_size(a['size']):>10} {human_age(a['ageSeconds']):>5}  {visible(a['name'])}{badge}\n")
        out.write("".join(lines))
    others = [Finding(**f) for f in data["findings"] if f["path"] not in listed]
    if others:
        out.write("\nOther findings:\n")
        for f in others:
            out.write(f"  {f.severity:<7} {f.code:<20} {visible(f.where)}  {visible(f.detail)}\n")


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    ins = _run_inspection(args, check_content=True)
    failing = [f for f in ins.findings if f.code in args.fail_on]
    if args.json:
        _write_json(out, {"summary": ins.summary(), "findings": [f.to_json() for f in ins.findings],
                          "failOn": sorted(args.fail_on), "ok": not failing})
    else:
        checked = len(ins.references) + len(ins.tool_spills)
        out.write(f"verified {ins.root}: {count(len(ins.scan.artifacts()), 'artifact')}, {count(checked, 'notice')}, {count(len(ins.findings), 'finding')}\n")
        for f in sorted(ins.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)):
            out.write(f"{f.severity:<7} {f.code:<20} {visible(f.where)}\n        {visible(f.detail)}\n")
            if f.locator and f.locator != f.path:
                out.write(f"        locator: {visible(f.locator)}\n")
        out.write(("FAIL" if failing else "OK") + f": {count(len(failing), 'finding')} at or above --fail-on\n")
    return 1 if failing else 0


def _write_json(out: TextIO, data: Any) -> None:
    out.write(ascii_json(data))
    out.write("\n")


def _artifact_kind(path: str) -> str:
    from .reference.transcript import departs_from_title

    kind = classify_name(os.path.basename(path))[1]
    if kind == "session-reference-transcript" and departs_from_title(path):
        return "tool-output"  # named like a transcript, but its content is not one
    return kind


def _is_transcript(path: str) -> bool:
    try:
        fd = open_regular(path)
    except OSError:
        return False
    try:
        return os.pread(fd, 64, 0).startswith("## Referenced session".encode())
    finally:
        os.close(fd)


def cmd_cat(args: argparse.Namespace, out: TextIO) -> int:
    path = args.artifact
    try:
        # The same rule as the inspector's kinds: a transcript's name and a start that
        # does not depart from its title; any other file whose content is a transcript.
        kind = _artifact_kind(path)
        if kind == "session-reference-transcript" or _is_transcript(path):
            return _cat_transcript(args, path, kind, out)
        return _cat_file(args, path, kind, out)
    except BrokenPipeError:
        raise
    except FileNotFoundError:
        raise UsageError(f"{path}: no such artifact (expired or never written)")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}")


def _cat_file(args: argparse.Namespace, path: str, kind: str, out: TextIO) -> int:
    """A tool output: streamed in chunks, so a huge file is never held whole."""
    if args.message is not None and args.message != 1:
        raise UsageError(f"{path}: no message {args.message}: a tool output is one message")
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    with os.fdopen(open_regular(path), "rb") as f:
        if args.json:
            out.write('{"path": ' + _encode_ascii(path) + ', "kind": ' + _encode_ascii(kind)
                      + ', "metadata": null, "messages": [{"index": 1, "role": null, "text": "')
            while chunk := f.read(1 << 20):
                out.write(_encode_ascii(decoder.decode(chunk))[1:-1])
            out.write(_encode_ascii(decoder.decode(b"", final=True))[1:-1] + '"}], "complete": true}\n')
            return 0
        while chunk := f.read(1 << 20):
            _emit_text(args, out, decoder.decode(chunk))
        _emit_text(args, out, decoder.decode(b"", final=True))
    return 0


def _emit_text(args: argparse.Namespace, out: TextIO, text: str) -> None:
    lone = lone_surrogate_count(text)
    if lone:
        sys.stderr.write(f"spillscope: warning: {lone} lone surrogate(s) written as U+FFFD (use --json to keep them)\n")
    if out.isatty() and not args.raw:
        text = visible(text)
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(js_utf8(text))
        buffer.flush()
    else:
        out.write(js_utf8(text).decode("utf-8"))


def _cat_transcript(args: argparse.Namespace, path: str, kind: str, out: TextIO) -> int:
    from .reference.transcript import MessageStart, TranscriptError, iter_transcript

    want = args.message
    last = 0  # messages are numbered 1..n in order (anything else is malformed)

    def counted() -> Iterator[Any]:
        nonlocal last
        for ev in iter_transcript(path, max_line_bytes=args.max_line_bytes):
            if isinstance(ev, MessageStart):
                last = ev.index
            yield ev

    incomplete: Incomplete | None = None
    try:
        if args.json:
            incomplete = _cat_transcript_json(path, kind, counted(), want, out)
        else:
            incomplete = _cat_transcript_plain(args, counted(), want, out)
    except TranscriptError as exc:
        out.flush()
        sys.stderr.write(f"spillscope: malformed artifact: {exc}\n")
        return 1
    if incomplete is not None:
        sys.stderr.write(f"spillscope: warning: incomplete artifact ({path}:{incomplete.line}: {incomplete.reason})\n")
    if want is not None and want > last:
        out.flush()
        sys.stderr.write(f"spillscope: no message {want}: the transcript has {count(last, 'message')}\n")
        return 2
    return 0


def _cat_transcript_json(path: str, kind: str, events: Iterable[Any], want: int | None, out: TextIO) -> Incomplete | None:
    from .reference.transcript import Fragment, Incomplete, MessageEnd, MessageStart, TranscriptError, TranscriptMetadata

    write = out.write
    incomplete = None
    first = True
    open_message = False
    headed = False

    def head(metadata: str) -> None:
        nonlocal headed
        write('{\n  "path": ' + _encode_ascii(path) + ',\n  "kind": ' + _encode_ascii(kind)
              + ',\n  "metadata": ' + metadata + ',\n  "messages": [\n')
        headed = True

    try:
        for ev in events:
            if isinstance(ev, Fragment):
                if open_message:
                    write(_encode_ascii("".join(ev.texts))[1:-1])
            elif isinstance(ev, MessageStart):
                if want is None or ev.index == want:
                    write(("" if first else ",\n") + f'    {{"index": {ev.index}, "role": {_encode_ascii(ev.role)}, "text": "')
                    first, open_message = False, True
            elif isinstance(ev, MessageEnd):
                if open_message:
                    write('"}')
                    open_message = False
            elif isinstance(ev, TranscriptMetadata):
                head(json.dumps(ev.to_json(), ensure_ascii=True))
            elif isinstance(ev, Incomplete):
                incomplete = ev
                if open_message:
                    write('"}')
                    open_message = False
    except TranscriptError as exc:
        # Still one whole document: what was read before the bad line, and where it is.
        # (A message cut off by the error carries the text read up to it.)
        if open_message:
            write('"}')
        if not headed:
            head("null")
        write('\n  ],\n  "complete": false,\n  "error": ' + ascii_json({"line": exc.line, "reason": exc.reason}) + "\n}\n")
        raise
    if not headed:  # cut off before its metadata: still one whole JSON document
        head("null")
    write('\n  ],\n  "complete": ' + ("false" if incomplete else "true") + "\n}\n")
    return incomplete


def _cat_transcript_plain(args: argparse.Namespace, events: Iterable[Any], want: int | None, out: TextIO) -> Incomplete | None:
    from .reference.transcript import Fragment, Incomplete, MessageEnd, MessageStart

    incomplete = None
    emitting = False
    parts: list[str] = []
    for ev in events:
        if isinstance(ev, Fragment):
            if emitting:
                parts.append("".join(ev.texts))
                if len(parts) >= 64:
                    _emit_text(args, out, "".join(parts))
                    parts.clear()
        elif isinstance(ev, MessageStart):
            emitting = want is None or ev.index == want
            if emitting and want is None:
                _emit_text(args, out, f"{'' if ev.index == 1 else chr(10)}### Message {ev.index}: {ev.role}\n\n")
        elif isinstance(ev, (MessageEnd, Incomplete)):
            if isinstance(ev, Incomplete):
                incomplete = ev
            if emitting and parts:
                _emit_text(args, out, "".join(parts))
                parts.clear()
            if want is None and emitting:
                _emit_text(args, out, "\n")
            emitting = False
    return incomplete


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    from .inspect.watch import watch_root

    stop = threading.Event()
    try:
        for batch in watch_root(args.root, stop=stop, initial=args.initial):
            for ev in batch:
                if args.json:
                    out.write(json.dumps(ev.to_json(), ensure_ascii=True) + "\n")
                else:
                    out.write(f"{time.strftime('%H:%M:%S')}  {ev.event:<13} {ev.kind or '-':<29} {visible(ev.path)}\n")
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
    try:
        return int(args.func(args, sys.stdout))
    except UsageError as exc:
        sys.stderr.write(f"spillscope: {exc}\n")
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error; silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
