"""qwen-code, Gemini CLI and OpenCode on fixtures written from their own templates, with planted faults.

Each fixture (tests/fixtures/<agent>/, its generate.py cites the producer's source) must
verify with every spill file linked and no finding; then, over every spill file: deleting it
is one ``expired-locator``, changing a byte the notice shows (or, for qwen, any byte: the
digest covers it) is one mismatch, a foreign file in a spill dir is one orphan.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from spillscope.dialects import detect, get
from spillscope.dialects.base import Options, Report

FIXTURES = Path(__file__).parent / "fixtures"
#: agent → (tree under tests/fixtures, glob of its spill files, how many, the checks a changed byte may fail)
CASES = {
    "gemini": ("gemini/tmp", ("*/tool-outputs/**/*.txt",), 9, {"preview-mismatch", "content-mismatch"}),
    "qwen": ("qwen/home", ("tmp/*/tool-results/*.txt", "tmp/*/*.output"), 6,
             {"digest-mismatch", "preview-mismatch"}),
    "opencode": ("opencode/share", ("tool-output/*",), 5, {"preview-mismatch", "size-label-mismatch"}),
}


def _inspect(agent: str, tree: Path) -> Report:
    return get(agent).inspect(str(tree), Options(now=time.time()))


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    agent = request.param
    tree = tmp_path / agent
    shutil.copytree(FIXTURES / CASES[agent][0], tree, symlinks=True)
    return agent, tree


def _spills(agent: str, tree: Path) -> list[Path]:
    return sorted(p for g in CASES[agent][1] for p in tree.glob(g) if p.is_file())


def test_fixture_verifies_every_file_linked_no_finding(case: tuple[str, Path]) -> None:
    agent, tree = case
    assert detect(str(tree)).name == agent
    report = _inspect(agent, tree)
    assert report.findings == []
    files = _spills(agent, tree)
    assert len(files) == CASES[agent][2] == len(report.files)
    links = report.status_of()
    assert sorted(links) == sorted(str(f) for f in files)
    # "linked": a form whose notice offers nothing to compare (Gemini's distilled output).
    assert {k.status for k in links.values() if k.form != "distilled"} == {"verified"}
    assert {k.status for k in links.values() if k.form == "distilled"} <= {"linked"}
    assert report.notices()["checked"] == len(files)


def test_a_deleted_file_is_one_expired_locator(case: tuple[str, Path]) -> None:
    agent, tree = case
    for spill in _spills(agent, tree):
        data = spill.read_bytes()
        spill.unlink()
        try:
            report = _inspect(agent, tree)
        finally:
            spill.write_bytes(data)
        assert [f.code for f in report.findings] == ["expired-locator"], spill
        assert report.findings[0].line is not None and report.findings[0].locator is not None
        assert report.findings[0].locator.endswith(spill.name)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_changed_shown_byte_is_one_mismatch(case: tuple[str, Path], where: str) -> None:
    agent, tree = case
    seen = 0
    for spill in _spills(agent, tree):
        checks = set(_inspect(agent, tree).status_of()[str(spill)].checks)
        data = spill.read_bytes()
        at = 0 if where == "first" else len(data) - 1
        changed = bytearray(data)
        changed[at] = ord("#") if data[at] != ord("#") else ord("%")
        spill.write_bytes(bytes(changed))
        try:
            report = _inspect(agent, tree)
        finally:
            spill.write_bytes(data)
        shows = {"tail", "sha256", "bytes"} if where == "last" else {"head", "prefix", "sha256", "bytes"}
        if not checks & shows:
            # The notice shows only the other end and carries no digest (qwen's pre-digest
            # build, OpenCode's head or tail): nothing it says covers this byte.
            assert report.findings == []
            continue
        seen += 1
        assert len(report.findings) == 1, (spill, report.findings)
        assert report.findings[0].code in CASES[agent][3], report.findings
        assert report.status_of()[str(spill)].status == "mismatch"
    assert seen >= 1


def test_a_foreign_file_is_one_orphan(case: tuple[str, Path]) -> None:
    agent, tree = case
    for spill_dir in sorted({p.parent for p in _spills(agent, tree)}):
        # Where the agent also keeps other files (qwen's project temp dir), a foreign *spill* is
        # one named as that agent names them there.
        legacy = any(p.suffix == ".output" for p in spill_dir.iterdir())
        foreign = spill_dir / ("foreign_0123456789ab.output" if legacy else "foreign_call_0.txt")
        foreign.write_text("nobody wrote me\n")
        try:
            report = _inspect(agent, tree)
        finally:
            foreign.unlink()
        assert [(f.code, f.path) for f in report.findings] == [("orphan-artifact", str(foreign))]


def test_qwen_any_changed_byte_is_a_digest_mismatch(tmp_path: Path) -> None:
    """The notice's sha256 covers the whole file: a byte changed where no preview shows it is
    still found (except in a file whose notice reused the content's own anchored digest, and
    in the pre-digest build's: their middles are not covered, as qwen-code wrote them)."""
    tree = tmp_path / "qwen"
    shutil.copytree(FIXTURES / "qwen" / "home", tree)
    covered = 0
    for spill in _spills("qwen", tree):
        link = _inspect("qwen", tree).status_of()[str(spill)]
        if "sha256" not in link.checks or b"\nFull output sha256: " in spill.read_bytes():
            continue
        covered += 1
        data = spill.read_bytes()
        for at in (len(data) // 3, len(data) // 2, 2 * len(data) // 3):
            changed = bytearray(data)
            changed[at] = ord("#") if data[at] != ord("#") else ord("%")
            spill.write_bytes(bytes(changed))
            try:
                report = _inspect("qwen", tree)
            finally:
                spill.write_bytes(data)
            assert [f.code for f in report.findings] == ["digest-mismatch"], (spill, at)
    assert covered == 4


def test_opencode_db_is_read_only_while_opencode_writes_it(tmp_path: Path) -> None:
    """OpenCode keeps opencode.db open in WAL mode: the inspection reads a committed snapshot
    through a read-only URI, while a writer holds an open transaction, and changes no byte."""
    import sqlite3

    tree = tmp_path / "opencode"
    shutil.copytree(FIXTURES / "opencode" / "share", tree)
    db = tree / "opencode.db"
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO part VALUES ('prt_new', 'm', 's', 0, 0, '{\"state\": {\"output\": \"x\", "
                   "\"metadata\": {\"outputPath\": \"/x/tool-output/tool_uncommitted\"}}}')")
    try:
        before = {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file()}
        report = _inspect("opencode", tree)
        after = {p.name: p.read_bytes() for p in tree.iterdir() if p.is_file()}
    finally:
        writer.rollback()
        writer.close()
    assert report.findings == [] and len(report.status_of()) == 5  # the uncommitted part is not seen
    assert before == after


def test_opencode_db_in_wal_mode_opencode_has_closed_gets_no_wal_or_shm(tmp_path: Path) -> None:
    """OpenCode not running: its database is in WAL mode with no -wal/-shm beside it, and a
    ``mode=ro`` connection alone would create both and leave them in the tree."""
    import sqlite3

    tree = tmp_path / "opencode"
    shutil.copytree(FIXTURES / "opencode" / "share", tree)
    con = sqlite3.connect(tree / "opencode.db")
    assert con.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    con.close()
    before = sorted(p.name for p in tree.iterdir())
    report = _inspect("opencode", tree)
    assert report.findings == [] and len(report.status_of()) == 5
    assert sorted(p.name for p in tree.iterdir()) == before == ["opencode.db", "storage", "tool-output"]


def test_every_dialect_folder_is_registered_and_offered_by_the_cli() -> None:
    """Adding an agent is one folder plus one line in REGISTERED: the two must agree, and the
    CLI's --agent choices come from the registry."""
    import spillscope.dialects as dialects
    from spillscope.dialects import REGISTERED
    from spillscope.dialects.base import Dialect
    from spillscope.frontends.cli.main import build_parser

    root = Path(dialects.__file__).parent
    folders = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    assert folders == sorted(REGISTERED)
    for name in REGISTERED:
        d = get(name)
        assert isinstance(d, Dialect) and d.name == name and d.title and d.usual_path
    import argparse

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    (agent,) = [a for a in sub.choices["verify"]._actions if a.dest == "agent"]
    assert tuple(agent.choices or ()) == REGISTERED


@pytest.mark.parametrize("seed", range(3))
def test_the_lines_holding_a_token_are_numbered_alike_with_and_without_the_accelerator(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """``engine.lines_holding`` (every dialect's JSON Lines reader): the native find and newline
    count over the mapping give the lines, numbers and bytes ``bytes.find``/``count`` give,
    over lines of any length (empty, one byte, 100 KB), tokens at a line's edges, CRLF, no
    final newline."""
    import random

    from spillscope.dialects import engine
    from spillscope.util import native

    rng = random.Random(seed)
    wanted = (b'"tool_use_id"', b"<persisted-output>")
    pieces = [b"", b"x", b"\r", b"\n", b"\r\n", b'"tool_use_id"', b"<persisted-output>", b"y" * 100_000, b"\xe7\x95\x8c"]
    for _ in range(30):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60)))
        path = tmp_path / "t.jsonl"
        path.write_bytes(data)
        expect = []
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            raw = line + (b"\n" if i < len(lines) - 1 else b"")
            if raw and any(w in raw for w in wanted):
                expect.append((i + 1, raw))
        for nat in (native.NATIVE, None):
            monkeypatch.setattr(native, "NATIVE", nat)
            with open(path, "rb") as f:
                assert list(engine.lines_holding(f, wanted)) == expect


@pytest.mark.parametrize("agent,tree,spill_dir", [("qwen", "qwen/home", "tmp/*/tool-results"),
                                                 ("gemini", "gemini/tmp", "*/tool-outputs/*")])
def test_a_symlinked_spill_dir_is_reported_and_never_listed(tmp_path: Path, agent: str, tree: str,
                                                            spill_dir: str) -> None:
    """O_NOFOLLOW guards a path's last component only: a spill dir that is a symlink would
    put files from outside the tree in the listing, the reader and a served tab."""
    import glob
    import shutil

    from spillscope.dialects import get
    from spillscope.dialects.records import Options

    root = tmp_path / agent
    shutil.copytree(Path(__file__).parent / "fixtures" / tree, root)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the tree's")
    (victim,) = [d for d in sorted(glob.glob(str(root / spill_dir))) if os.path.isdir(d)][:1]
    shutil.rmtree(victim)
    os.symlink(outside, victim)
    report = get(agent).inspect(str(root), Options(now=0.0))
    assert not any(f.path.startswith(victim + os.sep) for f in report.files)
    assert [f.code for f in report.findings if f.path == victim] == ["symlink"]
