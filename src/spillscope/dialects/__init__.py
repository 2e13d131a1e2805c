"""Agent dialects: which agent wrote a tree, chosen once at the edge, and its :class:`Dialect`.

One registration line per agent (:data:`REGISTERED`: the subpackage's name); each subpackage
exports ``DIALECT``, an instance of :class:`.base.Dialect`. Adding an agent is one new folder
here plus its line below. Subpackages are imported only when asked for, so detecting a dsh
root costs no other agent's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..util.lazy import lazy_exports
from .base import Dialect

if TYPE_CHECKING:
    from .records import Link, Options, Report, RetentionRule, SpillFile, Transcript

# The records load on first use: detecting a tree's agent needs none of them.
__getattr__, _ = lazy_exports(__name__, {"records": ("Link", "Options", "Report", "RetentionRule", "SpillFile", "Transcript")})

__all__ = ["REGISTERED", "Dialect", "DialectError", "Link", "Options", "Report", "RetentionRule", "SpillFile",
           "Transcript", "detect", "get", "names"]

#: Every agent spillscope reads, by subpackage name (``--agent NAME``), in detection order.
REGISTERED = (
    "dsh",
    "claude",
    "gemini",
    "qwen",
    "opencode",
)


class DialectError(Exception):
    """No agent's layout matches the tree, or an unknown ``--agent`` name."""


def names() -> tuple[str, ...]:
    return REGISTERED


def get(name: str) -> Dialect:
    if name not in REGISTERED:
        raise DialectError(f"unknown agent {name!r} (known: {', '.join(REGISTERED)})")
    dialect: Dialect = importlib.import_module(f"{__name__}.{name}").DIALECT
    return dialect


def detect(tree: str, *, hint_logs: bool = False) -> Dialect:
    """The dialect whose layout ``tree`` has (the most confident one; the first registered on a tie).

    ``hint_logs``: session logs were given apart from the tree (only dsh keeps them apart)."""
    if hint_logs:
        return get("dsh")
    best: tuple[float, Dialect] | None = None
    for name in REGISTERED:
        dialect = get(name)
        score = dialect.detect(tree)
        if score > 0 and (best is None or score > best[0]):
            best = (score, dialect)
        if score >= 1.0:
            break  # certain: no later agent can score higher, and a tie goes to the first
    if best is None:
        looked = "; ".join(f"{get(n).title} ({n}: {get(n).usual_path})" for n in REGISTERED)
        raise DialectError(f"{tree}: no agent's spill layout found here (looked for {looked}); "
                           f"name one with --agent NAME")
    return best[1]
