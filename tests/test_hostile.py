"""Hostile and huge input (issue #12): every pass linear, every hazard a located finding.

Linear work is asserted by counting work (bytes read, bytes scanned, opens), never by a
clock; the timings are in bench/scaling.py. The inputs come from bench/hostile.py, the
generators the scaling benchmark and the corpus use too.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import hostile  # noqa: E402
import nobody  # noqa: E402

from spillscope.util.text import loads_exact, visible  # noqa: E402
from spillscope.inspect.verify.inspection import inspect_root  # noqa: E402
from spillscope.reference import check as check_module, preview as preview_module  # noqa: E402
from spillscope.formats.transcript import Fragment, MessageEnd, iter_transcript  # noqa: E402
from spillscope.formats.sessionlog import MAX_BAD_RUN, iter_log  # noqa: E402
from spillscope.spill.naming import session_dir_name  # noqa: E402
from spillscope.spill.policy import format_spill_notice, parse_spill_notice  # noqa: E402
from spillscope.formats.notices import RETRIEVAL_HINT  # noqa: E402


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, text=True, timeout=timeout)


def verify_json(case: hostile.Case) -> tuple[int, list[dict]]:
    proc = cli("verify", str(case.root), "--logs", str(case.logs), "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


# ---- class 1: work that grows faster than the input -------------------------------------

class CountingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.served = 0

    def read(self, n: int | None = -1) -> bytes:
        out = super().read(n)
        self.served += len(out)
        return out

    def readline(self, n: int | None = -1) -> bytes:
        out = super().readline(n)
        self.served += len(out)
        return out


def test_short_messages_cost_their_own_bytes():
    """30,000 short messages: the parser reads each byte a bounded number of times (it
    used to read a whole 1 MiB chunk of what follows for every message)."""
    body, _ = hostile.transcript(hostile._messages(30000))
    stream = CountingStream(body)
    ends = sum(isinstance(ev, MessageEnd) for ev in iter_transcript(stream))
    assert ends == 30000
    assert stream.served <= 12 * len(body), (stream.served, len(body))


def test_fragment_batches_still_big_for_one_huge_message():
    body, _ = hostile.transcript([{"role": "user", "text": "x" * (64 * 50000)}])
    frags = [ev for ev in iter_transcript(body) if isinstance(ev, Fragment)]
    assert sum(len(f.texts) for f in frags) == 50000 and len(frags) < 100


class CountingText(str):
    """A str that counts the characters its find/rfind calls scan."""

    scanned = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        end = len(self) if end is None else end
        at = str.find(self, sub, start, end)
        CountingText.scanned += (at + len(sub) if at >= 0 else end) - start
        return at

    def rfind(self, sub, start=0, end=None):  # type: ignore[override]
        end = len(self) if end is None else end
        at = str.rfind(self, sub, start, end)
        CountingText.scanned += end - (at if at >= 0 else start)
        return at


@pytest.mark.parametrize("lookalike,end", [
    (hostile.LOOKALIKE, ")"),
    (hostile.LOOKALIKE_BAD_COUNT, "\n\n" + format_spill_notice(4, "/r/s/x", RETRIEVAL_HINT)),
    ("\n\n(Omitted 5 bytes. Full formatted result stored at: /a", ")"),
])
def test_notice_lookalikes_are_scanned_once(lookalike, end):
    text = CountingText("head" + lookalike * 20000 + end)
    CountingText.scanned = 0
    parse_spill_notice(text)
    assert CountingText.scanned <= 4 * len(text), (CountingText.scanned, len(text))


def test_notice_parsing_unchanged_on_real_notices():
    notice = format_spill_notice(12, "/r/session-000000000000/aaaaaaaaaaaa-bash.txt", RETRIEVAL_HINT)
    got = parse_spill_notice("head\n\n" + notice)
    assert got is not None and got.locator.endswith("bash.txt") and got.omitted_bytes == 12 and got.preview == "head"
    assert parse_spill_notice("x\n\n( Full formatted result stored at: /p)") is None
    assert parse_spill_notice("(Omitted 1 bytes. Full formatted result stored at: /p. hint)").locator == "/p"


def test_preview_message_encoded_once_against_many_messages(tmp_path, monkeypatch):
    """A huge preview message that matches none of 3,000 transcript messages is measured
    once, not once per candidate."""
    case = hostile.make_preview_length(tmp_path / "c", 256, messages=3000)
    encoded = [0]
    real = check_module.js_utf8

    def counting(text: str) -> bytes:
        encoded[0] += len(text)
        return real(text)

    # Every module of the notice check that encodes (the preview rules and the checker).
    monkeypatch.setattr(check_module, "js_utf8", counting)
    monkeypatch.setattr(preview_module, "js_utf8", counting)
    ins = inspect_root(case.root, case.logs)
    assert [f.code for f in ins.findings] == ["omission-mismatch"] * len([f for f in ins.findings])
    assert ins.findings, "the unmatched preview message is a finding"
    assert encoded[0] <= 8 * (256 << 10), encoded[0]


def test_notices_naming_one_artifact_read_it_once(tmp_path):
    case = hostile.make_one_artifact(tmp_path / "c", 300, artifact_bytes=1 << 20)
    opens: list[str] = []

    def hook(event: str, args: tuple) -> None:
        if event == "open" and isinstance(args[0], str) and args[0] == str(case.cat):
            opens.append(args[0])

    sys.addaudithook(hook)  # hooks cannot be removed: it only records opens of this file
    ins = inspect_root(case.root, case.logs)
    assert len(ins.references) == 300 and all(r.status == "resolves" for r in ins.references)
    assert not [f for f in ins.findings if f.severity == "error"], ins.findings[:3]
    assert len(opens) == 1, len(opens)


def test_zstd_bomb_of_empty_lines_stops_with_a_finding(tmp_path):
    pytest.importorskip("zstandard")
    root = tmp_path / "root"
    root.mkdir()
    path = hostile.zstd_bomb(tmp_path / "logs", 1 << 24)  # 16 MiB of newlines, a few KB on disk
    items = list(iter_log(path))
    assert len(items) <= MAX_BAD_RUN + 2
    last = items[-1]
    assert "not a session log" in last.reason and last.line == MAX_BAD_RUN + 1
    proc = cli("verify", str(root), "--logs", str(tmp_path / "logs"), "--json")
    findings = json.loads(proc.stdout)["findings"]
    stop = [f for f in findings if "not a session log" in f["detail"]]
    assert len(findings) <= MAX_BAD_RUN + 1 and stop and stop[0]["code"] == "malformed-log" and stop[0]["line"]


def test_zstd_that_inflates_one_endless_line_stops(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    path = tmp_path / "session.v3.jsonl.zstd"
    with open(path, "wb") as f, zstandard.ZstdCompressor(level=19).stream_writer(f) as w:
        w.write(b'{"type":"session","version":3,"id":"x"}\n')
        for _ in range(80):
            w.write(b"a" * (4 << 20))
    items = list(iter_log(path, max_line_bytes=1 << 20))
    assert any("inflates past" in getattr(i, "reason", "") for i in items)


# ---- class 2: deep JSON -----------------------------------------------------------------

@pytest.mark.parametrize("depth", [1025, 5000, 100_000])
def test_deep_json_is_a_value_error(depth):
    for text in (hostile.deep(depth), '["\\ud800",' + hostile.deep(depth) + "]", '{"a":' + hostile.deep(depth) + "}"):
        with pytest.raises(ValueError):
            loads_exact(text)


def test_json_with_lone_surrogate_nested_within_orjsons_limit_still_parses():
    value = loads_exact(hostile.deep(1000, '"\\ud800"'))
    for _ in range(1000):
        value = value[0]
    assert value == "\ud800"


def test_deep_json_everywhere_is_a_located_finding(tmp_path):
    case = hostile.make_nesting(tmp_path / "c", 100_000, lines=3)
    code, findings = verify_json(case)
    assert code == 1
    log = str(next(case.logs.rglob("session.v3.jsonl")))
    sdir = case.root / session_dir_name(hostile.TARGET)
    by = {(f["code"], f["path"], f["line"]) for f in findings}
    assert {("malformed-log", log, 2), ("malformed-log", log, 3), ("malformed-log", log, 4),
            ("malformed-notice", log, 5), ("malformed-notice", log, 6)} <= by
    assert ("malformed-artifact", str(sdir / "000000000002-session-reference-2.txt"), 8) in by
    assert any(f["code"] == "malformed-artifact" and f["path"].endswith("-3.txt") and f["line"] for f in findings)
    for extra in ([], ["--json"]):
        for name in ("000000000002-session-reference-2.txt", "000000000003-session-reference-3.txt"):
            proc = cli("cat", str(sdir / name), *extra)
            assert proc.returncode == 1 and "Traceback" not in proc.stderr and "malformed" in proc.stderr
    proc = cli("ls", str(case.root), "--logs", str(case.logs), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["summary"]["malformed-log"] == 3


# ---- class 3: forged output -------------------------------------------------------------

def test_a_newline_in_a_name_never_starts_a_row(tmp_path):
    case = hostile.make_artifacts(tmp_path / "c", 2)
    sdir = case.root / session_dir_name(hostile.TARGET)
    forged = "\nFORGED  tool-output  1 B  0s  passwd\r\x1b[2K\u2028\tx"
    (sdir / f"aaaaaaaaaaaa-bash{forged}.txt").write_bytes(b"x")
    log = hostile.Log(case.logs, f"id{forged}")
    log.tool_result("p\n\n" + format_spill_notice(1, str(case.root) + f"/gone{forged}", RETRIEVAL_HINT))
    log.write()
    for args in (["ls", str(case.root)], ["ls", str(case.root), "--logs", str(case.logs)],
                 ["verify", str(case.root), "--logs", str(case.logs)]):
        proc = cli(*args)
        assert "Traceback" not in proc.stderr
        lines = proc.stdout.splitlines()
        assert not [l for l in lines if l.lstrip().startswith("FORGED")], proc.stdout
        assert not any(c in proc.stdout for c in "\r\x1b\u2028\t"), repr(proc.stdout)
        assert "␊FORGED" in proc.stdout
    assert visible("a\nb\tc", one_line=True) == "a␊b␉c" and visible("a\nb") == "a\nb"


# ---- class 5: logs that are not what they seem ------------------------------------------

def test_cut_off_zstd_log_is_a_located_finding(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    root = tmp_path / "root"
    root.mkdir()
    log = hostile.Log(tmp_path / "logs", name="session.v3.jsonl.zstd")
    for i in range(3000):
        log.row("assistant/message", {"turn": i, "message": {"role": "assistant", "content": [{"type": "text", "text": os.urandom(20).hex()}]}})
    data = zstandard.ZstdCompressor(write_checksum=True).compress(b"".join(l + b"\n" for l in log.lines))
    for cut in (1, 2, 4, len(data) // 2):
        log.path.write_bytes(data[: len(data) - cut])
        proc = cli("verify", str(root), "--logs", str(tmp_path / "logs"), "--json")
        bad = [f for f in json.loads(proc.stdout)["findings"] if f["code"] == "malformed-log"]
        assert bad and bad[0]["path"] == str(log.path) and bad[0]["line"] and "not whole" in bad[0]["detail"], (cut, bad)
    log.path.write_bytes(data)
    proc = cli("verify", str(root), "--logs", str(tmp_path / "logs"), "--json")
    assert json.loads(proc.stdout)["findings"] == []


def test_things_named_like_logs_that_are_not_files(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    logs = tmp_path / "logs"
    a = logs / "--p--" / "dir-log"
    a.mkdir(parents=True)
    (a / "session.v3.jsonl").mkdir()
    b = logs / "--p--" / "fifo-log"
    b.mkdir()
    os.mkfifo(b / "session.v3.jsonl")
    c = logs / "--p--" / "link-log"
    c.mkdir()
    (tmp_path / "elsewhere.jsonl").write_text('{"type":"session","id":"x"}\n')
    os.symlink(tmp_path / "elsewhere.jsonl", c / "session.jsonl")
    code, findings = verify_json(hostile.Case(root, logs))
    got = {(f["path"], f["code"]) for f in findings}
    assert (str(a / "session.v3.jsonl"), "malformed-log") in got
    assert (str(b / "session.v3.jsonl"), "malformed-log") in got
    assert (str(c / "session.jsonl"), "malformed-log") in got


# ---- class 6: an unreadable root or session dir is not an expired artifact --------------

def _as_other_user(*args: str) -> dict[str, object]:
    """``spillscope ARGS`` as ``nobody`` when we are root (the dirs stay root's, 0700),
    from a readable copy of the package (tests/nobody.py); otherwise as we are (the test
    then takes the permission away with chmod 000). subprocess.run's args and env."""
    if os.geteuid() == 0:
        return {"args": nobody.spillscope_cli(*args), "env": nobody.env()}
    return {"args": [sys.executable, "-m", "spillscope", *args]}


@pytest.fixture
def shared_base():
    """A base dir that another user can traverse (pytest's tmp dirs are 0700, and so is the
    run's private TMPDIR: the base goes in the machine's temp dir, as conftest's nobody_base)."""
    from conftest import SYSTEM_TMP

    base = Path(tempfile.mkdtemp(prefix="spillscope-hostile-", dir=SYSTEM_TMP))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for d, _, _ in os.walk(base):
            os.chmod(d, 0o755)
        shutil.rmtree(base)


@pytest.mark.parametrize("where", ["root", "session-dir"])
def test_unreadable_root_or_session_dir_is_unverified_not_expired(shared_base, where):
    case = hostile.make_notices(shared_base / "c", 4)
    log = hostile.Log(case.logs, "tools-session")
    sdir = case.root / session_dir_name(hostile.TARGET)
    log.tool_result("p\n\n" + format_spill_notice(3, str(sdir / "aaaaaaaaaaaa-bash.txt"), RETRIEVAL_HINT))
    log.write()
    for d, _, files in os.walk(shared_base / "c"):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    blocked = case.root if where == "root" else sdir
    blocked.chmod(0o700 if os.geteuid() == 0 else 0)
    proc = subprocess.run(**_as_other_user("verify", str(case.root), "--logs", str(case.logs), "--json"),
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert proc.returncode == 1
    codes = [f["code"] for f in findings]
    assert "expired-locator" not in codes, findings
    assert ("unreadable", str(blocked), None) in {(f["code"], f["path"], f["line"]) for f in findings}
    per_notice = [f for f in findings if f["code"] == "unreadable" and f["locator"]]
    assert len(per_notice) == 5 and all(f["line"] and "unverified" in f["detail"] for f in per_notice)
    ls = subprocess.run(**_as_other_user("ls", str(case.root)), capture_output=True, text=True, timeout=120)
    if where == "root":
        assert ls.returncode == 2 and "cannot read the spill root" in ls.stderr and ls.stdout == ""
    else:
        assert ls.returncode == 0 and "unreadable" in ls.stdout


def test_unreadable_logs_subdirectory_is_a_finding(shared_base):
    root = shared_base / "root"
    root.mkdir()
    logs = shared_base / "logs"
    hidden = logs / "--p--" / "s1"
    hidden.mkdir(parents=True)
    (hidden / "session.v3.jsonl").write_text('{"type":"session","version":3,"id":"s1"}\n')
    for d in (shared_base, root, logs, logs / "--p--"):
        d.chmod(0o755)
    hidden.chmod(0o700 if os.geteuid() == 0 else 0)
    proc = subprocess.run(**_as_other_user("verify", str(root), "--logs", str(logs), "--json"),
                          capture_output=True, text=True, timeout=120)
    findings = json.loads(proc.stdout)["findings"]
    assert [(f["code"], f["path"]) for f in findings] == [("unreadable", str(hidden))], findings
