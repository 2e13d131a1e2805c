"""The S3 spill backend: the local layout as object keys on any S3-compatible store.

Keys are ``<prefix>/session-<sha256(sessionId)[:12]>/<12 hex random>-<encode_segment(name)>``
(the local layout, so every inspector rule applies unchanged) and the locator is
``s3://<bucket>/<key>``. A save is one ``PutObject`` with ``If-None-Match: *``: the
store never overwrites, and on a collision (412 PreconditionFailed, or 409 for a
concurrent conditional write) it retries with a new random prefix. A PUT is atomic on
S3, so a save that fails leaves no partial object to be mistaken for an artifact.

The client is boto3 (see docs/benchmarks.md for why), imported only when an S3 store or
``s3://`` root is used: credentials, region and endpoint come from the standard AWS
environment and config files (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_PROFILE``, ``~/.aws/config``, ...), never from options of our own.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass
from typing import Any, Callable

from ..util.text import js_utf8
from .naming import encode_segment, session_dir_name
from .types import Locator, SaveTextSpill, SpillRef, SpillStore, SpillStoreError

SCHEME = "s3://"
#: The hint a model reads next to an S3 locator: the same tools, named for a URI.
S3_RETRIEVAL_HINT = ("Use read with offset/limit on this s3:// URI (an S3 ranged GET), "
                     "or grep this URI to search within it.")
MISSING_EXTRA = "S3 support needs the s3 extra: pip install 'spillscope[s3]' (boto3 is not installed)"
_COLLISION_RETRIES = 8
_COLLISION_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})
_NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class MissingS3Extra(ImportError):
    """boto3 is not installed: ``str(exc)`` is the one-line fix."""


@dataclass(frozen=True)
class S3Url:
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


def is_s3(path: object) -> bool:
    return isinstance(path, str) and path.startswith(SCHEME)


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


_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def load_boto3() -> Any:
    try:
        import boto3
    except ImportError:
        raise MissingS3Extra(MISSING_EXTRA) from None
    return boto3


def s3_client(kind: str = "rw") -> Any:
    """A boto3 S3 client from the standard AWS environment/config, one per process and kind.

    ``kind="read"`` is the inspector's: an event hook refuses any operation that is not a
    read before it is sent, so no inspector command can write or delete."""
    with _clients_lock:
        client = _clients.get(kind)
        if client is None:
            boto3 = load_boto3()
            from botocore.config import Config

            # A dead endpoint fails fast (the policy then keeps the inline result) rather than
            # after botocore's default 60 s connect timeout.
            client = boto3.session.Session().client("s3", config=Config(connect_timeout=10, read_timeout=60))
            if kind == "read":
                client.meta.events.register("before-call.s3", _refuse_writes)
            _clients[kind] = client
        return client


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


def describe(exc: BaseException) -> str:
    """One line for an S3 failure (botocore's messages are already one line)."""
    return str(exc).replace("\n", " ")


class S3SpillStore(SpillStore):
    """Spill objects under ``s3://bucket/prefix``; see the module docstring."""

    def __init__(self, url: str, *, random_prefix: Callable[[], str] | None = None, client: Any = None) -> None:
        self.url = parse_s3_url(url)
        self._random_prefix = random_prefix or (lambda: secrets.token_hex(6))
        self._client = client

    @property
    def root(self) -> str:
        """The store's root URL (what ``spillscope ls`` takes)."""
        return self.url.url()

    def _get_client(self) -> Any:
        if self._client is None:
            self._client = s3_client("rw")
        return self._client

    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        import asyncio  # here: the inspector imports this module and never needs asyncio

        return await asyncio.to_thread(self.save_text_sync, request)

    def save_text_sync(self, request: SaveTextSpill) -> SpillRef:
        """Blocking form of :meth:`save_text`, for callers already off the event loop."""
        data = js_utf8(request.content)  # lone surrogates as U+FFFD, as Node writes them
        base = self.url.key_base + session_dir_name(request.owner.session_id) + "/"
        name = encode_segment(request.suggested_name)
        try:
            client = self._get_client()
        except MissingS3Extra as exc:
            raise SpillStoreError(str(exc), exc) from None
        except Exception as exc:  # bad config (unknown profile, no region, ...)
            raise SpillStoreError(f"spill save failed: S3 client: {describe(exc)}", exc) from exc
        for _ in range(_COLLISION_RETRIES):
            key = f"{base}{self._random_prefix()}-{name}"
            try:
                client.put_object(Bucket=self.url.bucket, Key=key, Body=data, IfNoneMatch="*",
                                  ContentType="text/plain; charset=utf-8")
            except Exception as exc:
                if error_code(exc) in _COLLISION_CODES:
                    continue  # someone holds this key: never overwrite, pick another
                raise SpillStoreError(f"spill save failed: {self.url.object_url(key)}: {describe(exc)}", exc) from exc
            return SpillRef(Locator(self.url.object_url(key)), len(data), S3_RETRIEVAL_HINT)
        raise SpillStoreError(f"spill save failed: {_COLLISION_RETRIES} key collisions in a row under {base}")
