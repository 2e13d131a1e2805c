#!/usr/bin/env python3
"""Benchmarks for issue 17: `spillscope grep` over a root, the reader's in-message search,
and TranscriptIndex.build — each against a baseline measured in the same run.

    python bench/grep.py             # a 1 GB root (4 transcripts of 256 MB), then one 1 GB message
    python bench/grep.py --size 256  # MB, for both
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen import write_transcript  # noqa: E402

from spillscope.util.text import code_point_slices, js_json_string, js_utf8  # noqa: E402

RARE = "the rare phrase that crosses a fragment line"


def make_root(base: Path, total: int, files: int = 4) -> Path:
    sdir = base / "root" / "session-0123456789ab"
    sdir.mkdir(parents=True)
    for i in range(files):
        path = sdir / f"{i:012x}-session-reference-1.txt"
        write_transcript(path, total // files)
        text = "x" * 50 + RARE + " and more text after it\n"
        with open(path, "ab") as f:
            f.write(b"\n### Message 2: assistant\n\n")
            f.write(b"".join(js_utf8(js_json_string(s)) + b"\n" for s in code_point_slices(text, 64)))
    return base / "root"


def best(fn, repeat: int = 3) -> float:
    t_best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        t_best = min(t_best, time.perf_counter() - t)
    return t_best


def run_rss(cmd: list[str]) -> tuple[float, int, int]:
    """(seconds, peak RSS KiB, exit code) of a fresh process."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    secs = time.perf_counter() - t
    return secs, int(proc.stderr.decode().strip().splitlines()[-1]), proc.returncode


def line(name: str, secs: float, base: float, size: int, extra: str = "") -> None:
    print(f"{name:<58} {secs:7.3f} s {size / secs / 1e6:8.1f} MB/s  {secs / base:5.2f}x baseline  {extra}")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1024, help="total MB of transcripts")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_root(Path(tmp), args.size << 20)
        files = sorted(root.rglob("*.txt"))
        size = sum(f.stat().st_size for f in files)
        print(f"== root of {size / 1e6:.0f} MB ({len(files)} transcripts) ==")
        exe = [sys.executable, "-m", "spillscope", "grep"]
        for needle, what in ((RARE, "rare phrase across a fragment line (4 hits)"),
                             ("absent from every file", "absent phrase (0 hits)")):
            base = min(run_rss(["grep", "-r", "-c", "-F", needle, str(root)])[0] for _ in range(3))
            runs = [run_rss([*exe, needle, str(root), "--json"]) for _ in range(3)]
            secs = min(r[0] for r in runs)
            print(f"baseline grep -r -c -F ({what}): {base:.3f} s")
            line(f"spillscope grep --json: {what}", secs, base, size,
                 f"peak RSS {max(r[1] for r in runs) / 1024:.0f} MB, exit {runs[0][2]}")

        from spillscope.inspect.search import Pattern, search_message_region
        from spillscope.formats.transcript import TranscriptIndex

        for f in files:  # the root is done with: make room for one big message
            f.unlink()
        path = str(Path(tmp) / "one-message-session-reference-1.txt")
        write_transcript(Path(path), args.size << 20)

        def raw() -> None:
            fd = os.open(path, os.O_RDONLY)
            n = 0
            with os.fdopen(fd, "rb", buffering=0) as f:
                while chunk := f.read(1 << 20):
                    n += chunk.count(b"\n")

        one = os.path.getsize(path)
        base = best(raw)
        print(f"\n== one message of {one / 1e6:.0f} MB ==\nbaseline raw read + newline count: {base:.3f} s")
        index = None

        def build() -> None:
            nonlocal index
            index = TranscriptIndex.build(path)

        line("TranscriptIndex.build (= the TUI's background index)", best(build, 2), base, one,
             "target <= 2x; TUI: 1 GB < 3 s")
        assert index is not None
        msg = index.messages[0]
        secs = best(lambda: list(search_message_region(path, msg.start, msg.end, Pattern("absent phrase"))))
        line("reader search in the message (fixed string, 0 hits)", secs, base, one, "target >= 300 MB/s")
        secs = best(lambda: list(search_message_region(path, msg.start, msg.end, Pattern("界 and 😀 out"), limit=5000)))
        line("reader search in the message (5000-hit cap)", secs, base, one)
        passes(path)
    return 0


def passes(path: str) -> None:
    """What one C-level pass over a 1 MiB window of fragment lines costs, against the raw
    read (pread) + newline count of the same MiB: the floor a design of N such passes
    cannot go below, measured without the disk and the rest of the machine's noise."""
    import re

    fd = os.open(path, os.O_RDONLY)
    try:
        chunk = os.pread(fd, 1 << 20, 1 << 20)
        raw_ms = best(lambda: [os.pread(fd, 1 << 20, 1 << 20).count(b"\n") for _ in range(50)]) / 50 * 1e3
    finally:
        os.close(fd)
    chunk = chunk[chunk.find(b"\n") + 1 : chunk.rfind(b"\n") + 1]  # whole fragment lines
    odd = re.compile(rb"\\[u/]")
    ops = {
        "bytes.replace(b'\"\\n\"', b'') (de-framing)": lambda: chunk.replace(b'"\n"', b""),
        "re.search(rb'\\\\[u/]') (non-canonical escapes)": lambda: odd.search(chunk),
        "bytes.find(needle)": lambda: chunk.find(b"absent phrase"),
        "bytes.translate(None, b'\"\\n')": lambda: chunk.translate(None, b'"\n'),
        "bytes.count(b'\\n')": lambda: chunk.count(b"\n"),
        "bytes.split(b'\\n')": lambda: chunk.split(b"\n"),
    }
    scale = (1 << 20) / len(chunk)
    print(f"\n== one pass over 1 MiB of fragment lines (raw pread + newline count: {raw_ms:.2f} ms/MiB) ==")
    for name, fn in ops.items():
        ms = best(lambda: [fn() for _ in range(50)]) / 50 * 1e3 * scale
        print(f"{name:<52} {ms:6.2f} ms/MiB  {ms / raw_ms:5.2f}x raw")


if __name__ == "__main__":
    raise SystemExit(main())
