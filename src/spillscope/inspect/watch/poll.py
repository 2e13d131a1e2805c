"""Watching an object-store spill root (``s3://bucket/prefix``) by polling its listing.

An object store has no change notifications that a read-only client can subscribe to
without configuring the bucket, so the root is listed every ``interval`` seconds
(:data:`POLL_SECONDS`, 2 s; ``SPILLSCOPE_S3_POLL_SECONDS`` overrides it) and each listing
is compared with the last one, key by key on (size, ETag, LastModified). The events are
the local watcher's: ``added``/``modified``/``deleted`` for artifacts under a session
"dir"; ``root-missing`` (after ``deleted`` for everything held) when the bucket is gone,
``root-restored`` (then ``added``) when it is back; ``live`` (its detail says it polls, and
how often) once a listing succeeded. A failed listing (network, throttling, denied, an
endpoint that does not answer within the store's timeout) is ``stale`` with why, and changes
nothing else: the last known state is kept and the next poll tries again, so no ``deleted``
is ever reported for an object that was only unreachable, and no view says "live" while
the store cannot be reached. Any store that is not a tree is watched this way.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterator

from ...storage import RootGone, Storage
from ..scan.tree import SESSION_DIR, classify_name
from .events import ChangeEvent, EventKind, Watcher

POLL_SECONDS = 2.0


def poll_seconds() -> float:
    try:
        value = float(os.environ.get("SPILLSCOPE_S3_POLL_SECONDS", POLL_SECONDS))
    except ValueError:
        return POLL_SECONDS
    return value if value > 0 else POLL_SECONDS


class ObjectRootState:
    """The artifacts under an object-store root as last listed: URL → (size, ETag, mtime)."""

    def __init__(self, store: Storage) -> None:
        self.store = store
        self.root = store.root
        self.files: dict[str, tuple[int, str, float]] = {}

    def listing(self) -> dict[str, tuple[int, str, float]]:
        """The current objects; :class:`RootGone` when the bucket is gone; other errors propagate."""
        seen: dict[str, tuple[int, str, float]] = {}
        for obj in self.store.objects():
            parts = obj.rel.split("/")
            if len(parts) == 2 and SESSION_DIR.match(parts[0]) and parts[1]:
                seen[obj.url] = (obj.size, obj.etag, obj.mtime)
        return seen

    def event(self, kind: EventKind, url: str) -> ChangeEvent:
        session, _, name = url[len(self.root) + 1:].partition("/")
        return ChangeEvent(kind, url, session, classify_name(name)[1])

    def apply(self, seen: dict[str, tuple[int, str, float]]) -> list[ChangeEvent]:
        events: list[ChangeEvent] = []
        for url, sig in sorted(seen.items()):
            old = self.files.get(url)
            if old is None:
                events.append(self.event("added", url))
            elif old != sig:
                events.append(self.event("modified", url))
        for url in sorted(set(self.files) - set(seen)):
            events.append(self.event("deleted", url))
        self.files = seen
        return events


def watch_objects(store: Storage, *, stop: threading.Event | None = None, initial: bool = False,
                  interval: float | None = None,
                  went_round: Callable[[], None] = lambda: None) -> Iterator[list[ChangeEvent]]:
    """Blocking: yield batches of change events until ``stop`` is set (see the module
    docstring); ``went_round`` is called before each poll."""
    stop = stop or threading.Event()
    interval = poll_seconds() if interval is None else interval
    state = ObjectRootState(store)
    said: str | None = None  # the status last reported: "live", "stale" or "missing"
    first = True
    while not stop.is_set():
        went_round()
        try:
            seen = state.listing()
        except RootGone as exc:
            if said != "missing":
                said = "missing"
                yield state.apply({}) + [ChangeEvent("root-missing", state.root, None, None, str(exc))]
        except ImportError:
            raise
        except Exception as exc:  # unreachable for now: keep the last state, try again next poll
            why = f"listing failed: {store.describe_error(exc)}; last known state kept, retrying every {interval:g} s"
            if said != "stale":
                said = "stale"
                yield [ChangeEvent("stale", state.root, None, None, why)]
        else:
            events = state.apply(seen)
            batch: list[ChangeEvent] = []
            if said == "missing":
                batch.append(ChangeEvent("root-restored", state.root, None, None))
            if events and (initial or not first or said == "missing"):
                batch += events
            if said != "live":
                said = "live"
                batch.append(ChangeEvent("live", state.root, None, None, f"polling its listing every {interval:g} s"))
            if batch:
                yield batch
            first = False
        stop.wait(interval)


class PollingWatcher(Watcher):
    """An object-store root, polled (the seam's other implementation beside LocalWatcher)."""

    def __init__(self, store: Storage, *, stop: threading.Event | None = None, tick_ms: int = 100,
                 initial: bool = False) -> None:
        super().__init__(store.root, stop=stop, tick_ms=tick_ms, initial=initial)
        self.store = store

    @property
    def round_limit(self) -> float:  # type: ignore[override]
        # A round is a poll: the wait between polls, then a listing (a slow one is fine,
        # one hung past the store's own request bounds is not).
        return self.store.poll_limit + 2 * poll_seconds()

    def batches(self) -> Iterator[list[ChangeEvent]]:
        return watch_objects(self.store, stop=self.stop, initial=self.initial, went_round=self.went_round)
