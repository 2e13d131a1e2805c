#!/usr/bin/env python3
"""Benchmarks for issue 17: `spillscope grep` over a root, the reader's in-message search,
and TranscriptIndex.build — each against a baseline measured in the same run, each on both
scanner paths: the C accelerator (``spillscope._native``) and the pure-Python fallback
(``SPILLSCOPE_NO_NATIVE=1`` for the CLI, ``util.native.NATIVE = None`` in process).

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
#: At the very end of each file's big message 1: its offsets need everything before it counted.
DEEP = "the deep phrase at the end of a huge message"


def make_root(base: Path, total: int, files: int = 4) -> Path:
    sdir = base / "root" / "session-0123456789ab"
    sdir.mkdir(parents=True)
    for i in range(files):
        path = sdir / f"{i:012x}-session-reference-1.txt"
        write_transcript(path, total // files)
        text = "x" * 50 + RARE + " and more text after it\n"
        with open(path, "ab") as f:
            f.write(js_utf8(js_json_string(DEEP)) + b"\n")
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


#: The two scanner paths: (name, extra environment of the CLI, in-process ``native.NATIVE``).
PATHS = ("native", "python")


def cli_env(path: str) -> dict[str, str]:
    env = dict(os.environ)
    # An installed package has its .pyc files; a PYTHONDONTWRITEBYTECODE shell would make
    # every run compile the whole CLI again (~0.1 s), which no user pays.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if path == "python":
        env["SPILLSCOPE_NO_NATIVE"] = "1"
    return env


def run_rss(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int, int]:
    """(seconds, peak RSS KiB, exit code) of a fresh process."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=env)
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
        run_rss([*exe, RARE, str(root), "--json"], cli_env("native"))  # writes the .pyc files once
        print(f"empty-root startup of `spillscope grep`: "
              f"{min(run_rss([*exe, 'x', str(Path(tmp) / 'none')], cli_env('native'))[0] for _ in range(3)):.3f} s")
        for needle, what, flags in ((RARE, "rare phrase across a fragment line (4 hits)", []),
                                    (DEEP, "phrase at the end of each big message (4 hits)", []),
                                    ("absent from every file", "absent phrase (0 hits)", []),
                                    (RARE.upper(), "-i, the rare phrase in capitals (4 hits)", ["-i"])):
            base = min(run_rss(["grep", "-r", "-c", "-F", *flags, needle, str(root)])[0] for _ in range(3))
            print(f"baseline {' '.join(['grep -r -c -F', *flags])} ({what}): {base:.3f} s")
            for path in PATHS:
                runs = [run_rss([*exe, *flags, needle, str(root), "--json"], cli_env(path)) for _ in range(3)]
                secs = min(r[0] for r in runs)
                line(f"spillscope grep --json [{path}]: {what}", secs, base, size,
                     f"peak RSS {max(r[1] for r in runs) / 1024:.0f} MB, exit {runs[0][2]}")

        # A common phrase: the cost is then per hit (each one a JSON line), not per byte.
        common = Path(tmp) / "common" / "session-0123456789ab"
        common.mkdir(parents=True)
        write_transcript(common / "000000000000-session-reference-1.txt", 16 << 20)
        word = "context"
        nhits = sum(1 for _ in subprocess.run([*exe, word, str(common.parent), "--json"], env=cli_env("native"),
                                              capture_output=True, check=True).stdout.splitlines())
        base = min(run_rss(["grep", "-r", "-c", "-F", word, str(common.parent)])[0] for _ in range(3))
        secs = min(run_rss([*exe, word, str(common.parent), "--json"], cli_env("native"))[0] for _ in range(3))
        print(f"\n== a common phrase: {word!r} in 16 MB, {nhits} hits ==\nbaseline grep -r -c -F: {base:.3f} s\n"
              f"spillscope grep --json [native]: {secs:.3f} s, {secs / nhits * 1e6:.1f} us per hit, "
              f"{secs / base:.0f}x baseline (the output is {nhits} JSON lines; --max-count bounds it)\n")

        from spillscope.inspect.search.pattern import Pattern
        from spillscope.inspect.search.transcript import search_message_region
        from spillscope.formats.transcript import TranscriptIndex
        from spillscope.util import native

        built = native.NATIVE
        if built is None:
            print("(no native accelerator in this install: the [native] rows are the Python path too)")

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
        for which in PATHS:
            native.NATIVE = built if which == "native" else None
            index = None

            def build() -> None:
                nonlocal index
                index = TranscriptIndex.build(path)

            def background() -> None:
                # The TUI: open (the first screen), then a worker advancing step by step.
                bg = TranscriptIndex.open(path)
                while not bg.advance(1):
                    pass

            line(f"TranscriptIndex.build [{which}]", best(build, 2), base, one, "target <= 2x")
            line(f"the TUI's background index (open + advance(1)...) [{which}]", best(background, 2), base, one,
                 "target: 1 GB < 3 s")
            assert index is not None
            msg = index.messages[0]
            secs = best(lambda: list(search_message_region(path, msg.start, msg.end, Pattern("absent phrase"))))
            line(f"reader search, fixed string, 0 hits [{which}]", secs, base, one, "target >= 300 MB/s")
            secs = best(lambda: list(search_message_region(path, msg.start, msg.end, Pattern("界 and 😀 out"),
                                                           limit=5000)))
            line(f"reader search, 5000-hit cap [{which}]", secs, base, one)
        native.NATIVE = built
        passes(path)
    return 0


def passes(path: str) -> None:
    """What one C-level pass over a 1 MiB window of fragment lines costs, against the raw
    read (pread) + newline count of the same MiB: the floor a design of N such passes
    cannot go below, measured without the disk and the rest of the machine's noise."""
    import re

    from spillscope.util import native

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
    nat = native.NATIVE
    if nat is not None:
        data = nat.deframe(chunk)
        assert data is not None
        ops["native deframe (all the checks, the escaped text out)"] = lambda: nat.deframe(chunk)
        ops["native canonical (the escape guard)"] = lambda: nat.canonical(data)
        ops["native index_lines (decode-free counting + checkpoints)"] = (
            lambda: nat.index_lines(chunk, len(chunk), False, 0, 1 << 20, 0, 0, 0, 0))
    scale = (1 << 20) / len(chunk)
    print(f"\n== one pass over 1 MiB of fragment lines (raw pread + newline count: {raw_ms:.2f} ms/MiB) ==")
    for name, fn in ops.items():
        ms = best(lambda: [fn() for _ in range(50)]) / 50 * 1e3 * scale
        print(f"{name:<52} {ms:6.2f} ms/MiB  {ms / raw_ms:5.2f}x raw")


if __name__ == "__main__":
    raise SystemExit(main())
