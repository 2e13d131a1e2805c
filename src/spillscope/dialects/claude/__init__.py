"""Claude Code: ``~/.claude/projects/<project>/<sessionId>/tool-results/`` spills (real sessions are the contract)."""

from __future__ import annotations

import os
from typing import Iterator

from ..base import Dialect, Options, Report, RetentionRule


class ClaudeDialect(Dialect):
    name = "claude"
    title = "Claude Code"
    usual_path = "~/.claude/projects"

    def detect(self, tree: str) -> float:
        from .layout import project_dirs

        if not project_dirs(tree):
            return 0.0
        return 1.0 if os.path.basename(os.path.abspath(tree)) == "projects" or "/.claude/" in os.path.abspath(tree) else 0.9

    def inspect(self, tree: str, options: Options) -> Report:
        from .verify import inspect_tree

        return inspect_tree(tree, options)

    def retention(self, tree: str) -> RetentionRule | None:
        from .retention import retention_rule

        return retention_rule(tree)

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        from .layout import project_dirs, scan_project

        for path in project_dirs(tree):
            p = scan_project(path)
            for f in p.files:
                if f.is_regular:
                    yield f.path, "spill"
            for t in p.transcripts:
                yield t.path, "transcript"


DIALECT = ClaudeDialect()
