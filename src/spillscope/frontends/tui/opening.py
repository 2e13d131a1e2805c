"""Opening the reader: from a tree node to its artifact (or why there is none), the
document loaded in a worker, and what the model saw worked out after the reader shows.
Separate because it is the one way from the browse into a transcript, with its own
I/O and its own failures (gone, malformed, nothing saved)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from ...inspect.search.seen import reference_seen_ranges
from ...inspect.link.records import ReferenceLink
from .document import open_document
from .reader import ReaderScreen
from .tree import NodeData

if TYPE_CHECKING:
    from textual.app import App

    from ...inspect.verify.inspection import Inspection

    _AppBase = App[None]
else:
    _AppBase = object


class ReaderOpening(_AppBase):
    """Mixin for :class:`~.app.SpillscopeApp`: opens the selected artifact in a reader."""

    if TYPE_CHECKING:  # the app's state and methods this part uses (SpillscopeApp sets and defines them)
        inspection: Inspection | None
        root_path: str
        logs_path: str | None
        export_dir: str | None

        def schedule_rescan(self) -> None: ...

    def open_reader(self, data: NodeData) -> None:
        ins = self.inspection
        if ins is None:
            return
        if data.kind == "reference":
            link: ReferenceLink = data.obj
            if link.artifact is None:
                self.notify("No artifact to open: " + {"expired": "the locator has expired (the artifact is gone)",
                                                        "unavailable": "the notice says no snapshot was saved",
                                                        "unverified": "the root or session dir cannot be read",
                                                        "intact": "nothing was omitted, so nothing was saved"}.get(link.status, link.status),
                            severity="warning")
                return
            art = link.artifact
        elif data.kind == "tool-spill":
            art = data.obj.artifact
            if art is None:
                self.notify("No artifact to open: " + ("the root or session dir cannot be read" if data.obj.status == "unverified"
                                                        else "the locator has expired"), severity="warning")
                return
        elif data.kind == "artifact":
            art = data.obj
        else:
            return
        if not art.is_regular or art.kind == "unknown":
            self.notify("This entry cannot be opened (not a regular artifact file)", severity="warning")
            return
        self.load_reader(art.path, art.kind, art.name)

    @work(thread=True, exclusive=True, group="open")
    def load_reader(self, path: str, kind: str, title: str) -> None:
        try:
            document = open_document(path, kind)
        except FileNotFoundError:
            # Deleted since the last scan: say so, and bring the tree up to date.
            self.call_from_thread(self.notify, f"{title} is gone: it was deleted from the spill root "
                                  "after the last scan (the tree is being refreshed)", severity="warning", timeout=8)
            self.call_from_thread(self.schedule_rescan)
            return
        except Exception as exc:  # a malformed or unreadable artifact shows its error, never crashes
            self.call_from_thread(self.notify, f"cannot open {title}: {exc}", severity="error", timeout=8)
            return
        forbidden = [p for p in (self.root_path, self.logs_path) if p]
        link = self.preview_link(path)
        # The reader opens at once; what the model saw needs a pass over the whole
        # transcript (seconds for a big one), so it follows from a worker.
        screen = ReaderScreen(document, title, None if link else {}, forbidden, self.export_dir)
        self.call_from_thread(self.push_screen, screen)
        if link is not None:
            seen = self.seen_ranges(path, link)
            self.call_from_thread(screen.set_seen, seen)

    def preview_link(self, path: str) -> ReferenceLink | None:
        ins = self.inspection
        return next((l for l in (ins.references if ins else []) if l.artifact is not None and l.artifact.path == path
                     and l.recomputed), None)

    def seen_ranges(self, path: str, link: ReferenceLink) -> dict[int, list[tuple[int, int]] | None]:
        """Per transcript message, the byte ranges the model saw (from the linked preview);
        a message missing from the result was not linked to a preview."""
        conv = link.entry.preview.get("conversation") or []
        return reference_seen_ranges(path, conv, link.recomputed.sources if link.recomputed else ())


__all__ = ["ReaderOpening"]
