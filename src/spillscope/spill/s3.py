"""The S3 spill backend: the local layout as object keys on any S3-compatible store.

Keys are ``<prefix>/session-<sha256(sessionId)[:12]>/<12 hex random>-<encode_segment(name)>``
(the local layout, so every inspector rule applies unchanged) and the locator is
``s3://<bucket>/<key>``. A save is one ``PutObject`` with ``If-None-Match: *``: the
store never overwrites, and on a collision (412 PreconditionFailed, or 409 for a
concurrent conditional write) it retries with a new random prefix. A PUT is atomic on
S3, so a save that fails leaves no partial object to be mistaken for an artifact.

The client is the one :mod:`spillscope.storage.s3` makes (boto3; docs/storage.md says why),
imported only when an S3 store is used: credentials, region and endpoint come from the
standard AWS environment and config files (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_PROFILE``, ``~/.aws/config``, ...), never from options of our own.
"""

from __future__ import annotations

import secrets
from typing import Any, Callable

from ..storage.s3 import (MISSING_EXTRA, SCHEME, MissingS3Extra, ReadOnlyViolation, S3Url, describe, error_code,
                          is_not_found, load_boto3, parse_s3_url, s3_client)
from ..util.text import js_utf8
from .naming import encode_segment, session_dir_name
from .types import Locator, SaveTextSpill, SpillRef, SpillStore, SpillStoreError

__all__ = ["MISSING_EXTRA", "SCHEME", "S3_RETRIEVAL_HINT", "MissingS3Extra", "ReadOnlyViolation", "S3SpillStore", "S3Url",
           "describe", "error_code", "is_not_found", "load_boto3", "parse_s3_url", "s3_client"]

#: The hint a model reads next to an S3 locator: the same tools, named for a URI.
S3_RETRIEVAL_HINT = ("Use read with offset/limit on this s3:// URI (an S3 ranged GET), "
                     "or grep this URI to search within it.")
_COLLISION_RETRIES = 8
_COLLISION_CODES = frozenset({"PreconditionFailed", "ConditionalRequestConflict", "412", "409"})


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
