"""The backend's expiry sweep (FORMAT.md §2, spill/sweep.py) on real trees.

Symlinks (file, dir, to outside), foreign-owned and group/other-writable dirs, the
strict mtime boundary, files written during the sweep, empty prior default roots, the
active root, and the sweep run as an unprivileged user (``nobody`` through setpriv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import nobody

from spillscope.spill import LocalSpillStore, SaveTextSpill, SpillOwner, ToolSource
from spillscope.spill import local as local_module
from spillscope.spill.naming import session_dir_name
from spillscope.spill.sweep import (MS_PER_DAY, SweepRoot, cutoff_ms, gather_sweep_roots, is_expired,
                                    node_mtime_ms, sweep_spill_roots, validate_period_days)

DAY_NS = 86_400 * 10**9
NOW_MS = 1_790_000_000_000  # a fixed "now" for cutoffs
CUTOFF = NOW_MS - 30 * MS_PER_DAY
OLD_NS = (CUTOFF - 5 * MS_PER_DAY) * 10**6
NEW_NS = (NOW_MS - MS_PER_DAY) * 10**6
SID = "session-0123456789ab"
SID2 = "session-ba9876543210"


def plant(path: Path, mtime_ns: int, text: str = "x", mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(text)
    path.chmod(mode)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return path


def mkroot(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    path.chmod(0o700)
    return path


def tree(root: Path) -> list[str]:
    """Every entry under ``root`` (symlinks not followed), relative, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for n in dirnames + filenames:
            out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(out)


def sweep(roots, cutoff=CUTOFF, **kw):
    warnings: list[str] = []
    report = sweep_spill_roots(roots, cutoff, warnings.append, **kw)
    return report, warnings


def test_rule_is_node_mtime_ms_strictly_older():
    assert node_mtime_ms(1_790_000_000_123_456_789) == 1_790_000_000_123.456789
    assert node_mtime_ms(-1) == -1 * 1e3 + 999_999_999 / 1e6  # before the epoch: sec -1, nsec 999999999, as Node
    assert not is_expired(CUTOFF * 10**6, CUTOFF)  # exactly at the cutoff: kept
    # Node's mtimeMs is a double: near 1.79e12 ms its step is 2**-12 ms (244 ns), so one
    # nanosecond older rounds back onto the cutoff (kept, as in Node) and a microsecond does not.
    assert not is_expired(CUTOFF * 10**6 - 1, CUTOFF)
    assert is_expired(CUTOFF * 10**6 - 1000, CUTOFF)
    assert cutoff_ms(30 * MS_PER_DAY, NOW_MS) == CUTOFF


@pytest.mark.parametrize("bad", [-1, 1.5, True, "30", float("nan")])
def test_cleanup_period_days_is_a_whole_number(bad):
    with pytest.raises((TypeError, ValueError)):
        validate_period_days(bad)
    with pytest.raises((TypeError, ValueError)):
        LocalSpillStore("/nonexistent-root", cleanup_period_days=bad)
    assert validate_period_days(30.0) == 30 and validate_period_days(0) == 0


def test_expired_files_go_boundary_and_fresh_stay(tmp_path):
    root = mkroot(tmp_path / "root")
    old = plant(root / SID / "aaaaaaaaaaaa-bash.txt", OLD_NS, "old!")
    edge = plant(root / SID / "bbbbbbbbbbbb-bash.txt", CUTOFF * 10**6)
    just = plant(root / SID / "cccccccccccc-bash.txt", CUTOFF * 10**6 - 1000, "12")
    new = plant(root / SID / "dddddddddddd-bash.txt", NEW_NS)
    report, warnings = sweep([SweepRoot(str(root), False)])
    assert not old.exists() and not just.exists()
    assert edge.exists() and new.exists()
    assert sorted(r.path for r in report.files()) == sorted([str(old), str(just)])
    assert report.bytes_freed == 6 and warnings == [] and report.errors == []


def test_only_session_dirs_of_the_exact_shape(tmp_path):
    root = mkroot(tmp_path / "root")
    planted = [
        plant(root / "session-backup" / "aaaaaaaaaaaa-x.txt", OLD_NS),
        plant(root / "session-0123456789AB" / "aaaaaaaaaaaa-x.txt", OLD_NS),  # uppercase hex
        plant(root / "session-0123456789abc" / "aaaaaaaaaaaa-x.txt", OLD_NS),  # 13 hex
        plant(root / "loose-old-file.txt", OLD_NS),
        plant(root / SID / "nested" / "aaaaaaaaaaaa-x.txt", OLD_NS),  # nested dirs are not swept
    ]
    gone = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    report, _ = sweep([SweepRoot(str(root), True)])
    assert all(p.exists() for p in planted) and not gone.exists()
    assert (root / SID).is_dir()  # its nested dir keeps it
    assert root.is_dir()  # unrelated entries keep even a prunable root
    assert [r.path for r in report.removed] == [str(gone)]


def test_symlinks_are_never_followed_nor_deleted(tmp_path):
    outside = tmp_path / "outside"
    target_file = plant(outside / "precious.txt", OLD_NS)
    plant(outside / "dir" / "aaaaaaaaaaaa-precious.txt", OLD_NS)
    root = mkroot(tmp_path / "root")
    sdir = root / SID
    plant(sdir / "aaaaaaaaaaaa-bash.txt", OLD_NS)
    (sdir / "bbbbbbbbbbbb-link.txt").symlink_to(target_file)  # file symlink to outside
    (sdir / "cccccccccccc-dirlink").symlink_to(outside / "dir")  # dir symlink
    (sdir / "dddddddddddd-dangling").symlink_to(tmp_path / "nowhere")
    for link in sdir.iterdir():
        if link.is_symlink():
            os.utime(link, ns=(OLD_NS, OLD_NS), follow_symlinks=False)  # the link itself is old
    (root / SID2).symlink_to(outside / "dir")  # a session-<hex> dir that is a symlink
    before_outside = tree(outside)
    report, warnings = sweep([SweepRoot(str(root), True)])
    assert tree(outside) == before_outside and target_file.read_text() == "x"
    assert sorted(os.listdir(sdir)) == ["bbbbbbbbbbbb-link.txt", "cccccccccccc-dirlink", "dddddddddddd-dangling"]
    assert (root / SID2).is_symlink()
    assert [r.path for r in report.removed] == [str(sdir / "aaaaaaaaaaaa-bash.txt")]
    assert {s.reason for s in report.skipped} == {"a symlink (never followed)"}
    assert any("unsafe session directory" in w and SID2 in w for w in warnings)


def test_unsafe_session_dirs_are_skipped(tmp_path):
    root = mkroot(tmp_path / "root")
    files = {}
    for name, mode in (("session-00000000000a", 0o770), ("session-00000000000b", 0o702),
                       ("session-00000000000c", 0o720), ("session-00000000000d", 0o755)):
        files[name] = plant(root / name / "aaaaaaaaaaaa-x.txt", OLD_NS)
        (root / name).chmod(mode)
    foreign = plant(root / "session-00000000000e" / "aaaaaaaaaaaa-x.txt", OLD_NS)
    os.chown(root / "session-00000000000e", 65534, 65534)
    report, warnings = sweep([SweepRoot(str(root), True)])
    assert all(f.exists() for name, f in files.items() if name != "session-00000000000d")
    assert not files["session-00000000000d"].exists()  # 0755 is not writable by others: swept
    assert foreign.exists()
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons == {"session-00000000000a": "writable by group or others", "session-00000000000b": "writable by group or others",
                       "session-00000000000c": "writable by group or others", "session-00000000000e": "owned by another user"}
    assert len(warnings) == 4 and root.is_dir()


@pytest.mark.parametrize("mode", [0o770, 0o702])
def test_unsafe_root_is_not_swept(tmp_path, mode):
    root = mkroot(tmp_path / "root")
    f = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    root.chmod(mode)
    report, warnings = sweep([SweepRoot(str(root), True)])
    assert f.exists() and report.removed == [] and any("skipped unsafe root" in w for w in warnings)


def test_unprotected_ancestor_makes_the_root_unsafe(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by all, not sticky: anyone could swap the root
    root = mkroot(shared / "root")
    f = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    _, warnings = sweep([SweepRoot(str(root), False)])
    assert f.exists() and any("ancestor" in w for w in warnings)
    shared.chmod(0o1777)  # sticky (like /tmp) with a root owned by the user: admitted
    sweep([SweepRoot(str(root), False)])
    assert not f.exists()


def test_sweep_as_nobody_skips_what_nobody_does_not_own(nobody_tmp):
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to run the sweep as nobody")
    root = mkroot(nobody_tmp / "root")
    mine = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    theirs = plant(root / SID2 / "aaaaaaaaaaaa-x.txt", OLD_NS)
    for p in (root, root / SID, mine):
        os.chown(p, 65534, 65534)
    (root / SID2).chmod(0o755)  # readable by nobody, but root's: another user's dir
    code = ("import json,sys; from spillscope.spill.sweep import sweep_spill_roots, SweepRoot\n"
            f"w=[]; r=sweep_spill_roots([SweepRoot({str(root)!r}, False)], {CUTOFF}, w.append)\n"
            "print(json.dumps({'removed':[x.path for x in r.removed],'skipped':[[s.path,s.reason] for s in r.skipped],'warn':w}))")
    proc = subprocess.run([*nobody.python(), "-c", code], capture_output=True, text=True, env=nobody.env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["removed"] == [str(mine), str(root / SID)]
    assert out["skipped"] == [[str(root / SID2), "owned by another user"]]
    assert theirs.exists() and not mine.exists() and root.is_dir()


def test_file_written_during_the_sweep_survives(tmp_path):
    root = mkroot(tmp_path / "root")
    old = plant(root / session_dir_name("sess-1") / "aaaaaaaaaaaa-bash.txt", OLD_NS)
    writer = LocalSpillStore(root, cleanup_period_days=0)
    written = []

    def write_now(path: str) -> None:
        # Called by the sweep after it listed the session dir: a real save lands meanwhile.
        ref = writer.save_text_sync(SaveTextSpill(SpillOwner("sess-1"), ToolSource("bash", "c", "result"), "bash.txt", "new"))
        written.append(ref.locator)
        return None

    report, _ = sweep([SweepRoot(str(root), True)], keep=write_now)
    assert not old.exists()
    assert len(written) == 1 and Path(written[0]).read_text() == "new"  # survived, and so did its dir
    assert [r.kind for r in report.removed] == ["file"]


def test_file_replaced_under_the_same_name_during_the_sweep_survives(tmp_path):
    root = mkroot(tmp_path / "root")
    old = plant(root / SID / "aaaaaaaaaaaa-bash.txt", OLD_NS)

    def replace(path: str) -> None:
        os.unlink(path)
        Path(path).write_text("fresh")  # a new inode with a fresh mtime under the old name
        return None

    report, _ = sweep([SweepRoot(str(root), True)], keep=replace)
    assert old.read_text() == "fresh" and report.removed == []


def test_concurrent_writer_never_loses_a_file(tmp_path):
    """Sweeps that keep pruning emptied session dirs race a writer making them again."""
    root = mkroot(tmp_path / "root")
    store = LocalSpillStore(root, cleanup_period_days=0)
    stop = threading.Event()
    saved: list[str] = []
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for i in range(300):
                ref = store.save_text_sync(SaveTextSpill(SpillOwner(f"s{i % 3}"), ToolSource("t", "c", "result"), "t.txt", str(i)))
                saved.append(ref.locator)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    t = threading.Thread(target=write)
    t.start()
    sweeps = 0
    while not stop.is_set():
        for i in range(3):
            plant(root / session_dir_name(f"s{i}") / f"{sweeps:012x}-old.txt", OLD_NS)
        sweep([SweepRoot(str(root), False)])
        sweeps += 1
    t.join()
    assert errors == [] and len(saved) == 300
    assert all(Path(p).exists() for p in saved)
    assert sweeps > 0


def test_prior_default_roots(tmp_path):
    base = tmp_path / "tmp"
    base.mkdir()
    empty = mkroot(base / "dsh-spill-AbC123")
    emptied = mkroot(base / "dsh-spill-x0Y9z8")
    plant(emptied / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    live = mkroot(base / "dsh-spill-LIVE01")
    fresh = plant(live / SID / "aaaaaaaaaaaa-x.txt", NEW_NS)
    stray = mkroot(base / "dsh-spill-Stray1")
    plant(stray / "notes.txt", OLD_NS)
    odd = [mkroot(base / n) for n in ("dsh-spill-AbC12", "dsh-spill-AbC1234", "dsh-spill-test-1", "dsh-spill-Ab_123")]
    unsafe = mkroot(base / "dsh-spill-unsafe")
    unsafe.chmod(0o770)
    (base / "dsh-spill-Link00").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    active = mkroot(base / "dsh-spill-Active")
    plant(active / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    warnings: list[str] = []
    roots = gather_sweep_roots([str(active)], warnings.append, str(base))
    assert {(Path(r.path).name, r.prune_when_empty) for r in roots} == {
        ("dsh-spill-AbC123", True), ("dsh-spill-x0Y9z8", True), ("dsh-spill-LIVE01", True),
        ("dsh-spill-Stray1", True), ("dsh-spill-Active", False)}
    report, _ = sweep(roots)
    assert not empty.exists() and not emptied.exists()
    assert fresh.exists() and (stray / "notes.txt").exists()
    assert all(p.is_dir() for p in odd) and unsafe.is_dir() and (tmp_path / "elsewhere").is_dir()
    assert active.is_dir() and os.listdir(active) == []  # emptied, but the active root stays
    assert {r.path for r in report.removed if r.kind == "root"} == {str(empty), str(emptied)}


def test_dry_run_changes_nothing_and_lists_what_apply_removes(tmp_path):
    base = tmp_path / "tmp"
    base.mkdir()
    prior = mkroot(base / "dsh-spill-AbC123")
    plant(prior / SID / "aaaaaaaaaaaa-x.txt", OLD_NS, "12345")
    root = mkroot(tmp_path / "root")
    plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS, "123")
    plant(root / SID2 / "aaaaaaaaaaaa-x.txt", OLD_NS)
    plant(root / SID2 / "bbbbbbbbbbbb-x.txt", NEW_NS)
    roots = gather_sweep_roots([str(root)], lambda m: None, str(base))
    before = tree(tmp_path)
    dry, _ = sweep(roots, dry_run=True)
    assert tree(tmp_path) == before
    applied, _ = sweep(roots)
    assert [(r.path, r.kind, r.bytes) for r in dry.removed] == [(r.path, r.kind, r.bytes) for r in applied.removed]
    assert dry.bytes_freed == applied.bytes_freed == 9
    assert not any(os.path.lexists(r.path) for r in applied.removed)
    assert set(before) - set(tree(tmp_path)) == {os.path.relpath(r.path, tmp_path) for r in applied.removed}


def test_warning_sink_that_raises_does_not_stop_the_sweep(tmp_path):
    root = mkroot(tmp_path / "root")
    f = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    (root / SID2).mkdir(mode=0o777)
    (root / SID2).chmod(0o777)

    def boom(message: str) -> None:
        raise RuntimeError(message)

    sweep_spill_roots([SweepRoot(str(root), False)], CUTOFF, boom)
    assert not f.exists()


def test_store_runs_the_sweep_at_start_up(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(local_module, "default_roots_base", lambda: str(base))
    prior = mkroot(base / "dsh-spill-AbC123")
    root = mkroot(tmp_path / "root")
    old = plant(root / SID / "aaaaaaaaaaaa-x.txt", (local_module.cutoff_ms(31 * MS_PER_DAY)) * 10**6)
    new = plant(root / SID2 / "aaaaaaaaaaaa-x.txt", (local_module.cutoff_ms(29 * MS_PER_DAY)) * 10**6)
    store = LocalSpillStore(root)
    report = store.wait_for_cleanup()
    assert report is not None and not old.exists() and new.exists() and not prior.exists()
    assert not (root / SID).exists() and root.is_dir()
    # cleanup_period_days=0 disables it: nothing runs, nothing is reported.
    old2 = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    assert LocalSpillStore(root, cleanup_period_days=0).wait_for_cleanup() is None and old2.exists()
    # A longer period keeps what the default would delete.
    LocalSpillStore(root, cleanup_period_days=100_000).wait_for_cleanup()
    assert old2.exists()


def test_default_root_is_named_like_node_mkdtemp_and_kept_active(tmp_path, monkeypatch):
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(local_module, "default_roots_base", lambda: str(base))
    first = LocalSpillStore()
    first.wait_for_cleanup()
    root = first.root  # made now, empty: a later store's sweep must not remove it
    assert local_module.DEFAULT_ROOT_PREFIX == "dsh-spill-"
    assert len(root.name) == 16 and root.name[10:].isalnum() and root.name[10:].isascii()
    second = LocalSpillStore()
    second.wait_for_cleanup()
    assert root.is_dir() and second.root == root
    # A configured root's store sweeps away an empty prior default root of another process,
    # but never this process's own default root (the reference would: it is not *its* root).
    other = mkroot(base / "dsh-spill-Other1")
    LocalSpillStore(tmp_path / "configured").wait_for_cleanup()
    assert not other.exists() and root.is_dir()


async def test_save_after_the_sweep_pruned_the_session_dir(tmp_path):
    root = mkroot(tmp_path / "root")
    plant(root / session_dir_name("sess-1") / "aaaaaaaaaaaa-bash.txt", OLD_NS)
    store = LocalSpillStore(root)
    store.wait_for_cleanup()
    assert os.listdir(root) == []
    ref = await store.save_text(SaveTextSpill(SpillOwner("sess-1"), ToolSource("bash", "c", "result"), "bash.txt", "hi"))
    assert Path(ref.locator).read_text() == "hi"


@pytest.mark.parametrize("seed", range(6))
def test_forecast_is_exactly_the_sweep(tmp_path, seed):
    """The inspector's past-retention forecast and the sweep (prune's dry run, then the real
    thing) agree on random trees: mtimes at, just around and far from the cutoff (ms-exact,
    ±1 µs, ±1 ns, float-unfriendly), safe/unsafe/foreign/symlinked session dirs, symlinks,
    FIFOs, nested dirs and odd names."""
    import random

    from spillscope.inspect.verify.inspection import inspect_root

    rng = random.Random(seed)
    root = mkroot(tmp_path / "root")
    now_s = 1_790_000_123  # whole seconds: "now" is the same instant to both
    retention_s = rng.choice([1, 3600, 7 * 86400, 30 * 86400, 1.5])
    cutoff = cutoff_ms(round(retention_s * 1000), now_s * 1000)
    offsets_ns = [0, 1, -1, 999, -999, 1000, -1000, 244, -244, 10**6, -10**6, 123_456_789, -123_456_789,
                  -86_400 * 10**9, 86_400 * 10**9]
    dirs = []
    for d in range(8):
        name = f"session-{d:012x}"
        kind = rng.choice(["ok", "ok", "ok", "groupw", "otherw", "foreign", "symlink", "0755"])
        if kind == "symlink":
            target = mkroot(tmp_path / f"outside{d}")
            plant(target / "000000000000-x.txt", (cutoff - 10**9) * 10**6)
            (root / name).symlink_to(target)
            continue
        sdir = mkroot(root / name)
        for i in range(rng.randint(0, 12)):
            mtime_ns = cutoff * 10**6 + rng.choice(offsets_ns) + rng.choice([0, 0, rng.randint(-10**12, 10**12)])
            plant(sdir / f"{i:012x}-f{i}.txt", mtime_ns)
        if rng.random() < 0.3:
            (sdir / "ffffffffffff-link.txt").symlink_to(tmp_path / "nowhere")
        if rng.random() < 0.2:
            os.mkfifo(sdir / "eeeeeeeeeeee-fifo.txt")
            os.utime(sdir / "eeeeeeeeeeee-fifo.txt", ns=(OLD_NS, OLD_NS))
        if rng.random() < 0.2:
            plant(sdir / "nested" / "000000000000-x.txt", OLD_NS)
        mode = {"groupw": 0o770, "otherw": 0o702, "0755": 0o755}.get(kind, 0o700)
        sdir.chmod(mode)
        if kind == "foreign":
            os.chown(sdir, 65534, 65534)
        dirs.append(sdir)
    plant(root / "session-backup" / "000000000000-x.txt", OLD_NS)
    ins = inspect_root(root, retention_seconds=retention_s, now=float(now_s))
    forecast = sorted(f.path for f in ins.findings if f.code == "past-retention")
    dry, _ = sweep([SweepRoot(str(root), False)], cutoff=cutoff, dry_run=True)
    assert forecast == sorted(r.path for r in dry.files())
    applied, _ = sweep([SweepRoot(str(root), False)], cutoff=cutoff)
    assert sorted(r.path for r in applied.files()) == forecast
    assert not any(os.path.lexists(p) for p in forecast)


def test_forecast_is_for_the_roots_owner_and_names_live_notices(tmp_path, nobody_tmp):
    from spillscope.frontends.demo import write_demo
    from spillscope.inspect.verify.inspection import inspect_root

    # In sticky /tmp, the ancestors are safe for nobody only below a dir nobody owns.
    root = mkroot(nobody_tmp / "root")
    theirs = plant(root / SID / "aaaaaaaaaaaa-x.txt", OLD_NS)
    mine = plant(root / SID2 / "aaaaaaaaaaaa-x.txt", OLD_NS)
    for p in (root, root / SID):
        os.chown(p, 65534, 65534)
    # The harness owning the root is nobody: its sweep deletes in its own dir, skips root's.
    ins = inspect_root(root, retention_seconds=30 * 86400, now=NOW_MS / 1000)
    assert [f.path for f in ins.findings if f.code == "past-retention"] == [str(theirs)]
    assert mine.exists()
    # Under a root-owned dir in sticky /tmp, nobody's sweep would not trust the root at all.
    moved = tmp_path / "root"
    os.rename(root, moved)
    ins = inspect_root(moved, retention_seconds=30 * 86400, now=NOW_MS / 1000)
    assert [f for f in ins.findings if f.code == "past-retention"] == []

    demo = write_demo(tmp_path / "demo")
    ins = inspect_root(demo.root, demo.logs, retention_seconds=1, now=os.stat(demo.root).st_mtime + 86400)
    details = {Path(f.path).name: f.detail for f in ins.findings if f.code == "past-retention"}
    assert len(details) == 5
    named = [d for d in details.values() if "still named by a notice at" in d]
    assert len(named) == 4 and all("session.v3.jsonl:" in d for d in named)
