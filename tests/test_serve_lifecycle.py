"""`spillscope serve` when a browser or the server goes away abruptly: the app process
a tab started ends (no orphan, no spin), and stopping serve prints no traceback.

The "browser" is an aiohttp websocket client in its own process, killed with SIGKILL
(no close frame), as when a browser crashes or is killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from procs import alive, children
from served import Served, wait

pytest.importorskip("textual_serve")

CLIENT = r'''
import asyncio, sys, aiohttp
async def main(port, token):
    async with aiohttp.ClientSession() as s:
        async with s.ws_connect(f"http://127.0.0.1:{port}/ws?width=100&height=30&token={token}",
                                origin=f"http://127.0.0.1:{port}") as ws:
            n = 0
            async for msg in ws:
                n += 1
                if n == 3:
                    print("drawing", flush=True)
asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
'''

_wait = wait


class Serve(Served):
    def __init__(self, root: Path, **kw) -> None:
        super().__init__(root, **kw)
        self.clients: list[subprocess.Popen] = []

    def connect(self) -> tuple[subprocess.Popen, int]:
        """A client that is drawing, and the app process serving it."""
        before = set(children(self.proc.pid))
        client = subprocess.Popen([sys.executable, "-c", CLIENT, str(self.port), self.token], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.clients.append(client)
        assert client.stdout is not None and client.stdout.readline() == b"drawing\n"
        new = set(children(self.proc.pid)) - before
        assert len(new) == 1, new  # the app is serve's own child (exec'd, no shell between)
        return client, new.pop()

    def close(self) -> tuple[bytes, bytes]:
        for c in self.clients:
            if c.poll() is None:
                c.kill()
            c.wait()
            c.stdout.close()
        self.stop()
        return b"".join(self.out), b"".join(self.err)


def test_app_ends_when_its_browser_is_killed_and_serve_stops_cleanly(tmp_path):
    demo = write_demo(tmp_path / "demo")
    serve = Serve(demo.root)
    try:
        client, app = serve.connect()
        client.kill()
        assert _wait(lambda: not alive(app), 10), "the app outlived its browser"
        _, app2 = serve.connect()
        serve.proc.send_signal(signal.SIGINT)  # Ctrl-C on serve alone
        assert _wait(lambda: serve.proc.poll() is not None, 60)
        assert _wait(lambda: not alive(app2), 5), "the app outlived serve"
    finally:
        out, err = serve.close()
    text = (out + err).decode("utf-8", "replace")
    assert "Traceback" not in text and "Event loop is closed" not in text and "is closed" not in text, text[-2000:]


def test_app_dies_with_a_killed_server(tmp_path):
    demo = write_demo(tmp_path / "demo")
    serve = Serve(demo.root)
    try:
        _, app = serve.connect()
        os.kill(serve.proc.pid, signal.SIGKILL)  # the server alone, not its group
        serve.proc.wait(timeout=10)
        assert _wait(lambda: not alive(app), 5), "the app was orphaned"
    finally:
        serve.close()
        try:
            os.kill(app, signal.SIGKILL)  # never leave it behind, even when the test fails
        except (ProcessLookupError, UnboundLocalError):
            pass


def test_served_app_exits_on_sigterm_and_on_closed_stdin(tmp_path):
    # The app under the web driver, as textual-serve runs it, with no server at all.
    demo = write_demo(tmp_path / "demo")
    env = dict(os.environ, TEXTUAL_DRIVER="textual.drivers.web_driver:WebDriver", COLUMNS="100", ROWS="30")
    for how in ("term", "eof"):
        proc = subprocess.Popen([sys.executable, "-m", "spillscope", "tui", str(demo.root)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            assert proc.stdout.readline() == b"__GANGLION__\n"
            time.sleep(1)
            if how == "term":
                proc.terminate()
            else:
                proc.stdin.close()
            for stream in (proc.stdout, proc.stderr):  # drain: a blocked writer cannot exit
                threading.Thread(target=stream.read, daemon=True).start()
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, how
