"""A search of a local root split across processes, its results taken back in the root's order.

The search's Python (a record per hit, the walk, each artifact's bookkeeping) holds the GIL:
threads only make it contend, so a dense pattern over a root of many artifacts ran on one
core (``grep -E`` over the 1 GB mixed root: 1.4 s, its user time as long). Here the root's
session dirs (:func:`~..scan.searchable.searchable_plan`) are cut into contiguous parts, a
few per core so that uneven dirs even out, and each part is searched in a forked worker by
the caller's ``job``; :func:`map_parts` yields the jobs' results in the parts' order as they
come, so the output is the one search's, in its order. Forked, not spawned: a worker starts
with everything the parent imported and compiled (a fork is a millisecond, an import of the
search tens). The parent forks before it starts any thread of its own. A worker's search
checks files on one native thread: the workers are the cores. Separate from
:mod:`.root` because it is a way of running a search, not a search.
"""

from __future__ import annotations

import os
import sys
from typing import Any, BinaryIO, Callable, Iterator, NoReturn, TypeVar

from ..scan.searchable import PlanItem, searchable_plan
from .prefilter import cores

T = TypeVar("T")

#: Parts per worker: enough that one big session dir does not leave the other workers idle.
PARTS_PER_WORKER = 4
#: A root of fewer session dirs a worker is searched in one process (a fork costs more).
MIN_DIRS_PER_WORKER = 4

def workers() -> int:
    """The processes a split search runs on: the CPUs this process may use, or
    ``SPILLSCOPE_PROCESSES`` where it is set (1: never split)."""
    try:
        return max(1, int(os.environ["SPILLSCOPE_PROCESSES"]))
    except (KeyError, ValueError):
        return cores()  # unset, or a stray value in the environment: never stops a search


def parts(root: str, count: int) -> list[list[PlanItem]] | None:
    """The local root's entries cut into at most ``count`` contiguous parts of about as many
    session dirs, or None where it is not worth it (too few dirs, one CPU) or the root is
    unusable (the unsplit search says why)."""
    if count < 2:
        return None
    plan = searchable_plan(root)
    if plan is None:
        return None
    dirs = sum(1 for item in plan if isinstance(item, tuple))
    if dirs < MIN_DIRS_PER_WORKER * 2:
        return None
    size = max(1, -(-len(plan) // count))
    return [plan[i : i + size] for i in range(0, len(plan), size)]


def worth_splitting() -> bool:
    """Whether this process may fork workers: more than one CPU, and fork available."""
    return workers() > 1 and hasattr(os, "fork")


def map_parts(job: Callable[[int], T], count: int, processes: int) -> Iterator[T]:
    """``job(0)``, ``job(1)``, … ``job(count - 1)`` on ``processes`` forked workers, their
    results (pickled back through a pipe each) in that order, each as soon as it and those
    before it are done; a job's exception is raised here, in its turn. Worker ``w`` takes
    parts ``w``, ``w + processes``, …: interleaved, so that a run of big dirs is shared. Not
    :mod:`multiprocessing`: its import and pool cost 35 ms, a tenth of a search of 1 GB that
    rules most files out; a fork and a pipe cost one. Stopping early (closing the iterator)
    kills the workers."""
    import signal  # here, with pickle below: a grep that is not split starts 2 ms sooner

    processes = max(1, min(processes, count))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # nothing buffered is written twice (a worker ends with os._exit)
    pids: list[int] = []
    reads: list[BinaryIO] = []
    try:
        for w in range(processes):
            r, wfd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the worker: its parts, then out without the parent's exit handlers
                os.close(r)
                _work(job, range(w, count, processes), wfd)
            os.close(wfd)
            pids.append(pid)
            reads.append(os.fdopen(r, "rb"))
        for i in range(count):
            ok, value = _receive(reads[i % processes])
            if not ok:
                raise value
            yield value
    finally:
        for f in reads:
            f.close()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)  # done already, or its reader gone: either way
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)


def _work(job: Callable[[int], object], indices: range, fd: int) -> NoReturn:
    import pickle

    from . import prefilter

    prefilter.THREADS = 1  # the workers are the cores: one native check thread each
    code = 0
    try:
        with os.fdopen(fd, "wb") as out:
            for i in indices:
                try:
                    sent: tuple[bool, object] = (True, job(i))
                except BaseException as exc:  # handed to the parent, raised there in its turn
                    sent = (False, exc)
                data = pickle.dumps(sent, protocol=pickle.HIGHEST_PROTOCOL)
                out.write(len(data).to_bytes(8, "little"))
                out.write(data)
                out.flush()  # the parent may be waiting for this part to write its output
                if not sent[0]:
                    break
    except BaseException:
        code = 1  # the parent stopped reading (its pipe closed): nothing to say to anyone
    os._exit(code)


def _receive(f: BinaryIO) -> tuple[bool, Any]:
    import pickle

    head = f.read(8)
    if len(head) != 8:
        raise RuntimeError("a search worker ended without its results")
    size = int.from_bytes(head, "little")
    data = f.read(size)
    if len(data) != size:
        raise RuntimeError("a search worker ended without its results")
    got: tuple[bool, Any] = pickle.loads(data)
    return got
