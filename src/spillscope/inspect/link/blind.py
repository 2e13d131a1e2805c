"""The unreadable-place tracker: where the scan could not look, so a missing artifact there is unverified.

Separate because both linkers (reference and tool spill) ask it the same question before
calling a locator expired.
"""

from __future__ import annotations

import os
from typing import Any

from ..findings import Finding, finding
from ..scan.tree import RootScan


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
