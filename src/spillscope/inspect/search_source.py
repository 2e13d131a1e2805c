"""File access for searching one artifact: the only functions that touch the file system.

Kept apart so that another backend (an object store) swaps these four functions and nothing
else; :data:`WINDOW` is the read size the searches use.
"""

from __future__ import annotations

import os

from ..util.fs import open_regular

#: Raw bytes read per window (whole lines; a window never holds more than about this).
WINDOW = 1 << 20


# File access: the only functions that touch the file system (another backend swaps them).
def open_source(path: str) -> int:
    return open_regular(path)


def read_range(handle: int, size: int, offset: int) -> bytes:
    return os.pread(handle, size, offset)


def source_size(handle: int) -> int:
    return os.fstat(handle).st_size


def close_source(handle: int) -> None:
    os.close(handle)
