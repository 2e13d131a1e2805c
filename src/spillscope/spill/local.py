"""The local spill backend (FORMAT.md §2): layout, safe names and the exclusive write.

Layout: ``<root>/session-<sha256(sessionId)[:12]>/<12 hex random>-<encode_segment(name)>``.
Directories are 0700 and files 0600 whatever the umask. The session directory is
opened with ``O_NOFOLLOW|O_DIRECTORY`` and the file created relative to that handle
with ``O_CREAT|O_EXCL|O_NOFOLLOW``, so a planted symlink can never redirect a write.
All file I/O runs in a worker thread so the event loop is never blocked.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import stat
import tempfile
import threading
from pathlib import Path
from typing import Callable

from .._text import js_utf8
from .naming import encode_segment, session_dir_name
from .types import RETRIEVAL_HINT, Locator, SaveTextSpill, SpillRef, SpillStore, SpillStoreError

DEFAULT_ROOT_PREFIX = "dsh-spill-"
_ENOENT_RETRIES = 8


class LocalSpillStore(SpillStore):
    """Spill files under ``root`` (or a lazily created private ``dsh-spill-XXXXXX`` temp dir)."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, random_prefix: Callable[[], str] | None = None) -> None:
        # ``random_prefix`` exists for reproducible demos and tests; real use keeps the default.
        self._random_prefix = random_prefix or (lambda: secrets.token_hex(6))
        self._configured = None if root is None else Path(os.path.abspath(os.fspath(root)))
        self._root: Path | None = self._configured
        self._lock = threading.Lock()

    @property
    def root(self) -> Path:
        """The spill root; creating the private default root on first use."""
        with self._lock:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix=DEFAULT_ROOT_PREFIX))
            return self._root

    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        return await asyncio.to_thread(self.save_text_sync, request)

    def save_text_sync(self, request: SaveTextSpill) -> SpillRef:
        """Blocking form of :meth:`save_text`, for callers already off the event loop."""
        data = js_utf8(request.content)
        dir_name = session_dir_name(request.owner.session_id)
        file_name = f"{self._random_prefix()}-{encode_segment(request.suggested_name)}"
        try:
            root = self.root
            for _ in range(_ENOENT_RETRIES):
                try:
                    path = _write_exclusive(root, dir_name, file_name, data)
                    break
                except FileNotFoundError:
                    # The session dir (or root) vanished between mkdir and open: make it again.
                    continue
            else:
                raise FileNotFoundError(errno.ENOENT, "session directory keeps disappearing", str(root))
        except SpillStoreError:
            raise
        except OSError as exc:
            raise SpillStoreError(f"spill save failed: {exc}", exc) from exc
        return SpillRef(Locator(str(path)), len(data), RETRIEVAL_HINT)


def _ensure_root(root: Path) -> None:
    """Create missing components of the root with 0700, chmod-ing only what we created."""
    missing: list[Path] = []
    probe = root
    while not probe.exists() and not probe.is_symlink():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        os.chmod(path, 0o700)


def _open_session_dir(root: Path, dir_name: str) -> int:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            os.mkdir(dir_name, 0o700, dir_fd=root_fd)
            created = True
        except FileExistsError:
            created = False
        try:
            fd = os.open(dir_name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise SpillStoreError(
                    f"session directory {root / dir_name} is not a real directory (symlink or file); refusing to write",
                    exc,
                ) from exc
            raise
        if created:
            os.fchmod(fd, 0o700)
        return fd
    finally:
        os.close(root_fd)


def _write_exclusive(root: Path, dir_name: str, file_name: str, data: bytes) -> Path:
    _ensure_root(root)
    dir_fd = _open_session_dir(root, dir_name)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(file_name, flags, 0o600, dir_fd=dir_fd)
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != len(data):
                raise OSError(errno.EIO, "spill file size does not match what was written")
        except BaseException:
            # Nothing half-written is left behind to be mistaken for a saved artifact.
            os.close(fd)
            fd = -1
            try:
                os.unlink(file_name, dir_fd=dir_fd)
            except OSError:
                pass
            raise
        finally:
            if fd >= 0:
                os.close(fd)
    finally:
        os.close(dir_fd)
    return root / dir_name / file_name
