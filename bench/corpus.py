"""The adversarial corpus: a spill root and session logs built to break readers.

Generated, not hand-picked: every boundary of a valid transcript is cut, and each kind
of bad input the inspector meets in the wild is planted once. Each :class:`Item` says
where its finding must be reported (a file, or a log line).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostile
from spillscope.util.text import js_stringify, js_utf8
from spillscope.reference.message import render_reference_text
from spillscope.formats.transcript import render_transcript
from spillscope.spill.naming import encode_segment, session_dir_name
from spillscope.spill.policy import format_spill_notice
from spillscope.formats.notices import RETRIEVAL_HINT

TARGET = "corpus-target"
TOOLS = "corpus-tools"


@dataclass(frozen=True)
class Item:
    name: str
    #: Where the finding must point: an artifact path, or a log path (with ``line``).
    path: str
    line: int | None = None
    needs_unprivileged: bool = False


def _valid_transcript() -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    full = [
        {"role": "user", "text": "first question " * 20},
        {"role": "assistant", "text": "answer with 界😀é and \\ and \"quotes\"\n" * 10},
        {"role": "user", "text": "final words"},
    ]
    data = {"sessionId": "src", "label": "Source", "cwd": "/w", "capturedThroughSeq": 9, "conversation": full}
    body = js_utf8(render_transcript(data, 3))
    preview = {**data, "conversation": [full[-1]]}
    omitted = sum(len(js_utf8(m["text"])) for m in full[:-1])
    notice = {"sessionId": "src", "capturedThroughSeq": 9, "omittedMessages": 2, "omittedBytes": omitted}
    return body, preview, notice


class _Log:
    """A target session's log: one reference message per planted artifact."""

    def __init__(self, logs: Path, session_id: str) -> None:
        self.dir = logs / "--corpus--" / encode_segment(session_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "session.v3.jsonl"
        self.lines: list[str] = [js_stringify({"type": "session", "version": 3, "id": session_id, "createdAt": 0,
                                               "isSeeded": False, "delegationDepth": 0})]

    def row(self, kind: str, data: Any) -> int:
        self.lines.append(js_stringify({"type": kind, "seq": len(self.lines) - 1, "time": 0, "data": data,
                                        "surfaceOp": "append"}))
        return len(self.lines)

    def reference(self, preview: dict[str, Any], notice: dict[str, Any]) -> int:
        text = render_reference_text([preview], [notice])
        source = {"kind": "session-reference", "form": "recall", "version": 1, "references": []}
        return self.row("user/message", {"source": source, "content": [{"type": "text", "text": text}], "role": "user", "id": "r"})

    def raw_reference(self, notice_json: str, preview: dict[str, Any]) -> int:
        """A reference whose notice JSON is written as given (numbers JSON cannot type)."""
        text = render_reference_text([preview], [{"sessionId": "src"}]).replace('[{"sessionId":"src"}]', notice_json)
        source = {"kind": "session-reference", "form": "recall", "version": 1, "references": []}
        return self.row("user/message", {"source": source, "content": [{"type": "text", "text": text}], "role": "user", "id": "r"})

    def write(self, tail: bytes = b"") -> None:
        self.path.write_bytes(b"".join(js_utf8(l) + b"\n" for l in self.lines) + tail)


def _cuts(body: bytes) -> dict[str, int]:
    text = body.decode()
    lines = text.split("\n")

    def at(line_no: int, col: int = 0) -> int:
        return len("\n".join(lines[:line_no]).encode()) + (1 if line_no else 0) + col

    meta_start = lines.index("{")
    header = next(i for i, l in enumerate(lines) if l.startswith("### Message 2"))
    frag = next(i for i, l in enumerate(lines) if l.startswith('"') and i > header)
    return {
        "cut-in-title": 10,
        "cut-after-title": at(1),
        "cut-in-warning": at(4, 5),
        "cut-after-preamble": at(meta_start),
        "cut-in-metadata": at(meta_start + 2, 4),
        "cut-after-metadata": at(meta_start + 7),
        "cut-in-notes": at(meta_start + 9, 10),
        "cut-before-first-message": at(meta_start + 11),
        "cut-in-header": at(header, 7),
        "cut-after-header": at(header + 1),
        "cut-dangling-header": at(header + 2),
        "cut-in-fragment": at(frag, 20),
        "cut-inside-multibyte-char": at(frag, text.split("\n")[frag].encode().index("界".encode()) + 1),
        "cut-at-fragment-boundary": at(frag + 1),
        "cut-before-final-newline": len(body) - 1,
    }


def _mutations(body: bytes) -> dict[str, bytes]:
    text = body.decode()
    frag = next(l for l in text.split("\n") if l.startswith('"answer'))
    return {
        "fragment-over-64-code-points": text.replace(frag, json.dumps("x" * 65)).encode(),
        "fragment-invalid-json": text.replace(frag, '"unterminated').encode(),
        "fragment-number": text.replace(frag, "42").encode(),
        "fragment-object": text.replace(frag, '{"a": 1}').encode(),
        "fragment-null": text.replace(frag, "null").encode(),
        "fragment-two-strings": text.replace(frag, '"a","b"').encode(),
        "fragment-empty-string": text.replace(frag, '""').encode(),
        "invalid-utf8-in-fragment": text.replace(frag, '"bad \udcff bytes"').encode("utf-8", "surrogateescape"),
        "invalid-utf8-in-metadata": text.replace('"label": "Source"', '"label": "So\udcfe"').encode("utf-8", "surrogateescape"),
        "wrong-header": text.replace("## Referenced session", "## Referenced sessions").encode(),
        "metadata-missing-key": text.replace('  "cwd": "/w",\n', "").encode(),
        "metadata-not-object": text.replace("{\n", "[\n", 1).encode(),
        "metadata-bad-type": text.replace('"capturedThroughSeq": 9', '"capturedThroughSeq": "9"').encode(),
        "message-out-of-sequence": text.replace("### Message 2:", "### Message 7:").encode(),
        "unknown-role": text.replace("### Message 2: assistant", "### Message 2: system").encode(),
        "text-after-last-message": (text + "trailing words\n").encode(),
        "blank-then-garbage": (text + "\nmore garbage\n").encode(),
        "header-without-blank-line": text.replace("### Message 2: assistant\n\n", "### Message 2: assistant\n").encode(),
        "crlf-line-endings": text.replace("\n", "\r\n").encode(),
        "nul-bytes": text.replace(frag, frag[:5] + "\x00" + frag[5:]).encode(),
        "bom-at-start": b"\xef\xbb\xbf" + body,
    }


def _big_with_bad_tail() -> bytes:
    """6 MiB of message 2, one bad fragment line near its end: bigger than what the
    reader indexes on open, so the error is met while reading ahead."""
    text = render_transcript({"sessionId": "src", "label": "Source", "cwd": "/w", "capturedThroughSeq": 9,
                              "conversation": [{"role": "user", "text": "question"},
                                               {"role": "assistant", "text": "answer " * (6 << 17)}]}, 3)
    lines = text.split("\n")
    lines[len(lines) - 6] = "not json"
    return js_utf8("\n".join(lines))


def build(base: Path, *, huge_line_bytes: int = 2 << 30, quick: bool = True) -> tuple[Path, Path, list[Item]]:
    root, logs = base / "root", base / "logs"
    sdir = root / session_dir_name(TARGET)
    sdir.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    logs.mkdir(parents=True)
    log = _Log(logs, TARGET)
    body, preview, notice = _valid_transcript()
    items: list[Item] = []
    n = 0

    def plant(name: str, data: bytes | None, *, size_override: int | None = None) -> Path:
        nonlocal n
        n += 1
        path = sdir / f"{n:012x}-session-reference-{n}.txt"
        if data is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, data)
            os.close(fd)
        snap = {"status": "saved", "locator": str(path), "bytes": size_override if size_override is not None
                else (path.stat().st_size if data is not None else 0), "retrievalHint": RETRIEVAL_HINT}
        log.reference(preview, {**notice, "fullSnapshot": snap})
        items.append(Item(name, str(path)))
        return path

    # The intact one: must verify clean (it is the control, not an item).
    plant("control-valid", body)
    items.pop()
    for name, cut in _cuts(body).items():
        plant(name, body[:cut])
    for name, data in _mutations(body).items():
        plant(name, data)
    plant("empty-file", b"")
    plant("malformed-tail-of-a-big-message", _big_with_bad_tail())
    # A huge single line (sparse: it costs no disk): the title, then one endless line.
    huge = plant("huge-single-line", b"## Referenced session \xe2\x80\x94 full projected snapshot\n\n")
    with open(huge, "r+b") as f:
        f.truncate(huge_line_bytes)
    # Entries that are not files.
    d = plant("directory-where-a-file-belongs", None)
    d.mkdir()
    fifo = plant("fifo", None)
    os.mkfifo(fifo, 0o600)
    loop_a = plant("symlink-loop", None)
    loop_b = sdir / "ffffffffffff-loop-b.txt"
    os.symlink(loop_b, loop_a)
    os.symlink(loop_a, loop_b)
    outside = base / "outside-secret.txt"
    outside.write_text("secret")
    os.symlink(outside, plant("symlink-out-of-root", None))
    locked = plant("unreadable-by-permission", body)
    locked.chmod(0)
    items[-1] = Item("unreadable-by-permission", str(locked), needs_unprivileged=True)
    loose = plant("world-readable", body)
    loose.chmod(0o644)

    # Notices whose numbers are negative, huge, or not numbers.
    good = str(sdir / "000000000001-session-reference-1.txt")
    snap = {"status": "saved", "locator": good, "bytes": len(body), "retrievalHint": RETRIEVAL_HINT}
    for name, value in (("negative", "-5"), ("huge-int", str(2**70)), ("huge-float", "1e308"), ("string", '"12"'),
                        ("fraction", "1.5"), ("null", "null"), ("boolean", "true")):
        notice_json = ('[{"sessionId":"src","capturedThroughSeq":9,"omittedMessages":2,"omittedBytes":' + value
                       + ',"fullSnapshot":' + js_stringify(snap).replace("<", "\\u003c") + "}]")
        line = log.raw_reference(notice_json, preview)
        items.append(Item(f"notice-omittedBytes-{name}", str(log.path), line))
    for name, locator in (("dotdot", str(sdir) + "/../" + session_dir_name(TARGET) + "/x.txt"), ("nul", str(sdir) + "/a\x00b.txt"),
                          ("windows-path", "C:\\spill\\session-000000000000\\aaaaaaaaaaaa-bash.txt"),
                          ("uri", "s3://bucket/session-000000000000/aaaaaaaaaaaa-bash.txt"), ("relative", "session-x/y.txt"),
                          ("empty", "")):
        line = log.reference(preview, {**notice, "fullSnapshot": {**snap, "locator": locator}})
        items.append(Item(f"locator-{name}", str(log.path), line))
    line = log.reference(preview, {**notice, "fullSnapshot": {"status": "saved-ish", "locator": good}})
    items.append(Item("notice-unknown-status", str(log.path), line))
    line = log.row("user/message", {"source": {"kind": "session-reference"}, "content": [{"type": "text", "text": "## Referenced sessions\n\nnot the format"}], "role": "user", "id": "x"})
    items.append(Item("reference-message-not-the-format", str(log.path), line))
    # Tool results whose spill notice points somewhere odd.
    for name, locator in (("tool-dotdot", "/tmp/../etc/passwd"), ("tool-missing", str(sdir) + "/eeeeeeeeeeee-bash.txt")):
        text = "preview\n\n" + format_spill_notice(10, locator, RETRIEVAL_HINT)
        line = log.row("tool/result", {"message": {"source": {"kind": "tool", "callId": "c"}, "content": [
            {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": text}], "isError": False}],
            "role": "tool", "id": "t"}})
        items.append(Item(f"tool-locator-{name}", str(log.path), line))
    # Malformed log lines, and a torn last line.
    log.lines.append('{"type": "user/message", "seq": 999, broken json')
    items.append(Item("log-invalid-json-line", str(log.path), len(log.lines)))
    log.lines.append("[1, 2, 3]")
    items.append(Item("log-line-not-an-object", str(log.path), len(log.lines)))
    log.lines.append("")
    items.append(Item("log-empty-line", str(log.path), len(log.lines)))
    log.write(tail=b'{"type": "user/message", "seq": 1000, "da')
    items.append(Item("log-torn-last-line", str(log.path), len(log.lines) + 1))
    # A log that is not even JSONL, in a second session.
    other = _Log(logs, "corpus-garbage")
    other.path.write_bytes(b"\x00\xff\xfe not json at all\n")
    items.append(Item("log-binary-garbage", str(other.path), 1))
    # Every class of hostile and huge input from issue #12 (bench/hostile.py).
    items += [Item(name, path, line, unpriv) for name, path, line, unpriv in hostile.plant_corpus(root, logs, quick)]
    return root, logs, items
