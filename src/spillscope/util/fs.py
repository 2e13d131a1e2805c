"""Read-only file access for untrusted trees: never follow a symlink, never block on a FIFO."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Protocol


def file_type(mode: int) -> str:
    """What an ``lstat`` mode is, in a word, for findings: ``file``, ``directory``,
    ``symlink``, ``FIFO``, ``socket`` or ``special file`` (a device)."""
    for is_type, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symlink"),
                          (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket")):
        if is_type(mode):
            return name
    return "special file"


def open_regular(path: str | os.PathLike[str]) -> int:
    """Open for reading; refuse a symlink (``O_NOFOLLOW``) and anything but a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


# Reading by path, local or remote. An ``s3://bucket/key`` path is read through the S3
# root access (ranged GETs), imported only when such a path is met; a local path keeps the
# plain no-follow ``open``/``pread`` above.
REMOTE_SCHEME = "s3://"


def is_remote(path: object) -> bool:
    return isinstance(path, str) and path.startswith(REMOTE_SCHEME)


class Reader(Protocol):
    """Positional reads of one artifact; close it when done."""

    def pread(self, size: int, offset: int) -> bytes: ...

    def close(self) -> None: ...


class FileReader:
    """:class:`Reader` of a local file: ``pread`` on a no-follow descriptor."""

    def __init__(self, path: str) -> None:
        self.fd = open_regular(path)

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def pread_into(self, view: memoryview, offset: int) -> int:
        """``pread`` into ``view`` (one call, as :meth:`pread`): how many bytes came."""
        return os.preadv(self.fd, [view], offset)

    def close(self) -> None:
        os.close(self.fd)


def open_reader(path: str) -> Reader:
    if is_remote(path):
        from ..inspect.s3root import S3Reader

        return S3Reader(path)
    return FileReader(path)


def read_head(path: str, size: int) -> bytes:
    """The first ``size`` bytes (fewer for a shorter file)."""
    reader = open_reader(path)
    try:
        return reader.pread(size, 0)
    finally:
        reader.close()


def open_stream(path: str, buffering: int = 1 << 20) -> BinaryIO:
    """A buffered binary stream of the whole artifact, from its start."""
    if is_remote(path):
        from ..inspect.s3root import open_s3_stream

        return open_s3_stream(path, buffering)
    return os.fdopen(open_regular(path), "rb", buffering=buffering)


def open_sized(path: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
    """:func:`open_stream` and the artifact's size, from one open (one GET on S3)."""
    if is_remote(path):
        from ..inspect.s3root import open_s3_sized

        return open_s3_sized(path, buffering)
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb", buffering=buffering), size


def file_size(path: str) -> int:
    if is_remote(path):
        from ..inspect.s3root import s3_size

        return s3_size(path)
    return os.stat(path).st_size


def normalize_root(root: str | os.PathLike[str]) -> str:
    """A spill root as the inspector names it: an absolute path, or ``s3://bucket/prefix``
    without a trailing ``/``."""
    text = os.fspath(root)
    return text.rstrip("/") if is_remote(text) else os.path.abspath(text)
