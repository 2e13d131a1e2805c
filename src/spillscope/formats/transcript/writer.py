"""The transcript writer: :func:`render_transcript`, byte-identical to the reference writer.

Separate from the parser because writing needs none of the reading machinery (the
preparation path imports only this).
"""

from __future__ import annotations

from typing import Any

from ...util.text import code_point_slices, js_json_string, js_stringify
from .layout import FRAGMENT_CODE_POINTS, INTRO, NOTE_1, NOTE_2, REFERENCE_WARNING, TITLE


def render_transcript(data: dict[str, Any], captured_format_version: int) -> str:
    """The saved full projection, exactly as the reference writer renders it.

    ``data`` holds the preview-data keys (``sessionId``, ``label``, ``cwd``,
    ``capturedThroughSeq``) and the full ``conversation`` of ``{role, text}``.
    """
    capture = {k: v for k, v in data.items() if k != "conversation"}
    capture["capturedFormatVersion"] = captured_format_version
    lines = [TITLE, "", INTRO, REFERENCE_WARNING, "", js_stringify(capture, indent=2), "", NOTE_1, NOTE_2]
    for index, item in enumerate(data.get("conversation", []), start=1):
        lines += ["", f"### Message {index}: {item['role']}", ""]
        lines += [js_json_string(s) for s in code_point_slices(item["text"], FRAGMENT_CODE_POINTS)]
    lines.append("")
    return "\n".join(lines)
