"""A spill root on the local file system: read-only, never following a symlink, never
blocking on a FIFO.

The root is a directory the scan walks itself (names and ``lstat``, fd-relative where it
reads), so :class:`LocalStorage` is a *tree* (see :mod:`.base`); what it owns is how one
artifact is opened: :func:`open_regular` (``O_NOFOLLOW``, non-blocking open, regular files
only) and ``pread`` on that descriptor. Every local read of an artifact in the package goes
through this module.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from .base import RootProblem, Storage

#: Why a locator is not under a tree root (the caller may add a ``--rebase`` hint to it).
OUTSIDE = "locator is outside the inspected root"


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


class FileReader:
    """:class:`~.base.Reader` of a local file: ``pread`` on a no-follow descriptor."""

    def __init__(self, path: str) -> None:
        self.fd = open_regular(path)

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.fd, size, offset)

    def pread_into(self, view: memoryview, offset: int) -> int:
        """``pread`` into ``view`` (one call, as :meth:`pread`): how many bytes came."""
        return os.preadv(self.fd, [view], offset)

    def close(self) -> None:
        os.close(self.fd)


def missing_directory(path: str) -> RootProblem:
    """The one message for a directory argument that is not there (every command says it alike)."""
    return RootProblem(f"{path}: does not exist", missing=True)


def directory_problem(path: str) -> RootProblem | None:
    """Why ``path`` is not a directory one can inspect (a symlink to one is followed:
    the user named it), or ``None``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return missing_directory(path)
    except OSError as exc:
        return RootProblem(f"{path}: cannot be looked up: {exc.strerror or exc}")
    if not stat.S_ISDIR(st.st_mode):
        return RootProblem(f"{path}: not a directory (a {file_type(st.st_mode)})")
    return None


class LocalStorage(Storage):
    """A directory (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        #: The path as it was given: what a message names (the user's words, not ours).
        self.given = os.fspath(root)
        super().__init__(os.path.abspath(self.given))

    @property
    def tree(self) -> str:
        return self.root

    def following_link(self) -> LocalStorage:
        return LocalStorage(os.path.realpath(self.root)) if os.path.islink(self.root) else self

    def problem(self) -> RootProblem | None:
        return directory_problem(self.given)

    def describe_error(self, exc: BaseException) -> str:
        return exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)

    def open_reader(self, path: str) -> FileReader:
        return FileReader(path)

    def open_stream(self, path: str, buffering: int = 1 << 20) -> BinaryIO:
        return os.fdopen(open_regular(path), "rb", buffering=buffering)

    def open_sized(self, path: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
        fd = open_regular(path)
        try:
            size = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb", buffering=buffering), size

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def resolve(self, locator: str) -> tuple[str | None, str]:
        if "://" in locator or locator.startswith(("file:", "s3:")):
            return None, "locator is a URI, not a local path"
        if not locator.startswith("/"):
            return None, "locator is not an absolute POSIX path"
        norm = os.path.normpath(locator)
        if norm != locator.rstrip("/") or ".." in locator.split("/"):
            return None, "locator is not a normalised path (has '..' or '.')"
        if not norm.startswith(self.root.rstrip("/") + "/"):
            return None, OUTSIDE
        return norm, ""
