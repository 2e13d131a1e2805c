"""The inspector's read-only access to an ``s3://bucket/prefix`` spill root.

A root is scanned with ListObjectsV2 (1000 keys a page, no delimiter: one pass lists
every session "dir" and artifact with its size and mtime); one object is read with HEAD
and ranged GETs. Keys follow the local layout (``prefix/session-<12 hex>/<12 hex>-<name>``),
so the scan yields the same :class:`RootScan` records and the same findings as a local
root: a stray key is ``unexpected-entry``, a key that is gone is ``expired-locator``
downstream. Objects have no POSIX mode and no symlinks, so ``insecure-permissions`` and
``symlink`` never apply: session dirs are recorded as 0700 and objects as 0600 (what
the local backend would have written).

Read-only by construction: the client is :func:`spillscope.spill.s3.s3_client` of kind
``"read"``, which refuses any operation but List/Head/Get before it is sent.
"""

from __future__ import annotations

import errno
import io
import threading
import weakref
from collections import Counter
from typing import Any, BinaryIO, Iterator

from ..spill.s3 import describe, error_code, is_not_found, parse_s3_url, s3_client
from .findings import finding
from .scan.tree import SESSION_DIR, Artifact, ProgressFn, RootScan, SessionDir, classify_name

#: What an object is recorded with: the modes the local backend writes.
OBJECT_MODE, DIR_MODE = 0o600, 0o700
_MISSING_BUCKET = frozenset({"NoSuchBucket"})


def _split(url: str) -> tuple[str, str]:
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def os_error(exc: BaseException, url: str) -> OSError:
    """The ``OSError`` an S3 failure stands for (``FileNotFoundError`` for a missing key)."""
    if is_not_found(exc) or error_code(exc) in _MISSING_BUCKET:
        return FileNotFoundError(errno.ENOENT, "no such object (expired or never written)", url)
    if error_code(exc) in ("AccessDenied", "403"):
        return PermissionError(errno.EACCES, f"access denied: {describe(exc)}", url)
    return OSError(errno.EIO, describe(exc), url)


def iter_objects(root: str) -> Iterator[dict[str, Any]]:
    """Every object under the root (ListObjectsV2 pages); S3 errors propagate."""
    url = parse_s3_url(root)
    paginator = s3_client("read").get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=url.bucket, Prefix=url.key_base):
        yield from page.get("Contents", ())


def check_root(root: str) -> str | None:
    """Why ``root`` cannot be inspected (one line), or ``None`` when it can."""
    try:
        url = parse_s3_url(root)
    except ValueError as exc:
        return str(exc)
    try:
        s3_client("read").list_objects_v2(Bucket=url.bucket, Prefix=url.key_base, MaxKeys=1)
    except ImportError:
        raise
    except Exception as exc:
        if error_code(exc) in _MISSING_BUCKET:
            return f"{root}: bucket {url.bucket!r} does not exist"
        return f"{root}: {describe(exc)}"
    return None


def scan_s3_root(root: str, *, progress: ProgressFn | None = None) -> RootScan:
    """The :class:`RootScan` of an S3 root (see the module docstring)."""
    url = parse_s3_url(root)
    root = url.url()
    base, findings = url.key_base, []
    sessions: dict[str, SessionDir] = {}
    try:
        objects = list(_with_progress(iter_objects(root), sessions, progress))
    except ImportError:
        raise
    except Exception as exc:
        detail = f"bucket {url.bucket!r} does not exist" if error_code(exc) in _MISSING_BUCKET else describe(exc)
        return RootScan(root, [], [finding("unreadable", path=root, detail=detail)], exists=False)
    for obj in objects:
        key: str = obj["Key"]
        rel = key[len(base):]
        where = url.object_url(key)
        if rel.endswith("/") and obj.get("Size", 0) == 0:
            continue  # a "folder" marker some tools write: not an object of ours
        dir_name, sep, name = rel.partition("/")
        m = SESSION_DIR.match(dir_name)
        if not sep or m is None or "/" in name:
            findings.append(finding("unexpected-entry", path=where, detail="object not written by the spill backend"
                                    " (not <prefix>/session-<12 hex>/<name>)"))
            continue
        session = sessions.get(dir_name)
        if session is None:
            session = sessions[dir_name] = SessionDir(url.object_url(base + dir_name), dir_name, m.group(1), DIR_MODE)
        suggested, kind = classify_name(name)
        session.artifacts.append(Artifact(where, dir_name, name, suggested, kind, int(obj["Size"]),
                                          obj["LastModified"].timestamp(), OBJECT_MODE, False, True))
        if kind == "unknown":
            findings.append(finding("unexpected-entry", path=where, detail="object name is not <12 hex>-<encoded name>"))
    ordered = [sessions[k] for k in sorted(sessions)]
    for s in ordered:
        s.artifacts.sort(key=lambda a: a.name)
    return RootScan(root, ordered, findings)


def _with_progress(objects: Iterator[dict[str, Any]], sessions: dict[str, SessionDir],
                   progress: ProgressFn | None) -> Iterator[dict[str, Any]]:
    n = 0
    for obj in objects:
        n += 1
        if progress is not None and n % 1000 == 0:
            progress("scan", n, None)
        yield obj


def listing_json_s3(root: str, now: float, progress: ProgressFn | None = None) -> str:
    """The no-logs ``ls --json`` of an S3 root: the same records as a local listing."""
    from .scan.listing import ascii_json, codes_by_path, listing_totals, session_record

    scan = scan_s3_root(root, progress=progress)
    codes = codes_by_path(scan.findings)
    findings = [f.to_json() for f in scan.findings]
    sessions = [session_record(s, None, codes, now) for s in scan.sessions]
    return ascii_json({
        "root": scan.root,
        "sessions": sessions,
        "findings": findings,
        "summary": dict(sorted(Counter(f["code"] for f in findings).items())),
        "totals": listing_totals(sessions),
    })


def s3_size(url: str) -> int:
    bucket, key = _split(url)
    try:
        return int(s3_client("read").head_object(Bucket=bucket, Key=key)["ContentLength"])
    except ImportError:
        raise
    except Exception as exc:
        raise os_error(exc, url) from None


def s3_stat(url: str) -> tuple[int, float]:
    """(size, mtime) of one object (HEAD)."""
    bucket, key = _split(url)
    try:
        head = s3_client("read").head_object(Bucket=bucket, Key=key)
    except ImportError:
        raise
    except Exception as exc:
        raise os_error(exc, url) from None
    return int(head["ContentLength"]), head["LastModified"].timestamp()


class S3Reader:
    """``pread`` over ranged GETs of one object (the local :class:`~spillscope.util.fs.FileReader`'s twin).

    Bytes that a stream of the same object still holds (its first MiBs, its recent
    window) are served from there: the reader's first screen needs no request of its own."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.bucket, self.key = _split(url)
        self.client = s3_client("read")

    def pread(self, size: int, offset: int) -> bytes:
        if size <= 0:
            return b""
        stream = _streams.get(self.url)
        if stream is not None:
            held = stream.held(offset, size)
            if held is not None:
                return held
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self.key,
                                          Range=f"bytes={offset}-{offset + size - 1}")["Body"]
            try:
                return bytes(body.read())
            finally:
                body.close()
        except ImportError:
            raise
        except Exception as exc:
            if error_code(exc) in ("InvalidRange", "416"):
                return b""  # at or past the end, as pread gives
            raise os_error(exc, self.url) from None

    def close(self) -> None:
        pass


class _ObjectStream(io.RawIOBase):
    """An object as a seekable raw stream: one streaming GET read in order, a new ranged
    GET only after a seek outside what it holds. The transcript parser seeks back a
    little after each read-ahead (to a message's end): the last ``WINDOW`` bytes read are
    kept for that, and the object's first ``HEAD`` bytes for the reader's first screen.
    The object's size comes from the GET's ``Content-Range`` (no HEAD)."""

    WINDOW = 4 << 20
    HEAD = 4 << 20

    def __init__(self, url: str) -> None:
        self.url = url
        self.bucket, self.key = _split(url)
        self.client = s3_client("read")
        self.pos = 0
        self.body: Any = None
        self.body_pos = 0
        self.size: int | None = None
        self.window = bytearray()
        self.window_start = 0
        self.head = bytearray()
        self.lock = threading.Lock()
        self._get(0)  # a missing key fails here, at open, like a local open
        _streams[url] = self

    def _get(self, offset: int) -> None:
        if self.body is not None:
            self.body.close()
            self.body = None
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key, Range=f"bytes={offset}-")
        except ImportError:
            raise
        except Exception as exc:
            if error_code(exc) in ("InvalidRange", "416"):
                self.body = io.BytesIO(b"")  # at or past the end
                self.body_pos = offset
                return
            raise os_error(exc, self.url) from None
        self.body = response["Body"]
        total = str(response.get("ContentRange", "")).rpartition("/")[2]
        if total.isdigit():
            self.size = int(total)
        elif offset == 0 and "ContentLength" in response:
            self.size = int(response["ContentLength"])
        self.body_pos = offset

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 1:
            offset += self.pos
        elif whence == 2:
            if self.size is None:
                self.size = s3_size(self.url)
            offset += self.size
        if offset < 0:
            raise OSError(errno.EINVAL, "negative seek position", self.url)
        self.pos = offset
        return offset

    def held(self, offset: int, size: int) -> bytes | None:
        """Bytes ``[offset, offset+size)`` if this stream holds all of them, else ``None``."""
        with self.lock:
            if offset + size <= len(self.head):
                return bytes(self.head[offset:offset + size])
            rel = offset - self.window_start
            if 0 <= rel and rel + size <= len(self.window):
                return bytes(self.window[rel:rel + size])
            if self.size is not None and offset < self.size <= offset + size:
                # A read running past the end: held if everything up to the end is.
                return self.held_to_end(offset)
        return None

    def held_to_end(self, offset: int) -> bytes | None:
        assert self.size is not None
        if self.size <= len(self.head):
            return bytes(self.head[offset:self.size])
        rel = offset - self.window_start
        if 0 <= rel and self.window_start + len(self.window) == self.size:
            return bytes(self.window[rel:])
        return None

    def readinto(self, buffer: Any) -> int:
        want = len(buffer)
        with self.lock:
            rel = self.pos - self.window_start
            if 0 <= rel < len(self.window):
                n = min(want, len(self.window) - rel)
                buffer[:n] = self.window[rel:rel + n]
                self.pos += n
                return n
        if self.body is None or self.body_pos != self.pos:
            self._get(self.pos)
        try:
            data = self.body.read(want)
        except Exception as exc:
            raise os_error(exc, self.url) from None
        n = len(data)
        buffer[:n] = data
        with self.lock:
            if self.pos == len(self.head) < self.HEAD:
                self.head += data[: self.HEAD - len(self.head)]
            if self.window_start + len(self.window) != self.pos:
                self.window, self.window_start = bytearray(), self.pos
            self.window += data
            if len(self.window) > self.WINDOW:
                cut = len(self.window) - self.WINDOW
                del self.window[:cut]
                self.window_start += cut
            self.pos += n
        self.body_pos += n
        return n

    def close(self) -> None:
        if not self.closed and self.body is not None:
            self.body.close()
        if _streams.get(self.url) is self:
            _streams.pop(self.url, None)
        super().close()


#: The latest open stream of each object, for :class:`S3Reader` to read from.
_streams: weakref.WeakValueDictionary[str, _ObjectStream] = weakref.WeakValueDictionary()


def open_s3_stream(url: str, buffering: int = 1 << 20) -> BinaryIO:
    return io.BufferedReader(_ObjectStream(url), buffer_size=buffering)


def open_s3_sized(url: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
    """A stream of the object and its size, from one GET."""
    raw = _ObjectStream(url)
    size = raw.size if raw.size is not None else s3_size(url)
    return io.BufferedReader(raw, buffer_size=buffering), size
