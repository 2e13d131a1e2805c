"""The whole TUI walked over a root whose every untrusted string is markup (issue #12,
class 4): names, labels, session ids, roles, texts, locators and finding details holding
``[/]``, ``[bold``, ``[@click=...]``, ``[link=...]``, ``$variables`` and escapes. Nothing
may be read as markup: no crash, no click action, and the text shows literally."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import hostile  # noqa: E402

from spillscope.tui.app import SpillscopeApp  # noqa: E402
from spillscope.tui.screens import ReaderScreen  # noqa: E402


async def test_markup_everywhere_is_shown_never_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    case = hostile.make_markup(tmp_path / "c")
    app = SpillscopeApp(str(case.root), str(case.logs), watch=False)
    bells = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]  # a [@click=app.bell] that ran would ring
    opened = 0
    async with app.run_test(size=(140, 45), notifications=True, tooltips=True) as pilot:
        for _ in range(400):
            if app.verified:
                break
            await pilot.pause(0.05)
        assert app.verified
        tree = app.query_one("#tree")
        stack, nodes = [tree.root], []
        while stack:
            node = stack.pop()
            node.expand()
            await pilot.pause(0)
            stack.extend(node.children)
            nodes.append(node)
        kinds = {n.data.kind for n in nodes if n.data is not None}
        assert {"session", "reference", "tool-spill", "artifact"} <= kinds, kinds
        labels = " ".join(str(n.label) for n in nodes)
        assert "[/]" in labels and "[@click=app.bell]" in labels  # shown as text
        for node in nodes:
            if node.data is None:
                continue
            tree.move_cursor(node)
            app.show_detail(node.data)
            await pilot.pause(0.02)
            app.open_reader(node.data)
            for _ in range(100):
                await pilot.pause(0.02)
                if isinstance(app.screen, ReaderScreen):
                    opened += 1
                    await pilot.press("end", "n", "pagedown", "N", "w")
                    if opened == 1:  # the prompts once: each key is a round trip
                        await pilot.press("g", *"[/]", "enter")  # an invalid go-to, echoed in a notification
                        await pilot.pause(0.05)
                        await pilot.press("e", "enter")  # exports into the cwd (tmp_path): its name has markup
                        await pilot.pause(0.1)
                        await pilot.press("slash", *"[/][b", "enter", "f3")
                        await pilot.pause(0.1)
                    while isinstance(app.screen, ReaderScreen) or app.screen is not app.screen_stack[0]:
                        app.pop_screen()
                        await pilot.pause(0.02)
                    break
                if not any(w.is_running for w in app.workers):
                    break
            await pilot.pause(0.05)  # let any notification render
        # The filters take markup as plain text too.
        await pilot.press("slash", *"[/][@click=app.bell]", "enter")
        await pilot.pause(0.1)
        for _ in range(12):
            await pilot.press("f")
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        app.notify("[/] a notice [bold that is not markup")
        await pilot.pause(0.3)
    assert app._exception is None, app._exception
    assert opened >= 2
    assert bells == []
    assert list(tmp_path.glob("*.message-*.txt")), [n.message for n in app._notifications]
