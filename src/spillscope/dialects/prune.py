"""``prune`` for another agent's tree: its own sweep rule, minus what a live or recent transcript names.

The candidates are the spill files the agent's own sweep would delete (``Report.past_retention``:
Claude Code's ``cleanupPeriodDays``, qwen-code's 24 h, Gemini CLI's ``sessionRetention.maxAge``,
OpenCode's 7 days; or ``older_than`` when given). Unlike those sweeps — none of which looks at
who still names a file — a file is kept when a transcript written within ``keep_active`` names
it, or (Claude Code, Gemini CLI: a file's dir says its session) when it lies in such a
transcript's session dir. Transcripts themselves are never deleted here. Each deletion
re-checks the file first (still a regular file, same size and mtime, still past the cutoff)
and never follows a symlink; a file that changed is kept and said so.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from .base import Dialect
from .records import Options, Report, SpillFile


@dataclass
class PrunePlan:
    """What a prune of an agent's tree would delete and keep (and why), and then what it deleted."""

    report: Report
    cutoff_seconds: float
    delete: list[SpillFile] = field(default_factory=list)
    #: path → why it is kept although past the cutoff.
    kept: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    #: path → why it could not be deleted.
    errors: dict[str, str] = field(default_factory=dict)


def plan(dialect: Dialect, tree: str, *, now: float, older_than: float | None, keep_active: float) -> PrunePlan:
    report = dialect.inspect(tree, Options(now=now, retention_seconds=older_than, check_content=False))
    rule = report.retention
    seconds = older_than if older_than is not None else (rule.seconds if rule is not None else float("inf"))
    result = PrunePlan(report, seconds)
    if rule is None and older_than is None:
        return result  # the agent sweeps nothing (Gemini with sessionRetention disabled)
    active = {t.path for t in report.transcripts if now - t.mtime < keep_active}
    active_sessions = {t.session for t in report.transcripts if t.path in active and t.session is not None}
    named_by_active = {k.target: k.transcript for k in report.links if k.target is not None and k.transcript in active}
    past = set(report.past_retention)
    for f in report.files:
        if f.path not in past:
            continue
        if f.is_symlink or not f.is_regular:
            result.kept[f.path] = "not a regular file (never followed or deleted)"
        elif f.path in named_by_active:
            result.kept[f.path] = f"named by {named_by_active[f.path]}, written within the keep-active window"
        elif f.session is not None and f.session in active_sessions:
            result.kept[f.path] = f"in session {f.session}, whose transcript was written within the keep-active window"
        else:
            result.delete.append(f)
    return result


def apply(result: PrunePlan, now: float) -> None:
    """Delete the planned files, each re-checked just before."""
    for f in result.delete:
        try:
            st = os.lstat(f.path)
        except FileNotFoundError:
            continue  # already gone (the agent's own sweep, or a second prune)
        except OSError as exc:
            result.errors[f.path] = exc.strerror or str(exc)
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size != f.size or st.st_mtime != f.mtime:
            result.kept[f.path] = "changed since it was listed"
            continue
        if now - st.st_mtime < result.cutoff_seconds:
            result.kept[f.path] = "no longer past the cutoff"
            continue
        try:
            os.unlink(f.path)  # unlink removes a name, never what a symlink points at
        except OSError as exc:
            result.errors[f.path] = exc.strerror or str(exc)
            continue
        result.deleted.append(f.path)
