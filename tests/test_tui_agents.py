"""The agents' TUI (frontends/tui/agent_app.py) at 80x24: each spill file's verdict, its notice
beside the file's start, a planted fault shown as one, hostile text inert."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from textual.widgets import DataTable, Static

from spillscope.dialects import get
from spillscope.dialects.records import SpillFile
from spillscope.frontends.tui.agent_app import AgentApp

FIXTURES = Path(__file__).parent / "fixtures"


def _text(app: AgentApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def _settled(app: AgentApp, pilot) -> None:  # type: ignore[no-untyped-def]
    from textual.worker import WorkerCancelled

    while True:
        try:  # a change the live watch saw re-inspects the tree, cancelling the inspection before
            await app.workers.wait_for_complete()
            break
        except WorkerCancelled:
            continue
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
        assert "expired-locator" in str(table.get_row_at(row)[4])  # verdict, size, session, file, findings
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


def _drawn(table: DataTable) -> list[str]:  # type: ignore[type-arg]
    return ["".join(seg.text for seg in table.render_line(y)) for y in range(table.size.height)]


async def _until(pilot, what, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.1)):
        if what():
            return
        await pilot.pause(0.1)
    assert what(), "timed out"


async def test_question_mark_shows_the_agents_keys_and_closes() -> None:
    from spillscope.frontends.tui.help import AGENT_BROWSE, READER, SEARCH_ALL, HelpScreen

    app = AgentApp(get("claude"), str(FIXTURES / "claude" / "projects"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())
        for what in [w for _, w in AGENT_BROWSE + READER + SEARCH_ALL] + ["● live", "Esc, q, ? or F1 closes"]:
            assert what in shown, what
        assert "pause the live watch" not in shown and "finding filter" not in shown  # dsh's keys, not these
        box = app.screen.query_one("#help-box")
        assert box.region.bottom <= 24 and box.region.right <= 80 and box.max_scroll_y == 0  # whole at 80x24
        await pilot.press("question_mark")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1", "escape")
        await pilot.pause()
        assert len(app.screen_stack) == 1


async def test_columns_are_as_wide_as_their_cells_whatever_is_pressed_while_loading() -> None:
    """The table's own auto width was measured when it was next idle; rows drawn before that (a
    key pressed while the rows went in) stayed cached at the header's width: " verifie  28.6  tool".
    The widths are now set with the columns, before any row: drawn at once, they are final."""
    tree = str(FIXTURES / "claude" / "projects")
    for keys in ([], ["down"] * 20, ["s", "escape", "down", "question_mark", "escape"], ["r", "enter", "up"]):
        app = AgentApp(get("claude"), tree, live=False)
        async with app.run_test(size=(80, 24)) as pilot:
            for key in keys:
                await pilot.press(key)
            await _settled(app, pilot)
            while len(app.screen_stack) > 1:  # a key that came after the load opened the reader
                app.pop_screen()
                await pilot.pause()
            table = app.query_one("#files", DataTable)
            names = [f.name for f in app._rows]
            widths = {str(k.value): c.width for k, c in table.columns.items()}
            assert widths["file"] == max(len(n) for n in names) and widths["verdict"] == len("verified")
            lines = _drawn(table)
            assert lines[0].split() == ["verdict", "size", "session", "file", "findings"]
            shown = [line for line in lines[1:] if line.strip()]
            assert shown and all(any(n in line for n in names) and "verified" in line for line in shown), keys
        # The race itself, made certain: rows drawn straight after the report went in, before
        # the table was idle, are the rows drawn after.
        app = AgentApp(get("claude"), tree, live=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await _settled(app, pilot)
            assert app.report is not None
            table = app.query_one("#files", DataTable)
            app.show_report(app.report)
            early = _drawn(table)
            await pilot.pause()
            assert _drawn(table) == early and all(n in "".join(early) for n in [f.name for f in app._rows][:8])


async def test_the_session_column_and_the_height_at_200x60() -> None:
    app = AgentApp(get("qwen"), str(FIXTURES / "qwen" / "home"), live=False)
    async with app.run_test(size=(200, 60)) as pilot:
        await _settled(app, pilot)
        table = app.query_one("#files", DataTable)
        assert table.row_count == 6 and table.region.height == 7  # as tall as its rows, the detail the rest
    app = AgentApp(get("claude"), str(FIXTURES / "claude" / "projects"), live=False)
    async with app.run_test(size=(200, 24)) as pilot:
        await _settled(app, pilot)
        assert app.query_one("#files").region.height == 9
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        assert app.query_one("#files").region.height == 21  # 20 files and the header
        assert app.query_one("#detail").region.height == 60 - 2 - 21
        sessions = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert all(s != "—" for s in sessions), sessions  # qwen's files: the session of the transcript naming it
    app = AgentApp(get("claude"), str(FIXTURES / "claude" / "projects"), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        table = app.query_one("#files", DataTable)
        assert str(table.get_row_at(0)[2]) == "f28e3…da47"  # a UUID, shortened in its middle
        assert "(session f28e368b-423a-4989-a7b9-33d64ce6da47)" in _text(app, "#file")  # whole beside it
        assert table.region.height == 9 and app.query_one("#detail").region.height == 13


async def test_the_live_watch_re_inspects_a_changed_tree_and_never_says_live_when_stale(tmp_path: Path) -> None:
    """A real copy of a fixture tree, watched: a spill file added shows as a row, the summary's
    counts follow, the highlighted file and the scroll stay; a tree gone is "stale since", not live."""
    import re

    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", tree)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(80, 24)) as pilot:
        await _settled(app, pilot)
        await _until(pilot, lambda: "● live" in _text(app, "#summary"))
        assert app.live_state == "live" and "20 spill files" in _text(app, "#summary")
        table = app.query_one("#files", DataTable)
        table.move_cursor(row=15)
        await pilot.pause()
        chosen, line = app._rows[15].path, 15 - table.scroll_y  # type: ignore[union-attr]
        assert table.scroll_y > 0 and table.max_scroll_x == 0  # scrolled down; no sideways scroll at 80
        source = next(f for f in app._rows if isinstance(f, SpillFile))
        new = Path(source.path).with_name("toolu_01AAAAnewlyAddedSpillFileXXX.txt")
        new.write_bytes(b"\x1b]0;pwned\x07[red]new[/red] output\n")
        await _until(pilot, lambda: table.row_count == 21)
        await _settled(app, pilot)
        summary = _text(app, "#summary")
        assert "21 spill files" in summary and "● live" in summary and app.refreshes >= 1, summary
        # The highlighted file stays highlighted, on its screen line (the new file sorts above it).
        assert app._rows[table.cursor_row].path == chosen and table.cursor_row == 16  # type: ignore[union-attr]
        assert table.cursor_row - table.scroll_y == line
        row = next(i for i, f in enumerate(app._rows) if f.path == str(new))  # type: ignore[union-attr]
        assert str(table.get_row_at(row)[0]) == "orphan"  # nothing names it
        table.move_cursor(row=row)
        await pilot.pause()
        shown = _text(app, "#file")
        assert "[red]new[/red]" in shown and "\x1b" not in shown and "␛" in shown  # inert
        shutil.rmtree(tree)
        await _until(pilot, lambda: app.live_state == "stale")
        summary = _text(app, "#summary")
        assert "● live" not in summary and re.search(r"⚠ stale since \d\d:\d\d:\d\d \(the tree is gone", summary), summary


async def test_a_watch_that_fails_is_stale_and_f5_restarts_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from spillscope.frontends.tui import agent_app

    def broken(*args, heartbeat, **kwargs):  # type: ignore[no-untyped-def]
        heartbeat()
        yield [object()]  # one change (the tree re-inspected), then the listing fails
        raise OSError("the disk went away")

    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", tree)
    real = agent_app.poll
    monkeypatch.setattr(agent_app, "poll", broken)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(120, 24)) as pilot:
        await _settled(app, pilot)
        await _until(pilot, lambda: app.live_state == "stale")
        summary = _text(app, "#summary")
        assert "● live" not in summary and "OSError: the disk went away" in summary, summary
        monkeypatch.setattr(agent_app, "poll", real)
        await pilot.press("f5")
        await _until(pilot, lambda: app.live_state == "live")
        assert "● live" in _text(app, "#summary") and "stale" not in _text(app, "#summary")


async def test_a_watch_stuck_in_a_round_is_stale_and_a_gone_highlighted_file_leaves_the_cursor_in_place(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A listing that never comes back (a hung file system): no beat for STALE_AFTER seconds is
    stale, though the watch's thread is alive. And a refresh without the highlighted file keeps
    the cursor at its row number, not back at the top."""
    from spillscope.frontends.tui import agent_app

    def stuck(*args, stop, heartbeat, **kwargs):  # type: ignore[no-untyped-def]
        heartbeat()
        stop.wait()  # the next round's listing hangs until the app ends
        return
        yield

    tree = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude" / "projects", tree)
    monkeypatch.setattr(agent_app, "poll", stuck)
    monkeypatch.setattr(agent_app, "STALE_AFTER", 0.5)
    app = AgentApp(get("claude"), str(tree))
    async with app.run_test(size=(100, 24)) as pilot:
        await _settled(app, pilot)
        await _until(pilot, lambda: app.live_state == "stale")
        summary = _text(app, "#summary")
        assert app._watch_thread is not None and app._watch_thread.is_alive()
        assert "● live" not in summary and "no round for over 0.5 s" in summary, summary
        table = app.query_one("#files", DataTable)
        table.move_cursor(row=5)
        await pilot.pause()
        os.unlink(app._rows[5].path)  # type: ignore[union-attr]
        app.action_rescan()
        await _settled(app, pilot)
        await pilot.pause()
        assert table.row_count == 20 and table.cursor_row == 5  # 19 files and the expired notice
