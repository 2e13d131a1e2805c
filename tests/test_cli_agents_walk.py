"""A new user's walk of the CLI on every agent's tree, through the real entry point.

Each test is one defect the walk found, checked on every agent where it applies: ``ls
--session`` finds the session a transcript gives a spill file (qwen's were in none),
``--retention`` is what verify reports and applies, the nothing-checked reason is the true
one, ``ls`` shows each finding once, ``prune --dry-run`` is taken and says "would delete",
``watch`` says what it watches and refuses a path that is not there, and an expired
locator's path is labelled as what the notice names, not as a file. Every tree is a copy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TREES = {"claude": "claude/projects", "qwen": "qwen/home", "gemini": "gemini/tmp", "opencode": "opencode/share"}
TITLES = {"claude": "Claude Code", "qwen": "qwen-code", "gemini": "Gemini CLI", "opencode": "OpenCode"}
AGENTS = sorted(TREES)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, timeout=120, text=True)


def copy(agent: str, tmp_path: Path) -> Path:
    dest = tmp_path / agent
    shutil.copytree(FIXTURES / TREES[agent], dest)
    return dest


def ls_json(tree: Path, *extra: str) -> dict[str, Any]:
    proc = run("ls", str(tree), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def artifacts(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for s in data["sessions"] for a in s["artifacts"]]


# 1. ls --session: the session a spill file belongs to, for every agent.

@pytest.mark.parametrize("agent", AGENTS)
def test_ls_session_keeps_each_sessions_spill_files(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    data = ls_json(tree)
    arts = artifacts(data)
    # Every fixture's spill files are linked by a transcript: each has that transcript's session.
    assert arts and all(a["session"] and a["sessionSource"] == "link" for a in arts), arts
    for s in data["sessions"]:
        assert s["sessionId"] and {a["session"] for a in s["artifacts"]} == {s["sessionId"]}
    for sid in {a["session"] for a in arts}:
        kept = ls_json(tree, "--session", sid)
        assert sorted(a["path"] for a in artifacts(kept)) == sorted(a["path"] for a in arts if a["session"] == sid)
        human = run("ls", str(tree), "--session", sid)
        assert human.returncode == 0 and f"session {sid}" in human.stdout and "no spill file matches" not in human.stdout


def test_qwen_spill_files_belong_to_the_chat_that_links_them(tmp_path: Path) -> None:
    tree = copy("qwen", tmp_path)
    (chat,) = tree.glob("projects/*/chats/*.jsonl")
    data = ls_json(tree, "--session", chat.stem)
    assert data["totals"]["artifacts"] == 6 and data["sessions"][0]["sessionId"] == chat.stem


@pytest.mark.parametrize("agent,where", [("claude", "*/*/tool-results"),
                                         ("gemini", "*/tool-outputs/session-8d18b439-*")])
def test_an_orphans_probable_session_is_its_dir(agent: str, where: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    dirs = sorted(tree.glob(where))
    orphan = dirs[-1] / ("toolu_01Orphan0000000000000000.txt" if agent == "claude" else "run_shell_command_1_0.txt")
    orphan.write_text("nobody named me\n")
    (art,) = [a for a in artifacts(ls_json(tree)) if a["path"] == str(orphan)]
    assert art["status"] == "orphan" and art["sessionSource"] == "layout" and art["session"]
    assert art["session"] in str(orphan.parent.parent if agent == "claude" else orphan.parent)
    assert str(orphan) in [a["path"] for a in artifacts(ls_json(tree, "--session", art["session"]))]
    human = run("ls", str(tree), "--session", art["session"]).stdout
    (row,) = [line for line in human.splitlines() if orphan.name in line]
    assert "(probable session: its dir)" in row


def test_a_qwen_orphan_has_no_session_the_layout_could_say(tmp_path: Path) -> None:
    tree = copy("qwen", tmp_path)
    for chat in tree.glob("projects/*/chats/*.jsonl"):
        chat.unlink()
    data = ls_json(tree)
    assert {(a["session"], a["sessionSource"]) for a in artifacts(data)} == {(None, None)}
    assert "no session (no transcript names these files)" in run("ls", str(tree)).stdout


# 2. --retention is what verify applies and reports, in text and JSON.

@pytest.mark.parametrize("agent", [*AGENTS, "dsh"])
def test_verify_reports_the_retention_asked_for(agent: str, tmp_path: Path) -> None:
    if agent == "dsh":
        tree = tmp_path / "root"
        shutil.copytree(FIXTURES / "upstream" / "spill-root", tree)
        extra = ["--logs", str(FIXTURES / "upstream" / "sessions")]
    else:
        tree, extra = copy(agent, tmp_path), []
    past = time.time() - 10
    for p in tree.rglob("*"):
        os.utime(p, (past, past), follow_symlinks=False)
    proc = run("verify", str(tree), *extra, "--retention", "1s", "--json")
    data = json.loads(proc.stdout)
    assert data["retention"]["seconds"] == 1.0 and data["retention"]["source"].startswith("--retention 1s")
    assert data["retention"]["pastRetention"] > 0
    assert data["summary"].get("past-retention", 0) > 0
    human = run("verify", str(tree), *extra, "--retention", "1s").stdout
    if agent != "dsh":
        assert "retention: --retention 1s (in place of" in human
    default = json.loads(run("verify", str(tree), *extra, "--json").stdout)["retention"]
    assert default["seconds"] > 1.0 and not default["source"].startswith("--retention")


# 3. The nothing-checked reason is the true one.

def test_no_transcript_is_said_as_such(tmp_path: Path) -> None:
    tree = copy("qwen", tmp_path)
    for chat in tree.glob("projects/*/chats/*.jsonl"):
        chat.unlink()
    proc = run("verify", str(tree), "--agent", "qwen")
    assert proc.returncode == 1  # the orphans fail; the reason is said all the same
    assert f"no notice checked: no qwen-code transcript found in {tree}" in proc.stdout
    assert "hold no spill notice" not in proc.stdout and "OK" not in proc.stdout
    assert json.loads(run("verify", str(tree), "--json").stdout)["notices"]["nothingChecked"] == "no-session-logs"
    shutil.rmtree(next(tree.glob("tmp/*")))
    proc = run("verify", str(tree), "--agent", "qwen")
    assert proc.returncode == 3
    assert proc.stdout.splitlines()[-1] == f"NOTHING CHECKED: no qwen-code transcript or spill file found in {tree}"


@pytest.mark.parametrize("agent", ["qwen", "claude"])
def test_transcripts_without_a_notice_are_said_as_such(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    transcripts = [p for p in tree.rglob("*.jsonl")]
    for t in transcripts:
        t.write_text(json.dumps({"type": "user", "sessionId": t.stem, "message": {"content": "hi"}}) + "\n")
    for p in [p for p in tree.rglob("*") if p.is_file() and p not in transcripts]:
        p.unlink()
    proc = run("verify", str(tree), "--agent", agent)
    assert proc.returncode == 3, proc.stdout
    assert proc.stdout.splitlines()[-1] == \
        f"NOTHING CHECKED: no spill notice in the {len(transcripts)} transcript{'s' * (len(transcripts) != 1)} found"
    assert json.loads(run("verify", str(tree), "--agent", agent, "--json").stdout)["notices"]["nothingChecked"] \
        == "no-notices"


# 4. ls shows each finding once.

@pytest.mark.parametrize("agent", AGENTS)
def test_ls_shows_each_finding_once(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    spills = sorted(a["path"] for a in artifacts(ls_json(tree)))
    changed, gone = Path(spills[0]), Path(spills[-1])
    data = changed.read_bytes()
    changed.write_bytes(data[:-1] + (b"#" if data[-1:] != b"#" else b"%"))
    gone.unlink()
    listing = ls_json(tree)
    human = run("ls", str(tree)).stdout
    assert listing["summary"], listing
    for code, n in listing["summary"].items():
        assert human.count(code) == n, (code, human)


# 5. prune --dry-run is taken; the words say what was done.

@pytest.mark.parametrize("agent", AGENTS)
def test_prune_dry_run_is_the_explicit_default(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    before = sorted(str(p) for p in tree.rglob("*"))
    dry = run("prune", str(tree), "--dry-run", "--older-than", "1s")
    assert dry.returncode == 0, dry.stderr
    plain = run("prune", str(tree), "--older-than", "1s")
    assert dry.stdout == plain.stdout
    assert "would delete" in dry.stdout and "deleted" not in dry.stdout.replace("nothing deleted", "")
    assert sorted(str(p) for p in tree.rglob("*")) == before
    both = run("prune", str(tree), "--dry-run", "--apply")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_prune_dry_run_on_a_dsh_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / "upstream" / "spill-root", root)
    proc = run("prune", str(root), "--dry-run")
    assert proc.returncode == 0 and "would be freed" in proc.stdout


def test_prune_apply_says_deleted_for_what_it_deleted(tmp_path: Path) -> None:
    tree = copy("qwen", tmp_path)
    past = time.time() - 3 * 86400
    for p in tree.rglob("*"):
        os.utime(p, (past, past))
    proc = run("prune", str(tree), "--apply", "--keep-active", "1s")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "deleted 6 files" and "would" not in proc.stdout
    assert not list(tree.glob("tmp/*/tool-results/*"))


# 6. watch says what it watches, and a path that is not there is exit 2.

@pytest.mark.parametrize("agent", AGENTS)
def test_watch_says_what_it_watches(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "spillscope", "watch", str(tree)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # The banner comes before the first poll; a watch that says nothing is stopped at 5 s.
        _, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    banner = err.splitlines()[0] if err else ""
    assert banner.startswith(f"spillscope: watching {tree} ({TITLES[agent]})") and "(Ctrl-C stops)" in banner
    assert proc.returncode == 0


@pytest.mark.parametrize("agent", AGENTS)
def test_watch_on_a_path_that_is_not_there_is_a_usage_error(agent: str, tmp_path: Path) -> None:
    proc = run("watch", str(tmp_path / "nope"), "--agent", agent)
    assert proc.returncode == 2 and proc.stderr == f"spillscope: {tmp_path / 'nope'}: does not exist\n"
    (tmp_path / "file").write_text("x")
    proc = run("watch", str(tmp_path / "file"), "--agent", agent)
    assert proc.returncode == 2 and "not a directory (a file)" in proc.stderr


# 7. An expired locator's path is what the notice names, not a file.

@pytest.mark.parametrize("agent", AGENTS)
def test_an_expired_locator_is_labelled_as_named(agent: str, tmp_path: Path) -> None:
    tree = copy(agent, tmp_path)
    gone = Path(sorted(a["path"] for a in artifacts(ls_json(tree)))[0])
    gone.unlink()
    data = json.loads(run("verify", str(tree), "--json").stdout)
    expired = [f for f in data["findings"] if f["code"] == "expired-locator"]
    assert expired and all(f["locator"] for f in expired)
    human = run("verify", str(tree)).stdout
    for f in expired:
        assert f"notice names: {f['locator']}" in human
        assert f"file: {f['locator']}" not in human
    listed = run("ls", str(tree)).stdout
    assert any(f"notice names: {f['locator']}" in listed for f in expired)
