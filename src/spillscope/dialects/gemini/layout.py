"""Gemini CLI's tree, its transcripts' strings, and its sweep (google-gemini/gemini-cli @5411f113)."""

from __future__ import annotations

import functools
import os
from typing import Iterator

from ...util.text import loads_exact
from ...inspect.findings import Finding, finding
from ..records import Options, Report, RetentionRule, applied_rule
from ..engine import UNUSABLE, Layout, Text, jsonl_texts, read_json, json_strings, link_and_check, lstat_dir, resolve_under, transcript
from .notice import parse
from .probe import CHATS, TOOL_OUTPUTS, project_dirs

_WANTED = (b"Output too large", b"tool_output_masked", b"Tool output exceeded size limit")


def texts(tree: str) -> Iterator[tuple[str, str]]:
    for p in project_dirs(tree):
        layout = scan(p)
        yield from ((f.path, "spill") for f in layout.files if f.is_regular)
        yield from ((t.path, "transcript") for t in layout.transcripts if t.path.endswith(".jsonl"))


def scan(project: str) -> Layout:
    layout = Layout()
    spill_dir = os.path.join(project, TOOL_OUTPUTS)
    lstat_dir(layout, spill_dir, None, "Gemini CLI writes files and session-<id> dirs only")
    try:
        with os.scandir(spill_dir) as it:
            sessions = sorted((e for e in it if e.is_dir(follow_symlinks=False)), key=lambda e: e.name)
    except OSError:
        sessions = []
    for d in sessions:
        if d.name.startswith("session-"):
            lstat_dir(layout, d.path, d.name[len("session-"):], "Gemini CLI writes files only")
        else:
            layout.blocked.add(d.path)
            layout.findings.append(finding("unexpected-entry", path=d.path,
                                           detail="a directory in tool-outputs not named session-<id>"))
    chats = os.path.join(project, CHATS)
    for root, dirs, files in os.walk(chats):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".jsonl", ".json")):
                parent = None if root == chats else os.path.basename(root)
                t = transcript(os.path.join(root, name), _session_of(name), parent)
                if t is not None:
                    layout.transcripts.append(t)
    return layout


def _session_of(name: str) -> str | None:
    """``session-<date>-<id[:8]>.jsonl`` holds only a prefix of the id: the records say the rest."""
    return None


def _texts(layout: Layout, findings: list[Finding]) -> Iterator[Text]:
    for t in layout.transcripts:
        if t.path.endswith(".jsonl"):
            yield from jsonl_texts(t, findings, _WANTED)
            continue
        data = read_json(t, findings)
        if data is UNUSABLE:
            continue
        session = data.get("sessionId") if isinstance(data, dict) and isinstance(data.get("sessionId"), str) else None
        for s in json_strings(data):
            yield Text(t, 1, session, s)


def inspect_tree(tree: str, options: Options) -> Report:
    rule = applied_rule(retention_rule(tree), options)
    report = Report("gemini", tree, [], [], [], [], rule)
    for project in project_dirs(tree):
        layout = scan(project)
        base = os.path.join(project, TOOL_OUTPUTS)
        pending: list[Finding] = []
        link_and_check(report, layout, _texts(layout, pending), parse,
                       functools.partial(resolve_under, anchor=TOOL_OUTPUTS, base=base), options)
        report.findings.extend(pending)
    if rule is not None:
        seconds = rule.seconds
        cutoff = options.now - seconds
        for f in report.files:
            # A session dir goes whole when the DIR's mtime is past (sessionCleanup.ts 584-609).
            when = _mtime(os.path.dirname(f.path)) if f.session is not None else f.mtime
            if when < cutoff:
                report.past_retention.append(f.path)
                if options.retention_seconds is not None:
                    report.findings.append(finding("past-retention", path=f.path, session=f.session,
                                                   detail="Gemini CLI's start-up cleanup at that maxAge deletes it"))
    return report


def _mtime(path: str) -> float:
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return float("inf")


def gemini_home(tree: str) -> str | None:
    path = os.path.abspath(tree)
    for candidate in (path, os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
        if os.path.basename(candidate) == ".gemini" or os.path.isfile(os.path.join(candidate, "settings.json")):
            return candidate
    return None


_UNITS = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0, "m": 30 * 86400.0}


def retention_rule(tree: str) -> RetentionRule | None:
    """``general.sessionRetention`` in ``~/.gemini/settings.json``: ``enabled`` (false: no sweep),
    ``maxAge`` ``<n>[hdwm]`` (schema default ``30d``; cli/src/config/settingsSchema.ts 389-425,
    cli/src/utils/sessionCleanup.ts 25-30, 389-409). ``maxCount`` is not forecast here."""
    scope = "tool-outputs files by mtime, session-<id> dirs whole by the dir's mtime, at start-up"
    home = gemini_home(tree)
    settings = os.path.join(home, "settings.json") if home else None
    retention = None
    if settings is not None:
        try:
            with open(settings, "rb") as f:
                data = loads_exact(f.read())
            general = data.get("general") if isinstance(data, dict) else None
            retention = general.get("sessionRetention") if isinstance(general, dict) else None
        except (OSError, ValueError):
            retention = None
    if isinstance(retention, dict):
        if retention.get("enabled") is False:
            return None
        age = retention.get("maxAge")
        if isinstance(age, str) and len(age) > 1 and age[:-1].isdigit() and age[-1] in _UNITS and int(age[:-1]) > 0:
            return RetentionRule(int(age[:-1]) * _UNITS[age[-1]], f"{settings}: general.sessionRetention.maxAge {age}", scope)
    return RetentionRule(30 * 86400.0, "default general.sessionRetention.maxAge 30d", scope)
