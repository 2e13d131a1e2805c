"""A search of a local root split across processes, its results taken back in the root's order.

The search's Python (a record per hit, the walk, each artifact's bookkeeping) holds the GIL:
threads only make it contend, so a dense pattern over a root of many artifacts ran on one
core (``grep -E`` over the 1 GB mixed root: 1.4 s, its user time as long). Here the root's
session dirs (:func:`~..scan.searchable.searchable_plan`) are cut into contiguous parts, a
dozen per core so that uneven dirs and uneven CPUs even out, and each part is searched in a
forked worker (the next part not yet taken, when the worker is done with one) by the
caller's ``job``; :func:`map_parts` yields what each job hands over (pieces of its output,
then its result) in the parts' order as it comes, so the output is the one search's, in its
order. Forked, not spawned: a worker starts
with everything the parent imported and compiled (a fork is a millisecond, an import of the
search tens). The parent forks before it starts any thread of its own. A worker's search
checks files on one native thread: the workers are the cores. Separate from
:mod:`.root` because it is a way of running a search, not a search.
"""

from __future__ import annotations

import os
import select
import sys
from typing import Any, Callable, Iterator, TypeVar

from ..findings import Finding
from ..scan.searchable import PlanItem, iter_searchable
from .pattern import Pattern
from .prefilter import cores

T = TypeVar("T")

#: Parts per worker: small enough that the last parts, taken as workers come free, end close
#: together (with 4, over the 1 GB mixed root, one worker ran alone for up to a part's time,
#: about 0.1 s of a dense -E's 0.5 s), few enough that a part's own cost is nothing.
PARTS_PER_WORKER = 12
#: Parts at most: their numbers are written before any worker starts, at once, into an empty
#: pipe, which holds PIPE_BUF bytes whatever the system's limits (a pipe made past a user's
#: soft limit holds a page or two: a write of more would wait for a reader that is never
#: forked). 4096 on Linux (1024 parts), 512 where POSIX allows no more.
MAX_PARTS = getattr(select, "PIPE_BUF", 512) // 4
#: A root of fewer session dirs is searched in one process (the forks cost more than they save).
MIN_DIRS = 8


def workers() -> int:
    """The processes a split search runs on: the CPUs this process may use, or
    ``SPILLSCOPE_PROCESSES`` where it is set (1: never split)."""
    try:
        return max(1, int(os.environ["SPILLSCOPE_PROCESSES"]))
    except (KeyError, ValueError):
        return cores()  # unset, or a stray value in the environment: never stops a search


#: Files of the root's first dirs checked to tell a dense search from a rare one.
SAMPLE = 64


def parts(root: str, plan: list[PlanItem], count: int, pattern: Pattern) -> list[list[PlanItem]] | None:
    """The local root's entries (``plan``: :func:`~..scan.searchable.searchable_plan`'s, which
    an unsplit search then walks as its one part, the root listed once) cut into at most
    ``count`` contiguous parts of about as many session dirs, or None where it is not worth it
    (too few dirs, one CPU, a search that rules most files out: :func:`dense`)."""
    count = min(count, MAX_PARTS)
    if count < 2:
        return None
    dirs = sum(1 for item in plan if isinstance(item, tuple))
    if dirs < MIN_DIRS or not dense(root, plan, pattern):
        return None
    size = max(1, -(-len(plan) // count))
    return [plan[i : i + size] for i in range(0, len(plan), size)]


def dense(root: str, plan: list[PlanItem], pattern: Pattern) -> bool:
    """Whether most of the first :data:`SAMPLE` files of the root may hold a match (the byte
    prefilter's verdict, as the search's first batch decides :data:`.root.DENSE`): the search
    is then files decoded and a record per hit, Python a split shares out. A rare or absent
    needle's search is the native check, on every core already: split, it ran 10-40 ms slower
    (the forks, a check thread in each worker)."""
    from .prefilter import may_match_many
    from .records import TRANSCRIPT
    from .root import DENSE

    if pattern.literal is None and pattern.required is None:
        return True  # no literal to rule a file out by: every file is searched
    sample = []
    for f in iter_searchable(root, plan):
        if not isinstance(f, Finding):
            sample.append(f)
            if len(sample) >= SAMPLE:
                break
    verdicts = may_match_many([f.path for f in sample], [f.kind == TRANSCRIPT for f in sample], pattern)
    if verdicts is None:
        return True  # no accelerator: a check per file, in Python, which a split shares out too
    return sum(verdicts) >= len(verdicts) * (1 - DENSE)


def worth_splitting() -> bool:
    """Whether this process may fork workers: more than one CPU, and fork available."""
    return workers() > 1 and hasattr(os, "fork")


def map_parts(job: Callable[[int, Callable[[T], None]], T], count: int, processes: int) -> Iterator[T]:
    """``job(0, send)``, … ``job(count - 1, send)`` on ``processes`` forked workers: what each
    job hands to ``send`` as it goes (a piece of its output, so that a part's output is never
    held whole) and then returns, pickled back through a pipe each, yielded part by part in
    that order as it comes; a job's exception (made :func:`portable`) is raised here, in its
    turn. A worker takes the next part not yet taken whenever it is done with one (the parts'
    numbers wait in a pipe all read): a slow part, or a worker on a slow CPU, holds back no
    other worker (taken in turn, ``w``, ``w + processes``, …, one worker's last parts ran
    alone for a fifth of a dense ``-E``). Memory stays bounded: a worker whose part is not
    the one being read waits on its full pipe. Not :mod:`multiprocessing`: its import and
    pool cost 35 ms, a tenth of a search of 1 GB that rules most files out; a fork and a
    pipe cost one. Stopping early (closing the iterator) kills the workers; a worker whose
    parent is gone stops at its next part (or its next write)."""
    # Here, not at the module's top: a grep that is not split starts 2 ms sooner; pickle before
    # the forks, not in each worker (each sends its results pickled, the parent loads them).
    import pickle
    import signal

    processes = max(1, min(processes, count))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered is written twice (a worker ends with os._exit)
    parent = os.getpid()
    pids: list[int] = []
    reads: list[int] = []  # each worker's pipe, read unbuffered: poll says what is in the pipe, not in a buffer
    todo_r, todo_w = os.pipe()
    try:
        # Every part's number, all written before any worker starts (so no read ever gets part
        # of one), and taken one read each.
        if count > MAX_PARTS:
            raise ValueError(f"at most {MAX_PARTS} parts")
        numbers = b"".join(i.to_bytes(_NUMBER, "little") for i in range(count))
        if os.write(todo_w, numbers) != len(numbers):  # at most PIPE_BUF bytes: all or none
            raise OSError("the parts' numbers did not fit in their pipe")
        os.close(todo_w)
        todo_w = -1  # a worker's read at the end gets nothing: no part left
        for w in range(processes):
            r, wfd = os.pipe()
            try:
                _widen(wfd)
                pid = os.fork()
            except BaseException:
                os.close(r)
                os.close(wfd)
                raise
            if pid == 0:  # the worker: parts as it takes them, then out without the parent's exit handlers
                code = 1
                try:
                    for fd in reads:
                        os.close(fd)  # the earlier workers' pipes: only the parent reads them
                    os.close(r)
                    code = _work(job, todo_r, wfd, parent)
                finally:
                    os._exit(code)
            pids.append(pid)
            os.close(wfd)
            reads.append(r)
        os.close(todo_r)
        todo_r = -1
        # Each worker's next message's head (its part, its size), read but its body not yet: a
        # worker sends its parts in the order it took them, which is the parts' order, so the
        # part being read is at the head of one pipe, and a head of a later part waits.
        heads: dict[int, tuple[int, int]] = {}
        ended: set[int] = set()
        watch = select.poll()  # not select(): it refuses a descriptor from 1024 on
        for fd in reads:
            watch.register(fd, select.POLLIN)
        part = 0
        while part < count:
            holder = next((k for k, (i, _) in heads.items() if i == part), None)
            if holder is None:
                if len(heads) + len(ended) == processes:
                    raise RuntimeError("a search worker ended without its results")
                # A pipe whose head is read, or which has ended, is not watched: only those
                # whose next message is not known yet.
                for fd, _ in watch.poll():
                    k = reads.index(fd)
                    head = _read(fd, _HEAD)
                    watch.unregister(fd)
                    if len(head) != _HEAD:
                        ended.add(k)  # done (no part left to take), or gone: said above if a part is missing
                        continue
                    heads[k] = (int.from_bytes(head[:_NUMBER], "little"), int.from_bytes(head[_NUMBER:], "little"))
                continue
            size = heads.pop(holder)[1]
            data = _read(reads[holder], size)
            if len(data) != size:
                raise RuntimeError("a search worker ended without its results")
            watch.register(reads[holder], select.POLLIN)  # its next message's head, when it comes
            kind, value = pickle.loads(data)
            if kind == _FAILED:
                raise value
            yield value
            if kind == _DONE:
                part += 1
    finally:
        for fd in (todo_r, todo_w):
            if fd >= 0:
                os.close(fd)
        for fd in reads:
            os.close(fd)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)  # done already, or its reader gone: either way
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass  # reaped already (SIGCHLD ignored where this process was started)


#: Bytes of a part's number (in the pipe of parts to take, and in each message's head), and
#: of a message's head: its part's number and its size.
_NUMBER = 4
_HEAD = _NUMBER + 8


#: Bytes a worker's pipe holds (where the system allows: Linux's unprivileged most, 1 MiB).
PIPE_BYTES = 1 << 20


def _widen(fd: int) -> None:
    """Let the pipe ``fd`` hold :data:`PIPE_BYTES`: a worker that ends a part before the
    parent reads it (a worker's next part is the one after the other's) goes on to its next
    part once its output is in the pipe; with the default 64 KiB it waited until the parts
    before were read (a dense ``-E`` over the mixed root: each part's output is about 0.7 MB,
    and the parts' uneven times were the workers' idle time). Memory stays bounded: a pipe each."""
    import fcntl

    widen = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if widen is None:
        return
    try:
        fcntl.fcntl(fd, widen, PIPE_BYTES)
    except OSError:
        pass  # above the system's limit (/proc/sys/fs/pipe-max-size): as it is


#: What a worker sends: a piece of a part, the part's end, or its exception.
_PIECE, _DONE, _FAILED = 0, 1, 2


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it comes back whole from pickle, else a RuntimeError that says what it was (an
    exception whose ``__init__`` takes other arguments than its ``args`` does not)."""
    import pickle

    try:
        back = pickle.loads(pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL))
        if type(back) is type(exc):
            return exc
    except Exception:
        pass
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def _work(job: Callable[[int, Callable[[Any], None]], object], todo: int, fd: int, parent: int) -> int:
    """The worker's parts, each taken from the pipe ``todo`` when the one before is done, each
    piece and end sent as it comes; its exit status."""
    import pickle

    from . import prefilter

    prefilter.THREADS = 1  # the workers are the cores: one native check thread each
    try:
        with os.fdopen(fd, "wb") as out:
            while len(number := os.read(todo, _NUMBER)) == _NUMBER:
                i = int.from_bytes(number, "little")

                def send(kind: int, value: object, i: int = i) -> None:
                    data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
                    out.write(i.to_bytes(_NUMBER, "little") + len(data).to_bytes(8, "little"))
                    out.write(data)
                    out.flush()  # the parent may be waiting for this part to write its output

                if os.getppid() != parent:
                    return 1  # the parent is gone: no one reads what this would find
                try:
                    result = job(i, lambda piece: send(_PIECE, piece))
                except BaseException as exc:  # handed to the parent, raised there in its turn
                    send(_FAILED, portable(exc))
                    return 1
                send(_DONE, result)
    except BaseException:
        return 1  # the parent stopped reading (its pipe closed): nothing to say to anyone
    return 0


def _read(fd: int, size: int) -> bytes:
    """``size`` bytes of the pipe ``fd`` (fewer where it ends first): a pipe's read returns what
    it holds, at most its size (1 MiB) at a time."""
    first = os.read(fd, size)
    if len(first) == size or not first:
        return first
    parts = [first]
    got = len(first)
    while got < size and (more := os.read(fd, size - got)):
        parts.append(more)
        got += len(more)
    return b"".join(parts)
