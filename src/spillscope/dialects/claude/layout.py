"""Claude Code's tree: ``~/.claude/projects/<project>/`` dirs of sessions, and what each holds.

Verified on real sessions (rcgray/claude-code-bug-phantom-reads-17407 @96731ef2, CC
2.0.58–2.1.22, 223 transcripts, 678 spill files)::

    <project>/<sessionId>.jsonl                         a session's transcript
    <project>/agent-<id>.jsonl                          a subagent's (CC 2.0.5x)
    <project>/<sessionId>/subagents/agent-<id>.jsonl    a subagent's (CC 2.1.x)
    <project>/<sessionId>/subagents/workflows/wf_<id>/agent-<id>.jsonl
                                                        a workflow-spawned agent's (newer builds; the
                                                        layout of daaain/claude-code-log test data
                                                        @64966224, test/test_data/workflow_scriptpath/)
    <project>/<sessionId>/tool-results/<toolUseId>.txt  a spilled tool result
    <project>/<sessionId>/tool-results/pdf-<uuid>/page-NN.jpg
                                                        a PDF's pages the Read tool rendered (CC source,
                                                        BelovedYaoo/claude-code-source @1e87ff61 pdf.ts)

A *project dir* holds at least one of these; a *projects dir* (``~/.claude/projects``) holds
project dirs. Anything else in a project dir (``memory/``, notes a user copied there) is not
Claude Code's spill layout and is left alone; anything but a regular file inside
``tool-results/`` is a finding (a symlink is reported, never followed).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field

from ...inspect.findings import Finding, finding
from ...storage.local import file_type
from ..records import SpillFile, Transcript
from .probe import AGENT_LOG, SESSION_ID, SUBAGENTS, TOOL_RESULTS, _entries, _is_session_log  # the name rules detection uses too

#: A dir of a PDF's rendered pages inside tool-results (the only dir Claude Code makes there;
#: its start-up cleanup sweeps ``tool-results/<dir>/*`` for it, cleanup.ts).
PDF_PAGES = re.compile(r"pdf-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
#: How deep under ``subagents/`` transcripts are looked for (``workflows/wf_<id>/`` is two).
_SUBAGENT_DEPTH = 3


@dataclass
class Project:
    """One Claude Code project dir: its transcripts, the spill files of its sessions, and what could not be
    looked at."""

    path: str
    transcripts: list[Transcript] = field(default_factory=list)
    files: list[SpillFile] = field(default_factory=list)
    #: Session dir names that hold a tool-results dir.
    session_dirs: set[str] = field(default_factory=set)
    #: Paths in a tool-results dir that hold something other than a file (a dir, a FIFO) or
    #: could not be looked at: a notice naming one is unverified, never expired.
    blocked: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)


def scan_project(path: str) -> Project:
    """Every transcript and spill file of one project dir, from ``scandir`` + ``lstat``."""
    project = Project(path)
    for e in _entries(path):
        if _is_session_log(e):
            st = e.stat(follow_symlinks=False)
            stem = e.name[:-6]
            session = stem if SESSION_ID.match(stem) else None  # an old subagent's: its records say
            project.transcripts.append(Transcript(e.path, session, st.st_size, st.st_mtime))
        elif SESSION_ID.match(e.name) and e.is_dir(follow_symlinks=False):
            _scan_session_dir(project, e)
    return project


def _scan_session_dir(project: Project, session: os.DirEntry[str]) -> None:
    for e in _entries(session.path):
        if e.name == SUBAGENTS and e.is_dir(follow_symlinks=False):
            _scan_subagents(project, e.path, session.name, 0)
        elif e.name == TOOL_RESULTS and e.is_dir(follow_symlinks=False):
            project.session_dirs.add(session.name)
            try:
                with os.scandir(e.path) as it:
                    entries = sorted(it, key=lambda x: x.name)
            except OSError as exc:
                project.blocked.add(e.path)
                project.findings.append(finding("unreadable", path=e.path, session=session.name,
                                                detail=f"cannot list the tool-results dir: {exc.strerror or exc}"))
                continue
            for f in entries:
                _add_spill(project, f, session.name)


def _scan_subagents(project: Project, path: str, session: str, depth: int) -> None:
    """A session's subagent transcripts: ``subagents/*.jsonl``, and the workflow-spawned agents'
    ``subagents/workflows/wf_<id>/agent-<id>.jsonl`` (newer builds; a workflow's ``journal.jsonl``
    beside them is not a transcript). A spill file only a workflow agent's records name was an
    orphan while these were not read."""
    for s in _entries(path):
        if s.is_file(follow_symlinks=False):
            if s.name.endswith(".jsonl") and (depth == 0 or AGENT_LOG.match(s.name)):
                st = s.stat(follow_symlinks=False)
                project.transcripts.append(Transcript(s.path, session, st.st_size, st.st_mtime, session))
        elif depth < _SUBAGENT_DEPTH and s.is_dir(follow_symlinks=False):
            _scan_subagents(project, s.path, session, depth + 1)


def _add_spill(project: Project, entry: os.DirEntry[str], session: str, inside: str | None = None) -> None:
    try:
        st = entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return  # gone between the listing and the lstat: as if never listed
    except OSError as exc:
        project.blocked.add(entry.path)
        project.findings.append(finding("unreadable", path=entry.path, session=session,
                                        detail=f"cannot lstat: {exc.strerror or exc}"))
        return
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
        link = stat.S_ISLNK(mode)
        project.files.append(SpillFile(entry.path, entry.name, st.st_size, st.st_mtime, stat.S_IMODE(mode), session,
                                       link, not link))
        if link:
            project.findings.append(finding("symlink", path=entry.path, session=session,
                                            detail="a symlink in a tool-results dir (reported, never followed)"))
    elif stat.S_ISDIR(mode) and inside is None and PDF_PAGES.match(entry.name):
        # The Read tool renders a PDF's pages here (pdf.ts extractPDFPages: pdftoppm into
        # tool-results/pdf-<uuid>/page-NN.jpg); its result's toolUseResult names the dir.
        try:
            with os.scandir(entry.path) as it:
                pages = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            project.blocked.add(entry.path)
            project.findings.append(finding("unreadable", path=entry.path, session=session,
                                            detail=f"cannot list the PDF pages dir: {exc.strerror or exc}"))
            return
        for page in pages:
            _add_spill(project, page, session, inside=entry.name)
    else:
        project.blocked.add(entry.path)
        where = "a PDF pages dir" if inside else "a tool-results dir"
        project.findings.append(finding("unexpected-entry", path=entry.path, session=session,
                                        detail=f"a {file_type(mode)} in {where} (Claude Code writes files only)"))
