"""The browse tree: root → sessions → references, tool spills and artifacts, built
from an inspection and patched in place from a watch's changes. Separate from the
detail panels: it owns the tree's nodes, their labels, expansion and cursor."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..format import count, human_age, human_size
from ...inspect.findings import SEVERITY_RANK, Finding, by_location
from ...inspect.verify import Inspection
from ...spill.naming import session_dir_name
from .labels import Extra, FitLabel, FittingTree, one_line

NodeKind = Literal["root", "session", "reference", "tool-spill", "artifact"]


@dataclass(frozen=True)
class NodeData:
    kind: NodeKind
    key: str
    obj: Any = None


class BrowseTree(FittingTree[NodeData]):
    """root → sessions → references, tool spills and artifacts, with finding badges."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("spill root", id=id)
        self.show_root = True
        self.guide_depth = 3
        self._now = time.time()
        self._index: dict[str, list[Finding]] = {}
        #: The findings ``_index`` was made from (see :meth:`_updated_index`).
        self._indexed: list[Finding] = []
        #: The user's expansion of session nodes, as last seen in an unfiltered tree: a
        #: filter opens every match, and clearing it goes back to this.
        self._expanded_keys: set[str] = set()
        self._collapsed_keys: set[str] = set()
        self._filtered = False
        #: The last populate found the tree too big to open every session (see LAZY_LIMIT).
        self._lazy = False

    #: Above this many items in the tree, sessions open collapsed and build their
    #: children when expanded (a 100k-artifact root stays responsive).
    LAZY_LIMIT = 2000

    def populate(self, ins: Inspection, text_filter: str = "", code_filter: str | None = None) -> None:
        """Rebuild from an inspection, keeping the cursor on the same item when it still exists."""
        selected = self.cursor_node.data.key if self.cursor_node and self.cursor_node.data else None
        if not self._filtered:
            sessions_now = [n for n in self.root.children if n.data and n.data.kind == "session"]
            self._expanded_keys = {n.data.key for n in sessions_now if n.data and n.is_expanded}
            self._collapsed_keys = {n.data.key for n in sessions_now if n.data and not n.is_expanded}
        expanded, collapsed = self._expanded_keys, self._collapsed_keys
        self._filtered = bool(text_filter or code_filter)
        self._now = time.time()
        self._index = index = by_location(ins.findings)
        self._indexed = list(ins.findings)
        needle = text_filter.casefold()

        def matches(text: str, codes: list[str]) -> bool:
            return (not needle or needle in text.casefold()) and (code_filter is None or code_filter in codes)

        self.clear()
        self.root.set_label(self._root_label(ins))
        self.root.data = NodeData("root", "root", ins)
        sessions: dict[str, dict[str, Any]] = {}
        for s in ins.scan.sessions:
            sessions[s.name] = {"dir": s, "refs": [], "tools": []}
        for link in ins.references:
            sessions.setdefault(session_dir_name(link.entry.target_session), {"dir": None, "refs": [], "tools": []})["refs"].append(link)
        for tlink in ins.tool_spills:
            sessions.setdefault(session_dir_name(tlink.entry.target_session), {"dir": None, "refs": [], "tools": []})["tools"].append(tlink)
        # Children as light specs first; labels (the costly part) only for what is shown.
        specs: dict[str, list[NodeData]] = {}
        total = 0
        for name, group in sessions.items():
            specs[name] = kept = self._specs(group, matches)
            total += len(kept)
        lazy = self._lazy = total > self.LAZY_LIMIT
        target: TreeNode[NodeData] | None = None
        for name in sorted(sessions):
            group, children = sessions[name], specs[name]
            sid = ins.session_ids.get(name)
            title = sid if sid is not None else name
            session_codes = [f.code for f in index.get(group["dir"].path, [])] if group["dir"] else []
            if not children and not matches(title, session_codes):
                continue
            label = self._session_label(title, group, children, session_codes)
            holds_selection = selected is not None and any(d.key == selected for d in children)
            # Small trees open every session the user has not closed; big ones only those
            # the user opened (or that hold the cursor). A filter opens every match.
            open_now = (not lazy and (name not in collapsed or bool(needle or code_filter))) or \
                (lazy and (name in expanded or holds_selection))
            node = self.root.add(label, NodeData("session", name, {**group, "children": children}),
                                 expand=open_now, allow_expand=bool(children))
            if selected == name:
                target = node
            if open_now:
                found = self._build_leaves(node)
                target = target or (found.get(selected) if selected else None)
        self.root.expand()
        if target is not None:
            # Lay the new lines out now (Tree builds them lazily) and move the cursor in
            # this same update: deferred, the old cursor line would point at whatever item
            # took its place, and a key pressed meanwhile would act on that item.
            self._tree_lines  # noqa: B018
            self.move_cursor(target)

    def _specs(self, group: dict[str, Any], matches: Callable[[str, list[str]], bool] | None) -> list[NodeData]:
        """A session's children (references, tool spills, artifacts) that the filter keeps
        (``None``: no filter, every one, without building the text a filter looks at)."""
        if matches is None:
            return [*(NodeData("reference", f"ref:{link.entry.log}:{link.entry.line}:{link.entry.index}", link)
                      for link in group["refs"]),
                    *(NodeData("tool-spill", f"tool:{tlink.entry.log}:{tlink.entry.line}", tlink) for tlink in group["tools"]),
                    *(NodeData("artifact", art.path, art) for art in (group["dir"].artifacts if group["dir"] else []))]
        index = self._index
        kept: list[NodeData] = []
        for link in group["refs"]:
            if matches(f"{link.entry.label} {link.entry.session_id} {link.entry.locator or ''}", [f.code for f in link.findings]):
                kept.append(NodeData("reference", f"ref:{link.entry.log}:{link.entry.line}:{link.entry.index}", link))
        for tlink in group["tools"]:
            if matches(f"{tlink.entry.tool_name} {tlink.entry.locator}", [f.code for f in tlink.findings]):
                kept.append(NodeData("tool-spill", f"tool:{tlink.entry.log}:{tlink.entry.line}", tlink))
        for art in group["dir"].artifacts if group["dir"] else []:
            if matches(f"{art.name} {art.kind}", [f.code for f in index.get(art.path, [])]):
                kept.append(NodeData("artifact", art.path, art))
        return kept

    def _session_label(self, title: str, group: dict[str, Any], children: list[NodeData], session_codes: list[str]) -> Text:
        arts = group["dir"].artifacts if group["dir"] else []
        # Zero counts left out; on a narrow line the tool spills' count goes first, the artifacts' last.
        counts = tuple(Extra(count(n, what), rank=rank, group="count") for n, what, rank in (
            (len(arts), "artifact", 2), (len(group["refs"]), "ref", 1), (len(group["tools"]), "tool spill", 0)) if n)
        return FitLabel(name=title, name_style="bold", extras=counts,
                        codes=session_codes + [c for d in children for c in self._codes(d, self._index)])

    def _root_label(self, ins: Inspection) -> Text:
        # The root's name only: its full path is in the header, and the tree is as wide as its widest line.
        return FitLabel(name=os.path.basename(ins.root.rstrip("/")) or ins.root, name_style="bold", extras=(
            Extra(count(len(ins.scan.sessions), "dir"), "", 2, "count"),
            Extra(count(len(ins.scan.artifacts()), "artifact"), "", 1, "count"),
            Extra(count(len(ins.references), "reference"), "", 0, "count")))

    def patch(self, ins: Inspection, names: set[str]) -> bool:
        """Bring only the named session dirs' nodes up to date with ``ins`` (a watch's
        change, or what a verification changed): each is refreshed, added at its place or
        removed, and the rest of the tree is left as it is. False when that cannot be done
        in place (a filter is on) and :meth:`populate` is needed."""
        if self._filtered:
            return False
        self._now = time.time()
        self._index = self._updated_index(ins.findings)
        groups: dict[str, dict[str, Any]] = {s.name: {"dir": s, "refs": [], "tools": []}
                                             for s in ins.scan.sessions if s.name in names}
        for link in ins.references:
            name = session_dir_name(link.entry.target_session)
            if name in names:
                groups.setdefault(name, {"dir": None, "refs": [], "tools": []})["refs"].append(link)
        for tlink in ins.tool_spills:
            name = session_dir_name(tlink.entry.target_session)
            if name in names:
                groups.setdefault(name, {"dir": None, "refs": [], "tools": []})["tools"].append(tlink)
        nodes = {n.data.key: n for n in self.root.children if n.data is not None and n.data.kind == "session"}
        selected = self.cursor_node.data.key if self.cursor_node and self.cursor_node.data else None
        target: TreeNode[NodeData] | None = None
        for name in sorted(names):
            node = nodes.get(name)
            group = groups.get(name)
            if group is None:  # nothing of it is left: its dir is gone and no log names it
                if node is not None:
                    node.remove()
                continue
            children = self._specs(group, None)
            sid = ins.session_ids.get(name)
            label = self._session_label(sid if sid is not None else name, group, children,
                                        [f.code for f in self._index.get(group["dir"].path, [])] if group["dir"] else [])
            data = NodeData("session", name, {**group, "children": children})
            if node is None:
                # A new session: at its place in the (sorted) list, opened as populate would.
                before = next((n for n in self.root.children if n.data is not None and n.data.kind == "session"
                               and n.data.key > name), None)
                open_now = name in self._expanded_keys if self._lazy else name not in self._collapsed_keys
                node = self.root.add(label, data, before=before, expand=open_now, allow_expand=bool(children))
                if open_now:
                    self._build_leaves(node)
                continue
            assert node.data is not None
            built = bool(node.data.obj.get("built"))
            node.set_label(label)
            node.data = data
            node.allow_expand = bool(children)
            if built:
                had_cursor = selected is not None and any(c.data is not None and c.data.key == selected for c in node.children)
                node.remove_children()
                found = self._build_leaves(node)
                if had_cursor:
                    target = found.get(selected or "", node)
        self.root.data = NodeData("root", "root", ins)
        self.root.set_label(self._root_label(ins))
        if target is not None:
            self._tree_lines  # noqa: B018 - lay out now, then move (see populate)
            self.move_cursor(target)
        return True

    def _updated_index(self, findings: list[Finding]) -> dict[str, list[Finding]]:
        """``by_location(findings)``, made from the shown index when ``findings`` is the
        indexed list with some of its items left out and new ones at its end (what a
        watch's patch makes of it, see ``livepatch.apply_events``): the items are told
        apart by identity, and only the ones that left or came are moved. Rebuilding the
        index took ~20 ms a watch batch on a loaded machine with 5,000 findings (issue 13)."""
        old = self._indexed
        new_ids = {id(f) for f in findings}
        kept = [f for f in old if id(f) in new_ids]
        came = findings[len(kept):]
        if len(old) - len(kept) + len(came) > len(findings) // 4 + 16 \
                or not all(a is b for a, b in zip(kept, findings)):
            index = by_location(findings)  # not that shape (a pass's result), or most of it changed
        else:
            index = self._index  # updated in place: nothing else holds it or its lists
            for f in old if len(kept) < len(old) else ():
                if id(f) in new_ids:
                    continue
                for key in {f.path, f.locator}:
                    if key is not None:
                        at = index[key]
                        del at[next(i for i, g in enumerate(at) if g is f)]
                        if not at:
                            del index[key]
            for key, more in by_location(came).items():
                index.setdefault(key, []).extend(more)
        self._indexed = list(findings)
        return index

    def _build_leaves(self, node: TreeNode[NodeData]) -> dict[str, TreeNode[NodeData]]:
        """Create a session node's leaves (once); returns them by key."""
        assert node.data is not None
        group = node.data.obj
        if group.get("built"):
            return {}
        group["built"] = True
        leaves: dict[str, TreeNode[NodeData]] = {}
        for data in group["children"]:
            leaves[data.key] = node.add_leaf(self._label(data), data)
        return leaves

    #: Seconds between re-labellings of the shown artifacts' ages: an age drawn once
    #: ("2s") would otherwise go on saying so long after it stopped being true.
    AGE_REFRESH = 15.0

    def on_mount(self) -> None:
        self.set_interval(self.AGE_REFRESH, self.refresh_ages)

    def refresh_ages(self, now: float | None = None) -> None:
        """Re-label the built artifact leaves whose age, as shown, has changed."""
        self._now = time.time() if now is None else now
        stack = list(self.root.children)
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            data = node.data
            if data is not None and data.kind == "artifact":
                label = self._label(data)
                if label.plain != node._label.plain:
                    node.set_label(label)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        if event.node.data is not None and event.node.data.kind == "session":
            self._build_leaves(event.node)

    def _label(self, data: NodeData) -> Text:
        index = self._index
        if data.kind == "reference":
            link = data.obj
            return FitLabel(icon=("↪ ", "cyan"), name=link.entry.label, codes=[f.code for f in link.findings],
                            status=link.status)
        if data.kind == "tool-spill":
            tlink = data.obj
            return FitLabel(icon=("⚙ ", "green"), name=tlink.entry.tool_name or "tool", codes=[f.code for f in tlink.findings],
                            status=tlink.status, extras=(Extra(one_line(tlink.entry.call_id or "")),) if tlink.entry.call_id else (),
                            extras_first=True)
        art = data.obj
        icon = "📄 " if art.kind == "session-reference-transcript" else "▤ " if art.kind == "tool-output" else "? "
        # A shortened file name keeps more of its tail: its head is a counter or hash.
        return FitLabel(icon=(icon, ""), name=art.name, tail_share=0.7, codes=[f.code for f in index.get(art.path, [])],
                        kept=(Extra(human_size(art.size), group="file"),),
                        extras=(Extra(human_age(self._now - art.mtime), group="file"),))

    def session_findings(self, data: NodeData) -> list[Finding]:
        """The findings a session's badges stand for: its dir's own, and its children's
        warnings and errors (as :meth:`_session_label` shows them)."""
        group = data.obj
        own = list(self._index.get(group["dir"].path, [])) if group["dir"] else []
        for child in group["children"]:
            found = child.obj.findings if child.kind in ("reference", "tool-spill") else self._index.get(child.key, [])
            own += [f for f in found if SEVERITY_RANK[f.severity] >= 1]
        return own

    @staticmethod
    def _codes(data: NodeData, index: dict[str, list[Finding]]) -> list[str]:
        if data.kind in ("reference", "tool-spill"):
            return [f.code for f in data.obj.findings if SEVERITY_RANK[f.severity] >= 1]
        if data.kind == "artifact":
            return [f.code for f in index.get(data.key, []) if SEVERITY_RANK[f.severity] >= 1]
        return []

    def _all_nodes(self) -> list[TreeNode[NodeData]]:
        out: list[TreeNode[NodeData]] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(node.children)
        return out



__all__ = ["BrowseTree", "NodeData", "NodeKind"]
