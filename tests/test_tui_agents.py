"""The agents' TUI (frontends/tui/agent_app.py) at 80x24: each spill file's verdict, its notice
beside the file's start, a planted fault shown as one, hostile text inert."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from textual.widgets import DataTable, Static

from spillscope.dialects import get
from spillscope.frontends.tui.agent_app import AgentApp

FIXTURES = Path(__file__).parent / "fixtures"


def _text(app: AgentApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def _settled(app: AgentApp, pilot) -> None:  # type: ignore[no-untyped-def]
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_claude_notice_beside_its_file_and_the_verdict_at_80x24() -> None:
    app = AgentApp(get("claude"), str(FIXTURES / "claude" / "projects"))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        assert app.query_one("#files", DataTable).row_count == 20
        assert _text(app, "#summary").startswith("OK ")
        # Find the file whose notice the model saw (<persisted-output>) and look at it.
        row = next(i for i, f in enumerate(app._rows) if f.name == "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt")
        app.query_one("#files", DataTable).move_cursor(row=row)
        await pilot.pause()
        notice, file = _text(app, "#notice"), _text(app, "#file")
        assert "verified" in notice and "persisted-output" in notice and "size-label" in notice
        assert "Output too large (22.9KB)" in notice
        assert "docs/reports/Python-Code-Map.md:164:" in file  # the file's own start, beside it
        for pane in ("#summary", "#files", "#notice-pane", "#file-pane"):
            region = app.query_one(pane).region
            assert region.width > 0 and region.height > 0 and region.bottom <= 24 and region.right <= 80


async def test_a_changed_byte_is_a_mismatch_row_and_hostile_text_is_inert(tmp_path: Path) -> None:
    tree = tmp_path / "qwen"
    shutil.copytree(FIXTURES / "qwen" / "home", tree)
    spill = sorted(tree.glob("tmp/*/tool-results/*.txt"))[2]
    data = spill.read_bytes()
    spill.write_bytes(b"\x1b[2J\x1b]0;pwned\x07" + data[14:])  # same length, terminal escapes at the start
    app = AgentApp(get("qwen"), str(tree))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        assert _text(app, "#summary").startswith("FAIL ")
        row = next(i for i, f in enumerate(app._rows) if f.path == str(spill))
        table = app.query_one("#files", DataTable)
        assert str(table.get_row_at(row)[0]) == "mismatch"
        table.move_cursor(row=row)
        await pilot.pause()
        assert "digest-mismatch" in _text(app, "#notice")
        shown = _text(app, "#file")
        assert "\x1b" not in shown and "\x07" not in shown and "␛" in shown


async def test_a_deleted_file_is_a_row_and_the_summary_fails_at_80x24(tmp_path: Path) -> None:
    """An expired notice has no file to list: it still gets its row, and any finding at or above
    verify's default --fail-on (warning) makes the summary FAIL, counts first (they must not run
    off an 80-column line behind the path)."""
    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", tree)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        named = [k for k in app.report.links if k.form == "persisted-output"]  # type: ignore[union-attr]
    assert named and named[0].target is not None
    os.unlink(named[0].target)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        summary = _text(app, "#summary")
        assert summary.startswith("FAIL 1 finding · "), summary
        table = app.query_one("#files", DataTable)
        row = next(i for i, r in enumerate(app._rows) if getattr(r, "named", None) == named[0].named)
        assert str(table.get_row_at(row)[0]) == "expired"
        assert "expired-locator" in str(table.get_row_at(row)[3])
        table.move_cursor(row=row)
        await pilot.pause()
        assert "expired-locator" in _text(app, "#notice") and "the file is gone" in _text(app, "#file")


async def test_enter_reads_a_spill_file_whole_exact_inert_and_searchable(tmp_path: Path) -> None:
    """Enter on a spill file opens dsh's reader on it: the exact text (astral, combining, CRLF,
    controls), escapes drawn visibly, search by the same engine, Escape back to the table; a file
    gone since the inspection is said, not a crash."""
    from spillscope.frontends.tui.reader import ReaderScreen
    from spillscope.frontends.tui.textview import TextView

    tree = tmp_path / "qwen"
    shutil.copytree(FIXTURES / "qwen" / "home", tree)
    spill, gone = sorted(tree.glob("tmp/*/tool-results/*.txt"))[:2]
    text = "first line\r\n\x1b[31mred\x1b]0;pwned\x07 😀 e\u0301 \u2028 nul\x00 end\n" * 50 + "the needle, once\n"
    spill.write_bytes(text.encode())
    app = AgentApp(get("qwen"), str(tree))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        table = app.query_one("#files", DataTable)
        table.move_cursor(row=next(i for i, f in enumerate(app._rows) if f.path == str(spill)))
        await pilot.press("enter")
        await _settled(app, pilot)
        screen = app.screen
        assert isinstance(screen, ReaderScreen)
        assert screen.document.read(1) == text  # exact, every code point
        view = screen.query_one(TextView)
        drawn = "".join(seg.text for y in range(view.size.height) for seg in view.render_line(y))
        assert "red" in drawn and "\x1b" not in drawn and "\x07" not in drawn and "\x00" not in drawn
        await pilot.press("slash", *"needle")
        await _settled(app, pilot)
        assert len(screen.hits) == 1 and screen.hits[0].start == text.index("needle")
        # No dsh preview links a spill file: the hit is neither seen nor omitted, and not counted as either.
        status = str(screen.query_one("#reader-status", Static).render())
        assert screen.hits[0].seen is None and "omitted" not in status and "not linked to a preview" in status
        await pilot.press("escape", "escape")
        await pilot.pause()
        assert app.screen is not screen and app.query_one("#files", DataTable).row_count > 0
        gone.unlink()
        table.move_cursor(row=next(i for i, f in enumerate(app._rows) if f.path == str(gone)))
        await pilot.press("enter")
        await _settled(app, pilot)
        assert not isinstance(app.screen, ReaderScreen)
        assert any("cannot open" in n.message for n in app._notifications)


async def test_s_searches_the_whole_tree_and_enter_opens_the_reader_at_the_hit(tmp_path: Path) -> None:
    """`s`: grep's engine over every spill file and transcript of the tree, grouped by file;
    Enter on a spill file's hit opens the reader there, the match marked (not known seen or
    omitted); on a transcript's hit, at its line as stored, the escaped match marked."""
    from spillscope.dialects.search import TextHit
    from spillscope.frontends.tui.agent_search import AgentSearchScreen, AgentSearchTree
    from spillscope.frontends.tui.reader import ReaderScreen
    from spillscope.util.text import js_json_string

    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", tree)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(100, 30)) as pilot:
        await _settled(app, pilot)
        await pilot.press("s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, AgentSearchScreen)
        await pilot.press(*"collect_wsd_files", "enter")
        await _settled(app, pilot)
        status = str(screen.query_one("#search-status", Static).render())
        assert status.endswith("· done") and screen.hits > 1, status
        await pilot.press("s", "r")  # the main view's keys: nothing over the search
        assert app.screen is screen and len(app.screen_stack) == 2
        search_tree = screen.query_one(AgentSearchTree)
        kinds = {n.data.hit.kind for f in search_tree.root.children for n in f.children}  # type: ignore[union-attr]
        assert kinds == {"spill", "transcript"}
        for kind in ("spill", "transcript"):
            node = next(n for f in search_tree.root.children for n in f.children
                        if isinstance(n.data.hit, TextHit) and n.data.hit.kind == kind)  # type: ignore[union-attr]
            hit = node.data.hit  # type: ignore[union-attr]
            search_tree.select_node(node)
            await _settled(app, pilot)
            reader = app.screen
            assert isinstance(reader, ReaderScreen), kind
            (marked,) = reader.hits
            shown = reader.document.read(1)[marked.start:marked.end]
            assert marked.seen is None
            assert shown == (hit.match if kind == "spill" else js_json_string(hit.match)[1:-1])
            await pilot.press("escape")
            await pilot.pause()
