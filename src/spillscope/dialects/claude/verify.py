"""Linking Claude Code's spill files to the tool results that name them, and checking each.

Rules (real data: rcgray/claude-code-bug-phantom-reads-17407 @96731ef2; see notice.py for
the notice itself). A spill file ``<project>/<sessionId>/tool-results/<name>`` is named by:

* a ``tool_result`` block whose ``tool_use_id`` is the file's stem (``toolu_….txt``): where
  the transcript kept the full text (CC 2.1.x kept it for 675 of the 678 real files), the file
  must be byte-identical to it (as Node writes UTF-8; a result of content blocks is saved as
  ``JSON.stringify(blocks, null, 2)`` in ``<id>.json``);
* a result that *starts* with ``<persisted-output>`` (a notice): the path it gives, resolved by
  its ``<sessionId>/tool-results/<name>`` tail inside the inspected project (the absolute
  path is the agent machine's); the preview must be the file's start and the size label its
  JavaScript length (see notice.py); where ``toolUseResult.content`` holds the tool's full
  text (Grep: 3 of 3 real notices), the file must equal it;
* ``toolUseResult.persistedOutputPath`` (newer builds, Bash/PowerShell task ids, BashTool.tsx):
  the file's size must be ``persistedOutputSize`` (the copy is cut at 64 MiB), and that notice's
  label counts bytes and its preview starts after the output's leading blank lines;
* a ``content-replacement`` record's ``tool-result`` replacement (newer builds; unverified),
  read as a notice;
* an MCP result's token-cap sentence and a binary-content sentence (or ``contents[].blobSavedTo``)
  naming a file (``mcp-*``, ``webfetch-*``; the count or size label checked, notice.py), and a
  Read of a PDF whose ``toolUseResult`` names its rendered pages' dir (``pdf-<uuid>/``);
* a later tool call whose input names the file's path (the model reading its spill; the name
  ends where a shell ends it);
* a ``microcompact_boundary`` system record's ``compactedToolIds`` (CC 2.1.9+): the results
  Claude Code cleared from the context, each saved as ``<sessionId>/tool-results/<id>.txt``
  (201 of 201 real ids have their file) — not a record with ``preTokens`` 0, newer builds'
  cache-editing microcompact, which saves nothing.

Each spill file is one link (one checked notice) however many records name it, and each
failed check one finding: a changed byte is one ``content-mismatch``, not one per record. A
file nothing names is an ``orphan-artifact`` with its session dir as the probable session; a
file a notice or path names that is gone is one ``expired-locator`` (the notice remains); a
file that is there but cannot be read is ``unreadable``, never expired. A full-text result
whose file is gone, with no boundary record listing it, leaves no trace to report: the
transcript never said a file was written (405 of the 678 real files; no size, tool or position
rule predicts them — docs/agents.md has the counts).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from ...inspect.findings import Finding, finding
from ..records import Link, LinkStatus, Options, Report, SpillFile, Transcript, applied_rule
from ..engine import jsonl_records
from ...util.text import js_stringify, js_utf8
from ..checks import Read, first_difference, is_prefix, js_length, read_spill, same_bytes
from .layout import Project, scan_project
from .probe import SESSION_ID, TOOL_RESULTS, project_dirs
from .notice import (NoticeError, SavedNotice, format_file_size, is_notice, label_matches, parse_notice,
                     parse_saved)
from .retention import retention_rule

#: Only lines holding one of these are parsed: the rest cannot name a spill file.
_WANTED = (b'"tool_result"', b"tool-results", b'"content-replacement"', b'"microcompact_boundary"')
_SPLIT = re.compile(r"[\\/]")
#: How strongly a record names a file: a notice is the best place to show, a mention the weakest.
_STRENGTH = {"persisted-output": 4, "persisted-output-v1": 4, "content-replacement": 4, "mcp-token-cap": 4,
             "binary-content": 4, "persisted-path": 3, "pdf-pages": 3,
             "full-text": 2, "tool-result-id": 1, "microcompact": 1, "mention": 0}
_COMPACTED = ("a microcompact_boundary record lists this tool result in compactedToolIds (Claude Code saved it "
              "here when it cleared it from the context); the file is gone")
#: Bash copies its output file here and truncates it past 64 MiB (BashTool.tsx MAX_PERSISTED_SIZE).
_BASH_MAX = 64 * 1024 * 1024
#: What JavaScript's ``trim()`` removes (a line of only these is an empty line to ``stripEmptyLines``).
_JS_SPACE = " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000\ufeff"
#: A spill file's path in a tool call's input: the name ends where a shell would end it (``;``,
#: ``|``, ``)``, ``:120``, a glob's ``*``): "cat …/toolu_X.txt|head" named toolu_X.txt, and
#: "toolu_X.txt|head" (or "*.txt") was a file that is gone, a false expired-locator.
_MENTION = re.compile(r"[^\s\"'`]*tool-results[\\/][A-Za-z0-9_][A-Za-z0-9_.\-]*")
#: A tool_use_id as a file name: no separator, no NUL, not a dot name (the id is untrusted text).
_SAFE_ID = re.compile(r"[^/\\\x00]+\Z")


@dataclass(slots=True)
class _Evidence:
    """What the notices naming one spill file say of it, gathered before it is checked once."""

    transcript: str
    line: int
    session: str | None
    form: str
    named: str | None
    notice: str
    references: int = 1
    passed: list[str] = field(default_factory=list)
    failures: dict[str, Finding] = field(default_factory=dict)
    unreadable: bool = False


def inspect_tree(tree: str, options: Options) -> Report:
    """Every project dir in ``tree`` (itself, or the project dirs of a projects dir)."""
    rule = applied_rule(retention_rule(tree), options)
    report = Report("claude", tree, [], [], [], [], rule)
    seconds = rule.seconds if rule is not None else float("inf")  # None: Claude Code sweeps nothing
    for path in project_dirs(tree):
        project = scan_project(path)
        _Pass(project, options, report).run()
        report.transcripts.extend(project.transcripts)
        report.files.extend(project.files)
    cutoff = options.now - seconds
    # What cleanupOldSessionFiles deletes (cleanup.ts): a project dir's own *.jsonl and each
    # session's tool-results files; a session's subagents/ transcripts are not swept.
    everything: list[Transcript | SpillFile] = [*(t for t in report.transcripts if t.parent is None), *report.files]
    swept = [x for x in everything if x.mtime < cutoff]
    report.past_retention = [x.path for x in swept]
    if options.retention_seconds is not None:
        for x in swept:
            report.findings.append(finding(
                "past-retention", path=x.path, session=x.session,
                detail=f"older than the retention asked for ({options.retention_seconds:g} s): Claude Code's "
                       f"start-up cleanup at that cleanupPeriodDays deletes it"))
    return report


class _Pass:
    """One project: read each transcript once, streamed; check each named file as it is met."""

    def __init__(self, project: Project, options: Options, report: Report) -> None:
        self.project = project
        self.options = options
        self.report = report
        self.by_path = {f.path: f for f in project.files}
        self.by_id: dict[str, list[SpillFile]] = {}
        for f in project.files:
            stem = f.name.rsplit(".", 1)[0] if "." in f.name else f.name
            self.by_id.setdefault(stem, []).append(f)
        self.evidence: dict[str, _Evidence] = {}
        #: Tool calls whose input names a tool-results path, until their result says they worked.
        self.pending: dict[str, list[str]] = {}
        self.outside: list[Link] = []
        #: PDF page dirs a Read named (each checked once).
        self.page_dirs: set[str] = set()

    def run(self) -> None:
        findings = self.report.findings
        findings.extend(self.project.findings)
        for t in self.project.transcripts:
            self._read(t)
        for f in self.project.files:
            ev = self.evidence.get(f.path)
            if ev is None:
                if not f.is_symlink:
                    has_log = any(t.session == f.session for t in self.project.transcripts)
                    findings.append(finding(
                        "orphan-artifact", path=f.path, session=f.session,
                        detail="no tool result in this project's transcripts names this file"
                               + ("" if has_log else f" (and session {f.session} has no transcript here)")))
                continue
            findings.extend(_one_per_file(ev.failures))
            status: LinkStatus
            if ev.failures:
                status = "mismatch"
            elif ev.unreadable or f.is_symlink:
                status = "unreadable"
            else:
                status = "verified" if ev.passed else "linked"
            self.report.links.append(Link(ev.transcript, ev.line, ev.session, ev.form, f.path, ev.named, status,
                                          tuple(dict.fromkeys(ev.passed)), ev.notice, ev.references))
        for path, ev in self.evidence.items():
            if path in self.by_path:
                continue
            findings.extend(_one_per_file(ev.failures))
            if path in self.project.blocked or os.path.dirname(path) in self.project.blocked:
                # Something is there that is not a file, or the dir could not be listed (already
                # a finding): the notice is unverified, not expired.
                self.report.links.append(Link(ev.transcript, ev.line, ev.session, ev.form, None, ev.named,
                                              "unreadable", (), ev.notice, ev.references))
                continue
            findings.append(finding(
                "expired-locator", path=ev.transcript, line=ev.line, session=ev.session, locator=ev.named or path,
                detail=(_COMPACTED if ev.form == "microcompact" else f"the {ev.form} names a spill file that is gone (the notice remains)")
                       + (f"; {ev.references - 1} more records name it" if ev.references > 1 else "")))
            self.report.links.append(Link(ev.transcript, ev.line, ev.session, ev.form, None, ev.named, "expired",
                                          (), ev.notice, ev.references))
        self.report.links.extend(self.outside)

    # -- reading a transcript ------------------------------------------------------------

    def _read(self, t: Transcript) -> None:
        for lineno, rec in jsonl_records(t, self.report.findings, _WANTED):
            if isinstance(rec, dict):
                self._record(rec, t, lineno)

    def _record(self, rec: dict[str, Any], t: Transcript, line: int) -> None:
        session = rec.get("sessionId") if isinstance(rec.get("sessionId"), str) else t.session
        kind = rec.get("type")
        message = rec.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind == "content-replacement":
            for r in rec.get("replacements") or ():
                if isinstance(r, dict) and r.get("kind") == "tool-result" and isinstance(r.get("replacement"), str):
                    self._result(r["replacement"], r.get("toolUseId"), None, t, line, session, "content-replacement")
            return
        if kind == "system" and rec.get("subtype") == "microcompact_boundary":
            meta = rec.get("microcompactMetadata")
            ids = meta.get("compactedToolIds") if isinstance(meta, dict) else None
            if isinstance(meta, dict) and meta.get("preTokens") == 0 and not isinstance(meta.get("preTokens"), bool):
                # Newer builds' cache-editing microcompact writes its record with preTokens 0
                # and saves nothing to disk (query.ts createMicrocompactBoundaryMessage(trigger, 0,
                # …); microCompact.ts "no disk persistence"; the saving path is removed): its ids
                # say nothing about files. Every real record of the saving kind has preTokens
                # 59,975-83,403.
                return
            for tool_use_id in ids if isinstance(ids, list) else ():
                if isinstance(tool_use_id, str):
                    self._compacted(tool_use_id, t, line, session)
            return
        if not isinstance(content, list):
            return
        tur = rec.get("toolUseResult")
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                calls = self.pending.pop(block.get("tool_use_id"), None)  # type: ignore[arg-type]
                if calls is not None and block.get("is_error") is not True:
                    for text in calls:
                        self._mention(text, t, line, session)
                self._result(_text_of(block.get("content")), block.get("tool_use_id"), tur, t, line, session, None,
                             block.get("content"))
            elif btype == "tool_use" and kind == "assistant" and isinstance(block.get("id"), str):
                named = [s for s in _strings(block.get("input")) if TOOL_RESULTS in s]
                if named:
                    self.pending[block["id"]] = named

    # -- one record naming a file -------------------------------------------------------

    def _resolve(self, named: str) -> str | None:
        """The path inside this project that ``named`` (an absolute path on the agent's machine) means."""
        parts = _SPLIT.split(named.strip())
        if (len(parts) >= 3 and parts[-2] == TOOL_RESULTS and SESSION_ID.match(parts[-3])
                and parts[-1] not in ("", ".", "..") and "\x00" not in parts[-1]):
            if len(parts) >= 4 and self._another_project(parts[-4]):
                return None  # another project's file (read from here): that project's pass checks it
            if len(parts) >= 5 and parts[-5] != "projects":
                # Not under a Claude Code projects dir (<config>/projects/<slug>/<session>/…,
                # sessionStorage.ts getProjectsDir): e.g. /tmp/claude-<uid>/<slug>/<session>/,
                # the per-session temp dir (scratchpad/, tasks/). A file there is not in this tree,
                # so the notice is unchecked, never this tree's expired file.
                return None
            return os.path.join(self.project.path, parts[-3], TOOL_RESULTS, parts[-1])
        return None

    def _another_project(self, slug: str) -> bool:
        """``slug`` names a sibling project dir, not this one. (A copied or renamed project dir —
        the public corpus's are named by trial time — has no sibling of its recorded slug, and its
        paths resolve here by their session and file name.)"""
        here = self.project.path
        if slug in ("", ".", "..") or "\x00" in slug or slug == os.path.basename(here):
            return False
        return os.path.isdir(os.path.join(os.path.dirname(here), slug))

    def _evidence(self, path: str, t: Transcript, line: int, session: str | None, form: str, named: str | None,
                  notice: str) -> _Evidence:
        ev = self.evidence.get(path)
        if ev is None:
            ev = self.evidence[path] = _Evidence(t.path, line, session, form, named, notice)
            return ev
        ev.references += 1
        if ev.named is None:
            ev.named = named
        if _STRENGTH[form] > _STRENGTH[ev.form]:  # show the notice, not the id-only record
            ev.transcript, ev.line, ev.session, ev.form, ev.named, ev.notice = t.path, line, session, form, named, notice
        return ev

    def _fail(self, ev: _Evidence, code: str, t: Transcript, line: int, session: str | None, target: str,
              detail: str) -> None:
        if code not in ev.failures:  # one finding per check per file, however many records repeat it
            ev.failures[code] = finding(code, path=t.path, line=line, session=session, locator=target, detail=detail)

    def _read_named(self, target: str, t: Transcript, line: int, session: str | None, form: str, named: str,
                    notice: str) -> tuple[_Evidence, bytes] | None:
        """The evidence for the spill file a notice names, and its bytes where they are to be
        checked (None: it is not in the tree, content checks are off, or it could not be read)."""
        ev = self._evidence(target, t, line, session, form, named, notice)
        f = self.by_path.get(target)
        if f is None or not self.options.check_content:
            return None
        data = self._load(f, ev, t, line, session)
        if data is None:
            return None
        ev.passed.append("exists")
        return ev, data

    def _load(self, f: SpillFile, ev: _Evidence, t: Transcript, line: int, session: str | None) -> bytes | None:
        if f.is_symlink:
            ev.unreadable = True
            return None
        got: Read = read_spill(f.path)
        if got.data is None:
            ev.unreadable = True
            if not got.gone:
                self._fail(ev, "unreadable", t, line, session, f.path, f"cannot read the spill file: {got.error}")
        return got.data

    def _result(self, text: str | None, tool_use_id: object, tur: object, t: Transcript, line: int,
                session: str | None, form: str | None, raw: object = None) -> None:
        tur_d = tur if isinstance(tur, dict) else {}
        notice = text is not None and is_notice(text)
        if notice:
            self._notice(text or "", tur_d, t, line, session, form or "persisted-output")
        else:
            # A result of several content blocks (an MCP tool's saved blobs, one block each) is
            # read block by block for the sentences naming saved files.
            blocks = [text] if text is not None else [
                b["text"] for b in raw if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
            ] if isinstance(raw, list) else []
            for block_text in blocks:
                saved = parse_saved(block_text)
                if saved is not None:
                    self._saved(saved, block_text, t, line, session)
        if not notice and isinstance(tool_use_id, str) and tool_use_id in self.by_id:
            files = self.by_id[tool_use_id]
            own = [f for f in files if f.session == session] or files
            for f in own:
                # A result of content blocks is saved as JSON.stringify(blocks, null, 2) in <id>.json
                # (toolResultStorage.ts persistToolResult), not as the text of its one block.
                want = js_stringify(raw, indent=2) if isinstance(raw, list) and f.name.endswith(".json") else text
                # No notice to keep: the model's view of a full-text result is not in the transcript,
                # and a copy of each result's head would make a link per file weigh kilobytes.
                ev = self._evidence(f.path, t, line, session, "full-text" if want is not None else "tool-result-id", None,
                                    "")
                if want is None or not self.options.check_content:
                    continue
                data = self._load(f, ev, t, line, session)
                if data is None:
                    continue
                problem = same_bytes(want, data)
                if problem is None:
                    ev.passed.append("bytes")
                else:
                    self._fail(ev, "content-mismatch", t, line, session, f.path,
                               f"the transcript kept this tool result's full text and {problem}")
        for c in tur_d.get("contents") or () if isinstance(tur_d.get("contents"), list) else ():
            # ReadMcpResource: a blob saved as it came (ReadMcpResourceTool.ts ``blobSavedTo``).
            if isinstance(c, dict) and isinstance(c.get("blobSavedTo"), str):
                self._saved(SavedNotice("binary-content", c["blobSavedTo"]), "", t, line, session)
        pages = tur_d.get("file") if tur_d.get("type") == "parts" else None
        if isinstance(pages, dict) and isinstance(pages.get("outputDir"), str):
            self._pdf_pages(pages["outputDir"], pages.get("count"), t, line, session)
        persisted = tur_d.get("persistedOutputPath")
        if isinstance(persisted, str):
            self._persisted_path(persisted, tur_d.get("persistedOutputSize"), t, line, session)

    def _notice(self, text: str, tur: dict[str, Any], t: Transcript, line: int, session: str | None, form: str) -> None:
        try:
            notice = parse_notice(text)
        except NoticeError as exc:
            self.report.findings.append(finding("malformed-notice", path=t.path, line=line, session=session,
                                                detail=str(exc)))
            return
        if notice.generation == 1 and form == "persisted-output":
            form = "persisted-output-v1"
        target = self._resolve(notice.path)
        if target is None:
            self.outside.append(Link(t.path, line, session, form, None, notice.path, "unchecked", (), text))
            return
        got = self._read_named(target, t, line, session, form, notice.path, text)
        if got is None:
            return
        ev, data = got
        # Bash and PowerShell save the command's output file itself (their toolUseResult names it):
        # the label counts its bytes, and the preview was cut after its leading blank lines.
        shell = isinstance(tur.get("persistedOutputPath"), str) and self._resolve(tur["persistedOutputPath"]) == target
        if notice.preview is not None:
            problem = _shell_prefix(notice.preview, data) if shell else is_prefix(notice.preview, data)
            if problem is None:
                ev.passed.append("prefix")
            else:
                self._fail(ev, "preview-mismatch", t, line, session, target, problem)
            if not notice.more and not shell:
                # No "..." after it: the whole saved text fitted in the preview.
                problem = same_bytes(notice.preview, data)
                if problem is None:
                    ev.passed.append("bytes")
                else:
                    self._fail(ev, "content-mismatch", t, line, session, target,
                               f"the notice shows the whole output (no '...') and {problem}")
        if notice.size_label is not None and notice.unit is not None:
            size = tur.get("persistedOutputSize") if shell else None
            if shell and isinstance(size, int) and not isinstance(size, bool) and size > _BASH_MAX == len(data):
                units: int | None = size  # cut at 64 MiB after its size was taken
            else:
                units = len(data) if shell else js_length(data)
            if units is not None and label_matches(notice.size_label, notice.unit, units):
                ev.passed.append("size-label")
            else:
                what = "bytes" if shell else "UTF-16 units"
                self._fail(ev, "size-label-mismatch", t, line, session, target,
                           f"the notice says {notice.size_label}{notice.unit}; the file's "
                           + ("text is not UTF-8" if units is None else f"{units} {what} are {format_file_size(units)}"))
        full = tur.get("content")
        if isinstance(full, str) and notice.preview is not None and full.startswith(notice.preview) and full != text:
            # The tool's own full output (Grep keeps it here): the file is it, byte for byte.
            problem = same_bytes(full, data)
            if problem is None:
                ev.passed.append("bytes")
            else:
                self._fail(ev, "content-mismatch", t, line, session, target,
                           f"toolUseResult.content holds the full output and {problem}")

    def _saved(self, saved: SavedNotice, text: str, t: Transcript, line: int, session: str | None) -> None:
        """An MCP token-cap or binary-content sentence naming a file in this project's tool-results
        (one naming a place outside them is only text: a file quoting the sentence, say)."""
        target = self._resolve(saved.path)
        if target is None:
            return
        got = self._read_named(target, t, line, session, saved.form, saved.path, text)
        if got is None:
            return
        ev, data = got
        if saved.chars is not None:
            units = js_length(data)
            if units == saved.chars:
                ev.passed.append("size-label")
            else:
                self._fail(ev, "size-label-mismatch", t, line, session, target,
                           f"the notice says {saved.chars:,} characters; the file's text is "
                           + ("not UTF-8" if units is None else f"{units:,} UTF-16 units"))
        elif saved.size_label is not None and saved.unit is not None:
            if label_matches(saved.size_label, saved.unit, len(data)):
                ev.passed.append("size-label")
            else:
                self._fail(ev, "size-label-mismatch", t, line, session, target,
                           f"the notice says {saved.size_label} {saved.unit}; the file's {len(data)} bytes are "
                           f"{format_file_size(len(data))}")

    def _persisted_path(self, named: str, size: object, t: Transcript, line: int, session: str | None) -> None:
        target = self._resolve(named)
        if target is None:
            self.outside.append(Link(t.path, line, session, "persisted-path", None, named, "unchecked"))
            return
        ev = self._evidence(target, t, line, session, "persisted-path", named, "")
        f = self.by_path.get(target)
        if f is None or f.is_symlink:
            return
        ev.passed.append("exists")
        if isinstance(size, int) and not isinstance(size, bool):
            if size == f.size or (size > _BASH_MAX == f.size):  # Bash cuts the copy at 64 MiB
                ev.passed.append("size")
            else:
                self._fail(ev, "bytes-mismatch", t, line, session, target,
                           f"persistedOutputSize is {size} bytes; the file has {f.size}")

    def _pdf_pages(self, named: str, count: object, t: Transcript, line: int, session: str | None) -> None:
        """A Read of a PDF's pages (toolUseResult ``{"type": "parts", "file": {"outputDir", "count"}}``,
        FileReadTool.ts/pdf.ts): each page file in that dir is linked; pages fewer than ``count``
        (or the dir gone) is one expired-locator for the dir. (A page's bytes have no check: the
        transcript keeps them only as the image the model saw.)"""
        target = self._resolve(named)
        if target is None:
            self.outside.append(Link(t.path, line, session, "pdf-pages", None, named, "unchecked"))
            return
        if target in self.page_dirs:
            return  # the same record again: checked once
        self.page_dirs.add(target)
        present = [f for f in self.project.files if os.path.dirname(f.path) == target]
        for f in present:
            ev = self._evidence(f.path, t, line, session, "pdf-pages", named, "")
            if not f.is_symlink:
                ev.passed.append("exists")
        want = count if isinstance(count, int) and not isinstance(count, bool) else None
        pages = sum(1 for f in present if f.name.endswith(".jpg"))
        if (want is not None and pages < want) or (not present and target not in self.project.blocked):
            gone = f"{want - pages} of its {want} pages are gone" if want is not None else "its pages are gone"
            self.report.findings.append(finding(
                "expired-locator", path=t.path, line=line, session=session, locator=named,
                detail=f"a Read rendered a PDF's pages into this dir; {gone}"))

    def _compacted(self, tool_use_id: str, t: Transcript, line: int, session: str | None) -> None:
        """A ``microcompact_boundary`` record's ``compactedToolIds`` entry: Claude Code cleared this
        result from the model's context and saved it to its session's tool-results dir (every one
        of the 201 ids in the real corpus's 36 records has its file), so a file that is gone has
        expired even where the transcript kept the full text."""
        if session is None or not SESSION_ID.match(session) or not _SAFE_ID.match(tool_use_id) \
                or tool_use_id in (".", ".."):
            return  # nothing inside this project it could name
        own = [f for f in self.by_id.get(tool_use_id, ()) if f.session == session]
        paths = [f.path for f in own] or [os.path.join(self.project.path, session, TOOL_RESULTS, tool_use_id + ".txt")]
        for path in paths:
            self._evidence(path, t, line, session, "microcompact", None, "")

    def _mention(self, text: str, t: Transcript, line: int, session: str | None) -> None:
        """A tool call that named a spill file's path and did not fail (the model read its spill
        back): the file existed then, so one that is gone now has expired."""
        for m in _MENTION.finditer(text):
            named = m.group(0).rstrip(".")  # a sentence's full stop is not the name's
            target = self._resolve(named)
            if target is not None:
                self._evidence(target, t, line, session, "mention", named, "")


def _shell_prefix(preview: str, data: bytes) -> str | None:
    """The preview is the start of the shell's output once its leading blank lines are gone
    (BashTool: ``stripEmptyLines``, then ``replace(/^(\\s*\\n)+/, '')``)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return is_prefix(preview, data)  # Node decoded it with U+FFFD: compare the bytes as they are
    start = 0
    while True:
        nl = text.find("\n", start)
        if nl < 0 or text[start:nl].strip(_JS_SPACE):
            break
        start = nl + 1
    if text.startswith(preview, start):
        return None
    rest = text[start:].encode("utf-8")
    want = js_utf8(preview)
    return (f"the preview ({len(want)} bytes) is not the output's start after its blank lines: they differ at byte "
            f"{len(data) - len(rest) + first_difference(want, rest)}")


def _one_per_file(failures: dict[str, Finding]) -> list[Finding]:
    """One fault, one finding: the first check that failed (in the order they run: prefix,
    size label, bytes), naming the others it also broke (a changed byte in the preview breaks
    the prefix and the full copy)."""
    if len(failures) <= 1:
        return list(failures.values())
    first, *rest = failures.values()
    return [replace(first, detail=f"{first.detail} (also failed: {', '.join(f.code for f in rest)})")]


def _text_of(content: object) -> str | None:
    """A tool result's text: a string, or a list holding exactly one text block (else not comparable)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b for b in content if isinstance(b, dict)]
        if len(texts) == 1 and texts[0].get("type") == "text" and isinstance(texts[0].get("text"), str):
            text: str = texts[0]["text"]
            return text
    return None


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
