"""The browse tree: root → sessions → references, tool spills and artifacts, built
from an inspection and patched in place from a watch's changes. Separate from the
detail panels: it owns the tree's nodes, their labels, expansion and cursor."""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from itertools import compress, filterfalse
from dataclasses import dataclass
from typing import Any, Callable, Literal

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ..format import count, human_age, human_size
from ...inspect.findings import SEVERITY_RANK, Finding, by_location
from ...inspect.verify.inspection import Inspection
from ...spill.naming import session_dir_name
from .labels import Extra, FitLabel, FittingTree, one_line

NodeKind = Literal["root", "session", "reference", "tool-spill", "artifact"]


@dataclass(frozen=True)
class NodeData:
    """What a node of the TUI's tree stands for: its kind, its key and the record behind it."""

    kind: NodeKind
    key: str
    obj: Any = None


def _child_name(data: NodeData) -> str:
    return str(data.obj.name)  # an artifact child's file name: they are sorted by it


def _art_name(art: Any) -> str:
    return str(art.name)


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
        #: How sessions and their artifacts are ordered: "name", "size" (largest first), "age" (oldest first).
        self.order_by = "name"
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
        for name in self._ordered(sessions, specs):
            group, children = sessions[name], specs[name]
            sid = ins.session_ids.get(name)
            title = sid if sid is not None else name
            session_codes = [f.code for f in index.get(group["dir"].path, [])] if group["dir"] else []
            if not children and not matches(title, session_codes):
                continue
            label, data = self._session_node(name, title, group, children, session_codes)
            holds_selection = selected is not None and any(d.key == selected for d in children)
            # Small trees open every session the user has not closed; big ones only those
            # the user opened (or that hold the cursor). A filter opens every match.
            open_now = (not lazy and (name not in collapsed or bool(needle or code_filter))) or \
                (lazy and (name in expanded or holds_selection))
            node = self.root.add(label, data, expand=open_now, allow_expand=bool(children))
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

    def _ordered(self, sessions: dict[str, dict[str, Any]], specs: dict[str, list[NodeData]]) -> list[str]:
        """Session names in :attr:`order_by`, each session's artifacts sorted the same way
        (in place in ``specs``): name; size, largest first; age, oldest first."""
        names = sorted(sessions)
        if self.order_by == "name":
            return names

        def arts(name: str) -> list[Any]:
            d = sessions[name]["dir"]
            return d.artifacts if d is not None else []

        if self.order_by == "size":
            key: Callable[[NodeData], Any] = lambda d: -d.obj.size
            names.sort(key=lambda n: -sum(a.size for a in arts(n)))
        else:
            key = lambda d: d.obj.mtime  # noqa: E731
            names.sort(key=lambda n: min((a.mtime for a in arts(n)), default=float("inf")))
        for name in names:
            children = specs[name]
            others = [d for d in children if d.kind != "artifact"]
            files = sorted((d for d in children if d.kind == "artifact"), key=key)  # stable: ties keep name order
            specs[name] = children[:] = others + files
        return names

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

    def _session_node(self, name: str, title: str, group: dict[str, Any], children: list[NodeData],
                      session_codes: list[str]) -> tuple[Text, NodeData]:
        """A session node's label and data, its children's codes kept per child."""
        codes = self._child_codes(children)
        return (self._session_label(title, group, codes, session_codes),
                NodeData("session", name, {**group, "children": children, "codes": codes}))

    def _child_codes(self, children: list[NodeData]) -> dict[str, tuple[str, ...]]:
        """The warning and error codes of a session's children, by key (only children that
        have some): what its badges show, kept per child so that a patch changes only the
        children it touched instead of looking at every child again."""
        index = self._index
        out: dict[str, tuple[str, ...]] = {}
        for d in children:
            codes = self._codes(d, index)
            if codes:
                out[d.key] = tuple(codes)
        return out

    def _session_label(self, title: str, group: dict[str, Any], codes: dict[str, tuple[str, ...]],
                       session_codes: list[str]) -> Text:
        arts = group["dir"].artifacts if group["dir"] else []
        # Zero counts left out; on a narrow line the tool spills' count goes first, the artifacts' last.
        counts = tuple(Extra(count(n, what), rank=rank, group="count") for n, what, rank in (
            (len(arts), "artifact", 2), (len(group["refs"]), "ref", 1), (len(group["tools"]), "tool spill", 0)) if n)
        # The session's bytes stay whole on any width, as each file's size does (none without a dir).
        size = (Extra(human_size(sum(a.size for a in arts))),) if group["dir"] is not None else ()
        return FitLabel(name=title, name_style="bold", extras=counts, kept=size,
                        codes=session_codes + [c for cs in codes.values() for c in cs])

    def _root_label(self, ins: Inspection) -> Text:
        # The root's name only: its full path is in the header, and the tree is as wide as its widest line.
        nbytes = sum(a.size for s in ins.scan.sessions for a in s.artifacts)
        return FitLabel(name=os.path.basename(ins.root.rstrip("/")) or ins.root, name_style="bold",
                        kept=(Extra(human_size(nbytes)),), extras=(
            Extra(count(len(ins.scan.sessions), "dir"), "", 2, "count"),
            Extra(count(len(ins.scan.artifacts()), "artifact"), "", 1, "count"),
            Extra(count(len(ins.references), "reference"), "", 0, "count")))

    def patch(self, ins: Inspection, names: set[str], paths: set[str] | None = None) -> bool:
        """Bring only the named session dirs' nodes up to date with ``ins`` (a watch's
        change, or what a verification changed): each is refreshed, added at its place or
        removed, and the rest of the tree is left as it is. ``paths``: the only artifact
        paths that changed (a watch's patch, see ``inspect.watch.patch.apply_events``): then a
        session's children are patched in place, each changed one added at its sorted
        place, removed or relabelled, instead of rebuilt. False when that cannot be done
        in place (a filter is on) and :meth:`populate` is needed."""
        if self._filtered or self.order_by != "name":
            return False  # a patch inserts at the name-sorted place: another order is rebuilt whole
        self._now = time.time()
        self._index, index_keys = self._updated_index(ins.findings)
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
        # The keys whose artifact or findings changed, by their dir (None: not known, rebuild).
        touched: dict[str, set[str]] | None = None
        if paths is not None and index_keys is not None:
            touched = {}
            for key in paths | index_keys:
                touched.setdefault(os.path.dirname(key), set()).add(key)
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
            sid = ins.session_ids.get(name)
            title = sid if sid is not None else name
            session_codes = [f.code for f in self._index.get(group["dir"].path, [])] if group["dir"] else []
            if node is None:
                # A new session: at its place in the (sorted) list, opened as populate would.
                children = self._specs(group, None)
                label, data = self._session_node(name, title, group, children, session_codes)
                before = next((n for n in self.root.children if n.data is not None and n.data.kind == "session"
                               and n.data.key > name), None)
                open_now = name in self._expanded_keys if self._lazy else name not in self._collapsed_keys
                node = self.root.add(label, data, before=before, expand=open_now, allow_expand=bool(children))
                if open_now:
                    self._build_leaves(node)
                continue
            assert node.data is not None
            old = node.data.obj
            built = bool(old.get("built"))
            if touched is not None and self._same_links(old, group):
                moved = self._patch_children(node, group, sorted(touched.get(group["dir"].path, ())), selected,
                                             title, session_codes)
                target = moved or target
                continue
            children = self._specs(group, None)
            label, node.data = self._session_node(name, title, group, children, session_codes)
            node.set_label(label)
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

    @staticmethod
    def _same_links(old: dict[str, Any], group: dict[str, Any]) -> bool:
        """Whether a shown session's node can be patched child by child into ``group``: the
        same dir (not added, gone or another one), the same references and tool spills
        (a watch's patch keeps those objects), and children made by this code."""
        if old.get("dir") is None or group["dir"] is None or old["dir"].path != group["dir"].path or "codes" not in old:
            return False
        return all(len(a) == len(b) and all(x is y for x, y in zip(a, b))
                   for a, b in ((old["refs"], group["refs"]), (old["tools"], group["tools"])))

    def _patch_children(self, node: TreeNode[NodeData], group: dict[str, Any], keys: list[str],
                        selected: str | None, title: str, session_codes: list[str]) -> TreeNode[NodeData] | None:
        """Patch a session node's artifact children at ``keys`` (sorted: the paths in its
        dir that changed) into ``group``: each is added at its sorted place, removed or
        relabelled, and so is its leaf if the node's leaves are built; the session's label
        is made from the kept per-child codes. Returns where the cursor goes when the
        child it was on went away (its session), else None."""
        assert node.data is not None
        old = node.data.obj
        index = self._index
        children: list[NodeData] = list(old["children"])
        codes: dict[str, tuple[str, ...]] = dict(old["codes"])
        arts = group["dir"].artifacts
        built = bool(old.get("built"))
        first = len(group["refs"]) + len(group["tools"])  # the artifacts follow these, sorted by name
        target: TreeNode[NodeData] | None = None
        for key in keys:
            name = os.path.basename(key)
            i = bisect_left(children, name, lo=first, key=_child_name)
            shown = i < len(children) and children[i].key == key
            j = bisect_left(arts, name, key=_art_name)
            art = arts[j] if j < len(arts) and arts[j].path == key else None
            if art is None:
                if shown:
                    del children[i]
                    codes.pop(key, None)
                    if built:
                        if selected == key:
                            target = node
                        node.children[i].remove()
                continue
            data = children[i] if shown and children[i].obj is art else NodeData("artifact", key, art)
            found = self._codes(data, index)
            if found:
                codes[key] = tuple(found)
            else:
                codes.pop(key, None)
            if shown:
                children[i] = data
                if built:
                    leaf = node.children[i]
                    leaf.data = data
                    leaf.set_label(self._label(data))
            else:
                children.insert(i, data)
                if built:
                    node.add_leaf(self._label(data), data, before=i)
        group = {**group, "children": children, "codes": codes, "built": built}
        node.set_label(self._session_label(title, group, codes, session_codes))
        node.data = NodeData("session", node.data.key, group)
        node.allow_expand = bool(children)
        return target

    def _updated_index(self, findings: list[Finding]) -> tuple[dict[str, list[Finding]], set[str] | None]:
        """``by_location(findings)``, made from the shown index when ``findings`` is the
        indexed list with some of its items left out and new ones at its end (what a
        watch's patch makes of it, see ``inspect.watch.patch.apply_events``): the items are told
        apart by identity, and only the ones that left or came are moved. Rebuilding the
        index took ~20 ms a watch batch on a loaded machine with 5,000 findings (issue 13);
        telling the items apart is done on their ids with C-level passes (``map``,
        ``set``, ``filterfalse``, list equality), not a Python loop over each finding.
        Also returns the keys whose lists changed (None: rebuilt, any may have)."""
        old = self._indexed
        old_ids = list(map(id, old))
        new_ids = list(map(id, findings))
        gone = set(old_ids).difference(new_ids)
        kept = list(filterfalse(gone.__contains__, old_ids)) if gone else old_ids
        came = findings[len(kept):]
        if len(gone) + len(came) > len(findings) // 4 + 16 or new_ids[:len(kept)] != kept:
            self._indexed = list(findings)
            return by_location(findings), None  # not that shape (a pass's result), or most of it changed
        keys: set[str] = set()
        index = self._index  # updated in place: nothing else holds it or its lists
        for f in compress(old, map(gone.__contains__, old_ids)) if gone else ():
            for key in {f.path, f.locator}:
                if key is not None:
                    keys.add(key)
                    at = index[key]
                    del at[next(i for i, g in enumerate(at) if g is f)]
                    if not at:
                        del index[key]
        for key, more in by_location(came).items():
            keys.add(key)
            index.setdefault(key, []).extend(more)
        self._indexed = list(findings)
        return index, keys

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
