"""Reading replay-normalised logs: a locator scrubbed to ``{{spillLocator:<name>}}``
(FORMAT.md §8) names no path, so it is neither expired nor outside the root. The
inspector reports it as ``normalized-locator`` (info) and still checks the notice
against an artifact it can match by its safe name.

Matching: every regular artifact whose file name is ``<12 hex>-<name>``; when there are
several, those in the owner's session dir, then those whose size fits the notice. Only
a single remaining candidate is matched -- a guess between two files would make every
later check meaningless.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ...spill.naming import session_dir_name
from ...spill.replay import normalized_name
from ..scan.tree import ARTIFACT, Artifact

__all__ = ["match_normalized", "normalized_name"]


def match_normalized(
    name: str, owner_session: str | None, artifacts: Iterable[Artifact], size_fits: Callable[[int], bool] | None = None,
) -> tuple[Artifact | None, str]:
    """(the one artifact named ``name``, how it was chosen) or (None, why none was)."""
    candidates = []
    for art in artifacts:
        m = ARTIFACT.match(art.name)
        if art.is_regular and m is not None and m.group(2) == name:
            candidates.append(art)
    if not candidates:
        return None, f"no artifact named *-{name} in this root: counts and preview not checked"
    steps: list[tuple[str, Callable[[Artifact], bool]]] = []
    if owner_session:
        owner_dir = session_dir_name(owner_session)
        steps.append(("in the owner's session dir", lambda a: a.session_dir == owner_dir))
    if size_fits is not None:
        fits = size_fits
        steps.append(("whose size fits the notice", lambda a: fits(a.size)))
    how = "the only artifact named"
    for label, keep in steps:
        if len(candidates) == 1:
            break
        narrowed = [a for a in candidates if keep(a)]
        if narrowed:
            candidates, how = narrowed, f"the only artifact {label} named"
    if len(candidates) > 1:
        return None, f"{len(candidates)} artifacts named *-{name}: none matched, counts and preview not checked"
    return candidates[0], f"{how} *-{name}"
