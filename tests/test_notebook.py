"""The example notebook runs headlessly with a real kernel (nbclient + ipykernel), and
the notebook objects render safe, useful HTML."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import spillscope
import spillscope.spill.naming
from spillscope.util.text import js_utf8
from spillscope.frontends.demo import write_demo
from spillscope.frontends.notebook import esc
from spillscope.formats.transcript import render_transcript

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "inspect.ipynb"


def html_outputs(cell) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in cell.get("outputs", []))


def test_example_notebook_executes_and_renders(tmp_path, monkeypatch):
    from spillscope.frontends.demo import default_demo_dir

    # The kernel's temp dir is this test's: the notebook's demo lands (and is removed) here,
    # and the user's own `spillscope demo` dir is never touched.
    kernel_tmp = tmp_path / "tmp"
    kernel_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(kernel_tmp))
    user_demo = default_demo_dir()
    before = user_demo.stat().st_mtime_ns if user_demo.exists() else None
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert (user_demo.stat().st_mtime_ns if user_demo.exists() else None) == before
    assert any(kernel_tmp.glob("spillscope-notebook-*/demo/spill-root"))
    code = [c for c in nb.cells if c.cell_type == "code"]
    root_html, ref_html, findings_html, transcript_html = (html_outputs(c) for c in code[:4])
    assert "Spill root" in root_html and "demo-target-research" in root_html and "expired-locator" in root_html
    assert "Preview — what the model saw" in ref_html and "Omission notice" in ref_html
    assert "<td>omittedBytes</td><td>13085</td><td>13085</td>" in ref_html and "✔ resolves" in ref_html
    assert "expired-locator" in findings_html and "sortable" in findings_html
    assert "Message 6: assistant" in transcript_html
    assert "<details><summary>8733 characters, 11135 bytes" in transcript_html  # the long one is collapsed
    assert "␛[31mRED" in transcript_html and "\x1b" not in transcript_html  # controls visible, never raw
    text_out = "".join(o.get("text", "") for o in code[4].outputs)
    assert "characters;" in text_out
    assert "EXPIRED" in html_outputs(code[5]) or "expired-locator" in html_outputs(code[5])
    assert all(o.get("output_type") != "error" for c in code for o in c.outputs)
    stats_html = html_outputs(code[7])
    assert "Spill volume by day" in stats_html and stats_html.count("<svg") == 3 and "demo-tools" in stats_html
    assert "tool-output" in "".join(o.get("data", {}).get("text/plain", "") for o in code[8].outputs)


def test_untrusted_text_is_escaped_and_visible(tmp_path):
    root = tmp_path / "root" / "session-000000000000"
    root.mkdir(parents=True)
    evil = "<script>alert(1)</script> \x1b[31m [bold]x[/] \u202e \x00 \ud800"
    path = root / "aaaaaaaaaaaa-session-reference-1.txt"
    path.write_bytes(js_utf8(render_transcript({"sessionId": "<b>s</b>", "label": "<i>", "cwd": None, "capturedThroughSeq": 1,
                                                "conversation": [{"role": "user", "text": evil * 200}]}, 3)))
    insp = spillscope.open(tmp_path / "root")
    html = insp.transcript(path)._repr_html_()
    assert "<script>alert" not in html and "&lt;script&gt;" in html and "&lt;b&gt;s&lt;/b&gt;" in html
    assert "\x1b" not in html and "␛[31m" in html and "⟨U+202E⟩" in html and "⟨lone U+D800⟩" in html
    assert "<details><summary>" in html  # long text collapsed with its size
    assert esc("\x00<") == "␀&lt;"
    assert "expired" not in repr(insp) and insp.findings().to_records() == [f.to_json() for f in insp.findings()]


async def test_async_watch_yields_events(tmp_path):
    import asyncio

    demo = write_demo(tmp_path / "demo")
    insp = spillscope.open(demo.root, demo.logs)
    session = next(p for p in demo.root.iterdir() if any(p.iterdir()))

    async def first_event():
        async for ev in insp.watch():
            if ev.kind is not None:  # skip the watch's own events (live, stale, root-…)
                return ev

    task = asyncio.create_task(first_event())
    await asyncio.sleep(0.5)
    (session / "abcabcabcabc-bash.txt").write_text("new")
    ev = await asyncio.wait_for(task, 10)
    assert ev.event == "added" and ev.path.endswith("abcabcabcabc-bash.txt")


def test_stats_tables_go_to_pandas_and_arrow_and_the_chart_is_inert(tmp_path, monkeypatch):
    import sys

    from spillscope.frontends.demo import _write_log

    demo = write_demo(tmp_path / "demo")
    evil = "<script>alert(1)</script>\x1b[31m"
    _write_log(demo.logs, evil, "/w", [])  # a session id that is markup and an escape sequence
    (demo.root / spillscope.spill.naming.session_dir_name(evil)).mkdir(mode=0o700)
    (demo.root / spillscope.spill.naming.session_dir_name(evil) / "000000000001-bash.txt").write_bytes(b"x" * 99999)
    view = spillscope.open(demo.root, demo.logs).stats()
    records = view.to_records()
    assert len(records) == len(view) and records[0].keys() == set(view.columns)
    frame = view.to_pandas()
    assert list(frame.columns) == list(view.columns) and frame["bytes"].sum() == view.stats.totals.bytes
    arrow = view.to_arrow()
    assert arrow.num_rows == len(view) and arrow.column("bytes").to_pylist() == [r["bytes"] for r in records]
    assert view.table("days").to_pandas()["bytes"].sum() == view.stats.totals.bytes
    page = view._repr_html_()
    assert "<script>alert" not in page and "&lt;script&gt;" in page and "\x1b" not in page and "␛[31m" in page
    assert page.count("<svg") == 3
    assert f"{view.stats.totals.findings:,} findings (findings from the scan and the logs; content not compared" in page
    no_logs = spillscope.open(demo.root).stats()._repr_html_()
    assert "no notice checked: no session logs given" in no_logs
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        view.to_pandas()
    with pytest.raises(ImportError, match="pip install pyarrow"):
        view.to_arrow()
