"""Storage: what holds a spill root, chosen once at the edge and passed as an object.

* :mod:`.base` — the :class:`Storage` interface (list, stat, read a range, stream, resolve
  a locator) and its records;
* :mod:`.registry` — :func:`open_storage`, the one place a path or URL becomes a store, and
  :data:`~.registry.BACKENDS`, where a kind of store is registered;
* :mod:`.local` — a directory: no-follow, fd-relative, read-only (:func:`open_regular`);
* :mod:`.s3` — ``s3://bucket/prefix`` through a List/Head/Get-only boto3 client;
* :mod:`.checked` — a stream that says whether the artifact changed while it was read.

The by-path helpers below serve callers that hold one artifact's name and no root (``cat
FILE``, ``iter_transcript(path)``): they open the artifact's store through the same
registry, so the kind is still decided in one place.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from .base import ObjectInfo, Reader, RootGone, RootProblem, Storage, UnsupportedRoot
from .local import FileReader, LocalStorage, file_type, open_regular
from .registry import BACKENDS, kind_of, open_storage, set_request_timeout

__all__ = [
    "BACKENDS", "FileReader", "LocalStorage", "ObjectInfo", "Reader", "RootGone", "RootProblem", "Storage",
    "UnsupportedRoot", "file_type", "kind_of", "normalize_root", "open_reader", "open_regular", "open_sized",
    "open_storage", "open_stream", "read_head", "set_request_timeout",
]


def normalize_root(root: str | os.PathLike[str] | Storage) -> str:
    """A spill root as the inspector names it: an absolute path, or ``s3://bucket/prefix``
    without a trailing ``/``."""
    return open_storage(root).root


def open_reader(path: str | os.PathLike[str]) -> Reader:
    """Positional reads of one artifact, local or remote."""
    return open_storage(path).open_reader(os.fspath(path))


def open_stream(path: str | os.PathLike[str], buffering: int = 1 << 20) -> BinaryIO:
    """A buffered binary stream of one artifact, from its start."""
    return open_storage(path).open_stream(os.fspath(path), buffering)


def open_sized(path: str | os.PathLike[str], buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
    """:func:`open_stream` and the artifact's size, from one open (one GET on S3)."""
    return open_storage(path).open_sized(os.fspath(path), buffering)


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of one artifact (fewer for a shorter one)."""
    return open_storage(path).read_head(os.fspath(path), size)
