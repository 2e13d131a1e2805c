"""The watch seam's vocabulary: change events, their kinds, and the :class:`Watcher` base.

Owns what every backend and every consumer shares — :class:`ChangeEvent`, :data:`EventKind`,
:data:`STATUS_EVENTS`, :func:`root_problem` and the abstract :class:`Watcher` — so the
backends (:mod:`.local`, :mod:`.s3`) and :mod:`.patch` can import it without
importing each other or :mod:`.root` (which picks a backend), and no import cycle forms.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterator, Literal

from ..scan.tree import ArtifactKind

__all__ = ["STATUS_EVENTS", "ChangeEvent", "EventKind", "Watcher", "root_problem"]

EventKind = Literal["added", "modified", "deleted", "root-missing", "root-restored", "root-replaced", "stale", "live"]
#: Events about the watch itself rather than one artifact.
STATUS_EVENTS = frozenset({"root-missing", "root-restored", "root-replaced", "stale", "live"})


@dataclass(frozen=True)
class ChangeEvent:
    """A change to a watched root: an artifact or session added, changed or removed, or the root itself."""

    event: EventKind
    path: str
    session: str | None
    kind: ArtifactKind | None
    #: Why, for ``root-missing`` / ``root-replaced`` / ``stale`` (``None`` otherwise).
    detail: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"event": self.event, "path": self.path, "session": self.session, "kind": self.kind}
        if self.detail is not None:
            out["detail"] = self.detail
        return out


def root_problem(root: str) -> str | None:
    """Why the path cannot be followed as a root (``None``: it is a directory)."""
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "a parent is not a directory"
    except OSError as exc:
        return f"cannot be looked up: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink (not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    return None


class Watcher(ABC):
    """Follows one root until ``stop`` is set, as batches of :class:`ChangeEvent`.

    A batch holds artifact events and the watch's own status events: ``live`` once
    changes are followed, ``stale`` (with ``detail``) while they may not be,
    ``root-missing`` / ``root-restored`` / ``root-replaced``."""

    #: Seconds one round of the watcher's loop may take before it counts as stuck (in a
    #: system call on a hung file system, say): see :attr:`beat`.
    round_limit = 10.0

    def __init__(self, root: str, *, stop: threading.Event | None = None, tick_ms: int = 100,
                 initial: bool = False) -> None:
        self.root = root
        self.stop = stop or threading.Event()
        self.tick = tick_ms / 1000
        self.initial = initial
        #: When the loop last went round (``time.monotonic()``). A process that reports the
        #: watch as alive reads this, not its own liveness: a loop stuck in a system call
        #: follows nothing, however alive the process around it is.
        self.beat = time.monotonic()

    def went_round(self) -> None:
        self.beat = time.monotonic()

    def stuck(self) -> bool:
        """True when the loop has not gone round for :attr:`round_limit` seconds."""
        return time.monotonic() - self.beat > self.round_limit

    @abstractmethod
    def batches(self) -> Iterator[list[ChangeEvent]]:
        """Blocking: yield batches until ``stop`` is set."""


def join_queued(queue: asyncio.Queue[list[ChangeEvent] | None],
                batch: list[ChangeEvent]) -> tuple[list[ChangeEvent], bool]:
    """``batch`` and every batch already queued behind it, as one (a caller that fell
    behind catches up in one step instead of paying its per-batch cost for each); True
    when the end of the watch (``None``) was among them."""
    while not queue.empty():
        more = queue.get_nowait()
        if more is None:
            return batch, True
        batch = batch + more
    return batch, False
