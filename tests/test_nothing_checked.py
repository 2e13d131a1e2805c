"""Checking nothing is not a pass (issue 27, items 3 and 4): a verification that compared
no notice with its artifact says what it did not check and why — in the core, the CLI
(its own exit status, 3), the TUI's status line and the notebook — and ``verify``'s
default ``--fail-on`` fails on the findings a CI user would expect to fail on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from spillscope.inspect.verify.coverage import NOTHING_CHECKED, coverage, nothing_checked
from spillscope.inspect.findings import CODES
from spillscope.inspect.verify.inspection import inspect_root


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo(tmp_path_factory.mktemp("d") / "demo")


def _logs_with(demo, tmp: Path, *sessions: str) -> Path:
    """A logs dir holding only the named sessions' logs from the demo."""
    logs = tmp / "logs"
    logs.mkdir()
    for log in demo.logs.rglob("session.v3.jsonl"):
        if log.parent.name in sessions:
            dest = logs / log.relative_to(demo.logs)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(log, dest)
    return logs


def _case(name: str, demo, tmp: Path) -> tuple[Path, Path | None, str]:
    """A root and logs (or None) of one kind of nothing-checked, and the reason expected."""
    empty = tmp / "empty-root"
    empty.mkdir(mode=0o700)
    if name == "no-logs":
        return demo.root, None, "no-logs"
    if name == "no-logs, empty root":
        return empty, None, "no-logs"
    if name == "logs dir with no log":
        (tmp / "no-logs-here").mkdir()
        return demo.root, tmp / "no-logs-here", "no-session-logs"
    if name == "logs dir with no log, empty root":
        (tmp / "no-logs-here").mkdir()
        return empty, tmp / "no-logs-here", "no-session-logs"
    if name == "logs without a notice":  # a source session: it was referenced, it references nothing
        return demo.root, _logs_with(demo, tmp, "src-build", "src-notes"), "no-notices"
    if name == "logs without a notice, empty root":
        return empty, _logs_with(demo, tmp, "src-build"), "no-notices"
    if name == "every locator outside the root":
        moved = tmp / "moved"
        shutil.copytree(demo.root, moved)
        return moved, demo.logs, "outside-root"
    if name == "only notices with no snapshot":
        return demo.root, _logs_with(demo, tmp, "demo-target-nostore", "src-research"), "no-locator"
    raise AssertionError(name)


CASES = ["no-logs", "no-logs, empty root", "logs dir with no log", "logs dir with no log, empty root",
         "logs without a notice", "logs without a notice, empty root", "every locator outside the root",
         "only notices with no snapshot"]


@pytest.mark.parametrize("name", CASES)
def test_the_core_says_why_no_notice_was_checked(demo, tmp_path, name):
    root, logs, reason = _case(name, demo, tmp_path)
    ins = inspect_root(root, logs)
    cov = coverage(ins)
    assert cov.checked == 0 and cov.nothing_checked == reason == nothing_checked(ins)
    assert cov.to_json()["nothingChecked"] == reason


def test_a_checked_notice_is_not_nothing(demo, tmp_path):
    ins = inspect_root(demo.root, demo.logs)
    assert coverage(ins).nothing_checked is None and nothing_checked(ins) is None
    # One notice checked among many outside the root is enough: something was compared.
    partial = _logs_with(demo, tmp_path, "demo-target-build")
    assert coverage(inspect_root(demo.root, partial)).nothing_checked is None


@pytest.mark.parametrize("name", CASES)
def test_verify_that_checked_nothing_exits_3_and_says_why(demo, tmp_path, name):
    root, logs, reason = _case(name, demo, tmp_path)
    with_logs = [] if logs is None else ["--logs", str(logs)]
    # --fail-on none: no finding may decide; only what was checked does.
    proc = run("verify", str(root), *with_logs, "--fail-on", "none")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1].startswith("NOTHING CHECKED: no notice was compared with its artifact"), lines[-1]
    assert "OK" not in proc.stdout
    why = next(line for line in lines if line.startswith("no notice checked: "))
    assert NOTHING_CHECKED[reason] in why
    artifacts = sum(1 for p in Path(root).rglob("*") if p.is_file())
    assert ("the root holds no artifact" in why) == (artifacts == 0)
    data = json.loads(run("verify", str(root), *with_logs, "--fail-on", "none", "--json").stdout)
    assert data["ok"] is False and data["notices"]["nothingChecked"] == reason
    if reason == "no-logs":
        assert "pass --logs DIR" in lines[-1]


def test_findings_at_fail_on_come_before_nothing_checked(tmp_path):
    # A file others may read (a warning) in a root verified without logs: exit 1, not 3.
    sdir = tmp_path / "root" / "session-000000000001"
    sdir.mkdir(parents=True, mode=0o700)
    (sdir / "000000000002-bash.txt").write_text("output\n")
    (sdir / "000000000002-bash.txt").chmod(0o644)
    proc = run("verify", str(tmp_path / "root"))
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1].startswith("FAIL: 1 finding")
    assert "no notice checked: no session logs given" in proc.stdout
    assert run("verify", str(tmp_path / "root"), "--fail-on", "none").returncode == 3


def test_ls_of_an_empty_root_says_it_is_empty(tmp_path, demo):
    (tmp_path / "root").mkdir()
    proc = run("ls", str(tmp_path / "root"))
    assert proc.returncode == 0  # a listing, not a check
    assert "empty: no artifact in this root" in proc.stdout and "is this one?" in proc.stdout
    (tmp_path / "logs").mkdir()
    proc = run("ls", str(demo.root), "--logs", str(tmp_path / "logs"))
    assert proc.stdout.splitlines()[-1].startswith("no notice checked: the logs dir holds no session log")
    assert "empty" not in run("ls", str(demo.root)).stdout


# ---- item 4: the default --fail-on ---------------------------------------------------

def test_verify_fails_on_warnings_by_default_and_only_info_passes(demo, tmp_path):
    """The README says: 0 clean, 1 findings. The demo's expired locator and orphan are
    warnings: they fail; its reference made with no storage is info: it does not."""
    proc = run("verify", str(demo.root), "--logs", str(demo.logs), "--json")
    data = json.loads(proc.stdout)
    assert proc.returncode == 1 and data["ok"] is False
    assert set(data["failOn"]) == {c for c, (sev, _) in CODES.items() if sev in ("warning", "error")}
    # Without the expired reference's log, and its orphans deleted, only info is left.
    own = write_demo(tmp_path / "demo")
    info_only = _logs_with(own, tmp_path, *{p.parent.name for p in own.logs.rglob("session.v3.jsonl")} - {"demo-target-build"})
    root = own.root
    for orphan in [f["path"] for f in json.loads(run("verify", str(root), "--logs", str(info_only), "--json").stdout)
                   ["findings"] if f["code"] == "orphan-artifact"]:
        os.unlink(orphan)
    proc = run("verify", str(root), "--logs", str(info_only))
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1] == "OK: 0 findings at or above --fail-on (1 below it)"
    assert "snapshot-unavailable" in proc.stdout


def test_the_readme_states_the_exit_statuses_that_hold():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `spillscope verify"))
    for words in ("0 clean", "1 findings", "default `warning`", "2 usage", "3 "):
        assert words in row, row


# ---- the TUI's status line and the notebook say it too -------------------------------

async def test_the_tui_status_line_says_nothing_was_checked(demo):
    from spillscope.frontends.tui.app import SpillscopeApp
    from test_tui import status_text, wait_for

    app = SpillscopeApp(str(demo.root), None, watch=False)
    async with app.run_test(size=(200, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        assert "⚠ no notice checked: no session logs given" in status_text(app)
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(200, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        assert "no notice checked" not in status_text(app)


async def test_the_agents_tui_does_not_say_ok_on_a_tree_with_nothing_to_check(tmp_path):
    from spillscope.dialects import get
    from spillscope.frontends.tui.agent_app import AgentApp

    app = AgentApp(get("claude"), str(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        summary = str(app.query_one("#summary").render())
        assert summary.startswith("NOTHING CHECKED ") and "0 of 0 notices checked" in summary, summary


def test_the_notebook_says_nothing_was_checked(demo):
    import spillscope

    insp = spillscope.open(demo.root)
    assert "no notice checked: no session logs given" in repr(insp)
    assert "<div class=bad>no notice checked: no session logs given" in insp._repr_html_()
    assert "no notice checked" not in repr(spillscope.open(demo.root, demo.logs))
    # insp.verify()'s table: "0 findings" from checking nothing never stands alone.
    table = insp.verify()
    assert repr(table).splitlines()[1].startswith("no notice checked: no session logs given")
    assert "<div class=bad>no notice checked" in table._repr_html_()
    assert "no notice checked" in repr(table.where("warning"))
    assert "no notice checked" not in repr(spillscope.open(demo.root, demo.logs).verify())
