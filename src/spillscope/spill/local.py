"""The local spill backend (FORMAT.md §2): layout, safe names and the exclusive write.

Layout: ``<root>/session-<sha256(sessionId)[:12]>/<12 hex random>-<encode_segment(name)>``.
Directories are 0700 and files 0600 whatever the umask. The session directory is
opened with ``O_NOFOLLOW|O_DIRECTORY`` and the file created relative to that handle
with ``O_CREAT|O_EXCL|O_NOFOLLOW``, so a planted symlink can never redirect a write.
All file I/O runs in a worker thread so the event loop is never blocked.

At construction the store starts the reference's one-shot expiry sweep (FORMAT.md §2,
:mod:`.sweep`) in a background thread, unless ``cleanup_period_days`` is 0; it never
delays a save and never fails one (a save that races a pruned directory makes it again).
The private default root is one per process, as in the reference, and every store's
sweep keeps it (the reference's would prune it when empty unless it is that store's own
root), so no sweep removes the root another store of the same process writes into.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import secrets
import stat
import string
import tempfile
import threading
from pathlib import Path
from typing import Callable

from ..util.text import js_utf8
from .naming import encode_segment, session_dir_name
from .expiry_rule import DEFAULT_CLEANUP_PERIOD_DAYS, MS_PER_DAY, cutoff_ms, validate_period_days
from .sweep import DEFAULT_ROOT_PREFIX, discover_default_roots, gather_sweep_roots, sweep_spill_roots
from .sweep_records import SweepReport, WarnFn
from ..formats.notices import RETRIEVAL_HINT
from .types import Locator, SaveTextSpill, SpillRef, SpillStore, SpillStoreError

__all__ = ["DEFAULT_ROOT_PREFIX", "LocalSpillStore", "default_roots_base", "private_root"]

_ENOENT_RETRIES = 8
_ROOT_ALPHABET = string.ascii_letters + string.digits  # what Node's mkdtemp fills XXXXXX with
_private_root: Path | None = None
_private_lock = threading.Lock()
_log = logging.getLogger(__name__)


def private_root() -> Path:
    """The process's private default root ``<tmp>/dsh-spill-XXXXXX`` (0700), made on first use.

    Named like Node's ``mkdtemp`` (six ``[A-Za-z0-9]``) so a later start-up sweep, of this
    or of the reference implementation, recognises it as a prior default root."""
    global _private_root
    with _private_lock:
        if _private_root is None:
            base = default_roots_base()
            while True:
                path = Path(base) / (DEFAULT_ROOT_PREFIX + "".join(secrets.choice(_ROOT_ALPHABET) for _ in range(6)))
                try:
                    os.mkdir(path, 0o700)
                except FileExistsError:
                    continue
                break
            _private_root = path
        return _private_root


def _created_private_root() -> Path | None:
    with _private_lock:
        return _private_root


def default_roots_base() -> str:
    """Where default roots are made and prior ones discovered: the temp dir (``$TMPDIR``)."""
    return tempfile.gettempdir()


class LocalSpillStore(SpillStore):
    """Spill files under ``root`` (or a lazily created private ``dsh-spill-XXXXXX`` temp dir)."""

    def __init__(self, root: str | os.PathLike[str] | None = None, *, random_prefix: Callable[[], str] | None = None,
                 cleanup_period_days: int | None = DEFAULT_CLEANUP_PERIOD_DAYS, warn: WarnFn | None = None,
                 default_roots_base: str | os.PathLike[str] | None = None) -> None:
        """``cleanup_period_days``: files older than this are deleted by the start-up sweep
        (default 30, and ``None`` means the default, as the reference's ``null`` does; 0
        disables it). ``warn`` receives the sweep's contained failures (default:
        the ``spillscope.spill.local`` logger). ``default_roots_base`` is where prior default
        roots are discovered (default: the temp dir), for tests and sandboxes."""
        # ``random_prefix`` exists for reproducible demos and tests; real use keeps the default.
        self._random_prefix = random_prefix or (lambda: secrets.token_hex(6))
        self._configured = None if root is None else Path(os.path.abspath(os.fspath(root)))
        self._root: Path | None = self._configured
        self._lock = threading.Lock()
        self.cleanup_period_days = validate_period_days(cleanup_period_days)
        self._warn: WarnFn = warn or _log.warning
        self._base = None if default_roots_base is None else os.fspath(default_roots_base)
        self._cleanup: threading.Thread | None = None
        self._cleanup_report: SweepReport | None = None
        if self.cleanup_period_days > 0:
            # One best-effort sweep that never delays availability; not a daemon, so the
            # interpreter waits for it rather than killing it between a stat and an unlink.
            self._cleanup = threading.Thread(target=self._run_cleanup, name="spillscope-spill-sweep")
            self._cleanup.start()

    def _run_cleanup(self) -> None:
        cutoff = cutoff_ms(self.cleanup_period_days * MS_PER_DAY)
        base = self._base if self._base is not None else default_roots_base()
        # Discover first, then read which root is active: a private root made before the
        # listing is then already recorded (it is set under the same lock that made it).
        discovered = discover_default_roots(base, self._warn)
        # The configured root, and this process's default root if made: another store of
        # the same process may be writing into it (the reference would prune it when empty).
        active = [str(p) for p in (self._configured, _created_private_root()) if p is not None]
        roots = gather_sweep_roots(active, self._warn, base, discovered=discovered)
        self._cleanup_report = sweep_spill_roots(roots, cutoff, self._warn)

    def wait_for_cleanup(self, timeout: float | None = None) -> SweepReport | None:
        """Wait for the start-up sweep; its report, or ``None`` if disabled or still running."""
        if self._cleanup is not None:
            self._cleanup.join(timeout)
            if self._cleanup.is_alive():
                return None
        return self._cleanup_report

    @property
    def root(self) -> Path:
        """The spill root; creating the private default root on first use."""
        with self._lock:
            if self._root is None:
                self._root = private_root()
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
