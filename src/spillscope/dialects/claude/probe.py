"""Whether a tree is Claude Code's, from names only: the project dirs it holds.

Apart from :mod:`.layout` (which scans and records what a project holds) so that detecting
the agent of a root reads a few directory names and imports nothing of Claude Code's
implementation: ``spillscope grep`` on a dsh root pays for no other agent's code.
"""

from __future__ import annotations

import os
import re

SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
AGENT_LOG = re.compile(r"agent-[0-9A-Za-z_-]+\.jsonl\Z")
TOOL_RESULTS = "tool-results"
SUBAGENTS = "subagents"


def _entries(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _is_session_log(entry: os.DirEntry[str]) -> bool:
    name = entry.name
    if not name.endswith(".jsonl"):
        return False
    return (SESSION_ID.match(name[:-6]) is not None or AGENT_LOG.match(name) is not None) and entry.is_file(
        follow_symlinks=False)


def is_project(path: str) -> bool:
    """``path`` holds a session transcript, or a session dir with tool-results or subagents."""
    for e in _entries(path):
        if _is_session_log(e):
            return True
        if SESSION_ID.match(e.name) and e.is_dir(follow_symlinks=False):
            if any(s.name in (TOOL_RESULTS, SUBAGENTS) for s in _entries(e.path)):
                return True
    return False


def project_dirs(tree: str) -> list[str]:
    """The project dirs in ``tree``: itself, its children (a projects dir), or the children of
    its ``projects`` dir (``~/.claude`` itself)."""
    if is_project(tree):
        return [tree]
    found = [e.path for e in _entries(tree) if e.is_dir(follow_symlinks=False) and is_project(e.path)]
    projects = os.path.join(tree, "projects")
    if not found and os.path.isdir(projects) and not os.path.islink(projects):
        found = [e.path for e in _entries(projects) if e.is_dir(follow_symlinks=False) and is_project(e.path)]
    return found


def detect(tree: str) -> float:
    """1.0 for a ``projects`` dir (or a tree inside ``.claude``) holding project dirs, 0.9 for
    other project dirs, 0 without any."""
    if not project_dirs(tree):
        return 0.0
    return 1.0 if os.path.basename(os.path.abspath(tree)) == "projects" or "/.claude/" in os.path.abspath(tree) else 0.9
