"""What a new user hits (issue 15), through the real entry point: a verify that checked
nothing never says OK, exit statuses survive a closed pipe, misuse is one clear line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
import sys

import pytest

from spillscope.frontends.demo import write_demo

import nobody

EXE = [sys.executable, "-m", "spillscope"]


def run(*args: str, env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EXE, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, **kw)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return write_demo(tmp_path_factory.mktemp("d") / "demo")


# A root moved or copied: every locator names the old place. Old roots of several shapes
# (deep, spaces, non-ASCII, a trailing component that looks like a session dir's parent).
OLD_NAMES = ["spill-root", "a b/spill root", "деревня/根", "x/y/z/w/spill"]


@pytest.mark.parametrize("old_name", OLD_NAMES)
def test_verify_of_a_moved_root_is_never_ok_and_names_the_rebase(tmp_path, old_name):
    demo = write_demo(tmp_path / "old" / old_name)
    moved = tmp_path / "new-root"
    shutil.copytree(demo.root, moved)
    proc = run("verify", str(moved), "--logs", str(demo.logs), "--fail-on", "error,expired-locator")
    assert proc.returncode == 3, proc.stdout  # nothing checked, and no finding at --fail-on
    out = proc.stdout
    assert "OK" not in out.splitlines()[-1]
    assert out.splitlines()[-1].startswith("NOTHING CHECKED: no notice was compared with its artifact — try the --rebase above")
    assert "no notice checked: every notice's locator is outside the root" in out
    # The hint is the old root, taken from the locators, and says they would resolve.
    assert f"did you mean --rebase {demo.root}?" in out
    data = json.loads(run("verify", str(moved), "--logs", str(demo.logs), "--json").stdout)
    notices = data["notices"]
    assert data["ok"] is False and notices["checked"] == 0 and notices["unchecked"] > 0
    assert notices["nothingChecked"] == "outside-root"
    assert notices["rebaseHint"]["prefix"] == str(demo.root)
    # 1 expired locator in the demo: the rest would resolve.
    assert notices["rebaseHint"]["wouldResolve"] == notices["unchecked"] - 1
    # Following the hint checks them all; then only real findings decide.
    fixed = run("verify", str(moved), "--logs", str(demo.logs), "--rebase", str(demo.root), "--json", "--fail-on", "error")
    fixed_data = json.loads(fixed.stdout)
    assert fixed_data["notices"]["unchecked"] == 0 and fixed_data["notices"]["checked"] == notices["unchecked"]
    assert fixed_data["notices"]["rebaseHint"] is None
    assert fixed.returncode == 0


def test_verify_in_place_reports_what_it_checked(demo):
    proc = run("verify", str(demo.root), "--logs", str(demo.logs), "--fail-on", "error")
    assert proc.returncode == 0, proc.stdout
    assert "did you mean" not in proc.stdout
    line = next(l for l in proc.stdout.splitlines() if l.startswith("notices:"))
    assert "0 checked" not in line and "NOT checked" not in line


def test_upstream_fixture_copied_is_not_ok(tmp_path):
    from conftest import UPSTREAM

    shutil.copytree(UPSTREAM / "spill-root", tmp_path / "spill-root")
    shutil.copytree(UPSTREAM / "sessions", tmp_path / "sessions")
    proc = run("verify", str(tmp_path / "spill-root"), "--logs", str(tmp_path / "sessions"),
               "--fail-on", "error,expired-locator")
    assert proc.returncode == 3
    old_root = json.loads((UPSTREAM / "manifest.json").read_text())["spillRoot"]["originalRoot"]
    assert f"did you mean --rebase {old_root}? (15 of 15 " in proc.stdout
    assert "notices: 17 found, 0 checked against the root, 15 NOT checked" in proc.stdout


def _closed_pipe_status(*args: str) -> int:
    """Run with stdout a pipe whose reader has already gone (as `| head` leaves it)."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = subprocess.run([*EXE, *args], stdout=w, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(w)
    assert b"Traceback" not in proc.stderr, proc.stderr
    return proc.returncode


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_exit_status_survives_a_closed_pipe(demo, json_flag):
    failing = ["verify", str(demo.root), "--logs", str(demo.logs), "--fail-on", "warning", *json_flag]
    passing = ["verify", str(demo.root), "--logs", str(demo.logs), "--fail-on", "error", *json_flag]
    assert run(*failing).returncode == 1
    assert _closed_pipe_status(*failing) == 1
    assert _closed_pipe_status(*passing) == 0


def test_fail_on_empty_is_refused(demo):
    for value in ["", " ", ",", " , "]:
        proc = run("verify", str(demo.root), "--fail-on", value)
        assert proc.returncode == 2 and "empty" in proc.stderr
    assert run("verify", str(demo.root), "--logs", str(demo.logs), "--fail-on", "none").returncode == 0


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert lines and lines[-1].startswith("spillscope"), proc.stderr
    return lines[-1]


def test_demo_into_bad_places_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "precious").write_text("y")
    for target, why in [("/etc", "not a spillscope demo"), (str(tmp_path / "file"), "Not a directory"),
                        (str(tmp_path / "file" / "sub"), "Not a directory"),
                        (str(tmp_path / "keep"), "not a spillscope demo")]:
        assert why in _one_line_error(run("demo", target, "--no-tui"))
    assert (tmp_path / "keep" / "precious").read_text() == "y"


def test_demo_into_an_unwritable_dir_is_a_clear_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    tmp_path.chmod(0o755)
    if os.geteuid() == 0:  # root may write anywhere: as nobody, from a copy it can read
        proc = subprocess.run(nobody.spillscope_cli("demo", str(ro / "d"), "--no-tui"), capture_output=True,
                              text=True, timeout=120, env=nobody.env())
    else:
        proc = run("demo", str(ro / "d"), "--no-tui")
    assert "Permission denied" in _one_line_error(proc)


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "1e999"])
def test_a_bad_progress_setting_is_a_clear_error(demo, value):
    line = _one_line_error(run("ls", str(demo.root), env={"SPILLSCOPE_PROGRESS_AFTER": value}))
    assert "SPILLSCOPE_PROGRESS_AFTER" in line


def test_bad_numbers_and_unreadable_paths_are_clear_errors(demo, tmp_path):
    _one_line_error(run("serve", str(demo.root), "--port", "99999"))
    _one_line_error(run("verify", str(demo.root), "--max-line-bytes", "9" * 30))
    _one_line_error(run("cat", str(demo.root / "nope"), "--max-line-bytes", "9" * 30))
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    try:
        if os.geteuid() == 0:
            tmp_path.chmod(0o755)
            proc = subprocess.run(nobody.spillscope_cli("ls", str(locked / "x")), capture_output=True, text=True,
                                  timeout=120, env=nobody.env())
        else:
            proc = run("ls", str(locked / "x"))
        _one_line_error(proc)
    finally:
        locked.chmod(0o700)


def test_tui_refuses_without_a_terminal(demo, tmp_path):
    out = tmp_path / "out"
    with open(out, "w") as f:
        proc = subprocess.run([*EXE, str(demo.root)], stdout=f, stderr=subprocess.PIPE, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "needs a terminal" in proc.stderr
    assert out.read_text() == ""  # no escape codes written into the file
    proc = subprocess.run([*EXE, "tui", str(demo.root)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "needs a terminal" in proc.stderr


def test_notebook_objects_say_what_is_wrong(demo):
    import spillscope

    insp = spillscope.open(demo.root, demo.logs)
    transcript = insp.reference("Research ✨").transcript()
    assert transcript.text(6).startswith("Final answer")
    for n in (99, 7, 0, -1):
        with pytest.raises(IndexError, match=rf"no message {n}: this transcript has messages 1 to 6"):
            transcript.text(n)
    findings = insp.findings()
    with pytest.raises(ValueError, match="unknown finding code 'bogus'"):
        findings.where("bogus")
    assert len(findings.where("expired-locator")) == 1 and len(findings.where("orphan-artifact")) == 1
    assert len(findings.where("warning")) == len([f for f in findings if f.severity == "warning"])
    with pytest.raises(KeyError, match="no reference with label or session id 'nope'"):
        insp.reference("nope")
    for ref in insp.references:
        text = repr(ref)
        assert "None" not in text, text
    assert "not recomputed: the artifact is gone" in repr(insp.reference("Build log"))
    assert "not recomputed: no snapshot was saved" in repr(insp.reference("Research (no storage)"))
    # The HTML preview marks the cut in the shortened message (exactly: the transcript is there).
    html = insp.reference("Research ✨")._repr_html_()
    assert html.count("<mark class='cut'") == 1 and "≈✂" not in html
    assert "appendix li<mark class='cut'" in html.replace("\n", "")  # where the writer cut: ceil(813/2) bytes


def test_the_users_demo_dir_is_out_of_the_tests_reach(_private_temp_dir):
    from spillscope.frontends.demo import default_demo_dir

    assert default_demo_dir().parent == _private_temp_dir
    proc = subprocess.run([*EXE, "demo", "--no-tui"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and str(_private_temp_dir) in proc.stdout


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_readme_walk_in_a_real_terminal(tmp_path, size):
    """`spillscope demo` in tmux at a small and a big size: the reference's preview and
    notice's verdict are both on screen, `?` help shows its end, `q` quits with 0."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from test_tmux import Tmux

    tmux = Tmux(tmp_path)
    marker = tmp_path / "exit-code"
    exe = Path(sys.executable).parent / "spillscope"
    cmd = f"{exe} demo --dir {tmp_path / 'demo'}; echo $? > {marker}; sleep 30"
    w, h = size
    tmux.run("new-session", "-d", "-s", "main", "-x", str(w), "-y", str(h), "-e", "TERM=xterm-256color", cmd)
    try:
        tmux.wait_for("demo-tools")
        tmux.wait_gone("verifying")
        for _ in range(5):  # a key sent while a rescan lands can be lost: until the filter shows
            tmux.keys("/")
            time.sleep(0.3)
            tmux.keys("C-u")
            tmux.keys("-l", "Research")
            time.sleep(0.5)
            if "demo-tools" not in tmux.screen():
                break
        tmux.keys("Enter")
        time.sleep(0.5)
        screen = ""
        for _ in range(10):
            tmux.keys("Down")
            time.sleep(0.3)
            screen = tmux.screen()
            if "Final answer" in screen and "resolves: the artifact" in screen:
                break
        # The verdict and the facts it rests on first (issue 27); the count table follows
        # them, whole, in the notice pane (on screen at 200×50, scrolled to at 80×24).
        assert "Preview — what the model saw" in screen and "✔ resolves: the artifact" in screen, screen
        assert "bytes    15720" in screen and "hint " in screen, screen
        if w >= 120:
            assert "omittedBytes      13085   13085" in screen, screen  # the counts table whole
        assert "Final answer" in screen  # the preview's text, not an empty box
        tmux.keys("F1")  # F1 helps too; the key table's last line is on screen, no scrolling
        screen = tmux.wait_for("closes this help")
        assert "Browse" in screen and "Reader" in screen, screen
        tmux.keys("q")  # closes the help, not the app
        tmux.wait_gone("closes this help")
        time.sleep(0.5)
        assert not marker.exists()
        tmux.keys("q")
        assert tmux.exit_status(marker) == "0"
    finally:
        tmux.run("kill-server")


def test_notebook_says_what_was_not_checked(tmp_path):
    import spillscope

    demo = write_demo(tmp_path / "old")
    shutil.copytree(demo.root, tmp_path / "moved")
    insp = spillscope.open(tmp_path / "moved", demo.logs)
    assert "0 checked against the root" in repr(insp) and f"did you mean --rebase {demo.root}?" in repr(insp)
    assert "did you mean --rebase" in insp._repr_html_()
    assert "did you mean" not in repr(spillscope.open(demo.root, demo.logs))


def test_cat_to_a_terminal_notes_surrogates_truthfully_on_a_line_of_its_own(demo):
    """To a terminal a lone surrogate shows as ⟨lone U+D800⟩, and the note says that (not
    "written as U+FFFD"); the note starts its own line even when the text did not end one."""
    import pty

    transcript = next(demo.root.rglob("*-session-reference-1.txt"))
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*EXE, "cat", str(transcript), "--message", "4"], stdout=slave, stderr=slave,
                                stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(master)
    out = b"".join(chunks).decode("utf-8").replace("\r\n", "\n")
    assert "⟨lone U+D800⟩" in out and "\ufffd" not in out
    note = next(line for line in out.splitlines() if "lone surrogate(s)" in line)
    assert note.startswith("spillscope: note: 3 lone surrogate(s) shown as ⟨lone U+XXXX⟩")
    assert "written as U+FFFD" not in out
    # --raw writes them as U+FFFD (also into a pipe), and the warning says so.
    piped = subprocess.run([*EXE, "cat", str(transcript), "--message", "4", "--raw"], capture_output=True, timeout=60)
    assert "\ufffd" in piped.stdout.decode() and b"written as U+FFFD" in piped.stderr
