"""``spillscope serve``: the TUI in a browser tab, through textual-serve, with no internet,
for the operator's own browser only.

Its parts: access.py (who may talk to the server: ``Host``, ``Origin`` and the per-run
token, checked on every request and the WebSocket) and server.py (textual-serve's server
with that check, its page made offline, the run and its clean end). The app process each
tab starts is guarded by ``frontends/webguard.py``; what it may write is the TUI's export
rule (``frontends/tui/export.py``): in a browser, a download, never the server's disk.
"""

from .access import Access
from .server import MISSING_EXTRA, MissingServeExtra, require_textual_serve, serve, stop_children

__all__ = ["Access", "MISSING_EXTRA", "MissingServeExtra", "require_textual_serve", "serve", "stop_children"]
