"""The package surface: lazy exports resolve to what they name, and the CLI starts light."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types

import pytest


@pytest.mark.parametrize("name", ["spillscope.spill", "spillscope.reference", "spillscope.inspect", "spillscope.formats.transcript"])
def test_every_export_is_the_object_its_module_defines(name):
    pkg = importlib.import_module(name)
    # Import every submodule first: an import binds the submodule on the package, which
    # would shadow an exported name that equals a module name.
    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{name}.{info.name}")
    assert sorted(pkg.__all__) == sorted(dir(pkg)) == sorted(n for ns in pkg._EXPORTS.values() for n in ns)
    for module, names in pkg._EXPORTS.items():
        for export in names:
            value = getattr(pkg, export)
            assert not isinstance(value, types.ModuleType), export
            assert value is getattr(importlib.import_module(module if module.startswith(".") else f".{module}", name), export)
    with pytest.raises(AttributeError):
        pkg.no_such_name  # noqa: B018


def test_cli_does_not_import_what_ls_does_not_need():
    # The transcript codec, not its package: the CLI takes the line limit from its fixed text (layout).
    codec = ", ".join(f"'spillscope.formats.transcript.{m}'" for m in ("parser", "reader", "index", "writer", "records"))
    code = f"import sys, spillscope.frontends.cli.main; print(sorted(m for m in ('asyncio', 'textual', 'zstandard', 'watchfiles', {codec}) if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
