"""The browse tree and the detail panels. Untrusted text always goes through
:func:`safe` (a rich ``Text`` with controls made visible), never through markup."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from ..format import count, human_age, human_size
from ...util.text import visible
from ...inspect.findings import CODES, SEVERITY_RANK, Finding, by_location
from ...inspect.scan import Artifact
from ...inspect.links import ReferenceLink, ToolSpillLink
from ...inspect.verify import Inspection
from ...reference.join import join_offset
from ...spill.naming import session_dir_name

NodeKind = Literal["root", "session", "reference", "tool-spill", "artifact"]

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


@dataclass(frozen=True)
class NodeData:
    kind: NodeKind
    key: str
    obj: Any = None


class BrowseTree(Tree[NodeData]):
    """root → sessions → references, tool spills and artifacts, with finding badges."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("spill root", id=id)
        self.show_root = True
        self.guide_depth = 3
        self._now = time.time()
        self._index: dict[str, list[Finding]] = {}
        #: The user's expansion of session nodes, as last seen in an unfiltered tree: a
        #: filter opens every match, and clearing it goes back to this.
        self._expanded_keys: set[str] = set()
        self._collapsed_keys: set[str] = set()
        self._filtered = False

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
        lazy = total > self.LAZY_LIMIT
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

    def _specs(self, group: dict[str, Any], matches: Callable[[str, list[str]], bool]) -> list[NodeData]:
        """A session's children (references, tool spills, artifacts) that the filter keeps."""
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
        # Zero counts left out: a line short enough to show whole.
        counts = "  " + " · ".join(count(n, what) for n, what in ((len(arts), "artifact"), (len(group["refs"]), "ref"),
                                                                 (len(group["tools"]), "tool spill")) if n)
        # Badges straight after the title: a narrow pane cuts the counts, not the findings.
        return Text.assemble(safe(title, "bold"),
                             badges(session_codes + [c for d in children for c in self._codes(d, self._index)]),
                             (counts, "dim"))

    def _root_label(self, ins: Inspection) -> Text:
        # The root's name only: its full path is in the header, and the tree is as wide as its widest line.
        return Text.assemble((visible(os.path.basename(ins.root.rstrip("/")) or ins.root), "bold"),
                             f"  {count(len(ins.scan.sessions), 'dir')} · ",
                             f"{count(len(ins.scan.artifacts()), 'artifact')} · {count(len(ins.references), 'reference')}")

    def patch(self, ins: Inspection, names: set[str]) -> bool:
        """Bring only the named session dirs' nodes up to date with ``ins`` (a watch's
        change); False when that cannot be done in place (a session dir came or went,
        a filter is on) and :meth:`populate` is needed."""
        if self._filtered:
            return False
        dirs = {s.name: s for s in ins.scan.sessions}
        nodes = {n.data.key: n for n in self.root.children if n.data is not None and n.data.kind == "session"}
        if any(name not in dirs or name not in nodes for name in names):
            return False
        self._now = time.time()
        self._index = by_location(ins.findings)
        selected = self.cursor_node.data.key if self.cursor_node and self.cursor_node.data else None
        target: TreeNode[NodeData] | None = None
        for name in sorted(names):
            node = nodes[name]
            assert node.data is not None
            old = node.data.obj
            group = {"dir": dirs[name], "refs": old["refs"], "tools": old["tools"]}
            children = self._specs(group, lambda text, codes: True)
            sid = ins.session_ids.get(name)
            node.set_label(self._session_label(sid if sid is not None else name, group, children,
                                               [f.code for f in self._index.get(dirs[name].path, [])]))
            built = bool(old.get("built"))
            node.data = NodeData("session", name, {**group, "children": children})
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

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeData]) -> None:
        if event.node.data is not None and event.node.data.kind == "session":
            self._build_leaves(event.node)

    def _label(self, data: NodeData) -> Text:
        index = self._index
        if data.kind == "reference":
            link = data.obj
            return Text.assemble(("↪ ", "cyan"), safe(link.entry.label), badges([f.code for f in link.findings]),
                                 (f"  ({link.status})", "dim"))
        if data.kind == "tool-spill":
            tlink = data.obj
            return Text.assemble(("⚙ ", "green"), safe(tlink.entry.tool_name or "tool"), badges([f.code for f in tlink.findings]),
                                 (f"  {tlink.entry.call_id or ''}", "dim"), (f"  ({tlink.status})", "dim"))
        art = data.obj
        icon = "📄 " if art.kind == "session-reference-transcript" else "▤ " if art.kind == "tool-output" else "? "
        return Text.assemble(icon, safe(art.name), badges([f.code for f in index.get(art.path, [])]),
                             (f"  {human_size(art.size)} · {human_age(self._now - art.mtime)}", "dim"))

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


class ReferencePanel(Horizontal):
    """The preview the model saw, beside its omission notice."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="preview-pane"):
            yield Static(id="preview", markup=False)
        with VerticalScroll(id="notice-pane"):
            yield Static(id="notice", markup=False)

    def show(self, link: ReferenceLink) -> None:
        entry = link.entry
        raw_conv = entry.preview.get("conversation")
        conv: list[Any] = raw_conv if isinstance(raw_conv, list) else []
        parts: list[RenderableType] = [Text.assemble(("Preview — what the model saw", "bold underline"), "\n",
                                                     ("session ", "dim"), safe(entry.session_id), ("   label ", "dim"), safe(entry.label), "\n")]
        sources = link.recomputed.sources if link.recomputed else ()
        joins = link.recomputed.joins if link.recomputed else ()
        for i, item in enumerate(conv):
            role = item.get("role", "?") if isinstance(item, dict) else "?"
            text = item.get("text", "") if isinstance(item, dict) else ""
            src = f" ← message {sources[i]}" if i < len(sources) and sources[i] else ""
            parts.append(Text.assemble((f"\n● {visible(clip(str(role), 200))}{src}\n", "bold cyan")))
            parts.append(preview_text(str(text), joins[i] if i < len(joins) else None) if text
                         else Text("(emptied: all its bytes omitted)", style="italic dim"))
        self.query_one("#preview", Static).update(Group(*parts))
        self.query_one("#notice", Static).update(notice_renderable(link))


def preview_text(text: str, exact_join: int | None) -> Text:
    """A preview message, with ✂ where its middle was cut (head before, tail after).

    The join is exact when the check found it against the transcript; otherwise it is
    estimated from the retention rule and marked ≈✂ (it may be off by a character)."""
    if exact_join is not None:
        at, mark = exact_join, "✂"
    else:
        found = join_offset(text)
        if found is None:
            return safe(text)
        at, mark = found[0], "≈✂"
    return Text.assemble(safe(text[:at]), (mark, "bold reverse"), safe(text[at:]))


def notice_renderable(link: ReferenceLink) -> RenderableType:
    entry = link.entry
    notice = entry.notice
    out: list[RenderableType] = [Text("Omission notice", style="bold underline")]
    if notice is None:
        out.append(Text("\nIntact: nothing omitted, no notice and no saved transcript.", style="green"))
        return Group(*out)
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("field", no_wrap=True, min_width=16)
    table.add_column("logged", no_wrap=True, min_width=6)
    table.add_column("recomputed", no_wrap=True, min_width=10)
    rec = link.recomputed
    stats = entry.stats or {}
    rows = [
        ("omittedMessages", notice.get("omittedMessages"), rec.omitted_messages if rec else None),
        ("omittedBytes", notice.get("omittedBytes"), rec.omitted_bytes if rec else None),
        ("originalMessages", stats.get("originalMessages"), rec.original_messages if rec else None),
        ("retainedMessages", stats.get("retainedMessages"), rec.retained_messages if rec else None),
    ]
    for name, logged, recomputed in rows:
        same = recomputed is None or logged == recomputed
        table.add_row(name, safe(str(logged)), Text("—" if recomputed is None else str(recomputed), style="" if same else "bold red"))
    out.append(table)
    snap = entry.snapshot or {}
    if snap.get("status") == "saved":
        out.append(Text.assemble(("\nlocator  ", "dim"), safe(str(snap.get("locator")))))
        out.append(Text.assemble(("bytes    ", "dim"), safe(str(snap.get("bytes"))),
                                 (f"  (on disk {link.artifact.size})" if link.artifact else "", "dim")))
        out.append(Text.assemble(("hint     ", "dim"), safe(str(snap.get("retrievalHint")))))
        status = {
            "resolves": ("✔ resolves: the artifact is on disk (Enter opens it)", "bold green"),
            "expired": ("✘ EXPIRED: the artifact is gone; the notice remains", "bold white on red"),
            "outside-root": ("⚠ the locator points outside this spill root", "bold yellow"),
            "invalid": ("⚠ the notice is malformed", "bold yellow"),
            "normalized": ("ℹ replay-normalised locator: " + ("matched by name (Enter opens it)" if link.artifact
                                                               else "no single artifact of that name"), "bold cyan"),
            "unverified": ("⚠ UNVERIFIED: the root or session dir cannot be read; the artifact may be there", "bold yellow"),
        }.get(link.status, (link.status, ""))
        out.append(Text("\n" + status[0], style=status[1]))
    else:
        out.append(Text.assemble(("\nfull snapshot unavailable: ", "bold yellow"), safe(str(snap.get("reason")))))
    if link.findings:
        out.append(Text("\nFindings", style="bold underline"))
        for f in link.findings:
            out.append(Text.assemble((f"{f.severity} {f.code}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    return Group(*out)


def artifact_renderable(art: Artifact, findings: list[Finding], session_id: str | None) -> RenderableType:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")  # a long path wraps whole, never cut to "…"
    table.add_row("path", safe(art.path))
    table.add_row("kind", art.kind)
    table.add_row("suggested name", safe(art.suggested_name or "(not an encoded name)"))
    table.add_row("owner session", safe(session_id or f"{art.session_dir} (no log names it)"))
    table.add_row("size", f"{art.size} bytes ({human_size(art.size)})")
    table.add_row("mode", f"{art.mode:04o}")
    table.add_row("age", human_age(time.time() - art.mtime))
    parts: list[RenderableType] = [Text("Artifact", style="bold underline"), table]
    if art.kind != "unknown" and art.is_regular:
        parts.append(Text("\nEnter opens the reader.", style="dim"))
    if findings:
        parts.append(Text("\nFindings", style="bold underline"))
        for f in findings:
            where = f":{f.line}" if f.line is not None else ""
            parts.append(Text.assemble((f"{f.severity} {f.code}{where}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    return Group(*parts)


def tool_spill_renderable(link: ToolSpillLink) -> RenderableType:
    n = link.entry.notice
    parts: list[RenderableType] = [
        Text.assemble(("Tool spill  ", "bold underline"), safe(link.entry.tool_name or "?"), ("  call ", "dim"), safe(link.entry.call_id or "?")),
        Text.assemble(("log      ", "dim"), safe(f"{link.entry.log}:{link.entry.line}")),
        Text.assemble(("omitted  ", "dim"), f"{n.omitted_bytes} bytes" if n.omitted_bytes is not None else n.omitted_kind),
        Text.assemble(("locator  ", "dim"), safe(n.locator)),
        Text.assemble(("status   ", "dim"), (link.status, {"resolves": "bold green", "normalized": "bold cyan"}.get(link.status, "bold white on red"))),
        Text.assemble(("dialect  ", "dim"), n.dialect),
        Text("\nPreview the model saw", style="bold underline"),
        safe(n.preview) if n.preview else Text("(notice only)", style="italic dim"),
    ]
    for f in link.findings:
        parts.append(Text.assemble((f"\n{f.severity} {f.code}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    return Group(*parts)
