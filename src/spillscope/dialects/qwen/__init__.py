"""qwen-code: ``~/.qwen/tmp/<sha256(projectRoot)>/tool-results/<callId>.txt`` spills, ``projects/*/chats`` transcripts."""

from __future__ import annotations

from ..base import LayoutDialect


class QwenDialect(LayoutDialect):
    name = "qwen"
    title = "qwen-code"
    usual_path = "~/.qwen"
    #: Every chat record carries it (the chat file is named by it too).
    record_session_key = "sessionId"


DIALECT = QwenDialect()
