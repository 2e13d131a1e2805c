"""Read-only file access for untrusted trees: never follow a symlink, never block on a FIFO."""

from __future__ import annotations

import errno
import os
import stat


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
