"""The package is mypy-clean under --strict (pyproject's [tool.mypy]) and pyflakes-clean."""

import subprocess
import sys
from pathlib import Path


def test_mypy_strict_clean():
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=repo, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pyflakes_clean():
    """No unused imports or dead locals in the package, its tests, benchmarks or scripts:
    an unused name is often a check that was meant and never made."""
    repo = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "pyflakes", "src", "tests", "scripts", "bench/run.py"],
                          cwd=repo, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
