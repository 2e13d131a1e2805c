"""What the README promises a new user (issue 27, item 12): its Python snippets run as
written, the licence pyproject names is there, and the notebook extra brings what it
takes to open the example notebook."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from spillscope.frontends.demo import write_demo

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text("utf-8")


def _python_blocks() -> dict[str, str]:
    """Each ```python block, by the README section (## heading) it is in."""
    blocks = {}
    for section in re.split(r"^## ", README, flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        for i, code in enumerate(re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)):
            blocks[f"{title} {i}"] = code
    return blocks


def test_the_readme_has_the_snippets_this_file_runs():
    assert set(_python_blocks()) == {"In a notebook 0", "Library 0"}


def test_the_library_snippet_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(_python_blocks()["Library 0"], "README.md (Library)", "exec"), {})
    assert re.fullmatch(r"6 messages saved; [0-9]+ bytes left out of the preview\n", capsys.readouterr().out)


def test_the_notebook_snippet_runs_on_a_demo(tmp_path):
    # `root` and `logs` are the README's placeholders: a demo's stand in for them.
    demo = write_demo(tmp_path / "demo")
    names = {"root": demo.root, "logs": demo.logs}
    exec(compile(_python_blocks()["In a notebook 0"], "README.md (In a notebook)", "exec"), names)
    assert names["insp"].reference("Research ✨") is not None


def test_the_licence_is_there_and_is_the_one_pyproject_names():
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["license"] == {"text": "MIT"}
    text = (REPO / "LICENSE").read_text("utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 spillscope authors" in text
    assert "[LICENSE](LICENSE)" in README


@pytest.mark.parametrize("needed", ["ipykernel", "jupyterlab", "nbconvert"])
def test_the_notebook_extra_brings_a_front_end(needed):
    extra = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"]["notebook"]
    assert any(re.match(rf"{needed}\b", req) for req in extra), extra
    assert "jupyter lab examples/inspect.ipynb" in README and "jupyter nbconvert --to notebook" in README


def test_the_example_notebooks_write_demo_is_documented():
    import json

    first = "".join(json.loads((REPO / "examples" / "inspect.ipynb").read_text("utf-8"))["cells"][0]["source"])
    for words in ("write_demo(DIR)", "demo.root", "demo.logs", "demo.expired_locator"):
        assert words in first
    assert "write_demo(DIR)" in README
