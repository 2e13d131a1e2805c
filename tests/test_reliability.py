"""The short version of bench/reliability.py: corpus, fuzzing, faults, churn and the
read-only audit, all through the real commands. The long version is one command:
`python bench/reliability.py --write docs/reliability.md`."""

import subprocess
import sys
from pathlib import Path


def test_reliability_short_version():
    script = Path(__file__).resolve().parent.parent / "bench" / "reliability.py"
    proc = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "corpus items: 86; with a located finding: 86" in proc.stdout
    assert "ALL PASSED" in proc.stdout
