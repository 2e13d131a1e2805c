"""Hostile and huge inputs, one generator per input dimension (issue #12).

Each ``make_<dimension>(base, n)`` writes a spill root and a logs dir under ``base`` whose
size grows linearly with ``n`` along that one dimension, and returns a :class:`Case`
(root, logs, and a transcript to ``cat`` where that applies). ``bench/scaling.py`` times
the commands at n and 10n; the adversarial corpus and the tests use the same generators
at sizes that show each class.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from spillscope.util.text import js_stringify, js_utf8
from spillscope.reference.message import render_reference_text
from spillscope.formats.transcript import render_transcript
from spillscope.spill.naming import encode_segment, session_dir_name
from spillscope.spill.policy import format_spill_notice
from spillscope.formats.notices import RETRIEVAL_HINT

TARGET = "hostile-target"


@dataclass(frozen=True)
class Case:
    root: Path
    logs: Path
    #: An artifact to ``cat``, where the dimension is about a transcript's content.
    cat: Path | None = None


def _write(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


class Log:
    """A target session's log, written line by line (rows are JSON objects)."""

    def __init__(self, logs: Path, session_id: str = TARGET, name: str = "session.v3.jsonl") -> None:
        self.dir = logs / "--hostile--" / encode_segment(session_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / name
        self.lines: list[bytes] = [js_utf8(js_stringify({"type": "session", "version": 3, "id": session_id,
                                                         "createdAt": 0, "isSeeded": False, "delegationDepth": 0}))]

    def row(self, kind: str, data: Any) -> int:
        self.lines.append(js_utf8(js_stringify({"type": kind, "seq": len(self.lines) - 1, "time": 0, "data": data,
                                                "surfaceOp": "append"})))
        return len(self.lines)

    def raw(self, line: bytes) -> int:
        self.lines.append(line)
        return len(self.lines)

    def reference(self, preview: dict[str, Any], notice: dict[str, Any]) -> int:
        text = render_reference_text([preview], [notice])
        source = {"kind": "session-reference", "form": "recall", "version": 1, "references": []}
        return self.row("user/message", {"source": source, "content": [{"type": "text", "text": text}],
                                         "role": "user", "id": "r"})

    def tool_result(self, text: str, call_id: str = "c") -> int:
        return self.row("tool/result", {"message": {"source": {"kind": "tool", "callId": call_id}, "content": [
            {"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}], "isError": False}],
            "role": "tool", "id": "t"}})

    def write(self) -> Path:
        with open(self.path, "wb") as f:
            for line in self.lines:
                f.write(line + b"\n")
        return self.path


def _dirs(base: Path) -> tuple[Path, Path, Path]:
    root, logs = base / "root", base / "logs"
    sdir = root / session_dir_name(TARGET)
    sdir.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    logs.mkdir(parents=True)
    return root, logs, sdir


def transcript(conversation: list[dict[str, str]]) -> tuple[bytes, dict[str, Any]]:
    data = {"sessionId": "src", "label": "Source", "cwd": "/w", "capturedThroughSeq": 9, "conversation": conversation}
    return js_utf8(render_transcript(data, 3)), data


def plant_reference(log: Log, sdir: Path, name: str, conversation: list[dict[str, str]],
                    preview_conversation: list[dict[str, str]] | None = None) -> Path:
    """A transcript artifact plus a reference notice naming it (the newest message kept)."""
    body, data = transcript(conversation)
    path = sdir / name
    _write(path, body)
    log.reference(*reference_parts(path, len(body), conversation, preview_conversation))
    return path


def reference_parts(path: Path, size: int, conversation: list[dict[str, str]],
                    preview_conversation: list[dict[str, str]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    kept = preview_conversation if preview_conversation is not None else conversation[-1:]
    preview = {"sessionId": "src", "label": "Source", "cwd": "/w", "capturedThroughSeq": 9, "conversation": kept}
    omitted = sum(len(js_utf8(m["text"])) for m in conversation[: len(conversation) - len(kept)])
    notice = {"sessionId": "src", "capturedThroughSeq": 9, "omittedMessages": len(conversation) - len(kept),
              "omittedBytes": omitted, "fullSnapshot": {"status": "saved", "locator": str(path), "bytes": size,
                                                         "retrievalHint": RETRIEVAL_HINT}}
    return preview, notice


def _messages(n: int, text: str = "short message {i}") -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "text": text.format(i=i)} for i in range(n)]


# ---- one generator per dimension -------------------------------------------------------

def make_messages(base: Path, n: int) -> Case:
    """One transcript of ``n`` short messages (the 30,000-message case)."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    art = plant_reference(log, sdir, "000000000001-session-reference-1.txt", _messages(n))
    log.write()
    return Case(root, logs, art)


def make_fragments(base: Path, n: int) -> Case:
    """One message of ``n`` fragment lines (64 code points each)."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    conv = [{"role": "user", "text": "q"}, {"role": "assistant", "text": ("frag 界😀 " * 8)[:64] * n},
            {"role": "user", "text": "the newest message, kept in the preview"}]
    art = plant_reference(log, sdir, "000000000001-session-reference-1.txt", conv)
    log.write()
    return Case(root, logs, art)


def make_notices(base: Path, n: int) -> Case:
    """``n`` reference notices in one log, each naming its own small transcript."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    conv = _messages(3)
    for i in range(n):
        plant_reference(log, sdir, f"{i:012x}-session-reference-1.txt", conv)
    log.write()
    return Case(root, logs)


def make_one_artifact(base: Path, n: int, artifact_bytes: int = 1 << 20) -> Case:
    """``n`` notices all naming one transcript of ``artifact_bytes`` (re-read per notice?)."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    per = 2000
    conv = _messages(max(2, artifact_bytes // per), text="m{i} " + "x" * per)
    body, _ = transcript(conv)
    path = sdir / "000000000001-session-reference-1.txt"
    _write(path, body)
    parts = reference_parts(path, len(body), conv)
    for _ in range(n):
        log.reference(*parts)
    log.write()
    return Case(root, logs, path)


def make_log_lines(base: Path, n: int) -> Case:
    """A log of ``n`` ordinary rows (assistant messages, tool calls and results)."""
    root, logs, _ = _dirs(base)
    log = Log(logs)
    for i in range(n):
        log.row("assistant/message", {"turn": i, "step": 0, "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"answer {i}"}], "source": {"kind": "model"}, "id": f"a{i}"}})
    log.write()
    return Case(root, logs)


def make_line_length(base: Path, n: int, lines: int = 3) -> Case:
    """``lines`` tool results of ``n`` KiB each ending in a spill notice (long log lines)."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    preview = ("line of tool output 界\n" * (n * 1024 // 25 + 1))[: n * 1024]
    for i in range(lines):
        path = sdir / f"{i:012x}-bash.txt"
        _write(path, js_utf8(preview) + b"rest")
        log.tool_result(preview + "\n\n" + format_spill_notice(4, str(path), RETRIEVAL_HINT), f"c{i}")
    log.write()
    return Case(root, logs)


LOOKALIKE = "\n\n( Full formatted result stored at: /p"
LOOKALIKE_BAD_COUNT = "\n\n(Omitted x bytes. Full formatted result stored at: "


def make_lookalikes(base: Path, n: int) -> Case:
    """Tool results holding ``n`` notice look-alikes: one ending in ``)`` with no real
    notice (each look-alike is a candidate with no ``. `` after it), one whose look-alikes
    have a bad count and end in a real notice."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    log.tool_result("head" + LOOKALIKE * n + ")", "c1")
    path = sdir / "000000000001-bash.txt"
    preview = "head" + LOOKALIKE_BAD_COUNT * n
    _write(path, js_utf8(preview) + b"tail")
    log.tool_result(preview + "\n\n" + format_spill_notice(4, str(path), RETRIEVAL_HINT), "c2")
    log.write()
    return Case(root, logs)


def make_preview_length(base: Path, n: int, messages: int = 3000) -> Case:
    """A preview message of ``n`` KiB checked against a ``messages``-message transcript
    that it matches nowhere (every candidate must be ruled out)."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    conv = _messages(messages)
    big = {"role": "user", "text": "P" * (n * 1024) + "\n[… omitted 7 UTF-8 bytes …]"}
    plant_reference(log, sdir, "000000000001-session-reference-1.txt", conv, [big, conv[-1]])
    log.write()
    return Case(root, logs)


def make_artifacts(base: Path, n: int) -> Case:
    """``n`` artifacts in one session dir (tool outputs, no logs naming them)."""
    root, logs, sdir = _dirs(base)
    for i in range(n):
        _write(sdir / f"{i:012x}-bash.txt", b"x")
    Log(logs).write()
    return Case(root, logs)


def make_session_dirs(base: Path, n: int) -> Case:
    """``n`` session dirs of one artifact each."""
    root, logs, _ = _dirs(base)
    for i in range(n):
        d = root / f"session-{i + 1:012x}"
        d.mkdir(mode=0o700)
        _write(d / "000000000001-bash.txt", b"x")
    Log(logs).write()
    return Case(root, logs)


def deep(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def make_nesting(base: Path, n: int, lines: int = 3000) -> Case:
    """JSON nested ``n`` levels deep in every place a parser meets it: ``lines`` log lines,
    a preview, a notice, and a transcript's metadata block and fragment."""
    root, logs, sdir = _dirs(base)
    log = Log(logs)
    for _ in range(lines):
        log.raw(js_utf8('{"type":"assistant/message","seq":1,"data":' + deep(n) + "}"))
    conv = _messages(3)
    body, _ = transcript(conv)
    good = sdir / "000000000001-session-reference-1.txt"
    _write(good, body)
    preview, notice = reference_parts(good, len(body), conv)
    text = render_reference_text([preview], [notice])
    source = {"kind": "session-reference", "form": "recall", "version": 1, "references": []}
    bad_preview = text.replace('"conversation":', '"deep":' + deep(n) + ',"conversation":', 1)
    bad_notice = text.replace('"omittedMessages":', '"deep":' + deep(n) + ',"omittedMessages":', 1)
    for t in (bad_preview, bad_notice):
        log.row("user/message", {"source": source, "content": [{"type": "text", "text": t}], "role": "user", "id": "r"})
    meta_deep = body.replace(b'  "cwd": "/w",', b'  "cwd": ' + deep(n).encode() + b",", 1)
    _write(sdir / "000000000002-session-reference-2.txt", meta_deep)
    frag_deep = body.replace(b'"short message 1"', deep(n).encode(), 1)
    _write(sdir / "000000000003-session-reference-3.txt", frag_deep)
    log.write()
    return Case(root, logs, sdir / "000000000003-session-reference-3.txt")


DIMENSIONS: dict[str, tuple[Callable[[Path, int], Case], int, str]] = {
    # name: (generator, n at which verify takes >= ~0.2 s here, unit of n)
    "messages per transcript": (make_messages, 30000, "messages"),
    "fragments per message": (make_fragments, 400000, "fragment lines"),
    "notices per log": (make_notices, 1500, "notices"),
    "notices naming one artifact": (make_one_artifact, 2000, "notices"),
    "log lines": (make_log_lines, 80000, "rows"),
    # 6,000 KiB left ~0.17 s of work, its lines still in the CPU cache (10n: 14x); scaling.py
    # raises the line limit for this row, so 10n (~160 MB lines) is read, not refused.
    "log line length": (make_line_length, 16000, "KiB"),
    "look-alike markers per tool result": (make_lookalikes, 64000, "markers"),
    "preview length": (make_preview_length, 16000, "KiB"),  # 6,144 left ~0.1 s of work past start-up
    "artifacts per root": (make_artifacts, 50000, "artifacts"),
    "session dirs per root": (make_session_dirs, 20000, "dirs"),  # 8,000 left ~0.15 s of work past start-up
    "JSON nesting": (make_nesting, 50000, "levels"),  # in 3,000 log lines and 4 other places
}


def zstd_bomb(logs: Path, inflated: int = 1 << 30, session_id: str = "hostile-bomb") -> Path:
    """A tiny ``.zstd`` log that inflates to ``inflated`` bytes: a header, then newlines."""
    import zstandard

    d = logs / "--hostile--" / encode_segment(session_id)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "session.v3.jsonl.zstd"
    header = js_utf8(js_stringify({"type": "session", "version": 3, "id": session_id, "createdAt": 0,
                                   "isSeeded": False, "delegationDepth": 0})) + b"\n"
    cctx = zstandard.ZstdCompressor(level=19)
    with open(path, "wb") as f, cctx.stream_writer(f, size=len(header) + inflated) as w:
        w.write(header)
        chunk = b"\n" * (1 << 22)
        left = inflated
        while left > 0:
            w.write(chunk[: min(left, len(chunk))])
            left -= len(chunk)
    return path


#: Strings that Rich/Textual would read as markup (or that break it), and escapes.
MARKUP = ["[/]", "[bold", "[@click=app.quit]click[/]", "[link=file:///etc/passwd]l[/link]", "[red]unclosed",
          "[/bold]", "[$accent]x", "$accent", "[b]x[/b]", "\\[esc]", "[on red]", "]]][[[", "\x1b[31mred\x1b[0m",
          "[reverse]", "[@click=app.bell]", "[", "\\"]


def make_markup(base: Path) -> Case:
    """A root whose every untrusted string carries markup: the root's own name, file
    names, session ids, labels, preview and message texts, roles (a malformed header),
    locators, tool names and finding details."""
    m = "".join(MARKUP)
    short = "[/][b[@click=app.bell]$x"  # for names: a file name has 255 bytes at most
    base = base / f"root[/]{MARKUP[2]}"
    root, logs = base / f"spill[bold]{MARKUP[3]}", base / f"logs[/]{MARKUP[0]}"
    sdir = root / session_dir_name(f"sess{short}")
    sdir.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    logs.mkdir(parents=True)
    log = Log(logs, f"sess{short}")
    conv = [{"role": "user", "text": f"q {m}\n" * 3}, {"role": "assistant", "text": f"a {m}"},
            {"role": "user", "text": f"last {m}"}]
    body, data = transcript(conv)
    body = body.replace(b'"label": "Source"', js_utf8(f'"label": {js_stringify("Label " + m)}'), 1)
    good = sdir / f"000000000001-session-reference-1{encode_segment(short)}.txt"
    _write(good, body)
    preview, notice = reference_parts(good, len(body), conv)
    preview["label"] = f"label {m}"
    preview["sessionId"] = notice["sessionId"] = f"src{m}"
    log.reference(preview, notice)
    # A transcript whose role header carries markup (malformed), and one with a bad fragment.
    bad_role = body.replace(b"### Message 2: assistant", js_utf8(f"### Message 2: assistant{m}"), 1)
    _write(sdir / "000000000002-session-reference-2.txt", bad_role)
    bad_frag = body.replace(b'"a ', js_utf8('"' + m.replace("\\", "") + "\x00 "), 1)
    _write(sdir / "000000000003-session-reference-3.txt", bad_frag)
    # A file name that is not an encoded name, a tool output, an expired locator.
    _write(sdir / f"zz{short.replace('/', '|')}.txt", js_utf8(m))
    tool = sdir / f"000000000004-{encode_segment('bash' + short)}.txt"
    _write(tool, js_utf8(m * 4))
    log.row("tool/call", {"callId": f"c{m}", "name": f"bash{m}"})
    log.tool_result(m + "\n\n" + format_spill_notice(len(js_utf8(m * 3)), str(tool), RETRIEVAL_HINT), f"c{m}")
    log.tool_result("p\n\n" + format_spill_notice(3, str(sdir / f"gone{m}.txt"), RETRIEVAL_HINT), "c2")
    p2, n2 = reference_parts(sdir / f"gone{m}", 9, conv)
    p2["label"] = f"gone {m}"
    log.reference(p2, n2)
    log.raw(js_utf8(f"not json {m}"))
    log.write()
    # A second session dir and a stray entry named with markup.
    other = root / f"session-{short.replace('/', '|')}"
    other.mkdir(mode=0o700)
    _write(other / f"x{short.replace('/', '|')}", b"x")
    return Case(root, logs, good)


# ---- the adversarial corpus's share: every class of issue #12, at sizes that show it ----

#: (name, path, line or None, needs an unprivileged run)
CorpusItem = tuple[str, str, "int | None", bool]


def plant_corpus(root: Path, logs: Path, quick: bool) -> list[CorpusItem]:
    """Plant every hostile class into an existing corpus root and logs dir; each item says
    where its finding must point. Sizes are the issue's (smaller with ``quick``)."""
    from spillscope.formats.sessionlog import MAX_BAD_RUN

    items: list[CorpusItem] = []
    k = 10 if quick else 1

    def session(sid: str) -> tuple[Log, Path]:
        sdir = root / session_dir_name(sid)
        sdir.mkdir(mode=0o700, exist_ok=True)
        return Log(logs, sid), sdir

    # Class 1: work that grows faster than the input — each also carries one wrong count.
    log, sdir = session("hostile-many-messages")
    conv = _messages(30000 // k)
    body, _ = transcript(conv)
    art = sdir / "000000000001-session-reference-1.txt"
    _write(art, body)
    preview, notice = reference_parts(art, len(body), conv)
    notice["omittedMessages"] += 1
    items.append(("many-short-messages", str(log.path), log.reference(preview, notice), False))
    log.write()

    log, sdir = session("hostile-one-artifact")
    per = 2000
    conv = _messages((8 << 20) // k // per, text="m{i} " + "x" * per)
    body, _ = transcript(conv)
    art = sdir / "000000000001-session-reference-1.txt"
    _write(art, body)
    preview, notice = reference_parts(art, len(body), conv)
    for _ in range(8000 // k - 1):
        log.reference(preview, notice)
    bad = {**notice, "fullSnapshot": {**notice["fullSnapshot"], "bytes": len(body) + 1}}
    items.append(("many-notices-naming-one-artifact", str(log.path), log.reference(preview, bad), False))
    log.write()

    log, sdir = session("hostile-lookalikes")
    log.tool_result("head" + LOOKALIKE * (64000 // k) + ")", "c1")
    text = "head" + LOOKALIKE_BAD_COUNT * (64000 // k) + "\n\n" + format_spill_notice(4, str(sdir / "eeeeeeeeeeee-bash.txt"), RETRIEVAL_HINT)
    items.append(("notice-lookalikes", str(log.path), log.tool_result(text, "c2"), False))
    log.write()

    log, sdir = session("hostile-huge-preview")
    conv = _messages(3000)
    body, _ = transcript(conv)
    art = sdir / "000000000001-session-reference-1.txt"
    _write(art, body)
    big = {"role": "user", "text": "P" * ((60 << 20) // k) + "\n[… omitted 7 UTF-8 bytes …]"}
    items.append(("huge-preview-message", str(log.path), log.reference(*reference_parts(art, len(body), conv, [big, conv[-1]])), False))
    log.write()

    bomb = zstd_bomb(logs, (1 << 30) // (16 if quick else 1), "hostile-zstd-bomb")
    items.append(("zstd-bomb-of-empty-lines", str(bomb), MAX_BAD_RUN + 1, False))

    # Class 5: logs that are not what they seem.
    import zstandard

    log = Log(logs, "hostile-zstd-cut", name="session.v3.jsonl.zstd")
    for i in range(2000):
        log.row("assistant/message", {"turn": i, "message": {"role": "assistant", "content": [{"type": "text", "text": f"{i:x}" * 30}]}})
    data = zstandard.ZstdCompressor(write_checksum=True).compress(b"".join(l + b"\n" for l in log.lines))
    log.path.write_bytes(data[: len(data) * 2 // 3])
    items.append(("zstd-log-cut-off", str(log.path), None, False))
    for name, make in (("directory-named-like-a-log", os.mkdir), ("fifo-named-like-a-log", os.mkfifo),
                       ("symlink-named-like-a-log", lambda p: os.symlink("/etc/passwd", p))):
        d = logs / "--hostile--" / name
        d.mkdir(parents=True)
        make(str(d / "session.v3.jsonl"))
        items.append((name, str(d / "session.v3.jsonl"), None, False))
    hidden = logs / "--hostile--" / "unreadable-subdir"
    hidden.mkdir(parents=True)
    (hidden / "session.v3.jsonl").write_bytes(b'{"type":"session","version":3,"id":"hidden"}\n')
    hidden.chmod(0)
    items.append(("unreadable-logs-subdirectory", str(hidden), None, True))

    # Class 2: deep JSON everywhere a parser meets it.
    log, sdir = session("hostile-deep")
    depth = 100_000
    items.append(("deep-json-log-line", str(log.path), log.raw(js_utf8('{"type":"x","seq":1,"data":' + deep(depth) + "}")), False))
    conv = _messages(3)
    body, _ = transcript(conv)
    good = sdir / "000000000001-session-reference-1.txt"
    _write(good, body)
    preview, notice = reference_parts(good, len(body), conv)
    text = render_reference_text([preview], [notice])
    source = {"kind": "session-reference", "form": "recall", "version": 1, "references": []}
    for name, t in (("deep-json-preview", text.replace('"conversation":', '"deep":' + deep(depth) + ',"conversation":', 1)),
                    ("deep-json-notice", text.replace('"omittedMessages":', '"deep":' + deep(depth) + ',"omittedMessages":', 1))):
        line = log.row("user/message", {"source": source, "content": [{"type": "text", "text": t}], "role": "user", "id": "r"})
        items.append((name, str(log.path), line, False))
    log.reference(preview, notice)
    meta = sdir / "000000000002-session-reference-2.txt"
    _write(meta, body.replace(b'  "cwd": "/w",', b'  "cwd": ' + deep(depth).encode() + b",", 1))
    items.append(("deep-json-metadata", str(meta), None, False))
    frag = sdir / "000000000003-session-reference-3.txt"
    _write(frag, body.replace(b'"short message 1"', deep(depth).encode(), 1))
    items.append(("deep-json-fragment", str(frag), None, False))
    log.write()

    # Class 3/4: names that would forge a row or be read as markup; class 7: a symlink
    # to the root's parent named like an artifact.
    log, sdir = session("hostile-names")
    forged = sdir / "aaaaaaaaaaaa-bash\nFORGED  tool-output  1 B  passwd\r\x1b[2K.txt"
    _write(forged, b"x")
    items.append(("newline-in-a-file-name", str(forged), None, False))
    marked = sdir / "bbbbbbbbbbbb-[]][bold[@click=app.quit]x[\\]$accent.txt"  # a name cannot hold '/'
    _write(marked, b"x")
    items.append(("markup-in-a-file-name", str(marked), None, False))
    link = sdir / "cccccccccccc-bash.txt"
    os.symlink(root.parent, link)
    items.append(("symlink-to-the-roots-parent", str(link), None, False))
    log.write()

    # Class 6: a session dir that cannot be read: its notices are unverified, not expired.
    log, sdir = session("hostile-unreadable-dir")
    conv = _messages(3)
    body, _ = transcript(conv)
    art = sdir / "000000000001-session-reference-1.txt"
    _write(art, body)
    items.append(("notice-into-an-unreadable-session-dir", str(log.path), log.reference(*reference_parts(art, len(body), conv)), True))
    log.write()
    sdir.chmod(0)
    return items
