"""Watching one spill root: the backend chosen for it, and its batches for sync and async callers.

:func:`open_watcher` picks the backend for a root, :func:`watch_root` yields its batches,
:func:`awatch_root` does so for asyncio callers. The rest of the watch lives by job in this
package (see its ``__init__``): the vocabulary in :mod:`.events`, the local backend in
:mod:`.local` and :mod:`.state`, the ``s3://`` backend in :mod:`.s3` (imported only when asked).
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import AsyncGenerator, Iterator

from ...storage import Storage, open_storage
from .events import ChangeEvent, Watcher, join_queued
from .local import LocalWatcher

__all__ = ["awatch_root", "open_watcher", "watch_root"]


def open_watcher(root: Storage | str | os.PathLike[str], *, stop: threading.Event | None = None, tick_ms: int = 100,
                 initial: bool = False) -> Watcher:
    """The watcher for a root: a directory (the OS's notifications), or an object store (polled)."""
    store = open_storage(root)
    if store.tree is None:
        from .poll import PollingWatcher  # no OS watcher for a bucket

        return PollingWatcher(store, stop=stop, tick_ms=tick_ms, initial=initial)
    return LocalWatcher(store.tree, stop=stop, tick_ms=tick_ms, initial=initial)


def watch_root(
    root: Storage | str | os.PathLike[str],
    *,
    stop: threading.Event | None = None,
    tick_ms: int = 100,
    initial: bool = False,
) -> Iterator[list[ChangeEvent]]:
    """Blocking: yield batches of change events until ``stop`` is set.

    With ``initial`` the first batch lists every existing artifact as ``added``.
    """
    return open_watcher(root, stop=stop, tick_ms=tick_ms, initial=initial).batches()


async def awatch_root(root: Storage | str | os.PathLike[str], *, initial: bool = False) -> AsyncGenerator[list[ChangeEvent], None]:
    """The same as :func:`watch_root`, from a thread, for asyncio callers (TUI, notebook).

    If the watching thread fails, a last ``stale`` event says so before the end. Batches
    that queued up while the caller was busy come as one (in order): a caller that
    falls behind catches up in one step instead of paying its per-batch cost for each."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[list[ChangeEvent] | None] = asyncio.Queue()
    stop = threading.Event()
    where = open_storage(root).root

    def deliver(item: list[ChangeEvent] | None) -> bool:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
            return True
        except RuntimeError:  # the consumer's loop is closed: nobody is listening any more
            stop.set()
            return False

    def run() -> None:
        try:
            for batch in watch_root(root, stop=stop, initial=initial):
                if not deliver(batch):
                    return
        except Exception as exc:
            deliver([ChangeEvent("stale", where, None, None, f"the watch stopped ({type(exc).__name__}: {exc})")])
        finally:
            deliver(None)

    thread = threading.Thread(target=run, name="spillscope-watch", daemon=True)
    thread.start()
    try:
        while True:
            batch = await queue.get()
            if batch is None:
                return
            batch, end = join_queued(queue, batch)
            yield batch
            if end:
                return
    finally:
        stop.set()
