#!/usr/bin/env python3
"""Claude Code verify over a large projects dir, against a raw read + JSON parse of the same files.

    SPILLSCOPE_CLAUDE_CORPUS=/path/to/claude-code-bug-phantom-reads-17407/dev/misc \\
        python bench/claude.py --gb 1

Builds (once, under --work, default a temp dir) a ``projects`` dir of about ``--gb`` GB by
replicating every project dir of the public corpus (rcgray/claude-code-bug-phantom-reads-17407,
real Claude Code sessions, MIT) with fresh session ids, then measures in separate processes,
alternating, each run's wall time and peak RSS (VmHWM):

* baseline — read every transcript line and ``orjson.loads`` it, and read every spill file;
* verify   — ``spillscope``'s Claude Code dialect: link every spill file, check every link.

Prints each run and the ratio of the medians. Nothing is fetched: without the corpus it says so.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HWM = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
SESSION = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

BASELINE = f"""
import os, sys, orjson
for dirpath, dirs, files in os.walk(sys.argv[1]):
    for name in files:
        path = os.path.join(dirpath, name)
        with open(path, 'rb') as f:
            if name.endswith('.jsonl'):
                for line in f:
                    orjson.loads(line)
            else:
                f.read()
print({HWM})
"""

VERIFY = f"""
import sys, time
from spillscope.dialects import get
from spillscope.dialects.base import Options
r = get('claude').inspect(sys.argv[1], Options(now=time.time()))
assert not [f for f in r.findings if f.code != 'orphan-artifact'], r.summary()
print({HWM}, len(r.files), len(r.links), file=sys.stderr)
print({HWM})
"""


def project_dirs(corpus: Path) -> list[Path]:
    return sorted({p.parent for p in corpus.rglob("*.jsonl") if "subagents" not in p.parts})


def build(corpus: Path, dest: Path, gb: float) -> int:
    """Copies of every project dir with fresh session ids until ``gb`` GB; returns the bytes."""
    projects = project_dirs(corpus)
    total, k = 0, 0
    dest.mkdir(parents=True, exist_ok=True)
    while total < gb * 1e9:
        for src in projects:
            ids = {m for p in src.glob("*.jsonl") for m in SESSION.findall(p.name)}
            ids |= {p.name for p in src.iterdir() if p.is_dir() and SESSION.fullmatch(p.name)}
            fresh = {old: str(uuid.uuid4()) for old in ids}
            out = dest / f"copy{k}-{src.parent.name}-{src.name}"
            for path in src.rglob("*"):
                if not path.is_file() or not (path.suffix == ".jsonl" or "tool-results" in path.parts):
                    continue
                rel = str(path.relative_to(src))
                for old, new in fresh.items():
                    rel = rel.replace(old, new)
                target = out / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                data = path.read_bytes()
                if path.suffix == ".jsonl":
                    for old, new in fresh.items():
                        data = data.replace(old.encode(), new.encode())
                target.write_bytes(data)
                total += len(data)
            k += 1
            if total >= gb * 1e9:
                break
    return total


def run(code: str, tree: Path) -> tuple[float, int]:
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, str(tree)], capture_output=True, text=True, check=True)
    return time.perf_counter() - t, int(proc.stdout.split()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.environ.get("SPILLSCOPE_CLAUDE_CORPUS"))
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", help="where to build the projects dir (kept if given)")
    args = ap.parse_args()
    if not args.corpus or not Path(args.corpus).is_dir():
        print("bench/claude.py: set SPILLSCOPE_CLAUDE_CORPUS (or --corpus) to a local copy of the public "
              "corpus's dev/misc; nothing is fetched")
        return 0
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="spillscope-claude-bench-"))
    tree = work / "projects"
    if not tree.exists():
        t = time.perf_counter()
        size = build(Path(args.corpus), tree, args.gb)
        print(f"built {size / 1e9:.2f} GB in {time.perf_counter() - t:.0f} s: {tree}")
    print(f"load {os.getloadavg()[0]:.2f}")
    times: dict[str, list[float]] = {"baseline": [], "verify": []}
    for _ in range(args.rounds):
        for name, code in (("baseline", BASELINE), ("verify", VERIFY)):
            secs, rss = run(code, tree)
            times[name].append(secs)
            print(f"{name:8} {secs:7.2f} s  peak RSS {rss / 1024:7.1f} MiB  load {os.getloadavg()[0]:.2f}")
    ratio = statistics.median(times["verify"]) / statistics.median(times["baseline"])
    print(f"verify / baseline (medians): {ratio:.2f}x")
    if not args.work:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
