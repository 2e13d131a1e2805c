"""``spillscope prune`` through the real entry point (subprocess) on real trees.

Dry run changes nothing; ``--apply`` deletes exactly what the dry run listed; the JSON
schema; ``--logs``/``--keep-active`` keeps what live sessions still name (parsed notices,
bare mentions, Windows paths, zstd logs, unreadable logs); refusals; symlinks and unsafe
dirs; the sweep rule shared with the inspector's ``past-retention`` forecast.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import zstandard

import nobody

from spillscope.frontends.demo import _write_log, write_demo
from spillscope.inspect.verify.inspection import inspect_root
from spillscope.spill import RETRIEVAL_HINT
from spillscope.spill.naming import encode_segment, session_dir_name

DAY = 86400
NOW = time.time()


def run(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, text=True, timeout=120, **kw)


def plant(path: Path, age_days: float, text: str = "x", mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(text)
    path.chmod(mode)
    t = NOW - age_days * DAY
    os.utime(path, (t, t))
    return path


def snapshot(base: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``base``: (mode, mtime_ns), symlinks not followed."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            out[os.path.relpath(p, base)] = (st.st_mode, st.st_mtime_ns)
    return out


def tool_result(call_id: str, text: str) -> dict:
    return {"type": "tool/result", "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {
                "source": {"kind": "tool", "callId": call_id},
                "content": [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}],
                             "isError": False}],
                "role": "tool", "id": "t-" + call_id}}}


def notice(locator: str) -> str:
    return f"head\n\n(Omitted 99 bytes. Full formatted result stored at: {locator}. {RETRIEVAL_HINT})"


def user(text: str) -> dict:
    return {"type": "user/message", "surfaceOp": "append",
            "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}, "role": "user", "id": "u"}}


def age_log(path: Path, days: float) -> None:
    t = NOW - days * DAY
    os.utime(path, (t, t))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir(mode=0o700)
    return r


def test_dry_run_changes_nothing_then_apply_deletes_exactly_the_list(tmp_path, root):
    a = session_dir_name("a")
    b = session_dir_name("b")
    old1 = plant(root / a / "000000000001-bash.txt", 40, "x" * 2000)
    old2 = plant(root / b / "000000000002-grep.txt", 31, "yyy")
    fresh = plant(root / a / "000000000003-bash.txt", 29)
    unrelated = plant(root / "README", 400)
    before = snapshot(tmp_path)
    started = time.time()
    dry = run("prune", str(root), "--json")
    ended = time.time()
    assert dry.returncode == 0, dry.stderr
    assert snapshot(tmp_path) == before  # nothing changed, not even an mtime
    data = json.loads(dry.stdout)
    assert set(data) == {"root", "applied", "olderThanSeconds", "cutoffMs", "cutoff", "logs", "keepActiveSeconds",
                         "activeLogs", "ignoredLogs", "files", "dirs", "kept", "skipped", "errors", "fileCount",
                         "bytesFreed", "ok"}
    assert data["applied"] is False and data["ok"] is True and data["olderThanSeconds"] == 30 * DAY
    assert data["root"] == str(root) and data["logs"] is None and data["kept"] == [] and data["errors"] == []
    files = sorted(data["files"], key=lambda f: f["bytes"], reverse=True)
    assert [f["path"] for f in files] == [str(old1), str(old2)]
    assert [(f["bytes"], round(f["ageSeconds"] / DAY)) for f in files] == [(2000, 40), (3, 31)]
    assert data["dirs"] == [{"path": str(root / b), "kind": "session-dir"}]
    assert data["fileCount"] == 2 and data["bytesFreed"] == 2003
    # The cutoff is 30 days before the moment the command ran (the suite may run long after import).
    assert data["cutoff"].endswith("Z") and started - 1 <= data["cutoffMs"] / 1000 + 30 * DAY <= ended + 1

    applied = run("prune", str(root), "--apply", "--json")
    assert applied.returncode == 0, applied.stderr
    done = json.loads(applied.stdout)
    assert done["applied"] is True
    assert [f["path"] for f in done["files"]] == [f["path"] for f in data["files"]]
    assert done["dirs"] == data["dirs"] and done["bytesFreed"] == 2003
    gone = set(before) - set(snapshot(tmp_path))
    assert gone == {os.path.relpath(p, tmp_path) for p in [str(old1), str(old2), str(root / b)]}
    assert fresh.exists() and unrelated.exists() and root.is_dir()


def test_human_output(root):
    plant(root / session_dir_name("a") / "000000000001-bash.txt", 40, "x" * 2048)
    out = run("prune", str(root))
    assert out.returncode == 0
    assert "dry run, nothing deleted (--apply deletes)" in out.stdout
    assert f"would delete     2.0 KiB   40d  {session_dir_name('a')}/000000000001-bash.txt" in out.stdout
    assert f"would remove                    {session_dir_name('a')}/  (empty session dir)" in out.stdout
    assert out.stdout.rstrip().endswith("1 file, 2.0 KiB (2048 bytes) would be freed")
    out = run("prune", str(root), "--apply", "--older-than", "39d")
    assert "deleted " in out.stdout and out.stdout.rstrip().endswith("1 file, 2.0 KiB (2048 bytes) freed")
    assert os.listdir(root) == []
    # An emptied root is still a spill root: the next run is a clean no-op, not a refusal.
    again = run("prune", str(root), "--apply")
    assert again.returncode == 0 and again.stdout.rstrip().endswith("0 files, 0 B freed")


def test_older_than(root):
    f = plant(root / session_dir_name("a") / "000000000001-bash.txt", 2)
    assert json.loads(run("prune", str(root), "--json").stdout)["files"] == []
    assert [x["path"] for x in json.loads(run("prune", str(root), "--older-than", "36h", "--json").stdout)["files"]] == [str(f)]
    assert json.loads(run("prune", str(root), "--older-than", "3d", "--json").stdout)["files"] == []
    beyond = run("prune", str(root), "--older-than", "99999999999999w", "--json")  # before any calendar
    assert beyond.returncode == 0 and json.loads(beyond.stdout)["files"] == []


def test_keep_active_keeps_what_a_live_log_names(tmp_path, root):
    logs = tmp_path / "logs"
    live, stale = "live-session", "stale-session"
    ld, sd = root / session_dir_name(live), root / session_dir_name(stale)
    named = plant(ld / "00000000000a-bash.txt", 40)
    mentioned = plant(ld / "00000000000b-grep.txt", 40)  # named only in prose (no notice the parser knows)
    windows = plant(ld / "00000000000c-web_fetch.txt", 40)  # named by a Windows locator
    dotted = plant(ld / "00000000000d-odd.", 40)  # a name ending with "." before the notice's "."
    unnamed = plant(ld / "00000000000e-bash.txt", 40)
    stale_named = plant(sd / "00000000000f-bash.txt", 40)
    win = "C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123\\" + ld.name + "\\" + windows.name
    live_log = _write_log(logs, live, "/w", [
        tool_result("c1", notice(str(named))),
        user(f"earlier output is in /old/root/{ld.name}/{mentioned.name} if needed"),
        tool_result("c2", notice(win)),
        tool_result("c3", notice(str(dotted))),
    ])
    stale_log = _write_log(logs, stale, "/w", [tool_result("c1", notice(str(stale_named)))])
    age_log(stale_log, 2)
    proc = run("prune", str(root), "--logs", str(logs), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["activeLogs"] == [str(live_log)] and data["keepActiveSeconds"] == DAY
    assert sorted(k["path"] for k in data["kept"]) == sorted(map(str, [named, mentioned, windows, dotted]))
    by = {k["path"]: k["namedBy"] for k in data["kept"]}
    assert by[str(named)] == f"{live_log}:2" and by[str(mentioned)] == str(live_log)
    assert sorted(f["path"] for f in data["files"]) == sorted([str(unnamed), str(stale_named)])
    # A longer --keep-active makes the stale log active too.
    wider = json.loads(run("prune", str(root), "--logs", str(logs), "--keep-active", "3d", "--json").stdout)
    assert [f["path"] for f in wider["files"]] == [str(unnamed)]
    applied = json.loads(run("prune", str(root), "--logs", str(logs), "--apply", "--json").stdout)
    assert sorted(f["path"] for f in applied["files"]) == sorted([str(unnamed), str(stale_named)])
    assert all(p.exists() for p in (named, mentioned, windows, dotted)) and ld.is_dir() and not sd.exists()


def test_keep_active_reads_zstd_and_keeps_whole_dir_of_an_unreadable_log(tmp_path, root):
    logs = tmp_path / "logs"
    z, torn = "zstd-session", "torn-session"
    kept = plant(root / session_dir_name(z) / "00000000000a-bash.txt", 40)
    other = plant(root / session_dir_name(z) / "00000000000b-bash.txt", 40)
    in_torn = [plant(root / session_dir_name(torn) / f"00000000000{c}-bash.txt", 40) for c in "cd"]
    plain = _write_log(logs, z, None, [tool_result("c1", notice(str(kept)))])
    plain.with_name("session.v3.jsonl.zstd").write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    plain.unlink()
    tlog = _write_log(logs, torn, None, [tool_result("c1", notice("/x"))])
    data = zstandard.ZstdCompressor().compress(tlog.read_bytes())
    tlog.with_name("session.v3.jsonl.zstd").write_bytes(data[: len(data) // 2])  # a frame cut mid-write
    tlog.unlink()
    out = json.loads(run("prune", str(root), "--logs", str(logs), "--json").stdout)
    assert [f["path"] for f in out["files"]] == [str(other)]
    reasons = {k["path"]: k["namedBy"] for k in out["kept"]}
    assert set(reasons) == {str(kept), *map(str, in_torn)}
    assert all("active, unreadable" in reasons[str(p)] for p in in_torn)


def test_active_log_of_unknown_session_that_cannot_be_read_refuses(tmp_path, root):
    old = plant(root / session_dir_name("a") / "00000000000a-bash.txt", 40)
    logs = tmp_path / "logs"
    bad = logs / "--w--" / "~ZZZZ"  # not an encodeSegment output: the session is unknown
    bad.mkdir(parents=True)
    (bad / "session.v3.jsonl.zstd").write_bytes(b"not zstd at all")
    proc = run("prune", str(root), "--logs", str(logs), "--apply")
    assert proc.returncode == 2 and "session is unknown" in proc.stderr and old.exists()
    age_log(bad / "session.v3.jsonl.zstd", 3)  # no longer active: it no longer matters
    proc = run("prune", str(root), "--logs", str(logs), "--apply", "--json")
    assert proc.returncode == 0 and not old.exists()


def test_symlinked_log_is_ignored_not_followed(tmp_path, root):
    logs = tmp_path / "logs"
    real = _write_log(tmp_path / "elsewhere", "s", None, [user("hi")])
    d = logs / "--w--" / encode_segment("s")
    d.mkdir(parents=True)
    (d / "session.v3.jsonl").symlink_to(real)
    data = json.loads(run("prune", str(root), "--logs", str(logs), "--json").stdout)
    assert data["activeLogs"] == [] and data["ignoredLogs"] == [f"{d / 'session.v3.jsonl'}: a symlink, not followed"]


def test_refusals_delete_nothing(tmp_path, root):
    old = plant(root / session_dir_name("a") / "00000000000a-bash.txt", 40)
    link = tmp_path / "link"
    link.symlink_to(root)
    not_root = tmp_path / "home"
    plant(not_root / "notes.txt", 400)
    cases = [
        ((str(link),), "is a symlink"),
        ((str(not_root),), "holds no session-<12 hex> directory"),
        ((str(root / session_dir_name("a")),), "this is a session dir"),
        ((str(tmp_path / "missing"),), "missing: does not exist"),
        ((str(old),), "not a directory"),
        ((str(root), "--older-than", "0"), "--older-than must be more than 0"),
        ((str(root), "--keep-active", "1h"), "--keep-active needs --logs"),
        ((str(root), "--logs", str(tmp_path / "nope")), "nope: does not exist"),
        ((str(root), "--older-than", "soon"), "invalid duration"),
    ]
    for args, message in cases:
        proc = run("prune", *args, "--apply")
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    root.chmod(0o770)
    proc = run("prune", str(root), "--apply")
    assert proc.returncode == 2 and "owned by you and not writable by group or others" in proc.stderr
    root.chmod(0o700)
    assert old.exists()


def test_symlinks_and_unsafe_dirs_are_skipped(tmp_path, root):
    outside = tmp_path / "outside"
    precious = plant(outside / "precious.txt", 400)
    plant(outside / "d" / "000000000001-x.txt", 400)
    a = root / session_dir_name("a")
    plant(a / "000000000002-x.txt", 40)
    (a / "000000000003-link.txt").symlink_to(precious)
    (a / "000000000004-dir").symlink_to(outside / "d")
    os.utime(a / "000000000003-link.txt", (NOW - 400 * DAY,) * 2, follow_symlinks=False)
    (root / session_dir_name("b")).symlink_to(outside / "d")
    gw = plant(root / session_dir_name("c") / "000000000005-x.txt", 40)
    (root / session_dir_name("c")).chmod(0o770)
    foreign = plant(root / session_dir_name("d") / "000000000006-x.txt", 40)
    os.chown(root / session_dir_name("d"), 65534, 65534)
    outside_before = snapshot(outside)
    data = json.loads(run("prune", str(root), "--apply", "--json").stdout)
    assert [f["path"] for f in data["files"]] == [str(a / "000000000002-x.txt")]
    assert snapshot(outside) == outside_before and gw.exists() and foreign.exists()
    assert {(Path(s["path"]).name, s["reason"]) for s in data["skipped"]} == {
        ("000000000003-link.txt", "a symlink (never followed)"), ("000000000004-dir", "a symlink (never followed)"),
        (session_dir_name("b"), "a symlink (never followed)"), (session_dir_name("c"), "writable by group or others"),
        (session_dir_name("d"), "owned by another user")}
    assert data["ok"] is True and a.is_dir()


def test_prune_as_nobody(nobody_tmp):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to run prune as nobody")
    r = nobody_tmp / "root"
    mine = plant(r / session_dir_name("a") / "000000000001-x.txt", 40)
    theirs = plant(r / session_dir_name("b") / "000000000002-x.txt", 40)
    for p in (r, mine.parent, mine):
        os.chown(p, 65534, 65534)
    r.chmod(0o700)
    theirs.parent.chmod(0o755)

    def as_nobody(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(nobody.spillscope_cli("prune", *args), capture_output=True, text=True, timeout=120,
                              env=nobody.env())

    proc = as_nobody(str(r), "--apply", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [f["path"] for f in data["files"]] == [str(mine)]
    assert data["skipped"] == [{"path": str(theirs.parent), "reason": "owned by another user"}]
    assert theirs.exists() and not mine.exists()
    os.chown(r, 0, 0)  # and nobody is refused a root that root owns
    proc = as_nobody(str(r))
    assert proc.returncode == 2 and "owned by you" in proc.stderr


def test_demo_with_logs(tmp_path):
    demo = write_demo(tmp_path / "demo")
    for p in demo.root.rglob("*"):
        if p.is_file():
            os.utime(p, (NOW - 40 * DAY,) * 2)
    data = json.loads(run("prune", str(demo.root), "--logs", str(demo.logs), "--json").stdout)
    # Every artifact a demo log names is kept; the one no notice names (the orphan) would go.
    verify = inspect_root(demo.root, demo.logs)
    orphans = sorted(f.path for f in verify.findings if f.code == "orphan-artifact")
    assert [f["path"] for f in data["files"]] == orphans and len(data["kept"]) == 4


@pytest.mark.parametrize("compressed", [False, True])
def test_mentions_across_read_chunks(tmp_path, compressed):
    """A mention straddling the scanner's 1 MiB read boundary is still found, at every cut."""
    from spillscope.frontends.cli.prune import _CHUNK, ActiveLogs, _scan_mentions

    mention = b"/r/session-0123456789ab/00000000000a-" + b"n" * 200 + b".txt"
    for cut in (1, 9, 30, len(mention) - 1):
        data = b"x" * (_CHUNK - cut) + mention + b" tail\n"
        path = tmp_path / ("log.jsonl.zstd" if compressed else "log.jsonl")
        path.write_bytes(zstandard.ZstdCompressor().compress(data) if compressed else data)
        active = ActiveLogs()
        assert _scan_mentions(str(path), active) is None
        assert ("session-0123456789ab", "00000000000a-" + "n" * 200 + ".txt") in active.named, cut
