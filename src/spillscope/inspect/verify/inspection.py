"""Linking notices to artifacts and verifying them: the inspector's whole-root pass.

One verify pass, in order: :func:`inspect_root` normalises ``root`` once and hands it down
to each step in turn; each step returns records and none calls back into this module. Scan:
:mod:`..scan.tree` lists the root into a ``RootScan`` (artifacts by path, and findings for
what it could not read, which :mod:`..link.blind` keeps as the places where a missing
artifact is *unverified*, not expired). Logs: :mod:`..logs` reads the session logs into
reference and tool-spill entries. Link: first :mod:`..link.transcripts` is told which
transcript each reference notice will need (its locator resolved by :mod:`..link.locate`),
so each transcript is read once, streamed, however many notices name it; then each
reference entry goes to :mod:`..link.reference` (validate the notice, resolve its locator
with :mod:`..link.locate` or match a replay-normalised name, compare the notice with the
transcript's digest) and each tool-spill entry to :mod:`..link.tool` (resolve, then compare
the preview with the artifact's two ends); both return the records of
:mod:`..link.records`. Checks: transcripts no notice named are checked by
:mod:`..link.transcripts` (one that is really tool output is relabelled here). Findings:
the retention forecast (:mod:`.expiry`) and orphan artifacts are added, and everything is
collected into an :class:`Inspection`.

:func:`inspect_root` scans the root, reads the logs (optional), resolves every notice's
locator against the scanned artifacts, checks each transcript (streamed, bounded
memory) and each notice, and collects every finding. It is read-only: nothing is ever
opened for writing under the root or the logs.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import Counter
from dataclasses import dataclass

from ...storage import Storage, open_storage
from ...util.gcpause import acyclic as _acyclic
from ...util.scratch import Scratch
from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
from ...formats.transcript.layout import departs_from_title
from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES
from ...spill.naming import session_dir_name
from ..link.blind import _Blind
from .expiry import forecast_past_retention, named_artifacts
from ..findings import CODES, SEVERITY_RANK, Finding
from ..link.reference import _link_reference
from ..link.tool import _link_tool_spill
from ..link.records import ArtifactCheck, ReferenceLink, ToolSpillLink
from ..logs import SessionLog, read_logs
from ..scan.tree import Artifact, ProgressFn, RootScan, scan_root
from ..link.transcripts import _ByteMeter, _check_transcript, _Digests

__all__ = ["Inspection", "inspect_root"]


@dataclass
class Inspection:
    """A verify pass over a root and its logs: the scan, the links, each artifact's check, the findings."""

    root: str
    scan: RootScan
    logs: list[SessionLog]
    references: list[ReferenceLink]
    tool_spills: list[ToolSpillLink]
    artifact_checks: dict[str, ArtifactCheck]
    findings: list[Finding]
    #: session dir name → session id, where a log told us.
    session_ids: dict[str, str]
    #: The logs dir as given, None when none was: "no logs" and "logs without a notice"
    #: are different reasons for having checked no notice (inspect/coverage.py).
    logs_dir: str | None = None

    def summary(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def findings_for(self, path: str) -> list[Finding]:
        return [f for f in self.findings if f.path == path or f.locator == path]

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)


def inspect_root(
    root: Storage | str | os.PathLike[str],
    logs: str | os.PathLike[str] | None = None,
    *,
    retention_seconds: float | None = None,
    now: float | None = None,
    rebase: str | None = None,
    check_content: bool = True,
    progress: ProgressFn | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    max_log_line_bytes: int = DEFAULT_MAX_LOG_LINE_BYTES,
    follow_root: bool = True,
) -> Inspection:
    """Scan, read the logs, link and verify; see the module docstring.

    ``max_line_bytes`` bounds a transcript line (a fragment is at most 386 bytes) and
    ``max_log_line_bytes`` a log line: longer lines are findings, never read whole.
    ``follow_root=False``: a root path that is a symlink is missing, not followed."""
    with _acyclic():
        return _inspect_root(root, logs, retention_seconds, now, rebase, check_content, progress,
                             max_line_bytes, max_log_line_bytes, follow_root)


def _inspect_root(
    root: Storage | str | os.PathLike[str], logs: str | os.PathLike[str] | None, retention_seconds: float | None,
    now: float | None, rebase: str | None, check_content: bool, progress: ProgressFn | None,
    max_line_bytes: int, max_log_line_bytes: int, follow_root: bool = True,
) -> Inspection:
    store = open_storage(root)
    root = store.root
    now = time.time() if now is None else now
    scan = scan_root(store, progress=progress, follow_root=follow_root)
    findings = list(scan.findings)
    session_logs = read_logs(logs, max_line_bytes=max_log_line_bytes, progress=progress) if logs is not None else []
    session_ids: dict[str, str] = {}
    for log in session_logs:
        findings.extend(log.findings)
        if log.session_id is not None:
            session_ids[session_dir_name(log.session_id)] = log.session_id
    by_path = scan.by_path()

    checks: dict[str, ArtifactCheck] = {}
    references: list[ReferenceLink] = []
    tool_links: list[ToolSpillLink] = []
    named: set[str] = set()
    meter = None
    if progress is not None and check_content:
        meter = _ByteMeter(progress, sum(a.size for a in by_path.values()
                                         if a.kind == "session-reference-transcript" and a.is_regular))

    digests = _Digests(max_line_bytes, meter)
    if check_content:
        for log in session_logs:
            for entry in log.references:
                digests.want(entry, store, rebase, by_path)
    blind = _Blind(scan)
    scratch = (Scratch(), Scratch())  # the tool-spill checks' buffers, reused notice to notice
    for log in session_logs:
        for entry in log.references:
            link = _link_reference(entry, store, rebase, by_path, checks, check_content, digests, blind)
            references.append(link)
            findings.extend(link.findings)
            if link.artifact is not None:
                named.add(link.artifact.path)
        for spill in log.tool_spills:
            tlink = _link_tool_spill(spill, store, rebase, by_path, blind, scratch)
            tool_links.append(tlink)
            findings.extend(tlink.findings)
            if tlink.artifact is not None:
                named.add(tlink.artifact.path)

    if check_content:
        # A tool named `session-reference-1` spills to a transcript's file name: the name
        # alone cannot tell them apart. A tool-spill notice naming the file, or (for a file
        # no notice names) a first line that is not the transcript title, makes it tool output.
        # The first line is only looked at when the check already failed on it.
        spilled = {t.artifact.path for t in tool_links if t.artifact is not None}
        relabel: set[str] = set()
        for art in by_path.values():
            if art.kind == "session-reference-transcript" and art.is_regular and art.path not in checks:
                if art.path in spilled:
                    relabel.add(art.path)
                    continue
                check = _check_transcript(art, session_ids.get(art.session_dir), max_line_bytes, meter)
                if (art.path not in named and any(f.code == "malformed-artifact" and f.line == 1 for f in check.findings)
                        and _first_line_is_not_title(art.path)):
                    relabel.add(art.path)
                    continue
                checks[art.path] = check
        if meter is not None:
            meter.finish()
        if relabel:
            by_path = _relabel_as_tool_output(scan, relabel, tool_links)
        for check in checks.values():
            findings.extend(check.findings)

    if retention_seconds is not None:
        # The start-up sweep's own rule (spill/expiry_rule.py), as prune applies it.
        links = [(r.artifact.path if r.artifact else None, r.entry.log, r.entry.line) for r in references]
        links += [(t.artifact.path if t.artifact else None, t.entry.log, t.entry.line) for t in tool_links]
        findings.extend(forecast_past_retention(scan, retention_seconds, now, session_ids, named_artifacts(links)))

    if logs is not None:
        # One per artifact on a root no log names: built positionally (no keyword dict each).
        severity, detail, add = CODES["orphan-artifact"][0], "no notice in the logs names this artifact", findings.append
        for art in by_path.values():
            if art.is_regular and art.path not in named:
                add(Finding("orphan-artifact", severity, art.path, None, session_ids.get(art.session_dir), None, detail))
    findings = _one_per_fault(findings, references, tool_links, checks)
    return Inspection(root, scan, session_logs, references, tool_links, checks, findings, session_ids,
                      None if logs is None else os.fspath(logs))


#: What a check of an artifact's bytes finds (a changed or cut byte breaks several at once), the
#: one that says where the fault is first: the artifact's own line, then the notice's counts.
_CONTENT_CODES = {"malformed-artifact": 0, "incomplete-artifact": 1, "omission-mismatch": 2, "bytes-mismatch": 3}


def _one_per_fault(findings: list[Finding], references: list[ReferenceLink], tool_links: list[ToolSpillLink],
                   checks: dict[str, ArtifactCheck]) -> list[Finding]:
    """One finding per artifact for what its bytes broke, as every agent's dialect reports it: a
    changed byte in a session-reference transcript broke its preview message, two omission counts
    and their two copies in the source's stats, and its last line (six findings for one fault).
    The one that places the fault best (the artifact's line, else the notice's) is kept, naming
    the others; findings about other things stay."""
    per: dict[str, list[Finding]] = {}
    links: list[ReferenceLink | ToolSpillLink] = [*references, *tool_links]
    for link in links:
        if link.artifact is not None:
            per.setdefault(link.artifact.path, []).extend(f for f in link.findings if f.code in _CONTENT_CODES)
    for path, check in checks.items():
        per.setdefault(path, []).extend(f for f in check.findings if f.code in _CONTENT_CODES)
    replace: dict[int, Finding | None] = {}
    for group in per.values():
        if len(group) < 2:
            continue
        order = {id(f): i for i, f in enumerate(group)}
        first, *rest = sorted(group, key=lambda f: (_CONTENT_CODES[f.code], order[id(f)]))
        also = "; ".join(f"{f.code}: {f.detail}" for f in rest)
        replace[id(first)] = dataclasses.replace(first, detail=f"{first.detail} (also: {also})")
        replace.update((id(f), None) for f in rest)
    if not replace:
        return findings
    out: list[Finding] = []
    for f in findings:
        new = replace.get(id(f), f)
        if new is not None:
            out.append(new)
    return out


def _first_line_is_not_title(path: str) -> bool:
    try:
        return departs_from_title(path)
    except OSError:
        return False  # it stays a transcript; its check reports why it cannot be read


def _relabel_as_tool_output(scan: RootScan, paths: set[str], tool_links: list[ToolSpillLink]) -> dict[str, Artifact]:
    """Give the artifacts at ``paths`` the kind ``tool-output`` everywhere they are held."""
    for session in scan.sessions:
        session.artifacts = [a._replace(kind="tool-output") if a.path in paths else a for a in session.artifacts]
    by_path = scan.by_path()
    for link in tool_links:
        if link.artifact is not None and link.artifact.path in paths:
            link.artifact = by_path[link.artifact.path]
    return by_path
