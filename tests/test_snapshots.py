"""Snapshot tests of the TUI's main views (pytest-textual-snapshot), on the reproducible demo.

The same views produce screenshots/ (scripts/screenshots.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from tui_views import SIZE, VIEWS, make_app, reproducible_demo  # noqa: E402


@pytest.mark.parametrize("name", list(VIEWS))
def test_main_views(name, snap_compare):
    app = make_app(reproducible_demo())
    assert snap_compare(app, run_before=VIEWS[name], terminal_size=SIZE)
