#!/usr/bin/env python3
"""Issue 26: ``spillscope grep`` against ripgrep and GNU grep, in the same run, on a realistic
mixed spill root and on a root of huge transcripts.

The mixed root is built from random words: tool outputs of 8-120 KB in every session, and in a
quarter of the sessions a transcript of 0.2-3 MB (written as the writer writes one: 64-code-point
fragment lines). Rows: a fixed string with a rare hit, an absent one, ``-i``, and an ``-E``
regex; each the best of ``--repeat`` runs of a fresh process (start-up included), against
``rg -c`` and ``grep -r -c`` with the same flags. Then catastrophic regexes against a plain one
(linear time), and the empty-root start-up. The machine is shared: the load averages are printed
with the figures, and the ratios are what counts.

    pip install -r bench/requirements.txt   # ripgrep
    python bench/grep_mixed.py                       # ~1 GB mixed root, then 1 GB of transcripts
    python bench/grep_mixed.py --size 300 --transcripts 256   # MB
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gen import write_transcript  # noqa: E402

from spillscope.util.text import code_point_slices, js_json_string  # noqa: E402

RARE = "quartzite handover protocol"
ABSENT = "nothing anywhere like this phrase"
REGEX = r"ERROR\] timeout \w+ failed"
TITLE = "# Session reference transcript (spill file)\n\n"


def words(rng: random.Random, n: int = 4000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(n)]


def text_block(rng: random.Random, vocab: list[str], size: int) -> str:
    out, n = [], 0
    while n < size:
        line = " ".join(rng.choice(vocab) for _ in range(rng.randint(4, 16)))
        if rng.random() < 0.002:
            line += f" ERROR] timeout {rng.choice(vocab)} failed"
        out.append(line)
        n += len(line) + 1
    return "\n".join(out) + "\n"


def transcript_bytes(template: bytes, texts: list[str]) -> bytes:
    parts = [template]
    for k, text in enumerate(texts, 1):
        parts.append(f"\n### Message {k}: {'user' if k % 2 else 'assistant'}\n\n".encode())
        parts.append(b"".join(js_json_string(s).encode() + b"\n" for s in code_point_slices(text, 64)))
    return b"".join(parts)


def make_mixed(base: Path, total: int, seed: int = 26) -> tuple[Path, int, int]:
    """(root, files, bytes): sessions of 8-120 KB tool outputs, a quarter with a 0.2-3 MB transcript."""
    from spillscope.formats.transcript import render_transcript

    rng = random.Random(seed)
    vocab = words(rng)
    pool = text_block(rng, vocab, 4 << 20)  # sliced for every file: fast to write, still random words
    head = render_transcript({"sessionId": "bench", "label": "bench", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": []}, 3).encode()
    root = base / "mixed"
    written = files = 0
    s = 0
    while written < total:
        sdir = root / f"session-{s:012x}"
        sdir.mkdir(parents=True)
        for i in range(rng.randint(2, 8)):
            size = rng.randint(8 << 10, 120 << 10)
            at = rng.randrange(len(pool) - size)
            text = pool[at : at + size]
            if rng.random() < 0.01:
                text += RARE + "\n"
            (sdir / f"{i:012x}-bash.txt").write_bytes(text.encode())
            written += len(text)
            files += 1
        if s % 4 == 0:
            texts = []
            for _ in range(rng.randint(2, 6)):
                size = rng.randint(200 << 10, 3 << 20) // 4
                at = rng.randrange(len(pool) - size)
                texts.append(pool[at : at + size] + (RARE if rng.random() < 0.05 else ""))
            data = transcript_bytes(head, texts)
            (sdir / f"{99:012x}-session-reference-1.txt").write_bytes(data)
            written += len(data)
            files += 1
        s += 1
    return root, files, written


def make_transcripts(base: Path, total: int, files: int = 8) -> Path:
    """``files`` transcripts of one huge message each, the rare phrase at the end of each (a hit
    whose offsets need the whole message counted)."""
    root = base / "transcripts" / "session-0123456789ab"
    root.mkdir(parents=True)
    for i in range(files):
        path = root / f"{i:012x}-session-reference-1.txt"
        write_transcript(path, total // files)
        with open(path, "ab") as f:
            f.write(js_json_string(RARE).encode() + b"\n")
    return root.parent


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> tuple[float, int]:
    t_best, code = float("inf"), -1
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        t_best, code = min(t_best, time.perf_counter() - t), proc.returncode
    return t_best, code


def rg_path() -> str:
    found = shutil.which("rg") or str(Path(sys.executable).parent / "rg")
    if not os.path.exists(found):
        sys.exit("ripgrep not found: pip install -r bench/requirements.txt")
    return found


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def table(root: Path, repeat: int, what: str) -> None:
    rg = rg_path()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ss = [sys.executable, "-m", "spillscope", "grep"]
    print(f"\n| {what} | spillscope grep --json | rg -c | grep -r -c | spillscope / rg | spillscope / grep | bound |")
    print("|---|---|---|---|---|---|---|")
    rows = [("fixed, rare hit", [RARE], ["-F"], 2), ("fixed, absent", [ABSENT], ["-F"], 2),
            ("fixed, `-i`", ["-i", RARE.upper()], ["-F"], 2), (f"`-E '{REGEX}'`", ["-E", REGEX], ["-E"], 3)]
    for name, args, gflag, bound in rows:
        pat = args[-1]
        extra = ["-i"] if "-i" in args else []
        # The three take turns, a run each, so that each sees the machine as the others do: a
        # row run tool after tool gave the first one whatever was still going on (the root's
        # write-out, the last root's removal) and the last one a quiet machine.
        ours = theirs = gnu = float("inf")
        code = -1
        for _ in range(repeat):
            t, code = best([*ss, *args, str(root), "--json"], 1, env)
            ours = min(ours, t)
            theirs = min(theirs, best([rg, "-c", *(["-F"] if gflag == ["-F"] else []), *extra, pat, str(root)], 1)[0])
            gnu = min(gnu, best(["grep", "-r", "-c", *gflag, *extra, pat, str(root)], 1)[0])
        ratio = ours / theirs
        print(f"| {name} | {ours:.3f} s (exit {code}) | {theirs:.3f} s | {gnu:.3f} s | {ratio:.2f}x "
              f"{'✔' if ratio <= bound else '✘'} | {ours / gnu:.2f}x | {bound}x |")
    print(f"(load average {load()})")


def redos(base: Path, repeat: int) -> None:
    d = base / "redos" / "session-0123456789ab"
    d.mkdir(parents=True)
    (d / "000000000001-bash.txt").write_bytes(b"a" * (1 << 20) + b"!")
    (d / "000000000002-bash.txt").write_bytes(b"x" * (1 << 20) + b"!")
    ss = [sys.executable, "-m", "spillscope", "grep", "-E"]
    plain, _ = best([*ss, "ab", str(d.parent)], repeat)
    print(f"\n== catastrophic regexes over 2 MB of a/x (a plain regex: {plain:.3f} s; load {load()}) ==")
    for p in ["(a+)+$", "(a|aa)*c", "(x+x+)+y", "(a*)*b", "(.*a){20}", r"(\w{1,30}){1,30}!"]:
        secs, _ = best([*ss, p, str(d.parent)], repeat)
        print(f"{p:<22} {secs:.3f} s  {secs / plain:.2f}x plain")


def settle() -> None:
    """The root just written is written out before anything is timed: else the kernel writes
    its gigabyte back some 30 s later (``vm.dirty_expire_centisecs``), in the middle of a
    table, and its flusher threads take CPU from whichever tool is timed then (on two
    CPUs, a row of the transcripts table took 0.34 s in one run and 0.22 s in the next)."""
    os.sync()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=1024, help="MB of the mixed root")
    p.add_argument("--transcripts", type=int, default=1024, help="MB of the transcripts root (8 files)")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    print(f"load average at start: {load()}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        t = time.perf_counter()
        root, files, size = make_mixed(base, args.size << 20)
        settle()
        print(f"mixed root: {files} files, {size / 1e9:.2f} GB (built in {time.perf_counter() - t:.0f} s)")
        empty = base / "empty"
        empty.mkdir()
        start, _ = best([sys.executable, "-m", "spillscope", "grep", "x", str(empty)], args.repeat)
        print(f"`spillscope grep x EMPTY_DIR` (start-up to the first byte searched, and out): {start:.3f} s")
        table(root, args.repeat, f"mixed, {size / 1e9:.2f} GB, {files} files")
        shutil.rmtree(root)
        if args.transcripts:
            troot = make_transcripts(base, args.transcripts << 20)
            settle()
            tsize = sum(f.stat().st_size for f in troot.rglob("*.txt"))
            table(troot, args.repeat, f"transcripts, {tsize / 1e9:.2f} GB, 8 files")
            shutil.rmtree(troot)
        redos(base, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
