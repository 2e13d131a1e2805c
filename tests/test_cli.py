"""The CLI through its real entry point (subprocess): ls, cat, verify, watch, demo."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spillscope.frontends.format import human_size
from spillscope.frontends.demo import write_demo

from conftest import UPSTREAM
from test_watch import WatchProcess


def run(*args: str, check: bool = False, **kw) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, timeout=120, **kw)
    if check:
        assert proc.returncode == 0, proc.stderr.decode()
    return proc


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo(tmp_path_factory.mktemp("d") / "demo")


def test_console_script_and_module_agree(demo):
    a = run("ls", str(demo.root), "--json", check=True)
    exe = Path(sys.executable).parent / "spillscope"
    b = subprocess.run([str(exe), "ls", str(demo.root), "--json"], capture_output=True, check=True)
    strip = lambda d: [(s["dir"], [x["name"] for x in s["artifacts"]]) for s in json.loads(d)["sessions"]]
    assert strip(a.stdout) == strip(b.stdout)


def test_ls_json_shape(demo):
    data = json.loads(run("ls", str(demo.root), "--logs", str(demo.logs), "--json", check=True).stdout)
    kinds = sorted(a["kind"] for s in data["sessions"] for a in s["artifacts"])
    assert kinds == ["session-reference-transcript"] + ["tool-output"] * 4
    ids = {s["sessionId"] for s in data["sessions"]}
    assert {"demo-tools", "demo-target-research", "demo-target-build"} <= ids
    assert data["summary"] == {"expired-locator": 1, "orphan-artifact": 1, "snapshot-unavailable": 1}
    for s in data["sessions"]:
        for a in s["artifacts"]:
            assert a["mode"] == "0600" and a["size"] > 0 and a["ageSeconds"] >= 0


def test_ls_human_table(demo):
    out = run("ls", str(demo.root), "--logs", str(demo.logs), check=True).stdout.decode()
    assert "demo-tools" in out and "session-reference-transcript" in out and "expired-locator" in out
    total = sum(p.stat().st_size for p in demo.root.glob("session-*/*"))
    assert f"(3 sessions, 5 artifacts, {human_size(total)})" in out
    assert re.search(r"  1 artifact  [0-9.]+ KiB  0700", out) and "  0 artifacts  0 B  0700" in out
    assert re.search(r"-pytest\.txt  \[orphan-artifact\]\n", out)


def test_verify_demo_fails_on_its_warnings_and_fail_on_is_respected(demo):
    # The demo has an expired locator and an orphan (warnings) and a reference made with
    # no storage (info): by default warnings fail, info is only reported.
    default = run("verify", str(demo.root), "--logs", str(demo.logs))
    assert default.returncode == 1 and default.stdout.splitlines()[-1] == b"FAIL: 2 findings at or above --fail-on (1 below it)"
    ok = run("verify", str(demo.root), "--logs", str(demo.logs), "--json", "--fail-on", "error")
    assert ok.returncode == 0, ok.stdout
    report = json.loads(ok.stdout)
    assert report["summary"] == {"expired-locator": 1, "orphan-artifact": 1, "snapshot-unavailable": 1}
    f = next(f for f in report["findings"] if f["code"] == "expired-locator")
    assert set(f) == {"code", "severity", "path", "line", "session", "locator", "detail"}
    assert f["line"] == 3 and f["session"] == "demo-target-build"
    strict = run("verify", str(demo.root), "--logs", str(demo.logs), "--fail-on", "expired-locator")
    assert strict.returncode == 1 and b"FAIL" in strict.stdout
    assert run("verify", str(demo.root), "--fail-on", "warning,nonsense").returncode == 2
    assert run("verify", "/nonexistent/root").returncode == 2


def test_verify_upstream_clean(upstream_copy):
    root, logs = upstream_copy
    proc = run("verify", str(root), "--logs", str(logs), "--json", "--fail-on", "error")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["summary"] == {"orphan-artifact": 2, "snapshot-unavailable": 2}
    assert run("verify", str(root), "--logs", str(logs)).returncode == 1  # orphans are warnings


def test_verify_fails_on_a_mismatch(upstream_copy):
    root, logs = upstream_copy
    log = next(p for p in logs.rglob("session.v3.jsonl") if '\\"omittedBytes\\":904' in p.read_text("utf-8"))
    log.write_text(log.read_text("utf-8").replace('\\"omittedBytes\\":904', '\\"omittedBytes\\":1'), "utf-8")
    proc = run("verify", str(root), "--logs", str(logs), "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["summary"]["omission-mismatch"] >= 1


def test_verify_retention(demo):
    proc = run("verify", str(demo.root), "--retention", "0s", "--json", "--fail-on", "past-retention")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["summary"]["past-retention"] == 5


@pytest.mark.parametrize("odd", ["plain", "\x7f", "\u00e9", "\udcff", "\U0001F600\x1b"])
def test_verify_json_chunked_findings_are_the_whole_document(odd, tmp_path):
    """verify --json encodes its findings a chunk at a time; the text must be what one
    ascii_json call on the whole report gives, whichever chunk holds the odd name (DEL,
    non-ASCII and lone surrogates escaped, as the stdlib's ensure_ascii escapes them)."""
    from spillscope.frontends.cli.output import CHUNK
    from spillscope.inspect.scan.listing import ascii_json

    sdir = tmp_path / "root" / "session-000000000001"
    sdir.mkdir(parents=True, mode=0o700)
    (tmp_path / "logs").mkdir()
    names = [f"{i:012x}-bash.txt" for i in range(CHUNK + 2)]
    # Findings come in name order, the scan's first: the DEL name's (index 0), a 0644
    # file's each (1 to CHUNK), the odd name's (CHUNK + 1): DEL alone in the first chunk.
    names[0] = "000000000000-b\x7fsh.txt"
    names[CHUNK + 1] = f"{CHUNK + 1:012x}-b{odd}sh.txt"  # \udcff: the byte 0xff, undecodable
    for i, name in enumerate(names):
        fd = os.open(os.fsencode(sdir / name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(fd, 0o644 if 0 < i <= CHUNK else 0o600)
        os.close(fd)
    proc = run("verify", str(tmp_path / "root"), "--logs", str(tmp_path / "logs"), "--json")
    assert proc.returncode == 1, proc.stderr  # the orphans (warnings) fail
    report = json.loads(proc.stdout)
    text, whole = proc.stdout.decode("ascii"), ascii_json(report) + "\n"
    at = next((i for i, (a, b) in enumerate(zip(text, whole)) if a != b), min(len(text), len(whole)))
    if text != whole:  # not an assert: pytest's diff of two megabyte strings takes minutes
        pytest.fail(f"differs at {at}: {text[at - 20 : at + 20]!r} vs {whole[at - 20 : at + 20]!r}")
    orphans = [f["path"] for f in report["findings"] if f["code"] == "orphan-artifact"]
    assert orphans == [str(sdir / n) for n in names]


def test_write_json_members_matches_ascii_json_at_every_chunk_size():
    from spillscope.frontends.cli.output import Chunked, write_json_members
    from spillscope.inspect.scan.listing import ascii_json
    import io

    texts = ["a", "\x7f", "\u00e9", "\ud800", "\n\"\\\x1b", "\U0001F600"]
    for n in range(8):
        for odd in range(len(texts)):
            items = ["\x7f"] + [texts[0]] * n + [texts[odd]]
            for chunk in (1, 2, 3, 4096):
                members = {"before": {"k": [1, None, True]}, "items": Chunked(items, lambda t: {"text": t, "n": 1}),
                           "after": texts[odd] if n == 0 else "a"}
                out = io.StringIO()
                write_json_members(out, members, chunk)
                whole = dict(members, items=[{"text": t, "n": 1} for t in items])
                assert out.getvalue() == ascii_json(whole) + "\n", (n, odd, chunk)
    out = io.StringIO()
    write_json_members(out, {"none": Chunked([], str), "ok": True})
    assert out.getvalue() == '{"none":[],"ok":true}\n'


def test_cat_json_is_exact_for_every_upstream_transcript(manifest):
    for art in manifest["artifacts"]:
        if art["kind"] != "session-reference-transcript":
            continue
        proc = run("cat", str(UPSTREAM / "spill-root" / art["path"]), "--json", check=True)
        assert proc.stdout.isascii()
        data = json.loads(proc.stdout)
        assert [m["text"] for m in data["messages"]] == [m["text"] for m in art["messages"]]
        assert data["metadata"] == art["capture"] and data["complete"] is True
        assert data["kind"] == "session-reference-transcript"


def test_cat_message_plain_with_surrogate_warning(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("6b106d88b3ca-session-reference-2.txt"))
    # --raw: the exact text (lone surrogates as U+FFFD, said once); by default they are shown.
    proc = run("cat", str(UPSTREAM / "spill-root" / art["path"]), "--message", "1", "--raw", check=True)
    expected = art["messages"][0]["text"].encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode()
    assert proc.stdout == expected
    assert b"lone surrogate" in proc.stderr
    # The whole transcript: one warning with the total, however many chunks it took.
    whole = run("cat", str(UPSTREAM / "spill-root" / art["path"]), "--raw", check=True)
    total = sum(sum(0xD800 <= ord(c) <= 0xDFFF for c in m["text"]) for m in art["messages"])
    assert whole.stderr.decode().splitlines() == [
        f"spillscope: warning: {total} lone surrogate(s) written as U+FFFD (use --json to keep them)"]


def test_cat_message_exact_bytes_and_tool_output(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("e2b3ab57cf98-session-reference-1.txt"))
    path = str(UPSTREAM / "spill-root" / art["path"])
    for i, msg in enumerate(art["messages"], 1):
        if "\ud800" <= max(msg["text"]) and any(0xD800 <= ord(c) <= 0xDFFF for c in msg["text"]):
            continue
        assert run("cat", path, "--message", str(i), "--raw", check=True).stdout == msg["text"].encode()
    tool = next(a for a in manifest["artifacts"] if a["kind"] == "tool-output")
    tpath = UPSTREAM / "spill-root" / tool["path"]
    assert run("cat", str(tpath), "--raw", check=True).stdout == tpath.read_bytes()


def test_cat_message_out_of_range_is_an_error(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("e2b3ab57cf98-session-reference-1.txt"))
    path, n = str(UPSTREAM / "spill-root" / art["path"]), len(art["messages"])
    past = run("cat", path, "--message", str(n + 1))
    assert past.returncode == 2 and past.stdout == b""
    assert f"no message {n + 1}: the transcript has {n} messages".encode() in past.stderr
    as_json = run("cat", path, "--json", "--message", str(n + 1))
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["messages"] == []
    for bad in ("0", "-1", "two"):
        proc = run("cat", path, "--message", bad)
        assert proc.returncode == 2 and b"--message" in proc.stderr and b"Traceback" not in proc.stderr
    tool = next(a for a in manifest["artifacts"] if a["kind"] == "tool-output")
    tpath = str(UPSTREAM / "spill-root" / tool["path"])
    assert run("cat", tpath, "--message", "1", "--raw", check=True).stdout == Path(tpath).read_bytes()
    two = run("cat", tpath, "--message", "2")
    assert two.returncode == 2 and b"a tool output is one message" in two.stderr and two.stdout == b""


def test_cat_of_a_tool_output_named_like_a_transcript(tmp_path):
    odd = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    odd.write_bytes(b"plain tool output\r\n\x00 \xe7\x95\x8c")
    data = json.loads(run("cat", str(odd), "--json", check=True).stdout)
    assert data["kind"] == "tool-output" and data["metadata"] is None
    assert data["messages"] == [{"index": 1, "role": None, "text": "plain tool output\r\n\x00 \u754c"}]
    assert run("cat", str(odd), "--raw", check=True).stdout == odd.read_bytes()


def test_cat_json_is_one_document_wherever_a_transcript_is_cut(manifest, tmp_path, capsys):
    from spillscope.frontends.cli.main import main

    art = next(a for a in manifest["artifacts"] if a["path"].endswith("e2b3ab57cf98-session-reference-1.txt"))
    body = (UPSTREAM / "spill-root" / art["path"]).read_bytes()
    preamble = body.index(b"### Message 1")
    cut = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    for end in [*range(0, preamble + 40, 7), len(body) - 1]:
        cut.write_bytes(body[:end])
        rc = main(["cat", str(cut), "--json"])
        out = capsys.readouterr().out
        assert rc == 1, end  # incomplete: said on stderr, exit 1 (as for a file changed while read)
        data = json.loads(out)
        assert data["complete"] is False and data["kind"] == "session-reference-transcript"
        assert (data["metadata"] is None) == (end < body.index(b"Message text is stored"))


def test_cat_json_of_a_malformed_transcript_keeps_what_came_before(manifest, tmp_path):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("e2b3ab57cf98-session-reference-1.txt"))
    lines = (UPSTREAM / "spill-root" / art["path"]).read_bytes().split(b"\n")
    second = lines.index(next(l for l in lines if l.startswith(b"### Message 2")))
    lines[second + 2] = b"not json"
    bad = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    bad.write_bytes(b"\n".join(lines))
    proc = run("cat", str(bad), "--json")
    assert proc.returncode == 1 and f"{bad}:{second + 3}:".encode() in proc.stderr
    data = json.loads(proc.stdout)
    assert data["complete"] is False and data["error"]["line"] == second + 3
    assert data["messages"][0]["text"] == art["messages"][0]["text"]
    assert data["messages"][1] == {"index": 2, "role": art["messages"][1]["role"], "text": ""}


def test_cat_malformed_and_missing(tmp_path):
    bad = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    bad.write_text("## Referenced session — full projected snapshot\n\nnope\n")
    proc = run("cat", str(bad))
    assert proc.returncode == 1 and f"{bad}:3:".encode() in proc.stderr
    assert run("cat", str(tmp_path / "gone.txt")).returncode == 2


def test_cat_to_a_terminal_escapes_controls(demo, tmp_path):
    """Through a real pty: escape sequences are made visible unless --raw."""
    import pty

    path = str(next(demo.root.rglob("*-grep.txt")))

    def through_pty(*extra: str) -> bytes:
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.executable, [sys.executable, "-m", "spillscope", "cat", path, *extra])
        chunks = []
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.waitpid(pid, 0)
        return b"".join(chunks)

    safe = through_pty()
    assert b"\x1b[31m" not in safe and b"\x1b]0;" not in safe and "␛[31m".encode() in safe
    raw = through_pty("--raw")
    assert b"\x1b[31m" in raw


def _stderr_on_a_terminal(*args: str, after: str = "0") -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run the CLI with stderr on a real pty (stdout stays a pipe); returns what the pty got."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "SPILLSCOPE_PROGRESS_AFTER": after, "COLUMNS": "100"}
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: _drain(master, chunks))
    reader.start()
    out, _ = proc.communicate(timeout=120)
    reader.join(10)
    os.close(master)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, b""), b"".join(chunks)


def _drain(fd: int, chunks: list[bytes]) -> None:
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO once the child has closed its end
            return
        if not data:
            return
        chunks.append(data)


def test_progress_bar_on_a_terminal_only(demo, tmp_path):
    # A root wide enough that the scan reports several times.
    root = tmp_path / "wide"
    for i in range(300):
        d = root / f"session-{i:012x}"
        d.mkdir(parents=True, mode=0o700)
        f = d / "aaaaaaaaaaaa-bash.txt"
        f.write_text("x")
        f.chmod(0o600)
    proc, tty = _stderr_on_a_terminal("ls", str(root), "--json")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["sessions"]) == 300
    text = tty.decode()
    assert re.search(r"scan +[█#]+ 100%  300/300 session dirs", text), text
    assert text.endswith("\r\x1b[K")  # the bar is cleared, the terminal left clean
    # verify: scan, logs, then transcript bytes read.
    proc, tty = _stderr_on_a_terminal("verify", str(demo.root), "--logs", str(demo.logs), "--json", "--fail-on", "error")
    assert proc.returncode == 0 and json.loads(proc.stdout)["summary"]
    text = tty.decode()
    size = sum(p.stat().st_size for p in demo.root.rglob("*-session-reference-*.txt"))
    assert "logs " in text and re.search(r"verify +[█#]+ 100%  " + re.escape(human_size(size)), text), text
    assert text.endswith("\r\x1b[K")
    # Not before half a second by default (this run is shorter), and never into a pipe.
    assert _stderr_on_a_terminal("ls", str(root), "--json", after="5")[1] == b""
    piped = subprocess.run([sys.executable, "-m", "spillscope", "ls", str(root), "--json"], capture_output=True,
                           env={**os.environ, "SPILLSCOPE_PROGRESS_AFTER": "0"})
    assert piped.returncode == 0 and piped.stderr == b""


def _snapshot(*dirs: Path) -> dict[str, tuple[str, int, int]]:
    out = {}
    for d in dirs:
        for p in [d, *d.rglob("*")]:
            st = os.lstat(p)
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else ""
            out[str(p)] = (digest, st.st_mode, st.st_mtime_ns)
    return out


def test_every_command_leaves_root_and_logs_byte_identical(tmp_path):
    demo = write_demo(tmp_path / "demo")
    before = _snapshot(demo.root, demo.logs)
    art = str(next(demo.root.rglob("*-session-reference-1.txt")))
    for args in (
        ["ls", str(demo.root)],
        ["ls", str(demo.root), "--logs", str(demo.logs), "--json"],
        ["verify", str(demo.root), "--logs", str(demo.logs), "--retention", "1d"],
        ["verify", str(demo.root), "--logs", str(demo.logs), "--json"],
        ["cat", art], ["cat", art, "--json"], ["cat", art, "--message", "2"],
    ):
        run(*args)
    assert _snapshot(demo.root, demo.logs) == before


def watch_initial(root: Path) -> "WatchProcess":
    """`spillscope watch --json --initial` in a subprocess (tests/test_watch.py's helper)."""
    return WatchProcess(root, "--initial")


def test_watch_reports_added_modified_deleted(tmp_path):
    demo = write_demo(tmp_path / "demo")
    session = next(p for p in demo.root.iterdir() if any(p.iterdir()))
    watch = watch_initial(demo.root)
    try:
        watch.wait_for(lambda e: e["event"] == "added")  # the initial listing: the watcher is up
        time.sleep(0.3)
        new = session / "abcdefabcdef-bash.txt"
        new.write_text("first")
        ev = watch.wait_for(lambda e: e["path"] == str(new) and e["event"] == "added")
        stamp = ev.pop("time")  # ISO 8601 UTC, milliseconds (issue 28)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
        assert ev == {"event": "added", "path": str(new), "session": session.name, "kind": "tool-output"}
        time.sleep(0.2)
        with open(new, "a") as f:
            f.write(" and more")
        watch.wait_for(lambda e: e["path"] == str(new) and e["event"] == "modified")
        new.unlink()
        watch.wait_for(lambda e: e["path"] == str(new) and e["event"] == "deleted")
    finally:
        code = watch.stop(signal.SIGINT, timeout=10)
    assert code in (0, 130)


def test_watch_follows_a_root_that_is_deleted_and_recreated(tmp_path):
    import shutil

    root = tmp_path / "root"
    (root / "session-aaaaaaaaaaaa").mkdir(parents=True)
    (root / "session-aaaaaaaaaaaa" / "111111111111-bash.txt").write_text("x")
    watch = watch_initial(root)
    try:
        watch.wait_for(lambda e: e["event"] == "added")
        shutil.rmtree(root)
        watch.wait_for(lambda e: e["event"] == "root-missing")
        (root / "session-bbbbbbbbbbbb").mkdir(parents=True)
        time.sleep(0.3)
        (root / "session-bbbbbbbbbbbb" / "222222222222-grep.txt").write_text("y")
        watch.wait_for(lambda e: e["event"] == "added" and e["path"].endswith("222222222222-grep.txt"))
    finally:
        code = watch.stop(signal.SIGINT, timeout=10)  # None: it had to be killed
    assert code in (0, 130)
    assert any(e["event"] == "deleted" and e["path"].endswith("111111111111-bash.txt") for e in watch.seen)


def test_demo_command_writes_and_lists(tmp_path):
    proc = run("demo", "--dir", str(tmp_path / "d"), "--no-tui", check=True)
    assert b"demo-target-research" in proc.stdout
    positional = run("demo", str(tmp_path / "p"), "--no-tui", check=True)
    assert f"spill root {tmp_path / 'p' / 'spill-root'}".encode() in positional.stdout
    assert (tmp_path / "p" / "logs").is_dir()
    assert run("demo", str(tmp_path / "p"), "--dir", str(tmp_path / "q")).returncode == 2
    assert (tmp_path / "d" / "spill-root").is_dir()
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "file").write_text("keep")
    assert run("demo", "--dir", str(tmp_path / "precious"), "--no-tui").returncode != 0
    assert (tmp_path / "precious" / "file").read_text() == "keep"
