"""File access for searching one artifact: the only functions that touch storage.

An artifact in a tree is a no-follow descriptor read with ``pread``; one in an object store
(``s3://``) is its store's :class:`~spillscope.storage.Reader` over ranged GETs (its size from
one HEAD), so ``grep`` searches a bucket exactly as a directory. :data:`WINDOW` is the read size the searches use.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Union

from ...storage import Reader, Storage, open_storage
from ...storage.local import open_regular

#: Raw bytes read per window (whole lines; a window never holds more than about this).
WINDOW = 1 << 20


class RemoteSource(NamedTuple):
    """An artifact in an object store: positional reads and its size, fixed when opened. A
    NamedTuple: a dataclass's methods are compiled when its module loads, which every search
    does (a local one too), a millisecond of ``grep``'s start-up."""

    reader: Reader
    size: int


#: A local descriptor, or a remote artifact.
Source = Union[int, RemoteSource]


def open_source(path: str, store: Storage | None = None) -> Source:
    """The artifact ``path`` of ``store`` (the store its name gives when ``None``)."""
    store = store if store is not None else open_storage(path)
    if store.tree is None:
        return RemoteSource(store.open_reader(path), store.size(path))
    return open_regular(path)


def read_range(handle: Source, size: int, offset: int) -> bytes:
    if isinstance(handle, RemoteSource):
        return handle.reader.pread(size, offset)
    return os.pread(handle, size, offset)


class ReusedReads:
    """Positional reads of one source into one reused buffer: a 1 MiB window costs no new
    allocation (and no page faults for one). What :meth:`read` returns is valid only until
    the next call; a remote source's reads are plain bytes."""

    def __init__(self, handle: Source) -> None:
        self.handle = handle
        self.buf = bytearray()

    def read(self, size: int, offset: int) -> bytes | bytearray:
        if isinstance(self.handle, RemoteSource) or size <= 0:
            return read_range(self.handle, size, offset)
        if len(self.buf) != size:
            self.buf = bytearray(size)
        n = os.preadv(self.handle, [self.buf], offset)
        if n < size:
            del self.buf[n:]  # short (the end of the file): the next read sizes it again
        return self.buf


def source_size(handle: Source) -> int:
    if isinstance(handle, RemoteSource):
        return handle.size
    return os.fstat(handle).st_size


def close_source(handle: Source) -> None:
    if isinstance(handle, RemoteSource):
        handle.reader.close()
    else:
        os.close(handle)
