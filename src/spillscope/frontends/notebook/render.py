"""The shared HTML rendering of the notebook objects: the stylesheet, safe escaping of untrusted
text, finding badges and the wrapper every ``_repr_html_`` returns.

Separate because every view uses them and none owns them."""

from __future__ import annotations

import html

from ...util.text import visible
from ...inspect.findings import Finding

_STYLE = """<style>
.spillscope{font-family:ui-monospace,Menlo,monospace;font-size:12px}
.spillscope table{border-collapse:collapse}
.spillscope td,.spillscope th{border:1px solid #8884;padding:2px 6px;vertical-align:top;text-align:left}
.spillscope .badge{display:inline-block;padding:0 4px;margin:0 2px;border-radius:3px;background:#ddd;color:#000}
.spillscope .error{background:#c62828;color:#fff}.spillscope .warning{background:#f9a825;color:#000}
.spillscope .info{background:#90a4ae;color:#000}
.spillscope .side{display:flex;gap:12px}.spillscope .side>div{flex:1;border:1px solid #8886;padding:6px}
.spillscope pre{white-space:pre-wrap;margin:2px 0}
.spillscope .bad{color:#c62828;font-weight:bold}
.spillscope mark.cut{background:#444;color:#fff;padding:0 2px}
</style>"""


def esc(text: object) -> str:
    """HTML-escape untrusted text, with controls and lone surrogates made visible."""
    return html.escape(visible(str(text)), quote=True)


def _badges(findings: list[Finding]) -> str:
    seen: dict[str, str] = {}
    for f in findings:
        seen.setdefault(f.code, f.severity)
    return "".join(f'<span class="badge {sev}">{esc(code)}</span>' for code, sev in sorted(seen.items()))


def _wrap(body: str) -> str:
    return f'{_STYLE}<div class="spillscope">{body}</div>'
