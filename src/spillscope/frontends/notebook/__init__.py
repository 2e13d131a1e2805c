"""Rich notebook objects on the inspector core: ``spillscope.open(root, logs)``.

Every object renders as HTML in Jupyter (``_repr_html_``) and as readable text
elsewhere (``__repr__``); ``to_records()`` gives plain dicts for pandas or anything
else. Untrusted text is HTML-escaped with controls made visible. Nothing here needs a
notebook package to import.
"""

from __future__ import annotations

from .agent import AgentInspector, SpillView
from .findings import Findings
from .inspector import Inspector, open
from .reference import Reference
from .render import esc
from .search import SearchResults
from .session import Session
from .stats import StatsView
from .transcript import COLLAPSE_CHARS, TranscriptView

__all__ = ["COLLAPSE_CHARS", "AgentInspector", "Findings", "Inspector", "Reference", "SearchResults", "Session", "SpillView", "StatsView",
           "TranscriptView", "esc", "open"]
