"""Findings: one problem, with a stable code, a severity and where it is.

Codes are part of the CLI's JSON interface (``verify --json``): never renamed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal, TypeVar

Severity = Literal["error", "warning", "info"]

#: code → (severity, one-line meaning). Ordered as they are documented.
CODES: dict[str, tuple[Severity, str]] = {
    "expired-locator": ("warning", "a notice's locator names no file: deleted by retention or never written"),
    "bytes-mismatch": ("error", "a notice's bytes differ from the artifact's size on disk"),
    "omission-mismatch": ("error", "a notice's omission counts disagree with the artifact (field, logged vs recomputed)"),
    "malformed-artifact": ("error", "an artifact that does not follow the transcript format (file:line and reason)"),
    "incomplete-artifact": ("warning", "an artifact cut off mid-write"),
    "malformed-log": ("error", "a session-log line that cannot be read (file:line and reason)"),
    "malformed-notice": ("error", "a reference message or notice in a log that does not follow the format"),
    "orphan-artifact": ("warning", "an artifact that no notice in the logs names"),
    "foreign-owner": ("error", "an artifact in a session dir other than its owner's"),
    "outside-root": ("warning", "a locator that points outside the inspected spill root"),
    "insecure-permissions": ("warning", "a session dir or an artifact others may read or write (the backend makes them 0700, 0600)"),
    "symlink": ("error", "a symlink inside the spill root (reported, never followed)"),
    "unexpected-entry": ("warning", "something in the spill root that the backend never writes (dir, FIFO, odd name)"),
    "unreadable": ("error", "an entry that cannot be read (permission denied, vanished mid-scan)"),
    "past-retention": ("warning", "an artifact the backend's start-up sweep would delete at --retention (prune's rule)"),
    "snapshot-unavailable": ("info", "the notice itself says the save failed or no storage was configured"),
    "notice-dialect": ("info", "a tool spill notice in a fork's dialect (more-bytes, omitted-images, gap), read leniently"),
    "content-mismatch": ("error", "a spill file's bytes differ from the full text its transcript kept (first differing byte)"),
    "preview-mismatch": ("error", "a notice's preview (head or tail) is not the spill file's own start or end"),
    "size-label-mismatch": ("error", "a notice's size label (e.g. 83.7KB, 1,234 chars) disagrees with the spill file"),
    "digest-mismatch": ("error", "a notice's SHA-256 of the full output is not the spill file's"),
    "normalized-locator": ("info", "a replay-normalised {{spillLocator:NAME}} locator; checked against the one artifact named NAME, if any"),
}

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem and where it is. Slotted: a wide root gives one per artifact (an orphan
    each), and an instance dict per finding was most of their memory."""

    code: str
    severity: Severity
    path: str | None = None
    line: int | None = None
    session: str | None = None
    locator: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "session": self.session,
            "locator": self.locator,
            "detail": self.detail,
        }

    @property
    def where(self) -> str:
        if self.path is None:
            return self.locator or ""
        return f"{self.path}:{self.line}" if self.line is not None else self.path


def by_location(findings: Iterable[Finding]) -> dict[str, list[Finding]]:
    """Findings under each place they point at: their path and, when it differs, their locator."""
    out: dict[str, list[Finding]] = {}
    for f in findings:
        if f.path is not None:
            out.setdefault(f.path, []).append(f)
        if f.locator is not None and f.locator != f.path:
            out.setdefault(f.locator, []).append(f)
    return out


def finding(code: str, **kwargs: Any) -> Finding:
    """A finding with the code's registered severity."""
    return Finding(code, CODES[code][0], **kwargs)


_T = TypeVar("_T")


def set_apart(items: Iterable[_T | Finding]) -> tuple[list[_T], list[Finding]]:
    """A walk's items and its findings, each in their order (a walk that yields both as it goes)."""
    kept: list[_T] = []
    found: list[Finding] = []
    for item in items:
        if isinstance(item, Finding):
            found.append(item)
        else:
            kept.append(item)
    return kept, found
