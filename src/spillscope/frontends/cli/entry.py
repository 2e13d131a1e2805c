"""The ``spillscope`` process: how it starts and how it ends, around :func:`.main.main`.

The console script and ``python -m spillscope`` run :func:`run`; tests and embedders call
``main()``, which returns. Separate from :mod:`.main` because what happens here must come
before the command line's modules are imported (a stand-in for a module a batch command
never uses) and after its command returned (an exit without the interpreter's teardown).
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from ...util.lazy import stand_in

#: The commands that only read, and write their output to stdout and stderr: they start with
#: a stand-in for ``inspect`` and, once that output is flushed, nothing of theirs is lost
#: if the process ends without the interpreter's teardown.
BATCH = frozenset({"grep", "ls", "stats", "cat", "verify"})


def run() -> NoReturn:
    """Run the command line's command, then exit with its status. A :data:`BATCH` command
    starts with a stand-in for ``inspect`` (util.lazy.stand_in: ``dataclasses`` imports it,
    with ``ast``, ``dis`` and ``tokenize``, 10 ms of a 60 ms ``grep``, for a call no record
    of ours makes: each has a docstring) and, where the interpreter was started to run it
    and nothing is left to run at exit, ends at once (``os._exit``) once its output is
    flushed: the interpreter's teardown (freeing each module, object and thread state one
    by one) was 9 ms, paid after the last byte."""
    if len(sys.argv) > 1 and sys.argv[1] in BATCH:
        stand_in("inspect")
    from .main import run_argv

    status, command = run_argv(sys.argv[1:])
    if command in BATCH and _launched_to_run_it() and _nothing_at_exit():
        try:
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except (OSError, ValueError):
            pass  # (a reader gone, a stream closed): the normal exit deals with it, as before
        else:
            os._exit(status)
    raise SystemExit(status)


def _launched_to_run_it() -> bool:
    """Whether this interpreter was started to run spillscope (``python [options] -m
    spillscope`` or the console script), not something that runs it and goes on after it (a
    profiler's ``-m cProfile -m spillscope``, a script or ``-c`` calling runpy and catching
    its SystemExit), and runs with no tracer or profiler: only then is its exit ours."""
    argv: list[str] = list(getattr(sys, "orig_argv", []))  # (Python 3.10 on)
    if not argv or sys.gettrace() is not None or sys.getprofile() is not None:
        return False
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        option = argv[i]
        if option == "-m":
            return i + 1 < len(argv) and argv[i + 1] == "spillscope"
        if option.startswith(("-c", "-m")):
            return option == "-mspillscope"
        i += 2 if option in ("-X", "-W") else 1
    return i < len(argv) and os.path.basename(argv[i]) == "spillscope"


def _nothing_at_exit() -> bool:
    """Whether an exit may skip the interpreter's: no ``atexit`` callback (coverage's data,
    multiprocessing's workers, a library's clean-up), no thread that exit would join
    (``concurrent.futures``' workers, a non-daemon thread: daemon ones are idle search pools)
    and no ``python -i``. Where CPython's counts are not there to read, the answer is no."""
    import atexit
    import threading

    ncallbacks = getattr(atexit, "_ncallbacks", None)
    if ncallbacks is None or ncallbacks() or sys.flags.inspect:
        return False
    if getattr(threading, "_threading_atexits", [None]):
        return False
    main_thread = threading.main_thread()
    return all(t is main_thread or t.daemon for t in threading.enumerate())
