"""Gemini CLI: ``~/.gemini/tmp/<project>/tool-outputs/[session-<id>/]`` spills, ``chats/`` transcripts.

Layout (google-gemini/gemini-cli @5411f113): spill dir ``<projectTempDir>/tool-outputs/``
and, per session, ``tool-outputs/session-<sanitized sessionId>/`` (fileUtils.ts
``saveTruncatedToolOutput``; the masking service writes to the same dir); transcripts
``<projectTempDir>/chats/session-*.jsonl`` (legacy ``.json``), a subagent's under
``chats/<parentSessionId>/`` (services/chatRecordingService.ts 479-519). The notice names its
file by absolute path; it is resolved by the part after ``tool-outputs`` inside the
inspected project dir. Sweep: notice.py's neighbour retention.py.
"""

from __future__ import annotations

from typing import Iterator

from ..base import Dialect, Options, Report, RetentionRule


class GeminiDialect(Dialect):
    name = "gemini"
    title = "Gemini CLI"
    usual_path = "~/.gemini/tmp"

    def detect(self, tree: str) -> float:
        from .layout import project_dirs

        return 0.9 if project_dirs(tree) else 0.0

    def inspect(self, tree: str, options: Options) -> Report:
        from .layout import inspect_tree

        return inspect_tree(tree, options)

    def retention(self, tree: str) -> RetentionRule | None:
        from .layout import retention_rule

        return retention_rule(tree)

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        from .layout import project_dirs, scan

        for p in project_dirs(tree):
            layout = scan(p)
            yield from ((f.path, "spill") for f in layout.files if f.is_regular)
            yield from ((t.path, "transcript") for t in layout.transcripts if t.path.endswith(".jsonl"))


DIALECT = GeminiDialect()
