"""qwen-code's notices, from its source (QwenLM/qwen-code ``packages/core/src/tools/truncation.ts``).

``buildStub`` at @38d5debb6062e74c371a9d9865ef9306783fb205::

    <persisted-output>
    Output too large (${Math.round(bytes / 1024)} KB). Full output saved to: ${abs}
    Full output sha256: ${sha256(content)}
    Total characters: ${content.length}; total lines: ${content.split('\\n').length}.
    Note: this file may be cleaned up after 24 hours.
    Page in with read_file using the absolute file_path above, offset (zero-based line) and limit (line count).

    Preview (up to 2000 chars):
    ${preview}
    </persisted-output>

and at @3b1ce40cd2244505e892b9f8baa8d5dd1ab221bf the same without the ``Total characters``
line and with ``To read the complete output, use the read_file tool with the absolute file
path above.`` as the hint; there the digest is the content's own *anchored* digest line
where it has one (``extractAnchoredFullDigest``: a shell failure block's), else its SHA-256.
Builds before the digest (issue #9450) wrote neither line. ``preview`` is
``generatePreview(content)``: the whole text up to 2000 UTF-16 units, else its first 2000 cut
at the last newline plus ``\\n...``, with ``<persisted-output>``/``<system-reminder>`` tags
escaped as ``&lt;…&gt;`` (or a JSON "Structured sample:", not recomputed here). The file
holds ``content`` (UTF-8, 0600).

The legacy form (``truncateAndSaveToFile``, ``<projectTempDir>/<tool>_<12 hex>.output``)::

    Tool output was too large and has been truncated.
    The full output has been saved to: ${abs}
    Total characters: ${length}; total lines: ${lines}.        (38d5debb)
    Full output sha256: ${sha256(content)}                       (38d5debb)
    …
    Truncated part of the output:
    ${head/tail}

Every check here is against the file: the digest (the strongest any agent offers: a changed
byte anywhere is a ``digest-mismatch``), the counts, the KB label, the preview recomputed.
"""

from __future__ import annotations

import hashlib
import re

from ..engine import Check, MalformedNotice, Notice

PERSISTED = "<persisted-output>\nOutput too large ("
LEGACY = "Tool output was too large and has been truncated.\n"
_PATH = re.compile(r"^(?:Output too large \((?P<kb>\d+) KB\)\. Full output saved to|The full output has been saved to): "
                   r"(?P<path>[^\n]*)$", re.M)
_DIGEST = re.compile(r"^Full output sha256: (?P<hex>[0-9a-f]{64})$", re.M)
_TOTALS = re.compile(r"^Total characters: (?P<chars>\d+); total lines: (?P<lines>\d+)\.$", re.M)
_PREVIEW = "\n\nPreview (up to 2000 chars):\n"
_CLOSE = "\n</persisted-output>"
_TAGS = re.compile(r"</?(?:persisted-output|system-reminder)>")
PREVIEW_SIZE_CHARS = 2000


def _js_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def generate_preview(content: str) -> str:
    """truncation.ts ``generatePreview`` (2000 UTF-16 units, cut at the last newline)."""
    if _js_units(content) <= PREVIEW_SIZE_CHARS:
        text = content
    else:
        head = content.encode("utf-16-le", "surrogatepass")[:2 * PREVIEW_SIZE_CHARS].decode("utf-16-le", "surrogatepass")
        nl = head.rfind("\n")
        text = (head[:nl] if nl > 0 else head) + "\n..."
    return _TAGS.sub(lambda m: f"&lt;{m.group(0)[1:-1]}&gt;", text)


def _anchored_digest(text: str) -> str | None:
    """The first line-anchored ``Full output sha256: <64 hex>`` in ``text`` (extractAnchoredFullDigest)."""
    m = re.search(r"(?:^|\n)Full output sha256: ([0-9a-f]{64})(?:\r|\n|\Z)", text)
    return m.group(1) if m else None


def parse(text: str) -> Notice | None:
    if text.startswith(PERSISTED):
        form = "persisted-output"
        end = text.find(_PREVIEW)
    elif text.startswith(LEGACY):
        form = "legacy-output"
        end = text.find("\n\nTruncated part of the output:\n")
    else:
        return None
    header = text if end < 0 else text[:end]
    m = _PATH.search(header)
    if m is None:
        if form == "persisted-output":
            return None  # "Output too large (N KB). (session disk budget exhausted)": no file was written
        raise MalformedNotice("a legacy truncation notice without 'The full output has been saved to: PATH'")
    checks: list[Check] = []
    d = _DIGEST.search(header)
    if d is not None:
        digest = d.group("hex")

        def sha(data: bytes) -> str | None:
            got = hashlib.sha256(data).hexdigest()
            if got == digest:
                return None
            text_ = _decode(data)
            if text_ is not None and _anchored_digest(text_) == digest:
                return None  # the content's own anchored digest, reused (truncation.ts @3b1ce40c)
            return f"the notice's sha256 {digest} is not the file's ({got})"
        checks.append(("sha256", "digest-mismatch", sha))
    t = _TOTALS.search(header)
    if t is not None:
        chars, lines = int(t.group("chars")), int(t.group("lines"))

        def totals(data: bytes) -> str | None:
            text_ = _decode(data)
            if text_ is None:
                return "the file is not UTF-8"
            got = (_js_units(text_), text_.count("\n") + 1)
            return None if got == (chars, lines) else (
                f"the notice says {chars} characters, {lines} lines; the file has {got[0]}, {got[1]}")
        checks.append(("totals", "size-label-mismatch", totals))
    if m.group("kb") is not None:
        kb = int(m.group("kb"))

        def label(data: bytes) -> str | None:
            want = (2 * len(data) + 1024) // 2048  # Math.round(bytes / 1024): a half goes up
            return None if want == kb else f"the notice says {kb} KB; the file's {len(data)} bytes are {want} KB"
        checks.append(("size-label", "size-label-mismatch", label))
    if form == "persisted-output" and end >= 0 and text.endswith(_CLOSE):
        preview = text[end + len(_PREVIEW):len(text) - len(_CLOSE)]
        if not preview.startswith("Structured sample:\n"):
            def prefix(data: bytes) -> str | None:
                text_ = _decode(data)
                if text_ is None:
                    return "the file is not UTF-8"
                return None if generate_preview(text_) == preview else (
                    "the preview is not generatePreview() of the file (its first 2000 characters, cut at a newline)")
            checks.append(("prefix", "preview-mismatch", prefix))
    return Notice(form, m.group("path"), tuple(checks), text)
