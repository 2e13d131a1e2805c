"""A search with no session logs finds its artifacts from directory entries alone
(inspect/scan/searchable.py); the artifacts, their order and kinds, and the findings that stop
one being searched are those of the search through the full inspection, on every hostile
layout the scan knows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from spillscope.inspect.search import root as R


def _hostile(root: Path) -> None:
    s = root / "session-0123456789ab"
    s.mkdir(mode=0o700)
    (s / "000000000001-bash.txt").write_bytes(b"tool output")
    (s / "000000000002-session-reference-1.txt").write_bytes(b"not a transcript at all\n")
    (s / "000000000003-session-reference-2.txt").write_bytes(b"")
    (s / "not-an-artifact-name.txt").write_bytes(b"x")
    (s / "000000000004-bash.txt").symlink_to("/etc/hostname")
    (s / "000000000005-dangling.txt").symlink_to("/nonexistent/x")
    (s / "000000000006-dir.txt").mkdir()
    os.mkfifo(s / "000000000007-fifo.txt")
    (s / "000000000008-bash.txt").write_bytes(b"mode 0644")
    (s / "000000000008-bash.txt").chmod(0o644)
    (s / "000000000009-b\u00e9\u200f.txt").write_bytes(b"odd name")
    (root / "stray-file").write_bytes(b"x")
    (root / "session-0123").mkdir()
    (root / "session-aaaaaaaaaaaa").symlink_to(s)
    (root / "session-bbbbbbbbbbbb").write_bytes(b"a file named like a session dir")
    wide = root / "session-cccccccccccc"
    wide.mkdir(mode=0o755)
    for i in range(50):
        (wide / f"{i:012x}-t{i}.txt").write_bytes(b"x" * i)


def _same(root: str) -> None:
    fast = R._local_targets(root)
    slow = R._linked_targets(root, None, None)
    assert fast[0] == slow[0]
    assert sorted(map(repr, fast[1])) == sorted(map(repr, slow[1]))


def test_the_demo_root(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    write_demo(demo)
    root = next(p for p in demo.rglob("session-*") if p.is_dir()).parent
    _same(str(root))
    assert R._local_targets(str(root))[0]  # something to search: the test compares something


def test_every_hostile_entry(tmp_path: Path) -> None:
    _hostile(tmp_path)
    _same(str(tmp_path))
    targets, findings = R._local_targets(str(tmp_path))
    codes = sorted(f.code for f in findings)
    assert codes.count("symlink") == 3 and codes.count("unexpected-entry") == 2, codes
    kinds = {os.path.basename(t.path): t.kind for t in targets}
    assert kinds["000000000002-session-reference-1.txt"] == "tool-output"  # its content says so
    assert kinds["000000000003-session-reference-2.txt"] == "session-reference-transcript"


def test_an_unreadable_session_dir(tmp_path: Path) -> None:
    _hostile(tmp_path)
    locked = tmp_path / "session-dddddddddddd"
    locked.mkdir()
    (locked / "000000000001-bash.txt").write_bytes(b"x")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: a 000 dir is readable")
        _same(str(tmp_path))
        assert any(f.code == "unreadable" and f.path == str(locked) for f in R._local_targets(str(tmp_path))[1])
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("what", ["missing", "file", "empty", "symlink"])
def test_an_unusable_or_empty_root(tmp_path: Path, what: str) -> None:
    root = tmp_path / "root"
    if what == "file":
        root.write_bytes(b"x")
    elif what == "empty":
        root.mkdir()
    elif what == "symlink":
        (tmp_path / "real").mkdir()
        _hostile(tmp_path / "real")
        root.symlink_to(tmp_path / "real")
    _same(str(root))
    if what in ("missing", "file"):
        assert [f.code for f in R._local_targets(str(root))[1]] == ["unreadable"]


def test_a_search_plan_is_the_scans_with_no_mode_read(tmp_path: Path) -> None:
    """root_plan(modes=False), a search's: the same entries, findings and order as the scan's
    (a symlink named like a session dir, a file so named, a stray file, a short name, a FIFO,
    a dir with a name not quite a session dir's), each session dir's mode -1 (not read)."""
    from spillscope.inspect.findings import Finding
    from spillscope.inspect.scan import tree

    _hostile(tmp_path)
    os.mkfifo(tmp_path / "session-dddddddddddd")
    (tmp_path / "session-eeeeeeeeeeeZ").mkdir()
    done, scan = tree.root_plan(str(tmp_path))
    done2, search = tree.root_plan(str(tmp_path), modes=False)
    assert done is None and done2 is None
    assert [x if isinstance(x, Finding) else x[:3] for x in search] == [x if isinstance(x, Finding) else x[:3]
                                                                        for x in scan]
    assert sorted(x[3] for x in scan if not isinstance(x, Finding)) == [0o700, 0o755]
    assert [x[3] for x in search if not isinstance(x, Finding)] == [-1, -1]
    codes = sorted(x.code for x in search if isinstance(x, Finding))
    assert codes == ["symlink"] + ["unexpected-entry"] * 5


def test_a_vanished_session_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session dir removed between the root's listing and its own: unreadable, as in the scan."""
    from spillscope.inspect.scan import searchable, tree

    _hostile(tmp_path)
    plan = tree.root_plan

    def racing(root: str, follow_root: bool = True, modes: bool = True):  # type: ignore[no-untyped-def]
        got = plan(root, follow_root, modes)
        shutil.rmtree(tmp_path / "session-cccccccccccc")
        return got

    monkeypatch.setattr(searchable, "root_plan", racing)
    _, findings = R._local_targets(str(tmp_path))
    assert any(f.code == "unreadable" and f.path.endswith("session-cccccccccccc") for f in findings)


@pytest.mark.parametrize("query", [("needle", False), ("NEEDLE", True), ("ne+dle", False), ("absent", False)])
def test_the_walk_feeding_the_search_gives_the_events_of_the_listed_targets(tmp_path: Path,
                                                                          query: tuple[str, bool]) -> None:
    """With no logs, the search takes the walk's targets as they come (batches checked
    while the walk goes on): the same hits in the same order, and the same findings, as the
    search of the whole list of targets (its findings first, as before), each finding before
    the hits of the session dirs after its own; over batches of every size."""
    from spillscope.inspect.findings import Finding
    from spillscope.inspect.search.pattern import Pattern
    from spillscope.storage import open_storage

    _hostile(tmp_path)
    for d in range(40):  # 64, 256, 1024... files per batch: a root past the first three
        s = tmp_path / f"session-{d:012x}"
        s.mkdir()
        for i in range(40):
            (s / f"{i:012x}-bash.txt").write_bytes(b"x" * (d * 40 + i) + (b"needle" if (d + i) % 7 == 0 else b""))
    (tmp_path / "session-dddddddddddd").symlink_to(tmp_path / "session-000000000001")
    text, folded = query
    pattern = Pattern(text, regex="+" in text, ignore_case=folded)
    store = open_storage(str(tmp_path))
    for kinds in (None, ["tool-output"]):
        streamed = list(R.search_root(str(tmp_path), pattern, kinds=kinds))
        targets, walked = R._local_targets(str(tmp_path))
        targets = [t for t in targets if kinds is None or t.kind in kinds]
        listed = walked + [e for ev in R._searched(targets, pattern, True, None, lambda: False, store)
                           for e in (ev if isinstance(ev, list) else [ev])]  # its batches, hit by hit
        hits = [e for e in streamed if not isinstance(e, Finding)]
        assert len(hits) > 200 or text == "absent"
        assert len(streamed) > len(hits)  # the findings: the walk's, the search's
        assert hits == [e for e in listed if not isinstance(e, Finding)]
        assert sorted(map(repr, (e for e in streamed if isinstance(e, Finding)))) == \
            sorted(map(repr, (e for e in listed if isinstance(e, Finding))))
        for k, e in enumerate(streamed):
            if isinstance(e, Finding) and e.path is not None:
                at = e.path if os.path.dirname(e.path) == str(tmp_path) else os.path.dirname(e.path)
                own = os.path.basename(at)
                assert all(os.path.basename(h.session_dir) <= own for h in streamed[:k] if not isinstance(h, Finding)), e


def test_findings_first_gives_every_walk_finding_before_the_first_hit(tmp_path: Path) -> None:
    """A reader that stops early (the TUI at its cap) asks for the findings first: it sees the
    findings of the session dirs after its last hit too (streamed, it would not)."""
    from itertools import islice

    from spillscope.inspect.findings import Finding
    from spillscope.inspect.search.pattern import Pattern

    _hostile(tmp_path)
    for d in range(3):  # more files than the first two batches (64 + 256) before the hostile dirs
        s = tmp_path / f"session-{d:012x}"
        s.mkdir()
        for i in range(150):
            (s / f"{i:012x}-bash.txt").write_bytes(b"a needle")
    walked = R._local_targets(str(tmp_path))[1]
    assert len(walked) >= 5
    got = list(islice(R.search_root(str(tmp_path), Pattern("needle"), findings_first=True), len(walked) + 3))
    assert sorted(map(repr, got[: len(walked)])) == sorted(map(repr, walked))
    assert all(not isinstance(e, Finding) for e in got[len(walked):])
    streamed = list(islice(R.search_root(str(tmp_path), Pattern("needle")), len(walked) + 3))
    assert sum(isinstance(e, Finding) for e in streamed) < len(walked)  # what the option is for


@pytest.mark.parametrize("regex", [False, True])
def test_a_search_without_context_gives_the_same_hits_with_no_text(tmp_path: Path, regex: bool) -> None:
    """``context=False`` (grep --json, -l, -c) leaves the text of a hit out where that is
    cheaper, never its place: the same hits, offsets and order as a search with context,
    over ASCII and non-ASCII tool outputs and transcripts (code points ≠ bytes)."""
    from spillscope.inspect.search.pattern import Pattern
    from spillscope.inspect.search.root import SearchHit, search_root
    from test_search import write_root

    texts = ["plain ascii ERROR] timeout x failed and ERROR] timeout y failed",
             "é 界 😀 ERROR] timeout é failed\r\nERROR] timeout 😀 failed",
             "ERROR] timeout \u2028 failed e\u0301 ERROR] timeout z failed"]
    root = write_root(tmp_path, [texts, texts[::-1]], texts)
    pattern = Pattern(r"ERROR\] timeout \S+ failed" if regex else "ERROR] timeout", regex=regex)

    def hits(context: bool) -> list[SearchHit]:
        return [h for h in search_root(root, pattern, context=context) if isinstance(h, SearchHit)]

    full, bare = hits(True), hits(False)
    assert len(full) == 18
    assert [h.to_json() for h in bare] == [h.to_json() for h in full]
    assert all(h.match for h in full)
