"""Whether a tree is OpenCode's, from names only: a data dir with ``tool-output/``, ``opencode.db`` or the JSON storage.

Apart from :mod:`.layout` (which scans, links and checks) so that detecting the agent of a
root reads a few directory names and imports nothing of OpenCode's implementation:
``spillscope grep`` on a dsh root pays for no other agent's code.
"""

from __future__ import annotations

import os

TOOL_OUTPUT = "tool-output"
DB = "opencode.db"


def data_dir(tree: str) -> str | None:
    path = os.path.abspath(tree)
    for candidate in (path, os.path.dirname(path)):
        if (os.path.isdir(os.path.join(candidate, TOOL_OUTPUT)) or os.path.isfile(os.path.join(candidate, DB))
                or os.path.isdir(os.path.join(candidate, "storage", "part"))):
            return candidate
    return None


def detect(tree: str) -> float:
    return 0.9 if data_dir(tree) is not None else 0.0
