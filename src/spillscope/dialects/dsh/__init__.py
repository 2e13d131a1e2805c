"""dsh: the harness this project reimplements. An adapter over the inspector (:mod:`spillscope.inspect`).

The dsh inspector (scan, logs, link, verify, search, watch) stays where it is; this adapter
only answers the seam's questions with it: a tree with ``session-<12 hex>`` dirs (or an
``s3://`` URL, whose kind :func:`spillscope.storage.open_storage` decides) is dsh's, and an inspection is
:func:`spillscope.inspect.verify.inspection.inspect_root`'s, its links re-stated as :class:`Link` records.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Iterator

from ..base import Dialect

if TYPE_CHECKING:  # the records load when an inspection makes them, not to detect a tree
    from ..records import LinkStatus, Options, Report, RetentionRule

_SESSION_DIR = re.compile(r"session-[0-9a-f]{12}\Z")
#: dsh link statuses in the seam's words.
_STATUS: dict[str, LinkStatus] = {"resolves": "verified", "intact": "verified", "normalized": "verified",
                                  "expired": "expired", "outside-root": "unchecked", "unavailable": "unchecked",
                                  "invalid": "mismatch", "unverified": "unreadable"}


class DshDialect(Dialect):
    name = "dsh"
    title = "dsh"
    usual_path = "a spill root of session-<12 hex> dirs (+ --logs DIR)"

    def detect(self, tree: str) -> float:
        from ...storage import UnsupportedRoot, open_storage

        try:
            store = open_storage(tree)
        except UnsupportedRoot:
            return 0.0
        if store.tree is None:
            return 0.5  # only dsh spills to an object store
        try:
            with os.scandir(tree) as it:
                names = [e.name for e in it]
        except OSError:
            return 0.0
        if any(_SESSION_DIR.match(n) for n in names):
            return 1.0
        # An empty dir is a dsh root nothing has spilled to yet (the backend makes it first).
        return 0.1 if not names else 0.0

    def inspect(self, tree: str, options: Options) -> Report:
        from ...inspect.findings import Finding
        from ..records import Link, Report, SpillFile, Transcript, applied_rule
        from ...inspect.verify.inspection import inspect_root
        from ...formats.transcript.layout import DEFAULT_MAX_LINE_BYTES
        from ...formats.limits import DEFAULT_MAX_LOG_LINE_BYTES

        ins = inspect_root(tree, options.logs, retention_seconds=options.retention_seconds, now=options.now,
                           rebase=options.rebase, check_content=options.check_content,
                           max_line_bytes=options.max_line_bytes or DEFAULT_MAX_LINE_BYTES,
                           max_log_line_bytes=options.max_log_line_bytes or DEFAULT_MAX_LOG_LINE_BYTES)
        files = [SpillFile(a.path, a.name, a.size, a.mtime, a.mode, a.session_dir, a.is_symlink, a.is_regular)
                 for a in ins.scan.artifacts()]
        transcripts = [Transcript(log.path, log.session_id, 0, 0.0) for log in ins.logs]
        links: list[Link] = []
        for r in ins.references:
            if r.entry.notice is None:
                continue
            links.append(Link(r.entry.log, r.entry.line, r.entry.session_id, "session-reference",
                              r.artifact.path if r.artifact else None, r.entry.locator, _STATUS[r.status]))
        for t in ins.tool_spills:
            links.append(Link(t.entry.log, t.entry.line, None, "tool-spill", t.artifact.path if t.artifact else None,
                              t.entry.locator, _STATUS[t.status]))
        findings: list[Finding] = list(ins.findings)
        return Report("dsh", ins.root, transcripts, files, links, findings, applied_rule(self.retention(tree), options),
                      native=ins)

    def retention(self, tree: str) -> RetentionRule | None:
        from ..records import RetentionRule

        return RetentionRule(30 * 86400.0, "dsh's start-up sweep default (--retention to change)",
                             "every artifact under the spill root, by mtime")

    def texts(self, tree: str) -> Iterator[tuple[str, str]]:
        return iter(())  # dsh's search is the inspector's own (inspect.search.search_root)


DIALECT = DshDialect()
