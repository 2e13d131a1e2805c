"""`spillscope serve` in a real headless Chromium: the page loads with no internet,
the app connects and draws, and nothing is fetched from outside the server.

Needs Debian's chromium and `npm ci` in tests/browser (.ci/run does both); without them
the test is skipped, unless SPILLSCOPE_REQUIRE_BROWSER is set (as in CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from served import Served

HERE = Path(__file__).resolve().parent / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _ready() -> str | None:
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed"
    if shutil.which("node") is None or not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is not installed (npm ci in tests/browser)"
    return None


def shoot(root: Path, logs: Path, out: Path) -> dict:
    """Serve ``root``, load it in Chromium, screenshot to ``out``; returns the page report."""
    server = Served(root, "--logs", str(logs), "--host", "127.0.0.1")
    try:
        # The URL serve printed, with its token: the page, its files and its socket need it.
        page = urllib.request.urlopen(server.url, timeout=10).read().decode()
        assert "fonts.googleapis.com" not in page
        proc = subprocess.run(["node", str(HERE / "shot.mjs"), server.url, str(out)], capture_output=True, text=True,
                              timeout=120, cwd=HERE, env={**os.environ, "CHROMIUM": CHROMIUM})
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        # The app processes textual-serve starts outlive SIGINT: stop the whole group.
        server.stop()


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
