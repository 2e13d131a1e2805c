"""Which way imports point, checked statically over the whole package.

``tests/test_boundary.py`` imports each core module in a fresh interpreter and looks at what
came with it: it cannot see an import that is deferred and not run. This test reads every
import statement (deferred ones and ``TYPE_CHECKING`` ones too, through import-linter's
grimp graph) and checks the arrows against the contracts in ``pyproject.toml``
(``[tool.importlinter]``): the layers ``frontends → dialects → inspect → reference → spill →
formats → storage → util``, the inspector's subpackages, the front ends that must not
import each other, and no cycle between the children of any package. Each dialect folder
is checked here as well: it may use ``dialects``' shared modules, never another dialect.

Each contract is also run on a copy of the package with an import planted against it, and
must break: a contract that cannot fail checks nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spillscope

PACKAGE = Path(spillscope.__file__).resolve().parent
PYPROJECT = PACKAGE.parent.parent / "pyproject.toml"

_LINT = "import sys; from importlinter.cli import lint_imports_command; lint_imports_command()"

#: The folders of ``spillscope.dialects`` (one per agent) and which of them imports another.
_CROSSINGS = """
import importlib.util, json, os, grimp
g = grimp.build_graph("spillscope", cache_dir=None)
(where,) = importlib.util.find_spec("spillscope.dialects").submodule_search_locations
folders = sorted(f"spillscope.dialects.{d}" for d in os.listdir(where) if os.path.isfile(os.path.join(where, d, "__init__.py")))
def folder(m):
    return next((f for f in folders if m == f or m.startswith(f + ".")), None)
crossings = sorted({f"{m} -> {i}" for m in g.modules if folder(m) for i in g.find_modules_directly_imported_by(m)
                    if folder(i) not in (None, folder(m))})
print(json.dumps({"folders": folders, "crossings": crossings}))
"""


def _env(pythonpath: Path | None) -> dict[str, str]:
    env = dict(os.environ, COLUMNS="200")  # rich wraps at 80 columns otherwise
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)  # the copy comes before the installed package
    return env


def lint(*contracts: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-c", _LINT, str(PYPROJECT), "--no-cache"]
    for contract in contracts:
        args += ["--contract", contract]
    return subprocess.run(args, capture_output=True, text=True, timeout=120, env=_env(pythonpath))


def dialect_crossings(pythonpath: Path | None = None) -> dict[str, list[str]]:
    out = subprocess.run([sys.executable, "-c", _CROSSINGS], capture_output=True, text=True, timeout=120,
                         env=_env(pythonpath))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_the_import_contracts_hold() -> None:
    out = lint()
    assert out.returncode == 0, out.stdout + out.stderr
    # Every contract ran (a contract that silently vanished from the config would pass).
    assert out.stdout.count(" KEPT") == 4, out.stdout


def test_no_dialect_imports_another() -> None:
    found = dialect_crossings()
    assert len(found["folders"]) >= 2, found  # dsh and claude at least: the check is not empty
    assert found["crossings"] == [], found["crossings"]


def _copy_with(tmp_path: Path, relpath: str, line: str) -> Path:
    """A copy of the package with ``line`` appended to ``relpath``; the dir to put on PYTHONPATH."""
    root = tmp_path / "copy"
    shutil.copytree(PACKAGE, root / "spillscope", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    target = root / "spillscope" / relpath
    assert target.is_file(), relpath
    target.write_text(target.read_text() + "\n" + line + "\n")
    return root


PLANTS = [
    # contract, file, the planted import, what the report must name (the importer, or the cycle)
    ("layers", "formats/notices.py", "from ..inspect.verify import inspection as _planted",
     "spillscope.formats.notices"),
    # Deferred and never run: invisible to the fresh-interpreter test, not to this one.
    ("layers", "util/text.py", "def _planted() -> None:\n    from ..frontends import format  # noqa: F401",
     "spillscope.util.text"),
    ("layers", "reference/preview.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from ..inspect.findings import Finding  # noqa: F401", "spillscope.reference.preview"),
    # storage sits under the formats that read through it
    ("layers", "storage/local.py", "from ..formats import notices as _planted", "spillscope.storage.local"),
    ("inspect-layers", "inspect/scan/tree.py", "from ..verify import inspection as _planted",
     "spillscope.inspect.scan.tree"),
    ("inspect-layers", "inspect/link/locate.py", "from ..watch import events as _planted",
     "spillscope.inspect.link.locate"),
    ("front-ends", "frontends/tui/footer.py", "from ..notebook import render as _planted",
     "spillscope.frontends.tui.footer"),
    # Siblings with no layer between them: only the cycle contract sees this one.
    ("acyclic", "spill/types.py", "from . import local as _planted", ".types -> .local"),
]


@pytest.mark.parametrize(("contract", "relpath", "line", "named"), PLANTS,
                         ids=[f"{c}:{p}" for c, p, _, _ in PLANTS])
def test_a_planted_import_breaks_its_contract(tmp_path: Path, contract: str, relpath: str, line: str,
                                              named: str) -> None:
    copy = _copy_with(tmp_path, relpath, line)
    out = lint(contract, pythonpath=copy)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "BROKEN" in out.stdout and named in out.stdout, out.stdout


def test_the_copy_is_what_was_checked(tmp_path: Path) -> None:
    """The plants' runs read the copy, not the installed package: an unplanted copy is kept."""
    copy = _copy_with(tmp_path, "util/text.py", "")
    out = lint(pythonpath=copy)
    assert out.returncode == 0, out.stdout + out.stderr
    # and a copy broken in a way no contract covers still shows the run read it
    (copy / "spillscope" / "util" / "planted_marker.py").write_text("")
    out = lint("layers", pythonpath=copy)
    assert f"Analyzed {sum(1 for _ in (copy / 'spillscope').rglob('*.py'))} files" in out.stdout, out.stdout


def test_a_dialect_importing_another_is_found(tmp_path: Path) -> None:
    copy = _copy_with(tmp_path, "dialects/claude/notice.py", "from ..dsh import DIALECT as _planted  # noqa: F401")
    found = dialect_crossings(copy)
    assert found["crossings"] == ["spillscope.dialects.claude.notice -> spillscope.dialects.dsh"], found
