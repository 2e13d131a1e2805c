"""The inspector core: every finding code from a planted fixture, none from clean ones."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from spillscope.inspect import inspect_root, resolve_locator, scan_root
from spillscope.inspect.findings import CODES
from spillscope.spill.naming import session_dir_name


def codes(ins):
    return {f.code for f in ins.findings}


def test_upstream_fixtures_verify_clean(upstream_copy, manifest):
    root, logs = upstream_copy
    ins = inspect_root(root, logs)
    assert codes(ins) == {"orphan-artifact", "snapshot-unavailable"}
    orphans = sorted(Path(f.path).name for f in ins.findings if f.code == "orphan-artifact")
    # The notice-too-big orphan and the dispatch-log copy (no log event) are the only ones.
    assert orphans == ["98ddd392207f-bash.txt", "9bd982b85f0e-huge_read.txt"]
    linked = [l for l in ins.references if l.status == "resolves"]
    assert len(linked) == 9 and all(l.disagreements == [] for l in linked)
    assert len(ins.tool_spills) == 6 and all(t.status == "resolves" and not t.findings for t in ins.tool_spills)
    # Session dirs map back to their sessions through the logs.
    assert ins.session_ids["session-349c03b8a331"] == "0b9f6c1e-3c1a-4e61-9d7a-5b2f0a1c7e01"


def test_upstream_originals_with_rebase(manifest, tmp_path):
    from conftest import UPSTREAM

    root = tmp_path / "root"
    shutil.copytree(UPSTREAM / "spill-root", root)
    ins = inspect_root(root, UPSTREAM / "sessions", rebase=manifest["spillRoot"]["originalRoot"])
    assert "expired-locator" not in codes(ins) and "outside-root" not in codes(ins)
    without = inspect_root(root, UPSTREAM / "sessions")
    assert "outside-root" in codes(without)


def test_demo_is_clean_apart_from_its_planted_expiry_and_orphan(tmp_path):
    demo = write_demo(tmp_path / "demo")
    ins = inspect_root(demo.root, demo.logs)
    assert sorted(f.code for f in ins.findings) == ["expired-locator", "orphan-artifact", "snapshot-unavailable"]
    orphan = next(f for f in ins.findings if f.code == "orphan-artifact")
    assert orphan.path.endswith("-pytest.txt") and orphan.session == "demo-tools"
    assert all(CODES[f.code][0] != "error" for f in ins.findings)
    # Without the logs nothing can be an orphan (or expired): the root alone is clean.
    assert codes(inspect_root(demo.root)) == set()


def _rewrite_log(logs: Path, old: str, new: str) -> Path:
    for log in logs.rglob("session.v3.jsonl"):
        data = log.read_text("utf-8")
        if old in data:
            log.write_text(data.replace(old, new, 1), "utf-8")
            return log
    raise AssertionError(f"{old!r} not found in any log")


@pytest.fixture
def planted(upstream_copy):
    return upstream_copy


def _art(root: Path, name: str) -> Path:
    return next(root.rglob(f"*{name}"))


def test_expired_locator(planted):
    root, logs = planted
    _art(root, "097f857f0415-session-reference-1.txt").unlink()
    ins = inspect_root(root, logs)
    f = next(f for f in ins.findings if f.code == "expired-locator")
    assert f.locator.endswith("097f857f0415-session-reference-1.txt") and f.line == 7 and f.path.endswith("session.v3.jsonl")


def test_bytes_mismatch(planted):
    root, logs = planted
    _rewrite_log(logs, '\\"bytes\\":1608', '\\"bytes\\":1609')
    ins = inspect_root(root, logs)
    f = next(f for f in ins.findings if f.code == "bytes-mismatch")
    assert "logged 1609, on disk 1608" in f.detail


def test_omission_mismatch(planted):
    root, logs = planted
    _rewrite_log(logs, '\\"omittedBytes\\":904', '\\"omittedBytes\\":905')
    ins = inspect_root(root, logs)
    f = next(f for f in ins.findings if f.code == "omission-mismatch")
    assert "omittedBytes: logged 905, recomputed 904" in f.detail


def test_malformed_and_incomplete_artifact(planted):
    root, logs = planted
    bad = _art(root, "9651076a0926-session-reference-1.txt")
    lines = bad.read_bytes().split(b"\n")
    idx = next(i for i, l in enumerate(lines) if l.startswith(b'"'))
    lines[idx] = b"not json"
    bad.write_bytes(b"\n".join(lines))
    cut = _art(root, "e2b3ab57cf98-session-reference-1.txt")
    cut.write_bytes(cut.read_bytes()[:900])
    ins = inspect_root(root, logs)
    mal = next(f for f in ins.findings if f.code == "malformed-artifact")
    assert mal.path == str(bad) and mal.line == idx + 1
    inc = next(f for f in ins.findings if f.code == "incomplete-artifact")
    assert inc.path == str(cut)
    # The rest of the browse keeps working.
    assert sum(1 for l in ins.references if l.status == "resolves" and not l.disagreements) >= 5


def test_foreign_owner(planted):
    root, logs = planted
    art = _art(root, "2765f89cd625-session-reference-2.txt")
    other = root / "session-e71fce63634d" / art.name
    art.rename(other)
    _rewrite_log(logs, str(art), str(other))
    ins = inspect_root(root, logs)
    f = next(f for f in ins.findings if f.code == "foreign-owner")
    assert f.path == str(other) and "session-63abfcd60ae0" in f.detail


@pytest.mark.parametrize("locator", ["/etc/passwd", "../x", "C:\\spill\\x.txt", "s3://bucket/key", "relative/x.txt"])
def test_outside_root(planted, locator):
    root, logs = planted
    old = str(_art(root, "b82b05c5af7c-session-reference-3.txt"))
    # The locator sits in JSON inside a JSON string in the log: escape it twice.
    _rewrite_log(logs, old, json.dumps(json.dumps(locator)[1:-1])[1:-1])
    ins = inspect_root(root, logs)
    assert any(f.code == "outside-root" for f in ins.findings)


def test_locator_with_dotdot_inside_root_is_not_followed(tmp_path):
    root = str(tmp_path / "root")
    assert resolve_locator(root + "/session-aaaaaaaaaaaa/../x", root)[0] is None
    assert resolve_locator(root + "/session-aaaaaaaaaaaa/x\x00y", root)[0] is None
    assert resolve_locator(root + "/session-aaaaaaaaaaaa/x", root)[0] == root + "/session-aaaaaaaaaaaa/x"


def test_insecure_permissions_symlink_unexpected(planted, tmp_path):
    root, logs = planted
    _art(root, "08f0cfdad2a6-glob.txt").chmod(0o644)
    (root / "session-2aeeb37ec361").chmod(0o755)
    secret = tmp_path / "secret"
    secret.write_text("x")
    (root / "session-2aeeb37ec361" / "aaaaaaaaaaaa-session-reference-9.txt").symlink_to(secret)
    os.mkfifo(root / "session-2aeeb37ec361" / "bbbbbbbbbbbb-bash.txt")
    (root / "session-2aeeb37ec361" / "cccccccccccc-dir.txt").mkdir()
    (root / "stray-file").write_text("x")
    ins = inspect_root(root, logs)
    got = {(f.code, Path(f.path).name) for f in ins.findings}
    assert ("insecure-permissions", "08f0cfdad2a6-glob.txt") in got
    assert ("insecure-permissions", "session-2aeeb37ec361") in got
    assert ("symlink", "aaaaaaaaaaaa-session-reference-9.txt") in got
    assert ("unexpected-entry", "bbbbbbbbbbbb-bash.txt") in got  # a FIFO: never opened, never blocks
    assert ("unexpected-entry", "cccccccccccc-dir.txt") in got
    assert ("unexpected-entry", "stray-file") in got


def test_past_retention(planted):
    root, logs = planted
    old = _art(root, "5a5ecd9a2f51-session-reference-1.txt")
    then = time.time() - 10 * 86400
    os.utime(old, (then, then))
    ins = inspect_root(root, logs, retention_seconds=7 * 86400)
    assert [Path(f.path).name for f in ins.findings if f.code == "past-retention"] == [old.name]


def test_malformed_log_and_notice(planted):
    root, logs = planted
    log = _rewrite_log(logs, '\\"omittedMessages\\":13', '\\"omittedMessages\\":-13')
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"type": "user/message", "seq": 99, broken\n{"torn": ')
    ins = inspect_root(root, logs)
    bad_lines = sorted(f.line for f in ins.findings if f.code == "malformed-log" and f.path == str(log))
    n = len(log.read_text("utf-8").split("\n"))
    assert bad_lines == [n - 1, n]
    notice = next(f for f in ins.findings if f.code == "malformed-notice")
    assert "omittedMessages is not a non-negative integer" in notice.detail and notice.line == 7


def _without_dac(cmd: list[str]) -> list[str]:
    """Run ``cmd`` so that file permissions apply even to root (drop the DAC override caps)."""
    if os.geteuid() != 0:
        return cmd
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to drop root's permission override")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *cmd]


def test_unreadable_is_a_finding_and_the_scan_goes_on(tmp_path):
    demo = write_demo(tmp_path / "demo")
    locked = next(demo.root.rglob("*-session-reference-1.txt"))
    locked.chmod(0o000)
    code = (
        "import json,sys; from spillscope.inspect import inspect_root;"
        f"ins=inspect_root({str(demo.root)!r}, {str(demo.logs)!r});"
        "print(json.dumps([[f.code, f.path] for f in ins.findings]))"
    )
    out = subprocess.run(_without_dac([sys.executable, "-c", code]), capture_output=True, text=True, check=True)
    found = json.loads(out.stdout)
    assert ["unreadable", str(locked)] in found
    assert any(code == "expired-locator" for code, _ in found)  # the rest was still verified


def test_scan_reads_no_content_and_never_follows(tmp_path):
    root = tmp_path / "root"
    (root / session_dir_name("s")).mkdir(parents=True)
    (root / session_dir_name("s")).chmod(0o700)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "aaaaaaaaaaaa-bash.txt").write_text("x")
    (root / "session-000000000000").symlink_to(outside)
    scan = scan_root(root)
    assert [f.code for f in scan.findings] == ["symlink"]
    assert all(not a.path.startswith(str(outside)) for a in scan.artifacts())


def test_zstd_logs_read_like_plain_ones(upstream_copy):
    """zstd is the upstream default: the same logs, compressed, give the same links."""
    import zstandard

    root, logs = upstream_copy
    plain = inspect_root(root, logs)
    for log in list(logs.rglob("session.v3.jsonl")):
        data = log.read_bytes()
        # Several frames, as an appending writer produces.
        half = len(data) // 2
        cctx = zstandard.ZstdCompressor()
        (log.parent / "session.v3.jsonl.zstd").write_bytes(cctx.compress(data[:half]) + cctx.compress(data[half:]))
        log.unlink()
    zipped = inspect_root(root, logs)
    assert codes(zipped) == codes(plain)
    assert [(l.entry.session_id, l.status) for l in zipped.references] == [(l.entry.session_id, l.status) for l in plain.references]
    assert len(zipped.tool_spills) == len(plain.tool_spills) == 6


def test_corrupt_zstd_log_is_a_located_finding(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    log = tmp_path / "logs" / "--p--" / "s" / "session.v3.jsonl.zstd"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"\x28\xb5\x2f\xfd not really zstd")
    ins = inspect_root(root, tmp_path / "logs")
    f = next(f for f in ins.findings if f.path == str(log))
    assert f.code == "malformed-log" and f.line == 1 and "decompress" in f.detail


def test_parallel_listing_equals_the_full_listing(tmp_path, monkeypatch):
    """`ls --json` without logs runs in worker processes; it must say exactly what the
    in-process inspection says, findings and their order included."""
    from spillscope.inspect.scan.listing import PARALLEL_MIN_DIRS, listing, listing_json

    root = tmp_path / "root"
    for d in range(PARALLEL_MIN_DIRS + 6):
        sdir = root / f"session-{d:012x}"
        sdir.mkdir(parents=True, mode=0o700)
        sdir.chmod(0o755 if d % 17 == 0 else 0o700)
        for i in range(d % 5):
            (sdir / f"{i:012x}-{'bash' if i % 2 else 'session-reference-1'}.txt").write_text("x")
            (sdir / f"{i:012x}-{'bash' if i % 2 else 'session-reference-1'}.txt").chmod(0o600)
        if d == 3:
            os.mkfifo(sdir / "aaaaaaaaaaaa-fifo.txt")
            (sdir / "bbbbbbbbbbbb-link.txt").symlink_to("/etc/passwd")
            (sdir / "not-an-artifact").write_text("x")
        if d == 4:  # names and stats off the fast path, or on it with awkward values
            odd = {
                "0123456789ab-~00E9t~00E9.txt": 0o600,  # decodes to non-ASCII
                "0123456789ac-~D800.txt": 0o600,  # decodes to a lone surrogate
                "cccccccccccc-bash.txt\n": 0o600,  # a trailing newline is not a valid name
                'dddddddddddd-a"b\\c.txt': 0o600,  # needs JSON escapes
                "ABCDEF012345-bash.txt": 0o600,  # upper-case prefix
                "eeeeeeeeeeee-bash.txt": 0o644,
                "ffffffffffff-": 0o600,
                "012345678900-old.txt": 0o600,
                "012345678901-future.txt": 0o600,
            }
            for name, mode in odd.items():
                (sdir / name).write_text("x")
                (sdir / name).chmod(mode)
            os.utime(sdir / "012345678900-old.txt", ns=(0, -315_619_200_123_456_789))
            os.utime(sdir / "012345678901-future.txt", ns=(0, 4_102_444_800_987_654_321))
            anchor = sdir / "0123456789ab-~00E9t~00E9.txt"
    (root / "stray").write_text("x")
    (root / "session-zzz").mkdir()
    now = anchor.lstat().st_mtime + 12.5  # an age of 12.500 s: a trailing zero either way
    fast = json.loads(listing_json(str(root), now, workers=2))
    slow = listing(inspect_root(root, None, check_content=False), now)
    assert fast == json.loads(json.dumps(slow))
    assert json.loads(listing_json(str(root), now, workers=1)) == fast
    # With progress: every path reports "scan" up to all session dirs, with the same JSON.
    dirs = PARALLEL_MIN_DIRS + 6
    for workers in (1, 2):
        told: list[tuple[str, int, int | None]] = []
        assert json.loads(listing_json(str(root), now, workers=workers, progress=lambda *a: told.append(a))) == fast
        assert told[-1] == ("scan", dirs, dirs) and [d for _, d, _ in told] == sorted(d for _, d, _ in told)
    monkeypatch.delattr(os, "memfd_create")  # where there is none, results come back pickled
    assert json.loads(listing_json(str(root), now, workers=2)) == fast
    told = []
    assert json.loads(listing_json(str(root), now, workers=2, progress=lambda *a: told.append(a))) == fast
    assert told[-1] == ("scan", dirs, dirs)
    assert fast["summary"] and len(fast["sessions"]) == PARALLEL_MIN_DIRS + 6
    odd = {a["name"]: a for a in fast["sessions"][4]["artifacts"]}
    assert odd["0123456789ab-~00E9t~00E9.txt"]["suggestedName"] == "\u00e9t\u00e9.txt"
    assert odd["0123456789ab-~00E9t~00E9.txt"]["ageSeconds"] == 12.5
    assert odd["0123456789ac-~D800.txt"]["suggestedName"] == "\ud800.txt"
    assert odd["cccccccccccc-bash.txt\n"]["kind"] == "unknown"
    assert odd['dddddddddddd-a"b\\c.txt']["findings"] == ["unexpected-entry"]
    assert odd["ABCDEF012345-bash.txt"]["kind"] == "unknown"
    assert odd["eeeeeeeeeeee-bash.txt"]["findings"] == ["insecure-permissions"]
    assert odd["012345678900-old.txt"]["mtime"] == -315619200.12345678
    assert odd["012345678901-future.txt"]["ageSeconds"] < 0


def test_names_match_whole_not_before_a_trailing_newline(tmp_path):
    """Python's `$` also matches before a final newline; a name ending in one is not the
    name without it (JavaScript's `$`, and the file system, see a different name)."""
    from spillscope.inspect.scan.tree import SESSION_DIR, classify_name
    from spillscope.formats.sessionlog import LOG_PATTERN

    assert classify_name("0123456789ab-bash.txt") == ("bash.txt", "tool-output")
    assert classify_name("0123456789ab-bash.txt\n") == (None, "unknown")
    assert classify_name("0123456789ab-session-reference-1.txt~000A") == ("session-reference-1.txt\n", "unknown")
    assert SESSION_DIR.match("session-0123456789ab\n") is None
    assert LOG_PATTERN.match("session.jsonl\n") is None
    (tmp_path / "session-0123456789ab\n").mkdir(mode=0o700)
    scan = scan_root(tmp_path)
    assert scan.sessions == [] and [f.code for f in scan.findings] == ["unexpected-entry"]


def _tool_log(logs: Path, session: str, call: str, content: list) -> None:
    """A v3 log of one tool result, as the harness writes it."""
    d = logs / "--w--" / session
    d.mkdir(parents=True)
    rows = [{"type": "session", "version": 3, "id": session, "createdAt": 1},
            {"type": "tool/result", "seq": 0, "time": 2, "surfaceOp": "append", "data": {"turn": 1, "step": 1, "message": {
                "source": {"kind": "tool", "callId": call}, "role": "tool", "id": "t",
                "content": [{"type": "tool-result", "toolCallId": call, "content": content, "isError": False}]}}}]
    (d / "session.v3.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_tool_named_like_a_transcript_is_tool_output(tmp_path):
    import asyncio

    from spillscope.spill import LocalSpillStore, SpillPolicy

    root, logs = tmp_path / "root", tmp_path / "logs"
    policy = SpillPolicy(400, LocalSpillStore(root))
    out = asyncio.run(policy.bound_result(tool_name="session-reference-1", call_id="c1", content="x" * 5000,
                                          owner_session_id="s1"))
    _tool_log(logs, "s1", "c1", list(out.content))
    (spilled,) = root.rglob("*-session-reference-1.txt")
    # The name alone says transcript; the tool-spill notice that names it says otherwise.
    assert scan_root(str(root)).artifacts()[0].kind == "session-reference-transcript"
    ins = inspect_root(root, logs)
    assert codes(ins) == set()
    assert [(a.path, a.kind) for a in ins.scan.artifacts()] == [(str(spilled), "tool-output")]
    assert ins.tool_spills[0].status == "resolves" and ins.tool_spills[0].artifact.kind == "tool-output"
    # With no notice naming it, its first line decides.
    alone = inspect_root(root)
    assert codes(alone) == set() and alone.scan.artifacts()[0].kind == "tool-output"


def test_an_unnamed_transcript_cut_inside_its_title_stays_a_transcript(tmp_path):
    sdir = tmp_path / "root" / "session-000000000000"
    sdir.mkdir(parents=True, mode=0o700)
    for name, data in (("aaaaaaaaaaaa-session-reference-1.txt", "## Referenced sess".encode()),
                       ("bbbbbbbbbbbb-session-reference-2.txt", b"")):
        (sdir / name).write_bytes(data)
        (sdir / name).chmod(0o600)
    ins = inspect_root(tmp_path / "root")
    assert {a.kind for a in ins.scan.artifacts()} == {"session-reference-transcript"}
    assert {(Path(f.path).name, f.code) for f in ins.findings} == {
        ("aaaaaaaaaaaa-session-reference-1.txt", "incomplete-artifact"),
        ("bbbbbbbbbbbb-session-reference-2.txt", "incomplete-artifact")}


@pytest.mark.parametrize("tamper, finding_detail", [(None, None), ("head", "preview head"), ("tail", "preview tail")])
def test_fork_variant_notice_is_checked_on_both_sides_of_its_gap(tmp_path, tamper, finding_detail):
    from spillscope.spill import RETRIEVAL_HINT

    root, logs = tmp_path / "root", tmp_path / "logs"
    sdir = root / session_dir_name("s1")
    sdir.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    content = "".join(f"line {i:04d} 界😀\n" for i in range(500))
    art = sdir / "aaaaaaaaaaaa-bash.txt"
    art.write_text(content, "utf-8")
    art.chmod(0o600)
    head, tail = content[:300], content[-200:]
    if tamper == "head":
        head = "X" + head[1:]
    elif tamper == "tail":
        tail = tail[:-2] + "Y\n"
    text = (head + "\n\n[...]\n\n" + tail + f"\n\n(Omitted 1234 bytes. Omitted 2 images. Full formatted result stored at: "
            f"{art}. {RETRIEVAL_HINT})")
    _tool_log(logs, "s1", "c1", [{"type": "text", "text": text}])
    ins = inspect_root(root, logs)
    assert ins.tool_spills[0].entry.notice.fork_gap
    found = [f for f in ins.findings if f.code == "omission-mismatch"]
    assert [f.detail for f in ins.findings if f.code == "notice-dialect"] == [
        "tool result c1: spill notice in the omitted-images+gap dialect "
        "(the reference's hasSpillNotice does not recognise an images clause)"]
    if tamper is None:
        assert codes(ins) == {"notice-dialect"}
    else:
        assert len(found) == 1 and finding_detail in found[0].detail and found[0].line == 2
