"""Small files read ahead many at a time (inspect/search/readahead.py, ``_native.read_files``):
each file is what the usual search reads, or nothing where the usual search must say why; and a
dense search that reads ahead finds exactly what one that does not finds."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from spillscope.inspect.scan.searchable import searchable_plan
from spillscope.inspect.search import readahead as RA
from spillscope.inspect.search import root as R
from spillscope.inspect.search.pattern import Pattern
from spillscope.util import native
from spillscope.util.text import js_utf8

nat = native.NATIVE
needs_native = pytest.mark.skipif(nat is None, reason="no native accelerator")


def _cps(data: bytes) -> int:
    try:
        return len(data.decode("utf-8"))
    except UnicodeDecodeError:
        return -1


@needs_native
def test_read_files_reads_each_whole_in_order_with_its_code_points(tmp_path: Path) -> None:
    rng = random.Random(7)
    pieces = [b"", b"plain", "é界😀\u2028\r\n\x00".encode(), b"\xff\xfe bad", b"cut \xe7\x95", b"\xed\xa0\x80",
              bytes(rng.randrange(256) for _ in range(5000)), "a" * 70000 + "😀"]
    paths = []
    for k, data in enumerate(pieces):
        p = tmp_path / f"f{k}"
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
        paths.append(p)
    buf = bytearray(1 << 20)
    got = nat.read_files([os.fsencode(p) for p in paths], 1 << 20, buf)
    assert len(got) == len(paths)
    at = 0
    for p, (offset, size, cps) in zip(paths, got):
        data = p.read_bytes()
        assert (offset, size, cps) == (at, len(data), _cps(data))  # one after another; -1: not valid UTF-8
        assert bytes(buf[offset : offset + size]) == data
        at += size


@needs_native
def test_read_files_leaves_unread_what_the_usual_search_must_open_itself(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 101)
    (tmp_path / "ok").write_bytes(b"fine")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")  # never opened for a blocking read: the call must not hang
    (tmp_path / "link").symlink_to(tmp_path / "ok")
    names = ["big", "missing", "dir", "fifo", "link", "ok"]
    got = nat.read_files([os.fsencode(tmp_path / n) for n in names], 100, bytearray(1000))
    assert [g[2] for g in got] == [-2, -2, -2, -2, -2, 4]
    assert got[-1] == (0, 4, 4)  # nothing of the unread ones took room


@needs_native
def test_read_files_stops_before_the_first_file_that_no_longer_fits(tmp_path: Path) -> None:
    sizes = [40, 30, 31, 10]
    paths = []
    for k, n in enumerate(sizes):
        (tmp_path / f"f{k}").write_bytes(bytes([65 + k]) * n)
        paths.append(os.fsencode(tmp_path / f"f{k}"))
    buf = bytearray(100)
    got = nat.read_files(paths, 100, buf)
    assert got == [(0, 40, 40), (40, 30, 30)]  # 31 more would not fit: the caller asks again
    assert nat.read_files(paths[2:], 100, buf) == [(0, 31, 31), (31, 10, 10)]
    assert nat.read_files([], 100, buf) == []
    with pytest.raises(TypeError):
        nat.read_files(["not bytes"], 100, buf)
    with pytest.raises(ValueError):  # as os.open: a NUL never makes a shorter path to another file
        nat.read_files([paths[0] + b"\x00x"], 100, buf)


def test_read_events_cut_runs_of_any_size_into_batches() -> None:
    from spillscope.inspect.search.records import MessageHit

    t = R._Target("/r/s/000000000001-bash.txt", "tool-output", None, "/r/s", None)
    runs = [[MessageHit(i, i + 1, i, i + 1) for i in range(k, k + n)] for k, n in ((0, 7), (7, 1), (8, 12))]
    batches = list(R._read_events(t, iter(runs), 3))
    assert [len(b) for b in batches] == [3] * 6 + [2]
    assert [h.start for b in batches for h in b] == list(range(20))
    assert all(h.path == t.path and h.message is None and h.seen is None for b in batches for h in b)


@needs_native
def test_read_ahead_hands_on_each_target_in_order_with_its_bytes_while_they_are_valid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A buffer of a few files: a group is read in several calls, each once the files before are taken.
    monkeypatch.setattr(RA, "FILES", 7)
    monkeypatch.setattr(RA, "ROOM", 300)
    monkeypatch.setattr(RA, "EACH", 120)
    monkeypatch.setattr(RA, "_spare", [])
    rng = random.Random(3)
    targets: list[tuple[str, bool]] = []
    for k in range(40):
        p = tmp_path / f"f{k:02}"
        data = bytes(rng.choice(b"ab\xc3\xa9\xff") for _ in range(rng.randrange(0, 160)))
        p.write_bytes(data)
        targets.append((str(p), rng.random() < 0.8))  # some not asked for
    seen = []
    for (path, wanted), read in RA.read_ahead(targets, lambda t: t[0] if t[1] else None):
        data = Path(path).read_bytes()
        expected = wanted and len(data) <= RA.EACH and _cps(data) >= 0
        assert (read is not None) == expected, path
        if read is not None:
            assert bytes(read.data) == data and read.counts == (_cps(data), len(data))
        seen.append(path)
    assert seen == [t[0] for t in targets]
    assert len(RA._spare) == 1  # its buffer kept for the next read-ahead


def _root(base: Path) -> Path:
    rng = random.Random(26)
    words = ["needle", "NEEDLE", "ERROR] timeout x failed", "界", "😀", "\x1b[31m", "\r\n", "\n", "é", "\u2028",
             "\x00", "alpha", "beta", "ß"]
    root = base / "root"
    for s in range(12):
        sdir = root / f"session-{s:012x}"
        sdir.mkdir(parents=True)
        for i in range(rng.randrange(1, 9)):
            text = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 300)))
            (sdir / f"{i:012x}-bash.txt").write_bytes(js_utf8(text))
    sdir = root / f"session-{3:012x}"
    (sdir / "000000000070-bash.txt").write_bytes(b"needle \xff\xfe needle")  # invalid UTF-8: U+FFFD
    (sdir / "000000000071-bash.txt").write_bytes(("needle " * 400).encode())  # bigger than EACH here
    (sdir / "000000000072-bash.txt").write_bytes(b"")
    os.mkfifo(sdir / "000000000073-bash.txt")
    (sdir / "000000000074-bash.txt").symlink_to(sdir / "000000000000-bash.txt")
    return root


def _events(root: Path, pattern: Pattern, dense: bool, **kw: Any) -> tuple[list[Any], list[str]]:
    """The hits in order, and the findings (their order is the walk's timing against the check's)."""
    plan = searchable_plan(str(root))
    hits: list[Any] = []
    findings: list[str] = []
    for ev in R.search_root_batches(root, pattern, part=plan, dense=dense, **kw):
        if isinstance(ev, list):
            hits.extend(tuple(h) for h in ev)
        else:
            findings.append(repr(ev))
    return hits, sorted(findings)


@needs_native
@pytest.mark.parametrize("pattern", [Pattern("needle"), Pattern("NEEDLE", ignore_case=True),
                                     Pattern(r"ERROR\] timeout \w+ failed", regex=True), Pattern("界 😀"),
                                     Pattern(r"(?m)^\S+", regex=True), Pattern("\ufffd")],
                         ids=["fixed", "-i", "-E", "astral", "anchored", "replacement"])
@pytest.mark.parametrize("kw", [{}, {"context": False}, {"max_count": 2}], ids=["context", "spans", "max"])
def test_a_dense_search_reading_ahead_finds_what_one_that_does_not_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: Pattern, kw: dict[str, Any]) -> None:
    root = _root(tmp_path)
    monkeypatch.setattr(R.prefilter, "THREADS", 1)  # as a worker of a split search: the simple loop
    monkeypatch.setattr(RA, "EACH", 1000)
    monkeypatch.setattr(RA, "ROOM", 2500)
    monkeypatch.setattr(RA, "_spare", [])
    calls = []
    monkeypatch.setattr(RA, "native", type("N", (), {"NATIVE": _Counting(calls)}))
    ahead = _events(root, pattern, True, **kw)
    assert calls  # the dense search did read ahead
    monkeypatch.setattr(RA, "native", type("N", (), {"NATIVE": None}))  # read_ahead hands on no bytes
    assert ahead == _events(root, pattern, True, **kw) == _events(root, pattern, False, **kw)
    assert ahead[0] and ahead[1]  # something to compare: hits, and the FIFO's and the symlink's findings


class _Counting:
    def __init__(self, calls: list[int]) -> None:
        self.calls = calls

    def read_files(self, paths: list[bytes], each: int, out: bytearray) -> list[tuple[int, int, int]]:
        assert nat is not None
        got = nat.read_files(paths, each, out)
        self.calls.append(len(got))
        return got
