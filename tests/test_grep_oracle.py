"""An independent, differential check of ``spillscope grep`` through the real CLI.

Spill roots are written the way the reference does (``prepare`` for session references,
``SpillPolicy`` for tool outputs, session logs with their notices, ``render_transcript``
for big unlinked transcripts) with hostile text; the expected hits come from an oracle
that shares no code with the search: ``str.find`` chained without overlap (fixed
strings), ``re.finditer`` (``-i``), RE2's own ``finditer`` (regex; ``regex_oracle``) over the exact text (``read_transcript`` for a
transcript, the UTF-8 bytes decoded with replacement for a tool output), and ``seen``
recomputed from the notice text in the logs by the head/tail rule of FORMAT.md §3/§5.
Both scanner paths (native and ``SPILLSCOPE_NO_NATIVE=1``) must give exactly that.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
from regex_oracle import re2_spans

from spillscope.formats.transcript import read_transcript, render_transcript
from spillscope.reference.preparation import LogDirectorySource, prepare
from spillscope.spill.local import LocalSpillStore
from spillscope.spill.naming import encode_segment
from spillscope.spill.policy import SpillPolicy
from spillscope.util.text import js_stringify, js_utf8

#: The C accelerator (texts that fit searched whole, or window by window) and pure Python.
SCANNERS = ["native", "native-windowed", "python"]
SEED = int(os.environ.get("GREP_ORACLE_SEED", "1717"))  # another seed explores; CI runs this one
MIB = 1 << 20
BOM = "\ufeff"
TITLE = "## Referenced session"

#: Text the escaping, the framing, the decoders and case folding each treat specially.
ATOMS = ['"', "\\", "\n", "\r", "\r\n", "\t", "\x00", "\x01", "\x08", "\x0c", "\x1b[31m", "\x1f", "\x7f", "\x85",
         "\u2028", "\u2029", BOM, "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "😀", "𝔘", "e\u0301",
         "\u0301", "界", "\u212a", "\u017f", "\u0131", "\u0130", "ß", "ẞ", "\\u0041", "\\n", "\\ud800", "\\\\\"",
         "u", "/", "<", "\ufffd", "a", "b", "A", "B", "k", "K", "s", "S", "i", "I", "x", " ", "ab", "kelvin", "SKI"]


def hostile(rng: random.Random, n: int) -> str:
    out: list[str] = []
    size = 0
    while size < n:
        a = rng.choice(ATOMS) if rng.random() < 0.7 else rng.choice("abcxyz .,-")
        out.append(a)
        size += len(a)
    return "".join(out)[:n] or "x"


def js_string(text: str) -> str:
    """A Python str as the JavaScript string it stands for: surrogate pairs joined."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def node_utf8(text: str) -> bytes:
    """Node's UTF-8: a lone surrogate is U+FFFD."""
    return js_string(text).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def session_dir_name(session_id: str) -> str:
    return "session-" + hashlib.sha256(node_utf8(session_id)).hexdigest()[:12]


# Writing a root -------------------------------------------------------------------------
def _log(logs: Path, session_id: str, rows: list[dict[str, Any]]) -> None:
    d = logs / "--home-grep--" / encode_segment(session_id)
    d.mkdir(parents=True, exist_ok=True)
    lines: list[Any] = [{"type": "session", "version": 3, "id": session_id, "createdAt": 1, "cwd": "/home/grep",
                         "isSeeded": False, "delegationDepth": 0}]
    # Rows on the surface say so (``surfaceOp``): a reference projects only those.
    lines += [{"type": r["type"], "seq": i, "time": 2 + i, "data": r["data"],
               **({"surfaceOp": "append"} if r["type"] != "tool/call" else {})} for i, r in enumerate(rows)]
    (d / "session.v3.jsonl").write_bytes(b"".join(js_utf8(js_stringify(x)) + b"\n" for x in lines))


def _user(text: str) -> dict[str, Any]:
    return {"type": "user/message", "data": {"content": [{"type": "text", "text": text}], "source": {"kind": "user"},
                                             "role": "user", "id": "u"}}


def _assistant(text: str) -> dict[str, Any]:
    return {"type": "assistant/message", "data": {"turn": 1, "step": 1, "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}],
        "source": {"kind": "model", "provider": "p", "model": "m"}, "id": "a"}, "usage": {}, "stream": []}}


@dataclass
class Corpus:
    root: Path
    logs: Path
    old_root: str  # where the locators in the logs point (the root was moved: --rebase)
    texts: list[str] = field(default_factory=list)  # samples patterns are drawn from


async def _write(base: Path, rng: random.Random) -> Corpus:
    old = base / "orig-root"
    logs = base / "logs"
    old.mkdir(mode=0o700)
    logs.mkdir()
    store = LocalSpillStore(old, cleanup_period_days=0)
    texts: list[str] = []
    # Source sessions for references: hostile messages from 1 code point to ~300 KB, and
    # messages that repeat (a preview's head/tail boundary inside a run).
    sources = []
    for s in range(5):
        sid = f"src-{s}-" + rng.choice(["plain", "界😀", "\"q\\", "\u2028"])
        msgs = []
        for j in range(rng.randint(1, 7)):
            n = rng.choice([1, 2, 63, 64, 65, 127, 128, 129, 500, 3000, 20000, 300_000 if s == 0 and j == 0 else 900])
            text = "ab" * (n // 2 + 1) if rng.random() < 0.15 else hostile(rng, n)
            msgs.append(_user(text) if j % 2 == 0 else _assistant(text))
            texts.append(text)
        _log(logs, sid, msgs)
        sources.append(sid)
    src = LogDirectorySource(logs)
    for t in range(4):
        target = f"target-{t}"
        refs = [(sid, f"label {sid}") for sid in rng.sample(sources, rng.randint(1, 3))]
        msg = await prepare(target, refs, source=src, max_reference_bytes=rng.choice([300, 900, 2500, 9000]),
                            store=store)
        assert msg is not None
        _log(logs, target, [_user("go"), {"type": "user/message", "data": msg.to_event_data("ref")}])
    # Tool outputs through the policy (linked by their notices), and one orphan.
    tool_session = "tools-\u2028-😀"
    policy = SpillPolicy(rng.choice([400, 1024, 3000]), store)
    rows: list[dict[str, Any]] = []
    for c in range(6):
        n = rng.choice([2000, 5000, 40_000])
        text = ("ab" * n) if c == 0 else (BOM + hostile(rng, n) + BOM if c == 1 else hostile(rng, n))
        texts.append(text)
        out = await policy.bound_result(tool_name=rng.choice(["bash", "web_fetch"]), call_id=f"c{c}", content=text,
                                        owner_session_id=tool_session)
        rows.append({"type": "tool/call", "data": {"turn": 1, "step": 1, "callId": f"c{c}", "name": "bash",
                                                   "arguments": "{}"}})
        rows.append({"type": "tool/result", "data": {"turn": 1, "step": 1, "message": {
            "source": {"kind": "tool", "callId": f"c{c}"},
            "content": [{"type": "tool-result", "toolCallId": f"c{c}", "content": list(out.content), "isError": False}],
            "role": "tool", "id": f"t{c}"}}})
    await policy.bound_result(tool_name="orphan", call_id="o", content=hostile(rng, 9000), owner_session_id=tool_session)
    _log(logs, tool_session, rows)
    # Unlinked artifacts in a session dir no log names: a big transcript whose messages
    # cross the 1 MiB windows, tool outputs with invalid UTF-8, a transcript-named file
    # that is not a transcript.
    d = old / "session-00000000beef"
    d.mkdir(mode=0o700)
    big = _big_message(rng)
    texts.append(big[MIB - 3000 : MIB + 3000])
    conv = [{"role": "user", "text": hostile(rng, 70)}, {"role": "assistant", "text": big},
            {"role": "user", "text": "Z"}, {"role": "assistant", "text": _dense_message(rng)}]
    conv += [{"role": "user", "text": hostile(rng, rng.randint(1, 80))} for _ in range(300)]
    data = render_transcript({"sessionId": "big", "label": "big", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": conv}, 3)
    (d / "000000000001-session-reference-1.txt").write_bytes(js_utf8(data))
    raw = bytearray()
    while len(raw) < MIB + MIB // 4:  # windows are cut inside it, some next to invalid bytes
        raw += b"plain text, " * rng.randint(0, 60) + rng.choice(
            [b"\xff", b"\xe7\x95", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xc0\xaf", b"\x80", "\ufffd".encode(),
             "\u754c".encode(), b"ka", b"\r\n", b"\x00"])
    (d / "000000000002-bash.txt").write_bytes(bytes(raw))
    (d / "000000000003-session-reference-2.txt").write_bytes(js_utf8(hostile(rng, 5000)))
    (d / "000000000004-bash.txt").write_bytes(b"\xef\xbb\xbf" + js_utf8(hostile(rng, 100)))
    (d / "000000000005-session-reference-3.txt").write_bytes(_irregular(rng, [big[: MIB // 2], _dense_message(rng)]))
    root = base / "root"
    old.rename(root)
    return Corpus(root, logs, str(old), texts)


NEEDLE = 'NE"E\\D\nLE😀\ud800'


def _big_message(rng: random.Random) -> str:
    """~2.6 MB of escaped bytes: the needle placed so it straddles raw offsets around
    every multiple of 1 MiB (and of 64 KiB) for shifts of -40..40 bytes."""
    unit = 'x"\\\n界 😀' * 5 + "plain text " * 6  # ~100 code points, escaped ~120 bytes
    parts: list[str] = []
    for k in range(26_000):
        parts.append(unit)
        if rng.random() < 0.02:
            parts.append(NEEDLE)
    return "".join(parts)


def _dense_message(rng: random.Random) -> str:
    """Needles every few bytes across ~1.3 MiB: whatever the window edges, some straddle them."""
    parts = []
    size = 0
    while size < 1_300_000:
        p = rng.choice([NEEDLE, "\\u0041", "ab", "\u212aelvin", "\u2028"]) + "x" * rng.randint(0, 300)
        parts.append(p)
        size += len(p) * 2
    return "".join(parts)


def _irregular(rng: random.Random, texts: list[str]) -> bytes:
    """A transcript the parser reads but the reference never writes: fragment lines of 1 to
    64 code points, and in some stretches escapes spelled otherwise (``\\u0041``, ``\\/``,
    uppercase hex, astral characters as escaped pairs, split over two lines at times), so
    windows searched as bytes and windows searched decoded alternate."""
    out = [js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": []}, 3))]
    for k, text in enumerate(texts, 1):
        out.append(f"\n### Message {k}: user\n\n".encode())
        i, odd = 0, False
        while i < len(text):
            if rng.random() < 0.002:
                odd = not odd
            n = rng.randint(1, 64) if odd or rng.random() < 0.01 else 64
            frag, i = text[i : i + n], i + n
            parts = []
            for ch in frag:
                r = rng.random()
                if odd and r < 0.1 and ch.isascii() and ch.isalnum():
                    parts.append(f"\\u{ord(ch):04X}")
                elif odd and r < 0.3 and ch == "/":
                    parts.append("\\/")
                elif odd and r < 0.5 and ord(ch) > 0xFFFF:
                    u = ch.encode("utf-16-le")
                    sep = '"\n"' if r < 0.2 else ""
                    parts.append(f"\\u{int.from_bytes(u[:2], 'little'):04x}{sep}\\u{int.from_bytes(u[2:], 'little'):04X}")
                else:
                    parts.append(json.dumps(ch, ensure_ascii=False)[1:-1] if not "\ud800" <= ch <= "\udfff"
                                 else f"\\u{ord(ch):04x}")
            out.append(js_utf8('"' + "".join(parts) + '"') + b"\n")
    return b"".join(out)


# The oracle --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Doc:
    path: str
    kind: str
    message: int | None
    text: str


def documents(root: Path) -> list[Doc]:
    docs: list[Doc] = []
    for sdir in sorted(p for p in root.iterdir() if p.is_dir()):
        for f in sorted(sdir.iterdir(), key=lambda p: p.name):
            if f.is_symlink() or not f.is_file():
                continue
            data = f.read_bytes()
            if re.fullmatch(r"[0-9a-f]{12}-session-reference-[0-9]+\.txt", f.name) and data.startswith(TITLE.encode()):
                for i, m in enumerate(read_transcript(f).messages, 1):
                    docs.append(Doc(str(f), "session-reference-transcript", i, m.text))
            else:
                docs.append(Doc(str(f), "tool-output", None, data.decode("utf-8", "replace")))
    return docs


def spans(text: str, pattern: str, regex: bool, icase: bool) -> list[tuple[int, int]]:
    if not regex and not icase:
        out, i = [], text.find(pattern)
        while i >= 0:
            out.append((i, i + len(pattern)))
            i = text.find(pattern, i + len(pattern))
        return out
    if regex:
        return re2_spans(text, pattern, icase)
    compiled = re.compile(re.escape(pattern), re.IGNORECASE)
    return [(m.start(), m.end()) for m in compiled.finditer(text) if m.end() > m.start()]


_OFFSETS: dict[str, list[int]] = {}


def byte_offset(text: str, cp: int) -> int:
    """Node's UTF-8 length of ``text[:cp]`` (``text`` holds joined pairs: each code point,
    a lone surrogate too, counts on its own), from a table made once per text."""
    table = _OFFSETS.get(text)
    if table is None:
        table = [0, *itertools.accumulate(1 if c < "\x80" else 2 if c < "\u0800" else 3 if c < "\U00010000" else 4
                                          for c in text)]
        _OFFSETS[text] = table
    return table[cp]


def _boundary_back(data: bytes, n: int) -> int:
    while 0 < n < len(data) and data[n] & 0xC0 == 0x80:
        n -= 1
    return n


def _boundary_fwd(data: bytes, n: int) -> int:
    while n < len(data) and data[n] & 0xC0 == 0x80:
        n += 1
    return n


def _decode(piece: bytes) -> str:
    text = piece.decode("utf-8", "replace")
    return text[1:] if text.startswith(BOM) else text


def head_tail_ranges(original: bytes, preview: str, omitted: int) -> list[list[tuple[int, int]]]:
    """Every way the writer's rule (budget b split ceil/floor, each cut moved to a character
    boundary, each piece decoded without its leading BOM) gives ``preview`` with
    ``omitted`` bytes left out: the byte ranges the model saw, per way."""
    total = len(original)
    kept = total - omitted
    ways: list[list[tuple[int, int]]] = []
    for b in range(kept, kept + 8):
        hb = min(total, (b + 1) // 2)
        tb = min(total - hb, b // 2)
        h = _boundary_back(original, hb)
        t0 = _boundary_fwd(original, total - tb) if tb else total
        if h + (total - t0) != kept or _decode(original[:h]) + _decode(original[t0:]) != preview:
            continue
        h0 = 3 if original[:h].startswith(BOM.encode()) else 0
        t1 = t0 + (3 if original[t0:].startswith(BOM.encode()) else 0)
        way = [r for r in ((h0, h), (t1, total)) if r[1] > r[0]]
        if way not in ways:
            ways.append(way)
    return ways


_TOOL_NOTICE = re.compile(r"(?:\A|\n\n)\(Omitted ([0-9]+) bytes\. Full formatted result stored at: (.*)\. "
                          r"Use read with offset/limit, or grep this path to search within it\.\)\Z", re.S)
_MARKER = re.compile(r"\n\[… omitted ([0-9]+) UTF-8 bytes …\]\Z")

#: Per artifact path (as in the root): per message key (0 for a tool output) the ways it was
#: seen (each a list of byte ranges); a message no preview kept is [[]].
Seen = dict[str, dict[int, list[list[tuple[int, int]]]]]


def seen_from_logs(corpus: Corpus) -> tuple[Seen, dict[str, str]]:
    seen: Seen = {}
    sessions: dict[str, str] = {}

    def local(locator: str) -> str:
        assert locator.startswith(corpus.old_root + "/")
        return str(corpus.root) + locator[len(corpus.old_root):]

    for log in sorted(corpus.logs.rglob("session.v3.jsonl")):
        lines = [json.loads(x) for x in log.read_text("utf-8").split("\n") if x]
        sessions[session_dir_name(lines[0]["id"])] = lines[0]["id"]
        for row in lines[1:]:
            data = row["data"]
            if row["type"] == "tool/result":
                text = "".join(b["text"] for b in data["message"]["content"][0]["content"] if b["type"] == "text")
                m = _TOOL_NOTICE.search(text)
                if m is None:
                    continue
                path = local(m.group(2))
                if not os.path.exists(path):
                    continue
                original = Path(path).read_bytes()
                seen[path] = {0: head_tail_ranges(original, text[: m.start()], int(m.group(1)))}
            elif row["type"] == "user/message" and data.get("source", {}).get("kind") == "session-reference":
                text = data["content"][0]["text"]
                previews = json.loads(text.split("<referenced-sessions>\n", 1)[1].split("\n</referenced-sessions>", 1)[0])
                if "## Reference omissions" not in text:
                    continue
                for notice in json.loads(text.rsplit("\n", 1)[1]):
                    snap = notice["fullSnapshot"]
                    if snap["status"] != "saved":
                        continue
                    path = local(snap["locator"])
                    if not os.path.exists(path):
                        continue  # expired: nothing to search
                    conv = next(p["conversation"] for p in previews if p["sessionId"] == notice["sessionId"])
                    msgs = [m.text for m in read_transcript(path).messages]
                    # No checkpoints in these sources: dropping oldest first keeps a suffix.
                    first = len(msgs) - len(conv)
                    ways: dict[int, list[list[tuple[int, int]]]] = {k: [[]] for k in range(1, first + 1)}
                    for j, pm in enumerate(conv):
                        k = first + j + 1
                        orig = node_utf8(msgs[k - 1])
                        if pm["text"] == msgs[k - 1]:
                            ways[k] = [[(0, len(orig))]]
                        elif pm["text"] == "":
                            ways[k] = [[]]
                        else:
                            mm = _MARKER.search(pm["text"])
                            assert mm is not None, pm["text"][-80:]
                            ways[k] = head_tail_ranges(orig, pm["text"][: mm.start()], int(mm.group(1)))
                        assert ways[k], f"the oracle cannot explain preview {j} of {path}"
                    seen[path] = ways
    for ways_of in seen.values():
        for k, ways in ways_of.items():
            assert ways, f"the oracle cannot explain a preview ({k})"
    return seen, sessions


_SEEN: dict[str, tuple[Seen, dict[str, str]]] = {}  # per root: the logs do not change


def expected(corpus: Corpus, docs: list[Doc], pattern: str, *, regex: bool = False, icase: bool = False,
             max_count: int | None = None, logs: bool = True) -> list[dict[str, Any]]:
    if logs and str(corpus.root) not in _SEEN:
        _SEEN[str(corpus.root)] = seen_from_logs(corpus)
    seen, sessions = _SEEN[str(corpus.root)] if logs else ({}, {})
    pat = pattern if regex else js_string(pattern)
    out: list[dict[str, Any]] = []
    per_artifact: dict[str, int] = {}
    for d in docs:
        for s, e in spans(d.text, pat, regex, icase):
            if max_count is not None and per_artifact.get(d.path, 0) >= max_count:
                break
            per_artifact[d.path] = per_artifact.get(d.path, 0) + 1
            ways = seen.get(d.path, {}).get(d.message or 0) if d.path in seen else None
            if ways is None:
                flag: Any = None
            else:
                bs, be = byte_offset(d.text, s), byte_offset(d.text, e)
                answers = {any(a <= bs and be <= b for a, b in way) for way in ways}
                flag = answers.pop() if len(answers) == 1 else "either"
            sdir = os.path.basename(os.path.dirname(d.path))
            out.append({"path": d.path, "session": sessions.get(sdir), "kind": d.kind, "message": d.message,
                        "start": s, "end": e, "seen": flag})
    return out


def grep(corpus: Corpus, pattern: str, *extra: str, scanners: str, logs: bool = True) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "SPILLSCOPE_NO_NATIVE": "1" if scanners == "python" else "0",
           "SPILLSCOPE_WHOLE_MAX": "0" if scanners == "native-windowed" else str(64 << 20)}
    args = [sys.executable, "-m", "spillscope", "grep", "--json-pattern", json.dumps(pattern), str(corpus.root),
            "--json", *extra]
    if logs:
        args += ["--logs", str(corpus.logs), "--rebase", corpus.old_root]
    return subprocess.run(args, capture_output=True, timeout=300, env=env)


def compare(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(got) == len(want), (len(got), len(want), _first_difference(got, want))
    for g, w in zip(got, want):
        if w["seen"] == "either":
            assert g["seen"] in (True, False), (g, w)
            w = {**w, "seen": g["seen"]}
        assert g == w, _first_difference(got, want)


def _first_difference(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> str:
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w and not (w["seen"] == "either" and {**w, "seen": g["seen"]} == g):
            return f"hit {i}: got {g}, want {w}"
    return f"lengths {len(got)} != {len(want)}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Corpus, list[Doc]]]:
    base = tmp_path_factory.mktemp("grep-oracle")
    c = asyncio.run(_write(base, random.Random(SEED)))
    yield c, documents(c.root)
    shutil.rmtree(base, ignore_errors=True)


def _patterns(corpus: Corpus, docs: list[Doc]) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(SEED + 1)
    pats: list[tuple[str, dict[str, Any]]] = []
    while len(pats) < 6:  # substrings of the texts written (common ones cost time, not checks)
        t = rng.choice(docs).text if rng.random() < 0.8 else rng.choice(corpus.texts)
        n = rng.choice([2, 3, 7, 64, 65, 150])
        at = rng.randrange(max(1, len(t) - n))
        if sum(d.text.count(t[at : at + n]) for d in docs) < 3000:
            pats.append((t[at : at + n], {}))
    pats += [(NEEDLE, {}), ("ab", {"max_count": 3}), ("\\u0041", {}), ("\ufffd", {}), ("\r\n", {}),
             ("\ud800", {}), ("\ude00", {}), (BOM, {}),
             ("KELVIN", {"icase": True}), ("ski", {"icase": True}), ("ß", {"icase": True}),
             ('ne"e\\d\nle', {"icase": True}), ("AB", {"icase": True, "max_count": 2}),
             (r"\"\\+u|\r\n|\x{2028}", {"regex": True}), (r"[😀界]{2,}", {"regex": True}),
             (r"(?s)E.{30,70}x", {"regex": True}), (r"(?i)[\x{212a}]el|\x{D800}|^\W|\bab\B", {"regex": True}),
             ("x\ud800|" + r"[^\x00-\x{D7FF}]{2}", {"regex": True}), (r"\p{Greek}+|\pN{3}", {"regex": True, "icase": True}),
             (r"(?m)^Z$", {"regex": True, "max_count": 1})]
    return pats


def _run_case(corpus: tuple[Corpus, list[Doc]], scanners: str, pattern: str, opts: dict[str, Any]) -> None:
    c, docs = corpus
    extra: list[str] = []
    if opts.get("icase"):
        extra.append("-i")
    if opts.get("regex"):
        extra.append("-E")
    if opts.get("max_count"):
        extra += ["--max-count", str(opts["max_count"])]
    want = expected(c, docs, pattern, regex=bool(opts.get("regex")), icase=bool(opts.get("icase")),
                    max_count=opts.get("max_count"))
    proc = grep(c, pattern, *extra, scanners=scanners)
    assert proc.returncode == (0 if want else 1), proc.stderr
    assert proc.stderr == b""
    compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], want)


@pytest.mark.parametrize("scanners", SCANNERS)
def test_every_pattern_gives_the_oracles_hits_offsets_and_seen(corpus: tuple[Corpus, list[Doc]], scanners: str) -> None:
    failures = []
    for pattern, opts in _patterns(*corpus):
        try:
            _run_case(corpus, scanners, pattern, opts)
        except AssertionError as exc:
            failures.append(f"{pattern!r} {opts}: {str(exc)[:600]}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("scanners", SCANNERS)
def test_without_logs_nothing_is_linked(corpus: tuple[Corpus, list[Doc]], scanners: str) -> None:
    c, docs = corpus
    proc = grep(c, NEEDLE, scanners=scanners, logs=False)
    assert proc.returncode == 0, proc.stderr
    compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], expected(c, docs, NEEDLE, logs=False))
    proc = grep(c, "no such text \x00 anywhere", scanners=scanners)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, b"", b"")


@pytest.mark.parametrize("scanners", SCANNERS)
def test_a_fixed_replacement_character_finds_invalid_utf8_in_a_tool_output(tmp_path: Path, scanners: str) -> None:
    # A tool output's exact text is its bytes decoded with replacement: each invalid
    # sequence is a U+FFFD there, although the bytes EF BF BD are not in the file.
    d = tmp_path / "root" / "session-0123456789ab"
    d.mkdir(parents=True)
    data = b"ab\xffcd\xe7\x95 \xef\xbf\xbd" + b"x" * (MIB + 100) + b"\xed\xa0\x80\xc0\xaf" + "\ufffd!".encode()
    (d / "000000000001-bash.txt").write_bytes(data)
    c = Corpus(tmp_path / "root", tmp_path, "")
    for pattern in ["\ufffd", "\ufffd!", "b\ufffdc"]:
        proc = grep(c, pattern, scanners=scanners, logs=False)
        got = [(h["start"], h["end"]) for h in map(json.loads, proc.stdout.decode().split("\n")[:-1])]
        assert got == spans(data.decode("utf-8", "replace"), pattern, False, False) and got, pattern


async def _write_runs(base: Path) -> Corpus:
    """Spilled text that repeats across the preview's cut ('abab…', '界😀界😀…', with BOMs):
    many cuts explain the preview, the writer made one (FORMAT.md §3, §5)."""
    old, logs = base / "orig-root", base / "logs"
    old.mkdir(mode=0o700)
    logs.mkdir()
    store = LocalSpillStore(old, cleanup_period_days=0)
    runs = ["ab" * 3001, "界😀" * 999 + "x", BOM + "ab" * 2000 + BOM + "ab" * 10, "a" * 5000, BOM + "x" + "é" * 3000]
    _log(logs, "src", [_user(t) if i % 2 == 0 else _assistant(t) for i, t in enumerate(runs)])
    for i, budget in enumerate([700, 2000, 5000]):
        msg = await prepare(f"t{i}", [("src", "s")], source=LogDirectorySource(logs), max_reference_bytes=budget,
                            store=store)
        assert msg is not None
        _log(logs, f"t{i}", [{"type": "user/message", "data": msg.to_event_data("r")}])
    rows = []
    # Caps whose tail piece starts at a BOM (stripped by the decoder, never seen): the
    # reserve is the notice priced at N = all bytes, the locator as long as any in the dir.
    locator = f"{old}/{session_dir_name('tools')}/{'0' * 12}-bash.txt"
    bom_tail = "ab" * 300 + BOM + "ab" * 100
    reserve = len(f"(Omitted {len(js_utf8(bom_tail))} bytes. Full formatted result stored at: {locator}. "
                  "Use read with offset/limit, or grep this path to search within it.)".encode()) + 2
    caps = [500 + 333 * c for c in range(len(runs) * 2)] + [reserve + 406 + d for d in (-1, 0, 1)]
    for c, (text, cap) in enumerate(zip(runs * 2 + [bom_tail] * 3, caps)):
        policy = SpillPolicy(cap, store)
        out = await policy.bound_result(tool_name="bash", call_id=f"c{c}", content=text, owner_session_id="tools")
        rows.append({"type": "tool/result", "data": {"turn": 1, "step": 1, "message": {
            "source": {"kind": "tool", "callId": f"c{c}"},
            "content": [{"type": "tool-result", "toolCallId": f"c{c}", "content": list(out.content), "isError": False}],
            "role": "tool", "id": f"t{c}"}}})
    _log(logs, "tools", rows)
    old.rename(base / "root")
    return Corpus(base / "root", logs, str(old))


@pytest.mark.parametrize("scanners", SCANNERS)
def test_seen_in_repeated_text_is_where_the_writer_cut(tmp_path: Path, scanners: str) -> None:
    c = asyncio.run(_write_runs(tmp_path))
    docs = documents(c.root)
    for pattern in ["ab", "ba", "界😀", "😀界", "é"]:
        want = expected(c, docs, pattern)
        assert {True, False} <= {h["seen"] for h in want}
        proc = grep(c, pattern, scanners=scanners)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], want)


def _transcript(texts: list[str]) -> bytes:
    conv = [{"role": "user" if i % 2 == 0 else "assistant", "text": t} for i, t in enumerate(texts)]
    return js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": conv}, 3))


@pytest.mark.parametrize("scanners", SCANNERS)
def test_bad_artifacts_are_findings_and_the_search_goes_on(tmp_path: Path, scanners: str) -> None:
    rng = random.Random(SEED + 2)
    texts = [hostile(rng, n) + 'ne"\\dle' for n in (5, 700, 64, 3000, 1)]
    texts[1] = 'ne"\\dle' + "x" * 100 + texts[1]
    good = _transcript(texts)
    d = tmp_path / "root" / "session-0123456789ab"
    d.mkdir(parents=True)
    (d / "000000000000-session-reference-1.txt").write_bytes(good)
    # Cut off mid-write (never right after a newline: a cut there is a shorter valid file),
    # and an invalid escape ending message 3.
    cuts = sorted(rng.sample([i for i in range(200, len(good)) if good[i - 1] != 0x0A], 6))
    bad = {f"{i:012x}-session-reference-{i}.txt": good[:cut] for i, cut in enumerate(cuts, 1)}
    spoiled = good.replace(b'"\n\n### Message 4:', b'\\q"\n\n### Message 4:')
    assert spoiled != good
    bad["000000000010-session-reference-10.txt"] = spoiled
    for name, data in bad.items():
        (d / name).write_bytes(data)
    os.symlink(d / "000000000000-session-reference-1.txt", d / "000000000011-session-reference-11.txt")
    unreadable = os.geteuid() != 0  # root reads a file whatever its mode
    if unreadable:
        (d / "000000000012-bash.txt").write_bytes(b'ne"\\dle')
        (d / "000000000012-bash.txt").chmod(0)
    (d / "ffffffffffff-bash.txt").write_bytes('界 ne"\\dle'.encode())
    c = Corpus(tmp_path / "root", tmp_path, "")
    proc = grep(c, 'ne"\\dle', scanners=scanners, logs=False)
    assert proc.returncode == 0
    hits = [json.loads(x) for x in proc.stdout.decode().split("\n") if x]
    exact = [m.text for m in read_transcript(d / "000000000000-session-reference-1.txt").messages]
    oracle = {(k, s, e) for k, t in enumerate(exact, 1) for s, e in spans(t, 'ne"\\dle', False, False)}
    err = proc.stderr.decode()
    for name, data in bad.items():
        path = str(d / name)
        assert re.search(rf"^spillscope grep: (incomplete|malformed)-artifact: {re.escape(path)}:[0-9]+: ", err, re.M), name
        got = {(h["message"], h["start"], h["end"]) for h in hits if h["path"] == path}
        assert got <= oracle, name  # only hits the whole text has
        # Every hit in the messages before the one that breaks is reported.
        broken = data.count(b"\n### Message ") if data is not spoiled else 3
        assert {h for h in oracle if h[0] < broken} <= got, name
    assert re.search(rf"^spillscope grep: symlink: {re.escape(str(d))}/000000000011-", err, re.M)
    if unreadable:
        assert re.search(rf"^spillscope grep: unreadable: {re.escape(str(d))}/000000000012-", err, re.M)
    assert not any(h["path"].endswith(("-11.txt", "000000000012-bash.txt")) for h in hits)
    good_hits = [(h["message"], h["start"], h["end"]) for h in hits
                 if h["path"] == str(d / "000000000000-session-reference-1.txt")]
    assert good_hits == sorted(oracle)
    assert [(h["start"], h["end"]) for h in hits if h["path"].endswith("ffffffffffff-bash.txt")] == [(2, 9)]
    assert len(err.strip().split("\n")) == len(bad) + 1 + unreadable  # one finding each, nothing else
    # Hits only in bad artifacts: exit 1, the findings still said.
    proc = grep(c, "界 ne", scanners=scanners, logs=False)
    assert proc.returncode == 0
    (d / "ffffffffffff-bash.txt").unlink()
    proc = grep(c, "no such text", scanners=scanners, logs=False)
    assert proc.returncode == 1 and proc.stdout == b"" and b"symlink" in proc.stderr


# grep's conveniences, against the same oracle -------------------------------------------------
#: docs/cli.md: a context line is cut at 400 code points and marked with an ellipsis.
LINE_CUT = 400


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CUT else line[:LINE_CUT] + "…"


def with_lines(docs: list[Doc], want: list[dict[str, Any]], context: int) -> list[dict[str, Any]]:
    """The oracle's hits with ``line`` (1-based, of the hit's start, in its message's or tool
    output's text) and ``context`` whole lines before it and after the line it ends on."""
    text = {(d.path, d.message): d.text for d in docs}
    out = []
    for h in want:
        t = text[(h["path"], h["message"])]
        lines = t.split("\n")[:-1] if t.endswith("\n") else t.split("\n")
        first, last = t.count("\n", 0, h["start"]) + 1, t.count("\n", 0, h["end"] - 1) + 1
        extra: dict[str, Any] = {"line": first}
        if context:
            extra["before_lines"] = [_cut(x) for x in lines[max(0, first - 1 - context) : first - 1]]
            extra["after_lines"] = [_cut(x) for x in lines[last : last + context]]
        out.append({**h, **extra})
    return out


def test_line_numbers_context_files_counts_and_filters_are_the_oracles(corpus: tuple[Corpus, list[Doc]]) -> None:
    c, docs = corpus
    for pattern, context in ((NEEDLE, 2), ("ab", 0)):
        want = expected(c, docs, pattern)
        flags = ["-n"] + (["-C", str(context)] if context else [])
        proc = grep(c, pattern, *flags, scanners="native")
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], with_lines(docs, want, context))
    want = expected(c, docs, "ab")
    counts: dict[str, int] = {}
    for h in want:
        counts[h["path"]] = counts.get(h["path"], 0) + 1
    proc = grep(c, "ab", "-c", scanners="native")
    assert [json.loads(x) for x in proc.stdout.decode().split("\n") if x] == [
        {"path": p, "count": n} for p, n in counts.items()]
    proc = grep(c, "ab", "-l", scanners="native")
    assert [json.loads(x) for x in proc.stdout.decode().split("\n") if x] == [{"path": p} for p in counts]
    # Filters: one session dir, only transcripts; what they leave is the oracle's, in order.
    sdir = os.path.basename(os.path.dirname(want[len(want) // 2]["path"]))
    proc = grep(c, "ab", "--session", sdir, "--kind", "transcript", scanners="native")
    kept = [h for h in want if os.path.basename(os.path.dirname(h["path"])) == sdir
            and h["kind"] == "session-reference-transcript"]
    assert proc.returncode == (0 if kept else 1)
    compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], kept)
    proc = grep(c, "ab", "-l", "--session", "session-000000000000", scanners="native")
    assert (proc.returncode, proc.stdout) == (1, b"")
    # grep's -F (the default, said) gives the same hits; -q writes nothing, its exit says all.
    proc = grep(c, "ab", "-F", scanners="native")
    compare([json.loads(x) for x in proc.stdout.decode().split("\n") if x], want)
    assert [(p.returncode, p.stdout, p.stderr) for p in (grep(c, "ab", "-q", scanners="native"),
                                                         grep(c, "ab", "-q", "--kind", "unknown", scanners="native"))
            ] == [(0, b"", b""), (1, b"", b"")]
    both = grep(c, "ab", "-E", "-F", scanners="native")
    assert both.returncode == 2 and b"not allowed with" in both.stderr and both.stdout == b""
