"""The watch of a local root run in a child process, for a caller whose own process is busy.

:func:`awatch_root_child` is :func:`.root.awatch_root` with the watcher in a child
process (``python -P -c …`` running :func:`_child` on ROOT): in the TUI the watcher
thread waited for the GIL behind the interface and the verification, which roughly
doubled its write→batch time under churn; in its own process it runs as
``spillscope watch`` does.

The protocol is one line per batch on the child's stdout, a JSON array of events
(``ensure_ascii``: a path's lone surrogates travel as ``\\udXXX`` and come back exact),
and an empty array as a heartbeat every :data:`HEARTBEAT` seconds while the watcher's
loop goes round (one stuck in a system call — a hung file system — for longer than
its ``round_limit`` stops the heartbeats, whatever the process's other threads do). The
watch's status stays faithful to the child's:

* a child that ends (killed, crashed) ends the watch with a ``stale`` event saying so
  (its exit status and last stderr line), never a silent end;
* a child that stops answering (no line for ``stall_after`` seconds: stopped, starved)
  gives a ``stale`` event; its next line brings back the status it last reported;
* the child dies with its parent: it stops when its stdin (a pipe only the parent
  holds) reaches end of file, which the kernel makes happen however the parent ends,
  and it runs in its own session so a terminal's signals go to the parent, whose
  ending stops it. The parent's closing of the generator terminates it too.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, AsyncGenerator, cast

from .events import ChangeEvent, EventKind, join_queued

__all__ = ["HEARTBEAT", "awatch_root_child"]

#: Seconds between the child's heartbeats (an empty batch).
HEARTBEAT = 0.5
#: The status events a heartbeat after a stall brings back (the last one the child sent).
_STATES = frozenset({"live", "stale", "root-missing", "root-restored"})


def _event(d: dict[str, Any]) -> ChangeEvent:
    return ChangeEvent(cast(EventKind, d["event"]), d["path"], d.get("session"), d.get("kind"), d.get("detail"))


async def awatch_root_child(root: str | os.PathLike[str], *, initial: bool = False,
                            stall_after: float = 5.0) -> AsyncGenerator[list[ChangeEvent], None]:
    """Batches of change events for a local root, from a watcher in a child process."""
    loop = asyncio.get_running_loop()
    where = os.path.abspath(os.fspath(root))
    queue: asyncio.Queue[list[ChangeEvent] | None] = asyncio.Queue()
    # The child imports this package, whatever the caller's sys.path came from: its parent
    # dir goes *last* on the child's path, and -P keeps the working directory off it, so a
    # user's json.py or asyncio.py beside them cannot shadow the standard library.
    package_parent = str(Path(__file__).resolve().parent.parent.parent)
    boot = (f"import sys; sys.path.append({package_parent!r}); "
            "from spillscope.inspect.watch.child import _child; raise SystemExit(_child(sys.argv[1:]))")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-P", "-c", boot, where, *(["--initial"] if initial else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True)
    except (OSError, ValueError) as exc:
        # No child (out of processes or descriptors, no interpreter): said, as any end is.
        yield [ChangeEvent("stale", where, None, None, f"the watch process could not start ({exc})")]
        return
    stderr_tail: deque[bytes] = deque(maxlen=20)
    stopping = threading.Event()
    heard = [time.monotonic()]  # when the child's last line came (read in its thread)

    def deliver(item: list[ChangeEvent] | None) -> None:
        try:
            loop.call_soon_threadsafe(queue.put_nowait, item)
        except RuntimeError:  # the consumer's loop is closed: nobody is listening any more
            stopping.set()

    def read_err() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_tail.append(line)

    def read() -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                heard[0] = time.monotonic()
                deliver([_event(d) for d in json.loads(line)])
        except (ValueError, KeyError, TypeError) as exc:
            deliver([ChangeEvent("stale", where, None, None, f"the watch process sent a bad line ({exc})")])
            proc.kill()
        finally:
            code = proc.wait()
            if not stopping.is_set():
                err_thread.join(1)
                last = next((ln.decode("utf-8", "replace").strip() for ln in reversed(stderr_tail) if ln.strip()), "")
                why = f"the watch process ended (exit status {code}{': ' + last if last else ''})"
                deliver([ChangeEvent("stale", where, None, None, why)])
            deliver(None)

    err_thread = threading.Thread(target=read_err, name="spillscope-watch-child-err", daemon=True)
    err_thread.start()
    threading.Thread(target=read, name="spillscope-watch-child", daemon=True).start()
    last_state: ChangeEvent | None = None
    stalled = False
    try:
        while True:
            try:
                batch = await asyncio.wait_for(queue.get(), stall_after)
            except asyncio.TimeoutError:
                # By the child's last line, not this wait: a loop kept busy by its caller
                # longer than stall_after must not make a child that answered look stalled.
                if not stalled and time.monotonic() - heard[0] >= stall_after:
                    stalled = True
                    yield [ChangeEvent("stale", where, None, None,
                                       f"the watch has not answered for {stall_after:g} s (its process, or its loop, is stuck)")]
                continue
            if batch is None:
                return
            batch, end = join_queued(queue, batch)  # what queued up while the caller was busy
            for ev in batch:
                if ev.event in _STATES:
                    last_state = ev
            if stalled:
                stalled = False
                if last_state is not None and (not batch or batch[-1] is not last_state):
                    batch = batch + [last_state]  # answering again: back to what it last said
            if batch:
                yield batch
            if end:
                return
    finally:
        # Not waited for here (this may run on the interface's loop, or as the generator is
        # collected): the reader thread reaps it; one that does not end when asked is killed.
        stopping.set()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        if proc.poll() is None:
            proc.terminate()
            threading.Thread(target=_kill_if_still_running, args=(proc,), daemon=True).start()


def _kill_if_still_running(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


def _child(argv: list[str]) -> int:
    """The child: the watch's batches as JSON lines until stdin ends or SIGTERM."""
    import signal

    from .root import open_watcher

    root = argv[0]
    stop = threading.Event()
    lock = threading.Lock()
    out = sys.stdout.buffer
    # The parent decides when this ends (its stdin's end, or SIGTERM); a Ctrl-C meant
    # for the parent must not end it first and leave the parent's view "stale".
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())

    def write(line: bytes) -> None:
        with lock:
            try:
                out.write(line)
                out.flush()
            except (BrokenPipeError, ValueError):  # the parent is gone
                stop.set()

    def wait_for_parent() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except OSError:
            pass
        stop.set()

    watcher = open_watcher(root, stop=stop, initial="--initial" in argv[1:])

    def heartbeat() -> None:
        while not stop.wait(HEARTBEAT):
            if not watcher.stuck():  # silence when it is: the parent then says "stale"
                write(b"[]\n")

    threading.Thread(target=wait_for_parent, daemon=True).start()
    threading.Thread(target=heartbeat, daemon=True).start()
    for batch in watcher.batches():
        write((json.dumps([ev.to_json() for ev in batch], ensure_ascii=True) + "\n").encode("ascii"))
        if stop.is_set():
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))
