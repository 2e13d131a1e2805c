"""What a search inside one artifact reports: :class:`MessageHit`, the located hit and the event type.

Separate so that callers (the root-wide search, the reader, front ends) depend on the records,
not on how they are found; also the artifact kinds and the context trimming of a hit.
"""

from __future__ import annotations

from typing import NamedTuple, Union

from ..findings import Finding

#: Code points of context kept on each side of a hit (within its line).
CONTEXT = 80
#: Where a reader's search stops.
MAX_HITS = 5000

TRANSCRIPT = "session-reference-transcript"
TOOL_OUTPUT = "tool-output"


class MessageHit(NamedTuple):
    """One match inside one message (or tool output): offsets into its exact text.

    A NamedTuple, not a frozen dataclass, as each per-hit record of a search: as immutable, and
    built in a fifth of the time (a frozen dataclass sets each field through
    ``object.__setattr__``: 2 µs a record, three records a hit, a third of a dense ``-E``)."""

    start: int
    end: int
    #: UTF-8 byte offsets of the same span (lone surrogates as 3 bytes, as Node writes them).
    byte_start: int
    byte_end: int
    before: str = ""
    match: str = ""
    after: str = ""



def _hit(s: int, e: int, bs: int, be: int, before: str, match: str, after: str) -> MessageHit:
    before = before[before.rfind("\n") + 1 :][-CONTEXT:]
    cut = after.find("\n")
    after = (after if cut < 0 else after[:cut])[:CONTEXT]
    return MessageHit(s, e, bs, be, before, match, after)



class _Located(NamedTuple):
    """A hit and the message it is in (None: a tool output). A NamedTuple: see MessageHit."""

    message: int | None
    role: str | None
    hit: MessageHit


class _LocatedRun(NamedTuple):
    """Hits in a row in one message (None: a tool output), handed on together (see .whole.RUN)."""

    message: int | None
    role: str | None
    hits: list[MessageHit]


ArtifactEvent = Union[_Located, Finding]
#: An artifact's events with its hits in runs.
RunEvent = Union[_LocatedRun, Finding]
