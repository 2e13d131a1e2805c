"""Linking a tool-spill notice to its artifact and checking the preview against the artifact's ends.

Resolves the locator (or matches a replay-normalised name), flags a fork-dialect notice,
and compares the head/tail preview and the omitted byte count with the file, reading only
its two ends. Separate from the reference linker: a tool spill is raw bytes behind a text
notice, not a transcript.
"""

from __future__ import annotations

from typing import Any, Callable

from ...storage import Reader, Storage
from ...storage.local import FileReader
from ...util.scratch import Scratch, put_utf8
from ...util.text import js_utf8
from ...reference.preview import retention_splits, same_bytes
from ...spill.naming import session_dir_name
from ...spill.policy import FORK_GAP
from .blind import _Blind
from ..findings import Finding, finding
from .records import ToolSpillLink
from .locate import resolve_locator
from ..logs import ToolSpillEntry
from .replay import match_normalized, normalized_name
from ..scan.tree import Artifact


def _dialect_finding(entry: ToolSpillEntry, where: dict[str, Any]) -> list[Finding]:
    """A fork-dialect notice is read leniently and said so (FORMAT.md §3, docs/FORMAT.md)."""
    notice = entry.notice
    if notice.dialect == "standard":
        return []
    why = " (the reference's hasSpillNotice does not recognise an images clause)" if notice.omitted_images else ""
    return [finding("notice-dialect", **where, locator=entry.locator,
                    detail=f"tool result {entry.call_id}: spill notice in the {notice.dialect} dialect{why}")]


def _tool_size_fits(entry: ToolSpillEntry) -> Callable[[int], bool] | None:
    """For a standard exact notice: the artifact sizes its preview and count allow."""
    notice = entry.notice
    if notice.omitted_kind != "exact" or notice.fork_gap or notice.omitted_bytes is None:
        return None
    base = len(js_utf8(notice.preview)) + notice.omitted_bytes
    return lambda size: size - base in (0, 3, 6)


def _link_tool_spill(entry: ToolSpillEntry, root: Storage, rebase: str | None, by_path: dict[str, Artifact],
                     blind: _Blind, scratch: tuple[Scratch, Scratch] | None = None) -> ToolSpillLink:
    """``scratch``: two buffers, for the preview's UTF-8 and for the artifact's ends,
    reused from notice to notice in one pass (a huge preview is not one fresh buffer each)."""
    where = {"path": entry.log, "line": entry.line, "session": entry.target_session}
    dialect = _dialect_finding(entry, where)
    name = normalized_name(entry.locator)
    if name is not None:
        art, how = match_normalized(name, entry.target_session, by_path.values(), _tool_size_fits(entry))
        link = ToolSpillLink(entry, "normalized", art, dialect)
        link.findings.append(finding("normalized-locator", **where, locator=entry.locator,
                                     detail=f"tool result {entry.call_id}: replay-normalised locator; "
                                            + (f"checked against {how}" if art else how)))
        if art is None:
            return link
    else:
        path, why = resolve_locator(entry.locator, root, rebase)
        if path is None:
            link = ToolSpillLink(entry, "outside-root", None, dialect)
            link.findings.append(finding("outside-root", **where, locator=entry.locator, detail=why))
            return link
        art = by_path.get(path)
        unread = blind.finding(where, entry.locator, f"tool result {entry.call_id}", path) if art is None else None
        if unread is not None:
            return ToolSpillLink(entry, "unverified", None, [*dialect, unread])
        if art is None or not art.is_regular:
            link = ToolSpillLink(entry, "expired", None, dialect)
            link.findings.append(finding("expired-locator", **where, locator=entry.locator,
                                         detail=f"tool result {entry.call_id}: the artifact is gone; the notice remains"))
            return link
        link = ToolSpillLink(entry, "resolves", art, dialect)
    owner_dir = session_dir_name(entry.target_session)
    if name is None and art.session_dir != owner_dir:
        link.findings.append(finding("foreign-owner", path=art.path, session=entry.target_session, locator=entry.locator,
                                     detail=f"artifact is in {art.session_dir}, owner's dir is {owner_dir}"))
    notice = entry.notice
    preview = notice.preview
    head, _, tail = preview.partition(FORK_GAP) if notice.fork_gap else (preview, "", "")
    text_buf, file_buf = scratch if scratch is not None else (Scratch(), Scratch())
    utf8 = text_buf.take()
    n_head_b = put_utf8(utf8, 0, head)
    n_utf8 = put_utf8(utf8, n_head_b, tail)
    head_b, tail_b = memoryview(utf8)[:n_head_b], memoryview(utf8)[n_head_b:n_utf8]
    if notice.omitted_kind == "exact" and not notice.fork_gap and notice.omitted_bytes is not None:
        # A BOM the reference's decoder stripped from the head or the tail piece is
        # 3 bytes counted as kept and not in the preview: 0, 3 or 6 bytes unexplained.
        if art.size - len(head_b) - notice.omitted_bytes not in (0, 3, 6):
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"omittedBytes: logged {notice.omitted_bytes}, recomputed {art.size - len(head_b)} (preview {len(head_b)} bytes, artifact {art.size})"))
            return link
    try:
        reader = root.open_reader(art.path)
        try:
            # Without a gap the split between head and tail is unknown: read as much of
            # each end as the whole preview; with the fork's gap, each part's own length.
            n_head, n_tail = (len(head_b), len(tail_b)) if notice.fork_gap else (len(head_b) + 3, len(head_b) + 3)
            first, last = _read_ends(reader, art.size, n_head, n_tail, file_buf)
        finally:
            reader.close()
    except OSError as exc:
        link.findings.append(finding("unreadable", path=art.path, session=entry.target_session, detail=exc.strerror or str(exc)))
        return link
    if notice.fork_gap:
        if not same_bytes(first, head_b) or not same_bytes(last, tail_b):
            part = "tail" if same_bytes(first, head_b) else "head"
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"preview {part} (before/after the [...] gap) is not the artifact's {part}"))
    else:
        splits = retention_splits(head_b, first, last, art.size)
        if not splits:
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail="preview is not a head+tail of the artifact"))
        elif notice.omitted_kind == "exact" and all(sp.omitted != notice.omitted_bytes for sp in splits):
            link.findings.append(finding("omission-mismatch", **where, locator=entry.locator,
                                         detail=f"omittedBytes: logged {notice.omitted_bytes}, recomputed {splits[0].omitted} (preview {len(head_b)} bytes, artifact {art.size})"))
    return link


def _read_ends(reader: Reader, size: int, n_head: int, n_tail: int, scratch: Scratch) -> tuple[memoryview, memoryview]:
    """The first ``n_head`` and last ``n_tail`` bytes of a ``size``-byte artifact, as views
    (of ``scratch`` for a local file: no fresh buffer, not even one per notice)."""
    tail_at = max(0, size - n_tail)
    if n_head + n_tail >= size:
        # The ends overlap: one read and two views of it (not two reads of most of the
        # file, nor two copies: each would be fresh memory, paid in page faults).
        if isinstance(reader, FileReader):
            buf = memoryview(scratch.take(size))
            whole = buf[: reader.pread_into(buf[:size], 0)]
        else:
            whole = memoryview(reader.pread(size, 0))
        return whole[:n_head], whole[tail_at:] if n_tail else whole[:0]
    if isinstance(reader, FileReader):
        buf = memoryview(scratch.take(n_head + n_tail))
        got = reader.pread_into(buf[:n_head], 0)
        got_tail = reader.pread_into(buf[n_head : n_head + n_tail], tail_at) if n_tail else 0
        return buf[:got], buf[n_head : n_head + got_tail]
    return memoryview(reader.pread(n_head, 0)), memoryview(reader.pread(n_tail, tail_at) if n_tail else b"")
