"""The detail panels: a reference's preview beside its omission notice, an artifact's
facts, a tool spill's notice. Separate from the tree: these only render what the
selected node holds (data flows down), they never change the browse."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Static

from ..format import count, human_age, human_size
from ...util.text import visible
from ...inspect.findings import CODES, Finding
from ...inspect.scan.tree import Artifact
from ...inspect.link.records import ReferenceLink, ToolSpillLink
from ...reference.join import join_offset
from .labels import badge_style, one_line
from .safe_text import BADGE_STYLE, BreakableText, breakable, clip, safe


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
        self.query_one("#preview", Static).update(breakable(*parts))
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


#: A reference's verdict: what its locator's state means, said first.
VERDICT = {
    "resolves": ("✔ resolves: the artifact is on disk (Enter opens it)", "bold green"),
    "expired": ("✘ EXPIRED: the artifact is gone; the notice remains", "bold white on red"),
    "outside-root": ("⚠ the locator points outside this spill root", "bold yellow"),
    "invalid": ("⚠ the notice is malformed", "bold yellow"),
    "unverified": ("⚠ UNVERIFIED: the root or session dir cannot be read; the artifact may be there", "bold yellow"),
}


def notice_renderable(link: ReferenceLink) -> RenderableType:
    """The verdict first, then the facts it rests on (bytes, hint, locator), the findings
    and the count table: at 80×24 the pane shows a few lines, and they must say whether the
    reference resolves without scrolling (issue 27)."""
    entry = link.entry
    notice = entry.notice
    if notice is None:
        return breakable(Text("✔ intact: nothing omitted, no notice and no saved transcript", style="bold green"),
                         Text("\nOmission notice: none", style="dim"))
    out: list[RenderableType] = []
    snap = entry.snapshot or {}
    if snap.get("status") == "saved":
        if link.status == "normalized":
            verdict = ("ℹ replay-normalised locator: " + ("matched by name (Enter opens it)" if link.artifact
                                                           else "no single artifact of that name"), "bold cyan")
        else:
            verdict = VERDICT.get(link.status, (link.status, ""))
        out.append(Text(verdict[0], style=verdict[1]))
        out.append(Text.assemble(("bytes    ", "dim"), safe(str(snap.get("bytes"))),
                                 (f"  (on disk {link.artifact.size})" if link.artifact else "", "dim")))
        out.append(Text.assemble(("hint     ", "dim"), safe(str(snap.get("retrievalHint")))))
        out.append(Text.assemble(("locator  ", "dim"), safe(str(snap.get("locator")))))
    else:
        out.append(Text.assemble(("full snapshot unavailable: ", "bold yellow"), safe(str(snap.get("reason")))))
    for f in link.findings:
        out.append(Text.assemble((f"{f.severity} {f.code}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    out.append(Text("\nOmission notice", style="bold underline"))
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
    return breakable(*out)


def artifact_renderable(art: Artifact, findings: list[Finding], session_id: str | None) -> RenderableType:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="dim", no_wrap=True)
    table.add_column(overflow="fold")  # a long path wraps whole, never cut to "…"
    rows: list[tuple[str, Text]] = [
        ("path", safe(art.path)),
        ("kind", Text(art.kind)),
        ("suggested name", safe(art.suggested_name or "(not an encoded name)")),
        ("owner session", safe(session_id or f"{art.session_dir} (no log names it)")),
        ("size", Text(f"{art.size} bytes ({human_size(art.size)})")),
        ("mode", Text(f"{art.mode:04o}")),
        ("age", Text(human_age(time.time() - art.mtime))),
    ]
    for name, value in rows:  # every value wraps at words and separators ("…-transcript" never as "transcri|pt")
        table.add_row(name, BreakableText.of(value))
    parts: list[RenderableType] = [Text("Artifact", style="bold underline"), table]
    if art.kind != "unknown" and art.is_regular:
        parts.append(Text("\nEnter opens the reader.", style="dim"))
    if findings:
        parts.append(Text("\nFindings", style="bold underline"))
        for f in findings:
            where = f":{f.line}" if f.line is not None else ""
            parts.append(Text.assemble((f"{f.severity} {f.code}{where}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    return breakable(*parts)


def session_renderable(name: str, session_id: str | None, group: dict[str, Any], findings: list[Finding]) -> RenderableType:
    """A session: its dir, its id, what it holds, and every finding its line's badges
    stand for (a narrow tree shortens them, or counts them as +N)."""
    arts = group["dir"].artifacts if group["dir"] else []
    parts: list[RenderableType] = [
        # One line each: a line break in a name cannot start a line that looks like another field.
        Text.assemble(("session dir ", "dim"), one_line(name)),
        Text.assemble(("session id  ", "dim"), one_line(session_id) if session_id is not None else "(no log names it)", "\n"),
        Text(f"{count(len(arts), 'artifact')}, {count(len(group['refs']), 'reference')}, "
             f"{count(len(group['tools']), 'tool spill')}")]
    if group["dir"] is None:
        parts.append(Text("\nno session dir on disk (nothing was saved for it, or it was pruned)", style="yellow"))
    if findings:
        parts.append(Text("\nFindings", style="bold underline"))
        for code, n in sorted(Counter(f.code for f in findings).items()):
            parts.append(Text.assemble((f" {code} ", badge_style(code)), f"  {n}  ", (CODES[code][1] if code in CODES else "", "dim")))
    return breakable(*parts)


def tool_spill_renderable(link: ToolSpillLink) -> RenderableType:
    n = link.entry.notice
    parts: list[RenderableType] = [
        Text.assemble(("Tool spill  ", "bold underline"), safe(link.entry.tool_name or "?"), ("  call ", "dim"), safe(link.entry.call_id or "?")),
        # The verdict first (issue 27): the pane may show only a few lines.
        Text.assemble(("status   ", "dim"), (link.status, {"resolves": "bold green", "normalized": "bold cyan"}.get(link.status, "bold white on red"))),
        Text.assemble(("omitted  ", "dim"), f"{n.omitted_bytes} bytes" if n.omitted_bytes is not None else n.omitted_kind),
        Text.assemble(("locator  ", "dim"), safe(n.locator)),
        Text.assemble(("log      ", "dim"), safe(f"{link.entry.log}:{link.entry.line}")),
        Text.assemble(("dialect  ", "dim"), n.dialect),
        Text("\nPreview the model saw", style="bold underline"),
        safe(n.preview) if n.preview else Text("(notice only)", style="italic dim"),
    ]
    for f in link.findings:
        parts.append(Text.assemble((f"\n{f.severity} {f.code}: ", BADGE_STYLE.get(f.code, "bold")), safe(f.detail)))
    return breakable(*parts)


__all__ = ["ReferencePanel", "artifact_renderable", "notice_renderable", "preview_text", "session_renderable",
           "tool_spill_renderable"]
