"""The key footer, fitted to the terminal: keys that do not fit are left out whole
(never cut mid-word, as Textual's footer cuts "f3 Nex"), and ``? Help`` — which lists
every key — is always among those shown. Separate because every screen has one."""

from __future__ import annotations

from typing import Iterable

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: The key kept whatever the width: it shows every key.
ALWAYS = "help"


def key_width(key: FooterKey, compact: bool) -> int:
    """The cells a key takes in the footer (its CSS: key padded 0 1, description 0 1 0 0;
    compact: no padding, one space, a margin of 1)."""
    if compact:
        return cell_len(key.key_display) + 1 + cell_len(key.description) + 1
    return cell_len(key.key_display) + 2 + cell_len(key.description) + 1


def fitting(keys: list[FooterKey], width: int, compact: bool) -> list[FooterKey]:
    """The keys that fit ``width`` in their order, dropped from the end; the help key stays."""
    kept = list(keys)
    while kept and sum(key_width(k, compact) for k in kept) > width:
        drop = next((k for k in reversed(kept) if k.action != ALWAYS), None)
        if drop is None:
            break
        kept.remove(drop)
    return kept


class FittingFooter(Footer):
    """Textual's footer, with only the keys that fit (see the module)."""

    def compose(self) -> ComposeResult:
        widgets: Iterable[Widget] = super().compose()
        items = list(widgets)
        palette = [w for w in items if isinstance(w, FooterKey) and w.has_class("-command-palette")]
        keys = [w for w in items if isinstance(w, FooterKey) and w not in palette]
        others = [w for w in items if not isinstance(w, FooterKey)]
        if others or not keys:  # grouped keys: laid out as Textual does
            yield from items
            return
        width = self.size.width or self.app.size.width
        # The palette key: its border, key, a space, description and right padding.
        room = width - sum(3 + cell_len(p.key_display) + cell_len(p.description) for p in palette)
        yield from fitting(keys, room + 1, self.compact)  # the last key's right padding may go under it
        yield from palette

    def on_resize(self, event: Resize) -> None:
        self.call_after_refresh(self.recompose)


__all__ = ["FittingFooter", "fitting", "key_width"]
