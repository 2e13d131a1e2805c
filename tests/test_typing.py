"""The package is mypy-clean under --strict (pyproject's [tool.mypy])."""

import subprocess
import sys
from pathlib import Path


def test_mypy_strict_clean():
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=repo, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
