"""Lazy package exports (PEP 562): a package's names are imported on first use.

Importing one submodule imports its package's ``__init__`` first; if that imported every
submodule, ``spillscope ls`` would pay for asyncio, the transcript codec and the log
reader before listing a single directory.

And a module bound lazily (:func:`deferred_module`): a dependency imported on first use
by the module that names it; and a stand-in for a module no code of a run uses
(:func:`stand_in`), imported on its first use, if any.
"""

from __future__ import annotations

import _thread
import importlib
import sys
import types
from typing import Any, Callable


def lazy_exports(package: str, exports: dict[str, tuple[str, ...]]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose ``exports`` map each
    submodule (relative name) to the names it provides."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if module.startswith(".") else f".{module}", package), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__


class _Deferred:
    """The stand-in :func:`deferred_module` binds (see there)."""

    def __init__(self, name: str, namespace: dict[str, Any]) -> None:
        self._name, self._namespace = name, namespace

    def __getattr__(self, attr: str) -> Any:
        # import_module holds the module's import lock: two threads that get here at once
        # import it once and both rebind the name to the same module.
        module = importlib.import_module(self._name)
        self._namespace[self._name] = module
        return getattr(module, attr)


def deferred_module(name: str, namespace: dict[str, Any]) -> Any:
    """A stand-in for the module ``name``, to bind to that name in ``namespace`` (a module's
    ``globals()``): its first attribute access imports the module and rebinds the name to
    it, so every later use is the module itself, at no cost.

    For a dependency that costs milliseconds to import and that most runs never touch:
    orjson imports uuid, datetime and platform (4 ms), and ``spillscope grep`` on a root
    with nothing to search encodes and decodes no JSON. A top-level name only (``orjson``,
    not ``a.b``); ``sys.modules`` is left alone, so any other ``import`` is as before."""
    return _Deferred(name, namespace)


class _StandIn(types.ModuleType):
    """The module :func:`stand_in` puts in ``sys.modules`` (see there)."""

    def __getattr__(self, attr: str) -> Any:
        # Only what the stand-in lacks comes here (``import name`` reads ``__spec__``, which
        # it has): any other name, ``__file__`` and ``__all__`` too, is the real module's.
        # Once that is imported its namespace is copied in, and later reads find it directly.
        name = self.__name__
        with _STAND_IN_LOCK:
            if sys.modules.get(name) is self:
                del sys.modules[name]
            module = importlib.import_module(name)
            self.__dict__.update({k: v for k, v in module.__dict__.items() if k not in ("__name__", "__spec__")})
        return getattr(module, attr)


_STAND_IN_LOCK = _thread.RLock()  # (threading's own imports are a millisecond)


def stand_in(name: str) -> None:
    """Put a stand-in for the top-level module ``name`` in ``sys.modules`` (unless it is
    imported already): ``import name`` gets it at no cost, and its first attribute read
    imports the real module, which then replaces it in ``sys.modules``.

    For a module that the modules a process needs import, but never use in that run: the
    ``dataclasses`` module imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``:
    10 ms of a 60 ms ``grep``) for one call, a signature made into the docstring of a class
    that has none. Only the CLI's batch commands put one in (``frontends.cli.entry``): a
    library user's process is left as it is."""
    if name in sys.modules or "." in name:
        return
    import importlib.util

    module = _StandIn(name)
    module.__spec__ = importlib.util.find_spec(name)  # what code that asks for the spec sees
    sys.modules[name] = module
