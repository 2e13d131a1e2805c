"""OpenCode: the global ``~/.local/share/opencode/tool-output/`` spills, linked from ``opencode.db`` parts."""

from __future__ import annotations

from typing import Iterator

from ..base import Dialect, Options, Report, RetentionRule


class OpenCodeDialect(Dialect):
    name = "opencode"
    title = "OpenCode"
    usual_path = "~/.local/share/opencode"

    def detect(self, tree: str) -> float:
        from .layout import data_dir

        return 0.9 if data_dir(tree) is not None else 0.0

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
        # opencode.db is not JSON Lines: grep searches the spill files and the JSON parts.
        yield from ((t.path, "transcript") for t in layout.transcripts if t.path.endswith(".json"))


DIALECT = OpenCodeDialect()
