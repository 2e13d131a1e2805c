"""Small local files read ahead, many in one native call, for a search that reads most files.

A dense pattern (``grep -E`` over a root where most files hold a hit) searches every file, and
for a tool output of tens of KB the search's own work (RE2 over its bytes, a record per hit)
was the smaller part: opening it, sizing it, reading it, counting its code points and closing
it, each a call from Python, were about half of its time. :func:`read_ahead` hands each target
on with its bytes already read and counted (``_native.read_files``: a group of files at a
time, without the GIL, into one reused buffer), or with None where it was not (not asked for,
too big, not valid UTF-8, unreadable: the caller searches it as any other file, which says
why). A file read ahead is exactly what the usual search reads (opened as
:func:`~spillscope.storage.local.open_regular` opens it, its size from ``fstat``, read whole).
"""

from __future__ import annotations

import os
from itertools import islice
from typing import Callable, Iterable, Iterator, NamedTuple, TypeVar

from ...util import native
from ...util.native import Scanners

T = TypeVar("T")

#: Files looked at per group, the biggest one read ahead, and the buffer they are read into
#: (a group's files past it are read once the ones before are searched).
FILES, EACH, ROOM = 64, 1 << 20, 8 << 20


class Read(NamedTuple):
    """A file's bytes as read ahead (a view of the shared buffer, valid until the next target
    is taken) and their (code points, bytes) as valid UTF-8."""

    data: memoryview
    counts: tuple[int, int]


def read_ahead(targets: Iterable[T], path_of: Callable[[T], str | None]) -> Iterator[tuple[T, Read | None]]:
    """Each target, in order, with its file's bytes where ``path_of`` gives a path to read
    ahead and they could be (see the module). A target's :class:`Read` is valid only until
    the next target is taken: its buffer is read into again."""
    nat = native.NATIVE
    it = iter(targets)
    if nat is None:
        yield from ((t, None) for t in it)
        return
    # A buffer a read-ahead before left (a split search reads ahead once per part), else a new
    # one: each new one is ROOM bytes of page faults.
    try:
        buf = _spare.pop()  # (one step: two read-aheads on two threads never take the same one)
    except IndexError:
        buf = bytearray(ROOM)
    try:
        yield from _groups(nat, it, path_of, buf)
    finally:
        _spare.append(buf)


#: Buffers no read-ahead uses now, for the next one (list.pop and append: safe across threads).
_spare: list[bytearray] = []


def _groups(nat: Scanners, it: Iterator[T], path_of: Callable[[T], str | None],
            buf: bytearray) -> Iterator[tuple[T, Read | None]]:
    view = memoryview(buf)
    while group := list(islice(it, FILES)):
        paths = [path_of(t) for t in group]
        wanted = {k: os.fsencode(p) for k, p in enumerate(paths) if p is not None}
        read: dict[int, tuple[int, int, int]] = {}
        for k, t in enumerate(group):
            if k not in wanted:
                yield t, None
                continue
            if k not in read:  # the files from this one on (the buffer's earlier ones are searched)
                rest = [j for j in wanted if j >= k]
                read = dict(zip(rest, nat.read_files([wanted[j] for j in rest], EACH, buf)))
            got = read.get(k)
            if got is None or got[2] < 0:
                yield t, None
                continue
            offset, size, cps = got
            yield t, Read(view[offset : offset + size], (cps, size))
