"""Locators written on other systems and replay-normalised logs (FORMAT.md §8, issue #14).

Logs are written as a Windows machine would write them: the spill store returns Windows
paths, the tool notice carries one raw, the reference notice carries it JSON-escaped, and
the session-log line escapes that JSON again. The files themselves are laid out under a
local root, as a copy of the Windows spill root would be.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from spillscope.inspect import inspect_root
from spillscope.inspect.link.replay import match_normalized
from spillscope.inspect.scan.tree import scan_root
from spillscope.reference.preparation import CaptureSource, prepare
from spillscope.formats.sessionlog import SessionCapture, SessionHeader
from spillscope.spill import LocalSpillStore, Locator, SaveTextSpill, SpillPolicy, SpillRef, SpillStore
from spillscope.formats.locators import is_windows_path, rebase_locator, spill_root_of
from spillscope.spill.replay import normalized_name, scrub_locators, snapshot_spill_paths

WINROOT = "C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123"
TARGET = "0b9f6c1e-3c1a-4e61-9d7a-5b2f0a1c7e01"
#: Text with backslashes that belong to the text, not to any locator.
UNRELATED = ("regex \\d+\\.\\w* and C:\\Users\\me\\AppData\\Local\\Temp\\dsh-spill-AbC123\\notes.txt, "
             "\\\\server\\share, a tab\\t and \\u0041 literally\n")


class ForeignStore(SpillStore):
    """Writes into a local root and answers with the locator another machine's backend gave."""

    def __init__(self, root: Path, foreign_root: str, sep: str = "\\") -> None:
        self.local = LocalSpillStore(root)
        self.root, self.foreign_root, self.sep = root, foreign_root, sep

    async def save_text(self, request: SaveTextSpill) -> SpillRef:
        ref = await self.local.save_text(request)
        rel = os.path.relpath(ref.locator, self.root)
        return SpillRef(Locator(self.foreign_root + self.sep + rel.replace("/", self.sep)), ref.bytes, ref.retrieval_hint)


def _capture(sid: str, texts: list[str]) -> SessionCapture:
    events = [{"type": "user/message", "seq": i, "data": {"source": {"kind": "user"}, "content": [{"type": "text", "text": t}]}}
              for i, t in enumerate(texts)]
    return SessionCapture(SessionHeader(sid, 3, "C:\\work\\proj", {}), tuple(events), len(texts) - 1)


def _rows(tool_text: str, reference: Any) -> list[dict[str, Any]]:
    tool = {"type": "tool/result", "seq": 1, "time": 2, "surfaceOp": "append", "sourceEventSeqs": [0], "data": {
        "turn": 1, "step": 1, "message": {"source": {"kind": "tool", "callId": "call-1"}, "role": "tool", "id": "m1",
                                          "content": [{"type": "tool-result", "toolCallId": "call-1",
                                                       "content": [{"type": "text", "text": tool_text}], "isError": False}]}}}
    call = {"type": "tool/call", "seq": 0, "time": 1, "data": {"callId": "call-1", "name": "bash"}}
    ref = {"type": "user/message", "seq": 2, "time": 3, "surfaceOp": "append", "data": {
        "source": reference.source, "content": [{"type": "text", "text": reference.text}], "role": "user", "id": "m2"}}
    header = {"type": "session", "version": 3, "id": TARGET, "createdAt": 1, "cwd": "C:\\work\\proj", "isSeeded": False,
              "delegationDepth": 0}
    return [header, call, tool, ref]


def write_foreign_logs(tmp_path: Path, foreign_root: str, sep: str = "\\", newline: str = "\n") -> tuple[Path, Path, Path]:
    """(root, logs dir, log file) for one session with a spilled tool result and a truncated reference."""
    root, logs = tmp_path / "root", tmp_path / "logs"
    store = ForeignStore(root, foreign_root, sep)
    big = UNRELATED + "".join(f"line {i} \\n C:\\x\\y 界\n" for i in range(400))
    out = asyncio.run(SpillPolicy(2000, store).bound_result(tool_name="bash", call_id="call-1", content=big,
                                                            owner_session_id=TARGET))
    assert out.replaced and out.text is not None
    source = CaptureSource({"src": _capture("src", [UNRELATED * 40, "a reply", UNRELATED * 3])})
    msg = asyncio.run(prepare(TARGET, [{"sessionId": "src"}], source=source, max_reference_bytes=900, store=store))
    assert msg is not None and msg.notices
    log = logs / "--C--work-proj--" / TARGET / "session.v3.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes("".join(json.dumps(r, ensure_ascii=False) + newline for r in _rows(out.text, msg)).encode())
    return root, logs, log


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_windows_logs_resolve_with_rebase(tmp_path, newline):
    root, logs, log = write_foreign_logs(tmp_path, WINROOT, newline=newline)
    raw = log.read_text("utf-8")
    # The three layers are really there: raw in the tool notice (one JSON layer in the
    # line), JSON in the reference notice (two layers in the line).
    assert "stored at: C:\\\\Users\\\\me\\\\AppData" in raw
    assert '\\"locator\\":\\"C:\\\\\\\\Users\\\\\\\\me' in raw
    ins = inspect_root(root, logs, rebase=WINROOT)
    assert {f.code for f in ins.findings} == set(), [f.detail for f in ins.findings]
    (tool,) = ins.tool_spills
    assert tool.status == "resolves" and tool.entry.locator.startswith(WINROOT + "\\session-")
    assert tool.entry.notice.preview.startswith(UNRELATED)  # unrelated backslashes untouched
    (ref,) = ins.references
    assert ref.status == "resolves" and ref.disagreements == [] and ref.artifact is not None
    assert ref.entry.locator.startswith(WINROOT + "\\session-") and "\\\\" not in ref.entry.locator
    assert Path(ref.artifact.path).parent.parent == root


@pytest.mark.parametrize("spelling", [
    WINROOT.lower(), WINROOT + "\\", WINROOT.replace("\\", "/"), "c:/users/ME/AppData/Local/Temp/dsh-spill-AbC123/",
])
def test_rebase_takes_any_windows_spelling_of_the_root(tmp_path, spelling):
    root, logs, _ = write_foreign_logs(tmp_path, WINROOT)
    ins = inspect_root(root, logs, rebase=spelling)
    assert {f.code for f in ins.findings} == set()


def test_forward_slash_windows_locators_resolve_too(tmp_path):
    root, logs, _ = write_foreign_logs(tmp_path, WINROOT.replace("\\", "/"), sep="/")
    assert {f.code for f in inspect_root(root, logs, rebase=WINROOT).findings} == set()


def test_without_rebase_a_windows_locator_says_how_to_map_it(tmp_path):
    root, logs, _ = write_foreign_logs(tmp_path, WINROOT)
    ins = inspect_root(root, logs)
    outside = [f for f in ins.findings if f.code == "outside-root"]
    assert len(outside) == 2 and "expired-locator" not in {f.code for f in ins.findings}
    assert all(f.detail == f"locator is a Windows path; if this root is a copy of {WINROOT}, pass --rebase '{WINROOT}'"
               for f in outside)


def test_a_sibling_root_that_only_shares_a_prefix_is_not_rebased(tmp_path):
    root, logs, _ = write_foreign_logs(tmp_path, WINROOT + "4")
    ins = inspect_root(root, logs, rebase=WINROOT)
    assert [f.code for f in ins.findings].count("outside-root") == 2


def test_cli_verify_rebase_on_windows_logs(tmp_path):
    import subprocess
    import sys

    root, logs, _ = write_foreign_logs(tmp_path, WINROOT)
    run = subprocess.run([sys.executable, "-m", "spillscope", "verify", str(root), "--logs", str(logs), "--rebase", WINROOT,
                          "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["findings"] == []


@pytest.mark.parametrize("locator, old, new, expected", [
    (WINROOT + "\\session-aaaaaaaaaaaa\\bbbbbbbbbbbb-bash.txt", WINROOT, "/r", "/r/session-aaaaaaaaaaaa/bbbbbbbbbbbb-bash.txt"),
    (WINROOT + "\\\\session-a\\\\b.txt", WINROOT, "/r/", "/r/session-a/b.txt"),  # separator runs count once
    (WINROOT, WINROOT, "/r", "/r"),
    (WINROOT + "\\..\\x", WINROOT, "/r", None),
    (WINROOT + "\\a:stream", WINROOT, "/r", None),
    (WINROOT + "X\\a", WINROOT, "/r", None),
    ("/tmp/x/a", WINROOT, "/r", None),
    ("\\\\srv\\share\\dsh\\session-a\\b.txt", "\\\\SRV\\share\\dsh", "/r", "/r/session-a/b.txt"),
    # POSIX: byte for byte, and a backslash is a file-name character.
    ("/tmp/we\\ird/session-a/b\\c.txt", "/tmp/we\\ird", "/r", "/r/session-a/b\\c.txt"),
    ("/tmp/we\\ird/session-a/b.txt", "/tmp/we/ird", "/r", None),
    ("/tmp/dsh-spill-1/x", "/tmp/dsh-spill-1/", "/r", "/r/x"),
    ("/tmp/dsh-spill-10/x", "/tmp/dsh-spill-1", "/r", None),
])
def test_rebase_locator(locator, old, new, expected):
    assert rebase_locator(locator, old, new) == expected


def test_windows_path_shapes():
    assert is_windows_path("C:\\x") and is_windows_path("c:/x") and is_windows_path("\\\\srv\\share")
    assert not is_windows_path("/tmp/x") and not is_windows_path("C:x") and not is_windows_path("{{spillLocator:a}}")
    assert spill_root_of(WINROOT + "\\session-0123456789ab\\0123456789ab-bash.txt") == WINROOT
    assert spill_root_of("/tmp/d/session-0123456789ab/0123456789ab-x") == "/tmp/d"
    assert spill_root_of("/tmp/unrelated/x.txt") is None


# --- replay normalisation -------------------------------------------------------------------

def test_scrub_matches_every_upstream_case(vectors):
    cases = vectors["replayLocatorScrub"]["cases"]
    assert len(cases) >= 9
    for case in cases:
        assert scrub_locators(case["input"]) == case["output"], case


def test_scrub_uses_javascript_whitespace_and_end():
    path = "/tmp/dsh-acp-snapshot-spill/session-c22bc3f1d2af/8a7b6c5d4e3f-bash.txt"
    assert scrub_locators(path + "\ufeff") == "{{spillLocator:bash.txt}}\ufeff"  # JS \s has U+FEFF
    assert scrub_locators(path + "\x1c") == path + "\x1c"  # Python's \s has U+001C; JS's does not
    assert scrub_locators(path + "\x85") == path + "\x85"
    assert scrub_locators(path + "\n") == "{{spillLocator:bash.txt}}\n"
    assert scrub_locators(path + "\nx") == "{{spillLocator:bash.txt}}\nx"
    assert snapshot_spill_paths(f'"{path}" and "{path}"') == {"bash.txt": path}


def test_scrub_leaves_lookalikes_alone():
    for text in ["/tmp/unrelated/session-123456abcdef/abcdef123456-session-reference-1.txt",
                 "/tmp/dsh-spill-AbC123/session-c22bc3f1d2af/8a7b6c5d4e3f-bash.txt",
                 "/tmp/dsh-acp-snap-01234567/session-c22bc3f1d2af/8a7b6c5d4e3f-bash.txt",
                 "/tmp/dsh-acp-snapshot-spill/session-C22BC3F1D2AF/8a7b6c5d4e3f-bash.txt",
                 "/tmp/dsh-acp-snapshot-spill/session-c22bc3f1d2af/8a7b6c5d4e3f-bash.txt,"]:
        assert scrub_locators(text) == text


def write_replay_logs(tmp_path: Path, sep: str, foreign_root: str) -> tuple[Path, Path, Path]:
    """Logs recorded under a snapshot root, then scrubbed as upstream records them."""
    root, logs, log = write_foreign_logs(tmp_path, foreign_root, sep=sep)
    lines = log.read_text("utf-8").splitlines(keepends=True)
    log.write_text("".join(scrub_locators(line) for line in lines), "utf-8")
    return root, logs, log


@pytest.mark.parametrize("sep, foreign_root", [("/", "/tmp/dsh-acp-snap-012345678"), ("\\", "C:\\t\\dsh-acp-snap-012345678"),
                                               ("/", "/tmp/dsh-acp-snapshot-spill")])
def test_a_scrubbed_log_reports_normalized_locators_and_still_checks_counts(tmp_path, sep, foreign_root):
    root, logs, log = write_replay_logs(tmp_path, sep, foreign_root)
    text = log.read_text("utf-8")
    assert "{{spillLocator:bash.txt}}" in text and "{{spillLocator:session-reference-1.txt}}" in text
    assert "dsh-acp-snap" not in text
    ins = inspect_root(root, logs)
    assert sorted(f.code for f in ins.findings) == ["normalized-locator", "normalized-locator"]
    assert all(f.severity == "info" for f in ins.findings)
    (tool,), (ref,) = ins.tool_spills, ins.references
    assert tool.status == ref.status == "normalized"
    assert tool.artifact is not None and tool.artifact.name.endswith("-bash.txt")
    assert ref.artifact is not None and ref.recomputed is not None and ref.disagreements == []
    assert "checked against the only artifact named *-session-reference-1.txt" in ins.findings[1].detail + ins.findings[0].detail
    # The counts are still checked: a forged omittedBytes is caught.
    n = ref.entry.notice["omittedBytes"]
    forged_text = text.replace(f'\\"omittedBytes\\":{n}', f'\\"omittedBytes\\":{n + 1}')
    assert forged_text != text
    log.write_text(forged_text, "utf-8")
    forged = inspect_root(root, logs)
    assert "omission-mismatch" in {f.code for f in forged.findings}


def test_a_normalized_locator_with_no_or_several_matches_is_not_checked(tmp_path):
    root, logs, log = write_replay_logs(tmp_path, "/", "/tmp/dsh-acp-snap-012345678")
    (art,) = [a for a in scan_root(str(root)).artifacts() if a.name.endswith("-bash.txt")]
    twin = Path(art.path).with_name("ffffffffffff-bash.txt")
    twin.write_bytes(Path(art.path).read_bytes())
    twin.chmod(0o600)
    ins = inspect_root(root, logs)
    tool = ins.tool_spills[0]
    assert tool.status == "normalized" and tool.artifact is None
    assert any("2 artifacts named *-bash.txt: none matched" in f.detail for f in ins.findings)
    os.unlink(twin)
    os.unlink(art.path)
    gone = inspect_root(root, logs)
    assert "expired-locator" not in {f.code for f in gone.findings}
    assert any("no artifact named *-bash.txt" in f.detail for f in gone.findings)


def test_match_normalized_narrows_by_owner_then_size(tmp_path):
    from spillscope.spill.naming import session_dir_name

    for sid, name, size in (("a", "111111111111-x.txt", 5), ("b", "222222222222-x.txt", 5), ("b", "333333333333-x.txt", 9)):
        d = tmp_path / session_dir_name(sid)
        d.mkdir(exist_ok=True, mode=0o700)
        (d / name).write_bytes(b"x" * size)
    arts = scan_root(str(tmp_path)).artifacts()
    assert match_normalized("x.txt", "a", arts)[0].name == "111111111111-x.txt"
    assert match_normalized("x.txt", "b", arts, lambda n: n == 9)[0].name == "333333333333-x.txt"
    assert match_normalized("x.txt", "b", arts)[0] is None
    assert match_normalized("y.txt", "b", arts) == (None, "no artifact named *-y.txt in this root: counts and preview not checked")
    assert normalized_name("{{spillLocator:x.txt}}") == "x.txt" and normalized_name("{{spillLocator:a/b}}") is None


def test_a_windows_root_with_dots_spaces_parens_and_unicode_is_extracted_exactly(tmp_path):
    odd = "C:\\Users\\J. Doe (admin)\\AppData\\Local\\Temp\\報告 ~x. y\\dsh-spill-AbC123"
    root, logs, log = write_foreign_logs(tmp_path, odd)
    ins = inspect_root(root, logs, rebase=odd)
    assert {f.code for f in ins.findings} == set(), [f.detail for f in ins.findings]
    (tool,), (ref,) = ins.tool_spills, ins.references
    # The locator is cut by the exact ". <hint>)" suffix, never at the first ". ".
    assert tool.entry.notice.hint_known and tool.entry.locator.startswith(odd + "\\session-")
    assert ref.entry.locator.startswith(odd + "\\session-")
    without = inspect_root(root, logs)
    assert all(f"--rebase '{odd}'" in f.detail for f in without.findings if f.code == "outside-root")
