"""The demo is reproducible (issue 27, item 13): every `spillscope demo` writes the same
files, with the same bytes, at the same paths, so a path noted from the last run (or
read in the README) still names the file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path


def _tree(base: Path) -> dict[str, str]:
    """Every file under ``base``: its relative path and its bytes' digest."""
    out = {}
    for d, _, files in os.walk(base):
        for name in files:
            path = Path(d) / name
            out[str(path.relative_to(base))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _demo(where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", "demo", str(where), "--no-tui"], capture_output=True,
                          text=True, timeout=120, check=True)


def test_every_demo_writes_the_same_paths_and_bytes(tmp_path):
    first = _demo(tmp_path / "demo")
    before = _tree(tmp_path / "demo")
    second = _demo(tmp_path / "demo")  # rewritten in place, as `spillscope demo` does
    assert _tree(tmp_path / "demo") == before
    names = [line.split()[-1] for line in first.stdout.splitlines() if line.startswith("  ")]
    assert names and names == [line.split()[-1] for line in second.stdout.splitlines() if line.startswith("  ")]
    # Elsewhere: the same names (the logs' locators name the root they were written under).
    _demo(tmp_path / "other")
    assert sorted(_tree(tmp_path / "other")) == sorted(before)
