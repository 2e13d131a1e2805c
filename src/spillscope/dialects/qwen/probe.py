"""Whether a tree is qwen-code's, from names only: a runtime dir (``~/.qwen``) with tool results or chats.

Apart from :mod:`.layout` (which scans, links and checks) so that detecting the agent of a
root reads a few directory names and imports nothing of qwen-code's implementation:
``spillscope grep`` on a dsh root pays for no other agent's code.
"""

from __future__ import annotations

import os


def runtime_base(tree: str) -> str | None:
    """The ``~/.qwen``-like dir ``tree`` is, or is inside (``tmp`` or ``tmp/<hash>``)."""
    path = os.path.abspath(tree)
    for candidate in (path, os.path.dirname(path), os.path.dirname(os.path.dirname(path))):
        tmp = os.path.join(candidate, "tmp")
        if _has_tool_results(tmp) or _has_chats(os.path.join(candidate, "projects")):
            return candidate
    return None


def _has_tool_results(tmp: str) -> bool:
    return _a_child_holds(tmp, "tool-results")


def _has_chats(projects: str) -> bool:
    return _a_child_holds(projects, "chats")


def _a_child_holds(parent: str, name: str) -> bool:
    """Some dir directly under ``parent`` (never through a symlink) holds a dir ``name``."""
    try:
        with os.scandir(parent) as it:
            return any(os.path.isdir(os.path.join(e.path, name)) for e in it if e.is_dir(follow_symlinks=False))
    except OSError:
        return False


def detect(tree: str) -> float:
    return 0.9 if runtime_base(tree) is not None else 0.0
