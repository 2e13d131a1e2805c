"""Snapshot tests of the TUI's main views (pytest-textual-snapshot), on the reproducible demo,
at a small (80×24), a common (120×40) and a big (200×50) terminal.

The same views produce screenshots/ (scripts/screenshots.py)."""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from tui_views import DEMO_DIR, SIZES, TEST_VIEWS, make_app, reproducible_demo  # noqa: E402


@pytest.fixture(scope="module")
def demo_lock():
    """The demo's path shows in the snapshots, so it is fixed: one test run at a time uses it."""
    DEMO_DIR.parent.mkdir(parents=True, exist_ok=True)
    with open(DEMO_DIR.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
        fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("name", list(TEST_VIEWS))
def test_main_views(name, size, snap_compare, demo_lock):
    app = make_app(reproducible_demo())
    assert snap_compare(app, run_before=TEST_VIEWS[name], terminal_size=size)
