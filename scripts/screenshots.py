#!/usr/bin/env python3
"""Regenerate screenshots/ from the real app: an SVG per main view (Textual's own
export), then a PNG of each (headless Chromium when present, else rsvg-convert).
Emoji in the demo need a colour emoji font to show in the PNGs (Debian:
fonts-noto-color-emoji); without one they come out as boxes.

    python scripts/screenshots.py
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tui_views import SIZE, VIEWS, make_app, reproducible_demo  # noqa: E402

OUT = HERE.parent / "screenshots"


async def shoot(name: str, view, size: tuple[int, int] = SIZE) -> Path:
    demo = reproducible_demo()
    app = make_app(demo)
    async with app.run_test(size=size) as pilot:
        await view(pilot)
        svg = OUT / f"{name}.svg"
        app.save_screenshot(str(svg.name), path=str(OUT))
    return svg


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
    OUT.mkdir(exist_ok=True)
    shots = [(name, view, SIZE) for name, view in VIEWS.items()]
    # A small terminal too: the preview stacks above its notice.
    shots.append(("reference-80x24", VIEWS["reference"], (80, 24)))
    shots.append(("stats-80x24", VIEWS["stats"], (80, 24)))  # the charts on a small terminal
    for name, view, size in shots:
        svg = asyncio.run(shoot(name, view, size))
        png = to_png(svg)
        print(f"wrote {svg.relative_to(OUT.parent)} and {png.relative_to(OUT.parent)}")
    print(f"wrote {notebook_shot().relative_to(OUT.parent)}")
    print(f"wrote {browser_shot().relative_to(OUT.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
