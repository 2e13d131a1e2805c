"""The TUI process that ``spillscope serve`` starts for each browser tab: it must end
when its server or its browser goes away, whatever state the app is in.

textual-serve talks to the app over its stdin/stdout. When the browser vanished
abruptly the app could be left running with nobody reading it (spinning, blind to
SIGTERM once its event loop was gone) and outlive the server. Here:

* the kernel kills the app if its parent (the server, which ``exec``\\s it) dies
  (``PR_SET_PDEATHSIG`` on Linux), and a guard thread checks the parent anyway;
* when the server closes the app's stdin (the tab is gone) the app is asked to exit,
  and is ended hard if it has not within a few seconds;
* once the app has returned, the process exits at once: no worker thread or
  half-closed pipe keeps it alive.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from typing import Any, Callable

#: Seconds an app gets to exit by itself before the process is ended.
GRACE = 3.0


def under_web_driver() -> bool:
    return "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")


def die_with_parent() -> None:
    """Ask the kernel for SIGKILL when the parent dies (Linux; elsewhere the guard polls)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def guard(app: Any, *, interval: float = 0.25) -> threading.Thread:
    """Start the guard thread for a web-served ``app`` (a daemon: it never holds the exit)."""
    parent = os.getppid()

    input_seen = False

    def stdin_closed() -> bool:
        # The driver's input thread ends when the server closes our stdin.
        nonlocal input_seen
        alive = any(t.name == "textual-input" for t in threading.enumerate())
        input_seen = input_seen or alive
        return input_seen and not alive

    def ask_exit() -> None:
        try:
            app.call_from_thread(app.exit)
        except Exception:
            pass  # the loop is gone already: the hard exit below ends it

    def run() -> None:
        deadline: float | None = None
        while True:
            time.sleep(interval)
            gone = os.getppid() != parent or stdin_closed()
            if gone and deadline is None:
                deadline = time.monotonic() + GRACE
                ask_exit()
            if deadline is not None and time.monotonic() > deadline:
                os._exit(1)

    thread = threading.Thread(target=run, name="spillscope-webguard", daemon=True)
    thread.start()
    return thread


def run_served(run: Callable[[], object]) -> int:
    """Run the app's ``run`` under the guard's rules; never returns normally."""
    try:
        run()
    finally:
        try:
            sys.stdout.flush()
        except Exception:
            pass
        os._exit(0)
