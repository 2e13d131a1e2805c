"""The storage interface: what the inspector may ask of a spill root, whatever holds it.

A root is chosen once, at the edge (:func:`spillscope.storage.open_storage`), and becomes a
:class:`Storage`; every inspector, format and front-end module receives that object and asks
it — never the root's text — how to read. The interface is what the inspector needs and no
more: the root's name and why it cannot be inspected, a listing of every object under it
with its size and mtime, a positional reader (``pread``), a stream, a size, and where a
notice's locator lies under the root. Nothing here writes: an inspector has no write path.

Two shapes of store exist and the interface says which one a root is, as a capability
rather than a kind: a *tree* (:attr:`Storage.tree` is its directory) is walked fd-relative
and no-follow and watched with the OS's notifications; an *object store* (``tree`` is
``None``) is listed by key (:meth:`Storage.objects`) and watched by polling that listing.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Protocol


class Reader(Protocol):
    """Positional reads of one artifact; close it when done."""

    def pread(self, size: int, offset: int) -> bytes: ...

    def close(self) -> None: ...


class UnsupportedRoot(ValueError):
    """A root the command cannot take: an unknown or malformed scheme, or a kind of store
    the command does not support. ``str(exc)`` is the one line to show (exit 2)."""


class RootGone(Exception):
    """The root itself does not exist (a bucket that is gone): raised by a listing."""


@dataclass(frozen=True)
class RootProblem:
    """Why a root cannot be inspected now: ``str()`` is the one line to show (it names the
    root). ``missing`` says the root does not exist (yet) — a watch may wait for it — as
    opposed to one that is not a directory, unreadable or unreachable."""

    message: str
    missing: bool = False

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class ObjectInfo:
    """One object under an object-store root, as a listing gives it."""

    #: The key below the root (``session-<12 hex>/<name>``), ``/``-separated.
    rel: str
    #: The object's full name, as artifacts and locators name it (``s3://bucket/key``).
    url: str
    size: int
    mtime: float
    etag: str


class Storage(abc.ABC):
    """A spill root opened read-only (see the module docstring)."""

    #: The scheme this store is reached by, for messages (``"s3://"``; ``""`` for a path).
    scheme: str = ""

    def __init__(self, root: str) -> None:
        #: The root as the inspector names it (an absolute path; ``s3://bucket/prefix``).
        self.root = root

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.root!r})"

    @property
    def tree(self) -> str | None:
        """The local directory when the root is a POSIX tree; ``None`` for an object store."""
        return None

    def following_link(self) -> Storage:
        """This root with a symlink given as the root resolved once (the TUI's choice at start)."""
        return self

    @abc.abstractmethod
    def problem(self) -> RootProblem | None:
        """Why the root cannot be inspected (one line, naming it), or ``None`` when it can."""

    def objects(self) -> Iterator[ObjectInfo]:
        """Every object under an object-store root (:class:`RootGone` when the root is gone;
        other failures propagate). A tree is walked by the scan itself, fd-relative."""
        raise NotImplementedError(f"{type(self).__name__} is a tree: walk {self.tree}")

    @abc.abstractmethod
    def describe_error(self, exc: BaseException) -> str:
        """One line for a failure this store raised (a listing's, a read's)."""

    @abc.abstractmethod
    def open_reader(self, path: str) -> Reader:
        """Positional reads of the artifact ``path`` (a name this store gave)."""

    @abc.abstractmethod
    def open_sized(self, path: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
        """A buffered binary stream of the whole artifact and its size, from one open."""

    def open_stream(self, path: str, buffering: int = 1 << 20) -> BinaryIO:
        """A buffered binary stream of the whole artifact, from its start."""
        return self.open_sized(path, buffering)[0]

    @abc.abstractmethod
    def size(self, path: str) -> int:
        """The artifact's size in bytes."""

    def read_head(self, path: str, size: int) -> bytes:
        """The first ``size`` bytes (fewer for a shorter artifact)."""
        reader = self.open_reader(path)
        try:
            return reader.pread(size, 0)
        finally:
            reader.close()

    @abc.abstractmethod
    def resolve(self, locator: str) -> tuple[str | None, str]:
        """(the artifact a notice's locator names under this root, "") or (None, why not)."""

    @property
    def poll_limit(self) -> float:
        """How long one listing may take before a watcher counts it as hung (seconds)."""
        return 30.0
