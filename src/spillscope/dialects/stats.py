"""An agent dialect's :class:`~.base.Report` as :class:`~spillscope.inspect.stats.Stats`.

The dsh root has its own streaming walk (:mod:`spillscope.inspect.stats.dsh`); every other
agent is read through its dialect, whose report already holds the files, the links and the
findings, and is folded here into the same builder, so ``stats`` and its tables mean the
same for every agent. What a report gives:

- files and bytes: each spill file the layout lists (``lstat`` sizes), under its session and
  its project (the directory under the inspected tree that holds it);
- notices: each link whose form is a notice (not the full text kept in the transcript). A
  report carries no omission counts, so each counts in ``omittedUnknown``;
- findings: the report's, on the file they name where they name one;
- the sweep: the report's ``past_retention`` under the agent's own rule (its settings or its
  default), with the transcript line that still names each file.
"""

from __future__ import annotations

import os

from ..inspect.stats.builder import StatsBuilder
from ..inspect.stats.model import Stats, SweepCandidate
from .records import Report

#: The one kind an agent's spill file has (dsh's kinds come from its file names).
KIND = "spill-file"
#: Link forms in which the model saw the whole text: not an omission notice.
FULL_TEXT_FORMS = frozenset({"full-text"})


def report_stats(report: Report, *, top: int = 10, now: float, content_checked: bool = True) -> Stats:
    """``content_checked``: whether ``report`` came from an inspection that compared content
    (then its findings are verify's)."""
    b = StatsBuilder(top, report.dialect)
    tree = report.tree.rstrip(os.sep)

    def project_of(path: str, session: str | None) -> str:
        first = os.path.relpath(path, tree).split(os.sep, 1)[0]
        return os.path.basename(tree) if first in (session, os.curdir, os.pardir) else first

    kinds = {f.path: f for f in report.files}
    for f in report.files:
        key = f.session or "(no session)"
        counters = b.session(key, f.session, project=project_of(f.path, f.session))
        b.add_file(counters, key, f.path, KIND, None, f.size, f.mtime)
    named: dict[str, str] = {}
    for link in report.links:
        if link.target is not None:
            named.setdefault(link.target, f"{link.transcript}:{link.line}")
        if link.form in FULL_TEXT_FORMS:
            continue
        key = link.session or "(no session)"
        b.add_notice(b.session(key, link.session, project=project_of(link.transcript, link.session)), None, 0, KIND)
    for finding in report.findings:
        hit = kinds.get(finding.path or "")
        session = (hit.session if hit else None) or finding.session
        b.add_finding(finding.code, b.session(session) if session else None, KIND if hit else None)
    sizes = {t.path: (t.session, t.size, t.mtime) for t in report.transcripts}
    sizes.update({f.path: (f.session, f.size, f.mtime) for f in report.files})
    for path in report.past_retention:
        session, size, mtime = sizes.get(path, (None, 0, 0.0))
        b.add_candidate(SweepCandidate(path, session or "", size, mtime, named.get(path)))
    rule = report.retention
    seconds = rule.seconds if rule is not None else 0.0
    title = f"{report.dialect}: {rule.scope} ({rule.source})" if rule is not None else f"{report.dialect}: no sweep"
    return b.build(report.tree, now, None, (title, seconds, round((now - seconds) * 1000), rule is not None,
                                            "" if rule is not None else "this agent sweeps nothing"),
                   SCOPE_CONTENT if content_checked else SCOPE_NAMES, report.notices()["nothingChecked"])


#: What the finding count covers (``Stats.findings_scope``), with and without content compared.
SCOPE_CONTENT = "the agent's transcripts and spill files, content compared: what verify reports"
SCOPE_NAMES = "the agent's transcripts and spill files, content not compared (run verify)"
