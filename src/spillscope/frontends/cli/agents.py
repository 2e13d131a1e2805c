"""``ls``/``verify``/``grep``/``prune``/``watch``/``tui`` on a tree dsh did not write.

:func:`~.choose.choose` (choose.py) picks the dialect once after parsing; dsh keeps its own
commands (inspect_cmds.py, grep.py) unchanged, and any other agent gets the commands below,
which print the same JSON shape (``verify --json``: ``summary``,
``findings[].code/path/line``, ``failOn``, ``notices.found/checked``, ``ok``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from ..format import count, human_age, human_size
from ...inspect.findings import SEVERITY_RANK, Finding
from ...inspect.scan.listing import listing_totals, select
from .args import NOTHING_CHECKED_STATUS, UsageError
from .output import Chunked, cell, write_json, write_json_members

if TYPE_CHECKING:
    from ...dialects.search import TextHit
    from .grep_output import Shown
    from ...dialects.records import Report

def _inspect(args: argparse.Namespace) -> Report:
    from ...dialects.records import Options

    report: Report = args.dialect.inspect(args.root, Options(now=time.time(),
                                                             retention_seconds=getattr(args, "retention", None)))
    return report


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    report = _inspect(args)
    notices = report.notices()
    on_disk = {s.path for s in report.files}
    failing = [f for f in report.findings if f.code in args.fail_on]
    # A verify that compared no notice must not pass (dsh's rule and exit status, 3):
    # notices none of which could be checked, transcripts without a notice, or a forced
    # --agent on a tree where that agent left nothing at all. Failing findings come first.
    none_checked = notices["nothingChecked"] is not None
    status = 1 if failing else NOTHING_CHECKED_STATUS if none_checked else 0
    args.exit_status = status
    if args.json:
        write_json_members(out, {"agent": report.dialect, "summary": report.summary(),
                                 "findings": Chunked(report.findings, Finding.to_json), "failOn": sorted(args.fail_on),
                                 "notices": notices, "retention": _retention_json(report), "ok": status == 0})
        return status
    out.write(f"verified {cell(report.tree)} ({cell(args.dialect.title)}): {count(len(report.files), 'spill file')}, "
              f"{count(len(report.transcripts), 'transcript')}, {count(notices['found'], 'notice')} found, "
              f"{notices['checked']} checked, {count(len(report.findings), 'finding')}\n")
    for f in sorted(report.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)):
        out.write(f"{f.severity:<7} {f.code:<20} {cell(f.where)}\n        {cell(f.detail)}\n")
        if f.locator and f.locator != f.path:
            out.write(f"        {locator_label(f, on_disk)} {cell(f.locator)}\n")
    by_status: dict[str, int] = {}
    for k in report.links:
        by_status[k.status] = by_status.get(k.status, 0) + 1
    if by_status:
        out.write("links: " + ", ".join(f"{n} {s}" for s, n in sorted(by_status.items())) + "\n")
    if report.retention is not None:
        out.write(f"retention: {cell(report.retention.source)}: {count(len(report.past_retention), 'file')} past it "
                  f"({cell(report.retention.scope)})\n")
    why = nothing_checked_words(report, args.dialect.title) if none_checked else None
    if failing:
        if why is not None:
            out.write(f"no notice checked: {why}\n")
        out.write(f"FAIL: {count(len(failing), 'finding')} at or above --fail-on\n")
    elif why is not None:
        out.write(f"NOTHING CHECKED: {why}\n")
    else:
        out.write(f"OK: {count(len(failing), 'finding')} at or above --fail-on\n")
    return status


def nothing_checked_words(report: Report, title: str) -> str:
    """Why no notice was checked, in the words of an agent's tree: the reason
    ``notices.nothingChecked`` codes (dsh's rule, its transcripts as the session logs), and
    what was checked instead. Text the tree holds is escaped here (``cell``)."""
    tree, code = cell(report.tree), report.notices()["nothingChecked"]
    files = count(len(report.files), "spill file")
    alone = f"; only the {files} themselves were checked" if report.files else ""
    if not (report.files or report.transcripts):
        return f"no {cell(title)} transcript or spill file found in {tree}"
    if code == "no-session-logs":
        return f"no {cell(title)} transcript found in {tree} (the notices are in them){alone}"
    if code == "no-notices":
        return f"no spill notice in the {count(len(report.transcripts), 'transcript')} found{alone}"
    if code == "outside-root":
        return f"every notice names a place outside {tree}"
    return f"none of the {count(report.notices()['found'], 'notice')} names a spill file"


def locator_label(f: Finding, on_disk: set[str]) -> str:
    """What a finding's ``locator`` is, said as what it is: ``file:`` only for a spill file
    that is there; otherwise the place the notice names, in the agent's own terms (an
    expired locator's file is gone, an outside one was never in the tree)."""
    return "file:" if f.locator in on_disk and f.code != "expired-locator" else "notice names:"


def _retention_json(report: Report) -> dict[str, Any] | None:
    rule = report.retention
    if rule is None:
        return None
    return {"seconds": rule.seconds, "source": rule.source, "scope": rule.scope, "pastRetention": len(report.past_retention)}


def listing(report: Report, now: float) -> dict[str, Any]:
    """The ``ls --json`` shape of dsh (sessions → artifacts with findings), for any agent.

    Spill files are grouped by the session they belong to (dialects/sessions.py: the
    transcript that links them, else their session dir): ``sessionId`` is that session, and
    each artifact says it too (``session``, with ``sessionSource``: ``link``, or ``layout``
    for a file only its dir places — an orphan's probable session)."""
    from ...dialects import get
    from ...dialects.sessions import session_owners

    owners = session_owners(get(report.dialect), report)
    codes: dict[str, set[str]] = {}
    for f in report.findings:
        for where in (f.path, f.locator):
            if where is not None:
                codes.setdefault(where, set()).add(f.code)
    links = report.status_of()
    sessions: dict[str, list[dict[str, Any]]] = {}
    for s in report.files:
        link = links.get(s.path)
        session, source = owners.get(s.path, (None, None))
        sessions.setdefault(session or "", []).append({
            "name": s.name, "path": s.path, "kind": "tool-output", "size": s.size, "mtime": s.mtime,
            "ageSeconds": round(now - s.mtime, 3), "mode": f"{s.mode:04o}", "symlink": s.is_symlink,
            "status": link.status if link else "orphan", "notice": None if link is None else
            {"transcript": link.transcript, "line": link.line, "form": link.form, "checks": list(link.checks)},
            "session": session, "sessionSource": source, "findings": sorted(codes.get(s.path, ()))})
    out = []
    for sid, arts in sessions.items():
        path = _session_dir(sid, [a["path"] for a in arts])
        out.append({"dir": os.path.basename(path) if path else sid, "path": path, "sessionId": sid or None,
                    "mode": None, "artifactCount": len(arts), "bytes": sum(a["size"] for a in arts),
                    "findings": sorted(codes.get(path or "", ())), "artifacts": arts})
    return {"root": report.tree, "agent": report.dialect, "sessions": out,
            "findings": [f.to_json() for f in report.findings], "summary": report.summary(),
            "totals": listing_totals(out)}


def _session_dir(session: str, paths: list[str]) -> str | None:
    """The dir the layout gives this session (the nearest ancestor named for it: Claude Code's
    ``<sessionId>/``, Gemini CLI's ``session-<id>/``) when every file is in it; else None (qwen-code
    and OpenCode keep a session's spills in a shared dir)."""
    if not session:
        return None
    dirs = set()
    for p in paths:
        d = os.path.dirname(p)
        while d and os.path.dirname(d) != d and session not in os.path.basename(d):
            d = os.path.dirname(d)
        if not d or session not in os.path.basename(d):
            return None
        dirs.add(d)
    return dirs.pop() if len(dirs) == 1 else None


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    from .inspect_cmds import narrowing_of

    now = time.time()
    data = listing(_inspect(args), now)
    # The listing has dsh's shape, so dsh's narrowing applies as it is (every spill file of
    # these agents is a ``tool-output``).
    narrowing = narrowing_of(args)
    in_root = None
    if narrowing is not None:
        in_root = data["totals"]["artifacts"]
        data = select(data, **narrowing)
    if args.json:
        write_json(out, data)
        return 0
    totals = data["totals"]
    out.write(f"{cell(data['root'])} ({cell(args.dialect.title)})  ({count(len(data['sessions']), 'session')}, "
              f"{count(totals['artifacts'], 'spill file')}, {human_size(totals['bytes'])})\n")
    if not totals["artifacts"] and in_root:
        out.write(f"no spill file matches the filter ({in_root:,} in the tree)\n")
    for s in data["sessions"]:
        badge = ("  [" + ", ".join(s["findings"]) + "]") if s["findings"] else ""
        head = f"session {s['sessionId']}" if s["sessionId"] else "no session (no transcript names these files)"
        where = f"  {s['path']}" if s["path"] else ""
        out.write(f"\n{cell(head + where)}  {count(s['artifactCount'], 'spill file')}{cell(badge)}\n")
        for a in s["artifacts"]:
            badge = ("  [" + ", ".join(a["findings"]) + "]") if a["findings"] else ""
            # An orphan's session is only where its dir puts it: said as probable, on its row.
            probable = "  (probable session: its dir)" if a["sessionSource"] == "layout" else ""
            out.write(f"  {cell(a['status']):<10} {human_size(a['size']):>10} {human_age(a['ageSeconds']):>5}  "
                      f"{cell(a['name'])}{cell(badge)}{probable}\n")
    # Each finding once: one a row's badge shows (by its path or by the file it names) is not
    # repeated below; the rest (an expired locator, a transcript's own) are listed here.
    shown = {(a["path"], c) for s in data["sessions"] for a in s["artifacts"] for c in a["findings"]}
    shown |= {(s["path"], c) for s in data["sessions"] for c in s["findings"]}
    others = [f for f in data["findings"] if (f["path"], f["code"]) not in shown and (f["locator"], f["code"]) not in shown]
    if others:
        out.write("\nOther findings:\n")
        on_disk = {a["path"] for s in data["sessions"] for a in s["artifacts"]}
        for f in others:
            where = f["path"] if f["line"] is None else f"{f['path']}:{f['line']}"
            out.write(f"  {f['severity']:<7} {f['code']:<20} {cell(where or '')}  {cell(f['detail'])}\n")
            if f["locator"] and f["locator"] != f["path"]:
                label = locator_label(Finding(f["code"], f["severity"], locator=f["locator"]), on_disk)
                out.write(f"  {'':<28}{label} {cell(f['locator'])}\n")
    return 0


def cmd_grep(args: argparse.Namespace, out: TextIO) -> int:
    """grep on another agent's tree, written by dsh's writer (grep_output.py): the same flags and formats."""
    from ...dialects.search import UnknownKind, search_tree
    from ...inspect.search.pattern import Pattern, PatternError
    from .adapters import pattern_text
    from .grep_output import Output, by_file, first_hit, grep_mode, use_color, write_file, write_finding

    try:
        compiled = Pattern(pattern_text(args), regex=args.regex, ignore_case=args.ignore_case).compile()
    except PatternError as exc:
        raise UsageError(str(exc)) from None
    mode = grep_mode(args.files_with_matches, args.count, args.quiet)
    how = Output(args.json, mode, args.line_number or args.context > 0, args.context,
                 use_color(args.color, out, args.json), line_key="text_line")
    events = search_tree(args.dialect, args.root, compiled, max_count=1 if mode in ("files", "quiet") else args.max_count,
                         line_numbers=how.line_number and mode == "hits", context=args.context if mode == "hits" else 0,
                         sessions=args.session, kinds=args.kind)
    hits = 0
    try:
        if mode == "quiet":
            return first_hit(events, sys.stderr)
        for item in by_file(events):
            if isinstance(item, Finding):
                write_finding(item, sys.stderr)
                continue
            hits += len(item)
            write_file(item[0].path, len(item), [_shown(h) for h in item] if mode == "hits" else [], how, out)
    except UnknownKind as exc:
        raise UsageError(str(exc)) from None
    out.flush()
    return 0 if hits else 1


def _shown(hit: TextHit) -> Shown:
    from .grep_output import Shown

    # ``path:LINE field`` locates the transcript string (the JSONL line and the string's place
    # in the record), as dsh's ``message N`` does; -n's ``line N`` follows, inside that string.
    where = hit.path if hit.line is None and hit.field is None else \
        f"{hit.path}:{hit.line} {hit.field}" if hit.line is not None else f"{hit.path} {hit.field}"
    if hit.row is not None:  # a database's row: ``opencode.db part prt_… field``, found by its id
        where = f"{hit.path} {hit.row[0]} {hit.row[1]} {hit.field}"
    # Yellow, dsh's "unlinked": this search does not say whether the model saw the hit.
    return Shown(hit.path, f"{where}: {hit.kind}", f" cp {hit.start}-{hit.end}", hit.before, hit.match, hit.after,
                 "1;33", hit.to_json(), hit.lines)


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    """The agent's own sweep rule, keeping what a recent transcript names; a dry run unless --apply."""
    from ...dialects.prune import apply, plan

    now = time.time()
    keep = args.keep_active if args.keep_active is not None else 24 * 3600.0
    result = plan(args.dialect, args.root, now=now, older_than=args.older_than, keep_active=keep)
    if args.apply:
        apply(result, now)
    rule = result.report.retention
    data = {"agent": result.report.dialect, "root": result.report.tree, "applied": bool(args.apply),
            "rule": None if rule is None else {"seconds": rule.seconds, "source": rule.source, "scope": rule.scope},
            "olderThanSeconds": result.cutoff_seconds, "keepActiveSeconds": keep,
            "candidates": [{"path": f.path, "size": f.size, "mtime": f.mtime} for f in result.delete],
            "deleted": result.deleted, "kept": [{"path": p, "reason": r} for p, r in result.kept.items()],
            "errors": [{"path": p, "error": e} for p, e in result.errors.items()]}
    if args.json:
        write_json(out, data)
    else:
        what = "deleted" if args.apply else "would delete"
        source = rule.source if rule is not None and args.older_than is None else f"--older-than {args.older_than:g} s"
        out.write(f"prune {cell(result.report.tree)} ({cell(args.dialect.title)}): {cell(source)}; keeping what a "
                  f"transcript written within {human_age(keep)} names\n")
        for f in result.delete:
            if not args.apply or f.path in result.deleted:
                out.write(f"  {what} {human_size(f.size):>10}  {cell(f.path)}\n")
        for p, r in result.kept.items():
            out.write(f"  kept  {cell(p)}: {cell(r)}\n")
        for p, e in result.errors.items():
            out.write(f"  ERROR {cell(p)}: {cell(e)}\n")
        n = len(result.deleted) if args.apply else len(result.delete)
        out.write(f"{what} {count(n, 'file')}" + ("" if args.apply else " (dry run, nothing deleted: --apply deletes)") + "\n")
    return 1 if result.errors else 0


def cmd_tui(args: argparse.Namespace, out: TextIO) -> int:
    from .tui_cmds import export_dir, refuse_without_terminal, run_app

    into = export_dir(args.export_dir) if getattr(args, "export_dir", None) is not None else None
    refuse_without_terminal()
    from ..tui.agent_app import AgentApp

    return run_app(AgentApp(args.dialect, args.root, export_dir=into))


#: How often ``watch`` lists an agent's tree (dialects/watch.py).
POLL_SECONDS = 1.0


def cmd_watch(args: argparse.Namespace, out: TextIO) -> int:
    """One line per added, modified or deleted spill file or transcript, until SIGINT/SIGTERM."""
    import json
    import threading

    from ...dialects.watch import poll
    from .watch import stop_on_signals, utc_stamp

    stop = threading.Event()
    restore = stop_on_signals(stop)
    # What is watched, and how to stop, said once on stderr (stdout stays one line per change).
    sys.stderr.write(f"spillscope: watching {cell(args.root)} ({cell(args.dialect.title)}): its spill files and "
                     f"transcripts, polled every {POLL_SECONDS:g} s; one line per added, modified or deleted file "
                     f"(Ctrl-C stops)\n")
    sys.stderr.flush()
    try:
        for batch in poll(args.dialect, args.root, stop=stop, interval=POLL_SECONDS, initial=args.initial):
            stamp = utc_stamp(time.time())
            for ch in batch:
                if args.json:
                    out.write(json.dumps({"time": stamp, "agent": args.dialect.name, **ch.to_json()},
                                         ensure_ascii=True) + "\n")
                else:
                    out.write(f"{stamp}  {ch.event:<9} {ch.kind:<11} {cell(ch.path)}\n")
            out.flush()
    finally:
        stop.set()
        restore()
    return 0
