"""How many of the notices a verification found it could actually check.

A notice is *checked* when its locator resolved inside the inspected root (the artifact
was then read, or found gone). A locator outside the root is *unchecked*: nothing was
compared, so a verify that checked none of the notices it found must not say "OK".
When the unchecked locators share a root of their own (the layout is
``<root>/session-<12 hex>/<file>``), that root is offered as ``--rebase`` — with how
many of them would then resolve to an artifact that is on disk.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ..link.locate import resolve_locator
from .inspection import Inspection

_SESSION_DIR = re.compile(r"session-[0-9a-f]{12}")


@dataclass(frozen=True)
class RebaseHint:
    prefix: str
    #: Of the unchecked locators, how many would resolve to an artifact on disk.
    would_resolve: int
    of: int


@dataclass(frozen=True)
class Coverage:
    #: Notices in the logs: reference notices and tool-spill notices.
    found: int
    #: Locator resolved inside the root: the artifact was checked, or found gone.
    checked: int
    #: Locator outside the root or not a local path: nothing was compared.
    unchecked: int
    #: The notice says no snapshot was saved (or is malformed): no locator to follow.
    no_locator: int
    rebase: RebaseHint | None

    @property
    def with_locator(self) -> int:
        return self.checked + self.unchecked

    @property
    def none_checked(self) -> bool:
        """Notices with locators were found and not one of them could be checked."""
        return self.with_locator > 0 and self.checked == 0

    def to_json(self) -> dict[str, Any]:
        return {"found": self.found, "checked": self.checked, "unchecked": self.unchecked,
                "noLocator": self.no_locator,
                "rebaseHint": None if self.rebase is None else {
                    "prefix": self.rebase.prefix, "wouldResolve": self.rebase.would_resolve, "of": self.rebase.of}}


def describe(cov: Coverage) -> list[str]:
    """What was checked and what was not, as lines for a person (raw text: escape it to show)."""
    lines = []
    if cov.found:
        lines.append(f"notices: {cov.found} found, {cov.checked} checked against the root"
                     + (f", {cov.unchecked} NOT checked (locator outside the root)" if cov.unchecked else "")
                     + (f", {cov.no_locator} without a locator to follow" if cov.no_locator else ""))
    if cov.rebase is not None:
        lines.append(f"did you mean --rebase {cov.rebase.prefix}? ({cov.rebase.would_resolve} of "
                     f"{cov.rebase.of} unchecked locators would then name an artifact on disk)")
    return lines


def coverage(ins: Inspection) -> Coverage:
    statuses = [link.status for link in ins.references if link.entry.notice is not None]
    statuses += [link.status for link in ins.tool_spills]
    checked = sum(1 for s in statuses if s in ("resolves", "expired"))
    unchecked_locators = [link.entry.locator for link in ins.references
                          if link.status == "outside-root" and link.entry.locator is not None]
    unchecked_locators += [link.entry.locator for link in ins.tool_spills if link.status == "outside-root"]
    unchecked = len(unchecked_locators)
    return Coverage(len(statuses), checked, unchecked, len(statuses) - checked - unchecked,
                    rebase_hint(unchecked_locators, ins))


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
