"""OpenCode: the global ``~/.local/share/opencode/tool-output/`` spills, linked from ``opencode.db`` parts."""

from __future__ import annotations

from ..base import LayoutDialect


class OpenCodeDialect(LayoutDialect):
    name = "opencode"
    title = "OpenCode"
    usual_path = "~/.local/share/opencode"
    #: A part (``storage/part/<messageID>/<partID>.json``) names its session here.
    record_session_key = "sessionID"


DIALECT = OpenCodeDialect()
