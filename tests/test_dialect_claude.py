"""The Claude Code dialect on real sessions (tests/fixtures/claude, see its README), with planted faults.

Every spill file of the real sessions must be linked and verified with no finding; then each
fault is planted in turn over every file (a deleted file, a changed byte at several places, a
foreign file, something that is not a file) and must be reported exactly once, with the right
finding. The whole public corpus runs too where a local copy is named (nothing is fetched).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from spillscope.dialects import DialectError, detect, get
from spillscope.dialects.base import Options, Report
from spillscope.dialects.checks import js_length, to_fixed
from spillscope.dialects.claude.notice import NoticeError, is_notice, parse_notice, size_label_of

FIXTURES = Path(__file__).parent / "fixtures" / "claude" / "projects"
CLAUDE = get("claude")


def _inspect(tree: Path, **kw: object) -> Report:
    return CLAUDE.inspect(str(tree), Options(now=time.time(), **kw))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the fixtures (plants change it and put it back)."""
    dest = tmp_path_factory.mktemp("claude") / "projects"
    shutil.copytree(FIXTURES, dest)
    # A clone stamps every file with the checkout time: give them the age they had in the
    # public corpus (2026-01-30), so the retention tests do not depend on when git wrote them.
    old = 1769816267.0
    for p in dest.rglob("*"):
        os.utime(p, (old, old), follow_symlinks=False)
    return dest


def _spills(root: Path) -> list[Path]:
    return sorted(p for p in root.glob("**/tool-results/*"))


def _project_of(spill: Path) -> Path:
    return spill.parent.parent.parent


def test_real_sessions_every_spill_file_linked_and_verified(projects: Path) -> None:
    report = _inspect(projects)
    files = _spills(projects)
    assert len(files) == 20 and len(report.files) == 20
    assert report.findings == []
    by_target = report.status_of()
    assert sorted(by_target) == sorted(str(f) for f in files)
    assert {k.status for k in report.links} == {"verified"}
    # The one notice of the corpus: all four checks ran; the others kept the full text.
    notices = [k for k in report.links if k.form == "persisted-output"]
    assert len(notices) == 1 and notices[0].checks == ("exists", "prefix", "size-label", "bytes")
    assert all(k.checks == ("bytes",) for k in report.links if k.form == "full-text")
    assert report.notices() == {"found": 20, "checked": 20, "unchecked": 0, "noLocator": 0, "nothingChecked": None,
                                "rebaseHint": None}
    # Every kind of transcript was read: main, subagents/, and the older top-level agent-*.jsonl.
    kinds = {("subagents" in t.path, os.path.basename(t.path).startswith("agent-")) for t in report.transcripts}
    assert kinds == {(False, False), (True, True), (False, True)}


def test_detected_as_claude_from_the_projects_dir_and_one_project(projects: Path) -> None:
    assert detect(str(projects)).name == "claude"
    assert detect(str(projects / "wsd-dev-02-20260119-142117")).name == "claude"
    # ~/.claude itself: its projects dir is read (projects here is a copy named "projects").
    home = projects.parent
    assert detect(str(home)).name == "claude" and len(_inspect(home).files) == 20


def test_nothing_matches_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(DialectError, match="no agent's spill layout found here.*--agent NAME"):
        detect(str(tmp_path))


def _codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def _compacted_ids(project: Path) -> set[tuple[str, str]]:
    """(sessionId, tool_use_id) of every ``microcompact_boundary`` record's ``compactedToolIds``,
    read straight from the transcripts: the test's own oracle, not the dialect's."""
    found: set[tuple[str, str]] = set()
    for log in project.rglob("*.jsonl"):
        for raw in log.read_text(encoding="utf-8").splitlines():
            rec = json.loads(raw)
            if rec.get("subtype") == "microcompact_boundary":
                found |= {(rec["sessionId"], i) for i in rec["microcompactMetadata"]["compactedToolIds"]}
    return found


def test_a_deleted_file_is_reported_once_where_a_record_names_it(projects: Path) -> None:
    """A notice, a later Read of the path, or a microcompact_boundary record naming its
    tool_use_id says the file was written: one expired-locator. A file named only by its
    tool_use_id (the transcript kept the full text, and never said a file was written) leaves
    nothing that could tell: no finding, and no link (never a false "verified")."""
    named_by_path = compacted = 0
    for spill in _spills(projects):
        data = spill.read_bytes()
        before = _inspect(_project_of(spill)).status_of()[str(spill)]
        in_boundary = (spill.parent.parent.name, spill.stem) in _compacted_ids(_project_of(spill))
        spill.unlink()
        try:
            report = _inspect(_project_of(spill))
        finally:
            spill.write_bytes(data)
        assert str(spill) not in report.status_of()
        if before.form in ("persisted-output", "mention") or before.named is not None or in_boundary:
            named_by_path += before.named is not None
            compacted += in_boundary
            assert _codes(report) == ["expired-locator"], spill
            (f,) = report.findings
            assert f.locator is not None and f.locator.endswith("tool-results/" + spill.name)
            assert f.path is not None and f.path.endswith(".jsonl") and f.line is not None
            assert [k.status for k in report.links if k.target is None] == ["expired"]
            if in_boundary and before.named is None:  # named by the boundary record alone: its line
                line = Path(f.path).read_text(encoding="utf-8").splitlines()[f.line - 1]
                assert '"microcompact_boundary"' in line and spill.stem in line
        else:
            assert report.findings == [], spill
    assert compacted == 6  # all six files of the 2.1.22 session: its one boundary record names them
    assert named_by_path >= 2  # the notice, and the files the model read back by path


def test_a_boundary_record_names_files_only_inside_its_session(projects: Path, tmp_path: Path) -> None:
    """compactedToolIds is untrusted text: an id that is not a plain file name, a non-string, or
    malformed metadata names nothing; a plain id whose file is not there is one expired-locator
    at the record's line, in the record's own session dir; an intact session stays clean."""
    dest = tmp_path / "p"
    shutil.copytree(projects / "barebones-2122-20260128-152044", dest)
    (log,) = dest.glob("*.jsonl")
    session = log.stem
    base = {"type": "system", "subtype": "microcompact_boundary", "sessionId": session, "version": "2.1.22"}
    ids = [123, None, ".", "..", "../x", "a/b", "a\\b", "a\x00b", "", "toolu_01Gone\u2028\U0001f600"]
    records = [{**base, "microcompactMetadata": {"compactedToolIds": ids}},
               {**base, "microcompactMetadata": {"compactedToolIds": "toolu_01NotAList"}},
               {**base, "microcompactMetadata": None},
               {**base, "sessionId": "../../etc", "microcompactMetadata": {"compactedToolIds": ["toolu_01Other"]}}]
    lines = len(log.read_text(encoding="utf-8").splitlines())
    with open(log, "a", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)
    report = _inspect(dest)
    (f,) = report.findings
    assert f.code == "expired-locator" and f.path == str(log) and f.line == lines + 1
    assert f.locator == str(dest / session / "tool-results" / "toolu_01Gone\u2028\U0001f600.txt")
    assert {k.status for k in report.links if k.target is not None} == {"verified"}



@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_a_changed_byte_is_one_mismatch(projects: Path, where: str) -> None:
    for spill in _spills(projects):
        data = spill.read_bytes()
        at = {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[where]
        # An ASCII byte for an ASCII byte: the length (and the size label) stay the same.
        changed = bytearray(data)
        changed[at] = ord("#") if data[at] != ord("#") else ord("%")
        spill.write_bytes(bytes(changed))
        try:
            report = _inspect(_project_of(spill))
        finally:
            spill.write_bytes(data)
        link = report.status_of()[str(spill)]
        assert link.status == "mismatch"
        assert len(report.findings) == 1, (spill, report.findings)
        (f,) = report.findings
        in_preview = link.form == "persisted-output" and at < 1979
        assert f.code == ("preview-mismatch" if in_preview else "content-mismatch"), (spill, where)
        assert f.locator == str(spill) and f.line is not None
        assert f"byte {at}" in f.detail


def test_a_foreign_file_is_one_orphan_with_its_probable_session(projects: Path) -> None:
    for tool_results in sorted(projects.glob("*/*/tool-results")):
        foreign = tool_results / "toolu_01ForeignFileNobodyNamed.txt"
        foreign.write_text("not from any tool result\n")
        try:
            report = _inspect(tool_results.parent.parent)
        finally:
            foreign.unlink()
        assert _codes(report) == ["orphan-artifact"]
        (f,) = report.findings
        assert f.path == str(foreign) and f.session == tool_results.parent.name


def test_something_not_a_file_where_a_notice_points_is_unverified_not_expired(projects: Path) -> None:
    project = projects / "wsd-dev-02-20260119-142117"
    (spill,) = _spills(project)
    data = spill.read_bytes()
    spill.unlink()
    spill.mkdir()
    try:
        report = _inspect(project)
    finally:
        spill.rmdir()
        spill.write_bytes(data)
    assert _codes(report) == ["unexpected-entry"]
    assert [k.status for k in report.links] == ["unreadable"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a 000 file")
def test_an_unreadable_file_is_unreadable_not_expired(projects: Path) -> None:
    (spill,) = _spills(projects / "wsd-dev-02-20260119-142117")
    spill.chmod(0)
    try:
        report = _inspect(projects / "wsd-dev-02-20260119-142117")
    finally:
        spill.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert _codes(report) == ["unreadable"]


def test_a_symlink_is_reported_and_never_followed(projects: Path, tmp_path: Path) -> None:
    (spill,) = _spills(projects / "wsd-dev-02-20260119-142117")
    data = spill.read_bytes()
    outside = tmp_path / "elsewhere.txt"
    outside.write_bytes(data)
    spill.unlink()
    spill.symlink_to(outside)
    try:
        report = _inspect(projects / "wsd-dev-02-20260119-142117")
    finally:
        spill.unlink()
        spill.write_bytes(data)
    assert _codes(report) == ["symlink"]
    assert report.status_of()[str(spill)].status == "unreadable"


# -- the notice and its size label ---------------------------------------------------------

def _notice(path: str, text: str, preview_chars: int = 2000) -> str:
    cut = text[:preview_chars]
    return (f"<persisted-output>\nOutput too large ({size_label_of(js_length(text.encode()) or 0, 'KB')}KB). "
            f"Full output saved to: {path}\n\nPreview (first 2KB):\n{cut}\n...\n</persisted-output>")


def test_size_label_is_the_javascript_length_over_1024_to_one_decimal() -> None:
    # The three real notices: chars, not bytes (bytes would say 83.8 and 86.3).
    assert size_label_of(85713, "KB") == "83.7" and size_label_of(88312, "KB") == "86.2"
    assert size_label_of(23495, "KB") == "22.9"
    # toFixed rounds a tie up (Python's format would say 0.2), for every tie below 10 MB.
    for k in range(256, 10 * 1024 * 1024, 512):
        assert to_fixed(k, 1024, 1) == f"{(k * 10 + 512) // 1024 / 10:.1f}"
    assert to_fixed(256, 1024, 1) == "0.3" and to_fixed(768, 1024, 1) == "0.8"
    # An astral code point is two UTF-16 units; a BMP one is one, whatever its UTF-8 length.
    assert js_length("a\U0001F600é".encode()) == 4
    assert js_length(b"\xff") is None


def test_only_a_result_that_starts_with_the_tag_is_a_notice() -> None:
    quoting = "docs/bug.md:3: the model saw <persisted-output>Tool result saved to: /x</persisted-output>"
    assert not is_notice(quoting) and not is_notice(" <persisted-output>\n")
    v1 = "<persisted-output>Tool result saved to: /u/.claude/projects/p/" \
         "dadf32a6-c83d-462d-b678-fbe7f191f42f/tool-results/toolu_019N.txt\n\nUse Read to view</persisted-output>"
    n = parse_notice(v1)
    assert n.generation == 1 and n.path.endswith("toolu_019N.txt") and n.preview is None
    with pytest.raises(NoticeError):
        parse_notice("<persisted-output>\nsomething else\n</persisted-output>")


def _plant_notice(projects: Path, text: str, file_text: str | None, tmp: Path) -> Report:
    """A copy of one real project whose first full-text result is replaced by a notice ``text``."""
    src = projects / "barebones-2122-20260128-152044"
    dest = tmp / src.name
    shutil.copytree(src, dest)
    (log,) = dest.glob("*.jsonl")
    spill = sorted(dest.glob("*/tool-results/*"))[0]
    if file_text is not None:
        spill.write_bytes(file_text.encode())
    lines = log.read_bytes().splitlines(keepends=True)
    for i, raw in enumerate(lines):
        if spill.stem.encode() in raw and b'"tool_result"' in raw:
            rec = json.loads(raw)
            for block in rec["message"]["content"]:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == spill.stem:
                    block["content"] = text.replace("{path}", f"/Users/x/.claude/projects/-p/{spill.parent.parent.name}"
                                                              f"/tool-results/{spill.name}")
            rec.pop("toolUseResult", None)
            lines[i] = (json.dumps(rec, ensure_ascii=False) + "\n").encode()
            break
    log.write_bytes(b"".join(lines))
    return _inspect(dest)


@pytest.mark.parametrize("body", ["ascii only\n" * 400, "astral \U0001F600 and é\n" * 300, "x" * 3000])
def test_a_generation_2_notice_is_checked_on_any_text(projects: Path, tmp_path: Path, body: str) -> None:
    report = _plant_notice(projects, _notice("{path}", body), body, tmp_path)
    assert report.findings == []
    (link,) = [k for k in report.links if k.form == "persisted-output"]
    assert link.checks == ("exists", "prefix", "size-label") and link.status == "verified"
    # One more character (one more UTF-16 unit per 1024 moves the label eventually): a wrong label.
    wrong = _notice("{path}", body).replace("Output too large (", "Output too large (1")
    report = _plant_notice(projects, wrong, body, tmp_path / "b")
    assert _codes(report) == ["size-label-mismatch"]


def test_a_generation_1_notice_links_its_file(projects: Path, tmp_path: Path) -> None:
    v1 = "<persisted-output>Tool result saved to: {path}\n\nUse Read to view</persisted-output>"
    report = _plant_notice(projects, v1, None, tmp_path)
    assert report.findings == []
    (link,) = [k for k in report.links if k.form == "persisted-output-v1"]
    assert link.status == "verified" and link.checks == ("exists",)


def test_past_retention_only_when_asked_and_the_rule_from_settings(projects: Path, tmp_path: Path) -> None:
    report = _inspect(projects)
    assert report.retention is not None and report.retention.source == "default cleanupPeriodDays 30"
    assert report.past_retention and not any(f.code == "past-retention" for f in report.findings)
    home = tmp_path / ".claude"
    shutil.copytree(projects / "wsd-dev-02-20260119-142117", home / "projects" / "p")
    (home / "settings.json").write_text(json.dumps({"cleanupPeriodDays": 7}))
    now = time.time()
    young = home / "projects" / "p"
    for p in young.rglob("*"):
        os.utime(p, (now, now))
    report = CLAUDE.inspect(str(home / "projects"), Options(now=now))
    assert report.retention is not None and report.retention.seconds == 7 * 86400
    assert report.retention.source.endswith("settings.json: cleanupPeriodDays 7") and report.past_retention == []
    report = CLAUDE.inspect(str(home / "projects"), Options(now=now + 8 * 86400, retention_seconds=7 * 86400))
    assert {f.code for f in report.findings} == {"past-retention"}
    # What cleanup.ts cleanupOldSessionFiles deletes: the project dir's *.jsonl and the sessions'
    # tool-results files; a session's subagents/ transcripts it leaves (not past *its* retention).
    top = [t for t in report.transcripts if "subagents" not in t.path]
    assert len(top) < len(report.transcripts)
    assert sorted(f.path for f in report.findings) == sorted([*(f.path for f in report.files), *(t.path for t in top)])


CORPUS = os.environ.get("SPILLSCOPE_CLAUDE_CORPUS")


@pytest.mark.skipif(not CORPUS, reason="set SPILLSCOPE_CLAUDE_CORPUS to a local rcgray/claude-code-bug-phantom-reads-17407 dev/misc")
def test_the_whole_public_corpus() -> None:
    root = Path(CORPUS or "")
    groups = sorted({p.parent.parent for p in root.rglob("*.jsonl") if "subagents" not in p.parts})
    files = 0
    for g in groups:
        report = _inspect(g)
        assert report.findings == [], g
        assert {k.status for k in report.links} <= {"verified"}
        files += len(report.files)
        assert len(report.status_of()) == len(report.files)
    assert files == 678


@pytest.mark.skipif(not CORPUS, reason="set SPILLSCOPE_CLAUDE_CORPUS to a local rcgray/claude-code-bug-phantom-reads-17407 dev/misc")
def test_the_whole_public_corpus_each_deleted_file(tmp_path: Path) -> None:
    """Each of the 678 real files deleted in turn (in a copy): never more than one finding, and
    every file a microcompact_boundary record lists (201) is one expired-locator. 273 files are
    named by a record that says a file was written; the other 405 cannot be told missing
    (docs/agents.md)."""
    root = tmp_path / "misc"
    shutil.copytree(CORPUS or "", root)
    compacted: dict[Path, set[tuple[str, str]]] = {}
    reported = listed = 0
    for spill in sorted(root.rglob("tool-results/*")):
        project = _project_of(spill)
        if project not in compacted:
            compacted[project] = _compacted_ids(project)
        data = spill.read_bytes()
        spill.unlink()
        try:
            report = _inspect(project)
        finally:
            spill.write_bytes(data)
        assert _codes(report) in ([], ["expired-locator"]), spill
        reported += len(report.findings)
        if (spill.parent.parent.name, spill.stem) in compacted[project]:
            listed += 1
            assert _codes(report) == ["expired-locator"], spill
    assert (listed, reported) == (201, 273)


@pytest.mark.skipif(not CORPUS, reason="set SPILLSCOPE_CLAUDE_CORPUS to a local rcgray/claude-code-bug-phantom-reads-17407 dev/misc")
def test_the_whole_public_corpus_each_changed_byte(tmp_path: Path) -> None:
    """Each of the 678 real files with one byte changed (first, middle, last, inside a UTF-8
    character) or cut short by one, in turn: exactly one finding, naming that file (measured:
    675 + 3 notices' previews at the first byte, 544 + 2 files with a multi-byte character)."""
    root = tmp_path / "misc"
    shutil.copytree(CORPUS or "", root)
    planted = 0
    for spill in sorted(root.rglob("tool-results/*")):
        data = spill.read_bytes()
        for where in ("first", "middle", "last", "utf8", "truncate"):
            if where == "truncate":
                changed = data[:-1]
            else:
                at = (next((i for i, c in enumerate(data) if 0x80 <= c < 0xC0), -1) if where == "utf8"
                      else {"first": 0, "middle": len(data) // 2, "last": len(data) - 1}[where])
                if at < 0:
                    continue
                b = bytearray(data)
                b[at] = (0x80 | ((data[at] + 1) & 0x3F)) if where == "utf8" else (
                    ord("#") if data[at] != ord("#") else ord("%"))
                changed = bytes(b)
            spill.write_bytes(changed)
            try:
                report = _inspect(_project_of(spill))
            finally:
                spill.write_bytes(data)
            assert [(f.code in ("content-mismatch", "preview-mismatch"), f.locator) for f in report.findings] == [
                (True, str(spill))], (spill, where, report.findings)
            planted += 1
    assert planted == 678 * 4 + 546


def test_newer_builds_persisted_output_path_and_content_replacement(projects: Path, tmp_path: Path) -> None:
    """Newer Claude Code names a Bash spill by task id and links it through
    ``toolUseResult.persistedOutputPath``/``persistedOutputSize`` (bytes), and may record the
    notice in a ``content-replacement`` record (schema as third-party parsers quote it: not in
    the real corpus, so written here from those field names)."""
    src = projects / "barebones-2122-20260128-152044"
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    (log,) = dest.glob("*.jsonl")
    # A copy under a task id (the original stays: a later Read and the session's
    # microcompact_boundary record name it, so renaming it would rightly expire it).
    spill = sorted(dest.glob("*/tool-results/*"))[0]
    task = spill.with_name("b4qruup3k.txt")
    shutil.copyfile(spill, task)
    body = task.read_bytes()
    session = task.parent.parent.name
    named = f"/Users/x/.claude/projects/-p/{session}/tool-results/{task.name}"
    rec = {"type": "user", "sessionId": session, "toolUseResult": {"persistedOutputPath": named,
                                                                   "persistedOutputSize": len(body)},
           "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01NewBash",
                                                    "content": "short"}]}}
    repl = {"type": "content-replacement", "sessionId": session, "replacements": [{
        "kind": "tool-result", "toolUseId": "toolu_01NewBash",
        "replacement": _notice(named, body.decode())}]}
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n" + json.dumps(repl) + "\n")
    report = _inspect(dest)
    assert report.findings == []
    link = report.status_of()[str(task)]
    assert link.form == "content-replacement" and link.status == "verified" and link.references == 2
    assert {"size", "prefix", "size-label"} <= set(link.checks)
    task.write_bytes(body + b"x")  # one byte more: the recorded size and the label's length disagree
    report = _inspect(dest)
    assert [f.code for f in report.findings] in (["size-label-mismatch"], ["bytes-mismatch"])
    assert len(report.findings) == 1


def test_a_read_of_another_projects_spill_file_is_not_this_projects_expiry(projects: Path, tmp_path: Path) -> None:
    """In a real ~/.claude/projects, a session may read another project's tool-results file
    by its absolute path: that names the other project's file, not a missing one here."""
    root = tmp_path / "projects"
    a, b = root / "-home-me-a", root / "-home-me-b"
    shutil.copytree(projects / "barebones-2122-20260128-152044", a)
    shutil.copytree(projects / "wsd-dev-02-20260119-142117", b)
    (spill,) = b.glob("*/tool-results/*")
    (log,) = a.glob("*.jsonl")
    other = f"/home/me/.claude/projects/-home-me-b/{spill.parent.parent.name}/tool-results/{spill.name}"
    use = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01CrossRead", "name": "Read", "input": {"file_path": other}}]}}
    result = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01CrossRead", "content": "     1\tdocs/…"}]}}
    with open(log, "a", encoding="utf-8") as f:
        f.write(json.dumps(use) + "\n" + json.dumps(result) + "\n")
    report = _inspect(root)
    assert report.findings == []
    assert report.status_of()[str(spill)].status == "verified"


# -- what Claude Code's source says and the real corpus did not show ------------------------
# (a public mirror of its source, BelovedYaoo/claude-code-source @1e87ff61: see notice.py)

SID = "5e1f0c2a-9b7d-4c3e-8a6f-2d9b0e4c7a11"


def _session(root: Path, records: list[dict[str, object]], files: dict[str, bytes],
             transcript: str = f"{SID}.jsonl") -> Path:
    """A project dir holding one session: its transcript's records and its tool-results files."""
    project = root / "-home-me-app"
    (project / SID / "tool-results").mkdir(parents=True, exist_ok=True)
    log = project / transcript
    log.parent.mkdir(parents=True, exist_ok=True)
    from spillscope.util.text import js_stringify

    # As Node writes JSON Lines: UTF-8, a lone surrogate as its \\udXXX escape.
    log.write_text("".join(js_stringify({"sessionId": SID, **r}) + "\n" for r in records), encoding="utf-8")
    for name, data in files.items():
        (project / SID / "tool-results" / name).write_bytes(data)
    return project


def _saved_at(name: str) -> str:
    return f"/home/me/.claude/projects/-home-me-app/{SID}/tool-results/{name}"


def _result(tool_use_id: str, content: object, tur: object = None) -> dict[str, object]:
    rec: dict[str, object] = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}]}}
    if tur is not None:
        rec["toolUseResult"] = tur
    return rec


def _gen2(path: str, label: str, preview: str, more: bool = True) -> str:
    return (f"<persisted-output>\nOutput too large ({label}). Full output saved to: {path}\n\nPreview (first 2KB):\n"
            f"{preview}" + ("\n...\n" if more else "\n") + "</persisted-output>")


def test_format_file_size_drops_a_trailing_zero_as_claude_code_writes_it() -> None:
    from spillscope.dialects.claude.notice import format_file_size, label_matches

    # The real notices' own "Preview (first 2KB)" is formatFileSize(2000): 1.95 -> "2.0" -> "2KB".
    assert [format_file_size(n) for n in (0, 812, 1023, 1024, 2000, 23495, 51200, 51250, 1024 ** 2, 5 * 1024 ** 3)] \
        == ["0 bytes", "812 bytes", "1023 bytes", "1KB", "2KB", "22.9KB", "50KB", "50KB", "1MB", "5GB"]
    assert label_matches("50", "KB", 51200) and label_matches("50.0", "KB", 51200)
    assert not label_matches("50.1", "KB", 51200) and not label_matches("49.9", "KB", 51200)
    assert label_matches("812", "bytes", 812) and not label_matches("813", "bytes", 812)


@pytest.mark.parametrize("chars", [51200, 1024 * 3, 1024 ** 2])
def test_a_label_ending_in_dot_zero_is_not_a_mismatch(tmp_path: Path, chars: int) -> None:
    body = ("line of output\n" * (chars // 15 + 1))[:chars]
    name = "toolu_01DotZero.txt"
    from spillscope.dialects.claude.notice import format_file_size

    label = format_file_size(chars)
    assert "." not in label  # the case this is about
    project = _session(tmp_path, [_result("toolu_01DotZero", _gen2(_saved_at(name), label, body[:1990]))],
                       {name: body.encode()})
    report = _inspect(project)
    assert report.findings == []
    assert report.status_of()[str(project / SID / "tool-results" / name)].checks == ("exists", "prefix", "size-label")


def test_a_notice_without_dots_holds_the_whole_text(tmp_path: Path) -> None:
    body = "short enough: é \U0001F600\n" * 40  # under 2000 UTF-16 units: hasMore is false
    name = "toolu_01Whole.txt"
    from spillscope.dialects.claude.notice import format_file_size

    text = _gen2(_saved_at(name), format_file_size(js_length(body.encode()) or 0), body, more=False)
    project = _session(tmp_path, [_result("toolu_01Whole", text)], {name: body.encode()})
    spill = project / SID / "tool-results" / name
    report = _inspect(project)
    assert report.findings == []
    assert report.status_of()[str(spill)].checks == ("exists", "prefix", "bytes", "size-label")
    spill.write_bytes(body.encode() + b"\n")  # one byte more than the notice shows: the whole text differs
    report = _inspect(project)
    assert [f.code for f in report.findings] == ["content-mismatch"]


def test_a_shell_notice_counts_bytes_and_previews_after_blank_lines(tmp_path: Path) -> None:
    """Bash saves its output file as it is: leading blank lines the preview left out, a label in
    bytes (here 3 bytes a character: in UTF-16 units it would say a third of it)."""
    output = "\n  \n\t\n" + "│ résumé ✓ 测试\n" * 3000
    data = output.encode()
    name = "b4qruup3k.txt"
    from spillscope.dialects.claude.notice import format_file_size

    shown = output.lstrip("\n \t")[:1999]
    shown = shown[:shown.rfind("\n")]
    text = _gen2(_saved_at(name), format_file_size(len(data)), shown)
    tur = {"stdout": shown, "persistedOutputPath": _saved_at(name), "persistedOutputSize": len(data)}
    project = _session(tmp_path, [_result("toolu_01Bash", text, tur)], {name: data})
    spill = project / SID / "tool-results" / name
    report = _inspect(project)
    assert report.findings == []
    assert set(report.status_of()[str(spill)].checks) == {"exists", "prefix", "size-label", "size"}
    changed = bytearray(data)
    changed[10] = ord("#")  # inside the preview, after the blank lines
    spill.write_bytes(bytes(changed))
    report = _inspect(project)
    assert [f.code for f in report.findings] == ["preview-mismatch"]
    assert "byte 10" in report.findings[0].detail


def test_an_mcp_token_cap_sentence_links_its_file(tmp_path: Path) -> None:
    """``Error: result (N characters) exceeds maximum allowed tokens. Output has been saved to
    PATH.`` (mcpOutputStorage.ts; the "across M lines" form as real sessions quote it): the file
    is linked, N is its JavaScript length; it was an orphan before."""
    body = '{"issues": [' + ", ".join(f'{{"id": {i}, "title": "naïve \U0001F600"}}' for i in range(3000)) + "]}"
    name = "mcp-linear-list_issues-1780649671544.txt"
    n = js_length(body.encode()) or 0
    texts = [f"Error: result ({n:,} characters) exceeds maximum allowed tokens. Output has been saved to "
             f"{_saved_at(name)}.\nFormat: Plain text\nUse offset and limit parameters to read specific portions",
             [{"type": "text", "text": f"Error: result ({n:,} characters across 1 line) exceeds maximum allowed tokens. "
                                       f"Output has been saved to {_saved_at(name)}.\nFormat: JSON\n"}]]
    for content in texts:
        project = _session(tmp_path / str(len(str(content))), [_result("toolu_01Mcp", content)], {name: body.encode()})
        spill = project / SID / "tool-results" / name
        report = _inspect(project)
        assert report.findings == []
        link = report.status_of()[str(spill)]
        assert link.form == "mcp-token-cap" and link.checks == ("exists", "size-label")
        spill.write_bytes(body.encode()[:-1])
        assert [f.code for f in _inspect(project).findings] == ["size-label-mismatch"]
        spill.unlink()
        assert [(f.code, f.locator) for f in _inspect(project).findings] == [("expired-locator", _saved_at(name))]


def test_a_binary_content_sentence_links_its_file(tmp_path: Path) -> None:
    pdf = b"%PDF-1.7\n" + bytes(range(256)) * 20
    name = "webfetch-1780649671544-k3j9x2.pdf"
    from spillscope.dialects.claude.notice import format_file_size

    text = f"Page text\n\n[Binary content (application/pdf, {format_file_size(len(pdf))}) also saved to {_saved_at(name)}]"
    project = _session(tmp_path, [_result("toolu_01Fetch", text)], {name: pdf})
    report = _inspect(project)
    assert report.findings == []
    assert report.status_of()[str(project / SID / "tool-results" / name)].form == "binary-content"


@pytest.mark.parametrize("blocks", [
    [{"type": "text", "text": "one block: quotes \" \\ tabs\t control \x01 é \U0001F600 \u2028 end\n" * 900}],
    [{"type": "text", "text": "first\n" * 2000}, {"type": "text", "text": "second \ud83d lone half\n" * 100}],
])
def test_a_result_of_content_blocks_is_saved_as_json(tmp_path: Path, blocks: list[dict[str, str]]) -> None:
    """persistToolResult writes ``JSON.stringify(blocks, null, 2)`` to ``<id>.json`` for a result of
    content blocks (an MCP tool's): comparing the file to the text of its one block was a false
    content-mismatch, and a result of several blocks was never checked."""
    from spillscope.util.text import js_stringify, js_utf8

    name = "toolu_01Blocks.json"
    saved = js_utf8(js_stringify(blocks, indent=2))
    assert saved.startswith(b'[\n  {\n    "type": "text",\n    "text": "')
    project = _session(tmp_path, [_result("toolu_01Blocks", blocks)], {name: saved})
    spill = project / SID / "tool-results" / name
    report = _inspect(project)
    assert report.findings == []
    assert report.status_of()[str(spill)].checks == ("bytes",)
    spill.write_bytes(saved[:-1] + b" ")
    assert [f.code for f in _inspect(project).findings] == ["content-mismatch"]


def test_a_workflow_agents_transcript_is_read(tmp_path: Path) -> None:
    """``<session>/subagents/workflows/wf_<id>/agent-<id>.jsonl``: a file only a workflow agent's
    result names was an orphan; the workflow's ``journal.jsonl`` is not a transcript."""
    name = "toolu_01Workflow.txt"
    body = "workflow agent output\n" * 3000
    project = _session(tmp_path, [_result("toolu_01Workflow", body)], {name: body.encode()},
                       transcript=f"{SID}/subagents/workflows/wf_sp01/agent-agsp0001.jsonl")
    (project / SID / "subagents" / "workflows" / "wf_sp01" / "journal.jsonl").write_text('{"step": 1}\n')
    report = _inspect(project)
    assert report.findings == []
    assert report.status_of()[str(project / SID / "tool-results" / name)].status == "verified"
    assert [Path(t.path).name for t in report.transcripts] == ["agent-agsp0001.jsonl"]


def test_a_path_in_a_shell_command_ends_where_the_shell_ends_it(tmp_path: Path) -> None:
    """A Bash command names a spill file followed by ``;``, ``|``, ``)``, ``:line`` or a glob: the
    file it names is the one there (before: "toolu_01Read.txt;wc" and "*.txt" were files gone)."""
    name = "toolu_01Read.txt"
    body = "the spilled text\n" * 4000
    path = _saved_at(name)
    command = (f"wc -c {path};head -5 {path}|sort; x=$(cat {path}); grep -n foo {path}:12 "
               f"ls {_saved_at('*.txt')}; echo see {path}.")
    use = {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_01Sh", "name": "Bash", "input": {"command": command}}]}}
    project = _session(tmp_path, [_result("toolu_01Read", body), use, _result("toolu_01Sh", "ok")],
                       {name: body.encode()})
    report = _inspect(project)
    assert report.findings == []
    link = report.status_of()[str(project / SID / "tool-results" / name)]
    assert link.status == "verified" and link.references == 6
    (project / SID / "tool-results" / name).unlink()  # gone: the read of its path says it was there
    assert [f.code for f in _inspect(project).findings] == ["expired-locator"]


def test_a_pdfs_rendered_pages_are_claude_codes_own_files(tmp_path: Path) -> None:
    """The Read tool renders a PDF's pages into ``tool-results/pdf-<uuid>/page-NN.jpg`` and its
    toolUseResult names the dir and the count (pdf.ts, FileReadTool.ts): the only dir Claude
    Code makes there, not an unexpected entry; a page gone is one expired-locator."""
    pages = "pdf-0b9d8c7a-6f5e-4d3c-2b1a-0f9e8d7c6b5a"
    tur = {"type": "parts", "file": {"filePath": "/home/me/app/spec.pdf", "originalSize": 81234,
                                     "outputDir": _saved_at(pages), "count": 2}}
    read = _result("toolu_01Pdf", [{"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                                 "data": "/9j/"}}], tur)
    project = _session(tmp_path, [read, read], {})
    out = project / SID / "tool-results" / pages
    out.mkdir()
    for n in (1, 2):
        (out / f"page-{n:02d}.jpg").write_bytes(b"\xff\xd8\xff\xe0 page %d" % n)
    report = _inspect(project)
    assert report.findings == []
    assert {k.form for k in report.links} == {"pdf-pages"} and len(report.status_of()) == 2
    (out / "page-02.jpg").unlink()
    assert [(f.code, f.locator) for f in _inspect(project).findings] == [("expired-locator", _saved_at(pages))]
    (out / "odd").mkdir()  # a dir in the pages dir is not Claude Code's
    assert sorted(f.code for f in _inspect(project).findings) == ["expired-locator", "unexpected-entry"]
    (out / "odd").rmdir()
    (project / SID / "tool-results" / "not-pdf-pages").mkdir()
    assert "unexpected-entry" in {f.code for f in _inspect(project).findings}


def test_an_mcp_resources_saved_blob_is_linked(tmp_path: Path) -> None:
    """ReadMcpResource saves a blob as ``mcp-resource-<ms>-<i>-<rand>.<ext>`` and says so inside
    its JSON result (the sentence ends at the string's quote) and in ``contents[].blobSavedTo``."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    name = "mcp-resource-1780649671544-0-k3j9x2.png"
    from spillscope.dialects.claude.notice import format_file_size

    sentence = f"[Resource from docs at file:///a.png] Binary content (image/png, {format_file_size(len(png))}) " \
               f"saved to {_saved_at(name)}"
    result = json.dumps({"contents": [{"uri": "file:///a.png", "mimeType": "image/png",
                                       "blobSavedTo": _saved_at(name), "text": sentence}]})
    tur = {"contents": [{"uri": "file:///a.png", "mimeType": "image/png", "blobSavedTo": _saved_at(name),
                         "text": sentence}]}
    project = _session(tmp_path, [_result("toolu_01Res", result, tur)], {name: png})
    report = _inspect(project)
    assert report.findings == []
    link = report.status_of()[str(project / SID / "tool-results" / name)]
    assert link.form == "binary-content" and "size-label" in link.checks


def test_a_cache_editing_boundary_record_names_no_file(tmp_path: Path) -> None:
    """Newer builds record their cache-editing microcompact as a microcompact_boundary with
    preTokens 0 and save nothing (query.ts, microCompact.ts): its ids are no file's; the saving
    kind (preTokens > 0, every real record) still says each id's file was written."""
    def boundary(pre: int) -> dict[str, object]:
        return {"type": "system", "subtype": "microcompact_boundary", "content": "Context microcompacted",
                "microcompactMetadata": {"trigger": "auto", "preTokens": pre, "tokensSaved": 41234,
                                         "compactedToolIds": ["toolu_01NoFile"], "clearedAttachmentUUIDs": []}}
    body = "kept whole in the transcript\n" * 100
    cached = _session(tmp_path / "cached", [_result("toolu_01NoFile", body), boundary(0)], {})
    assert _inspect(cached).findings == []
    saving = _session(tmp_path / "saving", [_result("toolu_01NoFile", body), boundary(71221)], {})
    assert [f.code for f in _inspect(saving).findings] == ["expired-locator"]


@pytest.mark.parametrize("value,days", [(7, 7.0), (0, 0.0), (30.0, 30.0), (2.5, None), (-1, None), ("30", None),
                                        (True, None), (None, None)])
def test_cleanup_period_days_as_claude_code_reads_it(tmp_path: Path, value: object, days: float | None) -> None:
    """A non-negative integer (0: everything is past it, settings/types.ts); a value that fails
    that schema while the key is set makes Claude Code skip its cleanup (cleanup.ts), so nothing
    is past its retention — it was read as that many days, or as the default 30."""
    from spillscope.dialects.claude.retention import retention_rule

    projects = tmp_path / ".claude" / "projects"
    project = _session(projects, [_result("toolu_01Old", "x")], {"toolu_01Old.txt": b"x"})
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"cleanupPeriodDays": value}))
    rule = retention_rule(str(projects))
    assert (rule.seconds / 86400 if rule is not None else None) == days
    old = time.time() + 40 * 86400  # everything is 40 days old
    report = CLAUDE.inspect(str(project), Options(now=old))
    assert bool(report.past_retention) == (days is not None)
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"model": "x"}))
    assert retention_rule(str(projects)) is not None and retention_rule(str(projects)).seconds == 30 * 86400  # type: ignore[union-attr]


def test_saved_blobs_in_a_result_of_several_blocks_are_each_linked(tmp_path: Path) -> None:
    """An MCP tool returning two images: each saved as ``mcp-<server>-blob-<ms>-<rand>.<ext>`` and
    replaced by its own text block (client.ts persistBlobToTextBlock), beside the tool's text."""
    from spillscope.dialects.claude.notice import format_file_size

    blobs = {"mcp-shots-blob-1780649671544-a1b2c3.png": b"\x89PNG one" * 300,
             "mcp-shots-blob-1780649671545-d4e5f6.jpg": b"\xff\xd8 two" * 500}
    content: list[dict[str, str]] = [{"type": "text", "text": "two screenshots"}]
    content += [{"type": "text", "text": f"Binary content (image/png, {format_file_size(len(d))}) saved to {_saved_at(n)}"}
                for n, d in blobs.items()]
    project = _session(tmp_path, [_result("toolu_01Shots", content)], blobs)
    report = _inspect(project)
    assert report.findings == []
    assert {k.form for k in report.links} == {"binary-content"} and len(report.links) == 2


def test_a_path_outside_a_projects_dir_is_unchecked_not_expired(tmp_path: Path) -> None:
    """A notice or a read naming ``…/tool-results/<name>`` under another root than a Claude Code
    projects dir (the per-session temp dir /tmp/claude-<uid>/<slug>/<session>/) names no file of
    this tree: unchecked, not a false expired-locator; the same under ``projects`` is one."""
    body = "x\n" * 3000
    tmp = f"/private/tmp/claude-501/-home-me-app/{SID}/tool-results/toolu_01Tmp.txt"
    project = _session(tmp_path / "a", [_result("toolu_01Tmp", _gen2(tmp, "5.9KB", body[:1998]))], {})
    report = _inspect(project)
    assert report.findings == [] and [k.status for k in report.links] == ["unchecked"]
    assert report.notices()["unchecked"] == 1
    named = _saved_at("toolu_01Tmp.txt")
    project = _session(tmp_path / "b", [_result("toolu_01Tmp", _gen2(named, "5.9KB", body[:1998]))], {})
    assert [f.code for f in _inspect(project).findings] == ["expired-locator"]
