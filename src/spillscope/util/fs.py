"""Read-only file access for untrusted trees: never follow a symlink, never block on a FIFO."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
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


@dataclass(frozen=True)
class FileState:
    """What says a file is the one read, unchanged: its identity, size and times."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileState:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class CheckedStream:
    """A local file's stream that can tell, once read to its end, whether the file changed
    while it was read (truncated, grown, written to, replaced): the text read from it is
    then not the artifact, and a reader must say so rather than pass a cut text as whole.

    An ``s3://`` object is one GET of one object version: :meth:`change` is always None."""

    def __init__(self, path: str, buffering: int = 1 << 20) -> None:
        self.path = path
        self.before: FileState | None = None
        if is_remote(path):
            self.stream = open_stream(path, buffering)
            return
        fd = open_regular(path)
        try:
            self.before = FileState.of(os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        self.stream = os.fdopen(fd, "rb", buffering=buffering)

    def change(self, *, at_end: bool = True) -> str | None:
        """How the file changed while it was read (to its end, unless ``at_end`` is False:
        a reader that stopped early), or None if it did not."""
        before = self.before
        if before is None:
            return None
        fd = self.stream.fileno()
        # The descriptor's offset is how far the reads got: a buffered stream read to its
        # end has taken every byte the file had from the kernel.
        end = os.lseek(fd, 0, os.SEEK_CUR)
        after = FileState.of(os.fstat(fd))
        if (at_end and end < before.size) or after.size < before.size:
            return f"it shrank while read: {min(end, after.size)} of its {before.size} bytes were there to read"
        if end > before.size or after.size > before.size:
            return f"it grew while read: {max(end, after.size)} bytes, {before.size} when it was opened"
        if (after.size, after.mtime_ns, after.ctime_ns) != (before.size, before.mtime_ns, before.ctime_ns):
            return "it was written to while read"
        try:
            now = FileState.of(os.stat(self.path, follow_symlinks=False))
        except FileNotFoundError:
            return None  # deleted once read whole: what was read is the whole file
        if (now.dev, now.ino) != (before.dev, before.ino):
            return "it was replaced while read: its path names another file now"
        return None

    def close(self) -> None:
        self.stream.close()

    def __enter__(self) -> CheckedStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
