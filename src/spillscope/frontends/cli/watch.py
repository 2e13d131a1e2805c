"""``spillscope watch``: one line per change under a live root, until SIGINT or SIGTERM.

A root that does not exist yet is waited for (a directory to be created, a bucket to
appear): a harness creates its spill root on its first spill. A root that cannot be
reached at all — an object store whose endpoint refuses or does not answer — is a usage
error (exit 2, "unreachable"): at start it is far more often a wrong endpoint than an
outage. Once the watch is live, an outage is reported as ``stale`` with why, and the
watch goes on polling.

Both signals get explicit handlers: a command started in the background by a
non-interactive shell (``cmd &``) inherits SIGINT *ignored*, and a watch that
cannot be stopped by Ctrl-C or ``kill -INT`` is left behind by whoever started it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from types import FrameType
from typing import Callable, TextIO

from ...storage import Storage
from ...util.text import visible


class WatchUsageError(Exception):
    """The path cannot be watched as a root (exit 2)."""


def run_watch(store: Storage, out: TextIO, *, as_json: bool, initial: bool, err: TextIO | None = None) -> int:
    from ...inspect.watch.root import watch_root
    from ...inspect.watch.events import root_problem

    err = err or sys.stderr
    root = store.root
    if store.tree is not None:
        why = root_problem(store.tree)
        if why is not None and why != "does not exist":
            if why.startswith("is a symlink"):
                raise WatchUsageError(f"{root}: is a symlink; watch follows a root by its path and never follows "
                                      f"a symlink (watch {os.path.realpath(root)} instead)")
            raise WatchUsageError(f"{root}: {why}")
    else:
        problem = store.problem()
        if problem is not None and not problem.missing:
            raise WatchUsageError(f"{problem}: unreachable, not watched (a bucket that does not exist yet is waited for)")
        why = None if problem is None else "does not exist"
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        if why is not None:
            err.write(f"spillscope: {visible(root, one_line=True)} does not exist yet; waiting for it to appear (Ctrl-C stops)\n")
            err.flush()
        for batch in watch_root(store, stop=stop, initial=initial):
            stamp = utc_stamp(time.time())  # when the watcher reported the batch
            for ev in batch:
                if as_json:
                    out.write(json.dumps({"time": stamp, **ev.to_json()}, ensure_ascii=True) + "\n")
                else:
                    detail = f"  ({visible(ev.detail, one_line=True)})" if ev.detail else ""
                    out.write(f"{stamp}  {ev.event:<13} {ev.kind or '-':<29} {visible(ev.path, one_line=True)}{detail}\n")
            out.flush()
    finally:
        stop.set()
        restore()
    return 0


def utc_stamp(seconds: float) -> str:
    """ISO 8601 in UTC to the millisecond, ``2026-12-04T16:37:02.123Z``: sortable as text,
    and the same whatever time zone the watcher or the reader of its output is in."""
    ms = int(seconds * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def stop_on_signals(stop: threading.Event) -> Callable[[], None]:
    """SIGINT and SIGTERM set ``stop`` (the watcher checks it every few ms); returns
    what puts the previous handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)
    return restore
