"""qwen-code: ``~/.qwen/tmp/<sha256(projectRoot)>/tool-results/<callId>.txt`` spills, ``projects/*/chats`` transcripts."""

from __future__ import annotations

from ..base import LayoutDialect


class QwenDialect(LayoutDialect):
    name = "qwen"
    title = "qwen-code"
    usual_path = "~/.qwen"


DIALECT = QwenDialect()
