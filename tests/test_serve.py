"""`spillscope serve` in a real headless Chromium: the page loads with no internet,
the app connects and draws, and nothing is fetched from outside the server.

Needs Debian's chromium and `npm ci` in tests/browser (.ci/run does both); without them
the test is skipped, unless SPILLSCOPE_REQUIRE_BROWSER is set (as in CI)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo

HERE = Path(__file__).resolve().parent / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _ready() -> str | None:
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed"
    if shutil.which("node") is None or not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is not installed (npm ci in tests/browser)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shoot(root: Path, logs: Path, out: Path) -> dict:
    """Serve ``root``, load it in Chromium, screenshot to ``out``; returns the page report."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "spillscope", "serve", str(root), "--logs", str(logs),
                               "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(100):
            try:
                page = urllib.request.urlopen(url, timeout=1).read().decode()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("server did not start")
        assert "fonts.googleapis.com" not in page
        proc = subprocess.run(["node", str(HERE / "shot.mjs"), url, str(out)], capture_output=True, text=True,
                              timeout=120, cwd=HERE, env={**os.environ, "CHROMIUM": CHROMIUM})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        # The app processes textual-serve starts outlive SIGINT: stop the whole group.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(server.pid, sig)
            except ProcessLookupError:
                break
            try:
                server.wait(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue


def test_serve_renders_in_headless_chromium(tmp_path):
    why = _ready()
    if why and not os.environ.get("SPILLSCOPE_REQUIRE_BROWSER"):
        pytest.skip(why)
    assert why is None, why
    demo = write_demo(tmp_path / "demo")
    out = tmp_path / "browser.png"
    report = shoot(demo.root, demo.logs, out)
    assert report["connected"], report  # the websocket to the app is up
    assert report["canvas"] and report["painted"] > 5000, report  # the terminal drew the app
    assert report["red"] > 50, report  # the red expired-locator badge is on screen
    assert report["external"] == [], report  # nothing fetched from outside: works offline
    assert out.stat().st_size > 10_000
