"""The status line: the live watch's state in words ("● live", "stale since",
"ROOT MISSING", "PAUSED") and the shown inspection's counts and verify progress.
Separate because what the line says is the inspector's promise about freshness; it
only reads the app's state, it never changes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from textual.css.query import NoMatches
from textual.widgets import Static

from ..format import count
from ...inspect.verify.coverage import NOTHING_CHECKED, nothing_checked

if TYPE_CHECKING:
    from textual.app import App
    from textual.reactive import reactive

    from ...inspect.verify.inspection import Inspection

    _AppBase = App[None]
else:
    _AppBase = object  # a plain mixin at run time: App comes once, in SpillscopeApp's bases


class StatusLine(_AppBase):
    """Mixin for :class:`~.app.SpillscopeApp`: writes the ``#status`` line."""

    if TYPE_CHECKING:  # the app's state and methods this part uses (SpillscopeApp sets and defines them)
        paused: reactive[bool] = reactive(False)
        root_missing: reactive[bool] = reactive(False)
        inspection: Inspection | None
        verified: bool
        verify_progress: float | None
        watch_enabled: bool
        pending_changes: int
        watch_state: str
        watch_detail: str | None
        watch_since: str

    def closing(self) -> bool:
        """True once the app exits: its widgets are going, and what a pass or the watch
        still reports has nothing to be drawn on (it is dropped, not raised into the
        worker). A widget missing while the app runs is a bug, and raises."""
        return bool(getattr(self, "_exit", False)) or not self.is_running

    def show_verify_progress(self, share: float) -> None:
        if not self.verified:
            self.verify_progress = share
            self.update_status()

    def update_status(self) -> None:
        ins = self.inspection
        # The watch's state first: a narrow terminal cuts the line's end.
        parts = [self.watch_status()] if self.watch_enabled else []
        if self.root_missing and not self.watch_enabled:
            parts.append("⚠ ROOT MISSING — r rescans")
        if ins is not None:
            summary = ins.summary()
            reason = nothing_checked(ins)
            parts.append(f"{count(len(ins.scan.artifacts()), 'artifact')} · {count(len(ins.references), 'reference')} · "
                         + (", ".join(f"{k} {v}" for k, v in summary.items()) or "no findings")
                         # "no findings" from checking nothing is not a pass: say so, and why.
                         + ("" if reason is None else f" · ⚠ no notice checked: {NOTHING_CHECKED[reason]}")
                         + ("" if self.verified else " · verifying…"
                            + (f" {self.verify_progress:.0%}" if self.verify_progress is not None else "")))
        text = "  ·  ".join(parts)
        try:
            status = self.query_one("#status", Static)
        except NoMatches:
            if self.closing():
                return
            raise
        shown = status.content
        if shown == text:
            return
        # A line that fits before and after keeps its height (one line): then the update
        # skips the layout, which would lay the whole screen out again on every watch batch.
        width = status.content_region.width
        fits = width > 0 and all(isinstance(t, str) and "\n" not in t and cell_len(t) <= width for t in (text, shown))
        status.update(text, layout=not fits)

    def watch_status(self) -> str:
        """The watch's part of the status line: "● live" only while changes are followed,
        and always what ``r`` will do."""
        detail = f" ({self.watch_detail})" if self.watch_detail else ""
        if self.watch_state == "missing":
            text = f"⚠ ROOT MISSING since {self.watch_since}{detail}, waiting for it · r rescans now"
        elif self.watch_state == "stale":
            text = f"⚠ stale since {self.watch_since}{detail} · r rescans and restarts the watch"
        elif self.paused:
            return ("⏸ PAUSED" + (f" ({self.pending_changes} changes waiting)" if self.pending_changes else "")
                    + " · p resumes · r rescans now")
        elif self.watch_state == "starting":
            return "○ starting the watch… · r rescans"
        else:
            return "● live · r rescans"
        return text + (" · ⏸ PAUSED" if self.paused else "")


__all__ = ["StatusLine"]
