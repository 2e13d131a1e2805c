"""A stream of one artifact that can tell, once read, whether the artifact changed meanwhile.

A local file can be truncated, grown, written to or replaced while ``cat`` reads it: the
text read is then not the artifact, and a reader must say so rather than pass a cut text
as whole. An object in an object store is one GET of one object version, so its stream
never reports a change.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .base import Storage
from .local import open_regular
from .registry import open_storage


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
    """The artifact ``path`` of ``store`` (the store its name gives when ``None``) as a
    buffered stream, and :meth:`change` (see the module docstring)."""

    def __init__(self, path: str, buffering: int = 1 << 20, store: Storage | None = None) -> None:
        self.path = path
        self.before: FileState | None = None
        store = store if store is not None else open_storage(path)
        if store.tree is None:
            self.stream = store.open_stream(path, buffering)
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
