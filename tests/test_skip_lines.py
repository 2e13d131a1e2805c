"""``native.skip_lines``: the lines a window-by-window search may only count, checked against
the Python decoder (counts), against a plain find in the joined text (no needle skipped),
and end to end (the same hits with and without it, a hit deep in a message found in one pass)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from spillscope.inspect.search import message as M
from spillscope.inspect.search import pattern as P
from spillscope.inspect.search import records as R
from spillscope.inspect.search import transcript as T
from spillscope.inspect.search import whole as W
from spillscope.inspect.search.escapes import deframe, measure_escaped
from spillscope.util import native
from spillscope.util.text import js_json_string

from test_search import jsonl, write_root

#: Characters every escaping layer treats differently: escapes, runs of backslashes, quotes,
#: controls (\u00XX), U+2028, astral, combining, CR/LF.
ALPHABET = ["a", "b", " ", "x", "\n", "\\", '"', "\t", "\r", "é", "界", "😀", "\u2028", "\x01", "/", "\\\\",
            "q", "z", "e\u0301", "\r\n"]
NEEDLES = ["xqz", "zzq", "quartz", "a\\b", 'q"z', "界😀q", "Q\nZ", "\\\\q"]
HEAD = b"### Message 1: user\n\n"


def lines_of(text: str) -> bytes:
    """Fragment lines as the writer makes them: 64 code points each, JSON-escaped."""
    cps = list(text)
    return b"".join(b'"' + js_json_string("".join(cps[i:i + 64]))[1:-1].encode("utf-8", "surrogatepass") + b'"\n'
                    for i in range(0, len(cps), 64))



def skip(nat, tmp_path: Path, data: bytes, needle: bytes, folded: bool, keep: int) -> tuple[int, int, int]:
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return nat.skip_lines(fd, len(HEAD), len(data), needle, folded, keep)
    finally:
        os.close(fd)


@pytest.mark.parametrize("seed", range(6))
def test_skipped_lines_are_counted_as_the_decoder_counts_them_and_hold_no_needle(nat, tmp_path: Path,
                                                                                 seed: int) -> None:
    rng = random.Random(seed)
    skipped = 0
    for _ in range(60):
        alphabet = rng.choice([ALPHABET, ["a", "b", " ", "é", "界", "😀"], ["a", " "], ALPHABET[:8]])
        needle = rng.choice(NEEDLES)
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([10, 300, 5000, 50000, 300000])))
        if rng.random() < 0.7:
            at = rng.randrange(len(text) + 1)
            text = text[:at] + needle + text[at:]
        body = lines_of(text)
        if rng.random() < 0.25:  # something the scan must stop before
            k = rng.randrange(len(body))
            body = body[:k] + rng.choice([b"\\u0041", b"\n", b"\xff", b'"', b"\\/", b"\x02", b"\xe7\x95"]) + body[k:]
        data = HEAD + body + (b"\n### Message 2: user\n\n\"xqz\"\n" if rng.random() < 0.5 else b"")
        folded = rng.random() < 0.3
        enc = js_json_string(needle)[1:-1].encode()
        enc = enc.lower() if folded else enc
        keep = rng.choice([0, 100, 600])
        to, cps, nbytes = skip(nat, tmp_path, data, enc, folded, keep)
        if to == len(HEAD):
            assert (cps, nbytes) == (0, 0)
            continue
        skipped += 1
        assert data[to - 1:to + 1] == b'\n"', "a line start"
        joined = deframe(data[len(HEAD):to])
        assert (cps, nbytes) == measure_escaped(joined)
        # No needle starts in what was skipped, nor in the keep bytes after it.
        after = data[to:]
        cut = after.find(b"\n\n")
        try:
            rest = deframe(after[:cut + 1] if cut >= 0 else after)
        except ValueError:
            rest = b""  # the lines the scan stopped before; what it passed is checked above
        hay = joined + rest[:keep + len(enc)]
        first = (hay.lower() if folded else hay).find(enc)
        assert first == -1 or first >= len(joined) + keep
    assert skipped > 20, "the scan skips where it may"


@pytest.mark.parametrize("needle", [b"q", b"zzq", b"absent from it, this needle"])
@pytest.mark.parametrize("keep", [0, 100])
def test_a_line_begun_at_a_block_s_end_is_no_line_start_until_its_quote_is_seen(nat, tmp_path: Path,
                                                                                needle: bytes, keep: int) -> None:
    """A newline that is a 64-byte block's last byte begins a line the next block checks: where
    that line has no opening quote the scan stops there, and what it returns is still a line
    start before it, counted exactly (it took the one after the newline, unchecked, for one);
    lines of 64 bytes, so that every newline ends a block, 1 to 40 of them before the bad one;
    and 4,000 of them with no bad one, read after read (each read's end a line's start)."""
    good = b'"' + b"a" * 61 + b'"\n'
    for k in [*range(1, 41), None]:
        data = HEAD + (good * 4000 if k is None else good * k + b"x" + b"a" * 62 + b'"\n' + good * 50)
        to, cps, nbytes = skip(nat, tmp_path, data, needle, False, keep)
        if to == len(HEAD):
            assert (cps, nbytes) == (0, 0) and k is not None
            continue
        assert data[to - 1:to + 1] == b'\n"', (k, to)
        assert to <= len(HEAD) + 64 * k if k is not None else to > len(data) - 4096
        assert (cps, nbytes) == measure_escaped(deframe(data[len(HEAD):to]))


def test_a_plain_message_without_the_needle_is_skipped_to_its_last_lines(nat, tmp_path: Path) -> None:
    text = "The spill store keeps 界 and 😀 out of context; \"quoted\" \\ line\n" * 20000
    body = lines_of(text)
    to, cps, nbytes = skip(nat, tmp_path, HEAD + body + b"\n### Message 2: user\n\n\"x\"\n", b"absent", False, 600)
    assert len(body) - (to - len(HEAD)) < 4096
    assert (cps, nbytes) == measure_escaped(deframe((HEAD + body)[len(HEAD):to]))


def test_without_avx2_nothing_is_skipped(nat, tmp_path: Path) -> None:
    was = nat.simd()
    nat.simd(0)
    try:
        assert skip(nat, tmp_path, HEAD + lines_of("abc " * 5000), b"absent", False, 0) == (len(HEAD), 0, 0)
    finally:
        nat.simd(was)


@pytest.mark.parametrize("span", [T.SKIP_SPAN, 5000])
@pytest.mark.parametrize("seed", range(4))
def test_a_search_finds_the_same_hits_with_lines_skipped(nat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          seed: int, span: int) -> None:
    """Window by window (small windows: many window edges), with and without the skip, fixed
    strings and -i, hits anywhere in hostile messages of ×10 sizes."""
    rng = random.Random(seed)
    texts = []
    plain = [c for c in ALPHABET if c != "\x01"]  # a \u escape ends a skip: most texts have none
    for size, alphabet in ((200, plain), (2000, ALPHABET), (20000, plain), (200000, plain), (20000, ALPHABET)):
        t = "".join(rng.choice(alphabet) for _ in range(size))
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(t) + 1)
            t = t[:at] + rng.choice(["quartz", "QuArTz", "a\\b", "界😀q"]) + t[at:]
        texts.append(t)
    root = write_root(tmp_path, [texts])
    path = str(next(root.rglob("*session-reference-1.txt")))
    monkeypatch.setattr(W, "WHOLE_MAX", 0)
    monkeypatch.setattr(T, "WINDOW", 4096)

    skips: list[int] = []
    skipped = M._MessageSearch.skipped
    monkeypatch.setattr(M._MessageSearch, "skipped", lambda self, raw, c, n: skips.append(raw) or skipped(self, raw, c, n))

    def hits(pattern: P.Pattern) -> list[tuple[object, ...]]:
        return [(ev.message, ev.hit) for ev in T.search_transcript(path, pattern, prefiltered=True)
                if isinstance(ev, R._Located)]

    for needle, ignore_case in [("quartz", False), ("quartz", True), ("a\\b", False), ("界😀q", True)]:
        pattern = P.Pattern(needle, ignore_case=ignore_case)
        with_skip = hits(pattern)
        with monkeypatch.context() as m:
            m.setattr(M._MessageSearch, "skip_needle", lambda self: None)
            assert hits(pattern) == with_skip
        assert skips, "lines were skipped"
        exact = sum(t.lower().count(needle.lower()) if ignore_case else t.count(needle) for t in texts)
        assert len(with_skip) == exact


def test_a_rare_needle_deep_in_a_huge_message_decodes_almost_nothing(nat, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    big = "The spill store keeps 界 and 😀 out of context; \"quoted\" \\ line\n" * 20000
    root = write_root(tmp_path, [[big + "the needle at the end", "after"]])
    path = str(next(root.rglob("*session-reference-1.txt")))
    monkeypatch.setattr(W, "WHOLE_MAX", 0)
    decoded: list[int] = []
    deframe_reusing = T.deframe_reusing
    monkeypatch.setattr(T, "deframe_reusing", lambda c, n, out: decoded.append(n) or deframe_reusing(c, n, out))
    for ignore_case in (False, True):
        decoded.clear()
        got = [ev.hit for ev in T.search_transcript(path, P.Pattern("NEEDLE" if ignore_case else "needle",
                                                                    ignore_case=ignore_case), prefiltered=True)
               if isinstance(ev, R._Located)]
        assert [(h.start, h.end) for h in got] == [(len(big) + 4, len(big) + 10)]
        assert sum(decoded) < 64 << 10, "only the lines around the hit are decoded"


def test_grep_on_a_huge_transcript_matches_the_exact_text(tmp_path: Path) -> None:
    """Through the real entry point: a transcript over the whole-text limit (set low), hits
    and their context the same as grep over the decoded text finds them."""
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    text = ("ab 界 😀 \"q\" \\ \n" * 3000) + "needle" + (" tail\u2028" * 500) + "needle"
    root = write_root(tmp_path, [[text]])
    proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "needle", str(root), "--json"],
                          capture_output=True, timeout=120, env={**os.environ, "SPILLSCOPE_WHOLE_MAX": "1024"})
    assert proc.returncode == 0, proc.stderr
    first = text.index("needle")
    assert [(h["start"], h["end"]) for h in jsonl(proc.stdout)] == [(first, first + 6),
                                                                    (len(text) - 6, len(text))]
    assert json.loads(proc.stdout.splitlines()[0])["message"] == 1


def test_a_cancel_is_seen_between_spans_of_a_long_skip(nat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "The spill store keeps 界 and 😀 out of context; line\n" * 20000
    root = write_root(tmp_path, [[big + "needle"]])
    path = str(next(root.rglob("*session-reference-1.txt")))
    monkeypatch.setattr(W, "WHOLE_MAX", 0)
    monkeypatch.setattr(T, "SKIP_SPAN", 64 << 10)
    calls: list[int] = []
    skip_lines = nat.skip_lines
    monkeypatch.setattr(nat, "skip_lines", lambda *a: calls.append(a[1]) or skip_lines(*a), raising=False)
    got = list(T.search_transcript(path, P.Pattern("needle"), prefiltered=True, cancelled=lambda: len(calls) >= 3))
    assert not [ev for ev in got if isinstance(ev, R._Located)]
    assert len(calls) == 3, "the skip stops at the span after the cancel"
    calls.clear()
    assert len([ev for ev in T.search_transcript(path, P.Pattern("needle"), prefiltered=True)
                if isinstance(ev, R._Located)]) == 1
    assert len(calls) > 10


def one_big_message(tmp_path: Path, lines: int) -> tuple[Path, Path, bytes]:
    """A root of one transcript of one big message (``lines`` lines of text, then the hit
    "needle"): (the root, the transcript, its bytes)."""
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    root = write_root(tmp_path, [["The spill store keeps 界 and 😀 out of context; line\n" * lines + "needle"]])
    path = next(root.rglob("*session-reference-1.txt"))
    return root, path, path.read_bytes()


def grep_each(root: Path, envs: dict[str, dict[str, str]]) -> dict[str, tuple[int, bytes, bytes]]:
    """``spillscope grep needle ROOT --json`` under each environment: (exit, stdout, stderr) by name."""
    got = {}
    for name, env in envs.items():
        proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "needle", str(root), "--json"],
                              capture_output=True, timeout=120, env={**os.environ, **env})
        got[name] = (proc.returncode, proc.stdout, proc.stderr)
    return got


@pytest.mark.parametrize("bad", [b"\xff", b"\xe7\x95", b"\\x", b"\\/", b"\x01", b'"'])
def test_a_fault_in_lines_that_would_be_skipped_is_still_reported(tmp_path: Path, bad: bytes) -> None:
    """A byte the decoder refuses, deep in a message whose only hit comes after it: the skip
    stops before it, so grep reports what the window search reports (a malformed artifact at
    its line, or for the valid \\/ the hit), never a hit counted past an unread fault."""
    root, path, data = one_big_message(tmp_path, 5000)
    k = data.index(b" ", len(data) // 2)
    path.write_bytes(data[:k] + bad + data[k + 1:])
    line = data.count(b"\n", 0, k) + 1
    got = grep_each(root, {"windows": {"SPILLSCOPE_WHOLE_MAX": "1024"}, "whole": {"SPILLSCOPE_WHOLE_MAX": str(64 << 20)}})
    assert got["windows"] == got["whole"], "window by window (skipping) as when searched whole"
    code, out, err = got["windows"]
    if bad == b"\\/":
        assert code == 0 and len(jsonl(out)) == 1
    else:
        assert code == 1 and out == b"" and f"{path.name}:{line}:".encode() in err


def test_a_big_transcript_is_skipped_through_for_a_fixed_string_and_searched_whole_for_a_regex(
        nat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "The spill store keeps 界 and 😀 out of context; line\n" * 2000
    root = write_root(tmp_path, [[big + "needle"]])
    path = str(next(root.rglob("*session-reference-1.txt")))
    monkeypatch.setattr(T, "SKIP_ABOVE", 64 << 10)
    wholes: list[int] = []
    message_text = W.Buffers.message_text
    monkeypatch.setattr(W.Buffers, "message_text", lambda self, raw, s, e: wholes.append(e - s) or message_text(self, raw, s, e))
    for pattern, whole_text in [(P.Pattern("needle"), False), (P.Pattern("NEEDLE", ignore_case=True), False),
                                (P.Pattern("need+le", regex=True), True)]:
        wholes.clear()
        hits = [ev.hit for ev in T.search_transcript(path, pattern, prefiltered=True) if isinstance(ev, R._Located)]
        assert [(h.start, h.end) for h in hits] == [(len(big), len(big) + 6)]
        assert bool(wholes) == whole_text


def test_whole_text_buffers_up_to_the_pool_limit_are_reused() -> None:
    """A text just under the pool's limit gets a buffer the pool keeps (growing room stops
    there): the next file of that size reuses it instead of zeroing a fresh one."""
    first = W.Buffers()
    got = first._sized("text", W.KEEP - 100)
    first.close()
    second = W.Buffers()
    try:
        assert any(b is got for b in (second.raw, second.text))
    finally:
        second.close()


def _skips_past(nat, tmp_path: Path, text: str, needle: str) -> bool:
    data = HEAD + lines_of(text)
    to, _, _ = skip(nat, tmp_path, data, needle.encode(), False, 0)
    joined = deframe(data[len(HEAD):to]) if to > len(HEAD) else b""
    return deframe(data[len(HEAD):]).find(needle.encode()) < len(joined)


def test_a_needle_ending_on_the_first_byte_of_a_line_is_never_skipped(nat, tmp_path: Path) -> None:
    """The boundary class, keep 0: a needle that takes a line's last byte, whole lines and the
    next line's first byte, where the text searched so far ends (the file's end, at every
    length; the first read's end, at every line of messages whose lines' byte lengths
    differ). The joined text searched ends before a closing quote: counted as text, it put
    the line start just after the needle's first byte within reach of the skip."""
    wrong = []
    for filler in ("a", "aé"):
        for m in (66, 130):
            needle = "".join("bcd"[k % 3] for k in range(m))
            for lines in range(3, 300):
                for r in (1, 30):
                    cps = (filler * 20000)[:64 * lines + r]
                    text = cps[:64 * lines - (m - 1)] + needle + cps[64 * lines + 1:]
                    if _skips_past(nat, tmp_path, text, needle):
                        wrong.append(("file end", filler, m, lines, r))
    needle = "".join("bcd"[k % 3] for k in range(66))
    for j in (3, 4, 5):  # past the first read (32 KiB), its end at every offset of a line
        cps = (("a" * j + "é") * 10000)[:36000]
        for k in range(1, len(cps) // 64 - 2):
            if _skips_past(nat, tmp_path, cps[:64 * (k + 1) - 65] + needle + cps[64 * (k + 1) + 1:], needle):
                wrong.append(("read end", j, k))
    assert not wrong


@pytest.mark.parametrize("bad", [b"\xc3", b"\xe7", b"\xe7\x95", b"\xf0", b"\xf0\x9f", b"\xf0\x9f\x98"])
def test_a_sequence_cut_short_before_ascii_is_never_skipped_at_any_offset(nat, tmp_path: Path, bad: bytes) -> None:
    """The UTF-8 check of an all-ASCII block (only whether the block before ends a sequence
    short): a lead byte, and its first continuation bytes, followed by ASCII at every offset
    of the 32- and 64-byte blocks around it, for the join's read and the fused one."""
    wrong = []
    for needle in (b"absent", b"absent from it, this needle"):
        for at in range(140):
            lines = [b"a" * 64] * 40
            k, p = 3 + at // 60, at % 60
            lines[k] = b"a" * p + bad + b"a" * (64 - p - len(bad))
            data = HEAD + b"".join(b'"' + line + b'"\n' for line in lines)
            to, _, _ = skip(nat, tmp_path, data, needle, False, 0)
            if bad in data[:to]:
                wrong.append((needle, at))
    assert not wrong, wrong[:5]


#: One of each way a sequence is not UTF-8 (what the lookup tables flag), and valid ones.
INVALID = [b"\x80", b"\xbf\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xed\xa0\x80",
           b"\xed\xbf\xbf", b"\xf0\x80\x80\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80",
           b"\xff", b"\xc3\xa9\xa9", b"\xe7\x95\x8c\x8c", b"\xf0\x9f\x98\x80\x80", b"\xc3\xe7\x95\x8c",
           b"\xe7\x95\xc3\xa9", b"\xf0\x9f\x98\xe7\x95\x8c"]
VALID = ["é", "界", "😀", "\u07ff", "\u0800", "\uffff", "\U00010000", "\U0010ffff", "\ud7ff", "\ue000"]


@pytest.mark.parametrize("needle", [b"absent", b"absent from it, this needle"])
def test_utf8_is_checked_at_every_offset_of_a_block_among_non_ascii(nat, tmp_path: Path, needle: bytes) -> None:
    """Every kind of invalid sequence, and valid ones of every length, at every offset of the
    64-byte blocks around it, among lines of 2-, 3- and 4-byte characters (a block's lookup
    takes the block before's last bytes): the skip never passes an invalid one, and passes the
    valid ones, for the join's read and the fused one (AVX2 and AVX-512BW)."""
    filler = ("é界😀a" * 40)
    lines = []
    while len(lines) < 60:
        cps = list(filler[len(lines) % 7:])
        lines.append("".join(cps[:64]).encode())
    wrong = []
    for seq in INVALID + [v.encode() for v in VALID]:
        for at in range(0, 140, 1 if len(seq) > 1 else 3):
            k, p = 20 + at // 100, at % 100
            body = list(lines)
            line = body[k]
            body[k] = line[:p] + seq + line[p:]
            data = HEAD + b"".join(b'"' + line + b'"\n' for line in body)
            try:
                data[len(HEAD):].decode("utf-8")
                valid = True
            except UnicodeDecodeError:
                valid = False
            start = len(HEAD) + sum(len(x) + 3 for x in body[:k])  # the line's opening quote
            to = skip(nat, tmp_path, data, needle, False, 0)[0]
            if valid and to <= start + len(body[k]):
                wrong.append(("not passed", seq, at))
            elif not valid and to > start:
                wrong.append(("passed", seq, at))
    assert not wrong, wrong[:5]


def _lone_quote_cases() -> list[bytes]:
    """Fragment lines with lines of one quote ('"\\n': no JSON string, the writer never writes
    one) first, last, in the middle, one to twenty in a row, at every offset of the 64-byte
    blocks around them; and the empty line '""' (valid) beside them."""
    line = b'"' + b"a" * 64 + b'"\n'
    out = []
    for run in (1, 2, 3, 20):
        lone = b'"\n' * run
        out += [lone + line * 8, line * 8 + lone, lone + b'"x"\n']
        for at in range(0, 140, 3):
            head = line * (at // 67) + b'"' + b"b" * (at % 67) + b'"\n'
            out.append(head + lone + line * 8)
    out += [b'""\n' + line * 4, line * 4 + b'""\n', line * 2 + b'""\n' + line * 2]
    return out


def test_a_lone_quote_line_is_refused_by_every_deframing_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native deframe (its 64-byte join loop and the one after), and its Python twin, give
    the same for every case: None for a line of one quote (before, the first or last line's
    quote was taken for both of its quotes and the text came out a byte short), the text for
    an empty line; the one-pass decoder refuses the lone lines too."""
    from spillscope.inspect.search import escapes

    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    wrong = []
    for data in _lone_quote_cases():
        got = nat.deframe(data)
        monkeypatch.setattr(native, "NATIVE", None)
        try:
            twin = escapes.deframe(data)
        except ValueError:
            twin = None
        monkeypatch.setattr(native, "NATIVE", nat)
        lone = data.startswith(b'"\n') or b'\n"\n' in data
        n, _ = nat.message_text(data, 0, len(data), bytearray(len(data) + 64))
        if got != twin or (got is None) != lone or (n < 0) != lone:
            wrong.append((data[:80], got is None, twin is None, n))
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("needle", [b"absent", b"absent from it, this needle"])
def test_a_lone_quote_line_is_never_skipped(nat, tmp_path: Path, needle: bytes) -> None:
    """The skip stops before a line of one quote wherever it lies (its length -1 made the
    joined offset run backwards: the join wrote before its buffer, and the counts came out a
    code point short a line), for the join's read and the fused one."""
    wrong = []
    for body in _lone_quote_cases():
        data = HEAD + body
        first = data.find(b'"\n', len(HEAD))
        lone_at = len(HEAD) if body.startswith(b'"\n') else data.find(b'\n"\n', len(HEAD)) + 1
        if lone_at == 0:
            continue  # the empty-line cases: regular
        to, _, _ = skip(nat, tmp_path, data, needle, False, 0)
        if to > lone_at:
            wrong.append((body[:60], lone_at, to, first))
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("where", ["start", "middle", "end"])
@pytest.mark.parametrize("run", [1, 20])
def test_lone_quote_lines_in_a_big_message_are_reported_as_the_parser_reports_them(tmp_path: Path, where: str,
                                                                                    run: int) -> None:
    """End to end: ``spillscope grep`` over a message with lines of one quote gives what the
    pure-Python path gives (the parser's malformed artifact, or the hit before them), window
    by window and whole; before, twenty at a message's start crashed the process (SIGSEGV in
    the skip) and a run in its middle moved the hit by a code point a line."""
    root, path, data = one_big_message(tmp_path, 3000)
    start = data.index(b'\n\n"', data.index(b"### Message 1")) + 2
    at = {"start": start, "middle": data.index(b'\n"', len(data) // 2) + 1,
          "end": data.rindex(b'"\n') + 2}[where]
    path.write_bytes(data[:at] + b'"\n' * run + data[at:])
    got = grep_each(root, {"python": {"SPILLSCOPE_NO_NATIVE": "1"}, "windows": {"SPILLSCOPE_WHOLE_MAX": "1024"},
                           "whole": {"SPILLSCOPE_WHOLE_MAX": str(64 << 20)}})
    assert got["windows"] == got["python"]
    assert got["whole"] == got["python"]
    assert got["python"][0] in (0, 1), got["python"]


#: What the clean pass of the fused skip (sk_clean512) must never take for clean, each put
#: into a line: invalid or cut-off UTF-8, a raw control, an unescaped quote, an escape it does
#: not take, a blank line, a lone quote line, a short line, a raw CR before a newline.
FAULTS = [b"\xff", b"\xe7\x95", b"\xc3", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\x01", b"\x00", b'"', b"\\u0041",
          b"\\/", b"\\x", b"\n", b'"\n\n"', b'"\n"\n"', b'"\nab"\n"', b'\r"\n"', b"\\", b"\\\\\\"]
CHUNK = 4096  # CLEAN_CHUNK in _native.c


def _canonical_lines(raw: bytes) -> bool:
    """Whether ``raw`` is whole fragment lines each spelt as the writer spells its string."""
    if not raw.endswith(b"\n"):
        return False
    for line in raw[:-1].split(b"\n"):
        try:
            text = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return False
        if not isinstance(text, str) or js_json_string(text).encode("utf-8", "surrogatepass") != line:
            return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_the_clean_pass_takes_no_fault_or_needle_at_any_place_about_its_chunks(tmp_path: Path, seed: int) -> None:
    """The fused skip with its clean pass (chunks of 4 KiB checked at once, taken again block by
    block where anything is) against the skip without it, on messages of many chunks with a
    fault or a needle put about a chunk's edges (and anywhere): what it passes is whole lines
    spelt as the writer spells them, counted as the decoder counts them, with no needle; and it
    passes as much as the block loop alone, less a chunk."""
    nat = native.NATIVE
    if nat is None or not nat.clean_passes():
        pytest.skip("the clean pass needs AVX-512BW")
    rng = random.Random(seed)
    wrong: list[object] = []
    needle_text = "quartzite handover"
    for case in range(160):
        alphabet = rng.choice([ALPHABET, ["a", "b", " ", "é", "界", "😀"], ["a", " ", "q", "z"],
                               ["a", "b", "\\", '"', "\n", "\t", "é"], ["x"]])
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice([3000, 12000, 40000])))
        if rng.random() < 0.5:  # a few escapes among plain text: chunks it takes hold them
            for _ in range(rng.randrange(1, 40)):
                k = rng.randrange(len(text))
                text = text[:k] + rng.choice(["\\", "\\b", "\\n", '"', "\n", "\\\\", '\\"', "\t", "\x7f"]) + text[k:]
        body = lines_of(text)
        edge = CHUNK * rng.randrange(1, max(2, len(body) // CHUNK)) + rng.randrange(-140, 140)
        at = max(0, min(len(body) - 1, edge if rng.random() < 0.8 else rng.randrange(len(body))))
        what = rng.random()
        if what < 0.35:
            body = body[:at] + rng.choice(FAULTS) + body[at:]
        elif what < 0.6:  # the needle's text, put into the text at about that place
            cut = at // 2
            text = text[:cut] + needle_text + text[cut:]
            body = lines_of(text)
        elif what < 0.75:  # the needle over three lines, the middle one short (the join finds it)
            # (cut in each half where k is 8: only the join finds it then)
            cut, k = at // 2, rng.choice([8, rng.randrange(1, len(needle_text) - 3)])
            before = lines_of(text[:cut] + needle_text[:k])
            middle = b'"' + needle_text[k:k + 2].encode() + b'"\n'
            body = before + middle + lines_of(needle_text[k + 2:] + text[cut:])
        folded = rng.random() < 0.3
        enc = js_json_string(needle_text)[1:-1].encode()
        keep = rng.choice([0, 100])
        data = HEAD + body + b"\n### Message 2: user\n\n\"xqz\"\n"
        got = {}
        for clean in (1, 0):
            nat.clean_passes(clean)
            try:
                got[clean] = skip(nat, tmp_path, data, enc, folded, keep)
            finally:
                nat.clean_passes(1)
        to, cps, nbytes = got[1]
        if to == len(HEAD):
            if (cps, nbytes) != (0, 0):
                wrong.append((case, "counts without a skip"))
        else:
            passed = data[len(HEAD):to]
            if not _canonical_lines(passed):
                wrong.append((case, "passed a fault", at))
                continue
            joined = deframe(passed)
            if (cps, nbytes) != measure_escaped(joined):
                wrong.append((case, "counts", at))
            hay = deframe(body) if _canonical_lines(body) else joined
            first = (hay.lower() if folded else hay).find(enc)
            if first != -1 and first < len(joined) + keep:
                wrong.append((case, "skipped a needle", at, first, len(joined)))
        if to < got[0][0] - CHUNK - 1024:
            wrong.append((case, "passed less than the block loop", to, got[0][0]))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("middle", ["e ", "tzite hand", "rtzite hando"])
def test_a_needle_over_a_short_middle_line_is_never_skipped_at_any_offset(tmp_path: Path, middle: str) -> None:
    """A needle whose halves are each cut by a join, its middle line short: only the join finds
    it, so the skip must leave the fused search at the short line (two joins closer than the
    needle), at every offset of that line about a block's edge and a chunk's. (In the last two,
    each half's two rarest bytes, q z and d v, are cut apart too: no pair of them is in one
    line to make a candidate of.)"""
    nat = native.NATIVE
    if nat is None or not nat.simd():
        pytest.skip("the skip needs AVX2")
    needle = "quartzite handover"
    k = needle.index(middle)
    wrong = []
    for clean in (1, 0):
        nat.clean_passes(clean)
        try:
            for shift in range(0, 200, 3):
                # (the lines about the short one long: no other two joins in one block)
                lines = ["a" * (64 + shift)] + ["a" * 64] * rng_lines(shift) + ["a" * 64 + needle[:k], middle,
                                                                                 needle[k + len(middle):] + "a" * 64]
                lines += ["a" * 64] * 200  # past the chunk the needle is in, and its reach
                body = b"".join(b'"' + line.encode() + b'"\n' for line in lines)
                data = HEAD + body
                to, _, _ = skip(nat, tmp_path, data, js_json_string(needle)[1:-1].encode(), False, 0)
                joined = deframe(data[len(HEAD):to]) if to > len(HEAD) else b""
                if needle.encode() in joined or len(joined) > deframe(body).find(needle.encode()):
                    wrong.append((clean, shift))
        finally:
            nat.clean_passes(1)
    assert not wrong, wrong[:5]


def rng_lines(shift: int) -> int:
    """Lines before the needle: past a chunk or two of the clean pass, by the shift."""
    return 60 + (shift * 7) % 90


@pytest.mark.parametrize("cut", [b"\xc3", b"\xe7\x95", b"\xf0\x9f\x98", b"\xe7"])
def test_a_character_cut_short_at_a_chunk_s_end_before_ascii_is_never_skipped(tmp_path: Path, cut: bytes) -> None:
    """A character begun in the last bytes of a clean pass's chunk and never finished, the next
    chunk all ASCII (whose UTF-8 check is then only whether the one before ended well): the
    skip never passes it, at every offset about the first chunks' edges."""
    nat = native.NATIVE
    if nat is None or not nat.simd():
        pytest.skip("the skip needs AVX2")
    lines = [b"a" * 64] * 400
    body = b"".join(b'"' + line + b'"\n' for line in lines)
    wrong = []
    for edge in (4096, 8192, 12288):
        for at in range(edge - 8, edge + 4):
            data = HEAD + body[:at] + cut + body[at:]
            to, _, _ = skip(nat, tmp_path, data, b"absent from it, this needle", False, 0)
            if to > len(HEAD) + at:
                wrong.append(at)
    assert not wrong, wrong[:5]
