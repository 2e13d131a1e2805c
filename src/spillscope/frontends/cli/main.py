"""The ``spillscope`` command line: ls, cat, grep, verify, prune, watch, demo, tui.

JSON output (``--json``) is the stable interface, documented in docs/cli.md; the human
output is a readable table. Exit codes: 0 ok, 1 findings at or above ``--fail-on``
(verify), a malformed artifact (cat) or a failed deletion (prune), 2 usage or I/O error,
3 ``verify`` checked no notice (and nothing reached ``--fail-on``).

This module holds the parser and ``main()`` (the exit codes); the argument types are in
args.py, ls/verify in inspect_cmds.py, cat/grep/prune/watch in adapters.py, stats in
stats.py and tui/demo/serve in tui_cmds.py. Each ``cmd_*`` here imports its command's
module only when it runs: building the parser imports no command's implementation, so a
``grep`` starts without the inspector's verify pass, the stats or the TUI's launcher.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import sys
from typing import Any, TextIO

from ... import __version__
from .args import (DEFAULT_FAIL_ON, MAX_COUNT, NOTHING_CHECKED_STATUS, SettingError, UsageError, add_timeout, finding_code,
                   parse_duration, parse_fail_on, non_negative_int, port_number, positive_int)
from .choose import choose as choose_agent
from .output import cell
from .suggest import close, did_you_mean
# The parser's vocabulary comes from modules that hold only it (or hold little else): the
# implementations behind these choices and defaults load when their command runs.
from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES
from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
from ...dialects import REGISTERED as AGENTS
from ...inspect.search.pattern import REGEX_SYNTAX
from ...inspect.scan.order import SORTS
from ...inspect.stats.tables import TABLES

__all__ = [
    "MAX_COUNT", "UsageError", "build_parser", "cmd_cat", "cmd_demo", "cmd_grep", "cmd_ls", "cmd_prune", "cmd_serve",
    "cmd_tui", "cmd_verify", "cmd_watch", "main", "parse_duration", "parse_fail_on", "port_number", "positive_int",
]


# Each command, imported when it runs (the module docstring says why). A command's own
# module may import what it likes: only the command that runs pays for it.

def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    from .inspect_cmds import cmd_ls as run

    return run(args, out)


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    from .inspect_cmds import cmd_verify as run

    return run(args, out)


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    from .stats import cmd_stats as run

    return run(args, out)


def cmd_cat(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import cmd_cat as run

    return run(args, out)


def cmd_grep(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import cmd_grep as run

    return run(args, out)


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import cmd_prune as run

    return run(args, out)


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    from .adapters import cmd_watch as run

    return run(args, out)


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .tui_cmds import cmd_demo as run

    return run(args, out)


def cmd_tui(args: argparse.Namespace, out: TextIO) -> int:
    from .tui_cmds import cmd_tui as run

    return run(args, out)


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    from .tui_cmds import cmd_serve as run

    return run(args, out)


class _Version(argparse.Action):
    """``--version``: the version, and whether the C accelerator runs (and why not)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from ...util.native import describe

        sys.stdout.write(f"spillscope {__version__} (Python {sys.version.split()[0]}; {describe()})\n")
        parser.exit()


USAGE = """%(prog)s [-h] [--version] COMMAND [ARGS]
       %(prog)s ROOT [--logs DIR] [--rebase OLD_ROOT]   the terminal UI on ROOT (as `spillscope tui ROOT`)
       %(prog)s help [COMMAND]                          a command's options"""

EPILOG = f"""exit status: 0 ok; 1 findings at or above verify's --fail-on (default {DEFAULT_FAIL_ON}), a malformed
artifact (cat), no hit (grep) or a failed deletion (prune); 2 usage or I/O error; {NOTHING_CHECKED_STATUS} verify checked
no notice (no --logs, no notice in them, every locator outside the root). See docs/cli.md."""


def _help_width() -> int:
    """``shutil.get_terminal_size()``'s columns less 2, argparse's help width, without
    importing shutil: argparse does at every ``add_argument`` (shutil brings bz2, lzma and
    zlib, 3 ms of ``grep``'s start-up for a width only ``--help`` uses)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Help(argparse.HelpFormatter):
    """argparse's formatter, its width from :func:`_help_width`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _help_width() if width is None else width)


class _RawHelp(_Help, argparse.RawDescriptionHelpFormatter):
    """The top-level help: its description and epilog as written."""


class _Parser(argparse.ArgumentParser):
    """A command's parser, with :class:`_Help` for its help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)


#: The commands, in the order ``--help`` lists them.
COMMANDS = ("ls", "stats", "cat", "verify", "prune", "grep", "watch", "demo", "tui", "serve", "help")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or (``only``) of that one alone: ``spillscope grep`` parses
    its own arguments without setting up the other ten commands' (argparse's set-up of all of
    them: 3 ms warm, several more in a fresh process, of grep's 60 ms start-up)."""

    def want(name: str) -> bool:
        return only is None or name == only

    p = argparse.ArgumentParser(prog="spillscope", description="Inspect the spill storage of an agent harness.",
                                usage=USAGE, epilog=EPILOG, formatter_class=_RawHelp)
    p.add_argument("--version", action=_Version, nargs=0, help="the version, and whether the C accelerator is active")
    sub = p.add_subparsers(dest="command", title="commands", metavar="COMMAND", prog="spillscope", parser_class=_Parser)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("root", metavar="ROOT", help="the spill root")
        sp.add_argument("--logs", metavar="DIR", help="session logs directory (links notices to artifacts)")
        sp.add_argument("--rebase", metavar="OLD_ROOT", help="treat locators under OLD_ROOT as under ROOT (a moved or copied root)")
        sp.add_argument("--agent", choices=AGENTS, help="whose tree ROOT is (default: detected from its layout)")
        add_timeout(sp)
        limits(sp)

    def limits(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--max-line-bytes", type=positive_int, default=DEFAULT_MAX_LINE_BYTES, metavar="N",
                        help=f"longest transcript line read (default {DEFAULT_MAX_LINE_BYTES})")
        sp.add_argument("--max-log-line-bytes", type=positive_int, default=DEFAULT_MAX_LOG_LINE_BYTES, metavar="N",
                        help=f"longest session-log line read (default {DEFAULT_MAX_LOG_LINE_BYTES})")

    if want("ls"):
        sp = sub.add_parser("ls", help="sessions and artifacts with kind, size, age and findings")
        common(sp)
        sp.add_argument("--sort", choices=SORTS, default="name", help="size: largest first; age: oldest first (default name)")
        sp.add_argument("--session", metavar="ID", help="only this session (its id, dir name or 12-hex hash)")
        sp.add_argument("--kind", choices=("tool-output", "session-reference-transcript", "unknown"), help="only artifacts of this kind")
        sp.add_argument("--older-than", type=parse_duration, metavar="DURATION", help="only artifacts strictly older than this (e.g. 7d)")
        sp.add_argument("--finding", type=finding_code, metavar="CODE", help="only artifacts with this finding code (e.g. orphan-artifact)")
        sp.add_argument("--json", action="store_true", help="ASCII-only JSON (docs/cli.md), not a table")
        sp.set_defaults(func=cmd_ls)

    if want("stats"):
        sp = sub.add_parser("stats", help="where the bytes are: totals by session, tool, kind and day; what the sweep deletes next")
        common(sp)
        sp.add_argument("--top", type=positive_int, default=10, metavar="N", help="largest sessions and files listed (default 10)")
        sp.add_argument("--retention", type=parse_duration, metavar="DURATION",
                        help="the cleanup period the sweep forecast uses (default: the agent's own; dsh 30d)")
        sp.add_argument("--table", choices=TABLES, help="only this table (with --csv: which table; default sessions)")
        sp.add_argument("--json", action="store_true", help="ASCII-only JSON (docs/cli.md), not tables")
        sp.add_argument("--csv", action="store_true", help="one table as CSV (see --table)")
        sp.set_defaults(func=cmd_stats)

    if want("cat"):
        sp = sub.add_parser("cat", help="the reassembled exact text of an artifact")
        sp.add_argument("artifact", help="a saved transcript or tool output (a path, or an s3:// URL)")
        sp.add_argument("--message", type=positive_int, metavar="N", help="only message N (1-based)")
        sp.add_argument("--json", action="store_true", help="ASCII-only JSON: every value survives exactly")
        sp.add_argument("--raw", action="store_true", help="the exact bytes: controls as they are, nothing added (default: shown inert)")
        add_timeout(sp)
        limits(sp)
        sp.set_defaults(func=cmd_cat)

    if want("verify"):
        sp = sub.add_parser("verify", help=f"check every notice against its artifact; exit 1 on findings, "
                                            f"{NOTHING_CHECKED_STATUS} if no notice was checked")
        common(sp)
        sp.add_argument("--retention", type=parse_duration, metavar="DURATION",
                        help="flag what the backend's expiry sweep would delete at this retention (e.g. 30d; prune's rule)")
        sp.add_argument("--fail-on", type=parse_fail_on, default=parse_fail_on(DEFAULT_FAIL_ON), metavar="CODES",
                        help=f"comma-separated finding codes or severities that make verify exit 1 (default: "
                             f"{DEFAULT_FAIL_ON}, i.e. warnings and errors; 'error' only errors; 'none' nothing)")
        sp.add_argument("--json", action="store_true", help="ASCII-only JSON (docs/cli.md), not a report")
        sp.set_defaults(func=cmd_verify)

    if want("prune"):
        sp = sub.add_parser("prune", help="delete expired artifacts as the backend's sweep does (dry run unless --apply)")
        sp.add_argument("root", help="the spill root")
        sp.add_argument("--older-than", type=parse_duration, metavar="DURATION",
                        help="delete files whose mtime is strictly older than this (default 30d; another agent: its own rule)")
        dry = sp.add_mutually_exclusive_group()
        dry.add_argument("--apply", action="store_true", help="delete (default: only list what would go)")
        # prune is a dry run by default; --dry-run says so explicitly (a script may want it said).
        dry.add_argument("--dry-run", action="store_true", help="only list what would go (the default; --apply deletes)")
        sp.add_argument("--logs", help="session logs: keep every artifact an active log still names")
        sp.add_argument("--keep-active", type=parse_duration, metavar="DURATION",
                        help="a log written within this is active (default 24h; needs --logs)")
        sp.add_argument("--max-log-line-bytes", type=positive_int, default=DEFAULT_MAX_LOG_LINE_BYTES, metavar="N",
                        help=f"longest session-log line parsed (default {DEFAULT_MAX_LOG_LINE_BYTES})")
        sp.add_argument("--agent", choices=AGENTS, help="whose tree ROOT is (default: detected from its layout)")
        sp.add_argument("--json", action="store_true", help="ASCII-only JSON (docs/cli.md), not a table")
        sp.set_defaults(func=cmd_prune)

    if want("grep"):
        sp = sub.add_parser("grep", help="search the exact text of every transcript message and tool output; exit 1 if none",
                            epilog=f"-E: {REGEX_SYNTAX}. Unsupported syntax is an error (exit 2).")
        sp.add_argument("pattern", help="a fixed string (default) or, with -E, an RE2 regex (linear time)")
        common(sp)
        sp.add_argument("-i", "--ignore-case", action="store_true", help="match regardless of case")
        matcher = sp.add_mutually_exclusive_group()
        matcher.add_argument("-E", "--regex", action="store_true", help="PATTERN is an RE2 regex (syntax below)")
        # grep's spelling of the default: a script written for grep -F runs unchanged.
        matcher.add_argument("-F", "--fixed-strings", action="store_true",
                             help="PATTERN is a fixed string (the default)")
        sp.add_argument("--json-pattern", action="store_true",
                        help='PATTERN is a JSON string literal (for NUL, controls, lone surrogates: \'"\\ud800"\')')
        sp.add_argument("--json", action="store_true", help="JSON Lines, one object per hit")
        sp.add_argument("-m", "--max-count", type=positive_int, metavar="N", help="stop after N hits per artifact")
        sp.add_argument("-n", "--line-number", action="store_true",
                        help="the line of each hit (of the decoded text; a transcript's per message)")
        sp.add_argument("-C", "--context", type=non_negative_int, default=0, metavar="N",
                        help="N lines of context before and after each hit (implies -n)")
        listing = sp.add_mutually_exclusive_group()
        listing.add_argument("-l", "--files-with-matches", action="store_true", help="only the artifacts with a hit")
        listing.add_argument("-c", "--count", action="store_true", help="only the number of hits per artifact with any")
        listing.add_argument("-q", "--quiet", action="store_true",
                             help="write nothing; stop at the first hit (exit 0 on a hit, 1 without, 2 on error)")
        sp.add_argument("--session", action="append", metavar="ID",
                        help="only this session (its id in the logs or its dir's name; another agent's session id); "
                             "repeatable")
        sp.add_argument("--kind", action="append", choices=("transcript", "tool-output", "spill", "unknown"),
                        help="only artifacts of this kind (spill = tool-output; unknown: dsh only); repeatable")
        sp.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the hits (auto: on a terminal, unless NO_COLOR is set)")
        sp.set_defaults(func=cmd_grep)

    if want("watch"):
        sp = sub.add_parser("watch", help="one line per change under a live spill root")
        sp.add_argument("root", help="the spill root to follow (a path, or an s3:// URL: polled)")
        sp.add_argument("--json", action="store_true", help="JSON Lines, one object per event")
        sp.add_argument("--initial", action="store_true", help="first list existing artifacts as added")
        add_timeout(sp)
        sp.add_argument("--agent", choices=AGENTS, help="whose tree ROOT is (default: detected from its layout)")
        sp.set_defaults(func=cmd_watch)

    if want("demo"):
        sp = sub.add_parser("demo", help="write the demo spill root and open it")
        sp.add_argument("dir", nargs="?", metavar="DIR", help="where to write it (default: a per-user temp dir)")
        sp.add_argument("--dir", dest="dir_option", metavar="DIR", help="the same, as an option")
        sp.add_argument("--no-tui", action="store_true", help="list it instead of opening the TUI")
        sp.set_defaults(func=cmd_demo)

    if want("tui"):
        sp = sub.add_parser("tui", help="open the terminal UI on a spill root")
        common(sp)
        sp.add_argument("--export-dir", metavar="DIR", help="the export key (e) writes only under DIR")
        sp.set_defaults(func=cmd_tui)

    if want("serve"):
        sp = sub.add_parser("serve", help="serve the terminal UI to a browser (textual-serve, works offline)")
        common(sp)
        sp.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
        sp.add_argument("--port", type=port_number, default=8000, help="the port to listen on (default 8000)")
        sp.add_argument("--allow-export", metavar="DIR",
                        help="let the browser's export key write under DIR on this machine (default: a download)")
        sp.set_defaults(func=cmd_serve)

    if want("help"):
        sp = sub.add_parser("help", help="this help, or a command's (`spillscope help verify`)")
        sp.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to explain")
        sp.set_defaults(func=lambda args, out: _cmd_help(p, args.topic, out))

    for parser in (p, *_commands(p).values()):
        # No abbreviated options: a script's `--log` must not change meaning when an
        # option starting with it is added; a slip gets a suggestion instead.
        parser.allow_abbrev = False
    for choice in sub._choices_actions:
        # `spillscope help CMD` (and `CMD --help`) says what CMD does, as the list does.
        command = sub.choices[choice.dest]
        command.description = command.description or choice.help
    return p


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each command's name and parser (argparse keeps them in its subparsers action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cmd_help(parser: argparse.ArgumentParser, topic: str | None, out: TextIO) -> int:
    """``spillscope help [COMMAND]``: the help, on stdout, exit 0."""
    commands = _commands(parser)
    if topic is None:
        out.write(parser.format_help())
    elif topic in commands:
        out.write(commands[topic].format_help())
    else:
        raise UsageError(f"help: no command {topic!r}{did_you_mean(topic, commands)}; the commands are "
                         + ", ".join(commands))
    return 0


def _is_root(word: str) -> bool:
    """A first word that is no command names a root when it looks like one or exists:
    `spillscope ROOT` opens the TUI. Else it may be a mistyped command."""
    return "/" in word or word.startswith(".") or word.startswith("~") or os.path.lexists(word)


def _unknown_command(parser: argparse.ArgumentParser, word: str) -> str | None:
    """The error for a first word close to a command that names no root, else None."""
    commands = _commands(parser)
    if _is_root(word) or not close(word, commands):
        return None
    return f"{word!r} is not a command{did_you_mean(word, commands)}, nor a spill root"


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args, with an unknown option blamed on the command it was given to (its usage,
    and the option it is closest to), not on the top-level parser."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = _commands(parser).get(args.command or "", parser)
        options = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
        hints = [did_you_mean(x.split("=", 1)[0], options) for x in extra if x.startswith("--")]
        command.error(f"unrecognized arguments: {' '.join(extra)}{''.join(h for h in hints if h)}")
    return args


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
    """Run the command ``argv`` names (``sys.argv[1:]`` by default); its exit status."""
    return run_argv(list(sys.argv[1:] if argv is None else argv))[0]


def run_argv(argv: list[str]) -> tuple[int, str | None]:
    """:func:`main`, and the command that ran (None if none did)."""
    # A command named first needs only its own parser (``help`` shows the others').
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS and argv[0] != "help" else None)
    if argv and argv[0] not in _commands(parser) and not argv[0].startswith("-"):
        problem = _unknown_command(parser, argv[0])
        if problem is not None:
            parser.print_usage(sys.stderr)
            sys.stderr.write(f"spillscope: {cell(problem)}\n")
            return 2, None
        argv = ["tui", *argv]  # `spillscope ROOT` opens the TUI
    try:
        args = _parse(parser, argv)
    except SystemExit as exc:
        return (2 if exc.code not in (0, None) else 0), None
    if args.command is None:
        parser.print_help()
        return 2, None
    return _run(args), args.command


def _run(args: argparse.Namespace) -> int:
    """The parsed command run: its exit status, or 2 for what it could not do (one line,
    no traceback), 130 for an interrupt."""
    if args.command in ("ls", "verify", "stats"):
        # One batch pass building acyclic records and their JSON: reference counting frees
        # them; the cyclic collector would only re-walk them as they pile up (superlinear).
        gc.disable()
    if args.command not in ("tui", "serve", "demo"):
        _batched(sys.stdout)  # (the TUI's driver does its own writing and flushing)
    try:
        choose_agent(args)  # where a path becomes a dialect: dsh keeps its commands, another agent gets its own
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
