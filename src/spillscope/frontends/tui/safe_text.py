"""Safe text for the TUI's panels and trees: untrusted strings as inert rich ``Text``
(no markup, controls visible, clipped) and the finding badges. Separate because every
view (tree, panels, search) shows untrusted text, and all of it goes through here."""

from __future__ import annotations

from rich.text import Text

from ...util.text import visible
from ...inspect.findings import CODES

BADGE_STYLE = {
    "expired-locator": "bold white on red",
    "bytes-mismatch": "black on yellow",
    "omission-mismatch": "black on yellow",
    "malformed-artifact": "bold white on magenta",
    "incomplete-artifact": "black on dark_orange",
    "insecure-permissions": "black on yellow",
    "symlink": "bold white on magenta",
    "unreadable": "bold white on red",
    "foreign-owner": "bold white on red",
}
#: Codes without a style of their own look like their severity.
SEVERITY_STYLE = {"error": "bold white on red", "warning": "black on yellow", "info": "reverse"}


#: The most of one untrusted string a panel shows: a 60 MB preview message or label must
#: not be laid out whole in a widget (the reader pages through artifacts of any size).
SHOWN_MAX = 1 << 16


def clip(text: str, limit: int = SHOWN_MAX) -> str:
    """``text``, or its head and tail with a note of how much between is not shown."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} more characters not shown here …]\n{text[-half:]}"


def safe(text: str, style: str = "") -> Text:
    """Untrusted text as an inert rich Text: no markup, controls visible, clipped."""
    return Text(visible(clip(text)), style=style, no_wrap=False)


def badges(codes: list[str]) -> Text:
    out = Text()
    for code in sorted(set(codes)):
        out.append(" ")
        out.append(f" {code} ", style=BADGE_STYLE.get(code) or SEVERITY_STYLE.get(CODES.get(code, ("",))[0], "reverse"))
    return out


__all__ = ["BADGE_STYLE", "SEVERITY_STYLE", "SHOWN_MAX", "badges", "clip", "safe"]
