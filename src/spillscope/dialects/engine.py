"""Link and check for agents whose notices name their spill file by path (Gemini CLI, qwen-code, OpenCode).

A dialect gives the layout (spill files, transcripts, what could not be listed), the strings
of each transcript record (:class:`Text`), a notice parser and a resolver from the path a
notice wrote (on the agent's machine) to a path inside the inspected tree. This module does
the rest the same way for each: one link per spill file however many records name it, each
check a notice allows run against the file's bytes, one finding per fault per file, an
orphan for a file nothing names (with the session its dir says), ``expired-locator`` for a
named file that is gone, ``unreadable`` (never expired) where something else is there.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from ..inspect.findings import Finding, finding
from .records import Link, LinkStatus, Options, Report, SpillFile, Transcript
from .checks import read_spill

#: A check: its name (shown when it passes), the finding code when it fails, and the test
#: (the file's bytes → None when it passes, else why not).
Check = tuple[str, str, Callable[[bytes], "str | None"]]


@dataclass(frozen=True, slots=True)
class Notice:
    """A notice in a transcript that names a spill file: its form, the path as written, the checks it allows,
    its text."""

    form: str
    #: The path as the notice wrote it.
    named: str
    checks: tuple[Check, ...] = ()
    #: The notice as the model saw it (shown beside the file).
    text: str = ""


@dataclass(frozen=True, slots=True)
class Text:
    """One string of a transcript record, where it is."""

    transcript: Transcript
    line: int
    session: str | None
    text: str


@dataclass
class Layout:
    """An agent's tree as its dialect lays it out: spill files, transcripts, what could not be listed,
    findings."""

    files: list[SpillFile] = field(default_factory=list)
    transcripts: list[Transcript] = field(default_factory=list)
    #: Paths where something other than a file is, or that could not be listed.
    blocked: set[str] = field(default_factory=set)
    findings: list[Finding] = field(default_factory=list)


class MalformedNotice(ValueError):
    """A string that starts like the agent's notice but does not follow it."""


@dataclass(slots=True)
class _Evidence:
    """What the notices naming one spill file say of it, gathered before it is checked once."""

    text: Text
    notice: Notice
    references: int = 1
    passed: list[str] = field(default_factory=list)
    failures: dict[str, Finding] = field(default_factory=dict)
    unreadable: bool = False


def link_and_check(report: Report, layout: Layout, texts: Iterable[Text],
                   parse: Callable[[str], "Notice | None"], resolve: Callable[[str], "str | None"],
                   options: Options) -> None:
    """Fill ``report`` from ``layout`` and the notices among ``texts``."""
    report.findings.extend(layout.findings)
    report.files.extend(layout.files)
    report.transcripts.extend(layout.transcripts)
    by_path = {f.path: f for f in layout.files}
    evidence: dict[str, _Evidence] = {}
    for t in texts:
        try:
            notice = parse(t.text)
        except MalformedNotice as exc:
            report.findings.append(finding("malformed-notice", path=t.transcript.path, line=t.line, session=t.session,
                                           detail=str(exc)))
            continue
        if notice is None:
            continue
        target = resolve(notice.named)
        if target is None:
            report.links.append(Link(t.transcript.path, t.line, t.session, notice.form, None, notice.named,
                                     "unchecked", (), notice.text))
            continue
        ev = evidence.get(target)
        if ev is not None:
            ev.references += 1
            continue  # the same notice again (a re-emitted record): checked once
        ev = evidence[target] = _Evidence(t, notice)
        f = by_path.get(target)
        if f is None or not options.check_content:
            continue
        if f.is_symlink:
            ev.unreadable = True
            continue
        got = read_spill(f.path)
        if got.data is None:
            ev.unreadable = True
            if not got.gone:
                ev.failures["unreadable"] = finding("unreadable", path=t.transcript.path, line=t.line, session=t.session,
                                                    locator=f.path, detail=f"cannot read the spill file: {got.error}")
            continue
        ev.passed.append("exists")
        for name, code, check in notice.checks:
            problem = check(got.data)
            if problem is None:
                ev.passed.append(name)
            elif code not in ev.failures:
                ev.failures[code] = finding(code, path=t.transcript.path, line=t.line, session=t.session, locator=f.path,
                                            detail=problem)
    for f in layout.files:
        ev = evidence.get(f.path)
        if ev is None:
            if not f.is_symlink:
                report.findings.append(finding("orphan-artifact", path=f.path, session=f.session,
                                               detail="no notice in the transcripts names this file"))
            continue
        report.findings.extend(one_per_file(ev.failures))
        status: LinkStatus = ("mismatch" if ev.failures else "unreadable" if ev.unreadable or f.is_symlink
                              else "verified" if len(ev.passed) > 1 else "linked")
        report.links.append(_link(ev, f.path, status))
    for path, ev in evidence.items():
        if path in by_path:
            continue
        if path in layout.blocked or os.path.dirname(path) in layout.blocked:
            report.links.append(_link(ev, None, "unreadable"))
            continue
        t = ev.text
        report.findings.append(finding(
            "expired-locator", path=t.transcript.path, line=t.line, session=t.session, locator=ev.notice.named,
            detail=f"the {ev.notice.form} notice names a spill file that is gone (the notice remains)"))
        report.links.append(_link(ev, None, "expired"))


def _link(ev: _Evidence, target: str | None, status: LinkStatus) -> Link:
    t = ev.text
    return Link(t.transcript.path, t.line, t.session, ev.notice.form, target, ev.notice.named, status,
                tuple(dict.fromkeys(ev.passed)), ev.notice.text, ev.references)


def one_per_file(failures: dict[str, Finding]) -> list[Finding]:
    """One fault, one finding: the first check that failed, naming the others it also broke."""
    if len(failures) <= 1:
        return list(failures.values())
    first, *rest = failures.values()
    return [replace(first, detail=f"{first.detail} (also failed: {', '.join(f.code for f in rest)})")]


def resolve_under(named: str, anchor: str, base: str) -> str | None:
    """The path under ``base`` that ``named`` means: the part of ``named`` after its last
    ``anchor`` component (e.g. ``tool-outputs``), if it holds no ``..`` and no NUL."""
    import re

    parts = re.split(r"[\\/]", named.strip())
    if anchor not in parts:
        return None
    i = len(parts) - 1 - parts[::-1].index(anchor)
    rest = parts[i + 1:]
    if not rest or any(p in ("", ".", "..") or "\x00" in p for p in rest):
        return None
    return os.path.join(base, *rest)


def lstat_dir(layout: Layout, path: str, session: str | None, note: str) -> None:
    """Every entry of the spill dir ``path`` into ``layout`` (files, symlinks reported, the rest findings)."""
    import stat

    from ..storage.local import file_type

    try:
        if os.path.islink(path):
            # A symlinked spill dir is not listed: its files are outside the tree (O_NOFOLLOW
            # guards only a path's last component), so nothing under it is read or served.
            layout.blocked.add(path)
            layout.findings.append(finding("symlink", path=path, session=session,
                                           detail="the spill dir is a symlink (reported, never followed)"))
            return
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        return
    except OSError as exc:
        layout.blocked.add(path)
        layout.findings.append(finding("unreadable", path=path, session=session,
                                       detail=f"cannot list the spill dir: {exc.strerror or exc}"))
        return
    for e in entries:
        try:
            st = e.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        except OSError as exc:
            layout.blocked.add(e.path)
            layout.findings.append(finding("unreadable", path=e.path, session=session,
                                           detail=f"cannot lstat: {exc.strerror or exc}"))
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            link = stat.S_ISLNK(st.st_mode)
            layout.files.append(SpillFile(e.path, e.name, st.st_size, st.st_mtime, stat.S_IMODE(st.st_mode), session,
                                          link, not link))
            if link:
                layout.findings.append(finding("symlink", path=e.path, session=session,
                                               detail="a symlink in a spill dir (reported, never followed)"))
        elif not stat.S_ISDIR(st.st_mode):
            layout.blocked.add(e.path)
            layout.findings.append(finding("unexpected-entry", path=e.path, session=session,
                                           detail=f"a {file_type(st.st_mode)} in a spill dir ({note})"))


def transcript(path: str, session: str | None, parent: str | None = None) -> Transcript | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return Transcript(path, session, st.st_size, st.st_mtime, parent)


def json_strings(value: object) -> Iterable[str]:
    """Every string in a decoded JSON value (depth first)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))


def lines_holding(f: BinaryIO, wanted: tuple[bytes, ...]) -> Iterator[tuple[int, bytes]]:
    """The lines of ``f`` (numbered from 1, each with its newline) holding one of ``wanted``.

    The file is mapped and searched with ``bytes.find`` (memchr speed), and only the lines
    that hold a token are copied out: reading every line of a transcript whose lines run to
    megabytes was most of a verify pass (1.7 of 2.7 s on the public Claude Code corpus)."""
    try:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except ValueError:
        return  # an empty file cannot be mapped, and holds nothing
    with buf:
        n = len(buf)
        find = _finder(buf)
        nexts = [find(w, 0) for w in wanted]
        line_no, counted = 1, 0
        while True:
            found = [q for q in nexts if q >= 0]
            if not found:
                return
            p = min(found)
            start = buf.rfind(b"\n", 0, p) + 1
            end = buf.find(b"\n", p)
            end = n if end < 0 else end + 1
            line_no += _newlines(buf, counted, start)
            counted = start
            yield line_no, buf[start:end]
            nexts = [find(w, end) if 0 <= q < end else q for q, w in zip(nexts, wanted)]


def _finder(buf: "mmap.mmap") -> Callable[[bytes, int], int]:
    """``buf.find`` in C where the accelerator is (its rare-byte search: on the public Claude
    Code corpus a mapping's ``find`` was a quarter of verify, twice what this takes)."""
    from ..util import native

    nat = native.NATIVE
    if nat is None:
        return buf.find
    return lambda w, start: nat.find(buf, w, start)


def _newlines(buf: "mmap.mmap", start: int, end: int, piece: int = 1 << 24) -> int:
    """Newlines in ``buf[start:end]``: in C where the accelerator is (no copy), else counted a
    bounded piece at a time (a mapping has no ``count``; each piece is a copy)."""
    from ..util import native

    if native.NATIVE is not None:
        return native.NATIVE.count(buf, 10, start, end)
    total = 0
    while start < end:
        stop = min(end, start + piece)
        total += buf[start:stop].count(b"\n")
        start = stop
    return total


def open_transcript(t: Transcript, findings: list[Finding]) -> BinaryIO | None:
    """A transcript opened without following a symlink, or None and an ``unreadable`` finding."""
    from ..storage.local import open_regular

    try:
        return os.fdopen(open_regular(t.path), "rb")
    except OSError as exc:
        findings.append(finding("unreadable", path=t.path, session=t.session,
                                detail=f"cannot read the transcript: {exc.strerror or exc}"))
        return None


#: What :func:`read_json` returns for a file it could not use (the finding says why).
UNUSABLE = object()


def read_json(t: Transcript, findings: list[Finding]) -> object:
    """A whole-file JSON transcript (a legacy chat, an OpenCode part), or :data:`UNUSABLE`."""
    from ..util.text import loads_exact

    f = open_transcript(t, findings)
    if f is None:
        return UNUSABLE
    try:
        with f:
            return loads_exact(f.read())
    except OSError as exc:
        findings.append(finding("unreadable", path=t.path, detail=f"cannot read it: {exc.strerror or exc}"))
    except ValueError as exc:
        findings.append(finding("malformed-log", path=t.path, detail=f"not JSON: {exc}"))
    return UNUSABLE


def jsonl_records(t: Transcript, findings: list[Finding], wanted: tuple[bytes, ...]) -> Iterator[tuple[int, Any]]:
    """Each record (with its line) of a JSON Lines transcript whose raw line holds one of
    ``wanted``; a line that is not JSON is a ``malformed-log`` finding, unless it is the last
    and has no newline yet (still being written)."""
    from ..util.text import loads_exact

    f = open_transcript(t, findings)
    if f is None:
        return
    with f:
        for lineno, raw in lines_holding(f, wanted):
            try:
                rec = loads_exact(raw)
            except ValueError as exc:
                if raw.endswith(b"\n"):
                    findings.append(finding("malformed-log", path=t.path, line=lineno, session=t.session,
                                            detail=f"not JSON: {exc}"))
                continue
            yield lineno, rec


def jsonl_texts(t: Transcript, findings: list[Finding], wanted: tuple[bytes, ...],
                session: str | None = None) -> Iterable[Text]:
    """The strings of each record of a JSON Lines transcript whose raw line holds one of ``wanted``."""
    for lineno, rec in jsonl_records(t, findings, wanted):
        for s in json_strings(rec):
            yield Text(t, lineno, session if session is not None else t.session, s)
