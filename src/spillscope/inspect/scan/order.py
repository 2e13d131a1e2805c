"""The orders an ``ls`` listing is shown in: the names ``ls --sort`` takes, and what each does.

Apart from :mod:`.listing` (which builds listings) so that the command line's parser offers
the names without importing the listing's builder: ``spillscope grep`` lists nothing.
"""

from __future__ import annotations

from typing import Any

#: The orders :func:`order` knows (``ls --sort``).
SORTS = ("name", "size", "age")


def order(sessions: list[dict[str, Any]], sort: str) -> None:
    """Sort a listing's ``sessions`` and each one's artifacts in place: ``size`` largest
    first, ``age`` oldest first (a session by its oldest artifact), ``name`` the scan's
    order (left as it is)."""
    if sort == "size":
        for s in sessions:
            s["artifacts"].sort(key=lambda a: (-a["size"], a["name"]))
        sessions.sort(key=lambda s: (-s["bytes"], s["dir"]))
    elif sort == "age":
        for s in sessions:
            s["artifacts"].sort(key=lambda a: (-a["ageSeconds"], a["name"]))
        sessions.sort(key=lambda s: (-max((a["ageSeconds"] for a in s["artifacts"]), default=-1.0), s["dir"]))
