"""The notebook view of one reference: the preview the model saw beside its omission notice,
with ✂ where a message's middle was cut.

Separate because it is the richest view and the only one that reads the recomputed counts."""

from __future__ import annotations

from typing import Any

from ...util.text import visible
from ...inspect.link.records import ReferenceLink
from ...reference.join import join_offset
from ...formats.transcript.reader import read_transcript
from .render import _badges, _wrap, esc
from .transcript import TranscriptView

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
