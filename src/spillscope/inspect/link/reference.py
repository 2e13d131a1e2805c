"""Linking a session-reference notice to its transcript and checking the notice against it.

Validates the notice's fields, resolves its locator (or matches a replay-normalised name),
and recomputes the omission counts from the transcript's digest. Separate from the tool-spill
linker: a reference carries a JSON notice and a chunked transcript, a tool spill a text notice
and raw bytes.
"""

from __future__ import annotations

from typing import Any

from ...storage import Storage
from ...reference.check import check_notice, keep_bytes_for
from ...formats.transcript.records import TranscriptError
from ...spill.naming import session_dir_name
from .blind import _Blind
from ..findings import finding
from .records import ArtifactCheck, ReferenceLink
from .locate import resolve_locator
from ..logs import ReferenceEntry
from .replay import match_normalized, normalized_name
from ..scan.tree import Artifact
from .transcripts import _Digests

MAX_SAFE = 2**53 - 1


def _valid_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE


def validate_notice(entry: ReferenceEntry) -> list[str]:
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
    entry: ReferenceEntry, root: Storage, rebase: str | None, by_path: dict[str, Artifact],
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
    problems = validate_notice(entry)
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
