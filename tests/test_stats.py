"""``spillscope stats`` through the real entry point, on generated roots with known sizes.

The totals are checked against an independent ``os.walk`` + ``lstat`` sum (JSON, CSV, per
session, per day); the sweep forecast against what ``LocalSpillStore``'s own start-up sweep
deletes from a copy of the root; the notices' omissions against the logs read as plain
JSON; bad input exits 2; the in-process and the worker-process walks agree.
"""

from __future__ import annotations

import csv
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from spillscope.frontends.demo import _write_log, write_demo
from spillscope.frontends.format import human_size
from spillscope.inspect.stats import dsh_stats
from spillscope.inspect.stats import dsh as dsh_source
from spillscope.spill import LocalSpillStore, RETRIEVAL_HINT
from spillscope.spill.naming import session_dir_name

DAY = 86400
NOW = time.time()
SESSION = re.compile(r"^session-[0-9a-f]{12}\Z")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, text=True, timeout=120)


def plant(path: Path, age_days: float, size: int, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_bytes(b"x" * size)
    path.chmod(mode)
    t = NOW - age_days * DAY
    os.utime(path, (t, t))
    return path


def tool_result(call_id: str, text: str) -> dict:
    return {"type": "tool/result", "surfaceOp": "append",
            "data": {"turn": 1, "step": 1, "message": {
                "source": {"kind": "tool", "callId": call_id},
                "content": [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}],
                             "isError": False}],
                "role": "tool", "id": "t-" + call_id}}}


def notice(locator: str, omitted: int | None) -> str:
    clause = "More bytes were omitted." if omitted is None else f"Omitted {omitted} bytes."
    return f"head\n\n({clause} Full formatted result stored at: {locator}. {RETRIEVAL_HINT})"


def build_root(base: Path, sessions: int, seed: int = 7) -> tuple[Path, Path, dict[str, str]]:
    """A root of ``sessions`` session dirs with random sizes and ages (some past 30 days,
    none within a minute of it), a group-writable session dir the sweep must skip, a
    symlink, a stray root entry; and logs naming some of the old files. Returns the root,
    the logs dir and path → the ``log:line`` of the notice naming it."""
    rng = random.Random(seed)
    root, logs = base / "root", base / "logs"
    root.mkdir(mode=0o700)
    named: dict[str, str] = {}
    for i in range(sessions):
        sid = f"s-{i}"
        d = root / session_dir_name(sid)
        rows, paths = [], []
        for j in range(rng.randint(0, 4)):
            tool = rng.choice(["bash", "grep", "web_fetch", "read_file"])
            age = rng.choice([0.1, 1.5, 3, 12, 29, 31, 45, 90])
            p = plant(d / f"{rng.getrandbits(48):012x}-{tool}.txt", age, rng.randint(0, 5000))
            paths.append(p)
            if rng.random() < 0.5:
                rows.append(tool_result(f"c{j}", notice(str(p), rng.choice([None, rng.randint(0, 10**6)]))))
        if rng.random() < 0.3:
            d.mkdir(mode=0o700, exist_ok=True)
        if rows:
            log = _write_log(logs, sid, f"/work/project-{i % 3}", rows)
            for n, row in enumerate(rows, start=2):
                loc = re.search(r"stored at: (\S+)\. ", row["data"]["message"]["content"][0]["content"][0]["text"])
                assert loc is not None
                named.setdefault(loc.group(1), f"{log}:{n}")
    unsafe = root / session_dir_name("unsafe")
    plant(unsafe / "0000000000aa-bash.txt", 60, 777)
    unsafe.chmod(0o770)  # group-writable: the sweep skips it, so the forecast must too
    link_dir = root / session_dir_name("with-link")
    plant(link_dir / "0000000000bb-bash.txt", 60, 123)
    (link_dir / "0000000000cc-grep.txt").symlink_to(link_dir / "0000000000bb-bash.txt")
    (root / "stray.txt").write_text("not a session dir")
    return root, logs, named


def walk_sizes(root: Path) -> tuple[int, int, Counter[str], Counter[str], dict[str, int]]:
    """Independently of spillscope: files and bytes of every entry of every session dir
    (``lstat``, not followed), bytes per session dir and per UTC day, and path → size."""
    files = total = 0
    per_session: Counter[str] = Counter()
    per_day: Counter[str] = Counter()
    sizes: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if os.path.dirname(dirpath) != str(root) or not SESSION.match(os.path.basename(dirpath)):
            continue
        per_session[os.path.basename(dirpath)] += 0  # an empty session dir is a row too
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            files += 1
            total += st.st_size
            per_session[os.path.basename(dirpath)] += st.st_size
            per_day[time.strftime("%Y-%m-%d", time.gmtime(st.st_mtime))] += st.st_size
            sizes[os.path.join(dirpath, name)] = st.st_size
    return files, total, per_session, per_day, sizes


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    # Over dsh.PARALLEL_MIN_DIRS session dirs: the CLI walks it in worker processes.
    return build_root(tmp_path_factory.mktemp("stats"), dsh_source.PARALLEL_MIN_DIRS + 44)


def test_json_totals_equal_an_independent_walk(tree):
    root, logs, _ = tree
    proc = run("stats", str(root), "--logs", str(logs), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    files, total, per_session, per_day, sizes = walk_sizes(root)
    assert (data["totals"]["files"], data["totals"]["bytes"]) == (files, total)
    assert {s["dir"]: s["bytes"] for s in data["sessions"]} == dict(per_session)
    assert sum(s["bytes"] for s in data["sessions"]) == total
    assert {d["day"]: d["bytes"] for d in data["days"]} == {k: v for k, v in per_day.items()}
    assert sum(k["bytes"] for k in data["kinds"]) == total
    assert sum(a["bytes"] for a in data["agents"]) == total == sum(p["bytes"] for p in data["projects"])
    largest = sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [f["size"] for f in data["topFiles"]] == [size for _, size in largest]
    assert [s["bytes"] for s in data["topSessions"]] == sorted(per_session.values(), reverse=True)[:10]


def test_csv_totals_equal_an_independent_walk(tree):
    root, logs, _ = tree
    files, total, per_session, _, _ = walk_sizes(root)
    proc = run("stats", str(root), "--csv", "--table", "totals")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 1 and (int(rows[0]["files"]), int(rows[0]["bytes"])) == (files, total)
    assert rows[0]["root"] == str(root)
    proc = run("stats", str(root), "--csv")  # the default table: one row per session
    sessions = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert proc.stdout.startswith("dir,sessionId,agent,project,files,bytes,")
    assert {r["dir"]: int(r["bytes"]) for r in sessions} == dict(per_session)
    assert sum(int(r["files"]) for r in sessions) == files


def test_sweep_forecast_equals_what_the_stores_own_sweep_deletes_on_a_copy(tree, tmp_path):
    root, logs, named = tree
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)  # copy2: mtimes and modes kept
    copy.chmod(0o700)
    forecast = dsh_stats(copy, logs, rebase=str(root))
    assert forecast.sweep.applies and forecast.sweep.files > 0
    empty_base = tmp_path / "no-default-roots"
    empty_base.mkdir()
    report = LocalSpillStore(copy, cleanup_period_days=30, default_roots_base=empty_base).wait_for_cleanup(60)
    assert report is not None and not report.errors
    deleted = sorted((r.path, r.bytes) for r in report.files())
    assert deleted == sorted((c.path, c.size) for c in forecast.sweep.candidates)
    assert forecast.sweep.bytes == report.bytes_freed
    # The unsafe (group-writable) session dir's old file was neither forecast nor deleted.
    assert (copy / session_dir_name("unsafe") / "0000000000aa-bash.txt").exists()
    # Which candidates a log still names: exactly those a planted notice names.
    assert {c.path: c.named_at for c in forecast.sweep.candidates if c.named_at} == {
        str(copy / os.path.relpath(p, root)): where for p, where in named.items()
        if str(copy / os.path.relpath(p, root)) in {c.path for c in forecast.sweep.candidates}}
    assert forecast.totals.findings >= forecast.sweep.files  # one past-retention each
    assert dict((f.code, f.count) for f in forecast.findings)["past-retention"] == forecast.sweep.files


def test_notices_omissions_equal_the_logs_read_as_plain_json(tmp_path):
    demo = write_demo(tmp_path / "demo")
    root, logs = demo.root, demo.logs
    expected_bytes = expected_messages = notices = 0
    for log in Path(logs).rglob("session.v3.jsonl"):
        for line in log.read_text().splitlines()[1:]:
            row = json.loads(line)
            text = json.dumps(row)
            for m in re.finditer(r'\\"omittedMessages\\": ?(\d+), ?\\"omittedBytes\\": ?(\d+), ?\\"fullSnapshot', text):
                notices += 1
                expected_messages += int(m.group(1))
                expected_bytes += int(m.group(2))
            if row.get("type") == "tool/result":
                for m in re.finditer(r"\(Omitted (\d+) bytes\. Full formatted result stored at: ", text):
                    notices += 1
                    expected_bytes += int(m.group(1))
    s = dsh_stats(root, logs)
    assert notices > 0
    assert (s.totals.notices, s.totals.omitted_bytes, s.totals.omitted_messages) == (notices, expected_bytes, expected_messages)


def test_unknown_omissions_are_counted_not_summed(tmp_path):
    root, logs = tmp_path / "root", tmp_path / "logs"
    d = root / session_dir_name("a")
    f = plant(d / "000000000001-bash.txt", 1, 10)
    _write_log(logs, "a", "/w", [tool_result("c1", notice(str(f), None)), tool_result("c2", notice(str(f), 40))])
    s = dsh_stats(root, logs)
    assert (s.totals.notices, s.totals.omitted_bytes, s.totals.omitted_unknown) == (2, 40, 1)
    human = run("stats", str(root), "--logs", str(logs))
    assert "40 Bytes+" in human.stdout  # a lower bound says so


def test_in_process_and_worker_walks_agree(tree):
    root, logs, _ = tree
    one = dsh_stats(root, logs, workers=1, now=NOW)
    two = dsh_stats(root, logs, workers=2, now=NOW)
    assert one == two


def test_orphans_and_findings_by_code(tree):
    root, logs, named = tree
    s = dsh_stats(root, logs)
    codes = {f.code: f.count for f in s.findings}
    _, _, _, _, sizes = walk_sizes(root)
    regular = [p for p in sizes if not os.path.islink(p)]
    assert codes["orphan-artifact"] == len([p for p in regular if p not in named])
    assert codes["symlink"] == 1 and codes["unexpected-entry"] == 1  # the link; the stray root entry
    assert codes["insecure-permissions"] == 1  # the group-writable dir
    assert s.totals.findings == sum(codes.values())


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/root"], "root: does not exist"),
    (["{root}", "--logs", "/nonexistent/logs"], "logs: does not exist"),
    (["{root}", "--json", "--csv"], "choose one"),
    (["{root}", "--table", "nope"], "invalid choice"),
    (["{root}", "--top", "0"], "must be 1 or more"),
    (["{root}", "--retention", "soon"], "invalid duration"),
])
def test_bad_input_exits_2_with_a_clear_error(tree, args, message):
    root, _, _ = tree
    proc = run("stats", *[a.format(root=root) for a in args])
    assert proc.returncode == 2 and proc.stdout == ""
    assert message in proc.stderr


def test_human_view_and_one_table(tree):
    root, logs, _ = tree
    proc = run("stats", str(root), "--logs", str(logs), "--top", "3")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for title in ("By kind", "By tool", "Spill volume by day", "Largest sessions", "Largest files",
                  "What the sweep deletes next"):
        assert title in out
    assert "still named by a log" in out and "KiB" in out
    only = run("stats", str(root), "--table", "kinds", "--json")
    kinds = json.loads(only.stdout)
    assert {k["kind"] for k in kinds} == {"tool-output"}


def test_untrusted_text_in_names_is_inert(tmp_path):
    root, logs = tmp_path / "root", tmp_path / "logs"
    plant(root / session_dir_name("x") / "000000000001-\x1b[31mred.txt", 1, 5)
    _write_log(logs, "x", "/w/\x1b]0;title\x07", [user_row()])
    proc = run("stats", str(root), "--logs", str(logs))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout


def user_row() -> dict:
    return {"type": "user/message", "surfaceOp": "append",
            "data": {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "u"}}


# --- ls: --sort, --session, --kind, --older-than, --finding, byte totals --------------------

def ls_json(*args: str) -> dict:
    proc = run("ls", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_ls_json_byte_totals_equal_the_walk_in_both_paths(tree):
    root, logs, _ = tree
    files, total, per_session, _, _ = walk_sizes(root)
    for data in (ls_json(str(root)), ls_json(str(root), "--logs", str(logs))):  # the fast path; the full one
        assert data["totals"] == {"sessions": len(per_session), "artifacts": files, "bytes": total}
        assert {s["dir"]: s["bytes"] for s in data["sessions"]} == dict(per_session)
    human = run("ls", str(root)).stdout.splitlines()[0]
    assert human.endswith(f"({len(per_session)} sessions, {files} artifacts, {human_size(total)})")


def test_ls_sort_by_size_and_age(tree):
    root, _, _ = tree
    by_size = ls_json(str(root), "--sort", "size")
    assert [s["bytes"] for s in by_size["sessions"]] == sorted((s["bytes"] for s in by_size["sessions"]), reverse=True)
    for s in by_size["sessions"]:
        assert [a["size"] for a in s["artifacts"]] == sorted((a["size"] for a in s["artifacts"]), reverse=True)
    by_age = ls_json(str(root), "--sort", "age")
    oldest = [max((a["ageSeconds"] for a in s["artifacts"]), default=-1) for s in by_age["sessions"]]
    assert oldest == sorted(oldest, reverse=True) and oldest[0] > 59 * DAY
    assert by_age["totals"] == by_size["totals"] == ls_json(str(root))["totals"]  # sorting drops nothing


def test_ls_filters(tree):
    root, logs, named = tree
    everything = ls_json(str(root))
    one = everything["sessions"][5]
    for key in (one["dir"], one["dir"][len("session-"):]):
        only = ls_json(str(root), "--session", key)
        assert [s["dir"] for s in only["sessions"]] == [one["dir"]]
    by_id = ls_json(str(root), "--session", "s-5", "--logs", str(logs))  # a session id, hashed to its dir
    assert [s["dir"] for s in by_id["sessions"]] == [session_dir_name("s-5")]
    old = ls_json(str(root), "--older-than", "30d")
    ages = [a["ageSeconds"] for s in old["sessions"] for a in s["artifacts"]]
    expected = [p for p, _ in walk_sizes(root)[4].items() if os.lstat(p).st_mtime < NOW - 30 * DAY]
    assert len(ages) == len(expected) and min(ages) > 30 * DAY
    assert old["totals"]["bytes"] == sum(walk_sizes(root)[4][p] for p in expected)
    assert ls_json(str(root), "--kind", "session-reference-transcript")["sessions"] == []
    orphans = ls_json(str(root), "--logs", str(logs), "--finding", "orphan-artifact")
    shown = {a["path"] for s in orphans["sessions"] for a in s["artifacts"]}
    regular = {p for p in walk_sizes(root)[4] if not os.path.islink(p)}
    assert shown == regular - set(named)
    assert {f["code"] for f in orphans["findings"]} == {"orphan-artifact"}
    bad = run("ls", str(root), "--finding", "no-such-code")
    assert bad.returncode == 2 and "unknown finding code" in bad.stderr


# --- another agent through its dialect's report ---------------------------------------------

def test_claude_code_projects_through_the_dialect(tmp_path):
    from spillscope.dialects import Options, get

    projects = tmp_path / "projects"
    shutil.copytree(Path(__file__).parent / "fixtures" / "claude" / "projects", projects)
    old = NOW - 45 * DAY  # past Claude Code's default cleanupPeriodDays (30)
    for p in projects.rglob("*"):
        os.utime(p, (old, old), follow_symlinks=False)
    proc = run("stats", str(projects), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    spills = [p for p in projects.rglob("tool-results/*")]
    assert data["agents"][0]["agent"] == "claude"
    assert (data["totals"]["files"], data["totals"]["bytes"]) == (len(spills), sum(p.lstat().st_size for p in spills))
    assert {p["project"] for p in data["projects"]} == {d.name for d in projects.iterdir()}
    report = get("claude").inspect(str(projects), Options(now=time.time(), check_content=False))
    assert sorted(c["path"] for c in data["sweep"]["candidates"]) == sorted(report.past_retention)
    assert data["sweep"]["files"] == len(report.past_retention) > len(spills)  # transcripts are swept too
    assert run("stats", str(projects), "--agent", "nobody").returncode == 2


def test_ages_count_back_from_now(tmp_path):
    root = tmp_path / "root"
    d = root / session_dir_name("a")
    for i, (age, size) in enumerate([(0.25, 10), (1.5, 20), (1.6, 5), (2.75, 40), (40.5, 80)]):
        plant(d / f"{i:012x}-bash.txt", age, size)
    s = dsh_stats(root, now=NOW)
    # Ages in whole days, each within half an hour of the file's own (none is that near an edge).
    assert {a.days: a.bytes for a in s.ages} == {0: 10, 1: 25, 2: 40, 40: 80}
    assert sum(d.bytes for d in s.days) == 155


def test_csv_keeps_hostile_text_exact_in_a_pipe_and_inert_on_a_terminal(tmp_path):
    import pty

    root, logs = tmp_path / "root", tmp_path / "logs"
    plant(root / session_dir_name("h") / "000000000001-bash.txt", 1, 10)
    project = '/w/a,"b"\n\x1b[31mred'
    _write_log(logs, "h", project, [user_row()])
    proc = run("stats", str(root), "--logs", str(logs), "--csv")
    rows = list(csv.DictReader(io.StringIO(proc.stdout, newline="")))
    assert [r["project"] for r in rows] == [project]  # exact through a pipe: quoted, not mangled
    main_fd, child_fd = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "spillscope", "stats", str(root), "--logs", str(logs), "--csv"],
                             stdout=child_fd, stderr=subprocess.PIPE)
    os.close(child_fd)
    out = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    child.wait(timeout=60)
    os.close(main_fd)
    assert b"\x1b" not in out and "␛[31mred".encode() in out


def test_ls_narrowing_and_totals_on_another_agents_tree(tmp_path):
    """Claude Code's tree: every narrowing applies (none is ignored), and ``--json`` has dsh's
    ``totals``, equal to an ``lstat`` sum of the spill files."""
    projects = tmp_path / "projects"
    shutil.copytree(Path(__file__).parent / "fixtures" / "claude" / "projects", projects)
    spills = sorted(projects.rglob("tool-results/*.txt"))
    old = spills[0]
    os.utime(old, (NOW - 10 * DAY, NOW - 10 * DAY))

    def ls(*args: str) -> dict:
        proc = run("ls", str(projects), "--json", *args)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def names(data: dict) -> list[str]:
        return [a["name"] for s in data["sessions"] for a in s["artifacts"]]

    everything = ls()
    assert everything["totals"] == {"sessions": len(everything["sessions"]), "artifacts": len(spills),
                                    "bytes": sum(p.lstat().st_size for p in spills)}
    assert names(ls("--older-than", "7d")) == [old.name]
    by_size = ls("--sort", "size")
    assert [s["bytes"] for s in by_size["sessions"]] == sorted((s["bytes"] for s in by_size["sessions"]), reverse=True)
    one = everything["sessions"][0]
    assert {s["sessionId"] for s in ls("--session", one["sessionId"])["sessions"]} == {one["sessionId"]}
    assert ls("--finding", "orphan-artifact")["totals"]["artifacts"] == 0
    human = run("ls", str(projects), "--older-than", "30d").stdout
    assert f"no spill file matches the filter ({len(spills)} in the tree)" in human


def test_a_zero_retention_disables_the_sweep_as_the_store_does(tmp_path):
    root = tmp_path / "root"
    plant(root / session_dir_name("z") / "000000000001-bash.txt", 90, 10)
    data = json.loads(run("stats", str(root), "--retention", "0", "--json").stdout)
    assert data["sweep"]["applies"] is False and data["sweep"]["files"] == 0 and "disables" in data["sweep"]["why"]
    assert LocalSpillStore(root, cleanup_period_days=0).wait_for_cleanup() is None  # the store starts no sweep
    assert json.loads(run("stats", str(root), "--json").stdout)["sweep"]["files"] == 1  # the default: 30 days


def _codes(proc: subprocess.CompletedProcess[str], key: str) -> dict[str, int]:
    data = json.loads(proc.stdout)
    return data["summary"] if key == "summary" else {f["code"]: f["count"] for f in data["findings"]}


def test_stats_counts_the_findings_verify_reports(tmp_path):
    """The demo's expired locator, orphan and unavailable snapshot (issue 28 walk), and a tool
    notice whose artifact was deleted: the finding counts are verify's, code by code."""
    demo = write_demo(tmp_path / "demo")
    root, logs = str(demo.root), str(demo.logs)
    for planted in (False, True):
        if planted:
            next(demo.root.glob("session-*/*-bash.txt")).unlink()
        verify = _codes(run("verify", root, "--logs", logs, "--json"), "summary")
        stats = run("stats", root, "--logs", logs, "--json")
        assert _codes(stats, "findings") == verify
        assert {"expired-locator", "orphan-artifact", "snapshot-unavailable"} <= set(verify)
        assert json.loads(stats.stdout)["totals"]["findings"] == sum(verify.values())
        assert "content not compared" in json.loads(stats.stdout)["findingsScope"]
    assert verify["expired-locator"] == 2


@pytest.mark.parametrize("agent, tree, spills", [
    ("claude", "claude/projects", "**/tool-results/*.txt"),
    ("qwen", "qwen/home", "tmp/*/tool-results/*.txt"),
    ("gemini", "gemini/tmp", "*/tool-outputs/**/*.txt"),
])
def test_another_agents_stats_count_verifys_content_findings(tmp_path, agent, tree, spills):
    """A byte changed inside a spill file (content-mismatch, digest-mismatch...) is a finding
    verify reports: stats counts it too, code by code."""
    copy = tmp_path / "tree"
    shutil.copytree(Path(__file__).parent / "fixtures" / tree, copy, symlinks=True)
    for spill in sorted(copy.glob(spills))[:2]:
        data = bytearray(spill.read_bytes())
        at = len(data) // 2
        data[at] = ord("#") if data[at] != ord("#") else ord("%")
        spill.write_bytes(bytes(data))
    verify = _codes(run("verify", str(copy), "--agent", agent, "--json"), "summary")
    assert verify, "the planted fault is a finding"
    stats = run("stats", str(copy), "--agent", agent, "--json")
    assert _codes(stats, "findings") == verify
    assert json.loads(stats.stdout)["totals"]["findings"] == sum(verify.values())


def test_kind_and_tool_rows_carry_the_notices_and_omissions(tmp_path):
    demo = write_demo(tmp_path / "demo")
    s = dsh_stats(demo.root, demo.logs)
    for column in ("notices", "omitted_bytes", "omitted_messages", "omitted_unknown", "findings"):
        assert sum(getattr(k.totals, column) for k in s.kinds) == getattr(s.totals, column), column
    tool_notices = sum(k.totals.notices for k in s.kinds if k.key == "tool-output")
    assert tool_notices > 0 and sum(t.totals.notices for t in s.tools) == tool_notices
    rows = list(csv.DictReader(io.StringIO(run("stats", str(demo.root), "--logs", str(demo.logs), "--csv",
                                               "--table", "tools").stdout)))
    bash = next(r for r in rows if r["tool"] == "bash")
    assert int(bash["notices"]) == 1 and int(bash["omittedBytes"]) > 0


def test_without_logs_stats_says_nothing_was_checked(tmp_path):
    demo = write_demo(tmp_path / "demo")
    human = run("stats", str(demo.root))
    assert "no notice checked: no session logs given" in human.stdout
    assert json.loads(run("stats", str(demo.root), "--json").stdout)["nothingChecked"] == "no-logs"
    assert json.loads(run("stats", str(demo.root), "--logs", str(demo.logs), "--json").stdout)["nothingChecked"] is None


def test_sessions_only_a_log_names_are_marked_as_having_no_dir(tmp_path):
    demo = write_demo(tmp_path / "demo")
    s = dsh_stats(demo.root, demo.logs)
    on_disk = {p.name for p in demo.root.iterdir() if p.is_dir()}
    assert {r.dir for r in s.sessions if r.on_disk} == on_disk
    assert any(not r.on_disk for r in s.sessions)
    gone = len(s.sessions) - len(on_disk)
    header = run("stats", str(demo.root), "--logs", str(demo.logs)).stdout.splitlines()[0]
    assert f": {len(on_disk)} sessions (+{gone} named by logs, no dir)," in header, header
    human = run("stats", str(demo.root), "--logs", str(demo.logs), "--table", "top-sessions").stdout
    for r in s.sessions:
        line = next(line for line in human.splitlines() if r.dir in line)
        assert ("(no dir)" in line) == (not r.on_disk), line


def test_a_filter_that_keeps_nothing_does_not_call_the_root_empty(tmp_path):
    demo = write_demo(tmp_path / "demo")
    n = sum(1 for _ in demo.root.glob("session-*/*"))
    for args in (["--older-than", "1d"], ["--logs", str(demo.logs), "--finding", "expired-locator"]):
        out = run("ls", str(demo.root), *args).stdout
        assert f"no artifact matches the filter ({n} in the root)" in out and "empty:" not in out, args
    for session in demo.root.iterdir():  # a root truly empty of artifacts still says so
        for artifact in session.iterdir():
            artifact.unlink()
    assert "empty: no artifact in this root" in run("ls", str(demo.root)).stdout


def test_dsh_link_findings_equal_verifys_on_planted_faults(tmp_path):
    """Every finding verify gives without reading content, planted: an artifact a notice names
    deleted (expired), a locator outside the root, a notice naming another session's artifact
    (foreign owner), an unreadable-content-free orphan; across a generated root, in worker processes
    too. The codes verify derives from content are the only difference, and the scope says so."""
    root, logs, named = build_root(tmp_path, dsh_source.PARALLEL_MIN_DIRS + 4, seed=11)
    victims = sorted(named)[:3]
    Path(victims[0]).unlink()
    other = root / session_dir_name("other")
    plant(other / "0000000000dd-bash.txt", 1, 50)
    _write_log(logs, "planted", "/work/planted", [
        tool_result("x1", notice("/elsewhere/" + session_dir_name("far") + "/0000000000ee-bash.txt", 10)),
        tool_result("x2", notice(str(other / "0000000000dd-bash.txt"), 10)),
        tool_result("x3", notice(victims[0], 10)),
    ])
    # stats forecasts the sweep (past-retention) always; verify when asked to, at the same period
    verify = _codes(run("verify", str(root), "--logs", str(logs), "--retention", "30d", "--json"), "summary")
    stats = run("stats", str(root), "--logs", str(logs), "--json")
    assert {"expired-locator", "outside-root", "foreign-owner", "orphan-artifact", "past-retention"} <= set(verify)
    content = {"omission-mismatch", "preview-mismatch", "content-mismatch", "malformed-artifact"}
    counted = _codes(stats, "findings")
    assert counted == {code: n for code, n in verify.items() if code not in content}
    assert verify["expired-locator"] == 2


def test_omissions_no_notice_counts_read_unknown_not_zero(tmp_path):
    """Claude Code's notices give no byte count: the view says unknown, never ``0 Bytes+``."""
    out = run("stats", str(Path(__file__).parent / "fixtures" / "claude" / "projects")).stdout
    assert "notices omitted an unknown number of bytes" in out.splitlines()[0]
    assert "0 Bytes+" not in out and " unknown " in out
    data = json.loads(run("stats", str(Path(__file__).parent / "fixtures" / "claude" / "projects"), "--json").stdout)
    assert data["totals"]["notices"] > 0  # and the kind rows carry them, as dsh's do
    assert sum(k["notices"] for k in data["kinds"]) == data["totals"]["notices"]
