"""Whether a tree is Gemini CLI's, from names only: the project temp dirs it holds.

Apart from :mod:`.layout` (which scans, links and checks) so that detecting the agent of a
root reads a few directory names and imports nothing of Gemini CLI's implementation:
``spillscope grep`` on a dsh root pays for no other agent's code.
"""

from __future__ import annotations

import os

TOOL_OUTPUTS = "tool-outputs"
CHATS = "chats"


def _is_project(path: str) -> bool:
    return os.path.isdir(os.path.join(path, TOOL_OUTPUTS)) or _has_chats(path)


def _has_chats(path: str) -> bool:
    try:
        with os.scandir(os.path.join(path, CHATS)) as it:
            return any(e.name.startswith("session-") and e.name.endswith((".json", ".jsonl")) for e in it)
    except OSError:
        return False


def project_dirs(tree: str) -> list[str]:
    """A project temp dir, the ``tmp`` dir of them, or ``~/.gemini`` (its ``tmp``)."""
    if _is_project(tree):
        return [tree]
    base = os.path.join(tree, "tmp") if os.path.isdir(os.path.join(tree, "tmp")) else tree
    try:
        with os.scandir(base) as it:
            return sorted(e.path for e in it if e.is_dir(follow_symlinks=False) and _is_project(e.path))
    except OSError:
        return []


def detect(tree: str) -> float:
    return 0.9 if project_dirs(tree) else 0.0
