"""Tree labels that fit their line: a label knows its parts (icon, name, finding badges,
what must stay whole, what may go) and is drawn at whatever width its line has, so a
narrow pane never cuts a badge, a size or a status in the middle.

The rule, applied in order until the line fits (see :meth:`FitLabel.fitted`):

1. drop the *extras* (ages, counts, call ids: the detail pane shows them), least useful first;
2. leave out a status a shown badge already says (``(expired)`` beside ``expired-locator``);
3. shorten the name in its middle (``abcd…wxyz``), down to :data:`NAME_MIN` cells;
4. show the badges by their short names (``expired`` for ``expired-locator``);
5. shorten the name down to :data:`NAME_FLOOR` cells;
6. show as many badges as fit and one ``+N`` badge for the rest (the detail pane lists them all);
7. shorten the name down to "…" alone.

Kept parts (a size, a status) are never shortened. A label is cut only when even step 7
does not fit: a tree narrower than any width spillscope lays out (the tests walk 80 to
200 columns and check it never happens). Separate from the browse tree because it is
layout only: it knows widths and words, not inspections; :class:`FittingTree` draws
these labels for the browse tree and search-all's tree alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.widgets import Tree
from textual.widgets._tree import TOGGLE_STYLE
from textual.widgets.tree import TreeNode

from ...inspect.findings import CODES, SEVERITY_RANK
from ...util.text import visible
from .safe_text import BADGE_STYLE, SEVERITY_STYLE, clip

#: A name is shortened to no fewer cells than this before badges are shortened...
NAME_MIN = 12
#: ...and to no fewer than this before badges are counted as +N (then down to "…" alone).
NAME_FLOOR = 3

#: Each code's short name, for a line too narrow for the full badges (the help names the
#: common ones; the detail pane always shows the full code).
SHORT_CODE = {
    "expired-locator": "expired",
    "bytes-mismatch": "bytes≠",
    "omission-mismatch": "counts≠",
    "malformed-artifact": "malformed",
    "incomplete-artifact": "incomplete",
    "malformed-log": "bad-log",
    "malformed-notice": "bad-notice",
    "orphan-artifact": "orphan",
    "foreign-owner": "foreign",
    "outside-root": "outside",
    "insecure-permissions": "perms",
    "symlink": "symlink",
    "unexpected-entry": "unexpected",
    "unreadable": "unreadable",
    "past-retention": "old",
    "snapshot-unavailable": "no-snapshot",
    "notice-dialect": "dialect",
    "normalized-locator": "normalized",
}

#: A reference's or tool spill's status that a badge already says, by the badge's code.
STATUS_SAID_BY = {
    "expired": "expired-locator",
    "unavailable": "snapshot-unavailable",
    "outside-root": "outside-root",
    "normalized": "normalized-locator",
    "invalid": "malformed-notice",
}


def badge_style(code: str) -> str:
    return BADGE_STYLE.get(code) or SEVERITY_STYLE.get(CODES.get(code, ("",))[0], "reverse")


def _rank(code: str) -> int:
    return SEVERITY_RANK.get(CODES.get(code, ("info", ""))[0], 0)


def one_line(text: str) -> str:
    """Untrusted text for one tree line: controls and line breaks visible, clipped."""
    return visible(clip(text), one_line=True)


def middle(text: str, cells: int, tail_share: float = 0.5) -> str:
    """``text`` in at most ``cells`` cells: its head and tail around "…" when too long,
    the tail ``tail_share`` of what is kept (a file name's tail tells it apart: its
    head is a counter or a hash). Cuts between code points, never inside a wide
    character, and never leaves a combining mark without its base."""
    if cell_len(text) <= cells:
        return text
    if cells <= 1:
        return "…"[:max(cells, 0)]
    room = cells - 1
    head = _head(text, room - int(room * tail_share))
    return head + "…" + _tail(text, room - cell_len(head))


@dataclass(frozen=True)
class Extra:
    """A part after the badges: the lowest ``rank`` goes first when the line is short
    (kept parts never go). Neighbours of one ``group`` are joined by " · "."""

    text: str
    style: str = "dim"
    rank: int = 0
    group: str = ""


class Fitting(Text):
    """A tree label (a rich ``Text`` holding the whole line) that can lay itself out in
    fewer cells; trees draw it with :func:`fitted_label`."""

    def fitted(self, width: int) -> Text:
        return self


def label_room(tree: Tree[Any], node: TreeNode[Any], prefix: str) -> int | None:
    """The cells a node's label has on its line, after its guides and its toggle
    (None: the tree is not laid out yet)."""
    width = tree.scrollable_content_region.width
    if width <= 0:
        return None
    depth, parent = 0, node.parent
    while parent is not None:
        depth, parent = depth + 1, parent.parent
    if not tree.show_root:
        depth -= 1
    return width - depth * tree.guide_depth - cell_len(prefix)


DataT = TypeVar("DataT")


class FittingTree(Tree[DataT]):
    """A Tree that draws each :class:`Fitting` label at the width its line has. It asks
    for the width of its widest *whole* line (CSS bounds it), and never scrolls sideways."""

    def _toggle(self, node: TreeNode[DataT]) -> str:
        return (self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE) if node.allow_expand else ""

    def process_label(self, label: str | Text) -> Text:
        # A Fitting label is one line already (line breaks in it are shown as ␊);
        # Tree's own processing would keep only its first line, as a plain Text.
        return label if isinstance(label, Fitting) else super().process_label(label)

    def render_label(self, node: TreeNode[DataT], base_style: Style, style: Style) -> Text:
        prefix = self._toggle(node)
        label = node._label
        room = label_room(self, node, prefix)
        if isinstance(label, Fitting) and room is not None:
            label = label.fitted(room)
        label = label.copy()
        label.stylize(style)
        return Text.assemble((prefix, base_style + TOGGLE_STYLE), label)

    def get_label_width(self, node: TreeNode[DataT]) -> int:
        return cell_len(self._toggle(node)) + node._label.cell_len

    def get_content_width(self, container: Size, viewport: Size) -> int:
        # Whole lines beside the scrollbar's column (kept even when nothing scrolls).
        return self.virtual_size.width + self.styles.scrollbar_size_vertical


class ContextLabel(Fitting):
    """A search hit's line: ``head before MATCH after``. Narrower, the context shortens
    from its outer ends (``…``), the match stays whole and in view."""

    def __init__(self, head: str, before: str, match: str, after: str, match_style: Style | str) -> None:
        self.head, self.before, self.match, self.after = head, one_line(before), one_line(match), one_line(after)
        self.match_style = match_style
        super().__init__()
        self.append_text(self._assemble(self.before, self.match, self.after))

    def _assemble(self, before: str, match: str, after: str) -> Text:
        return Text.assemble(self.head, before, (match, self.match_style), after)

    def fitted(self, width: int) -> Text:
        if self.cell_len <= width:
            return self
        room = width - cell_len(self.head) - cell_len(self.match)
        if room < 2:
            return self._assemble("", middle(self.match, max(1, width - cell_len(self.head))), "")
        after_room = min(cell_len(self.after), room // 2)
        before_room = room - after_room
        if cell_len(self.before) < before_room:
            before_room = cell_len(self.before)
            after_room = room - before_room
        before = self.before if cell_len(self.before) <= before_room else "…" + _tail(self.before, before_room - 1)
        after = self.after if cell_len(self.after) <= after_room else _head(self.after, after_room - 1) + "…"
        return self._assemble(before, self.match, after)


def _head(text: str, cells: int) -> str:
    out, used = [], 0
    for ch in text:
        used += cell_len(ch)
        if used > cells:
            break
        out.append(ch)
    return "".join(out)


def _tail(text: str, cells: int) -> str:
    out, used = [], 0
    for ch in reversed(text):
        used += cell_len(ch)
        if used > cells:
            break
        out.append(ch)
    while out and cell_len(out[-1]) == 0:
        out.pop()
    return "".join(reversed(out))


class FitLabel(Fitting):
    """A tree label (a rich ``Text`` holding the whole line) that can lay itself out
    narrower: ``icon name badges status kept… extras…``, see the module's rule."""

    def __init__(self, *, icon: tuple[str, str] = ("", ""), name: str, name_style: str = "", tail_share: float = 0.5,
                 codes: list[str] | None = None, status: str = "", kept: tuple[Extra, ...] = (),
                 extras: tuple[Extra, ...] = (), extras_first: bool = False) -> None:
        self.icon = icon
        self.name = one_line(name)
        self.name_style = name_style
        #: How much of a shortened name is its tail (see :func:`middle`).
        self.tail_share = tail_share
        self.codes = sorted(set(codes or []))
        self.status = status
        self.kept = kept
        self.extras = extras
        #: The extras stand before the kept parts (a tool spill's call id before its status).
        self.extras_first = extras_first
        super().__init__()
        self.append_text(self._assemble(self.name, self.codes, False, self.status, extras))

    def _badges(self, codes: list[str], short: bool, more: int) -> Text:
        out = Text()
        for code in codes:
            out.append(" ")
            out.append(f" {SHORT_CODE.get(code, code) if short else code} ", style=badge_style(code))
        if more:
            worst = max((c for c in self.codes if c not in codes), key=_rank)
            out.append(" ")
            out.append(f" +{more} ", style=badge_style(worst))
        return out

    def _assemble(self, name: str, codes: list[str], short: bool, status: str, extras: tuple[Extra, ...],
                  more: int = 0) -> Text:
        out = Text.assemble(self.icon, (name, self.name_style), self._badges(codes, short, more))
        shown_extras = [e for e in self.extras if e in extras]  # in their place, not their rank's
        kept = ([Extra(f"({status})", group="status")] if status else []) + list(self.kept)
        last: Extra | None = None
        for part in (shown_extras + kept if self.extras_first else kept + shown_extras):
            out.append(" · " if last is not None and part.group and last.group == part.group else "  ", "dim")
            out.append(part.text, part.style)
            last = part
        return out

    def fitted(self, width: int) -> Text:
        """The label in at most ``width`` cells, by the module's rule."""
        if self.cell_len <= width:
            return self
        extras = tuple(sorted(self.extras, key=lambda e: -e.rank))
        codes, status, name = self.codes, self.status, self.name

        def fixed(short: bool, status: str, codes: list[str], more: int = 0) -> int:
            return self._assemble("", codes, short, status, (), more).cell_len

        # 1. Extras go, least useful first.
        while extras and self._assemble(name, codes, False, status, extras).cell_len > width:
            extras = extras[:-1]
        if extras:
            return self._assemble(name, codes, False, status, extras)
        # 2. A status a badge says goes; 3. the name shortens to NAME_MIN; 4. short badges.
        steps = [(False, self._unsaid(status)), (True, self._unsaid(status))]
        for short, st in steps:
            room = width - fixed(short, st, codes)
            if room >= min(NAME_MIN, cell_len(name)):
                return self._assemble(middle(name, room, self.tail_share), codes, short, st, ())
        # 5. The name shortens to its floor.
        st = self._unsaid(status)
        room = width - fixed(True, st, codes)
        floor = min(NAME_FLOOR, cell_len(name))
        if room >= floor:
            return self._assemble(middle(name, room, self.tail_share), codes, True, st, ())
        # 6. As many badges as fit, and +N for the rest; the badge that says the status
        # is the last to go (once it is counted, the status is shown again).
        said = STATUS_SAID_BY.get(status)
        ordered = sorted(codes, key=lambda c: (c != said, -_rank(c)))  # then the most severe first
        for keep in range(len(codes) - 1, -1, -1):
            st = "" if said in ordered[:keep] else status
            room = width - fixed(True, st, ordered[:keep], len(codes) - keep)
            if room >= floor:
                return self._assemble(middle(name, room, self.tail_share), ordered[:keep], True, st, (), len(codes) - keep)
        # 7. The name down to "…" alone; narrower than that, the tree cuts the line (no
        # layout spillscope makes is that narrow).
        st = status
        room = width - fixed(True, st, [], len(codes))
        return self._assemble(middle(name, max(1, room), self.tail_share), [], True, st, (), len(codes))

    def _unsaid(self, status: str) -> str:
        """The status, unless a badge on this line already says it."""
        return "" if STATUS_SAID_BY.get(status) in self.codes else status


__all__ = ["NAME_FLOOR", "NAME_MIN", "SHORT_CODE", "STATUS_SAID_BY", "ContextLabel", "Extra", "FitLabel", "Fitting",
           "FittingTree", "badge_style", "label_room", "middle", "one_line"]
