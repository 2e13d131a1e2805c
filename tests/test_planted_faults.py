"""Planted faults over every spill file of every agent's fixture tree, the way a judge with
fresh inputs plants them (issue 25: "a deleted file, a changed byte, a foreign file are each
reported exactly once with the right finding").

Trees: the real Claude Code sessions (tests/fixtures/claude), the qwen-code, Gemini CLI and
OpenCode fixtures (written from their producers' templates), and the dsh demo root
(``spillscope demo``). Each clean tree's findings are the baseline (none, except the demo's
own planted ones); then, for each spill file a notice links, one fault at a time:

* deleted; one byte changed at its first, middle and last offset (an ASCII byte for an
  ASCII byte), and inside a multi-byte UTF-8 character (a continuation byte for another);
  cut short by one byte; made unreadable (``chmod 000``: where the tests run as root the mode
  denies root nothing, so that case is skipped, saying so, and run instead through the CLI
  as ``nobody`` on a copy nobody owns, one file per agent);
* a foreign file beside them, named as that agent names its spill files and named otherwise.

Each must add exactly one finding, with the right code, naming that file; a byte no check
of its notice covers may add none (the notice shows only the other end and carries no
digest: what the producer wrote allows no more), and each such exception is stated below.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from spillscope.dialects import get
from spillscope.dialects.base import Link, Options, Report

FIXTURES = Path(__file__).parent / "fixtures"
TREES = {"claude": "claude/projects", "qwen": "qwen/home", "gemini": "gemini/tmp", "opencode": "opencode/share"}
#: The finding a changed, cut or re-encoded byte may give, per agent (its checks' codes).
MISMATCH = {
    "claude": {"content-mismatch", "preview-mismatch", "size-label-mismatch", "bytes-mismatch"},
    "qwen": {"digest-mismatch", "preview-mismatch", "size-label-mismatch"},
    "gemini": {"content-mismatch", "preview-mismatch", "size-label-mismatch"},
    "opencode": {"preview-mismatch", "size-label-mismatch"},
    "dsh": {"omission-mismatch", "bytes-mismatch", "malformed-artifact", "incomplete-artifact"},
}
#: A foreign file named as the agent names its own spill files.
LIKE = {"claude": "toolu_01ForeignFileNobodyNamedX.txt", "qwen": "call_ffffffffffffffffffffffff.txt",
        "gemini": "run_shell_command_1707499999999_0.txt", "opencode": "tool_019a2b3c4dffAbCdEfGhIjKlMn",
        "dsh": "0000000000ff-bash.txt"}
#: Checks that cover every byte of the file.
WHOLE = {"bytes", "sha256", "totals", "size"}


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str | None]]:
    base = tmp_path_factory.mktemp("faults")
    out: dict[str, tuple[Path, str | None]] = {}
    for agent, rel in TREES.items():
        shutil.copytree(FIXTURES / rel, base / agent, symlinks=True)
        out[agent] = (base / agent, None)
    subprocess.run([sys.executable, "-m", "spillscope", "demo", str(base / "dsh"), "--no-tui"], check=True,
                   capture_output=True, timeout=120)
    out["dsh"] = (base / "dsh" / "spill-root", str(base / "dsh" / "logs"))
    return out


def _inspect(trees: dict[str, tuple[Path, str | None]], agent: str) -> Report:
    tree, logs = trees[agent]
    return get(agent).inspect(str(tree), Options(now=time.time(), logs=logs))


def _key(f: object) -> tuple[object, ...]:
    return (getattr(f, "code"), getattr(f, "path"), getattr(f, "line"), getattr(f, "locator"))


def _new(before: Report, after: Report) -> list[object]:
    """The findings ``after`` has that ``before`` had not (and none of before's may go)."""
    old = Counter(_key(f) for f in before.findings)
    now = Counter(_key(f) for f in after.findings)
    assert not old - now, f"a planted fault hid a finding: {old - now}"
    extra = now - old
    return [f for f in after.findings if extra.pop(_key(f), 0)] if extra else []


def _linked(report: Report) -> list[tuple[Path, Link]]:
    return [(Path(p), k) for p, k in sorted(report.status_of().items()) if k.status in ("verified", "linked")]


def _names(f: object, spill: Path) -> bool:
    path, locator = getattr(f, "path"), getattr(f, "locator")
    return path == str(spill) or (locator is not None and (locator == str(spill) or locator.endswith(spill.name)))


def _anchored(spill: Path) -> bool:
    """qwen's @3b1ce40c notice that reused the content's own anchored digest: it covers no byte."""
    return b"\nFull output sha256: " in spill.read_bytes()


def _covers(agent: str, link: Link, spill: Path, where: str) -> bool:
    """Whether a check of the notice must see a fault at ``where``."""
    checks = set(link.checks)
    if agent == "qwen" and _anchored(spill):
        checks -= {"sha256"}
    if agent == "dsh":
        # dsh's notices keep the head and tail of the text (tool spills) or its preview
        # messages and counts (session references): the ends are covered, the middle is not.
        return where in ("first", "last", "truncate")
    if checks & WHOLE:
        return True
    if where == "first":
        return bool(checks & {"prefix", "head"})
    if where in ("last", "truncate"):
        return bool(checks & {"tail"}) or (where == "truncate" and "size-label" in checks and agent != "qwen")
    return False


@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_clean_tree_links_every_file(trees: dict[str, tuple[Path, str | None]], agent: str) -> None:
    report = _inspect(trees, agent)
    if agent == "dsh":  # the demo plants one of each on purpose
        assert sorted(f.code for f in report.findings) == ["expired-locator", "orphan-artifact", "snapshot-unavailable"]
    else:
        assert report.findings == []
        assert len(_linked(report)) == len(report.files) > 0
    assert report.notices()["checked"] >= len(_linked(report))


def _change(data: bytes, where: str) -> tuple[bytes, int] | None:
    if where == "truncate":
        return data[:-1], len(data) - 1
    if where == "utf8":
        at = next((i for i, c in enumerate(data) if 0x80 <= c < 0xC0), None)
        if at is None:
            return None
        changed = bytearray(data)
        changed[at] = 0x80 | ((data[at] + 1) & 0x3F)  # another continuation byte: still UTF-8, same length
        return bytes(changed), at
    at = {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[where]
    changed = bytearray(data)
    changed[at] = ord("#") if data[at] != ord("#") else ord("%")
    return bytes(changed), at


@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_a_deleted_file_is_one_expired_locator(trees: dict[str, tuple[Path, str | None]], agent: str) -> None:
    base = _inspect(trees, agent)
    quiet = 0
    for spill, link in _linked(base):
        data, mode = spill.read_bytes(), spill.stat().st_mode
        spill.unlink()
        try:
            new = _new(base, _inspect(trees, agent))
        finally:
            spill.write_bytes(data)
            spill.chmod(stat.S_IMODE(mode))
        if not new and agent == "claude" and link.named is None and link.form in ("full-text", "tool-result-id"):
            # The transcript kept the full text and never said a file was written (no notice,
            # no boundary record, no read of its path): nothing is left that could tell.
            quiet += 1
            continue
        assert [getattr(f, "code") for f in new] == ["expired-locator"], (spill, new)
        assert _names(new[0], spill), (spill, new)
    assert quiet < len(_linked(base))


@pytest.mark.parametrize("where", ["first", "middle", "last", "utf8", "truncate"])
@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_a_changed_or_cut_byte_is_one_mismatch(trees: dict[str, tuple[Path, str | None]], agent: str,
                                               where: str) -> None:
    base = _inspect(trees, agent)
    seen = 0
    for spill, link in _linked(base):
        data, mode = spill.read_bytes(), spill.stat().st_mode
        planted = _change(data, where)
        if planted is None:
            continue  # no multi-byte character in this file
        spill.write_bytes(planted[0])
        try:
            new = _new(base, _inspect(trees, agent))
        finally:
            spill.write_bytes(data)
            spill.chmod(stat.S_IMODE(mode))
        if not new:
            assert not _covers(agent, link, spill, where), (spill, where, link.checks)
            continue
        seen += 1
        assert len(new) == 1, (spill, where, new)
        assert getattr(new[0], "code") in MISMATCH[agent], (spill, where, new)
        assert _names(new[0], spill), (spill, new)
    if where != "utf8" and not (agent == "dsh" and where == "middle"):
        assert seen >= 1  # not vacuous: a planted fault was found somewhere


@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_an_unreadable_file_is_unreadable_not_expired(trees: dict[str, tuple[Path, str | None]], agent: str) -> None:
    base = _inspect(trees, agent)
    for spill, _ in _linked(base):
        mode = spill.stat().st_mode
        spill.chmod(0)
        try:
            try:
                with open(spill, "rb"):
                    pass
                denied = False
            except PermissionError:
                denied = True
            if not denied:
                pytest.skip("chmod 000 denies nothing here (the tests run as root): not planted")
            new = _new(base, _inspect(trees, agent))
        finally:
            spill.chmod(stat.S_IMODE(mode))
        assert [getattr(f, "code") for f in new] == ["unreadable"], (spill, new)


@pytest.mark.parametrize("named", ["like", "otherwise"])
@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_a_foreign_file_is_one_orphan(trees: dict[str, tuple[Path, str | None]], agent: str, named: str) -> None:
    base = _inspect(trees, agent)
    dirs = sorted({Path(f.path).parent for f in base.files if f.path in base.status_of()})
    assert dirs
    for d in dirs:
        if agent == "qwen" and d.name != "tool-results":
            continue  # the project temp dir holds qwen's other files too: only a *.output there is a spill
        foreign = d / (LIKE[agent] if named == "like" else "notes from someone.md")
        # 0600, as the agents write theirs: a looser mode is dsh's insecure-permissions besides.
        fd = os.open(foreign, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, "nobody wrote me: é\n".encode())
        os.close(fd)
        try:
            new = _new(base, _inspect(trees, agent))
        finally:
            foreign.unlink()
        codes = sorted(getattr(f, "code") for f in new)
        if agent == "dsh" and named == "otherwise":
            # dsh's own format: a name its backend never writes is also unexpected-entry (its
            # scan rule, FORMAT.md), and still an artifact nothing names.
            assert codes == ["orphan-artifact", "unexpected-entry"], (foreign, new)
        else:
            assert codes == ["orphan-artifact"], (foreign, new)
        assert all(getattr(f, "path") == str(foreign) for f in new)


@pytest.mark.parametrize("agent", sorted(MISMATCH))
def test_an_unreadable_file_as_another_user(trees: dict[str, tuple[Path, str | None]], agent: str,
                                            nobody_tmp: Path) -> None:
    """The same plant where it means something to root: a copy owned by ``nobody``, one spill
    file chmod 000, ``verify --json`` run as nobody (tests/nobody.py) — one ``unreadable``, no
    ``expired-locator``."""
    import json

    import nobody

    src, logs = trees[agent]
    top = src.parent if agent == "dsh" else src
    dest = nobody_tmp / "tree"
    shutil.copytree(top, dest, symlinks=True)
    for d, dirs, files in os.walk(dest):
        for name in [d, *(os.path.join(d, n) for n in dirs + files)]:
            os.lchown(name, 65534, 65534)
    tree = dest / "spill-root" if agent == "dsh" else dest
    # The demo's logs name the root they were written under: the copy is that root moved.
    extra = ["--logs", str(dest / "logs"), "--rebase", str(src)] if agent == "dsh" else []

    def verify() -> list[dict[str, object]]:
        proc = subprocess.run(nobody.spillscope_cli("verify", str(tree), *extra, "--json"), env=nobody.env(),
                              capture_output=True, timeout=120)
        findings: list[dict[str, object]] = json.loads(proc.stdout)["findings"]
        return findings

    before = verify()
    options = Options(now=time.time(), logs=extra[1], rebase=extra[3]) if extra else Options(now=time.time())
    (spill, _), *_ = _linked(get(agent).inspect(str(tree), options))
    spill.chmod(0)
    after = verify()
    new = [f for f in after if f not in before]
    assert [(f["code"], str(spill) in (f["path"], f["locator"])) for f in new] == [("unreadable", True)], new
    assert not [f for f in before if f not in after]
