"""Watching an ``s3://bucket/prefix`` spill root by polling ListObjectsV2.

An object store has no change notifications that a read-only client can subscribe to
without configuring the bucket, so the root is listed every ``interval`` seconds
(:data:`POLL_SECONDS`, 2 s; ``SPILLSCOPE_S3_POLL_SECONDS`` overrides it) and each listing
is compared with the last one, key by key on (size, ETag, LastModified). The events are
the local watcher's: ``added``/``modified``/``deleted`` for artifacts under a session
"dir"; ``root-missing`` (after ``deleted`` for everything held) when the bucket is gone,
``root-restored`` (then ``added``) when it is back; ``live`` (its detail says it polls, and
how often) once a listing succeeded. A failed listing (network, throttling, denied) is
``stale`` with why, and changes nothing else: the last known state is kept and the next
poll tries again, so no ``deleted`` is ever reported for an object that was only
unreachable, and no view says "live" while the store cannot be reached.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Iterator

from ...spill.s3 import error_code, parse_s3_url
from ..s3root import iter_objects
from ..scan.tree import SESSION_DIR, classify_name
from .events import ChangeEvent, EventKind, Watcher

POLL_SECONDS = 2.0


def poll_seconds() -> float:
    try:
        value = float(os.environ.get("SPILLSCOPE_S3_POLL_SECONDS", POLL_SECONDS))
    except ValueError:
        return POLL_SECONDS
    return value if value > 0 else POLL_SECONDS


class _Missing(Exception):
    pass


class S3RootState:
    """The artifacts under an S3 root as last listed: URL → (size, ETag, LastModified)."""

    def __init__(self, root: str) -> None:
        self.url = parse_s3_url(root)
        self.root = self.url.url()
        self.files: dict[str, tuple[int, str, float]] = {}

    def listing(self) -> dict[str, tuple[int, str, float]]:
        """The current objects; :class:`_Missing` when the bucket is gone; other errors propagate."""
        base = self.url.key_base
        seen: dict[str, tuple[int, str, float]] = {}
        try:
            for obj in iter_objects(self.root):
                parts = obj["Key"][len(base):].split("/")
                if len(parts) == 2 and SESSION_DIR.match(parts[0]) and parts[1]:
                    seen[self.url.object_url(obj["Key"])] = (int(obj["Size"]), str(obj.get("ETag", "")),
                                                             obj["LastModified"].timestamp())
        except ImportError:
            raise
        except Exception as exc:
            if error_code(exc) == "NoSuchBucket":
                raise _Missing() from exc
            raise
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


def watch_s3_root(root: str, *, stop: threading.Event | None = None, initial: bool = False,
                  interval: float | None = None,
                  went_round: Callable[[], None] = lambda: None) -> Iterator[list[ChangeEvent]]:
    """Blocking: yield batches of change events until ``stop`` is set (see the module
    docstring); ``went_round`` is called before each poll."""
    stop = stop or threading.Event()
    interval = poll_seconds() if interval is None else interval
    state = S3RootState(root)
    said: str | None = None  # the status last reported: "live", "stale" or "missing"
    first = True
    while not stop.is_set():
        went_round()
        try:
            seen = state.listing()
        except _Missing:
            if said != "missing":
                said = "missing"
                yield state.apply({}) + [ChangeEvent("root-missing", state.root, None, None, "the bucket does not exist")]
        except ImportError:
            raise
        except Exception as exc:  # unreachable for now: keep the last state, try again next poll
            why = f"listing failed ({error_code(exc) or type(exc).__name__}); last known state kept, retrying every {interval:g} s"
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
                batch.append(ChangeEvent("live", state.root, None, None, f"polling ListObjectsV2 every {interval:g} s"))
            if batch:
                yield batch
            first = False
        stop.wait(interval)


class S3Watcher(Watcher):
    """An ``s3://`` root, polled (the seam's other implementation beside LocalWatcher)."""

    @property
    def round_limit(self) -> float:  # type: ignore[override]
        # A round is a poll: the wait between polls, then a listing (a slow one is fine,
        # one hung past the client's own timeouts is not).
        return 10.0 + 2 * poll_seconds()

    def batches(self) -> Iterator[list[ChangeEvent]]:
        return watch_s3_root(self.root, stop=self.stop, initial=self.initial, went_round=self.went_round)
