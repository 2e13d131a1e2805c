"""`spillscope serve` in a real headless Chromium: the page loads with no internet,
the app connects and draws, and nothing is fetched from outside the server.

Needs Debian's chromium and `npm ci` in tests/browser (.ci/run does both); without them
the test is skipped, unless SPILLSCOPE_REQUIRE_BROWSER is set (as in CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from served import Served, free_port, wait

HERE = Path(__file__).resolve().parent / "browser"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def _ready() -> str | None:
    if not Path(CHROMIUM).exists():
        return "Debian chromium is not installed"
    if shutil.which("node") is None or not (HERE / "node_modules" / "playwright-core").is_dir():
        return "playwright-core is not installed (npm ci in tests/browser)"
    return None


def shoot(root: Path, logs: Path | None, out: Path) -> dict:
    """Serve ``root``, load it in Chromium, screenshot to ``out``; returns the page report."""
    server = Served(root, *(["--logs", str(logs)] if logs is not None else []), "--host", "127.0.0.1")
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


def test_serve_shows_another_agents_tree_and_its_verdict_in_headless_chromium(tmp_path):
    """A Claude Code projects dir served (detected, no --logs): each tab runs the agents'
    view, and a planted fault (a changed byte in a spill file) is drawn as a red FAIL."""
    why = _ready()
    if why and not os.environ.get("SPILLSCOPE_REQUIRE_BROWSER"):
        pytest.skip(why)
    assert why is None, why
    tree = tmp_path / "projects"
    shutil.copytree(Path(__file__).resolve().parent / "fixtures" / "claude" / "projects", tree)
    spill = sorted(tree.glob("*/*/tool-results/*.txt"))[0]
    data = bytearray(spill.read_bytes())
    data[len(data) // 2] ^= 0x01
    spill.write_bytes(bytes(data))
    out = tmp_path / "agent.png"
    report = shoot(tree, None, out)
    assert report["connected"], report
    assert report["canvas"] and report["painted"] > 5000, report
    assert report["red"] > 50, report  # the FAIL verdict and the mismatch badge
    assert report["external"] == [], report


@pytest.mark.parametrize("evil_host", ["127.0.0.1", "localhost"])
def test_a_page_from_another_origin_cannot_reach_serve_in_headless_chromium(tmp_path, evil_host):
    """The attack itself, in a real browser: while the operator's tab is open (its token
    cookie set), a page from another origin — another port of 127.0.0.1 (same site: the
    cookie goes with it) or another name — opens a WebSocket to the app and loads its
    files. None of it may get through."""
    why = _ready()
    if why and not os.environ.get("SPILLSCOPE_REQUIRE_BROWSER"):
        pytest.skip(why)
    assert why is None, why
    demo = write_demo(tmp_path / "demo")
    server = Served(demo.root, "--logs", str(demo.logs))
    evil_port = free_port()
    evil = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(evil_port),
                             "--directory", str(HERE)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait(lambda: _listening(evil_port), 30)
        evil_url = f"http://{evil_host}:{evil_port}/evil.html?target=127.0.0.1:{server.port}"
        proc = subprocess.run(["node", str(HERE / "hostile.mjs"), server.url, evil_url], capture_output=True,
                              text=True, timeout=120, cwd=HERE, env={**os.environ, "CHROMIUM": CHROMIUM})
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout.strip().splitlines()[-1])
    finally:
        evil.terminate()
        evil.wait(10)
        server.stop()
    assert report["connected"], report  # the operator's own tab got in (the control)
    assert report["ws"] != "open" and not report["wsData"], report
    assert report["image"] == "error" and report["script"] == "error", report
    assert "refused GET /ws" in server.stderr()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
