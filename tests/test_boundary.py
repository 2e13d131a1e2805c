"""The core/front-end boundary, checked at run time (as harlequin's import-hygiene test does).

Every module of the core (storage, reference preparation, formats, the inspector) is imported
on its own in a fresh interpreter, and ``sys.modules`` is then checked: no UI library (textual,
rich), no front end of ours, and no optional backend's client may have come with it. A static
contract cannot tell a deferred import from an eager one; this can, and it also catches a UI
library that arrives through a third-party package.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import spillscope

#: Front ends: they may import anything; nothing in the core may import them.
FRONT_ENDS = ("spillscope.frontends", "spillscope.__main__")
#: Top-level packages the core must never pull in (UI libraries and optional backends' clients).
FORBIDDEN_TOP = ("textual", "rich", "boto3", "botocore", "aiobotocore", "obstore", "s3transfer", "IPython", "ipykernel")
#: Modules that exist to reach an optional backend: they may import its client, and only they.
OPTIONAL_BACKENDS = ("spillscope.spill.s3", "spillscope.storage.s3")


def _is_front_end(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FRONT_ENDS)


def _is_optional_backend(name: str) -> bool:
    return any(name == b or name.startswith(b + ".") for b in OPTIONAL_BACKENDS)


def core_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(spillscope.__path__, "spillscope.")]
    return sorted(n for n in names if not _is_front_end(n) and not _is_optional_backend(n))


_PROBE = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(sys.modules)))
"""


def test_the_core_is_most_of_the_package() -> None:
    core = core_modules()
    # A walk that found nothing would pass every check below.
    assert len(core) >= 20, core
    assert "spillscope.inspect.verify.inspection" in core and "spillscope.spill.local" in core
    assert not any(m.startswith("spillscope.frontends") for m in core)


@pytest.mark.parametrize("module", OPTIONAL_BACKENDS)
def test_optional_backend_modules_exist(module: str) -> None:
    """A backend module renamed away would silently leave the list (and the core check)."""
    import importlib.util

    assert importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("module", core_modules())
def test_core_module_imports_no_ui_front_end_or_backend_client(module: str) -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE, module], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    ui = [m for m in loaded if m.split(".")[0] in FORBIDDEN_TOP]
    ours = [m for m in loaded if _is_front_end(m)]
    assert not ui, f"importing {module} imported {ui[:5]}"
    assert not ours, f"importing {module} imported the front end {ours[:5]}"


def test_the_probe_can_fail() -> None:
    """The same probe run on a front end does see textual: the check is not blind."""
    out = subprocess.run([sys.executable, "-c", _PROBE, "spillscope.frontends.tui.app"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "textual" in json.loads(out.stdout)
