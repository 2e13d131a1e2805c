"""The browse tree and the detail panels, re-exported from where they live: the tree in
:mod:`.tree`, the panels in :mod:`.panels`, the safe-text helpers in :mod:`.safe_text`.
Untrusted text always goes through :func:`safe` (a rich ``Text`` with controls made
visible), never through markup."""

from __future__ import annotations

from .panels import ReferencePanel, artifact_renderable, notice_renderable, preview_text, tool_spill_renderable
from .safe_text import BADGE_STYLE, SEVERITY_STYLE, SHOWN_MAX, badges, clip, safe
from .tree import BrowseTree, NodeData, NodeKind

__all__ = [
    "BADGE_STYLE", "SEVERITY_STYLE", "SHOWN_MAX", "BrowseTree", "NodeData", "NodeKind", "ReferencePanel",
    "artifact_renderable", "badges", "clip", "notice_renderable", "preview_text", "safe", "tool_spill_renderable",
]
