"""How many of the notices a verification found it could actually check.

A notice is *checked* when its locator resolved inside the inspected root (the artifact
was then read, or found gone). A locator outside the root is *unchecked*: nothing was
compared, so a verify that checked none of the notices it found must not say "OK".
When the unchecked locators share a root of their own (the layout is
``<root>/session-<12 hex>/<file>``), that root is offered as ``--rebase`` — with how
many of them would then resolve to an artifact that is on disk.

A verification that checked *no* notice is not a pass, whatever the reason: no logs
given, logs without a session log or without a notice, every locator outside the root,
or no notice naming an artifact. :data:`NOTHING_CHECKED` names each reason; the CLI
(its own exit status), the TUI's status line and the notebook all say it from here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any, Iterable

from ..link.locate import resolve_locator

if TYPE_CHECKING:  # annotations only: the dialects ask the rule without the verify pass
    from .inspection import Inspection

_SESSION_DIR = re.compile(r"session-[0-9a-f]{12}")

#: Why no notice was checked: the code (``notices.nothingChecked`` in JSON) and what to
#: say. In the order they are tested: the first that holds is the reason.
NOTHING_CHECKED: dict[str, str] = {
    "no-logs": "no session logs given (the notices are in them)",
    "no-session-logs": "the logs dir holds no session log",
    "no-notices": "the session logs hold no spill notice",
    "outside-root": "every notice's locator is outside the root",
    "no-locator": "no notice names an artifact (no snapshot saved, or malformed)",
}

#: A notice is checked when its locator resolved inside the root: the artifact was
#: compared with it, or found gone.
_CHECKED = ("resolves", "expired")


@dataclass(frozen=True)
class RebaseHint:
    """A prefix that, rebased onto the root, would make unchecked locators resolve."""

    prefix: str
    #: Of the unchecked locators, how many would resolve to an artifact on disk.
    would_resolve: int
    of: int


@dataclass(frozen=True)
class Coverage:
    """What a verify pass checked: notices found, checked and not, and artifacts on their own."""

    #: Notices in the logs: reference notices and tool-spill notices.
    found: int
    #: Locator resolved inside the root: the artifact was checked, or found gone.
    checked: int
    #: Locator outside the root or not a local path: nothing was compared.
    unchecked: int
    #: The notice says no snapshot was saved (or is malformed): no locator to follow.
    no_locator: int
    rebase: RebaseHint | None
    #: Whether session logs were given (else the root alone was inspected), and how many were read.
    logs_given: bool = True
    session_logs: int = 0
    #: Artifacts in the root (checked on their own, notices or not).
    artifacts: int = 0

    @property
    def nothing_checked(self) -> str | None:
        """Why not one notice was checked (a :data:`NOTHING_CHECKED` code), None if one was."""
        if self.checked:
            return None
        return why_nothing_checked(self.logs_given, self.session_logs, self.found, self.unchecked)

    def to_json(self) -> dict[str, Any]:
        return {"found": self.found, "checked": self.checked, "unchecked": self.unchecked,
                "noLocator": self.no_locator, "nothingChecked": self.nothing_checked,
                "rebaseHint": None if self.rebase is None else {
                    "prefix": self.rebase.prefix, "wouldResolve": self.rebase.would_resolve, "of": self.rebase.of}}


def why_nothing_checked(logs_given: bool, session_logs: int, found: int, unchecked: int) -> str:
    """The reason no notice was checked, from what there was (see :data:`NOTHING_CHECKED`):
    the one rule, for dsh's inspection and every other agent's (dialects/base.py)."""
    if not logs_given:
        return "no-logs"
    if not session_logs:
        return "no-session-logs"
    if not found:
        return "no-notices"
    return "outside-root" if unchecked else "no-locator"


def nothing_checked(ins: Inspection) -> str | None:
    """:attr:`Coverage.nothing_checked` without counting every notice: it stops at the
    first one checked (the TUI asks on every status update)."""
    found = unchecked = 0
    for status in _statuses(ins):
        if status in _CHECKED:
            return None
        found += 1
        unchecked += status == "outside-root"
    return why_nothing_checked(ins.logs_dir is not None, len(ins.logs), found, unchecked)


def not_checked_line(reason: str, artifacts: int) -> str:
    """The one line that says no notice was checked, why, and what was checked instead."""
    return (f"no notice checked: {NOTHING_CHECKED[reason]}; "
            + ("the root holds no artifact" if not artifacts
               else f"only the {artifacts} artifact{'' if artifacts == 1 else 's'} themselves were checked"))


def describe(cov: Coverage) -> list[str]:
    """What was checked and what was not, as lines for a person (raw text: escape it to show)."""
    lines = []
    if cov.found:
        lines.append(f"notices: {cov.found} found, {cov.checked} checked against the root"
                     + (f", {cov.unchecked} NOT checked (locator outside the root)" if cov.unchecked else "")
                     + (f", {cov.no_locator} without a locator to follow" if cov.no_locator else ""))
    reason = cov.nothing_checked
    if reason is not None:
        lines.append(not_checked_line(reason, cov.artifacts))
    if cov.rebase is not None:
        lines.append(f"did you mean --rebase {cov.rebase.prefix}? ({cov.rebase.would_resolve} of "
                     f"{cov.rebase.of} unchecked locators would then name an artifact on disk)")
    return lines


def _statuses(ins: Inspection) -> Iterable[str]:
    """The link status of every notice: reference notices, then tool-spill notices."""
    return chain((link.status for link in ins.references if link.entry.notice is not None),
                 (link.status for link in ins.tool_spills))


def coverage(ins: Inspection) -> Coverage:
    statuses = list(_statuses(ins))
    checked = sum(1 for s in statuses if s in _CHECKED)
    unchecked_locators = [link.entry.locator for link in ins.references
                          if link.status == "outside-root" and link.entry.locator is not None]
    unchecked_locators += [link.entry.locator for link in ins.tool_spills if link.status == "outside-root"]
    unchecked = len(unchecked_locators)
    return Coverage(len(statuses), checked, unchecked, len(statuses) - checked - unchecked,
                    rebase_hint(unchecked_locators, ins), ins.logs_dir is not None, len(ins.logs),
                    len(ins.scan.artifacts()))


def _locator_root(locator: str) -> str:
    """The root a locator was written under: the part before its session dir."""
    parts = locator.split("/")
    for i in range(len(parts) - 2, 0, -1):
        if _SESSION_DIR.fullmatch(parts[i]):
            return "/".join(parts[:i]) or "/"
    return os.path.dirname(os.path.dirname(locator)) or "/"


def rebase_hint(locators: list[str], ins: Inspection) -> RebaseHint | None:
    """The common root of these (absolute, outside-root) locators, if it is not ``/``."""
    usable = [loc for loc in locators if loc.startswith("/") and "\x00" not in loc]
    if not usable:
        return None
    roots = [_locator_root(loc) for loc in usable]
    try:
        prefix = os.path.commonpath(roots)
    except ValueError:
        return None
    if prefix in ("/", "") or prefix.rstrip("/") == ins.root.rstrip("/"):
        return None
    by_path = ins.scan.by_path()
    resolving = 0
    for loc in usable:
        path, _ = resolve_locator(loc, ins.root, prefix)
        art = by_path.get(path) if path is not None else None
        if art is not None and art.is_regular:
            resolving += 1
    return RebaseHint(prefix, resolving, len(usable))
