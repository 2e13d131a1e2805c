"""Benchmark inputs: huge transcripts and wide spill roots, written fast."""

from __future__ import annotations

import os
from pathlib import Path

from spillscope.util.text import js_json_string, js_utf8
from spillscope.formats.transcript import render_transcript

UNIT = "The spill store keeps 界 and 😀 out of context; line\n"  # mixed widths, a newline


def write_transcript(path: Path, size_bytes: int, messages: int = 1) -> int:
    """A valid transcript of roughly ``size_bytes``: ``messages`` messages of mixed text."""
    head = render_transcript({"sessionId": "bench", "label": "bench", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": []}, 3)
    text = UNIT * 64
    lines = [js_json_string(text[i : i + 64]) for i in range(0, len(text), 64)]
    block = ("\n".join(lines) + "\n").encode()
    per_message = max(1, size_bytes // messages // len(block))
    with open(path, "wb") as f:
        f.write(js_utf8(head))
        for k in range(1, messages + 1):
            f.write(f"\n### Message {k}: {'user' if k % 2 else 'assistant'}\n\n".encode())
            for _ in range(per_message):
                f.write(block)
    # Drop the final newline of the last block? No: the format ends with "\n".
    return os.path.getsize(path)


def write_wide_root(root: Path, dirs: int = 1000, per_dir: int = 100) -> int:
    root.mkdir(parents=True, exist_ok=True)
    n = 0
    for d in range(dirs):
        sdir = root / f"session-{d:012x}"
        sdir.mkdir(mode=0o700, exist_ok=True)
        for i in range(per_dir):
            p = sdir / f"{i:012x}-bash.txt"
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, b"x")
            os.close(fd)
            n += 1
    return n
