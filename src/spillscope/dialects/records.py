"""The records a dialect returns: spill files, transcripts, links, its sweep rule, the report.

Every agent's inspection ends in these, in the one finding vocabulary of
:mod:`spillscope.inspect.findings`, so the front ends never ask which agent it was. Apart
from the seam itself (:mod:`.base`, the :class:`~.base.Dialect` an agent implements) because
building these classes is most of what importing the seam cost, and detecting a root's
agent (``spillscope grep`` on a dsh root, say) needs only the seam.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from ..inspect.findings import SEVERITY_RANK, Finding

#: What became of one link: ``verified`` (every check the notice allows passed), ``linked``
#: (the file is there, the notice offers nothing to compare), ``mismatch`` (a check failed:
#: see the findings), ``expired`` (the notice remains, the file is gone), ``unreadable`` (the
#: file is there but could not be read: never called expired), ``unchecked`` (the notice
#: names a place outside the inspected tree).
LinkStatus = Literal["verified", "linked", "mismatch", "expired", "unreadable", "unchecked"]


@dataclass(frozen=True, slots=True)
class SpillFile:
    """One file the agent's layout puts spills in, from ``lstat`` (never followed)."""

    path: str
    name: str
    size: int
    mtime: float
    mode: int
    #: The session the layout says it belongs to (a directory name), where it says one.
    session: str | None
    is_symlink: bool = False
    is_regular: bool = True


@dataclass(frozen=True, slots=True)
class Transcript:
    """One session transcript (a subagent's too), from ``lstat``."""

    path: str
    session: str | None
    size: int
    mtime: float
    #: For a subagent's transcript, the session it ran in.
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One transcript record a database keeps rather than a file (OpenCode's ``opencode.db``):
    where it is (table, ``id``, ``rowid``), its session, and its JSON as stored (bytes)."""

    table: str
    #: The row's own id (decoded with U+FFFD where not UTF-8; ``rowid`` names it exactly).
    id: str
    rowid: int
    session: str | None
    data: bytes | None


@dataclass(frozen=True, slots=True)
class Link:
    """A spill file and the place in a transcript that names it (or a notice whose file is gone).

    One per spill file (however many records name it: ``references`` counts them), or one per
    missing file a notice names: this is the unit ``verify`` counts as one checked notice."""

    transcript: str
    line: int
    session: str | None
    #: Which notice form named it (the dialect's own names, e.g. ``persisted-output``, ``full-text``).
    form: str
    #: The spill file's path (resolved into the inspected tree), or None when it names none.
    target: str | None
    #: The location as the notice wrote it (an absolute path on the agent's machine), if any.
    named: str | None
    status: LinkStatus
    #: The checks that ran and passed (``bytes``, ``prefix``, ``size-label``, ``sha256``…).
    checks: tuple[str, ...] = ()
    #: The notice as the model saw it (or the head of the kept text), for showing beside the file.
    notice: str = ""
    references: int = 1


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """What the agent's own sweep deletes: files whose mtime is older than ``seconds``."""

    seconds: float
    #: Where the value came from: a settings file (path and key), or ``default``.
    source: str
    #: What the sweep covers, in words (for the report).
    scope: str


def applied_rule(rule: RetentionRule | None, options: Options) -> RetentionRule | None:
    """The sweep rule an inspection applies and reports: the agent's own, or the one asked for.

    ``--retention`` (``Options.retention_seconds``) replaces the period everywhere it is said:
    the report's rule (``verify``'s ``retention`` line and JSON ``retention.seconds``), the
    forecast (``past_retention``) and its findings. The agent's own rule is named in the
    source, so the report says what was replaced; where the agent sweeps nothing (``rule``
    None) the asked period is still applied, to what the layout puts in its sweep."""
    asked = options.retention_seconds
    if asked is None:
        return rule
    own = f"in place of {rule.source} ({_period(rule.seconds)})" if rule is not None else "the agent itself sweeps nothing"
    scope = rule.scope if rule is not None else "the agent's spill files, by mtime"
    return RetentionRule(asked, f"--retention {_period(asked)} ({own})", scope)


def _period(seconds: float) -> str:
    for unit, size in (("w", 7 * 86400.0), ("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


@dataclass(frozen=True, slots=True)
class Options:
    """How one inspection runs. ``retention_seconds`` overrides the agent's own rule and asks
    for ``past-retention`` findings; without it the rule is only reported."""

    now: float
    retention_seconds: float | None = None
    check_content: bool = True
    #: dsh only: its session logs directory and a moved root's old prefix.
    logs: str | None = None
    rebase: str | None = None
    max_line_bytes: int | None = None
    max_log_line_bytes: int | None = None


@dataclass
class Report:
    """One inspected tree, in the words every agent shares."""

    dialect: str
    tree: str
    transcripts: list[Transcript]
    files: list[SpillFile]
    links: list[Link]
    findings: list[Finding]
    retention: RetentionRule | None = None
    #: Files the agent's sweep would delete next under ``retention`` (reported, not findings,
    #: unless a retention was asked for).
    past_retention: list[str] = field(default_factory=list)
    #: The dsh inspector's own result, for the front ends that show it (dsh only).
    native: Any = None

    def summary(self) -> dict[str, int]:
        return dict(sorted(Counter(f.code for f in self.findings).items()))

    def worst(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITY_RANK.__getitem__)

    def notices(self) -> dict[str, Any]:
        """``verify --json``'s ``notices`` member, the same keys as dsh's: each link is one notice;
        a link that found its file (or found it gone) is checked."""
        found = len(self.links)
        checked = sum(1 for k in self.links if k.status not in ("unchecked",))
        unchecked = sum(1 for k in self.links if k.status == "unchecked" and k.named is not None)
        from ..inspect.verify.coverage import why_nothing_checked  # here: detection and grep need none of verify

        # dsh's rule for having checked no notice; an agent's transcripts are its session logs.
        why = None if checked else why_nothing_checked(True, len(self.transcripts), found, unchecked)
        return {"found": found, "checked": checked, "unchecked": unchecked,
                "noLocator": found - checked - unchecked, "nothingChecked": why, "rebaseHint": None}

    def status_of(self) -> dict[str, Link]:
        """The link of each spill file, by path."""
        return {k.target: k for k in self.links if k.target is not None}


def lstat_file(path: str, session: str | None) -> SpillFile | None:
    """A :class:`SpillFile` from ``lstat`` (None if it vanished)."""
    import stat as _stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return SpillFile(path, os.path.basename(path), st.st_size, st.st_mtime, _stat.S_IMODE(st.st_mode), session,
                     _stat.S_ISLNK(st.st_mode), _stat.S_ISREG(st.st_mode))
