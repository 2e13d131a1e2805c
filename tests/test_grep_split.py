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
        # stdout byte for byte; the findings on stderr the same, each part's in its turn (one
        # process's walk runs ahead of its search, so its order is the walk's timing)
        assert (many.returncode, many.stdout) == (one.returncode, one.stdout)
        assert sorted(many.stderr.splitlines()) == sorted(one.stderr.splitlines())


def test_a_split_search_loads_the_searchers_and_pickle_once_before_it_forks(root: Path) -> None:
    # -X importtime writes a line per module each process imports: a module the parent loaded
    # before forking is its workers' too, one each imports after is listed once per worker.
    env = {**os.environ, "SPILLSCOPE_PROCESSES": "3", "PYTHONDONTWRITEBYTECODE": "1"}
    got = subprocess.run([sys.executable, "-X", "importtime", "-m", "spillscope", "grep", "-E", r"\bneedle\b",
                          str(root)], capture_output=True, env=env, timeout=120)
    assert got.returncode == 0 and got.stdout.count(b"\n") > 3  # split: a dense search of many dirs
    names = [line.rsplit(b"|", 1)[-1].strip() for line in got.stderr.splitlines() if line.startswith(b"import time:")]
    for module in (b"spillscope.inspect.search.transcript", b"spillscope.inspect.search.tool", b"pickle"):
        assert names.count(module) == 1, module


@pytest.mark.parametrize("args", [["-E", r"ERROR\] timeout|\bbeta\b"], ["absent phrase"], ["-E", "(a+)+$"]])
def test_a_split_search_keeps_exit_statuses(root: Path, args: list[str]) -> None:
    one = grep(*args, str(root), "--json", processes=1)
    many = grep(*args, str(root), "--json", processes=4)
    assert (many.returncode, many.stdout) == (one.returncode, one.stdout)
    assert sorted(many.stderr.splitlines()) == sorted(one.stderr.splitlines())
    assert one.returncode in (0, 1)


def test_a_split_search_started_with_sigchld_ignored_keeps_its_exit_status(root: Path) -> None:
    """SIGCHLD ignored (inherited across exec) reaps the workers by itself: waiting for one
    finds none, which is no error."""
    import signal

    def ignore() -> None:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    env = {**os.environ, "SPILLSCOPE_PROCESSES": "2"}
    proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "needle", str(root), "--json"],
                          capture_output=True, env=env, timeout=120, preexec_fn=ignore)
    assert proc.returncode == 0 and proc.stdout and b"No child processes" not in proc.stderr


def test_parts_are_the_roots_entries_in_order_for_a_dense_search_only(root: Path) -> None:
    """A dense search (most files may match: a record per hit) is split, in the root's order;
    a rare or absent needle's (the native check, on every core already) is not, nor a root
    without session dirs; a missing root has no plan (the unsplit search says why)."""
    from spillscope.inspect.scan.searchable import searchable_plan
    from spillscope.inspect.search.pattern import Pattern

    plan = searchable_plan(str(root))
    assert plan is not None
    for pattern in (Pattern("needle"), Pattern("NEEDLE", ignore_case=True), Pattern(r"\w+", regex=True)):
        got = split.parts(str(root), plan, 8, pattern)
        assert got is not None and 2 <= len(got) <= 8
        assert [item for part in got for item in part] == plan
    for pattern in (Pattern("absent phrase"), Pattern("ABSENT", ignore_case=True), Pattern("x{3}absent", regex=True)):
        assert split.parts(str(root), plan, 8, pattern) is None
    one = str(root / f"session-{0:012x}")
    assert split.parts(one, searchable_plan(one) or [], 8, Pattern("needle")) is None  # no session dirs
    assert searchable_plan(str(root / "missing")) is None  # unusable: the unsplit search says why


class _Odd(Exception):
    def __init__(self, where: str, line: int) -> None:  # args other than __init__'s: no pickle round trip
        super().__init__(f"{where}:{line}")


def test_pieces_and_results_come_in_order_and_a_workers_exception_in_its_turn() -> None:
    """Each job's pieces (handed over as it goes) and then its result, part by part in order
    whatever order the workers finish in; a job's exception raised in its turn, after the
    pieces it sent; one that does not survive pickling said as what it was."""
    def job(i: int, send) -> str:  # type: ignore[no-untyped-def]
        time.sleep(0.02 * (7 - i))  # later parts finish first
        send(f"{i}a")
        send(f"{i}b")
        if i == 5:
            raise ValueError("part 5")
        return f"{i}."

    got: list[str] = []
    with pytest.raises(ValueError, match="part 5"):
        for value in split.map_parts(job, 8, 3):
            got.append(value)
    assert got == [f"{i}{x}" for i in range(5) for x in "ab."] + ["5a", "5b"]

    def odd(i: int, send) -> str:  # type: ignore[no-untyped-def]
        raise _Odd("file", i)

    with pytest.raises(RuntimeError, match="_Odd: file:0"):
        list(split.map_parts(odd, 2, 2))


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_a_worker_goes_on_to_its_next_part_while_its_finished_output_waits(tmp_path: Path) -> None:
    """A part's output of a few hundred KB waits in its pipe for the parts before it to be read,
    and its worker meanwhile searches its next part (with a pipe of 64 KiB it waited, idle)."""
    marker = tmp_path / "part 3 begun"

    def job(i: int, send) -> str:  # type: ignore[no-untyped-def]
        if i == 1:
            return "x" * 300_000
        if i == 3:
            marker.touch()
            return "3"
        if i == 0:
            end = time.monotonic() + 10
            while not marker.exists() and time.monotonic() < end:
                time.sleep(0.01)
            return "part 3 begun meanwhile" if marker.exists() else "part 3 waited"
        return str(i)

    got = list(split.map_parts(job, 4, 2))  # one worker: part 0; the other: parts 1, 2, 3
    assert got[0] == "part 3 begun meanwhile"
    assert got[1:] == ["x" * 300_000, "2", "3"]


def test_a_slow_part_holds_back_no_other_worker() -> None:
    """A worker takes the next part not yet taken whenever it is done: while one worker is on a
    slow part, the other searches every part after it (taken in turn, w, w + 2, …, the slow
    part's worker would have had half of them, done after it)."""
    def job(i: int, send) -> tuple[int, float]:  # type: ignore[no-untyped-def]
        if i == 0:
            time.sleep(1.5)
        return os.getpid(), time.monotonic()

    got = list(split.map_parts(job, 8, 2))
    slow = got[0][0]
    assert {pid for pid, _ in got[1:]} == {got[1][0]} != {slow}  # all of them, by the other worker
    assert all(t < got[0][1] for _, t in got[1:])  # and done while part 0 was


def test_a_worker_that_dies_is_an_error_not_a_wait() -> None:
    """A worker gone mid-part (killed: its pipe ends without the part's end) is said as an error
    as soon as every other worker has ended or is waiting its turn, never waited for."""
    def job(i: int, send) -> str:  # type: ignore[no-untyped-def]
        if i == 2:
            send("2a")
            os.kill(os.getpid(), 9)
        return str(i)

    got: list[str] = []
    t = time.monotonic()
    with pytest.raises(RuntimeError, match="ended without its results"):
        for value in split.map_parts(job, 6, 2):
            got.append(value)
    assert got == ["0", "1", "2a"] and time.monotonic() - t < 20


def test_outputs_bigger_than_a_pipe_come_whole_and_in_order() -> None:
    """A part's output of several MB (more than its worker's pipe holds, read in many reads)
    comes whole, in the parts' order, whichever worker is done first."""
    def job(i: int, send) -> bytes:  # type: ignore[no-untyped-def]
        time.sleep(0.01 * (i % 3))
        send(bytes([i]) * (3 << 20))
        return bytes([i]) * (i << 18)

    got = list(split.map_parts(job, 6, 3))
    assert got == [x for i in range(6) for x in (bytes([i]) * (3 << 20), bytes([i]) * (i << 18))]


def test_the_parts_numbers_fit_their_pipe() -> None:
    """The parts' numbers are written at once, before any worker starts, into an empty pipe:
    never more than PIPE_BUF bytes (a pipe past a user's limits holds no more; a bigger write
    would wait for ever), so a search is never cut into more parts than that."""
    import select

    from spillscope.inspect.search.pattern import Pattern

    assert split.MAX_PARTS * 4 <= select.PIPE_BUF
    plan: list = [(f"/r/session-{i:012x}", [f"f{i}"]) for i in range(5000)]  # type: ignore[type-arg]
    got = split.parts("/r", plan, 10_000, Pattern(r"\w", regex=True))  # no literal: dense, nothing read
    assert got is not None and len(got) <= split.MAX_PARTS
    with pytest.raises(ValueError):
        list(split.map_parts(lambda i, send: i, split.MAX_PARTS + 1, 2))


def test_a_reader_that_stops_leaves_no_worker_behind() -> None:
    def job(i: int, send) -> int:  # type: ignore[no-untyped-def]
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


def test_a_parts_output_is_handed_over_in_pieces_and_written_the_same(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A worker hands its output over whenever it holds SPOOL characters (a dense pattern's
    output is never held whole): with pieces of a few hundred characters the output is the
    same as one process's."""
    from spillscope.frontends.cli import grep as G
    from spillscope.frontends.cli.main import main

    outs = []
    for processes, spool in (("1", G.SPOOL), ("2", 300), ("3", 1)):
        monkeypatch.setenv("SPILLSCOPE_PROCESSES", processes)
        monkeypatch.setattr(G, "SPOOL", spool)
        assert main(["grep", "-E", "needle|beta", str(root), "-n"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] and outs[1] == outs[0] and outs[2] == outs[0]
