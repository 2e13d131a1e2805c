"""Rich notebook objects on the inspector core: ``spillscope.open(root, logs)``.

Every object renders as HTML in Jupyter (``_repr_html_``) and as readable text
elsewhere (``__repr__``); ``to_records()`` gives plain dicts for pandas or anything
else. Untrusted text is HTML-escaped with controls made visible. Nothing here needs a
notebook package to import.
"""

from __future__ import annotations

import html
import os
from typing import Any, AsyncIterator, Iterator

from .format import count, human_age, human_size
from ..util.fs import normalize_root
from ..util.text import visible
from ..inspect.coverage import coverage, describe
from ..inspect.findings import CODES, SEVERITY_RANK, Finding
from ..inspect.scan import Artifact
from ..inspect.search import Pattern, SearchHit, search_root
from ..inspect.links import ReferenceLink
from ..inspect.verify import Inspection, inspect_root
from ..inspect.watch import ChangeEvent, awatch_root
from ..reference.join import join_offset
from ..formats.transcript import Transcript, read_transcript
from ..spill.naming import session_dir_name

#: Messages longer than this are collapsed (with their size) in the HTML view.
COLLAPSE_CHARS = 2000

_STYLE = """<style>
.spillscope{font-family:ui-monospace,Menlo,monospace;font-size:12px}
.spillscope table{border-collapse:collapse}
.spillscope td,.spillscope th{border:1px solid #8884;padding:2px 6px;vertical-align:top;text-align:left}
.spillscope .badge{display:inline-block;padding:0 4px;margin:0 2px;border-radius:3px;background:#ddd;color:#000}
.spillscope .error{background:#c62828;color:#fff}.spillscope .warning{background:#f9a825;color:#000}
.spillscope .info{background:#90a4ae;color:#000}
.spillscope .side{display:flex;gap:12px}.spillscope .side>div{flex:1;border:1px solid #8886;padding:6px}
.spillscope pre{white-space:pre-wrap;margin:2px 0}
.spillscope .bad{color:#c62828;font-weight:bold}
.spillscope mark.cut{background:#444;color:#fff;padding:0 2px}
</style>"""


def esc(text: object) -> str:
    """HTML-escape untrusted text, with controls and lone surrogates made visible."""
    return html.escape(visible(str(text)), quote=True)


def _badges(findings: list[Finding]) -> str:
    seen: dict[str, str] = {}
    for f in findings:
        seen.setdefault(f.code, f.severity)
    return "".join(f'<span class="badge {sev}">{esc(code)}</span>' for code, sev in sorted(seen.items()))


def _wrap(body: str) -> str:
    return f'{_STYLE}<div class="spillscope">{body}</div>'


class Findings:
    """A findings table: sortable (``.sorted(key)``), as records, as HTML."""

    def __init__(self, findings: list[Finding]) -> None:
        self.items = list(findings)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.items)

    def sorted(self, key: str = "severity") -> Findings:
        if key == "severity":
            return Findings(sorted(self.items, key=lambda f: (-SEVERITY_RANK[f.severity], f.code, f.where)))
        return Findings(sorted(self.items, key=lambda f: str(getattr(f, key) or "")))

    def where(self, code: str) -> Findings:
        """The findings with this code (or of this severity: ``"error"``, ``"warning"``, ``"info"``).
        An unknown code raises ``ValueError``: a typo must not look like "none found"."""
        if code in SEVERITY_RANK:
            return Findings([f for f in self.items if f.severity == code])
        if code not in CODES:
            raise ValueError(f"unknown finding code {code!r}; the codes are: {', '.join(CODES)} "
                             "(or a severity: error, warning, info)")
        return Findings([f for f in self.items if f.code == code])

    def to_records(self) -> list[dict[str, Any]]:
        return [f.to_json() for f in self.items]

    def __repr__(self) -> str:
        lines = [count(len(self.items), 'finding')]
        lines += [f"  {f.severity:<7} {f.code:<20} {visible(f.where, one_line=True)}  {visible(f.detail, one_line=True)}" for f in self.items]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><span class='badge {f.severity}'>{esc(f.severity)}</span></td><td>{esc(f.code)}</td>"
            f"<td>{esc(f.where)}</td><td>{esc(f.session or '')}</td><td>{esc(f.detail)}</td></tr>"
            for f in self.items
        )
        # data-sort lets the table be sorted by clicking a header (see the script below).
        script = ("<script>document.querySelectorAll('table.sortable th').forEach((th,i)=>th.onclick=()=>{"
                  "const t=th.closest('table'),b=t.tBodies[0],r=[...b.rows];const d=th.dataset.d=th.dataset.d==='a'?'d':'a';"
                  "r.sort((x,y)=>(x.cells[i].innerText>y.cells[i].innerText?1:-1)*(d==='a'?1:-1));r.forEach(x=>b.appendChild(x));});</script>")
        return _wrap(f"<b>{count(len(self.items), 'finding')}</b><table class='sortable'><thead><tr><th>severity</th><th>code</th>"
                     f"<th>where</th><th>session</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table>{script}")


class TranscriptView:
    """A saved transcript: messages with roles; long texts collapsed with their size."""

    def __init__(self, transcript: Transcript) -> None:
        self.transcript = transcript

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.to_records()

    def text(self, n: int) -> str:
        """The exact text of message ``n`` (1-based); ``IndexError`` saying the range otherwise."""
        messages = self.transcript.messages
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"message number must be an int, not {type(n).__name__}")
        if not 1 <= n <= len(messages):
            have = f"messages 1 to {len(messages)}" if messages else "no messages"
            raise IndexError(f"no message {n}: this transcript has {have} (numbered from 1)")
        return messages[n - 1].text

    def to_records(self) -> list[dict[str, Any]]:
        return [{"index": m.index, "role": m.role, "text": m.text, "chars": len(m.text)} for m in self.transcript.messages]

    def __repr__(self) -> str:
        meta = self.transcript.metadata
        head = f"Transcript {visible(self.transcript.path, one_line=True)} ({len(self.transcript.messages)} messages"
        head += ")" if self.transcript.complete else f", INCOMPLETE: {self.transcript.incomplete.reason})"  # type: ignore[union-attr]
        lines = [head, f"  session {visible(meta.session_id, one_line=True)} label {visible(meta.label, one_line=True)}" if meta else "  (no metadata)"]
        for m in self.transcript.messages:
            short = visible(m.text[:120], one_line=True) + ("…" if len(m.text) > 120 else "")
            lines.append(f"  [{m.index}] {m.role}: {short}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        meta = self.transcript.metadata
        parts = [f"<b>Transcript</b> {esc(self.transcript.path)}"]
        if meta is not None:
            parts.append(f"<div>session <code>{esc(meta.session_id)}</code> label <code>{esc(meta.label)}</code> "
                         f"captured through seq {esc(meta.captured_through_seq)}</div>")
        if not self.transcript.complete:
            parts.append(f"<div class='bad'>incomplete: {esc(self.transcript.incomplete.reason)}</div>")  # type: ignore[union-attr]
        for m in self.transcript.messages:
            body = f"<pre>{esc(m.text)}</pre>"
            if len(m.text) > COLLAPSE_CHARS:
                body = (f"<details><summary>{len(m.text)} characters, {len(m.text.encode('utf-8', 'replace'))} bytes"
                        f" — show</summary>{body}</details>")
            parts.append(f"<div><b>Message {m.index}: {esc(m.role)}</b>{body}</div>")
        return _wrap("".join(parts))


class Reference:
    """One reference: the preview the model saw beside its omission notice."""

    def __init__(self, link: ReferenceLink) -> None:
        self.link = link

    @property
    def status(self) -> str:
        return self.link.status

    @property
    def locator(self) -> str | None:
        return self.link.entry.locator

    def transcript(self) -> TranscriptView:
        if self.link.artifact is None:
            raise FileNotFoundError(f"no artifact for this reference ({self.link.status})")
        return TranscriptView(read_transcript(self.link.artifact.path))

    def to_records(self) -> list[dict[str, Any]]:
        e, rec = self.link.entry, self.link.recomputed
        notice = e.notice or {}
        return [{
            "log": e.log, "line": e.line, "target": e.target_session, "sessionId": e.session_id, "label": e.label,
            "status": self.link.status, "locator": e.locator,
            "omittedMessages": notice.get("omittedMessages"), "omittedBytes": notice.get("omittedBytes"),
            "recomputedOmittedMessages": rec.omitted_messages if rec else None,
            "recomputedOmittedBytes": rec.omitted_bytes if rec else None,
            "findings": [f.code for f in self.link.findings],
        }]

    def __repr__(self) -> str:
        r = self.to_records()[0]
        head = f"Reference {visible(r['label'], one_line=True)} ({visible(r['sessionId'], one_line=True)}) → {r['status']}"
        if self.link.entry.notice is None:
            return head + "\n  intact: nothing omitted, no notice, no saved transcript"

        def counts(name: str, logged: Any, again: Any) -> str:
            return f"  {name:<15} logged {logged}, " + (f"recomputed {again}" if again is not None else why)

        why = {"expired": "not recomputed: the artifact is gone", "outside-root": "not recomputed: the locator is outside the root",
               "unavailable": "not recomputed: no snapshot was saved", "invalid": "not recomputed: the notice is malformed",
               "unverified": "not recomputed: the root or session dir cannot be read",
               }.get(self.link.status, "not recomputed: the artifact could not be read")
        locator = f"  locator {visible(r['locator'], one_line=True)}" if r["locator"] is not None else "  no locator"
        return "\n".join([head, counts("omittedMessages", r["omittedMessages"], r["recomputedOmittedMessages"]),
                          counts("omittedBytes", r["omittedBytes"], r["recomputedOmittedBytes"]), locator])

    def _repr_html_(self) -> str:
        e, rec = self.link.entry, self.link.recomputed
        conv = e.preview.get("conversation")
        items = conv if isinstance(conv, list) else []
        joins = rec.joins if rec else ()
        preview = "".join(
            f"<div><b>{esc(m.get('role') if isinstance(m, dict) else '?')}</b>"
            f"<pre>{_cut_html(m.get('text'), joins[i] if i < len(joins) else None) if isinstance(m, dict) else esc(m)}</pre></div>"
            for i, m in enumerate(items)
        )
        notice = e.notice or {}
        stats = e.stats or {}
        rows = []
        for field, logged, again in (
            ("omittedMessages", notice.get("omittedMessages"), rec.omitted_messages if rec else None),
            ("omittedBytes", notice.get("omittedBytes"), rec.omitted_bytes if rec else None),
            ("originalMessages", stats.get("originalMessages"), rec.original_messages if rec else None),
            ("retainedMessages", stats.get("retainedMessages"), rec.retained_messages if rec else None),
        ):
            cls = "" if again is None or again == logged else " class='bad'"
            rows.append(f"<tr><td>{field}</td><td>{esc(logged)}</td><td{cls}>{esc('—' if again is None else again)}</td></tr>")
        snap = e.snapshot or {}
        resolves = {"resolves": "✔ resolves", "expired": "✘ EXPIRED — the artifact is gone; the notice remains",
                    "unavailable": f"unavailable: {snap.get('reason')}", "intact": "intact: nothing omitted",
                    "outside-root": "⚠ outside the inspected root", "invalid": "⚠ malformed notice",
                    "normalized": "ℹ replay-normalised locator (matched by name)",
                    "unverified": "⚠ UNVERIFIED — the root or session dir cannot be read"}[self.link.status]
        cls = "bad" if self.link.status in ("expired", "invalid", "unverified") else ""
        right = (f"<b>Omission notice</b><table><tr><th>field</th><th>logged</th><th>recomputed</th></tr>{''.join(rows)}</table>"
                 f"<div>locator <code>{esc(snap.get('locator', '—'))}</code></div>"
                 f"<div>hint {esc(snap.get('retrievalHint', '—'))}</div><div class='{cls}'>{esc(resolves)}</div>"
                 f"<div>{_badges(self.link.findings)}</div>")
        left = f"<b>Preview — what the model saw</b> <code>{esc(e.session_id)}</code> {esc(e.label)}{preview}"
        return _wrap(f"<div class='side'><div class='preview'>{left}</div><div class='notice'>{right}</div></div>")


def _cut_html(text: object, exact_join: int | None) -> str:
    """A preview message as HTML, with ✂ where its middle was cut (≈✂ when estimated)."""
    if not isinstance(text, str):
        return esc(text)
    if exact_join is not None:
        at, mark, why = exact_join, "✂", "the middle of the message was cut here: head before, tail after"
    else:
        found = join_offset(text)
        if found is None:
            return esc(text)
        at, mark, why = found[0], "≈✂", "the middle was cut about here (estimated: the transcript was not checked)"
    return f"{esc(text[:at])}<mark class='cut' title='{why}'>{mark}</mark>{esc(text[at:])}"


class Session:
    """A session dir (and what the logs say was referenced into it)."""

    def __init__(self, inspector: Inspector, dir_name: str) -> None:
        self.inspector = inspector
        self.dir = dir_name
        ins = inspector.inspection
        self.session_id = ins.session_ids.get(dir_name)
        scanned = next((s for s in ins.scan.sessions if s.name == dir_name), None)
        self.artifacts: list[Artifact] = scanned.artifacts if scanned else []
        self.references = [Reference(l) for l in ins.references if session_dir_name(l.entry.target_session) == dir_name]

    def findings(self) -> Findings:
        paths = {a.path for a in self.artifacts}
        refs = {id(f) for r in self.references for f in r.link.findings}
        return Findings([f for f in self.inspector.inspection.findings if f.path in paths or id(f) in refs])

    def to_records(self) -> list[dict[str, Any]]:
        return [{"dir": self.dir, "sessionId": self.session_id, "name": a.name, "kind": a.kind, "size": a.size,
                 "mtime": a.mtime, "mode": f"{a.mode:04o}"} for a in self.artifacts]

    def __repr__(self) -> str:
        return (f"Session {self.dir} ({visible(self.session_id or 'id unknown', one_line=True)}): {count(len(self.artifacts), 'artifact')}, "
                f"{count(len(self.references), 'reference')}")

    def _repr_html_(self) -> str:
        import time

        now = time.time()
        rows = "".join(f"<tr><td>{esc(a.name)}</td><td>{esc(a.kind)}</td><td>{human_size(a.size)}</td>"
                       f"<td>{human_age(now - a.mtime)}</td><td>{_badges(self.inspector.inspection.findings_for(a.path))}</td></tr>"
                       for a in self.artifacts)
        refs = "".join(f"<li>{esc(r.link.entry.label)} → {esc(r.status)} {_badges(r.link.findings)}</li>" for r in self.references)
        return _wrap(f"<b>Session</b> <code>{esc(self.session_id or self.dir)}</code> ({esc(self.dir)})"
                     f"<table><tr><th>artifact</th><th>kind</th><th>size</th><th>age</th><th>findings</th></tr>{rows}</table>"
                     f"<div>references:<ul>{refs}</ul></div>")


class SearchResults:
    """Hits of :meth:`Inspector.search`: a table (HTML with the hit marked, green when
    the model saw it, red when omitted), ``to_records()`` in the ``grep --json`` shape
    plus the context, and the artifacts that could not be searched (``findings``)."""

    def __init__(self, pattern: str, hits: list[SearchHit], findings: list[Finding]) -> None:
        self.pattern, self.hits, self.findings = pattern, hits, Findings(findings)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def to_records(self) -> list[dict[str, Any]]:
        return [{**h.to_json(), "role": h.role, "before": h.before, "match": h.match, "after": h.after} for h in self.hits]

    def __repr__(self) -> str:
        lines = [f"{count(len(self.hits), 'hit')} for {visible(self.pattern)!r}"]
        for h in self.hits:
            where = f"message {h.message}" if h.message is not None else "tool output"
            seen = {True: "seen", False: "omitted", None: "unlinked"}[h.seen]
            lines.append(f"  {visible(h.path)} {where} cp {h.start}-{h.end} {seen}: "
                         f"{visible(h.before)}[[{visible(h.match)}]]{visible(h.after)}")
        if len(self.findings):
            lines.append(f"  not searched: {count(len(self.findings), 'artifact')}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for h in self.hits:
            cls = {True: "seen", False: "omitted", None: "unlinked"}[h.seen]
            where = f"message {h.message} ({esc(h.role)})" if h.message is not None else "tool output"
            rows.append(f"<tr><td>{esc(h.path)}</td><td>{esc(h.session or h.session_dir)}</td><td>{where}</td>"
                        f"<td>{h.start}–{h.end}</td><td><span class='hit-{cls}'>{cls}</span></td>"
                        f"<td>{esc(h.before)}<mark class='hit-{cls}'>{esc(h.match)}</mark>{esc(h.after)}</td></tr>")
        style = ("<style>.spillscope .hit-seen{background:#2e7d32;color:#fff}.spillscope .hit-omitted{background:#c62828;"
                 "color:#fff}.spillscope .hit-unlinked{background:#f9a825;color:#000}</style>")
        bad = f"<div class='bad'>not searched: {count(len(self.findings), 'artifact')}</div>" if len(self.findings) else ""
        return _wrap(f"{style}<b>{count(len(self.hits), 'hit')}</b> for <code>{esc(self.pattern)}</code>{bad}"
                     "<table><tr><th>artifact</th><th>session</th><th>where</th><th>code points</th><th>model</th>"
                     f"<th>context</th></tr>{''.join(rows)}</table>")


class Inspector:
    """A spill root (and optionally its logs), inspected once; call :meth:`refresh` to rescan."""

    def __init__(self, root: str | os.PathLike[str], logs: str | os.PathLike[str] | None = None, *,
                 rebase: str | None = None, retention_seconds: float | None = None) -> None:
        self.root = normalize_root(root)  # a directory or s3://bucket/prefix
        self.logs = None if logs is None else os.path.abspath(os.fspath(logs))
        self.rebase = rebase
        self.retention_seconds = retention_seconds
        self.inspection: Inspection = self._inspect()

    def _inspect(self) -> Inspection:
        return inspect_root(self.root, self.logs, rebase=self.rebase, retention_seconds=self.retention_seconds)

    def refresh(self) -> Inspector:
        self.inspection = self._inspect()
        return self

    @property
    def sessions(self) -> list[Session]:
        names = {s.name for s in self.inspection.scan.sessions}
        names |= {session_dir_name(l.entry.target_session) for l in self.inspection.references}
        return [Session(self, n) for n in sorted(names)]

    def session(self, key: str) -> Session:
        """By session id or dir name."""
        name = key if key.startswith("session-") else session_dir_name(key)
        return Session(self, name)

    @property
    def references(self) -> list[Reference]:
        return [Reference(l) for l in self.inspection.references]

    def reference(self, label_or_session: str) -> Reference:
        for r in self.references:
            if label_or_session in (r.link.entry.label, r.link.entry.session_id):
                return r
        known = ", ".join(repr(r.link.entry.label) for r in self.references) or "none"
        raise KeyError(f"no reference with label or session id {label_or_session!r} (labels: {known})")

    def findings(self) -> Findings:
        return Findings(self.inspection.findings).sorted()

    def expired(self) -> list[Reference]:
        return [r for r in self.references if r.status == "expired"]

    def transcript(self, path: str | os.PathLike[str]) -> TranscriptView:
        return TranscriptView(read_transcript(path))

    def search(self, pattern: str, *, regex: bool = False, ignore_case: bool = False,
               max_count: int | None = None) -> SearchResults:
        """Every hit of ``pattern`` in the exact text of the root's transcripts and tool
        outputs (what ``spillscope grep`` finds), with seen/omitted from the logs."""
        hits: list[SearchHit] = []
        bad: list[Finding] = []
        for ev in search_root(self.root, Pattern(pattern, regex, ignore_case), logs=self.logs, rebase=self.rebase,
                              max_count=max_count):
            (bad if isinstance(ev, Finding) else hits).append(ev)  # type: ignore[arg-type]
        return SearchResults(pattern, hits, bad)

    def verify(self) -> Findings:
        """Rescan and return the findings (worst first)."""
        return self.refresh().findings()

    def to_records(self) -> list[dict[str, Any]]:
        return [r for s in self.sessions for r in s.to_records()]

    async def watch(self) -> AsyncIterator[ChangeEvent]:
        """Change events under the root, as they happen (``async for ev in insp.watch()``),
        and the watch's own (``live``, ``stale``, ``root-missing``…; their ``kind`` is None)."""
        async for batch in awatch_root(self.root):
            for ev in batch:
                yield ev

    def __repr__(self) -> str:
        ins = self.inspection
        lines = [f"Spill root {self.root}: {count(len(ins.scan.sessions), 'session dir')}, {count(len(ins.scan.artifacts()), 'artifact')}, "
                 f"{count(len(ins.references), 'reference')}"]
        for s in self.sessions:
            lines.append("  " + repr(s))
        lines.append("  findings: " + (", ".join(f"{k} {v}" for k, v in ins.summary().items()) or "none"))
        lines += ["  " + visible(line) for line in describe(coverage(ins))]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = []
        for s in self.sessions:
            rows.append(f"<tr><td><code>{esc(s.session_id or '')}</code></td><td>{esc(s.dir)}</td><td>{len(s.artifacts)}</td>"
                        f"<td>{len(s.references)}</td><td>{_badges(s.findings().items)}</td></tr>")
        summary = ", ".join(f"{esc(k)} {v}" for k, v in self.inspection.summary().items()) or "no findings"
        cov = coverage(self.inspection)
        summary += "".join(f"<div{' class=bad' if cov.unchecked else ''}>{esc(line)}</div>" for line in describe(cov))
        return _wrap(f"<b>Spill root</b> <code>{esc(self.root)}</code><br>{summary}"
                     f"<table><tr><th>session</th><th>dir</th><th>artifacts</th><th>references</th><th>findings</th></tr>"
                     f"{''.join(rows)}</table>")


def open(root: str | os.PathLike[str], logs: str | os.PathLike[str] | None = None, **kwargs: Any) -> Inspector:  # noqa: A001
    """Inspect ``root`` (with ``logs`` to link notices to artifacts) for a notebook."""
    return Inspector(root, logs, **kwargs)
