"""Gemini CLI: ``~/.gemini/tmp/<project>/tool-outputs/[session-<id>/]`` spills, ``chats/`` transcripts.

Layout (google-gemini/gemini-cli @5411f113): spill dir ``<projectTempDir>/tool-outputs/``
and, per session, ``tool-outputs/session-<sanitized sessionId>/`` (fileUtils.ts
``saveTruncatedToolOutput``; the masking service writes to the same dir); transcripts
``<projectTempDir>/chats/session-*.jsonl`` (legacy ``.json``), a subagent's under
``chats/<parentSessionId>/`` (services/chatRecordingService.ts 479-519). The notice names its
file by absolute path; it is resolved by the part after ``tool-outputs`` inside the
inspected project dir. The notices are in notice.py; layout, sweep and detection in layout.py.
"""

from __future__ import annotations

from ..base import LayoutDialect


class GeminiDialect(LayoutDialect):
    name = "gemini"
    title = "Gemini CLI"
    usual_path = "~/.gemini/tmp"
    #: The chat's first record (its file name holds only the id's first 8 characters).
    record_session_key = "sessionId"


DIALECT = GeminiDialect()
