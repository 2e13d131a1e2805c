"""A real ``spillscope serve`` process for the serve tests: started on a free port, its URL
(with the token) read from what it prints, stopped with its whole process group."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


class Served:
    """``spillscope serve ROOT *extra`` on ``port`` (a free one unless given)."""

    def __init__(self, root: Path, *extra: str, port: int | None = None, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.port = free_port() if port is None else port
        self.proc = subprocess.Popen([sys.executable, "-m", "spillscope", "serve", str(root), "--port", str(self.port),
                                      *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                     env=env, start_new_session=True)
        self.out: list[bytes] = []
        self.err: list[bytes] = []
        # Drained all along: a server whose log pipe is full would stop answering.
        self.readers = [threading.Thread(target=lambda s=stream, i=into: i.extend(iter(s.readline, b"")), daemon=True)
                        for stream, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self.readers:
            reader.start()
        self.url = ""
        wait(lambda: self._announced() or self.proc.poll() is not None, 60)
        self.token = parse_qs(urlsplit(self.url).query).get("token", [""])[0]
        self.origin = f"http://127.0.0.1:{self.port}"
        assert self.url, f"serve printed no URL: {b''.join(self.out)!r} {self.stderr()[-2000:]}"

    def _announced(self) -> bool:
        for line in self.out:
            m = re.match(rb"serving .* on (http://\S+)", line)
            if m:
                self.url = m.group(1).decode()
                self.port = urlsplit(self.url).port or self.port  # `--port 0`: the one it chose
                return self._listening()
        return False

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stderr(self) -> str:
        return b"".join(self.err).decode("utf-8", "replace")

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """``sig`` to the server alone, then its whole group if it lingers."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        for s in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, s)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        try:
            code: int | None = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        for reader in self.readers:  # all it wrote, up to its end
            reader.join(5)
        return code
