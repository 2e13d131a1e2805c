#!/usr/bin/env python3
"""Which S3 client for spillscope: boto3 against obstore and fsspec's s3fs, on a real
SeaweedFS on loopback.

    python bench/s3_clients.py [--keys 10000]

Measures what the store and the inspector do: a small PutObject with ``If-None-Match: *``,
a 64 KiB ranged GET, a HEAD, and ListObjectsV2 of many keys (all pages), plus import time,
and how long each client takes to give up on an endpoint that accepts and never answers
(with a 2 s timeout asked of each, and with its defaults cut off at 40 s). Each line
prints the per-operation time and the ratios to boto3 (spillscope's own listing,
``S3Storage.objects``, is boto3 plus building its records). s3fs is measured only when it
is installed: its aiobotocore pins botocore below what the s3 extra's boto3 needs, so it
runs from its own environment (docs/storage.md). Results and the choice are recorded in
docs/storage.md.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from run import timed  # noqa: E402
from s3server import create_bucket, weed_server  # noqa: E402


def best(fn) -> float:
    return timed(fn, 3)


def import_time(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return min(float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(3))


def silent_endpoint() -> str:
    """A loopback port that accepts every connection and never answers (for the process's life)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held = []

    def accept() -> None:
        while True:
            held.append(server.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}"


def give_up_time(fn: Callable[[], object], cap: float = 40.0) -> str:
    """How long ``fn`` takes to fail on the silent endpoint (``> cap`` if it has not by then)."""
    done = threading.Event()
    took: list[float] = []
    why: list[str] = []

    def run() -> None:
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            why.append(f"{type(exc).__name__}: {str(exc)[:90]!r}")
        took.append(time.perf_counter() - t)
        done.set()

    threading.Thread(target=run, daemon=True).start()
    return f"{took[0]:.1f} s ({why[0] if why else 'no error'})" if done.wait(cap) else f"> {cap:g} s"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--keys", type=int, default=10000)
    p.add_argument("--ops", type=int, default=200)
    args = p.parse_args()
    with weed_server() as server:
        create_bucket(server, "bench")
        os.environ.update(server.env())
        os.environ["AWS_ALLOW_HTTP"] = "true"  # obstore refuses http:// endpoints without it
        import boto3
        import obstore
        from obstore.store import S3Store

        try:
            import s3fs
        except ImportError:
            s3fs = None
        from spillscope.storage import open_storage

        b3 = boto3.client("s3")
        ob = S3Store("bench")
        fs = s3fs.S3FileSystem(use_listings_cache=False) if s3fs is not None else None
        big = os.urandom(4 << 20)
        b3.put_object(Bucket="bench", Key="big", Body=big)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: b3.put_object(Bucket="bench", Key=f"many/session-{i // 100:012x}/{i:012x}-bash.txt",
                                                  Body=b"x"), range(args.keys)))
        n = args.ops
        counter = iter(range(10**9))

        def b3_put() -> None:
            for _ in range(n):
                b3.put_object(Bucket="bench", Key=f"put/b3-{next(counter)}", Body=b"y" * 1000, IfNoneMatch="*")

        def ob_put() -> None:
            for _ in range(n):
                obstore.put(ob, f"put/ob-{next(counter)}", b"y" * 1000, mode="create")

        def b3_get() -> None:
            for i in range(n):
                off = (i * 65536) % (len(big) - 65536)
                b3.get_object(Bucket="bench", Key="big", Range=f"bytes={off}-{off + 65535}")["Body"].read()

        def ob_get() -> None:
            for i in range(n):
                off = (i * 65536) % (len(big) - 65536)
                bytes(obstore.get_range(ob, "big", start=off, end=off + 65536))

        def b3_head() -> None:
            for _ in range(n):
                b3.head_object(Bucket="bench", Key="big")

        def ob_head() -> None:
            for _ in range(n):
                obstore.head(ob, "big")

        def fs_get() -> None:
            for i in range(n):
                off = (i * 65536) % (len(big) - 65536)
                fs.cat_file("bench/big", start=off, end=off + 65536)

        def fs_head() -> None:
            for _ in range(n):
                fs.info("bench/big")

        def fs_list() -> None:
            keys = len(fs.find("bench/many/"))
            assert keys == args.keys, keys

        store = open_storage("s3://bench/many")

        def ours_list() -> None:
            keys = sum(1 for _ in store.objects())
            assert keys == args.keys, keys

        def b3_list() -> None:
            keys = 0
            for page in b3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="many/"):
                keys += len(page.get("Contents", []))
            assert keys == args.keys, keys

        def ob_list() -> None:
            keys = sum(len(chunk) for chunk in obstore.list(ob, prefix="many/"))
            assert keys == args.keys, keys

        nan = float("nan")
        has_fs = fs is not None
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} at start")
        print(f"{'operation':<40} {'boto3':>10} {'obstore':>10} {'s3fs':>10}  obstore/boto3  s3fs/boto3")
        rows = [
            ("import", import_time("boto3"), import_time("obstore"), import_time("s3fs") if has_fs else nan, 1),
            (f"PutObject If-None-Match 1 kB (x{n})", best(b3_put), best(ob_put), nan, n),
            (f"ranged GET 64 KiB (x{n})", best(b3_get), best(ob_get), best(fs_get) if has_fs else nan, n),
            (f"HEAD (x{n})", best(b3_head), best(ob_head), best(fs_head) if has_fs else nan, n),
            (f"ListObjectsV2 {args.keys} keys", best(b3_list), best(ob_list), best(fs_list) if has_fs else nan, 1),
        ]
        for name, a, b, c, per in rows:
            print(f"{name:<40} {a / per * 1e3:8.2f}ms {b / per * 1e3:8.2f}ms {c / per * 1e3:8.2f}ms  {b / a:12.2f}x {c / a:10.2f}x")
        print(f"{'spillscope S3Storage.objects, same keys':<40} {best(ours_list) * 1e3:8.2f}ms")
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} at the end")

        # An endpoint that accepts and never answers: how long until each client gives up.
        dead = silent_endpoint()
        asked = {
            "boto3, 2 s asked (spillscope's read client)":
                lambda: open_storage("s3://bench/x", timeout=2.0).problem(),
            "boto3, defaults": lambda: boto3.client("s3", endpoint_url=dead).list_objects_v2(Bucket="b"),
            "obstore, 2 s asked": lambda: list(obstore.list(S3Store("b", endpoint=dead, client_options={
                "allow_http": True, "timeout": "2s"}, retry_config={"max_retries": 1, "retry_timeout": datetime.timedelta(seconds=2)}))),
            "obstore, defaults": lambda: list(obstore.list(S3Store("b", endpoint=dead, client_options={"allow_http": True}))),
        }
        if has_fs:
            asked["s3fs, 2 s asked"] = lambda: s3fs.S3FileSystem(
                endpoint_url=dead, use_listings_cache=False,
                config_kwargs={"connect_timeout": 2, "read_timeout": 2, "retries": {"total_max_attempts": 1}}).ls("b")
            asked["s3fs, defaults"] = lambda: s3fs.S3FileSystem(endpoint_url=dead, use_listings_cache=False).ls("b")
        os.environ["AWS_ENDPOINT_URL"] = dead
        from spillscope.storage import s3 as s3mod

        s3mod.drop_clients("read")
        for name, fn in asked.items():
            print(f"silent endpoint, {name:<46} gives up after {give_up_time(fn)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
