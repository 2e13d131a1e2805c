"""Claude Code: ``~/.claude/projects/<project>/<sessionId>/tool-results/`` spills (real sessions are the contract)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from ..base import Dialect

if TYPE_CHECKING:  # the records load when an inspection makes them, not to detect a tree
    from ..records import Options, Report, RetentionRule


class ClaudeDialect(Dialect):
    name = "claude"
    title = "Claude Code"
    usual_path = "~/.claude/projects"
    #: Every record carries it; an older subagent's ``agent-<id>.jsonl`` is named by nothing else.
    record_session_key = "sessionId"

    def detect(self, tree: str) -> float:
        from .probe import detect  # names only: no scanning or checking code for a tree that is not Claude's

        return detect(tree)

    def inspect(self, tree: str, options: Options) -> Report:
        from .verify import inspect_tree

        return inspect_tree(tree, options)

    def retention(self, tree: str) -> RetentionRule | None:
        from .retention import retention_rule

        return retention_rule(tree)

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        from .layout import scan_project
        from .probe import project_dirs

        found: list[tuple[str, str]] = []
        for path in project_dirs(tree):
            p = scan_project(path)
            found.extend((f.path, "spill") for f in p.files if f.is_regular)
            found.extend((t.path, "transcript") for t in p.transcripts)
        return iter(sorted(found))


DIALECT = ClaudeDialect()
