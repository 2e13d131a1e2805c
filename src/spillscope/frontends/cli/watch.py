"""``spillscope watch``: one line per change under a live root, until SIGINT or SIGTERM.

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

from ...util.text import visible


class WatchUsageError(Exception):
    """The path cannot be watched as a root (exit 2)."""


def run_watch(root: str, out: TextIO, *, as_json: bool, initial: bool, err: TextIO | None = None) -> int:
    from ...inspect.watch.root import watch_root
    from ...inspect.watch.events import root_problem

    err = err or sys.stderr
    why = root_problem(root)
    if why is not None and why != "does not exist":
        if why.startswith("is a symlink"):
            raise WatchUsageError(f"{root}: is a symlink; watch follows a root by its path and never follows "
                                  f"a symlink (watch {os.path.realpath(root)} instead)")
        raise WatchUsageError(f"{root}: {why}")
    stop = threading.Event()
    restore = stop_on_signals(stop)
    try:
        if why is not None:
            err.write(f"spillscope: {visible(root, one_line=True)} does not exist yet; waiting for it to appear (Ctrl-C stops)\n")
            err.flush()
        for batch in watch_root(root, stop=stop, initial=initial):
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
