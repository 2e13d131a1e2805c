"""Linking notices to artifacts and verifying them: the inspector's whole-root pass.

:func:`inspect_root` scans the root, reads the logs (optional), resolves every notice's
locator against the scanned artifacts, checks each transcript (streamed, bounded
memory) and each notice, and collects every finding. It is read-only: nothing is ever
opened for writing under the root or the logs.
"""

from __future__ import annotations

import gc
import os
import shlex
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Literal

from ..util.fs import is_remote, normalize_root, open_reader
from ..util.text import js_utf8
from ..reference.check import Disagreement, Recomputed, check_notice, digest_transcript, keep_bytes_for, retention_splits
from ..reference.constants import DEFAULT_MAX_LINE_BYTES
from ..formats.transcript import TranscriptError, departs_from_title
from ..formats.sessionlog import DEFAULT_MAX_LINE_BYTES as DEFAULT_MAX_LOG_LINE_BYTES
from ..formats.locators import is_windows_path, rebase_locator, spill_root_of
from ..spill.naming import session_dir_name
from ..spill.policy import FORK_GAP
from .expiry import forecast_past_retention, named_artifacts
from .findings import SEVERITY_RANK, Finding, finding
from .logs import ReferenceEntry, SessionLog, ToolSpillEntry, read_logs
from .replay import match_normalized, normalized_name
from .scan import Artifact, ProgressFn, RootScan, scan_root

LinkStatus = Literal["resolves", "expired", "outside-root", "unavailable", "intact", "invalid", "normalized", "unverified"]
MAX_SAFE = 2**53 - 1


@dataclass
class ReferenceLink:
    entry: ReferenceEntry
    status: LinkStatus
    artifact: Artifact | None = None
    recomputed: Recomputed | None = None
    disagreements: list[Disagreement] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


@dataclass
class ToolSpillLink:
    entry: ToolSpillEntry
    status: LinkStatus
    artifact: Artifact | None = None
    findings: list[Finding] = field(default_factory=list)


@dataclass
class ArtifactCheck:
    """What reading an artifact's content found (transcripts are streamed)."""

    artifact: Artifact
    findings: list[Finding] = field(default_factory=list)
    messages: int | None = None


@dataclass
class Inspection:
    root: str
    scan: RootScan
    logs: list[SessionLog]
    references: list[ReferenceLink]
    tool_spills: list[ToolSpillLink]
    artifact_checks: dict[str, ArtifactCheck]
    findings: list[Finding]
    #: session dir name → session id, where a log told us.
    session_ids: dict[str, str]

    def summary(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def findings_for(self, path: str) -> list[Finding]:
        return [f for f in self.findings if f.path == path or f.locator == path]

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)


def resolve_locator(locator: str, root: str, rebase: str | None = None) -> tuple[str | None, str]:
    """(absolute path under root, "") or (None, why it is outside the root).

    ``rebase`` is the root the locators were written under (POSIX, or Windows such as
    ``C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123``): locators under it map onto ``root``."""
    if "\x00" in locator:
        return None, "locator contains NUL"
    if rebase:
        moved = rebase_locator(locator, rebase, root)
        if moved is not None:
            locator = moved
    if is_remote(root):
        return _resolve_remote(locator, root)
    if is_windows_path(locator):
        return None, "locator is a Windows path" + _rebase_hint(locator)
    if "://" in locator or locator.startswith(("file:", "s3:")):
        return None, "locator is a URI, not a local path"
    if not locator.startswith("/"):
        return None, "locator is not an absolute POSIX path"
    norm = os.path.normpath(locator)
    if norm != locator.rstrip("/") or ".." in locator.split("/"):
        return None, "locator is not a normalised path (has '..' or '.')"
    if not norm.startswith(root.rstrip("/") + "/"):
        return None, "locator is outside the inspected root" + ("" if rebase else _rebase_hint(locator))
    return norm, ""


def _rebase_hint(locator: str) -> str:
    old = spill_root_of(locator)
    return f"; if this root is a copy of {old}, pass --rebase {shlex.quote(old)}" if old else ""


def _resolve_remote(locator: str, root: str) -> tuple[str | None, str]:
    """An ``s3://bucket/key`` locator under an ``s3://`` root (keys are compared as they are)."""
    if not locator.startswith("s3://"):
        return None, "locator is not an s3:// URI (use --rebase OLD_ROOT for a root copied from elsewhere)"
    if any(part in ("", ".", "..") for part in locator[len("s3://"):].split("/")):
        return None, "locator is not a normalised key (has an empty, '.' or '..' segment)"
    if not locator.startswith(root.rstrip("/") + "/"):
        return None, "locator is outside the inspected root"
    return locator, ""


def _valid_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE


@contextmanager
def _acyclic() -> Iterator[None]:
    """Pause the cyclic garbage collector while records pile up: every record built here
    is acyclic (tuples, dataclasses, dicts of them) and freed by reference counting, yet
    the collector re-walks all of them again and again as they accumulate (at 200,000
    artifacts a third of the run, and growing faster than the root)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def inspect_root(
    root: str | os.PathLike[str],
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
    root: str | os.PathLike[str], logs: str | os.PathLike[str] | None, retention_seconds: float | None,
    now: float | None, rebase: str | None, check_content: bool, progress: ProgressFn | None,
    max_line_bytes: int, max_log_line_bytes: int, follow_root: bool = True,
) -> Inspection:
    root = normalize_root(root)
    now = time.time() if now is None else now
    scan = scan_root(root, progress=progress, follow_root=follow_root)
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
                digests.want(entry, root, rebase, by_path)
    blind = _Blind(scan)
    for log in session_logs:
        for entry in log.references:
            link = _link_reference(entry, root, rebase, by_path, checks, check_content, digests, blind)
            references.append(link)
            findings.extend(link.findings)
            if link.artifact is not None:
                named.add(link.artifact.path)
        for spill in log.tool_spills:
            tlink = _link_tool_spill(spill, root, rebase, by_path, blind)
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
        for art in by_path.values():
            if art.is_regular and art.path not in named:
                findings.append(finding("orphan-artifact", path=art.path, session=session_ids.get(art.session_dir),
                                        detail="no notice in the logs names this artifact"))
    return Inspection(root, scan, session_logs, references, tool_links, checks, findings, session_ids)


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


class _ByteMeter:
    """Reports transcript bytes read as ``progress("verify", done, total)``."""

    def __init__(self, progress: ProgressFn, total: int) -> None:
        self.progress, self.total = progress, total
        self.done = self.size = self.part = 0

    def start(self, size: int) -> Callable[[int], None]:
        self.size, self.part = size, 0
        return self.text

    def text(self, n: int) -> None:
        # Decoded text bytes stand in for file bytes inside a file: capped at its size.
        self.part = min(self.part + n, self.size)
        self.progress("verify", min(self.done + self.part, self.total), self.total)

    def end(self) -> None:
        self.done += self.size
        self.size = self.part = 0
        self.progress("verify", min(self.done, self.total), self.total)

    def finish(self) -> None:
        self.progress("verify", self.total, self.total)


def _digest(art: Artifact, keep: int, max_line_bytes: int, meter: _ByteMeter | None) -> tuple[Any, list[Any], Any]:
    if meter is None:
        return digest_transcript(art.path, keep, max_line_bytes)
    try:
        return digest_transcript(art.path, keep, max_line_bytes, meter.start(art.size))
    finally:
        meter.end()


class _Blind:
    """Where the scan could not look: the root or a session dir it could not list (or an
    entry it could not stat). A locator under one of them is *unverified* — its artifact
    may well be there — never expired."""

    def __init__(self, scan: RootScan) -> None:
        self.root = scan.root
        self.why = {f.path: f.detail for f in scan.findings
                    if f.code == "unreadable" and f.path is not None and f.detail != "spill root does not exist"}

    def at(self, path: str) -> tuple[str, str] | None:
        """(the unreadable place at or above ``path``, why), or None."""
        if not self.why:
            return None
        d = path
        while len(d) >= len(self.root):
            if d in self.why:
                return d, self.why[d]
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        return None

    def finding(self, where: dict[str, Any], locator: str, what: str, path: str) -> Finding | None:
        hit = self.at(path)
        if hit is None:
            return None
        return finding("unreadable", **where, locator=locator,
                       detail=f"{what}: not checked, {hit[0]} cannot be read ({hit[1]}); unverified, not expired")


class _Digests:
    """Each transcript is read once however many notices name it: with the largest
    ``keep`` any of them needs, and held only until the last of them is checked (8,000
    notices naming one 8 MB transcript must not read it 8,000 times)."""

    def __init__(self, max_line_bytes: int, meter: _ByteMeter | None) -> None:
        self.max_line_bytes, self.meter = max_line_bytes, meter
        self.keep: dict[tuple[str, int, float], int] = {}
        self.left: Counter[tuple[str, int, float]] = Counter()
        self.held: dict[tuple[str, int, float], Any] = {}

    def want(self, entry: ReferenceEntry, root: str, rebase: str | None, by_path: dict[str, Artifact]) -> None:
        locator = entry.locator
        path = resolve_locator(locator, root, rebase)[0] if locator is not None else None
        art = by_path.get(path) if path is not None else None
        if art is None or not art.is_regular:
            return
        conversation = entry.preview.get("conversation")
        key = (art.path, art.size, art.mtime)
        self.keep[key] = max(self.keep.get(key, 0), keep_bytes_for(conversation if isinstance(conversation, list) else []))
        self.left[key] += 1

    def get(self, art: Artifact, keep: int) -> tuple[Any, list[Any], Any]:
        """:func:`_digest` of ``art`` (raising what it raised), read at most once."""
        key = (art.path, art.size, art.mtime)
        if key not in self.held:
            try:
                self.held[key] = _digest(art, max(keep, self.keep.get(key, 0)), self.max_line_bytes, self.meter)
            except (TranscriptError, OSError) as exc:
                self.held[key] = exc
        got = self.held[key]
        self.left[key] -= 1
        if self.left[key] <= 0:
            del self.held[key]
        if isinstance(got, BaseException):
            raise got
        return got  # type: ignore[no-any-return]


def _check_transcript(art: Artifact, session: str | None, max_line_bytes: int, meter: _ByteMeter | None = None,
                      keep: int = 1) -> ArtifactCheck:
    check = ArtifactCheck(art)
    try:
        meta, views, incomplete = _digest(art, keep, max_line_bytes, meter)
    except TranscriptError as exc:
        check.findings.append(finding("malformed-artifact", path=art.path, line=exc.line, session=session, detail=exc.reason))
        return check
    except OSError as exc:
        check.findings.append(finding("unreadable", path=art.path, session=session, detail=exc.strerror or str(exc)))
        return check
    check.messages = len(views)
    if incomplete is not None:
        check.findings.append(finding("incomplete-artifact", path=art.path, line=incomplete.line, session=session, detail=incomplete.reason))
    return check


def _validate_notice(entry: ReferenceEntry) -> list[str]:
    notice = entry.notice or {}
    problems = []
    for key in ("omittedMessages", "omittedBytes"):
        if not _valid_count(notice.get(key)):
            problems.append(f"{key} is not a non-negative integer: {str(notice.get(key))[:40]}")
    snap = entry.snapshot
    if snap is None:
        problems.append("fullSnapshot is missing")
    elif snap.get("status") == "saved":
        if not isinstance(snap.get("locator"), str):
            problems.append("saved fullSnapshot has no string locator")
        if not _valid_count(snap.get("bytes")):
            problems.append(f"fullSnapshot.bytes is not a non-negative integer: {str(snap.get('bytes'))[:40]}")
    elif snap.get("status") == "unavailable":
        if snap.get("reason") not in ("storage-not-configured", "save-failed"):
            problems.append(f"unknown unavailable reason {str(snap.get('reason'))[:40]!r}")
    else:
        problems.append(f"unknown fullSnapshot status {str(snap.get('status'))[:40]!r}")
    return problems


def _link_reference(
    entry: ReferenceEntry, root: str, rebase: str | None, by_path: dict[str, Artifact],
    checks: dict[str, ArtifactCheck], check_content: bool, digests: _Digests, blind: _Blind,
) -> ReferenceLink:
    where = {"path": entry.log, "line": entry.line, "session": entry.target_session}
    stats = entry.stats or {}
    if entry.notice is None:
        link = ReferenceLink(entry, "intact")
        if stats.get("truncated") is True:
            link.status = "invalid"
            link.findings.append(finding("malformed-notice", **where, detail=f"reference to {entry.session_id!r} is truncated but has no notice"))
        return link
    problems = _validate_notice(entry)
    pre = [finding("malformed-notice", **where, detail=f"notice for {entry.session_id!r}: {p}") for p in problems]
    snap = entry.snapshot or {}
    if snap.get("status") == "unavailable" and not problems:
        return ReferenceLink(entry, "unavailable", findings=[
            finding("snapshot-unavailable", **where, detail=f"reference to {entry.session_id!r}: {snap.get('reason')}")])
    if snap.get("status") != "saved" or not isinstance(snap.get("locator"), str):
        return ReferenceLink(entry, "invalid", findings=pre)
    link = ReferenceLink(entry, "invalid" if problems else "resolves", findings=pre)
    locator = snap["locator"]
    name = normalized_name(locator)
    if name is not None:
        size = snap.get("bytes")
        art, how = match_normalized(name, entry.target_session, by_path.values(),
                                    (lambda n: n == size) if _valid_count(size) else None)
        link.status = "invalid" if problems else "normalized"
        link.findings.append(finding("normalized-locator", **where, locator=locator,
                                     detail=f"reference to {entry.session_id!r}: replay-normalised locator; "
                                            + (f"checked against {how}" if art else how)))
        if art is None:
            return link
    else:
        path, why = resolve_locator(locator, root, rebase)
        if path is None:
            link.status = "outside-root"
            link.findings.append(finding("outside-root", **where, locator=locator, detail=why))
            return link
        art = by_path.get(path)
        unread = blind.finding(where, locator, f"reference to {entry.session_id!r}", path) if art is None else None
        if unread is not None:
            link.status = "unverified"
            link.findings.append(unread)
            return link
        if art is None or not art.is_regular:
            link.status = "expired"
            link.findings.append(finding("expired-locator", **where, locator=locator,
                                         detail=f"reference to {entry.session_id!r}: the artifact is gone; the notice remains"))
            return link
    link.artifact = art
    owner_dir = session_dir_name(entry.target_session)
    if name is None and art.session_dir != owner_dir:
        link.findings.append(finding("foreign-owner", path=art.path, session=entry.target_session, locator=locator,
                                     detail=f"artifact is in {art.session_dir}, owner's dir is {owner_dir}"))
    if _valid_count(snap.get("bytes")) and snap["bytes"] != art.size:
        link.findings.append(finding("bytes-mismatch", **where, locator=locator,
                                     detail=f"bytes: logged {snap['bytes']}, on disk {art.size}"))
    if not check_content:
        return link
    conversation = entry.preview.get("conversation")
    keep = keep_bytes_for(conversation if isinstance(conversation, list) else [])
    try:
        meta, views, incomplete = digests.get(art, keep)
    except TranscriptError as exc:
        checks[art.path] = ArtifactCheck(art, [finding("malformed-artifact", path=art.path, line=exc.line,
                                                       session=entry.target_session, locator=locator, detail=exc.reason)])
        return link
    except OSError as exc:
        checks[art.path] = ArtifactCheck(art, [finding("unreadable", path=art.path, session=entry.target_session,
                                                       locator=locator, detail=exc.strerror or str(exc))])
        return link
    check = ArtifactCheck(art, messages=len(views))
    if incomplete is not None:
        check.findings.append(finding("incomplete-artifact", path=art.path, line=incomplete.line,
                                      session=entry.target_session, locator=locator, detail=incomplete.reason))
    checks[art.path] = check
    result, disagreements = check_notice(entry.preview, entry.notice, views, stats=entry.stats, metadata=meta)
    link.recomputed, link.disagreements = result, disagreements
    for d in disagreements:
        if d.field == "bytes":
            continue  # reported above from the scan's size
        link.findings.append(finding("omission-mismatch", **where, locator=locator,
                                     detail=f"{d.field}: logged {d.logged}, recomputed {d.recomputed} ({d.detail})"))
    return link


def _dialect_finding(entry: ToolSpillEntry, where: dict[str, Any]) -> list[Finding]:
    """A fork-dialect notice is read leniently and said so (FORMAT.md §3, docs/FORMAT.md)."""
    notice = entry.notice
    if notice.dialect == "standard":
        return []
    why = " (the reference's hasSpillNotice does not recognise an images clause)" if notice.omitted_images else ""
    return [finding("notice-dialect", **where, locator=entry.locator,
                    detail=f"tool result {entry.call_id}: spill notice in the {notice.dialect} dialect{why}")]


def _tool_size_fits(entry: ToolSpillEntry) -> Callable[[int], bool] | None:
    """For a standard exact notice: the artifact sizes its preview and count allow."""
    notice = entry.notice
    if notice.omitted_kind != "exact" or notice.fork_gap or notice.omitted_bytes is None:
        return None
    base = len(js_utf8(notice.preview)) + notice.omitted_bytes
    return lambda size: size - base in (0, 3, 6)


def _link_tool_spill(entry: ToolSpillEntry, root: str, rebase: str | None, by_path: dict[str, Artifact],
                     blind: _Blind) -> ToolSpillLink:
    where = {"path": entry.log, "line": entry.line, "session": entry.target_session}
    dialect = _dialect_finding(entry, where)
    name = normalized_name(entry.locator)
    if name is not None:
        art, how = match_normalized(name, entry.target_session, by_path.values(), _tool_size_fits(entry))
        link = ToolSpillLink(entry, "normalized", art, dialect)
        link.findings.append(finding("normalized-locator", **where, locator=entry.locator,
                                     detail=f"tool result {entry.call_id}: replay-normalised locator; "
                                            + (f"checked against {how}" if art else how)))
        if art is None:
            return link
    else:
        path, why = resolve_locator(entry.locator, root, rebase)
        if path is None:
            link = ToolSpillLink(entry, "outside-root", None, dialect)
            link.findings.append(finding("outside-root", **where, locator=entry.locator, detail=why))
            return link
        art = by_path.get(path)
        unread = blind.finding(where, entry.locator, f"tool result {entry.call_id}", path) if art is None else None
        if unread is not None:
            return ToolSpillLink(entry, "unverified", None, [*dialect, unread])
        if art is None or not art.is_regular:
            link = ToolSpillLink(entry, "expired", None, dialect)
            link.findings.append(finding("expired-locator", **where, locator=entry.locator,
                                         detail=f"tool result {entry.call_id}: the artifact is gone; the notice remains"))
            return link
        link = ToolSpillLink(entry, "resolves", art, dialect)
    owner_dir = session_dir_name(entry.target_session)
    if name is None and art.session_dir != owner_dir:
        link.findings.append(finding("foreign-owner", path=art.path, session=entry.target_session, locator=entry.locator,
                                     detail=f"artifact is in {art.session_dir}, owner's dir is {owner_dir}"))
    notice = entry.notice
    preview = notice.preview
    head, _, tail = preview.partition(FORK_GAP) if notice.fork_gap else (preview, "", "")
    head_b, tail_b = js_utf8(head), js_utf8(tail)
    if notice.omitted_kind == "exact" and not notice.fork_gap and notice.omitted_bytes is not None:
        # A BOM the reference's decoder stripped from the head or the tail piece is
        # 3 bytes counted as kept and not in the preview: 0, 3 or 6 bytes unexplained.
        if art.size - len(head_b) - notice.omitted_bytes not in (0, 3, 6):
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"omittedBytes: logged {notice.omitted_bytes}, recomputed {art.size - len(head_b)} (preview {len(head_b)} bytes, artifact {art.size})"))
            return link
    try:
        reader = open_reader(art.path)
        try:
            # Without a gap the split between head and tail is unknown: read as much of
            # each end as the whole preview; with the fork's gap, each part's own length.
            n_head, n_tail = (len(head_b), len(tail_b)) if notice.fork_gap else (len(head_b) + 3, len(head_b) + 3)
            if n_head + n_tail >= art.size:
                # The ends overlap: one read, two slices (not two reads of most of the file).
                whole = reader.pread(art.size, 0)
                first, last = whole[:n_head], whole[max(0, art.size - n_tail):] if n_tail else b""
            else:
                first = reader.pread(n_head, 0)
                last = reader.pread(n_tail, max(0, art.size - n_tail)) if n_tail else b""
        finally:
            reader.close()
    except OSError as exc:
        link.findings.append(finding("unreadable", path=art.path, session=entry.target_session, detail=exc.strerror or str(exc)))
        return link
    if notice.fork_gap:
        if first != head_b or last != tail_b:
            part = "head" if first != head_b else "tail"
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"preview {part} (before/after the [...] gap) is not the artifact's {part}"))
    else:
        splits = retention_splits(head_b, first, last, art.size)
        if not splits:
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail="preview is not a head+tail of the artifact"))
        elif notice.omitted_kind == "exact" and all(sp.omitted != notice.omitted_bytes for sp in splits):
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"omittedBytes: logged {notice.omitted_bytes}, recomputed {splits[0].omitted} (preview {len(head_b)} bytes, artifact {art.size})"))
    return link
