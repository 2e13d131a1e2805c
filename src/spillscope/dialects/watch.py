"""``watch`` on another agent's tree: its spill files and transcripts, polled.

Each round lists what the dialect's layout names (``Dialect.texts``: spill files and
transcripts, from names and ``lstat`` only) and reports what was added, modified (size or
mtime changed) or deleted since the round before. Polling, not inotify: the agents' trees are
wide (every project of ``~/.claude/projects``), and a round is a listing, which the dsh
watcher's own measurements put well under its poll interval at this size.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Iterator

from .base import Dialect


@dataclass(frozen=True, slots=True)
class Change:
    """A change to a watched agent tree: a spill file or transcript added, modified or deleted."""

    event: str  # added | modified | deleted
    path: str
    kind: str  # spill | transcript
    size: int | None

    def to_json(self) -> dict[str, object]:
        return {"event": self.event, "path": self.path, "kind": self.kind, "size": self.size}


def _snapshot(dialect: Dialect, tree: str) -> dict[str, tuple[str, int, int]]:
    out: dict[str, tuple[str, int, int]] = {}
    for path, kind in dialect.texts(tree):
        try:
            st = os.lstat(path)
        except OSError:
            continue  # gone between the listing and the lstat: the next round says so
        out[path] = (kind, st.st_size, st.st_mtime_ns)
    return out


def poll(dialect: Dialect, tree: str, *, stop: threading.Event, interval: float = 1.0,
         initial: bool = False, heartbeat: Callable[[], None] | None = None) -> Iterator[list[Change]]:
    """Batches of changes, one per round that saw any, until ``stop`` is set.

    ``heartbeat`` is called after every round's listing (the first included), whether or not
    it saw a change: a caller that says the watch is live (the TUI) reads it, so a round stuck
    in a system call, or a loop that ended, stops the beat rather than going unnoticed."""
    seen = _snapshot(dialect, tree)
    if heartbeat is not None:
        heartbeat()
    if initial and seen:
        yield [Change("added", p, k, s) for p, (k, s, _) in sorted(seen.items())]
    while not stop.wait(interval):
        now = _snapshot(dialect, tree)
        if heartbeat is not None:
            heartbeat()
        batch = [Change("added", p, k, s) for p, (k, s, _) in sorted(now.items()) if p not in seen]
        batch += [Change("modified", p, k, s) for p, (k, s, m) in sorted(now.items())
                  if p in seen and seen[p][1:] != (s, m)]
        batch += [Change("deleted", p, k, None) for p, (k, _, _) in sorted(seen.items()) if p not in now]
        seen = now
        if batch:
            yield batch
