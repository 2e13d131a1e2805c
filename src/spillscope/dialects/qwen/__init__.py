"""qwen-code: ``~/.qwen/tmp/<sha256(projectRoot)>/tool-results/<callId>.txt`` spills, ``projects/*/chats`` transcripts."""

from __future__ import annotations

from typing import Iterator

from ..base import Dialect, Options, Report, RetentionRule


class QwenDialect(Dialect):
    name = "qwen"
    title = "qwen-code"
    usual_path = "~/.qwen"

    def detect(self, tree: str) -> float:
        from .layout import runtime_base

        return 0.9 if runtime_base(tree) is not None else 0.0

    def inspect(self, tree: str, options: Options) -> Report:
        from .layout import inspect_tree

        return inspect_tree(tree, options)

    def retention(self, tree: str) -> RetentionRule | None:
        from .layout import RULE

        return RULE

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        from .layout import scan

        layout = scan(tree)
        yield from ((f.path, "spill") for f in layout.files if f.is_regular)
        yield from ((t.path, "transcript") for t in layout.transcripts)


DIALECT = QwenDialect()
