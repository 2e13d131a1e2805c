"""The browse tree at every width from 80 to 200 columns (issue 15): no line's finding
badges, size or status is ever cut, on the demo and on a root of long and hostile names.

What is checked is what the screen shows (the compositor's rows, inside the tree's
region), against what each node's data says it must show: each finding code (whole or
by its short name, or counted in a ``+N`` badge), an artifact's size, a reference's or
tool spill's status (or the badge that says it), and the name whole or shortened with
"…" in its middle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo
from spillscope.frontends.format import human_size
from spillscope.frontends.tui.app import SpillscopeApp
from spillscope.frontends.tui.labels import SHORT_CODE, STATUS_SAID_BY
from spillscope.frontends.tui.tree import BrowseTree
from spillscope.inspect.findings import SEVERITY_RANK
from spillscope.spill.naming import encode_segment, session_dir_name
from spillscope.util.text import visible

from test_tui import flat, select, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import hostile  # noqa: E402

WIDTHS = [80, 90, 100, 120, 140, 160, 200]

LONG = "a-very-long-name-" * 8
WIDE = "界面😀é\u0301" * 6  # wide, astral and combining
NASTY = "new\nline\ttab \u202eevil\u202c [bold]markup[/] \x1b[31mred"


def write_hostile(base: Path) -> tuple[Path, Path]:
    """A root whose names are long, wide and hostile, with many findings on one line."""
    sid = f"session {'long-id-' * 12}界😀\n\u202e[b]"  # its encoding is a file name: at most 255 bytes
    root, logs = base / "root", base / "logs"
    sdir = root / session_dir_name(sid)
    sdir.mkdir(parents=True, mode=0o700)
    logs.mkdir(parents=True)
    log = hostile.Log(logs, sid)
    conv = [{"role": "user", "text": "q"}, {"role": "assistant", "text": "a"}, {"role": "user", "text": "b"}]
    for n, label in enumerate([LONG + "label", WIDE, NASTY, "x"], start=1):
        path = hostile.plant_reference(log, sdir, f"{n:012d}-session-reference-{n}.txt", conv)
        preview, notice = hostile.reference_parts(path, 1, conv)  # bytes differ from the file's
        preview["label"] = label
        log.reference(preview, notice)
    gone, gone_notice = hostile.reference_parts(sdir / f"gone-{LONG}.txt", 9, conv)
    gone["label"] = f"gone {WIDE}"
    log.reference(gone, gone_notice)
    # An artifact with several findings at once: garbage (malformed), named by no notice
    # (orphan), group-readable (insecure permissions); its name long, wide and hostile.
    bad = sdir / f"000000000099-session-reference-{encode_segment(LONG + WIDE + NASTY)[:120]}.txt"
    bad.write_bytes(b"not a transcript\n")
    bad.chmod(0o644)
    tool = sdir / f"000000000100-{encode_segment('tool-' + LONG)[:150]}.txt"
    tool.write_bytes(b"output " * 500)
    os.chmod(tool, 0o600)
    (sdir / f"odd {NASTY.replace('/', '|')}").write_bytes(b"?")  # not an encoded name
    log.write()
    # A second session dir of one wide name, nothing logged for it.
    other = root / session_dir_name(WIDE * 3)
    other.mkdir(mode=0o755)
    (other / "000000000001-session-reference-1.txt").write_bytes(b"x")
    return root, logs


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    base = tmp_path_factory.mktemp("widths")
    demo = write_demo(base / "demo")
    return {"demo": (demo.root, demo.logs), "hostile": write_hostile(base / "hostile")}


def screen_rows(app) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def expected(app, tree: BrowseTree, node) -> tuple[list[str], str, list[str], str]:
    """What a node's line must show: finding codes, status, kept texts, name."""
    data, ins = node.data, app.inspection
    if data.kind == "artifact":
        codes = [f.code for f in ins.findings if f.path == data.key]
        return codes, "", [human_size(data.obj.size)], data.obj.name
    if data.kind in ("reference", "tool-spill"):
        name = data.obj.entry.label if data.kind == "reference" else (data.obj.entry.tool_name or "tool")
        return [f.code for f in data.obj.findings], data.obj.status, [], name
    if data.kind == "session":
        group = data.obj
        codes = [f.code for f in ins.findings if group["dir"] is not None and f.path == group["dir"].path]
        for child in group["children"]:
            if child.kind == "artifact":
                found = [f for f in ins.findings if f.path == child.key]
            else:
                found = child.obj.findings
            codes += [f.code for f in found if SEVERITY_RANK[f.severity] >= 1]
        sid = ins.session_ids.get(data.key)
        return codes, "", [], sid if sid is not None else data.key
    return [], "", [], os.path.basename(ins.root.rstrip("/"))


def check_line(row: str, codes: list[str], status: str, kept: list[str], name: str) -> None:
    shown = [c for c in sorted(set(codes)) if f" {c} " in row or f" {SHORT_CODE[c]} " in row]
    missing = len(set(codes)) - len(shown)
    if missing:
        assert f" +{missing} " in row, (row, codes)
    if status:
        assert f"({status})" in row or STATUS_SAID_BY.get(status) in shown, (row, status)
    for text in kept:
        assert f"  {text}" in row, (row, text)
    shown_name = visible(name, one_line=True)
    assert shown_name in row or "…" in row, (row, name)  # whole, or shortened where it says so


@pytest.mark.parametrize("which", ["demo", "hostile"])
@pytest.mark.parametrize("width", WIDTHS)
async def test_no_tree_line_is_cut_at_any_width(roots, which, width):
    root, logs = roots[which]
    app = SpillscopeApp(str(root), str(logs), watch=False)
    async with app.run_test(size=(width, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        tree = app.query_one(BrowseTree)
        for node in list(tree.root.children):
            node.expand()
        await pilot.pause(0.1)
        left = app.query_one("#left").region
        # The tree lies inside its pane and on the screen: nothing of it is clipped away.
        assert tree.region.right <= left.right and tree.region.right <= width, (tree.region, left)
        lines = tree._tree_lines
        assert len(lines) > 5
        checked = 0
        top = 0
        while top < len(lines):
            tree.scroll_to(y=top, animate=False)
            await pilot.pause(0.05)
            rows = screen_rows(app)
            region = tree.scrollable_content_region
            for y in range(region.height):
                at = int(tree.scroll_offset.y) + y
                if at >= len(lines):
                    break
                node = lines[at].node
                row = rows[region.y + y][region.x:region.right]
                check_line(row, *expected(app, tree, node))
                checked += 1
            top += region.height
        assert checked == len(lines)
        if width >= 200 and which == "demo":
            # There is room: every line whole, extras (ages, counts) too.
            assert all("…" not in r for r in screen_rows(app)[region.y:region.bottom]), screen_rows(app)


async def test_a_session_whose_badges_are_counted_lists_them_in_full(roots):
    root, logs = roots["hostile"]
    app = SpillscopeApp(str(root), str(logs), watch=False)
    async with app.run_test(size=(80, 30)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        tree = app.query_one(BrowseTree)
        await pilot.pause(0.1)
        rows = screen_rows(app)
        region = tree.scrollable_content_region
        counted = [n for n in tree.root.children if "+" in rows[region.y + n.line][region.x:region.right]]
        assert counted, rows  # the test's premise: at 80 columns a badge is only counted
        for node in counted:
            await select(pilot, tree, node)
            await pilot.pause(0.1)
            codes, *_ = expected(app, tree, node)
            shown = flat(app, "#info")
            assert all(code in shown for code in codes), (codes, shown)


@pytest.mark.parametrize("width", [80, 120])
async def test_search_hits_keep_their_match_in_view(roots, width):
    from spillscope.frontends.tui.search import SearchScreen, SearchTree

    root, logs = roots["demo"]
    app = SpillscopeApp(str(root), str(logs), watch=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        needle = "tool output out of context"  # deep inside long lines: wide context both sides
        app.push_screen(SearchScreen(app.root_path, app.logs_path, None, needle))
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen) and app.screen.is_mounted
                       and "done" in flat(app, "#search-status"), timeout=20)
        await pilot.pause(0.2)
        tree = app.screen.query_one(SearchTree)
        region = tree.scrollable_content_region
        rows = [r[region.x:region.right] for r in screen_rows(app)[region.y:region.bottom]]
        hit_rows = [r for r in rows if " cp " in r]
        assert len(hit_rows) >= 3, rows
        for row in hit_rows:
            assert needle in row and "…" in row, row  # the match whole, the context shortened
        group_rows = [r for r in rows if "[" in r and "]" in r]
        assert all(r.rstrip().endswith("]") for r in group_rows), group_rows  # the kind whole


def test_labels_fit_every_width_with_their_kept_parts_whole():
    """FitLabel alone, over random hostile names and every width down to its floor."""
    import random

    from rich.cells import cell_len

    from spillscope.frontends.tui.labels import Extra, FitLabel, middle

    rng = random.Random(15)
    alphabet = "ab-_.界😀é\u0301\u202e\n\t\x00 "
    codes = sorted(SHORT_CODE)
    for _ in range(300):
        name = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
        found = rng.sample(codes, rng.randint(0, 4))
        kind = rng.choice(["reference", "tool-spill", "artifact"])
        status = "" if kind == "artifact" else rng.choice(["resolves", "expired", "unavailable", "unverified"])
        kept = (Extra("10.5 KiB", group="f"),) if kind == "artifact" else ()
        extras = (Extra("3d", group="f"),) if kind == "artifact" else (Extra("call_1"),) if kind == "tool-spill" else ()
        label = FitLabel(icon=("↪ ", "cyan"), name=name, codes=found, status=status, kept=kept, extras=extras)
        # 24: the least room a leaf has in the narrowest layout (80 columns).
        for width in range(24, label.cell_len + 2):
            out = label.fitted(width)
            assert out.cell_len <= width, (name, width, out.plain)
            check_line(out.plain, found, status, [k.text for k in kept], name)
        for cells in range(1, 20):
            short = middle(label.name, cells, rng.random())
            assert cell_len(short) <= cells
            assert not short.startswith("…\u0301") and "…\u0301" not in short


@pytest.mark.parametrize("width", [80, 100, 120, 200])
async def test_footers_show_whole_keys_and_always_help(roots, width):
    from textual.widgets._footer import FooterKey

    from spillscope.frontends.tui.screens import ReaderScreen
    from spillscope.frontends.tui.search import SearchScreen

    from test_tui import open_resolving_reference

    root, logs = roots["demo"]
    app = SpillscopeApp(str(root), str(logs), watch=False)

    async def check(screen_type) -> None:
        await wait_for(pilot, lambda: isinstance(app.screen, screen_type) and app.screen.is_mounted)
        await pilot.pause(0.3)
        keys = list(app.screen.query(FooterKey))
        assert any(k.action == "help" for k in keys), [k.action for k in keys]
        footer = screen_rows(app)[-1]
        for key in keys:
            if key.description:
                # Whole: its key and description on the footer's line, nothing beyond the screen.
                assert key.region.right <= width and f"{key.key_display} {key.description}" in footer, (footer, key)
        if screen_type is not SpillscopeApp:
            # The browse's filters are not offered where they would act on a hidden tree.
            assert not any(k.action in ("filter", "cycle_code") for k in keys), [k.action for k in keys]

    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        await pilot.pause(0.3)
        keys = list(app.screen.query(FooterKey))
        assert any(k.action == "help" for k in keys)
        await open_resolving_reference(app, pilot)
        await check(ReaderScreen)
        await pilot.press("escape")
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, SearchScreen) and app.screen.is_mounted)
        app.screen.query_one("#search-tree").focus()  # from the box, ? and q are typed, not keys
        await check(SearchScreen)
        await pilot.press("f")  # not the browse's finding filter, here
        assert app.code_filter is None


@pytest.mark.parametrize("width", [80, 120])
async def test_the_readers_title_keeps_its_counts_beside_a_long_name(roots, width):
    from spillscope.frontends.tui.screens import ReaderScreen

    root, logs = roots["hostile"]
    app = SpillscopeApp(str(root), str(logs), watch=False)
    async with app.run_test(size=(width, 24)) as pilot:
        await wait_for(pilot, lambda: app.verified, timeout=20)
        tree = app.query_one(BrowseTree)
        node = next(line.node for line in tree._tree_lines
                    if line.node.data is not None and line.node.data.kind == "artifact" and "tool-a-very" in line.node.data.key)
        app.open_reader(node.data)
        await wait_for(pilot, lambda: isinstance(app.screen, ReaderScreen))
        await pilot.pause(0.3)
        title = app.screen.query_one("#reader-title")
        rows = screen_rows(app)[title.region.y:title.region.bottom]
        text = " ".join(r.strip() for r in rows)
        assert "…" in rows[0] and "lines" in text and "code points" in text and "bytes" in text, rows
        assert title.region.height <= 3 and title.size.height >= title.virtual_size.height, (title.region, rows)
