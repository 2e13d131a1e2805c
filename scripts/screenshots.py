#!/usr/bin/env python3
"""Regenerate screenshots/ from the real app: an SVG per main view (Textual's own
export), then a PNG of each (headless Chromium when present, else rsvg-convert).

The PNGs are drawn with the machine's fonts: every character the views show (emoji such
as ✨ ✅ 📄, CJK such as 界, symbols such as ⭘ ● ⏸) needs a font that has it, or it comes
out as an empty box. Before drawing, every character of every SVG is looked up with
fontconfig (``fc-list :charset=…``); a missing one stops the script and names the
Debian packages that cover them all (``--install-fonts`` installs them, as root):

    python scripts/screenshots.py [--install-fonts] [--agents]

``--agents`` redraws only the other agents' app's shots (``agent-*``).
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.cells import cell_len

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tui_views import SIZE, VIEWS, make_app, reproducible_demo  # noqa: E402

OUT = HERE.parent / "screenshots"
#: Debian's fonts for what the views show: text and box drawing, colour emoji, CJK, and
#: symbols neither has (⭘).
FONT_PACKAGES = ["fonts-dejavu-core", "fonts-noto-color-emoji", "fonts-wqy-zenhei", "fonts-symbola"]


def install_fonts() -> None:
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise SystemExit(f"--install-fonts needs apt-get, as root: apt-get install {' '.join(FONT_PACKAGES)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", *FONT_PACKAGES], check=True, env=env)


def missing_glyphs(svgs: list[Path]) -> list[str]:
    """The characters of the SVGs' text that no installed font has (fontconfig's view,
    which is what Chromium and rsvg-convert draw with)."""
    if shutil.which("fc-list") is None:
        raise SystemExit("need fc-list (Debian: fontconfig) to check the fonts before drawing PNGs")
    chars: set[str] = set()
    for svg in svgs:
        for text in re.findall(r">([^<>]*)</text>", svg.read_text("utf-8")):
            chars.update(ch for ch in html.unescape(text) if ord(ch) > 0x7E and not ch.isspace())
    missing = []
    for ch in sorted(chars):
        found = subprocess.run(["fc-list", f":charset={ord(ch):x}", "family"], capture_output=True, text=True)
        if not found.stdout.strip():
            missing.append(ch)
    return missing


async def shoot(name: str, view, size: tuple[int, int] = SIZE) -> Path:
    demo = reproducible_demo()
    app = make_app(demo)
    async with app.run_test(size=size) as pilot:
        await view(pilot)
        svg = OUT / f"{name}.svg"
        app.save_screenshot(str(svg.name), path=str(OUT))
    return svg


#: Other agents' trees (the test fixtures, from each agent's own source): the file whose
#: notice is shown beside it at 80x24.
AGENT_SHOTS = [("agent-claude-80x24", "claude", "claude/projects", "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt"),
               ("agent-qwen-80x24", "qwen", "qwen/home", "call_5a4b3c2d1e0f9a8b7c6d5e4f.txt"),
               # Enter: the file whole in the reader, searched
               ("agent-claude-reader-80x24", "claude", "claude/projects", "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt",
                "Python-Code-Map"),
               # s: the whole tree searched
               ("agent-claude-search-80x24", "claude", "claude/projects", "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt",
                None, "collect_wsd_files"),
               # ?: the agents' keys
               ("agent-claude-help-80x24", "claude", "claude/projects", "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt",
                None, None, (80, 24), ("question_mark",)),
               # a big terminal: the table takes two thirds of it
               ("agent-claude-200x60", "claude", "claude/projects", "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt",
                None, None, (200, 60))]


async def agent_shoot(name: str, agent: str, tree: str, file_name: str, search: str | None = None,
                      tree_search: str | None = None, size: tuple[int, int] = (80, 24),
                      keys: tuple[str, ...] = ()) -> Path:
    from textual.widgets import DataTable

    from spillscope.dialects import get
    from spillscope.frontends.tui.agent_app import AgentApp

    app = AgentApp(get(agent), str(HERE.parent / "tests" / "fixtures" / tree))
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        for _ in range(100):  # the live watch's first round: "● live" in the summary, not "starting"
            if app.live_state == "live":
                break
            await pilot.pause(0.1)
        await pilot.pause()
        row = next(i for i, f in enumerate(app._rows) if f.name == file_name)
        app.query_one("#files", DataTable).move_cursor(row=row)
        await pilot.pause()
        if search is not None:
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.press("slash", *search)
            await app.workers.wait_for_complete()
            await pilot.press("enter")  # the first hit, current
            await pilot.pause()
        if tree_search is not None:
            await pilot.press("s", *tree_search, "enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
        if keys:
            await pilot.press(*keys)
            await pilot.pause()
        svg = OUT / f"{name}.svg"
        app.save_screenshot(str(svg.name), path=str(OUT))
    return svg


TEXT_RUN = re.compile(r'(<text [^>]*?textLength=")([0-9.]+)("[^>]*>)([^<]*)(</text>)')


def fix_text_lengths(svg: Path) -> None:
    """Rich's SVG export sizes each run of text as ``len(text)`` cells, not its cell width:
    a run with wide characters (界, 😀) is squeezed, and a gap opens before the next run
    (placed by cell width) — "li  ✂ndix" where the terminal shows "li✂ndix". Each run is
    given the width of its cells, as a terminal draws it."""
    def fixed(m: re.Match[str]) -> str:
        text = html.unescape(m.group(4))
        if not text or cell_len(text) == len(text):
            return m.group(0)
        width = float(m.group(2)) / len(text) * cell_len(text)
        return f"{m.group(1)}{width:g}{m.group(3)}{m.group(4)}{m.group(5)}"

    svg.write_text(TEXT_RUN.sub(fixed, svg.read_text("utf-8")), "utf-8")


def to_png(svg: Path) -> Path:
    png = svg.with_suffix(".png")
    text = svg.read_text("utf-8")
    m = re.search(r'viewBox="0 0 ([0-9.]+) ([0-9.]+)"', text)
    width, height = (int(float(m.group(1))), int(float(m.group(2)))) if m else (1600, 1000)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium:
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                            "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={png}",
                            svg.resolve().as_uri()], check=True, capture_output=True, timeout=120)
    elif shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", str(svg), "-o", str(png)], check=True)
    else:
        raise SystemExit("need chromium or rsvg-convert (Debian: librsvg2-bin) to make PNGs")
    return png


def chromium_png(html_file: Path, png: Path, width: int, height: int) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("need chromium for the notebook screenshot")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
                        "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={png}",
                        html_file.resolve().as_uri()], check=True, capture_output=True, timeout=120)


def notebook_shot() -> Path:
    """Execute examples/inspect.ipynb with a real kernel; render its first outputs as a page."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(HERE.parent / "examples" / "inspect.ipynb", as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        # The kernel's temp dir is this one: the notebook's demo is removed with it.
        old = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = tmp
        try:
            NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp}}).execute()
        finally:
            if old is None:
                del os.environ["TMPDIR"]
            else:
                os.environ["TMPDIR"] = old
    parts = []
    for cell in nb.cells[:4]:
        if cell.cell_type == "markdown":
            parts.append(f"<h3 style='font-family:sans-serif'>{cell.source.splitlines()[0].lstrip('# ')}</h3>")
        else:
            parts.append(f"<pre style='background:#f4f4f4;padding:6px'>{cell.source}</pre>")
            parts += [o.get("data", {}).get("text/html", "") for o in cell.get("outputs", [])]
    page = OUT / "notebook.html"
    page.write_text("<html><body style='margin:16px'>" + "".join(parts) + "</body></html>", "utf-8")
    png = OUT / "notebook.png"
    chromium_png(page, png, 1300, 900)
    page.unlink()
    return png


def browser_shot() -> Path:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from test_serve import shoot  # the same routine the browser test uses

    demo = reproducible_demo()
    png = OUT / "browser.png"
    report = shoot(demo.root, demo.logs, png)
    assert report["connected"] and report["external"] == [], report
    return png


def main() -> int:
    if "--install-fonts" in sys.argv[1:]:
        install_fonts()
    OUT.mkdir(exist_ok=True)
    if "--agents" in sys.argv[1:]:  # only the other agents' app's shots (agent-*)
        return draw([asyncio.run(agent_shoot(*shot)) for shot in AGENT_SHOTS])
    shots = [(name, view, SIZE) for name, view in VIEWS.items()]
    # A small terminal too: the preview stacks above its notice.
    shots.append(("reference-80x24", VIEWS["reference"], (80, 24)))
    shots.append(("stats-80x24", VIEWS["stats"], (80, 24)))  # the charts on a small terminal
    svgs = [asyncio.run(shoot(name, view, size)) for name, view, size in shots]
    svgs += [asyncio.run(agent_shoot(*shot)) for shot in AGENT_SHOTS]
    draw(svgs)
    print(f"wrote {notebook_shot().relative_to(OUT.parent)}")
    print(f"wrote {browser_shot().relative_to(OUT.parent)}")
    return 0


def draw(svgs: list[Path]) -> int:
    """Each SVG's text runs fixed, its glyphs checked against the fonts, then a PNG of it."""
    for svg in svgs:
        fix_text_lengths(svg)
    missing = missing_glyphs(svgs)
    if missing:
        raise SystemExit(f"no installed font has {' '.join(missing)} ({', '.join(f'U+{ord(c):04X}' for c in missing)}): "
                         f"the PNGs would show empty boxes. Install fonts (Debian: apt-get install "
                         f"{' '.join(FONT_PACKAGES)}, or run this script with --install-fonts as root)")
    for svg in svgs:
        png = to_png(svg)
        print(f"wrote {svg.relative_to(OUT.parent)} and {png.relative_to(OUT.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
