"""nb_open() on another agent's tree: the notebook objects (verdicts, findings, one
file's notice beside its start), HTML-escaped with controls visible."""

from __future__ import annotations

import shutil
from pathlib import Path

from spillscope.frontends.notebook import AgentInspector, Inspector
from spillscope.frontends.notebook import open as nb_open  # spillscope.open, typed

FIXTURES = Path(__file__).parent / "fixtures"


def test_open_detects_the_agent_and_shows_every_verdict() -> None:
    ins = nb_open(FIXTURES / "claude" / "projects")
    assert isinstance(ins, AgentInspector) and ins.dialect.name == "claude"
    assert len(ins.findings) == 0 and len(ins.files) == 20
    assert {r["status"] for r in ins.to_records()} == {"verified"}
    html = ins._repr_html_()
    assert html.count("<tr>") == 21 and "toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt" in html
    view = ins.spill("toolu_01TSSkquDwSy5Y3dHa1dWGsw.txt")
    page = view._repr_html_()
    assert "Output too large (22.9KB)" in page and "docs/reports/Python-Code-Map.md:164:" in page
    assert "class='side'" in page  # the notice beside the file


def test_a_dsh_root_still_opens_the_dsh_inspector(tmp_path: Path) -> None:
    assert isinstance(nb_open(tmp_path), Inspector)  # an empty root: dsh's


def test_hostile_names_and_text_are_inert(tmp_path: Path) -> None:
    tree = tmp_path / "gemini"
    shutil.copytree(FIXTURES / "gemini" / "tmp", tree)
    sdir = next(tree.glob("*/tool-outputs/session-*"))
    (sdir / "<script>alert(1)<\\script>\x1b[31m.txt").write_bytes(b"<img src=x onerror=alert(1)>\x1b]0;t\x07")
    ins = nb_open(tree, agent="gemini")
    assert isinstance(ins, AgentInspector)
    assert [f.code for f in ins.findings] == ["orphan-artifact"]
    html = ins._repr_html_() + ins.spill(next(f.name for f in ins.files if f.name.startswith("<")))._repr_html_()
    assert "<script>" not in html and "<img" not in html and "\x1b" not in html and "\x07" not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html
