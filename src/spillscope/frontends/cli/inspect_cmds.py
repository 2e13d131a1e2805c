"""``spillscope ls`` and ``spillscope verify``: the inspection commands and their human tables.

Separate from the parser because these two are the hot path (no TUI, codec or watcher
imports), and from the thin adapters (adapters.py) because they own their output format.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any, TextIO

from ..format import count, human_age, human_size
from ...util.text import loads_exact
from ...storage import Storage
from ...inspect.findings import SEVERITY_RANK, Finding
from ...inspect.scan.listing import listing, listing_json, select
from .args import NOTHING_CHECKED_STATUS, UsageError, check_logs, open_root, require_usable
from .output import Chunked, cell, write_json, write_json_members
from .progress import Progress

if TYPE_CHECKING:
    from ...inspect.verify.inspection import Inspection


def _run_inspection(args: argparse.Namespace, check_content: bool, store: Storage | None = None) -> Inspection:
    if store is None:
        store = open_root(args.root, "verify", timeout=args.timeout)
    else:
        require_usable(store)
    check_logs(args.logs)
    from ...inspect.verify.inspection import inspect_root

    with Progress() as progress:
        return inspect_root(store, args.logs, retention_seconds=getattr(args, "retention", None),
                            rebase=args.rebase, check_content=check_content, progress=progress,
                            max_line_bytes=args.max_line_bytes, max_log_line_bytes=args.max_log_line_bytes)


def _retention_json(ins: Inspection, args: argparse.Namespace) -> dict[str, Any] | None:
    """``retention`` as every agent's verify --json gives it: dsh's sweep rule, and how many
    artifacts it would delete now (at ``--retention`` where one was asked for)."""
    from ...dialects.dsh import DIALECT
    from ...inspect.verify.expiry import forecast_past_retention

    from ...dialects.records import Options, applied_rule

    # The rule applied is the one reported: --retention's period where one was asked for.
    rule = applied_rule(DIALECT.retention(ins.root), Options(now=time.time(), retention_seconds=getattr(args, "retention", None)))
    if rule is None:
        return None  # as an agent that sweeps nothing says it (none for dsh so far)
    past = forecast_past_retention(ins.scan, rule.seconds, time.time(), ins.session_ids)
    return {"seconds": rule.seconds, "source": rule.source, "scope": rule.scope, "pastRetention": len(past)}


def _check_listable(root: str | None) -> None:
    """An unreadable root is an I/O error (exit 2), not an empty listing of 0 sessions."""
    if root is None:
        return  # an object store: its first listing says why it cannot be read
    try:
        with os.scandir(root):
            pass
    except (FileNotFoundError, NotADirectoryError):
        return  # reported ("does not exist") where the root is first used
    except OSError as exc:
        raise UsageError(f"{root}: cannot read the spill root: {exc.strerror or exc}") from None


def narrowing_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``select`` arguments ``ls`` was given, or None when it lists everything in name order."""
    asked = {"session": getattr(args, "session", None), "kind": getattr(args, "kind", None),
             "older_than": getattr(args, "older_than", None), "finding": getattr(args, "finding", None),
             "sort": getattr(args, "sort", "name")}
    return asked if any(v is not None for k, v in asked.items() if k != "sort") or asked["sort"] != "name" else None


def cmd_ls(args: argparse.Namespace, out: TextIO) -> int:
    """A listing: exit 0 however little it found, but an empty root, or logs that link no
    notice, are said in words after the table (a listing is not a check)."""
    now = time.time()
    notes: list[str] = []
    store = open_root(args.root, "ls", timeout=args.timeout, check=False)
    _check_listable(store.tree)
    narrowing = narrowing_of(args)
    if args.logs is None:
        # Names and lstat only: the parallel listing (the same JSON as the full path).
        require_usable(store)
        with Progress() as progress:
            text = listing_json(store, now, progress=progress)
        if args.json and narrowing is None:
            out.write(text)
            out.write("\n")
            return 0
        data = loads_exact(text)
    else:
        from ...inspect.verify.coverage import nothing_checked, not_checked_line

        ins = _run_inspection(args, check_content=True, store=store)
        data = listing(ins, now)
        reason = nothing_checked(ins)
        if reason is not None:
            notes.append(not_checked_line(reason, len(ins.scan.artifacts())))
    in_root = None
    if narrowing is not None:
        in_root = data["totals"]["artifacts"]
        data = select(data, **narrowing)
    if args.json:
        write_json(out, data)
        return 0
    _write_table(data, out, in_root)
    out.write("".join(cell(note) + "\n" for note in notes))
    return 0


def _write_table(data: dict[str, Any], out: TextIO, in_root: int | None = None) -> None:
    """The human ``ls``: a block per session dir, a line per artifact, then the rest.

    ``in_root``: the artifacts before a filter narrowed the listing (None: not narrowed) --
    a filter that keeps nothing must not say the root is empty."""
    totals = data["totals"]
    artifacts = totals["artifacts"]
    out.write(f"{cell(data['root'])}  ({count(totals['sessions'], 'session')}, {count(artifacts, 'artifact')}, "
              f"{human_size(totals['bytes'])})\n")
    if not artifacts and in_root:
        out.write(f"no artifact matches the filter ({in_root:,} in the root)\n")
    elif not artifacts:
        out.write("empty: no artifact in this root" + ("" if data["sessions"] else
                  " (a spill root holds session-<12 hex>/ dirs; is this one?)") + "\n")
    listed = set()
    for s in data["sessions"]:
        label = s["sessionId"] if s["sessionId"] is not None else "(session id unknown)"
        badge = ("  [" + ", ".join(s["findings"]) + "]") if s["findings"] else ""
        out.write(f"\n{cell(s['dir'])}  {cell(label)}  {count(s['artifactCount'], 'artifact')}  {human_size(s['bytes'])}  "
                  f"{cell(s['mode'])}{cell(badge)}\n")
        lines = []
        for a in s["artifacts"]:
            listed.add(a["path"])
            badge = ("  [" + ", ".join(a["findings"]) + "]") if a["findings"] else ""
            lines.append(f"  {cell(a['kind']):<29} {human_size(a['size']):>10} {human_age(a['ageSeconds']):>5}  {cell(a['name'])}{cell(badge)}\n")
        out.write("".join(lines))
    others = [Finding(**f) for f in data["findings"] if f["path"] not in listed]
    if others:
        out.write("\nOther findings:\n")
        for f in others:
            out.write(f"  {f.severity:<7} {f.code:<20} {cell(f.where)}  {cell(f.detail)}\n")


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    from ...inspect.verify.coverage import coverage, describe

    ins = _run_inspection(args, check_content=True)
    cov = coverage(ins)
    failing = [f for f in ins.findings if f.code in args.fail_on]
    # A verify that compared no notice must not pass, whatever --fail-on says; findings
    # that fail come first (they are a definite problem, and say more).
    reason = cov.nothing_checked
    status = 1 if failing else NOTHING_CHECKED_STATUS if reason is not None else 0
    args.exit_status = status  # kept if the reader of our output goes away (`| head`)
    if args.json:
        # The members every agent's verify --json has, in the same order (frontends/cli/agents.py).
        write_json_members(out, {"agent": "dsh", "summary": ins.summary(),
                                 "findings": Chunked(ins.findings, Finding.to_json), "failOn": sorted(args.fail_on),
                                 "notices": cov.to_json(), "retention": _retention_json(ins, args), "ok": status == 0})
        return status
    out.write(f"verified {cell(ins.root)}: {count(len(ins.scan.artifacts()), 'artifact')}, "
              f"{count(cov.found, 'notice')} found, {cov.checked} checked, {count(len(ins.findings), 'finding')}\n")
    for f in sorted(ins.findings, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)):
        out.write(f"{f.severity:<7} {f.code:<20} {cell(f.where)}\n        {cell(f.detail)}\n")
        if f.locator and f.locator != f.path:
            out.write(f"        locator: {cell(f.locator)}\n")
    out.write("".join(cell(line) + "\n" for line in describe(cov)))
    below = len(ins.findings) - len(failing)
    tally = (f"{count(len(failing), 'finding')} at or above --fail-on"
             + (f" ({below} below it)" if below else ""))
    if failing:
        out.write(f"FAIL: {tally}\n")
    elif reason is not None:
        # Why is the line above (describe); this one says what to do about it.
        hint = _HINTS.get(reason, " — try the --rebase above" if cov.rebase is not None else "")
        out.write(f"NOTHING CHECKED: no notice was compared with its artifact{hint}; {tally}\n")
    else:
        out.write(f"OK: {tally}\n")
    return status


#: What to do about a reason for having checked no notice (the CLI's own words).
_HINTS = {
    "no-logs": " — pass --logs DIR, the harness's session logs",
    "no-session-logs": " — --logs must name the dir holding the harness's session logs",
}
