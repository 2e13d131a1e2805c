"""``spillscope grep`` split across forked workers (inspect/search/split.py) writes what one
process writes: the same bytes on stdout and stderr and the same exit status, for every output
mode, over a root of many session dirs with transcripts, tool outputs, hostile text and
entries that cannot be searched; and the workers' results come back in order, a worker's
exception in its turn, and a reader that stops early leaves no worker behind."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spillscope.formats.transcript import render_transcript
from spillscope.inspect.search import split
from spillscope.util.text import js_utf8

WORDS = ["alpha", "beta", "needle", "NEEDLE", "nEeDlE", "ERROR] timeout", "x" * 70, "界", "😀", "\x1b[31m", "\r\n",
         "\n", "\t", '"', "\\", "\u2028", "e\u0301", "\x00", "ß", "\ufeff"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(2612)
    root = tmp_path_factory.mktemp("split") / "root"
    for s in range(41):  # more dirs than the workers' parts, of uneven sizes
        sdir = root / f"session-{s:012x}"
        sdir.mkdir(parents=True)
        for i in range(rng.randrange(0, 4)):
            (sdir / f"{i:012x}-bash.txt").write_bytes(js_utf8(_text(rng, rng.randrange(1, 400))))
        if s % 3 == 0:
            conv = [{"role": "user" if j % 2 == 0 else "assistant", "text": _text(rng, rng.randrange(1, 300))}
                    for j in range(rng.randrange(1, 4))]
            data = render_transcript({"sessionId": f"s{s}", "label": "l", "cwd": None, "capturedThroughSeq": 3,
                                      "conversation": conv}, 3)
            (sdir / f"{99:012x}-session-reference-1.txt").write_bytes(js_utf8(data))
    # What a search cannot read, in dirs of different parts: a FIFO, a dir where a file belongs,
    # a symlink, a stray entry of the root, a transcript cut off mid-write.
    def sdir(s: int) -> Path:
        return root / f"session-{s:012x}"

    os.mkfifo(sdir(3) / "000000000050-bash.txt")
    (sdir(17) / "000000000051-bash.txt").mkdir()
    (sdir(29) / "000000000052-bash.txt").symlink_to("/etc/hostname")
    (root / "stray.txt").write_text("needle")
    cut = sdir(33) / f"{99:012x}-session-reference-1.txt"
    cut.write_bytes(cut.read_bytes()[:-7])
    return root


def grep(*args: str, processes: int) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "SPILLSCOPE_PROCESSES": str(processes)}
    return subprocess.run([sys.executable, "-m", "spillscope", "grep", *args], capture_output=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("flags", [[], ["--json"], ["-n"], ["-C", "1", "--color", "always"], ["-l"], ["-c", "--json"],
                                   ["-m", "1"], ["-i", "--json"], ["--kind", "transcript", "-n"]],
                         ids=lambda f: " ".join(f) or "plain")
def test_a_split_search_writes_what_one_process_writes(root: Path, flags: list[str]) -> None:
    one = grep("needle", str(root), *flags, processes=1)
    assert one.returncode == 0 and one.stdout and b"symlink" in one.stderr  # something to compare
    for processes in (2, 3):
        many = grep("needle", str(root), *flags, processes=processes)
        assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)


@pytest.mark.parametrize("args", [["-E", r"ERROR\] timeout|\bbeta\b"], ["absent phrase"], ["-E", "(a+)+$"]])
def test_a_split_search_keeps_exit_statuses(root: Path, args: list[str]) -> None:
    one = grep(*args, str(root), "--json", processes=1)
    many = grep(*args, str(root), "--json", processes=4)
    assert (many.returncode, many.stdout, many.stderr) == (one.returncode, one.stdout, one.stderr)
    assert one.returncode in (0, 1)


def test_parts_are_the_roots_entries_in_order(root: Path) -> None:
    got = split.parts(str(root), 8)
    assert got is not None and 2 <= len(got) <= 8
    flat = [item for part in got for item in part]
    from spillscope.inspect.scan.searchable import searchable_plan

    assert flat == searchable_plan(str(root))
    assert split.parts(str(root / f"session-{0:012x}"), 8) is None  # no session dirs: not split
    assert split.parts(str(root / "missing"), 8) is None


def test_results_come_in_order_and_a_workers_exception_in_its_turn() -> None:
    def job(i: int) -> int:
        if i == 5:
            raise ValueError("part 5")
        time.sleep(0.02 * (7 - i))  # later parts finish first
        return i * i

    got: list[int] = []
    with pytest.raises(ValueError, match="part 5"):
        for value in split.map_parts(job, 8, 3):
            got.append(value)
    assert got == [0, 1, 4, 9, 16]


def test_a_reader_that_stops_leaves_no_worker_behind() -> None:
    def job(i: int) -> int:
        if i:
            time.sleep(60)
        return os.getpid()

    t = time.monotonic()
    results = split.map_parts(job, 4, 2)
    worker = next(results)
    results.close()
    assert time.monotonic() - t < 20
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)  # killed and reaped
