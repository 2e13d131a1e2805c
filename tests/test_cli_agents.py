"""The CLI on another agent's tree, through the real entry point: detection, --agent, verify/ls/grep/cat.

`verify --json` must have dsh's shape (``notices.found/checked``, ``findings[].code/path/line``)
with one checked notice per linked spill file; a tree no agent wrote is a usage error naming
``--agent``; dsh roots keep their own commands.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "claude" / "projects"


def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("cli") / "projects"
    shutil.copytree(FIXTURES, dest)
    return dest


def test_verify_json_on_a_claude_projects_dir_without_logs(projects: Path) -> None:
    proc = run("verify", str(projects), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["agent"] == "claude" and data["ok"] is True and data["findings"] == []
    assert data["notices"] == {"found": 20, "checked": 20, "unchecked": 0, "noLocator": 0, "nothingChecked": None,
                               "rebaseHint": None}
    assert set(data) >= {"summary", "findings", "failOn", "notices", "ok"}


def test_verify_reports_a_changed_byte_with_code_path_line(projects: Path) -> None:
    project = projects / "barebones-2122-20260128-152044"
    spill = sorted(project.glob("*/tool-results/*"))[0]
    data = spill.read_bytes()
    spill.write_bytes(data[:-1] + (b"#" if data[-1:] != b"#" else b"%"))
    try:
        proc = run("verify", str(project), "--json")
        human = run("verify", str(project))
    finally:
        spill.write_bytes(data)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    (f,) = out["findings"]
    assert f["code"] == "content-mismatch" and f["path"].endswith(".jsonl") and isinstance(f["line"], int)
    assert f["locator"] == str(spill)
    assert out["notices"]["checked"] == 6 and out["ok"] is False
    assert human.returncode == 1 and b"content-mismatch" in human.stdout and b"FAIL" in human.stdout


def test_ls_lists_each_spill_file_with_its_status(projects: Path) -> None:
    proc = run("ls", str(projects), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    arts = [a for s in data["sessions"] for a in s["artifacts"]]
    assert len(arts) == 20 and {a["status"] for a in arts} == {"verified"}
    assert all(a["notice"]["transcript"].endswith(".jsonl") for a in arts)


def test_grep_searches_spill_files_and_transcripts_as_text(projects: Path) -> None:
    proc = run("grep", "Output too large (22.9KB)", str(projects), "--json")
    assert proc.returncode == 0, proc.stderr
    hits = [json.loads(line) for line in proc.stdout.splitlines()]
    # The notice, in the transcript's decoded string (never the escaped JSON).
    assert any(h["kind"] == "transcript" and h["field"] == "message.content[0].content" and h["line"] == 80
               for h in hits)
    proc = run("grep", "--json", "-m", "1", "collect_wsd_files()", str(projects))
    kinds = {json.loads(line)["kind"] for line in proc.stdout.splitlines()}
    assert kinds == {"spill", "transcript"}
    assert run("grep", "no such text anywhere \u2028", str(projects)).returncode == 1


def test_cat_gives_a_spill_file_byte_for_byte(projects: Path) -> None:
    (spill,) = (projects / "wsd-dev-02-20260119-142117").glob("*/tool-results/*")
    proc = run("cat", str(spill), "--raw")
    assert proc.returncode == 0 and proc.stdout == spill.read_bytes()


def test_a_tree_no_agent_wrote_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    proc = run("verify", str(tmp_path))
    assert proc.returncode == 2
    assert b"no agent's spill layout found here" in proc.stderr and b"--agent NAME" in proc.stderr
    forced = run("verify", str(tmp_path), "--agent", "claude")
    # Nothing checked: exit 3, as dsh's verify (docs/cli.md), never OK.
    assert forced.returncode == 3 and f"NOTHING CHECKED: no Claude Code transcript or spill file found in {tmp_path}".encode() in forced.stdout
    assert run("verify", str(tmp_path), "--agent", "nope").returncode == 2
    mixed = run("verify", str(tmp_path), "--agent", "claude", "--logs", str(tmp_path))
    assert mixed.returncode == 2 and b"--logs is for dsh roots" in mixed.stderr


def test_agent_dsh_forces_the_dsh_inspector(projects: Path) -> None:
    proc = run("verify", str(projects), "--agent", "dsh", "--json")
    data = json.loads(proc.stdout)
    assert data["agent"] == "dsh"  # dsh's own command, the shape every agent's has
    assert any(f["code"] == "unexpected-entry" for f in data["findings"])


@pytest.mark.parametrize("agent,tree,files", [("gemini", "gemini/tmp", 9), ("qwen", "qwen/home", 6),
                                               ("opencode", "opencode/share", 5)])
def test_verify_json_has_the_same_shape_for_every_agent(agent: str, tree: str, files: int) -> None:
    path = Path(__file__).parent / "fixtures" / tree
    proc = run("verify", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["agent"] == agent and data["ok"] is True and data["findings"] == []
    assert data["notices"]["found"] == data["notices"]["checked"] == files
    assert set(data) == {"agent", "summary", "findings", "failOn", "notices", "retention", "ok"}
    assert data["retention"]["seconds"] > 0


def _age(tree: Path, seconds: float) -> None:
    import os
    import time

    when = time.time() - seconds
    for p in [tree, *tree.rglob("*")]:
        os.utime(p, (when, when), follow_symlinks=False)


@pytest.mark.parametrize("agent,tree,age", [("claude", "claude/projects", 40 * 86400), ("gemini", "gemini/tmp", 40 * 86400),
                                            ("qwen", "qwen/home", 2 * 86400), ("opencode", "opencode/share", 8 * 86400)])
def test_prune_applies_the_agents_rule_but_never_what_a_recent_transcript_names(
        agent: str, tree: str, age: int, tmp_path: Path) -> None:
    root = tmp_path / agent
    shutil.copytree(Path(__file__).parent / "fixtures" / tree, root)
    _age(root, age)
    transcripts = [p for p in root.rglob("*") if p.suffix in (".jsonl", ".db") or p.parent.name == "msg_legacy"]
    for t in transcripts:  # every transcript live: nothing may go
        t.touch()
    proc = run("prune", str(root), "--apply", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["agent"] == agent and data["deleted"] == [] and data["kept"]
    _age(root, age)  # every transcript old: the agent's own rule decides
    dry = json.loads(run("prune", str(root), "--json").stdout)
    assert dry["candidates"] and dry["deleted"] == []
    assert all(Path(c["path"]).exists() for c in dry["candidates"])  # a dry run deletes nothing
    done = json.loads(run("prune", str(root), "--apply", "--json").stdout)
    assert sorted(done["deleted"]) == sorted(c["path"] for c in dry["candidates"])
    assert not any(Path(p).exists() for p in done["deleted"])
    assert all(t.exists() for t in transcripts)  # transcripts are never pruned
    # What is left is what the notices now call expired, nothing else.
    after = json.loads(run("verify", str(root), "--json").stdout)
    assert {f["code"] for f in after["findings"]} <= {"expired-locator"}


def test_spillscope_path_on_an_agents_tree_opens_the_agents_tui(projects: Path) -> None:
    """`spillscope PATH` is `tui PATH`: on another agent's tree it is the agents' app
    (run under Pilot in tests/test_tui_agents.py); serve's tabs run the same app, named by
    --agent (in a browser: tests/test_serve.py), with --allow-export's DIR as dsh's tabs have it."""
    from spillscope.frontends.cli import agents
    from spillscope.frontends.cli.choose import choose
    from spillscope.frontends.cli.main import build_parser, cmd_serve
    from spillscope.frontends.serve.server import app_command

    args = build_parser().parse_args(["tui", str(projects)])
    choose(args)
    assert args.func is agents.cmd_tui and args.dialect.name == "claude"
    args = build_parser().parse_args(["serve", str(projects)])
    choose(args)
    assert args.func is cmd_serve and args.dialect.name == "claude"  # dsh's serve, told the agent
    command = app_command(str(projects), None, None, None, "/exports", agent="claude")
    assert command.endswith(f"tui {projects} --agent claude --export-dir /exports")
    # Without a terminal the agents' TUI refuses, as dsh's does, instead of drawing into a pipe.
    proc = run("tui", str(projects))
    assert proc.returncode == 2 and b"the terminal UI needs a terminal" in proc.stderr


def test_watch_reports_an_agents_spill_files_and_transcripts(tmp_path: Path) -> None:
    import signal

    from test_watch import WatchProcess

    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "wsd-dev-02-20260119-142117", tree / "p")
    (spill,) = tree.glob("p/*/tool-results/*")
    (log,) = tree.glob("p/*.jsonl")
    watch = WatchProcess(tree, "--initial")
    try:
        first = watch.wait_for(lambda e: e["path"] == str(spill))
        assert first["event"] == "added" and first["kind"] == "spill" and first["agent"] == "claude"
        new = spill.with_name("toolu_01NewSpill.txt")
        new.write_text("fresh output\n")
        assert watch.wait_for(lambda e: e["path"] == str(new))["event"] == "added"
        with open(log, "a") as f:
            f.write("{}\n")
        ev = watch.wait_for(lambda e: e["path"] == str(log) and e["event"] == "modified")
        assert ev["kind"] == "transcript"
        new.unlink()
        assert watch.wait_for(lambda e: e["path"] == str(new) and e["event"] == "deleted")["size"] is None
    finally:
        assert watch.stop(signal.SIGINT) == 0


#: verify --json, every agent: each member, and each finding's, with the types it may hold.
_SHAPE = {"agent": (str,), "summary": (dict,), "findings": (list,), "failOn": (list,), "notices": (dict,),
          "retention": (dict,), "ok": (bool,)}
_NOTICES = {"found": (int,), "checked": (int,), "unchecked": (int,), "noLocator": (int,),
            "nothingChecked": (str, type(None)), "rebaseHint": (dict, type(None))}
_FINDING = {"code": (str,), "severity": (str,), "path": (str, type(None)), "line": (int, type(None)),
            "session": (str, type(None)), "locator": (str, type(None)), "detail": (str,)}
_RETENTION = {"seconds": (int, float), "source": (str,), "scope": (str,), "pastRetention": (int,)}


def _shape_of(data: dict[str, object]) -> None:
    for shape, value in ((_SHAPE, data), (_NOTICES, data["notices"]), (_RETENTION, data["retention"])):
        assert isinstance(value, dict) and list(value) == list(shape), (list(value), list(shape))
        for key, types in shape.items():
            assert isinstance(value[key], types) and not (types == (int,) and isinstance(value[key], bool)), key
    findings = data["findings"]
    assert isinstance(findings, list) and findings
    for f in findings:
        assert list(f) == list(_FINDING)
        assert all(isinstance(f[k], t) for k, t in _FINDING.items()), f
    assert all(isinstance(k, str) and type(v) is int for k, v in data["summary"].items())  # type: ignore[attr-defined]


@pytest.mark.parametrize("agent", ["claude", "qwen", "gemini", "opencode", "dsh"])
def test_verify_json_members_and_types_are_the_same_for_all_five(agent: str, tmp_path: Path) -> None:
    """The same members in the same order with the same types, for dsh (the demo root) as for
    each agent's fixture tree, on a tree with a finding (a planted foreign file), so that
    ``findings[]`` is not an empty list whose members nobody looked at."""
    #: agent → its fixture tree, and a spill dir in it (glob) for the foreign file
    trees = {"claude": ("claude/projects", "*/*/tool-results"), "qwen": ("qwen/home", "tmp/*/tool-results"),
             "gemini": ("gemini/tmp", "*/tool-outputs"), "opencode": ("opencode/share", "tool-output")}
    if agent == "dsh":
        subprocess.run([sys.executable, "-m", "spillscope", "demo", str(tmp_path / "demo"), "--no-tui"],
                       check=True, capture_output=True, timeout=120)
        root, extra = tmp_path / "demo" / "spill-root", ["--logs", str(tmp_path / "demo" / "logs")]
    else:
        tree, spills = trees[agent]
        root, extra = tmp_path / agent, []
        shutil.copytree(Path(__file__).parent / "fixtures" / tree, root)
        (sorted(root.glob(spills))[0] / "foreign.txt").write_text("nobody wrote me\n")
    proc = run("verify", str(root), *extra, "--json")
    data = json.loads(proc.stdout)
    assert data["agent"] == agent, proc.stderr
    _shape_of(data)
    assert proc.returncode == 1 and data["ok"] is False  # the foreign file (the demo's own orphan) fails
    assert data["notices"]["found"] >= data["notices"]["checked"] > 0
