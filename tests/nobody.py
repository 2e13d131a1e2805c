"""Running spillscope as another user (``nobody``, 65534) from wherever the checkout lies.

Some tests drop root's privileges to see what an ordinary user meets (a root it cannot
read, a sweep of dirs it does not own). The checkout and its venv may sit in a dir only
root can enter (a clone in ``/root``, or any ``mktemp -d``): run from there, nobody could
not import the package. So the package and the distributions it needs at run time are
mirrored once per test run into a dir everyone can read (in the machine's temp dir), and
nobody runs the base interpreter with ``PYTHONPATH`` pointing at that mirror.
"""

from __future__ import annotations

import atexit
import functools
import importlib.metadata as metadata
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import spillscope

#: Drop to nobody: uid and gid 65534, no supplementary groups.
DROP = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _runtime_closure() -> list[metadata.Distribution]:
    """spillscope's distribution and every one it requires at run time (no extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = ["spillscope"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        dist = seen[name] = metadata.distribution(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def _place(src: Path, dst: Path) -> None:
    """A readable copy of ``src`` at ``dst``: a hard link when everyone may read the file
    already (no bytes copied, the original's mode untouched), else a copy made 0644."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        return
    if src.stat().st_mode & stat.S_IROTH:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass  # another file system (a tmpfs /tmp): copy
    shutil.copyfile(src, dst)
    dst.chmod(0o644)


@functools.cache
def _mirror() -> str:
    """The readable mirror of the package and its run-time dependencies (made once)."""
    from conftest import SYSTEM_TMP

    base = Path(tempfile.mkdtemp(prefix="spillscope-pkg-", dir=SYSTEM_TMP))
    atexit.register(shutil.rmtree, base, True)
    site = base / "site"
    package = Path(spillscope.__file__).parent
    for src in package.rglob("*"):
        if src.is_file() and "__pycache__" not in src.parts:
            _place(src, site / "spillscope" / src.relative_to(package))
    for dist in _runtime_closure():
        top = Path(str(dist.locate_file(""))).resolve()
        for rel in dist.files or []:
            src = Path(str(dist.locate_file(rel))).resolve()
            if src.is_file() and src.is_relative_to(top) and "__pycache__" not in src.parts:
                _place(src, site / src.relative_to(top))
    for d, _, _ in os.walk(base):
        os.chmod(d, 0o755)
    return str(site)


@functools.cache
def _interpreter() -> str | None:
    """The base interpreter (a venv's own may lie in the private checkout), if nobody can run it."""
    exe = getattr(sys, "_base_executable", None) or sys.executable
    try:
        ok = subprocess.run([*DROP, exe, "-c", "import sys"], capture_output=True, timeout=60).returncode == 0
    except OSError:
        ok = False
    return exe if ok else None


def python() -> list[str]:
    """The command line prefix that runs Python as nobody (skips the test where it cannot)."""
    if os.geteuid() != 0:
        pytest.skip("running a command as nobody needs root")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is needed to run a command as nobody")
    exe = _interpreter()
    if exe is None:
        pytest.skip(f"nobody cannot run this interpreter ({sys.executable})")
    return [*DROP, exe]


def spillscope_cli(*args: str) -> list[str]:
    """``spillscope ARGS`` as nobody; run it with :func:`env`."""
    return [*python(), "-m", "spillscope", *args]


def env() -> dict[str, str]:
    """The environment for :func:`python`: the readable mirror first on the path, no
    bytecode written (the mirror is root's), no user site-packages."""
    return {**os.environ, "PYTHONPATH": _mirror(), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
