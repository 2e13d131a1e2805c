"""The needle's halves looked for in a transcript's raw bytes (``_native.c``: ``pf_halves`` in the
prefilter, the fused ``sk_read`` of ``skip_lines``): for escaped needles of 16-65 bytes a file
is ruled out, or lines skipped, without joining the fragment lines, sound only where no line
between two joins is shorter than the needle less one. The class: needles of every length in
that range, over lines of every length (the writer's 64 code points, and hand-made 1-90),
every escaping layer, the needle at every place relative to the joins, folded and not; files
read whole, in chunks and mapped; a mapping that outlives the file's end."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from spillscope.inspect.search import pattern as P
from spillscope.inspect.search.escapes import deframe, measure_escaped
from spillscope.inspect.search.prefilter import HALVES_MAX, HALVES_MIN, may_match_many
from spillscope.util.text import js_json_string

ALPHABET = ["a", "b", " ", "x", "\n", "\\", '"', "\t", "é", "界", "😀", "\u2028", "/", "q", "z", "e\u0301", "\r\n",
            "k", "w"]
HEAD = b"### Message 1: user\n\n"


def escaped(text: str) -> bytes:
    return js_json_string(text)[1:-1].encode("utf-8", "surrogatepass")


def skipped_text(nat, path: Path, data: bytes, needle: bytes, folded: bool, keep: int) -> tuple[int, bytes] | None:
    """``skip_lines`` over ``data`` (written to ``path``) from its first message line: where
    it stopped and the joined text it skipped, its counts checked against the decoder's;
    None where it skipped nothing."""
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        to, cps, nbytes = nat.skip_lines(fd, len(HEAD), len(data), needle, folded, keep)
    finally:
        os.close(fd)
    if to == len(HEAD):
        assert (cps, nbytes) == (0, 0)
        return None
    assert data[to - 1:to + 1] == b'\n"', "a line start"
    joined = deframe(data[len(HEAD):to])
    assert (cps, nbytes) == measure_escaped(joined)
    return to, joined


def a_needle(rng: random.Random) -> str:
    """A needle whose escaped form is 16-65 bytes, from the hard alphabet (no '/': it escapes
    as the writer spells it, and a raw '\\/' in a file is never ruled out)."""
    while True:
        text = "".join(rng.choice([c for c in ALPHABET if c != "/"]) for _ in range(rng.randrange(6, 60)))
        if HALVES_MIN <= len(escaped(text)) <= HALVES_MAX:
            return text


def fragment_lines(text: str, rng: random.Random, regular: bool) -> bytes:
    """The writer's 64 code points a line, or hand-made lines of 1-90."""
    cps, out, at = list(text), [], 0
    while at < len(cps):
        n = 64 if regular else rng.choice([1, 2, rng.randrange(1, 90), 63, 64, 65])
        out.append(b'"' + escaped("".join(cps[at:at + n])) + b'"\n')
        at += n
    return b"".join(out)


def planted(rng: random.Random, needle: str, size: int, present: bool) -> str:
    """Random text of ``size`` code points; the needle at a random place where ``present``,
    else nothing or a near miss (its halves apart). U+2028 (escaped \u2028: never ruled out) in some."""
    alphabet = ALPHABET if rng.random() < 0.2 else [c for c in ALPHABET if c != "\u2028"]
    text = "".join(rng.choice(alphabet) for _ in range(size))
    at = rng.randrange(len(text) + 1)
    if present:
        return text[:at] + needle + text[at:]
    if rng.random() < 0.5:
        return text
    half = len(needle) // 2
    return text[:at] + needle[:half] + "~" + needle[half:] + text[at:]


def test_the_prefilter_by_halves_never_rules_out_a_file_whose_joined_text_holds_the_needle(nat, tmp_path: Path) -> None:
    """Verdict 0 only where the join rule (every '"\\n"' removed, no \\u or \\/ escape) finds
    no needle; and regular files without it are ruled out (the halves decide there)."""
    rng = random.Random(7)
    root = tmp_path / "session-0123456789ab"
    root.mkdir()
    cases = []
    for i in range(400):
        needle = a_needle(rng)
        folded = i % 4 == 3
        regular = i % 3 != 0
        text = planted(rng, needle, rng.choice([0, 40, 300, 3000]), present=i % 2 == 0)
        data = HEAD + fragment_lines(text, rng, regular)
        path = root / f"{i:012x}-session-reference-1.txt"
        path.write_bytes(data)
        cases.append((str(path), needle, folded, data, regular))
    wrong, ruled_out_regular = [], 0
    for path, needle, folded, data, regular in cases:
        pattern = P.Pattern(needle.upper() if folded else needle, ignore_case=folded)
        pattern.compile()
        (verdict,) = may_match_many([path], [True], pattern)
        enc = escaped(needle)
        joined = data.replace(b'"\n"', b"")
        holds = (enc.lower() in joined.lower()) if folded else enc in joined
        if b"\\u" in data or b"\\/" in data or holds:
            if not verdict:
                wrong.append((path, needle, folded))
        elif regular and not verdict:
            ruled_out_regular += 1
    assert not wrong
    assert ruled_out_regular > 30


def test_a_needle_across_a_join_at_every_offset_passes_the_prefilter(nat, tmp_path: Path) -> None:
    """The boundary class: the needle split by a join after each of its bytes (its escapes
    kept whole), in lines of 64 code points and of exactly its length less one, at every
    offset of a 64-byte block; three lines when they are shorter still."""
    rng = random.Random(11)
    root = tmp_path / "session-0123456789ab"
    root.mkdir()
    paths, expect = [], []
    for m in (16, 17, 33, 64, 65):
        needle = ("qwzk" * 20)[:m]
        for split in range(1, m):
            for lead in (0, 1, 31, 63, 64 - split % 64):
                pre = "a" * (lead + rng.randrange(0, 200))
                line_len = rng.choice([64, max(1, m - 1), max(1, m // 3)])
                text = pre + needle + "a" * 100
                # lines cut so that a join falls after ``split`` bytes of the needle
                first = len(pre) + split
                cuts = [0, first] + list(range(first + line_len, len(text), line_len)) + [len(text)]
                body = b"".join(b'"' + escaped(text[a:b]) + b'"\n' for a, b in zip(cuts, cuts[1:]) if b > a)
                path = root / f"{len(paths):012x}-session-reference-1.txt"
                path.write_bytes(HEAD + body)
                paths.append(str(path))
                expect.append(needle)
    for needle in set(expect):
        pattern = P.Pattern(needle)
        pattern.compile()
        mine = [p for p, n in zip(paths, expect) if n == needle]
        assert all(may_match_many(mine, [True] * len(mine), pattern))


@pytest.mark.parametrize("lines, size", [(800, "read whole"), (8_000, "mapped"), (80_000, "mapped, big")])
@pytest.mark.parametrize("present", [True, False])
def test_a_mapped_transcript_gets_the_verdict_of_one_read_whole(nat, tmp_path: Path, present: bool, lines: int,
                                                                size: str) -> None:
    """Over 256 KiB the file is mapped (over 4 MiB it is a big one, the search's skip reads it
    too): its needle found across a join near the end, and a file without it ruled out, as
    where it is read whole."""
    needle = "quartzite handover protocol at the end"
    line = "The spill store keeps 界 and 😀 out of context; \"quoted\" \\ line\n"
    text = line * lines + ("x" * 40 + needle if present else "x" * 40)
    data = HEAD + fragment_lines(text, random.Random(0), regular=True)
    assert {"read whole": len(data) < 256 << 10, "mapped": 256 << 10 < len(data) < 4 << 20,
            "mapped, big": len(data) > 4 << 20}[size]
    path = tmp_path / "session-0123456789ab" / "000000000001-session-reference-1.txt"
    path.parent.mkdir()
    path.write_bytes(data)
    pattern = P.Pattern(needle)
    pattern.compile()
    assert may_match_many([str(path)], [True], pattern) == [present]


@pytest.mark.parametrize("seed", range(4))
def test_lines_skipped_by_halves_hold_no_needle_and_are_counted_exactly(nat, tmp_path: Path, seed: int) -> None:
    """skip_lines with a 16-65 byte needle (the fused read; a short hand-made line hands the
    rest to the join): what it skips is counted as the decoder counts it and no needle
    starts in it or in the ``keep`` bytes after it."""
    rng = random.Random(seed)
    skipped = 0
    path = tmp_path / "t.txt"
    for _ in range(80):
        needle = a_needle(rng)
        regular = rng.random() < 0.7
        text = planted(rng, needle, rng.choice([300, 5000, 50000]), present=rng.random() < 0.7)
        body = fragment_lines(text, rng, regular)
        data = HEAD + body + (b"\n### Message 2: user\n\n\"xqz\"\n" if rng.random() < 0.5 else b"")
        folded = rng.random() < 0.3
        enc = escaped(needle).lower() if folded else escaped(needle)
        keep = rng.choice([0, 100, 600])
        got = skipped_text(nat, path, data, enc, folded, keep)
        if got is None:
            continue
        skipped += 1
        to, joined = got
        after = data[to:]
        cut = after.find(b"\n\n")
        rest = deframe(after[:cut + 1] if cut >= 0 else after)
        hay = joined + rest[:keep + len(enc)]
        first = (hay.lower() if folded else hay).find(enc)
        assert first == -1 or first >= len(joined) + keep
    assert skipped > 30


def test_a_mapping_past_the_file_s_end_stops_the_skip_instead_of_the_process(nat, tmp_path: Path) -> None:
    """A file shortened while mapped raises SIGBUS at its first page past the end: the skip
    keeps what it counted before that page and the process lives on (here the caller's end
    is past the file's, as after a truncation between its stat and the read)."""
    line = b'"' + b"a" * 61 + b'"\n'
    body = line * (((1 << 20) - len(HEAD)) // len(line))
    data = HEAD + body
    data += b'"' + b"a" * ((1 << 20) - len(data) - 3) + b'"\n'
    assert len(data) == 1 << 20  # ends on a page
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        to, cps, nbytes = nat.skip_lines(fd, len(HEAD), len(data) + (1 << 20), b"absent from it, this needle", False, 0)
    finally:
        os.close(fd)
    assert len(HEAD) < to <= len(data)
    assert (cps, nbytes) == measure_escaped(deframe(data[len(HEAD):to]))


def test_a_needle_split_by_the_first_join_of_a_read_is_never_skipped(nat, tmp_path: Path) -> None:
    """The boundary class of the fused read's first block: the needle split by the read's first
    join after each of its bytes, that first line 1-70 bytes long (its second half then starts
    within the first 64 bytes, where the needle's start lies before the read's), at the
    message's start and after lines skipped before it; folded and not."""
    wrong = []
    path = tmp_path / "t.txt"
    for m in (16, 17, 40, 65):
        needle = ("QWERTYUIOPASDFGHJKLZ" * 4)[:m].encode()
        for split in range(1, m):
            for lead in (0, 1, 7, 40, 60, 64 - split):
                if lead < 0:
                    continue
                for before in (0, 600):
                    first = b"a" * lead + needle[:split]
                    body = (b'"' + b"c" * 64 + b'"\n') * before + b'"' + first + b'"\n"' + needle[split:] + b"b" * 64 \
                        + b'"\n' + (b'"' + b"c" * 64 + b'"\n') * 2000
                    data = HEAD + body
                    path.write_bytes(data)
                    for folded in (False, True):
                        fd = os.open(path, os.O_RDONLY)
                        try:
                            to, _, _ = nat.skip_lines(fd, len(HEAD), len(data), needle.lower() if folded else needle,
                                                      folded, 0)
                        finally:
                            os.close(fd)
                        skipped = deframe(data[len(HEAD):to]) if to > len(HEAD) else b""
                        if deframe(body).find(needle) < len(skipped):
                            wrong.append((m, split, lead, before, folded))
    assert not wrong, wrong[:5]


SCRIPT = r"""
import ctypes, mmap, os, sys
from spillscope.util import native
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
path, needle = sys.argv[1], sys.argv[2].encode()
size, head = os.path.getsize(path), int(sys.argv[3])
# a hole of exactly the file's size just below an inaccessible page: the file's mapping goes there
hole = libc.mmap(None, size + mmap.PAGESIZE, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
libc.munmap(hole, size)
fd = os.open(path, os.O_RDONLY)
print(native.NATIVE.skip_lines(fd, head, size, needle, False, 0))
"""


@pytest.mark.parametrize("needle", ["absent", "absent from it, this needle"])
def test_a_skip_reads_nothing_past_the_end_of_its_mapping(nat, tmp_path: Path, needle: str) -> None:
    """A mapping that ends on a page followed by an inaccessible one: no load or store of the
    skip (the join's 64-byte copies from a line start near a block's end, the halves' loads)
    reaches past the mapping's end; run in a child, where a SIGSEGV is a failed test."""
    line = b'"' + b"a" * 61 + b'"\n'
    data = HEAD + line * (((1 << 20) - len(HEAD)) // len(line))
    data += b'"' + b"a" * ((1 << 20) - len(data) - 3) + b'"\n'
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    # malloc's own buffers (the skip's 512 KiB) from the heap, not mapped into the hole
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_=str(32 << 20))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(path), needle, str(len(HEAD))], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    to = int(proc.stdout.strip("()\n").split(",")[0])
    assert len(HEAD) < to <= len(data)


FAULTHANDLER_LATER = r"""
import faulthandler, os, sys
from spillscope.util import native
path, head = sys.argv[1], int(sys.argv[2])
size = os.path.getsize(path)
fd = os.open(path, os.O_RDONLY)
needle = b"absent from it, this needle"
print(native.NATIVE.skip_lines(fd, head, size, needle, False, 0), flush=True)
faulthandler.enable()  # a library or a harness enabling it after the first guarded read
for _ in range(2):  # an end past the file's: the read of the page after it faults
    print(native.NATIVE.skip_lines(fd, head, size + (1 << 20), needle, False, 0), flush=True)
"""


def test_a_guarded_fault_stays_guarded_when_faulthandler_is_enabled_later(nat, tmp_path: Path) -> None:
    """The SIGBUS handler goes back on top before each guarded read: faulthandler, enabled
    after it, neither reports the guarded fault as fatal nor takes the next one."""
    line = b'"' + b"a" * 61 + b'"\n'
    data = HEAD + line * (((1 << 20) - len(HEAD)) // len(line))
    data += b'"' + b"a" * ((1 << 20) - len(data) - 3) + b'"\n'
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-c", FAULTHANDLER_LATER, str(path), str(len(HEAD))], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and "Fatal Python error" not in proc.stderr, proc.stderr[-2000:]
    assert len(proc.stdout.splitlines()) == 3


@pytest.mark.parametrize("seed", range(3))
def test_lines_of_lengths_near_the_halves_give_no_false_verdict_and_no_false_skip(nat, tmp_path: Path,
                                                                                 seed: int) -> None:
    """Random ASCII needles of 16-65 bytes over lines whose lengths cluster where the halves'
    rules turn (15-17, 30-33, 64 bytes, or anything up to 100), the needle near the start (in
    the first block of a read) or anywhere, in either case when folded: the prefilter rules
    out no file whose joined text holds it, and the skip passes none of its starts."""
    rng = random.Random(seed)
    alphabet = b"abcxyzABCXYZ .-@`{[_"
    path = tmp_path / "t.txt"
    wrong = []
    for _ in range(700):
        m = rng.randrange(HALVES_MIN, HALVES_MAX + 1)
        needle = bytes(rng.choice(alphabet) for _ in range(m))
        folded = rng.random() < 0.4
        text = bytes(rng.choice(alphabet) for _ in range(rng.choice([50, 200, 1000, 5000])))
        if rng.random() < 0.8:
            at = rng.randrange(min(len(text), 200) + 1) if rng.random() < 0.5 else rng.randrange(len(text) + 1)
            planted = bytes(c ^ 0x20 if folded and chr(c).isalpha() and rng.random() < 0.5 else c for c in needle)
            text = text[:at] + planted + text[at:]
        lines, at = [], 0
        while at < len(text):
            n = rng.choice([rng.randrange(1, 100), 64, 15, 16, 17, 30, 31, 32, 33])
            lines.append(b'"' + text[at:at + n] + b'"\n')
            at += n
        body = b"".join(lines)
        data = HEAD + body
        path.write_bytes(data)
        enc = needle.lower() if folded else needle
        joined = body.replace(b'"\n"', b"")
        holds = enc in (joined.lower() if folded else joined)
        verdict = nat.prefilter([os.fsencode(path)], b"\x01", b"", enc, folded, 1 << 62, 1, 1 << 20, 1 << 62)[0]
        if holds and verdict == 0:
            wrong.append(("prefilter", needle, folded))
        keep = rng.choice([0, 0, 100])
        got = skipped_text(nat, path, data, enc, folded, keep)
        if got is None:
            continue
        skipped = got[1]
        whole = deframe(body)
        first = (whole.lower() if folded else whole).find(enc)
        if first != -1 and first < len(skipped) + keep:
            wrong.append(("skip", needle, folded))
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("seed", range(3))
def test_a_message_ruled_out_by_its_halves_never_hides_a_hit(nat, tmp_path: Path, monkeypatch, seed: int) -> None:
    """The halves per transcript message (``_native.halves``, the whole-message search's
    rule-out): the hits of transcripts of many messages, the needle planted in some (split by
    a join at every place, at a message's first and last byte), folded and not, are the hits
    of the same search that decodes every message; and messages without it are ruled out."""
    from spillscope.formats.transcript.writer import render_transcript
    from spillscope.inspect.search import prefilter, transcript
    from spillscope.util.text import js_utf8

    rng = random.Random(seed)
    calls = {"out": 0}
    rule = prefilter.message_rule

    def counted(pattern):  # type: ignore[no-untyped-def]
        inner = rule(pattern)
        if inner is None:
            return None

        def may_hold(raw, start, end):  # type: ignore[no-untyped-def]
            got = inner(raw, start, end)
            calls["out"] += not got
            return got

        return may_hold

    for i in range(40):
        needle = a_needle(rng)
        folded = i % 3 == 2
        texts = []
        for j in range(rng.randrange(1, 8)):
            where = rng.random()
            text = planted(rng, needle, rng.choice([0, 10, 63, 64, 65, 200, 2000]), present=False)
            if i % 4:
                # '\\' before '/' reads as a '\/' escape to the rule, which never rules such lines out
                text = text.replace("/", "-")
            if where < 0.3:
                text = needle + text
            elif where < 0.5:
                text = text + needle
            elif where < 0.7:
                at = rng.randrange(len(text) + 1)
                text = text[:at] + needle + text[at:]
            texts.append(text)
        conv = [{"role": "user" if j % 2 == 0 else "assistant", "text": t} for j, t in enumerate(texts)]
        data = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                          "conversation": conv}, 3))
        if i % 2:
            # Hand-made lines of 1-90 code points: joins too close (2) are decoded, never ruled out.
            data = data[:data.index(b"### Message 1: ")] + b"\n".join(
                f"### Message {j + 1}: {role}\n\n".encode() + fragment_lines(text, rng, False)
                for j, (role, text) in enumerate((c["role"], c["text"]) for c in conv if c["text"]))
        path = tmp_path / f"{i:012x}-session-reference-1.txt"
        path.write_bytes(data)
        pattern = P.Pattern(needle.upper() if folded else needle, ignore_case=folded)

        def hits() -> list[tuple[int | None, int, int]]:
            return [(e.message, e.hit.start, e.hit.end) if hasattr(e, "hit") else (e.code, e.detail)  # type: ignore[misc]
                    for e in transcript.search_transcript(str(path), pattern)]

        monkeypatch.setattr(transcript, "message_rule", counted)
        ruled = hits()
        monkeypatch.setattr(transcript, "message_rule", lambda pattern: None)
        assert ruled == hits(), (needle, folded, texts)
    assert calls["out"] > 3  # the rule engages (most texts without the needle hold a near miss: a half)


def test_the_halves_of_one_message_say_2_where_its_lines_are_too_short(nat) -> None:
    needle = escaped("a needle of twenty")
    lines = b'"abc"\n"de"\n"f"\n'
    assert nat.halves(lines, 0, len(lines), needle, False) == 2
    assert nat.halves(b'"' + needle + b'"\n', 0, len(needle) + 3, needle, False) == 1
    long = b'"' + b"x" * 64 + b'"\n"' + b"y" * 64 + b'"\n'
    assert nat.halves(long, 0, len(long), needle, False) == 0
    assert nat.halves(long, 0, len(long), b"short", False) == -1  # below HALVES_MIN: not applied


def test_a_needle_over_three_lines_is_never_ruled_out_per_message(nat, tmp_path: Path) -> None:
    """Where a line inside the needle is shorter than the needle less one, neither half need
    lie whole in a line: the message's joins are then too close (2), and it is decoded. The
    needle over three lines, its middle line of one or two code points at every place."""
    from spillscope.formats.transcript.writer import render_transcript
    from spillscope.inspect.search import transcript
    from spillscope.util.text import js_utf8

    rng = random.Random(11)
    head = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": [{"role": "user", "text": "x"}]}, 3))
    head = head[:head.index(b"### Message 1: ")]
    filler = "".join(rng.choice("abkqwxz ") for _ in range(64))
    cases = 0
    for n in range(6):
        needle = a_needle(rng)
        for cut in range(1, len(needle) - 1):
            for middle in (1, 2):
                lines = [filler, filler + needle[:cut], needle[cut:cut + middle], needle[cut + middle:] + filler, filler]
                body = b"".join(b'"' + escaped(line) + b'"\n' for line in lines if line)
                path = tmp_path / f"{cases:012x}-session-reference-1.txt"
                path.write_bytes(head + b"### Message 1: user\n\n" + body + b"\n### Message 2: assistant\n\n"
                                 + b'"' + escaped(filler) + b'"\n')
                cases += 1
                hits = [(e.message, e.hit.start) for e in transcript.search_transcript(str(path), P.Pattern(needle))
                        if hasattr(e, "hit")]
                assert hits == [(1, 64 + 64)], (needle, cut, middle)
    assert cases > 100


@pytest.mark.parametrize("framing", [b'"\r\n"', b'" \n"', b'"\t\n"', b'"\n "'])
def test_a_message_framed_otherwise_is_decoded_and_an_irregular_tail_still_reported(nat, tmp_path: Path,
                                                                                     framing: bytes) -> None:
    """The parser's JSON takes whitespace about a line's newline; the halves rule knows only
    the writer's '"\\n"' joins: such a message (its needle over three lines, no half whole in
    one) is decoded, not ruled out; and a tail after the last message is still a finding."""
    from spillscope.formats.transcript.writer import render_transcript
    from spillscope.inspect.search import transcript
    from spillscope.util.text import js_utf8

    needle = "the quick brown fox jumps"
    data = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": [{"role": "user", "text": "x"},
                                                       {"role": "assistant", "text": "a " + needle}]}, 3))
    head, tail = data[:data.index(b"### Message 1: ")], data[data.index(b"### Message 2: "):]
    lines = [("z" * 40) + needle[:12], needle[12:13], needle[13:] + "zz"]
    body = b'"' + framing.join(escaped(x) for x in lines) + b'"\n'
    path = tmp_path / "000000000001-session-reference-1.txt"
    path.write_bytes(head + b"### Message 1: user\n\n" + body + b"\n" + tail)
    got = [(e.message, e.hit.start) for e in transcript.search_transcript(str(path), P.Pattern(needle))
           if hasattr(e, "hit")]
    assert got == [(1, 40), (2, 2)]
    path.write_bytes(data.replace(b"x", needle.encode()) + b"garbage after the last message\n")
    codes = [e.code for e in transcript.search_transcript(str(path), P.Pattern(needle)) if not hasattr(e, "hit")]
    assert codes == ["malformed-artifact"]


FRAMINGS = [b'"\r\n"', b'" \n"', b'"\t\n"', b'"\n "', b'"\n\t"', b'" \r\n  "', b'"\r\n\t"']


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("size", [3_000, 1_500_000, 5_000_000])
def test_a_file_framed_otherwise_is_never_ruled_out_by_the_file_level_rules(nat, tmp_path: Path, framing: bytes,
                                                                            size: int) -> None:
    """The parser's JSON takes whitespace about a fragment line's newline, which the writer
    never writes: a file so framed is never ruled out by the file-level rules (the native
    prefilter read whole, in chunks and mapped; its Python twin), whatever the needle's length
    (under, in and over the halves' range; one in the range over three lines, no half whole in
    one), folded or not; the search (of the small file) then finds every hit the writer's
    framing of the same lines gives."""
    from spillscope.formats.transcript.writer import render_transcript
    from spillscope.inspect.search import prefilter
    from spillscope.inspect.search.root import SearchHit, search_root
    from spillscope.inspect.search.source import close_source, open_source
    from spillscope.util.text import js_utf8

    rng = random.Random(size)
    head = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": [{"role": "user", "text": "x"}]}, 3))
    head = head[:head.index(b"### Message 1: ")] + b"### Message 1: user\n\n"
    # Digits and signs the filler never holds: each needle is in no other place (nor its halves).
    marker = "".join(rng.choice("0123456789#%&*+=-@!?") for _ in range(300))
    lines = [marker[0:64], marker[64:128], marker[128:159], marker[159:161], marker[161:225], marker[225:289], marker[289:300]]
    words = ["alpha", "beta", "gamma", "delta", "omega", "zeta"]
    filler = " ".join(rng.choice(words) for _ in range(size // 6))
    lines += [filler[at:at + 64] for at in range(0, len(filler), 64)]
    # 5 and 90 code points across the first join; 20 over three lines (9, 2 and 9 code points).
    needles = [marker[62:67], marker[24:114], marker[150:170]]
    body = [escaped(line) for line in lines]
    plain = head + b'"' + b'"\n"'.join(body) + b'"\n'
    framed = head + b'"' + framing.join(body) + b'"\n'
    sdir = tmp_path / "root" / "session-0123456789ab"
    sdir.mkdir(parents=True)
    plain_path = sdir / "000000000001-session-reference-1.txt"
    framed_path = sdir / "000000000002-session-reference-2.txt"
    plain_path.write_bytes(plain)
    framed_path.write_bytes(framed)
    for needle in needles:
        for folded in (False, True):
            pattern = P.Pattern(needle, ignore_case=folded)
            assert may_match_many([str(framed_path)], [True], pattern) == [True], (needle, folded)
            handle = open_source(str(framed_path))
            try:
                assert prefilter.transcript_may_match(handle, len(framed), pattern), (needle, folded)
            finally:
                close_source(handle)
            if size > 10_000:
                continue  # the search of a big file framed so is the parser's (slow path): once is enough
            hits = [h for h in search_root(tmp_path / "root", pattern) if isinstance(h, SearchHit)]
            by_file = {p: [(h.message, h.start) for h in hits if h.path.endswith(p.name)]
                       for p in (plain_path, framed_path)}
            assert by_file[plain_path] and by_file[framed_path] == by_file[plain_path], (needle, folded)


@pytest.mark.parametrize("odd", [b'"\n\n"', b'" \n"', b'"\n "', b'"\r\n"', b'"\t\n"', b"\n", b'"\ntext after\n'])
def test_one_message_framed_otherwise_anywhere_is_never_ruled_out(nat, odd: bytes) -> None:
    """``_native.halves`` of one message's lines rules it out only where every newline but the
    last is a '"\\n"' join: a blank line, whitespace about a newline, a raw newline inside a
    line or text after the lines, at every offset of messages of every length (each block of
    the vector loop, its edges and the scalar tail), is a 1 (decoded), never a 0."""
    needle = escaped("a needle nowhere in the text")
    wrong = []
    for lines in (1, 2, 5, 40):
        body = b'"' + b'"\n"'.join(b"w" * 70 for _ in range(lines)) + b'"\n'
        assert nat.halves(body, 0, len(body), needle, False) == 0
        for at in range(1, len(body) - 1):
            if body[at - 1 : at + 1] == b'"\n':
                # the framing replaced at this join ('"\n"' spans at - 1 .. at + 1)
                bad = body[: at - 1] + odd + body[at + 2 :]
            elif body[at] != 0x77 or at % 7:
                continue
            else:
                bad = body[:at] + odd[odd.index(b"\n"):odd.index(b"\n") + 1] + body[at:]  # a raw newline in a line
            if nat.halves(bad, 0, len(bad), needle, False) == 0:
                wrong.append((lines, at))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("seed", range(3))
def test_a_transcript_checked_by_every_thread_at_once_gets_the_verdict_of_one_thread(nat, tmp_path: Path,
                                                                                    seed: int) -> None:
    """A mapped transcript's check shared by the threads (``pf_shared``: the mapping cut at the
    first join after each eighth into parts, each checked apart; here for every mapped file,
    as for the first big one of a search) gets one thread's verdict over the whole file, for
    the needle across the join a cut is made at (the part before ends past it, the one after
    begins at it), over three lines there (a line too short for the halves: the join decides),
    anywhere, or nowhere; folded or not."""
    rng = random.Random(seed)
    path = tmp_path / "t.txt"
    wrong = []
    filler = "".join(rng.choice([c for c in ALPHABET if c not in "\u2028/"]) for _ in range(180_000))
    plain = [escaped(filler[at:at + 64]) for at in range(0, len(filler), 64)]
    for case in range(24):
        needle = a_needle(rng)
        lines = list(plain)
        size = len(HEAD) + sum(len(x) + 3 for x in lines)
        target, at, i = size // 8 * rng.randrange(1, 8), len(HEAD), 0
        while at + len(lines[i]) + 3 <= target:  # line i holds the eighth: its join is the cut's
            at += len(lines[i]) + 3
            i += 1
        how = ["across", "three lines", "anywhere", "nowhere"][case % 4]
        cut = rng.randrange(1, len(needle))
        if how == "across":
            lines[i] += escaped(needle[:cut])
            lines[i + 1] = escaped(needle[cut:]) + lines[i + 1]
        elif how == "three lines":
            # neither half whole in a line: the needle's first and last bytes short of a half
            # each side of a line of its middle (too short: the joins around it too close)
            half = (len(escaped(needle)) + 1) // 2
            a = max(k for k in range(len(needle)) if len(escaped(needle[:k])) < half)
            b = min(k for k in range(1, len(needle) + 1) if len(escaped(needle[k:])) < half)
            lines[i] += escaped(needle[:a])
            lines[i + 1:i + 1] = [escaped(needle[a:b])]
            lines[i + 2] = escaped(needle[b:]) + lines[i + 2]
        elif how == "anywhere":
            k = rng.randrange(len(lines))
            lines[k] = escaped(needle) + lines[k]
        data = HEAD + b"".join(b'"' + x + b'"\n' for x in lines)
        assert len(data) > 256 << 10  # mapped
        path.write_bytes(data)
        folded = rng.random() < 0.3
        enc = escaped(needle).lower() if folded else escaped(needle)
        args = ([os.fsencode(path)], b"\x01", b"", enc, folded, 1 << 62)
        one = nat.prefilter(*args, 1, 1 << 20, 1 << 62)[0]
        joined = data[len(HEAD):].replace(b'"\n"', b"")
        holds = enc in (joined.lower() if folded else joined)
        assert holds == (how != "nowhere") or how == "nowhere"
        if holds and one == 0:
            wrong.append(("ruled out", how, needle))
        for threads in (2, 3):
            shared = nat.prefilter(*args, threads, 1 << 20, 1 << 62, 0)[0]
            if shared != one:
                wrong.append((how, needle, folded, threads, one, shared))
    assert not wrong, wrong[:3]


def test_big_transcripts_that_hold_the_needle_are_ruled_in_after_one_shared_check(nat, tmp_path: Path) -> None:
    """Transcripts over 4 MiB on two threads: the first one taken (file 0 or 1, whichever
    thread comes first) is checked by both at once; where it holds the needle the rest are
    handed to the search unchecked (verdict 1, even those without it), where it does not each
    is checked and ruled out or in as it is (each by one thread)."""
    needle = "quartzite handover protocol"
    line = "The spill store keeps 界 and 😀 out of context; \"quoted\" \\ line\n"
    holding, without = [], []
    for k in range(4):
        for holds, into in ((True, holding), (False, without)):
            text = line * 70_000 + (needle if holds else "")
            data = HEAD + fragment_lines(text, random.Random(k), regular=True)
            assert len(data) > 4 << 20
            path = tmp_path / f"{k}-{holds}.txt"
            path.write_bytes(data)
            into.append(os.fsencode(path))
    enc = escaped(needle)
    first_hold = holding[:2] + without[:2]
    assert list(nat.prefilter(first_hold, b"\x01" * 4, b"", enc, False, 1 << 62, 2, 1 << 20)) == [1, 1, 1, 1]
    first_not = without[2:] + holding[2:]
    assert list(nat.prefilter(first_not, b"\x01" * 4, b"", enc, False, 1 << 62, 2, 1 << 20)) == [0, 0, 1, 1]


@pytest.mark.parametrize("seed", range(3))
def test_the_halves_check_gives_the_same_verdict_with_its_clean_pass_and_without(tmp_path: Path, seed: int) -> None:
    """The prefilter's halves check with its clean pass (4 KiB chunks checked at once, a chunk
    with anything taken again block by block) and without, on transcripts of many chunks with
    the needle, a near miss, a \\u or \\/, a short line, an odd newline or a header planted
    about a chunk's edge (and anywhere): the same verdict, read whole, in chunks and mapped;
    and never a file ruled out whose joined text holds the needle."""
    from spillscope.util import native

    nat = native.NATIVE
    if nat is None or not nat.clean_passes():
        pytest.skip("the clean pass needs AVX-512BW")
    rng = random.Random(seed)
    plants = [None, "needle", "near", b"\\u0041", b"\\/", b'"\nab"\n"', b' \n', b'"\n "', b"\n### Message 2: user\n\n"]
    wrong = []
    for case in range(90):
        needle = a_needle(rng)
        enc = escaped(needle)
        text = "".join(rng.choice(["a", "b", " ", "é", "k", "w", "\n"]) for _ in range(rng.choice([6000, 20000])))
        body = fragment_lines(text, rng, True)
        edge = 4096 * rng.randrange(1, max(2, len(body) // 4096)) + rng.randrange(-90, 90)
        at = max(1, min(len(body) - 2, edge if rng.random() < 0.8 else rng.randrange(1, len(body) - 1)))
        what = rng.choice(plants)
        if what == "needle" or what == "near":
            cut = len(text) * at // len(body)
            piece = needle if what == "needle" else needle[: len(needle) // 2] + "~" + needle[len(needle) // 2:]
            body = fragment_lines(text[:cut] + piece + text[cut:], rng, True)
        elif what is not None:
            body = body[:at] + what + body[at:]
        data = b"# Session reference transcript (spill file)\n\n" + HEAD + body
        path = tmp_path / f"{case}.txt"
        path.write_bytes(data)
        for folded in (False, True):
            e = enc.lower() if folded else enc
            verdicts = []
            for clean in (1, 0):
                nat.clean_passes(clean)
                try:
                    for chunk, whole_max in ((1 << 20, 1 << 62), (1 << 12, 1 << 62), (1 << 20, 0)):
                        verdicts.append(nat.prefilter([os.fsencode(path)], b"\x01", b"", e, folded, 1 << 62, 1,
                                                      chunk, 1 << 62, whole_max)[0])
                finally:
                    nat.clean_passes(1)
            if verdicts[:3] != verdicts[3:]:
                wrong.append((case, what, folded, verdicts))
            if what == "needle" and 0 in verdicts:
                wrong.append((case, "ruled out a file with the needle", folded, verdicts))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("short", [0, 2, 9, 20])
def test_the_halves_check_s_clean_pass_measures_joins_at_every_offset_about_its_chunks(short: int) -> None:
    """A line of ``short`` bytes (0: none) among lines of 64, every offset of its joins about
    the clean pass's first chunk edges, and a join at each byte about them: the halves of one
    message (strict: every newline a join) and of a file give the verdict the block loop gives
    (2 where two joins are too close, else 0)."""
    from spillscope.util import native

    nat = native.NATIVE
    if nat is None or not nat.clean_passes():
        pytest.skip("the clean pass needs AVX-512BW")
    needle = escaped("a needle of twenty-two")
    wrong = []
    for shift in range(0, 70):
        lines = [b"a" * (64 + shift)] + [b"a" * 64] * 58 + ([b"b" * short] if short else []) + [b"a" * 64] * 120
        body = b"".join(b'"' + line + b'"\n' for line in lines)
        got = []
        for clean in (1, 0):
            nat.clean_passes(clean)
            try:
                got.append((nat.halves(body, 0, len(body), needle, False),
                            nat.halves(body, 0, len(body), needle.lower(), True)))
            finally:
                nat.clean_passes(1)
        if got[0] != got[1] or got[0][0] != (2 if 0 < short < len(needle) - 1 else 0):
            wrong.append((shift, got))
    assert not wrong, wrong[:5]
