"""The TUI through Textual's Pilot: browse, filter, reference panel, reader, search, export, watch."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from spillscope.util.text import js_utf8
from spillscope.frontends.demo import write_demo
from spillscope.formats.transcript import render_transcript
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.screens import ReaderScreen, parse_goto, Goto
from spillscope.frontends.tui.textview import TextView
from spillscope.frontends.tui.widgets import BrowseTree


@pytest.fixture
def demo(tmp_path):
    return write_demo(tmp_path / "demo")


async def wait_for(pilot, predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def select(pilot, tree: BrowseTree, node) -> None:
    """Move the cursor to ``node`` once the tree has laid it out."""
    for _ in range(100):
        tree.move_cursor(node)
        await pilot.pause(0.02)
        if tree.cursor_node is node:
            return
    raise AssertionError("cursor did not reach the node")


def nodes(tree: BrowseTree):
    out, stack = [], [tree.root]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children)
    return out


def find(tree: BrowseTree, kind: str, pred=lambda d: True):
    return next(n for n in nodes(tree) if n.data is not None and n.data.kind == kind and pred(n.data))


def plain(app, widget_id: str) -> str:
    """The text a Static on the current screen shows (its content rendered to plain text)."""
    content = app.screen.query_one(widget_id, Static).content
    if isinstance(content, str):
        return content
    return "".join(seg.text for seg in app.console.render(content))


def status_text(app) -> str:
    return plain(app, "#status")


def flat(app, widget_id: str) -> str:
    """A Static's text with the line wrapping undone (words joined by single spaces)."""
    return " ".join(plain(app, widget_id).split())


async def open_resolving_reference(app, pilot) -> ReaderScreen:
    """Once the demo is verified, open the reader on the reference whose artifact resolves."""
    await wait_for(pilot, lambda: app.verified)
    tree = app.query_one(BrowseTree)
    await select(pilot, tree, find(tree, "reference", lambda d: d.obj.status == "resolves"))
    await pilot.press("enter")
    await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen))
    return app.screen


async def test_browse_shows_sessions_badges_and_counts(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        labels = [n.label.plain for n in tree.root.children]
        assert any(l.startswith("demo-tools") and "4 artifacts" in l and "3 tool spills" in l for l in labels)
        assert any(l.startswith("demo-target-research") and "1 artifact ·" in l for l in labels)
        expired = find(tree, "reference", lambda d: d.obj.status == "expired")
        assert "expired-locator" in expired.label.plain
        assert "expired-locator 1" in status_text(app)


async def test_select_reference_shows_preview_beside_notice(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, find(tree, "reference", lambda d: d.obj.status == "resolves"))
        await pilot.pause(0.2)
        text = plain(app, "#notice")
        assert "omittedBytes" in text and "resolves" in text and "recomputed" in text
        ptext = plain(app, "#preview")
        assert "Preview — what the model saw" in ptext and "Final answer" in ptext
        # The expired one says so plainly.
        await select(pilot, tree, find(tree, "reference", lambda d: d.obj.status == "expired"))
        await pilot.pause(0.2)
        text = plain(app, "#notice")
        assert "EXPIRED" in text and "the notice remains" in text


async def test_filters_by_text_and_finding_code(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await pilot.press("f")  # first code present, alphabetically: expired-locator
        await pilot.pause(0.1)
        assert app.code_filter == "expired-locator"
        shown = [n for n in nodes(tree) if n.data and n.data.kind in ("reference", "artifact", "tool-spill")]
        assert len(shown) == 1 and shown[0].data.obj.status == "expired"
        await pilot.press("f")  # next: orphan-artifact, the pytest output no log names
        await pilot.pause(0.1)
        assert app.code_filter == "orphan-artifact"
        shown = [n for n in nodes(tree) if n.data and n.data.kind in ("reference", "artifact", "tool-spill")]
        assert len(shown) == 1 and shown[0].data.key.endswith("-pytest.txt")
        await pilot.press("f", "f")
        assert app.code_filter is None
        await pilot.press("slash")
        await pilot.press(*"web_fetch")
        await pilot.pause(0.1)
        shown = [n.data.kind for n in nodes(tree) if n.data and n.data.kind in ("reference", "artifact", "tool-spill")]
        assert shown and all(k in ("artifact", "tool-spill") for k in shown) and len(shown) == 2


async def test_reader_jump_search_export(demo, tmp_path):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)
        assert reader.message == 1
        await pilot.press("n", "n", "n", "n", "n")
        assert reader.message == 6  # the final answer with its 400-line appendix
        reader.goto(Goto("line", 200))
        view = reader.query_one(TextView)
        await wait_for(pilot, lambda: reader.document.position(6, view.top_offset)[0] == 199)
        # Search: the appendix is shortened in the preview, so hits are seen and omitted.
        reader.query_one("#reader-search", Input).value = "appendix line"
        await wait_for(pilot, lambda: len(reader.hits) == 400)
        # The seen ranges come from a worker after the reader opened; the hits follow them.
        await wait_for(pilot, lambda: not reader.seen_pending and any(h.seen for h in reader.hits))
        seen = [h for h in reader.hits if h.seen]
        assert 0 < len(seen) < 400
        assert reader.hits[0].seen and not reader.hits[200].seen and reader.hits[-1].seen  # head, middle, tail
        status = plain(app, "#reader-status")
        assert "400 hits" in status and "omitted" in status
        # Export exactly.
        target = tmp_path / "out.txt"
        from spillscope.frontends.tui.screens import export_message

        export_message(reader.document, 6, str(target), [str(demo.root), str(demo.logs)])
        assert target.read_bytes() == js_utf8(reader.document.read(6))
        with pytest.raises(ValueError):
            export_message(reader.document, 6, str(demo.root / "x.txt"), [str(demo.root)])
        await pilot.press("escape")
        assert not isinstance(app.screen, ReaderScreen)


async def test_reader_regex_search_and_wrap_and_goto_units(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, find(tree, "artifact", lambda d: d.obj.name.endswith("-bash.txt")))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen))
        reader = app.screen
        reader.query_one("#reader-search", Input).value = r"re:line 07\d\d"
        await wait_for(pilot, lambda: len(reader.hits) == 100)
        await pilot.press("w")
        assert reader.query_one(TextView).wrap is False
        assert parse_goto("m 3") == Goto("message", 3) and parse_goto("42") == Goto("line", 42)
        assert parse_goto("b 10") == Goto("byte", 10) and parse_goto("nope") is None
        reader.goto(Goto("byte", 15 * 100))  # "line NNNN: ok\r\n" is 15 bytes
        await wait_for(pilot, lambda: reader.document.position(1, reader.query_one(TextView).top_offset)[0] == 100)


async def test_pause_resume_and_live_watch(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.pause(0.5)  # let the watcher start
        tree = app.query_one(BrowseTree)
        research = find(tree, "reference", lambda d: d.obj.status == "resolves")
        await select(pilot, tree, research)
        key = research.data.key
        session = next(p for p in demo.root.iterdir() if any(p.iterdir()))
        new = session / "aaaaaaaaaaaa-bash.txt"
        t0 = time.monotonic()
        new.write_text("new artifact")
        await wait_for(pilot, lambda: any(n.data and n.data.key == str(new) for n in nodes(tree)), timeout=5)
        latency = time.monotonic() - t0
        assert tree.cursor_node is not None and tree.cursor_node.data.key == key  # selection kept
        # Delete the transcript: its reference turns into an expired locator.
        transcript = research.data.obj.artifact.path
        os.unlink(transcript)
        await wait_for(pilot, lambda: find(tree, "reference", lambda d: d.key == key).data.obj.status == "expired", timeout=5)
        # Pause: changes wait; resume applies them.
        await pilot.press("p")
        assert "PAUSED" in status_text(app)
        new.unlink()
        await pilot.pause(0.8)
        assert any(n.data and n.data.key == str(new) for n in nodes(tree))
        assert "changes waiting" in status_text(app)
        await pilot.press("p")
        await wait_for(pilot, lambda: not any(n.data and n.data.key == str(new) for n in nodes(tree)))
        assert "live" in status_text(app)
    assert latency < 5


async def test_rebuild_keeps_the_cursor_on_its_item_at_once(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        research = find(tree, "reference", lambda d: d.obj.status == "resolves")
        await select(pilot, tree, research)
        line = tree.cursor_line
        # A filter that drops the items above it moves the reference up; no refresh between.
        tree.populate(app.inspection, text_filter="Research ✨")
        assert tree.cursor_node is not None and tree.cursor_node.data.key == research.data.key
        assert tree.cursor_line < line


async def test_reader_opens_before_the_seen_ranges_are_worked_out(demo, monkeypatch):
    import threading

    import spillscope.inspect.search.seen as app_module  # where the seen ranges are worked out

    release = threading.Event()
    real = app_module.digest_transcript

    def slow(*args, **kw):  # stands in for a pass over a transcript of gigabytes
        release.wait(20)
        return real(*args, **kw)

    monkeypatch.setattr(app_module, "digest_transcript", slow)
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)
        await wait_for(pilot, lambda: bool(reader.query_one(TextView).lines))
        pending = flat(app, "#reader-status")
        release.set()
        assert reader.seen_pending and "finding what the model saw…" in pending
        await wait_for(pilot, lambda: not reader.seen_pending)
        status = flat(app, "#reader-status")
        assert "finding what the model saw" not in status and "not linked to a preview" not in status
        assert reader.seen[6] and reader.seen[6][0][0] == 0  # the final answer's head was seen


@pytest.mark.parametrize("megabytes", [1, 6])
async def test_reader_of_a_malformed_transcript_shows_what_came_before(tmp_path, megabytes):
    """Jumping ahead into a transcript whose tail is malformed never takes the app down."""
    from test_transcript import _malformed_transcript

    sdir = tmp_path / "root" / "session-000000000000"
    sdir.mkdir(parents=True, mode=0o700)
    path = sdir / "000000000001-session-reference-1.txt"
    line = _malformed_transcript(path, megabytes)
    path.chmod(0o600)
    app = SpillscopeApp(str(tmp_path / "root"), None, watch=False)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        app.open_reader(find(tree, "artifact").data)
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen))
        reader = app.screen
        reader.goto(Goto("message", 3))  # past the bad line: it stops at message 2
        await pilot.press("end", "n", "n")
        await wait_for(pilot, lambda: reader.document.done, timeout=20)
        await pilot.pause(0.3)
        title = flat(app, "#reader-title")
        assert reader.message == 2 and f"malformed at line {line}" in title
        assert app._exception is None
        assert any(f"{line}:" in n.message for n in app._notifications)


def _big_transcript(path: Path, megabytes: int) -> None:
    head = render_transcript({"sessionId": "big", "label": "Big", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": [{"role": "user", "text": "x"}]}, 3)
    block = ("".join('"' + "界😀é abc " * 8 + '"\n' for _ in range(1024))).encode()
    with open(path, "wb") as f:
        f.write(js_utf8(head))
        for _ in range(megabytes * (1 << 20) // len(block)):
            f.write(block)
    path.chmod(0o600)


async def test_verification_shows_progress_and_a_superseded_pass_stops(tmp_path, monkeypatch):
    import spillscope.frontends.tui.app as app_module

    sdir = tmp_path / "root" / "session-000000000000"
    sdir.mkdir(parents=True, mode=0o700)
    for i in (1, 2, 3):
        _big_transcript(sdir / f"00000000000{i}-session-reference-1.txt", 24)
    outcomes: list[str] = []
    real = app_module.inspect_root

    def recording(*args, **kw):
        try:
            result = real(*args, **kw)
        except BaseException as exc:
            outcomes.append(type(exc).__name__)
            raise
        outcomes.append("done" if kw.get("check_content", True) else "quick")
        return result

    monkeypatch.setattr(app_module, "inspect_root", recording)
    app = SpillscopeApp(str(tmp_path / "root"), None, watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: re.search(r"verifying… [0-9]+%", status_text(app)), timeout=20)
        assert not app.verified
        app.rescan()  # supersedes the pass that is reading the transcripts
        await wait_for(pilot, lambda: app.verified, timeout=30)
        assert "_Superseded" in outcomes and outcomes[-1] == "done"
        assert "verifying" not in status_text(app) and "3 artifacts" in status_text(app)


async def test_root_that_disappears_shows_state_and_recovers(demo, tmp_path):
    import shutil

    backup = tmp_path / "backup"
    shutil.copytree(demo.root, backup)
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.pause(0.5)
        shutil.rmtree(demo.root)
        await wait_for(pilot, lambda: "ROOT MISSING" in status_text(app), timeout=5)
        shutil.copytree(backup, demo.root)
        await wait_for(pilot, lambda: "ROOT MISSING" not in status_text(app) and len(app.inspection.scan.artifacts()) == 5, timeout=5)


async def test_help_and_palette_commands(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Pause / resume live watch" in titles and "Filter: expired-locator" in titles


INJECTION = [
    "\x1b[31mRED\x1b[0m", "\x1b]0;pwned-title\x07", "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\",
    "[bold red]markup[/]", "[link=https://x]l[/link]", "[@click=app.quit]quit[/]", "\u202eevil\u202c", "\u2066iso\u2069",
    "\x00\x07\x08\x7f\x9b", "lone\ud800", "cr\ronly",
]


async def test_injection_corpus_renders_inert(tmp_path):
    root = tmp_path / "root"
    sdir = root / "session-000000000000"
    sdir.mkdir(parents=True)
    path = sdir / "aaaaaaaaaaaa-session-reference-1.txt"
    data = {"sessionId": "\x1b[2Jsrc", "label": "[bold]L[/bold]", "cwd": None, "capturedThroughSeq": 1,
            "conversation": [{"role": "user", "text": t} for t in INJECTION]}
    path.write_bytes(js_utf8(render_transcript(data, 3)))
    app = SpillscopeApp(str(root), None, watch=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, find(tree, "artifact"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen))
        reader = app.screen
        for k in range(1, len(INJECTION) + 1):
            reader.show_message(k)
            await pilot.pause(0.05)
            view = reader.query_one(TextView)
            rendered = "".join(seg.text for y in range(3) for seg in view.render_line(y))
            assert "\x1b" not in rendered and "\x07" not in rendered and "\x00" not in rendered
            assert "\u202e" not in rendered and "\ud800" not in rendered
            if INJECTION[k - 1].startswith("["):
                assert INJECTION[k - 1].split("]")[0] in rendered  # markup shown literally
        assert app.is_running  # nothing was interpreted: [@click=app.quit] did not quit


async def test_a_wide_root_builds_session_children_on_expand(tmp_path):
    """Past LAZY_LIMIT items the tree opens collapsed and makes leaves on demand."""
    root = tmp_path / "wide"
    for d in range(30):
        sdir = root / f"session-{d:012x}"
        sdir.mkdir(parents=True, mode=0o700)
        for i in range(100):
            p = sdir / f"{i:012x}-bash.txt"
            p.write_text("x")
            p.chmod(0o600)
    app = SpillscopeApp(str(root), None, watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        sessions = list(tree.root.children)
        assert len(sessions) == 30 and all(not s.is_expanded and not s.children for s in sessions)
        sessions[7].expand()
        await pilot.pause(0.1)
        assert len(sessions[7].children) == 100
        assert sessions[7].children[0].data.key.endswith("session-000000000007/000000000000-bash.txt")
        # The selection survives a rescan even inside a lazily built session.
        await select(pilot, tree, sessions[7].children[42])
        key = tree.cursor_node.data.key
        app.rescan()
        await wait_for(pilot, lambda: app.loads >= 4 and app.verified)
        await pilot.pause(0.2)
        assert tree.cursor_node is not None and tree.cursor_node.data.key == key


async def test_a_result_that_arrives_while_the_app_closes_is_dropped(demo):
    """A pass or a watch batch can report while the app tears its widgets down: the
    result is dropped, never a crash (it was NoMatches on '#welcome' in a worker)."""
    app = SpillscopeApp(str(demo.root), str(demo.logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        ins = app.inspection
        assert ins is not None
        await app.query_one("#welcome").remove()  # what the teardown does, widget by widget
        with pytest.raises(NoMatches):
            app.show_inspection(ins, True)  # while the app runs, a missing widget is a bug
        app.exit()
        app.show_inspection(ins, True)  # closing: dropped
        app.show_verify_progress(0.5)
        await app.query_one("#status").remove()
        await app.query_one(BrowseTree).remove()
        app.show_inspection(ins, True)
        app.set_watch_state("stale", "the watch stopped")
