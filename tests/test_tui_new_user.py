"""What a new user hits in the TUI (issue 15), through Textual's Pilot: every size usable,
the reader honest about what it did, the preview's cut marked, the tree's state kept."""

from __future__ import annotations

import os
import random

import pytest
from textual.widgets import Input

from spillscope.util.text import js_utf8
from spillscope.frontends.demo import write_demo
from spillscope.reference.preview import MessageView
from spillscope.reference.join import join_offset
from spillscope.reference.retention import truncate_with_notice
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.inspect.search.records import MAX_HITS
from spillscope.frontends.tui.screens import ConfirmScreen, Goto, PromptScreen, ReaderScreen
from spillscope.frontends.tui.textview import TextView
from spillscope.frontends.tui.widgets import BrowseTree

from test_tui import find, flat, open_resolving_reference, plain, select, wait_for

SIZES = [(80, 24), (100, 30), (120, 40), (140, 40), (150, 40), (200, 50)]


@pytest.fixture
def demo(tmp_path):
    return write_demo(tmp_path / "demo")


def inside(region, screen) -> bool:
    return region.x >= 0 and region.y >= 0 and region.right <= screen.width and region.bottom <= screen.height


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_reference_view_shows_preview_and_notice_at_every_size(demo, size):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, find(tree, "reference", lambda d: d.obj.status == "resolves"))
        await pilot.pause(0.2)
        preview, notice = app.query_one("#preview-pane").region, app.query_one("#notice-pane").region
        for r in (preview, notice):
            assert inside(r, app.screen.region) and r.height >= 6, (size, r)
        assert preview.width >= 30, (size, preview)
        assert notice.width >= 38, (size, notice)  # the counts table: field, logged, recomputed
        assert not preview.overlaps(notice)
        side_by_side = preview.y == notice.y
        assert side_by_side == (size[0] >= 150), (size, preview, notice)
        # The preview's text is there to read, not a sliver.
        assert "Final answer" in plain(app, "#preview")


@pytest.mark.parametrize("size", [(140, 40), (200, 50)])
async def test_tree_lines_are_whole_when_there_is_room(demo, size):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: app.verified)
        await pilot.pause(0.1)
        tree = app.query_one(BrowseTree)
        # Every line (badges, counts, sizes and ages) fits the tree's width.
        assert tree.scrollable_content_region.width >= tree.virtual_size.width, (
            tree.scrollable_content_region, tree.virtual_size)
        # And the detail pane keeps room for the notice.
        assert app.query_one("#detail").region.width >= 60


async def test_escape_in_the_search_box_closes_only_the_box(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)
        await pilot.press("slash")
        box = reader.query_one("#reader-search", Input)
        assert box.display and box.has_focus
        await pilot.press("escape")
        assert app.screen is reader and not box.display
        await pilot.press("escape")
        assert not isinstance(app.screen, ReaderScreen)


async def test_search_says_why_it_finds_nothing_and_when_it_stopped_counting(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)
        reader.show_message(6)
        await wait_for(pilot, lambda: not reader.seen_pending)
        box = reader.query_one("#reader-search", Input)
        box.value = "re:appendix (line"
        await wait_for(pilot, lambda: reader.search_error != "")
        status = flat(app, "#reader-status")
        assert "not a valid regex" in status and "missing )" in status and "0 hits" not in status
        box.value = "re:."  # every code point of an 8733-code-point message
        await wait_for(pilot, lambda: len(reader.hits) == MAX_HITS)
        assert reader.hits_capped and f"{MAX_HITS}+ hits" in flat(app, "#reader-status")
        box.value = "re:appendix line 3\\d\\d"
        await wait_for(pilot, lambda: len(reader.hits) == 100)
        assert not reader.hits_capped and "100 hits" in flat(app, "#reader-status")


@pytest.mark.parametrize("goto, said", [
    (Goto("message", 99), "message 99 does not exist: went to the last, 6"),
    (Goto("cp", 100000), "code point 100000 is past the end"),
    (Goto("byte", 10**9), "byte 1000000000 is past the end"),
    (Goto("line", 5000), "line 5000 is past the last"),
])
async def test_a_clamped_jump_says_so(demo, goto, said):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)
        notes = []
        app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
        reader.goto(goto)
        await wait_for(pilot, lambda: reader.clamped_note != "")
        assert said in reader.clamped_note and said in flat(app, "#reader-status")
        assert any(said in n for n in notes)
        # An exact jump clears it.
        reader.goto(Goto("line", 1))
        await wait_for(pilot, lambda: reader.clamped_note == "")


async def test_seen_and_omitted_hits_differ_without_colour(demo, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        assert app.no_color
        reader = await open_resolving_reference(app, pilot)
        reader.show_message(6)
        await wait_for(pilot, lambda: not reader.seen_pending)
        reader.query_one("#reader-search", Input).value = "appendix line"
        await wait_for(pilot, lambda: len(reader.hits) == 400)
        view = reader.query_one(TextView)
        seen = view.get_component_rich_style("textview--hit")
        omitted = view.get_component_rich_style("textview--hit-omitted")
        # Attributes, not colours: NO_COLOR removes the colours and keeps these.
        assert seen.bold and seen.underline and not seen.strike
        assert omitted.strike and not omitted.underline
        # Drawn: a line holding a seen hit and one holding an omitted hit.
        def styles_of(offset):
            view.scroll_to_offset(offset)
            return [seg.style for seg in view.render_line(0) if seg.text.startswith("appendix line")]
        first_seen = next(h for h in reader.hits if h.seen)
        first_omitted = next(h for h in reader.hits if not h.seen)
        await pilot.pause(0.05)
        assert any(s.underline and s.bold for s in styles_of(first_seen.start))
        assert any(s.strike for s in styles_of(first_omitted.start))


async def test_copy_says_it_may_not_have_arrived(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_resolving_reference(app, pilot)
        notes = []
        app.notify = lambda message, **kw: notes.append(message)  # type: ignore[method-assign]
        await pilot.press("y")
        assert notes and "OSC 52" in notes[-1] and "e exports" in notes[-1] and "copied" not in notes[-1]


async def test_export_asks_before_overwriting(demo, tmp_path):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    target = tmp_path / "mine.txt"
    target.write_bytes(b"precious")
    async with app.run_test(size=(120, 40)) as pilot:
        reader = await open_resolving_reference(app, pilot)

        async def export_to(path):
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
            app.screen.query_one("#prompt-input", Input).value = str(path)
            await pilot.press("enter")
            await pilot.pause(0.1)

        await export_to(target)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause(0.1)
        assert app.screen is reader and target.read_bytes() == b"precious"
        await export_to(target)
        await pilot.press("escape")  # no, too
        await pilot.pause(0.1)
        assert target.read_bytes() == b"precious"
        await export_to(target)
        await pilot.press("y")
        await pilot.pause(0.1)
        assert target.read_bytes() == js_utf8(reader.document.read(reader.message))
        fresh = tmp_path / "fresh.txt"
        await export_to(fresh)  # a new file: no question
        assert app.screen is reader and fresh.read_bytes() == target.read_bytes()


async def test_filters_keep_the_trees_expansion(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)

        def state():
            return {n.data.key: n.is_expanded for n in tree.root.children}

        tools = find(tree, "session", lambda d: d.obj["tools"])
        tools.collapse()
        await pilot.pause(0.1)
        before = state()
        assert list(before.values()).count(False) == 1
        codes = len({f.code for f in app.inspection.findings})
        for _ in range(codes + 1):  # all the way round, back to no filter
            await pilot.press("f")
            await pilot.pause(0.05)
        assert app.code_filter is None and state() == before
        await pilot.press("slash")
        await pilot.press(*"pytest")
        await pilot.pause(0.1)
        assert all(state().values())  # a filter opens every match
        for _ in range(6):
            await pilot.press("backspace")
        await pilot.pause(0.1)
        assert state() == before


async def test_preview_marks_where_its_middle_was_cut(demo):
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        node = find(tree, "reference", lambda d: d.obj.status == "resolves")
        await select(pilot, tree, node)
        await pilot.pause(0.2)
        link = node.data.obj
        conv = link.entry.preview["conversation"]
        shortened = [i for i, m in enumerate(conv) if "[… omitted" in m["text"] and link.recomputed.joins[i]]
        assert shortened
        text = plain(app, "#preview")
        assert text.count("✂") == len(shortened) and "≈✂" not in text  # exact: checked against the transcript
        # The appendix message: "…appendix li" ✂ "ndix line 385" reads as one line no more.
        i = shortened[-1]
        at = link.recomputed.joins[i]
        head, tail = conv[i]["text"][:at], conv[i]["text"][at:conv[i]["text"].rindex("\n[… omitted")]
        flat_text = " ".join(text.split())
        assert " ".join((head[-12:] + "✂" + tail[:12]).split()) in flat_text


async def test_preview_of_an_expired_reference_marks_an_estimated_cut(demo):
    # The research transcript is gone: the join can only be estimated, and says so.
    research = next(p for p in demo.root.rglob("*-session-reference-1.txt"))
    os.unlink(research)
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        node = find(tree, "reference", lambda d: d.obj.entry.label == "Research ✨")
        await select(pilot, tree, node)
        await pilot.pause(0.2)
        assert node.data.obj.status == "expired"
        assert "≈✂" in plain(app, "#preview")


ALPHABETS = {"ascii": "abcdefgh \n", "mixed": "aé界😀\n", "astral": "😀🎉", "surrogates": "a\ud800界"}


@pytest.mark.parametrize("alphabet", list(ALPHABETS))
def test_join_offset_splits_every_shortened_preview_into_its_head_and_tail(alphabet):
    rng = random.Random(alphabet)
    chars = ALPHABETS[alphabet]
    checked = 0
    for size in (10, 100, 1000, 10_000):
        for _ in range(60):
            text = "".join(rng.choice(chars) for _ in range(rng.randint(size // 2, size)))
            preview, omitted = truncate_with_notice(text, rng.randint(30, max(31, size)))
            kept = preview[: preview.rindex("\n[… omitted")] if "\n[… omitted" in preview else ""
            if not omitted or not kept:  # whole, or nothing but the marker: no join
                assert join_offset(preview) is None
                continue
            data = js_utf8(text)
            exact = join_offset(preview, MessageView.of_text("", text))
            assert exact is not None and exact[1]
            at = exact[0]
            assert data.startswith(js_utf8(kept[:at])) and data.endswith(js_utf8(kept[at:]))
            estimate = join_offset(preview)
            assert estimate is not None and not estimate[1]
            # The estimate is a few bytes from a true join at most; for ASCII it is one.
            assert abs(len(js_utf8(kept[: estimate[0]])) - len(js_utf8(kept[:at]))) <= 8 or alphabet != "ascii"
            if alphabet == "ascii":
                e = estimate[0]
                assert data.startswith(js_utf8(kept[:e])) and data.endswith(js_utf8(kept[e:]))
            checked += 1
    assert checked > 100


async def test_tui_honours_the_line_limits_it_is_given(demo):
    # `spillscope ROOT --max-line-bytes N` reaches the TUI's verification (it used to be dropped).
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False, limits={"max_line_bytes": 40})
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        assert any(f.code == "malformed-artifact" and "exceeds 40 bytes" in f.detail for f in app.inspection.findings), \
            [f.detail for f in app.inspection.findings]
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        assert not any(f.code == "malformed-artifact" for f in app.inspection.findings)


async def test_root_panel_says_what_was_not_checked(tmp_path):
    import shutil

    demo = write_demo(tmp_path / "old" / "spill-root-parent")
    moved = tmp_path / "moved"
    shutil.copytree(demo.root, moved)
    app = SpillscopeApp(str(moved), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, tree.root.children[0])
        await select(pilot, tree, tree.root)  # highlighted anew: the root's panel
        await pilot.pause(0.2)
        text = "".join(plain(app, "#info").split())  # wrapped anywhere, even inside a path
        assert "0checkedagainsttheroot" in text and "NOTchecked" in text
        assert f"didyoumean--rebase{demo.root}?" in text


async def test_the_detail_follows_the_cursor_when_a_filter_changes_the_tree(demo):
    # The walk at 80x24: `f` to orphan-artifact left the Build log's notice beside a tree
    # whose cursor was on the orphan artifact.
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        await select(pilot, tree, find(tree, "reference", lambda d: d.obj.status == "expired"))
        await pilot.pause(0.1)
        for code in (None, "expired-locator", "orphan-artifact", "snapshot-unavailable"):
            app.set_code_filter(code)
            await pilot.pause(0.2)
            node = tree.cursor_node
            assert node is not None and node.data is not None
            switcher = app.query_one("#detail")
            if node.data.kind == "reference":
                assert switcher.current == "reference"
                assert node.data.obj.entry.label in plain(app, "#preview"), code
            else:
                assert switcher.current == "info-pane"
                if node.data.kind == "artifact":
                    assert node.data.obj.name in "".join(plain(app, "#info").split()), code


async def test_artifact_ages_do_not_stand_still(demo):
    # The walk: "2s" beside every artifact, still "2s" minutes later.
    import time as _time

    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        tree = app.query_one(BrowseTree)
        assert tree.AGE_REFRESH <= 60  # ages are redrawn while the app runs
        node = find(tree, "artifact")
        assert node.label.plain.endswith("s")  # just written: seconds old
        tree.refresh_ages(_time.time() + 3 * 3600)
        await pilot.pause(0.1)
        assert node.label.plain.endswith(" · 3h"), node.label.plain


async def test_keys_typed_at_once_after_slash_land_in_the_filter_box(demo):
    # The tmux test under load: "/Research" arriving together ran "s" (search-all), the
    # filter box not focused yet when the keys after "/" were handled.
    from textual import events

    from spillscope.frontends.tui.search import SearchScreen

    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.verified)
        for ch in "/Research":  # sent as the terminal's driver sends them: no wait between
            key = events.Key("slash" if ch == "/" else ch, ch)
            key.set_sender(app)
            app._driver.send_message(key)
        await pilot.pause(0.3)
        assert not isinstance(app.screen, SearchScreen)
        box = app.query_one("#filter", Input)
        assert app.focused is box
        assert box.value == "Research"  # the letters of that same burst reach the box
        # "/" typed in the box is text (a path), not the filter action again.
        await pilot.press("slash", "x")
        assert box.value == "Research/x" and app.focused is box
