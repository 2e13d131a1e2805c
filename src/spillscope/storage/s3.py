"""A spill root in an S3-compatible object store (``s3://bucket/prefix``), read-only.

Two halves: the client every S3 user in the package shares (:func:`s3_client`, one per
process, kind and timeout; the URL form :class:`S3Url`; error codes), and
:class:`S3Storage`, the inspector's view of a root. A root is listed with ListObjectsV2
(1000 keys a page, no delimiter: one pass lists every session "dir" and artifact with its
size and mtime); one object is read with HEAD and ranged GETs. Read-only by construction:
the inspector's client (kind ``"read"``) refuses any operation but List/Head/Get before it
is sent.

**Timeouts.** An endpoint that accepts a connection and never answers must not hang a
command: every request of the read client is bounded by :func:`default_timeout` seconds
(15; ``SPILLSCOPE_S3_TIMEOUT``, or ``--timeout`` through
:func:`~.registry.set_request_timeout`), retry included — two attempts of half the
bound each, so one lost packet is retried and a silent endpoint fails within the bound
(plus botocore's retry backoff, under a second). The bound is on silence, not on a
transfer: a large GET that keeps sending is not cut.

The client is boto3 (docs/storage.md says why, with figures), imported only when an S3 root
is used; credentials, region and endpoint come from the standard AWS environment and config
files (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_PROFILE``, ``~/.aws/config``, ...).
"""

from __future__ import annotations

import errno
import io
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from .base import ObjectInfo, RootGone, RootProblem, Storage

SCHEME = "s3://"
MISSING_EXTRA = "S3 support needs the s3 extra: pip install 'spillscope[s3]' (boto3 is not installed)"
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_MISSING_BUCKET = frozenset({"NoSuchBucket"})
#: The bound on one unanswered S3 request of the inspector, retry included (seconds).
DEFAULT_TIMEOUT = 15.0
TIMEOUT_ENV = "SPILLSCOPE_S3_TIMEOUT"
#: Attempts per request within the bound (the first and one retry).
_ATTEMPTS = 2


class MissingS3Extra(ImportError):
    """boto3 is not installed: ``str(exc)`` is the one-line fix."""


@dataclass(frozen=True)
class S3Url:
    """An ``s3://bucket/prefix`` root, parsed."""

    bucket: str
    #: The key prefix without leading or trailing ``/`` (may be empty).
    prefix: str

    @property
    def key_base(self) -> str:
        """What every key under this URL starts with (``""`` or ``prefix/``)."""
        return self.prefix + "/" if self.prefix else ""

    def url(self) -> str:
        """``s3://bucket/prefix`` (``s3://bucket`` without a prefix)."""
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"

    def object_url(self, key: str) -> str:
        return f"{SCHEME}{self.bucket}/{key}"


def parse_s3_url(url: str) -> S3Url:
    """``s3://bucket[/prefix]`` → :class:`S3Url`; ``ValueError`` when it is not one."""
    if not url.startswith(SCHEME):
        raise ValueError(f"not an s3:// URL: {url!r}")
    bucket, _, prefix = url[len(SCHEME):].partition("/")
    if not bucket or any(c in bucket for c in " \x00"):
        raise ValueError(f"no bucket in {url!r}")
    prefix = prefix.strip("/")
    if "\x00" in prefix or (prefix and any(part in ("", ".", "..") for part in prefix.split("/"))):
        raise ValueError(f"prefix of {url!r} has an empty, '.' or '..' segment")
    return S3Url(bucket, prefix)


def _split(url: str) -> tuple[str, str]:
    bucket, _, key = url[len(SCHEME):].partition("/")
    return bucket, key


def default_timeout() -> float:
    """``SPILLSCOPE_S3_TIMEOUT``, else :data:`DEFAULT_TIMEOUT` (seconds); ``ValueError`` for a bad value."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise ValueError(f"{TIMEOUT_ENV}={text!r}: not a positive number of seconds")
    return value


_clients: dict[tuple[str, float | None], Any] = {}
_clients_lock = threading.Lock()


def load_boto3() -> Any:
    try:
        import boto3
    except ImportError:
        raise MissingS3Extra(MISSING_EXTRA) from None
    return boto3


def s3_client(kind: str = "rw", timeout: float | None = None) -> Any:
    """A boto3 S3 client from the standard AWS environment/config, one per process, kind
    and timeout.

    ``kind="read"`` is the inspector's: an event hook refuses any operation that is not a
    read before it is sent, so no inspector command can write or delete; its requests are
    bounded by ``timeout`` (:func:`default_timeout` when ``None``; see the module docstring).
    ``kind="rw"`` is the spill backend's, whose own bounds are unchanged."""
    if kind == "read" and timeout is None:
        timeout = default_timeout()
    with _clients_lock:
        client = _clients.get((kind, timeout))
        if client is None:
            boto3 = load_boto3()
            from botocore.config import Config

            if timeout is None:
                # A dead endpoint fails fast (the policy then keeps the inline result)
                # rather than after botocore's default 60 s connect timeout.
                config = Config(connect_timeout=10, read_timeout=60)
            else:
                each = timeout / _ATTEMPTS
                config = Config(connect_timeout=each, read_timeout=each,
                                retries={"mode": "standard", "total_max_attempts": _ATTEMPTS})
            client = boto3.session.Session().client("s3", config=config)
            if kind == "read":
                client.meta.events.register("before-call.s3", _refuse_writes)
            _clients[(kind, timeout)] = client
        return client


def drop_clients(kind: str) -> None:
    """Forget this process's clients of ``kind``: the next one reads the environment again
    (new credentials, a new endpoint)."""
    with _clients_lock:
        for key in [k for k in _clients if k[0] == kind]:
            del _clients[key]


READ_OPERATIONS = frozenset({"ListObjectsV2", "HeadObject", "GetObject", "HeadBucket"})


class ReadOnlyViolation(RuntimeError):
    """An inspector code path tried an S3 operation that is not a read."""


def _refuse_writes(model: Any, **_: Any) -> None:
    if model.name not in READ_OPERATIONS:
        raise ReadOnlyViolation(f"the inspector is read-only; refused S3 {model.name}")


def error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        if code:
            return str(code)
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status:
            return str(status)
    return ""


def is_not_found(exc: BaseException) -> bool:
    return error_code(exc) in _NOT_FOUND_CODES


def describe(exc: BaseException, timeout: float | None = None) -> str:
    """One line for an S3 failure (botocore's messages are already one line). A timeout and
    a refused connection say so in words, with the bound (``timeout``) and how to change it."""
    text = str(exc).replace("\n", " ")
    kind = type(exc).__name__
    if kind in ("ReadTimeoutError", "ConnectTimeoutError"):
        within = f" within {timeout:g} s" if timeout is not None else ""
        return (f"the endpoint did not answer{within} ({text}); "
                f"--timeout SECONDS or {TIMEOUT_ENV} sets the bound")
    if kind in ("EndpointConnectionError", "ConnectionClosedError", "ProxyConnectionError"):
        return f"endpoint unreachable ({text})"
    return text


def os_error(exc: BaseException, url: str, timeout: float | None = None) -> OSError:
    """The ``OSError`` an S3 failure stands for (``FileNotFoundError`` for a missing key)."""
    if is_not_found(exc) or error_code(exc) in _MISSING_BUCKET:
        return FileNotFoundError(errno.ENOENT, "no such object (expired or never written)", url)
    if error_code(exc) in ("AccessDenied", "403"):
        return PermissionError(errno.EACCES, f"access denied: {describe(exc, timeout)}", url)
    return OSError(errno.EIO, describe(exc, timeout), url)


class S3Storage(Storage):
    """``s3://bucket/prefix`` (see the module docstring)."""

    scheme = SCHEME

    def __init__(self, text: str, *, timeout: float | None = None) -> None:
        self.url = parse_s3_url(text)
        super().__init__(self.url.url())
        self.timeout = timeout if timeout is not None else default_timeout()

    @property
    def client(self) -> Any:
        return s3_client("read", self.timeout)

    def problem(self) -> RootProblem | None:
        try:
            self.client.list_objects_v2(Bucket=self.url.bucket, Prefix=self.url.key_base, MaxKeys=1)
        except ImportError:
            raise
        except Exception as exc:
            if error_code(exc) in _MISSING_BUCKET:
                return RootProblem(f"{self.root}: bucket {self.url.bucket!r} does not exist", missing=True)
            return RootProblem(f"{self.root}: {describe(exc, self.timeout)}")
        return None

    def objects(self) -> Iterator[ObjectInfo]:
        paginator = self.client.get_paginator("list_objects_v2")
        base = self.url.key_base
        try:
            for page in paginator.paginate(Bucket=self.url.bucket, Prefix=base):
                for obj in page.get("Contents", ()):
                    key: str = obj["Key"]
                    yield ObjectInfo(key[len(base):], self.url.object_url(key), int(obj.get("Size", 0)),
                                     obj["LastModified"].timestamp(), str(obj.get("ETag", "")))
        except ImportError:
            raise
        except Exception as exc:
            if error_code(exc) in _MISSING_BUCKET:
                raise RootGone(f"bucket {self.url.bucket!r} does not exist") from exc
            raise

    def describe_error(self, exc: BaseException) -> str:
        return describe(exc, self.timeout)

    def open_reader(self, path: str) -> S3Reader:
        return S3Reader(path, self.client, self.timeout)

    def open_stream(self, path: str, buffering: int = 1 << 20) -> BinaryIO:
        return io.BufferedReader(_ObjectStream(path, self.client, self.timeout), buffer_size=buffering)

    def open_sized(self, path: str, buffering: int = 1 << 20) -> tuple[BinaryIO, int]:
        raw = _ObjectStream(path, self.client, self.timeout)
        size = raw.size if raw.size is not None else self.size(path)
        return io.BufferedReader(raw, buffer_size=buffering), size

    def size(self, path: str) -> int:
        return _head_size(self.client, path, self.timeout)

    def resolve(self, locator: str) -> tuple[str | None, str]:
        if not locator.startswith(SCHEME):
            return None, "locator is not an s3:// URI (use --rebase OLD_ROOT for a root copied from elsewhere)"
        if any(part in ("", ".", "..") for part in locator[len(SCHEME):].split("/")):
            return None, "locator is not a normalised key (has an empty, '.' or '..' segment)"
        if not locator.startswith(self.root.rstrip("/") + "/"):
            return None, "locator is outside the inspected root"
        return locator, ""

    @property
    def poll_limit(self) -> float:
        # A listing is a few requests, each bounded; one hung past them is stuck.
        return 3 * self.timeout + 5.0


def _head_size(client: Any, url: str, timeout: float | None) -> int:
    bucket, key = _split(url)
    try:
        return int(client.head_object(Bucket=bucket, Key=key)["ContentLength"])
    except ImportError:
        raise
    except Exception as exc:
        raise os_error(exc, url, timeout) from None


class S3Reader:
    """``pread`` over ranged GETs of one object (the local :class:`~.local.FileReader`'s twin).

    Bytes that a stream of the same object still holds (its first MiBs, its recent
    window) are served from there: the reader's first screen needs no request of its own."""

    def __init__(self, url: str, client: Any, timeout: float | None = None) -> None:
        self.url = url
        self.bucket, self.key = _split(url)
        self.client = client
        self.timeout = timeout

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
            raise os_error(exc, self.url, self.timeout) from None

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

    def __init__(self, url: str, client: Any, timeout: float | None = None) -> None:
        self.url = url
        self.bucket, self.key = _split(url)
        self.client = client
        self.timeout = timeout
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
            raise os_error(exc, self.url, self.timeout) from None
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
                self.size = _head_size(self.client, self.url, self.timeout)
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
            raise os_error(exc, self.url, self.timeout) from None
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
