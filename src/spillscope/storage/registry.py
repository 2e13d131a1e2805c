"""Where a path or URL becomes a :class:`~.base.Storage`: the one place a root's kind is decided.

:func:`open_storage` takes what a user typed (or a library caller passed) and returns the
store it names, or raises :class:`~.base.UnsupportedRoot` with one line to show. The rules,
decided here for every command:

* ``<scheme>://…`` with a registered scheme (:data:`BACKENDS`) is that store; the scheme is
  case-insensitive (RFC 3986), so ``S3://b/p`` is ``s3://b/p``.
* A registered scheme with the wrong slashes (``s3:/b/p``, ``s3:b``) is refused as a
  malformed URL — never read as the local path ``./s3:/b/p``.
* Any other ``<scheme>:/…`` (``gs://``, ``http://``, ``file://``…) is refused by name.
* Everything else is a local path. A local directory whose name looks like a URL is
  reached as ``./s3:/b/p``: a path starting with ``./`` or ``/`` is never a URL.
* A command that cannot take a kind of store names itself (``supports``): "prune does not
  support s3:// roots".

Adding a kind of store is one module (a :class:`~.base.Storage` subclass whose constructor
takes the URL text and ``timeout=``) and one line in :data:`BACKENDS`.
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Collection

from .base import Storage, UnsupportedRoot
from .local import LocalStorage

#: scheme → ``module:class`` of its store, imported when a root of that scheme is opened
#: (so a client library loads only for its own roots). ``local`` is a path, not a scheme.
BACKENDS: dict[str, str] = {
    "s3": "spillscope.storage.s3:S3Storage",
}

#: A scheme and what follows its colon: a URL when slashes follow (or the scheme is ours).
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):(/*)")


_request_timeout: float | None = None


def set_request_timeout(seconds: float | None) -> None:
    """The bound on one unanswered request to a remote store, for every store this process
    opens from now on (``None``: each backend's default, e.g. ``SPILLSCOPE_S3_TIMEOUT``).
    The CLI's ``--timeout`` sets it once, so an artifact opened by its name later (the
    reader, ``cat``) is bounded like its root."""
    global _request_timeout
    if seconds is not None and not 0 < seconds < float("inf"):
        raise ValueError(f"a timeout is a positive number of seconds, not {seconds!r}")
    _request_timeout = seconds


def kind_of(text: str) -> str:
    """``"local"`` or the registered scheme ``text`` names (``UnsupportedRoot`` for any other URL)."""
    m = _SCHEME.match(text)
    if m is None:
        return "local"
    scheme, slashes = m.group(1).lower(), m.group(2)
    if scheme in BACKENDS:
        if slashes != "//":
            raise UnsupportedRoot(f"{text}: malformed {scheme}:// URL (write {scheme}://bucket/prefix; "
                                  f"a local path of that name is ./{text})")
        return scheme
    if not slashes:
        return "local"  # `notes:1` is a file name, not a URL
    if scheme == "file":
        raise UnsupportedRoot(f"{text}: file:// URLs are not taken; give the path itself")
    supported = " or ".join(f"{s}://…" for s in sorted(BACKENDS))
    raise UnsupportedRoot(f"{text}: {scheme}:// roots are not supported (a root is a local directory or {supported})")


def open_storage(root: str | os.PathLike[str] | Storage, *, command: str | None = None,
                 supports: Collection[str] | None = None, timeout: float | None = None) -> Storage:
    """The store ``root`` names (see the module docstring); a :class:`Storage` is returned as it is.

    ``supports`` lists the kinds ``command`` takes (``"local"``, ``"s3"``…; all when ``None``);
    ``timeout`` bounds each request of a remote store (its default when ``None``)."""
    if isinstance(root, Storage):
        return root
    text = os.fspath(root)
    kind = kind_of(text)
    if supports is not None and kind not in supports:
        what = "local paths" if kind == "local" else f"{kind}:// roots"
        raise UnsupportedRoot(f"{command or 'this command'} does not support {what}")
    if kind == "local":
        return LocalStorage(text)
    module, _, name = BACKENDS[kind].partition(":")
    cls = getattr(importlib.import_module(module), name)
    try:
        store: Storage = cls(kind + text[len(kind):], timeout=timeout if timeout is not None else _request_timeout)
    except ValueError as exc:  # a malformed URL (no bucket, a '..' segment)
        raise UnsupportedRoot(str(exc)) from None
    return store
