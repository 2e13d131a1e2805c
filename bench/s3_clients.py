#!/usr/bin/env python3
"""Which S3 client for spillscope: boto3 against obstore, on a real SeaweedFS on loopback.

    python bench/s3_clients.py [--keys 10000]

Measures what the store and the inspector do: a small PutObject with ``If-None-Match: *``,
a 64 KiB ranged GET, and ListObjectsV2 of many keys (all pages), plus import time. Each
line prints the per-operation time and the ratio obstore/boto3. Results and the choice
are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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

        b3 = boto3.client("s3")
        ob = S3Store("bench")
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

        def b3_list() -> None:
            keys = 0
            for page in b3.get_paginator("list_objects_v2").paginate(Bucket="bench", Prefix="many/"):
                keys += len(page.get("Contents", []))
            assert keys == args.keys, keys

        def ob_list() -> None:
            keys = sum(len(chunk) for chunk in obstore.list(ob, prefix="many/"))
            assert keys == args.keys, keys

        print(f"{'operation':<40} {'boto3':>10} {'obstore':>10}  obstore/boto3")
        rows = [
            ("import", import_time("boto3"), import_time("obstore"), 1),
            (f"PutObject If-None-Match 1 kB (x{n})", best(b3_put), best(ob_put), n),
            (f"ranged GET 64 KiB (x{n})", best(b3_get), best(ob_get), n),
            (f"ListObjectsV2 {args.keys} keys", best(b3_list), best(ob_list), 1),
        ]
        for name, a, b, per in rows:
            print(f"{name:<40} {a / per * 1e3:8.2f}ms {b / per * 1e3:8.2f}ms  {b / a:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
