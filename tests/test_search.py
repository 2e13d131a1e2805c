"""Root-wide exact search (`spillscope grep`, inspect/search/) and the reader's search."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from regex_oracle import re2_spans

from spillscope.util import native
from spillscope.util.text import js_json_string, js_utf8, utf8_len
from spillscope.frontends.demo import write_demo
from spillscope.inspect.search import document as D
from spillscope.inspect.search import pattern as P
from spillscope.inspect.search import records as R
from spillscope.inspect.search import tool as TL
from spillscope.inspect.search import transcript as T
from spillscope.inspect.search import whole as W
from spillscope.inspect.search import root as R_ROOT
from spillscope.formats.transcript import TranscriptIndex, read_transcript, render_transcript

TRICKY = ['"', "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "\ud800", "\udfff", "😀", "e\u0301", "\r\n", "\u2028",
          "/", "u", "n", "界", "\\u0041", "\\n"]


def run(*args: str, scanners: str = "native") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, native.ENV: "1"} if scanners == "python" else None
    return subprocess.run([sys.executable, "-m", "spillscope", *args], capture_output=True, timeout=120, env=env)


#: Every byte-scanner path must give identical results: the C accelerator (a text that fits
#: searched whole, inspect/search/whole.py), the same window by window, and pure Python.
SCANNERS = ["native", "native-windowed", "python"]


class using:
    """Run the body on one scanner path: ``native.NATIVE`` as built (whole texts, or window by
    window), or None (pure Python)."""

    def __init__(self, scanners: str) -> None:
        self.scanners = scanners
        self.saved = native.NATIVE
        self.whole = W.WHOLE_MAX

    def __enter__(self) -> None:
        if self.scanners != "python" and self.saved is None:
            pytest.skip("no native accelerator here (test_native_accelerator_is_built says whether it should be)")
        native.NATIVE = self.saved if self.scanners != "python" else None
        W.WHOLE_MAX = 0 if self.scanners == "native-windowed" else self.whole

    def __exit__(self, *exc: object) -> None:
        native.NATIVE = self.saved
        W.WHOLE_MAX = self.whole


@pytest.fixture(params=[0, 1], ids=["sse2", "avx2"])
def simd(request: pytest.FixtureRequest) -> Iterator[int]:
    """The C accelerator's vector loops: SSE2 only (0), or AVX2 where the CPU has it (1)."""
    nat = native.NATIVE
    if nat is None:
        pytest.skip("the C accelerator is not built")
    was = nat.simd()
    nat.simd(request.param)
    yield request.param
    nat.simd(was)


def test_native_accelerator_is_built() -> None:
    # A plain `pip install -e .` builds the C extension; CI must not fall back silently.
    if os.environ.get(native.ENV, "") in ("", "0"):
        import spillscope._native as built

        assert native.NATIVE is built


@pytest.mark.parametrize("value,python", [("1", True), ("", False), ("0", False)])
def test_no_native_switch_forces_the_python_path(value: str, python: bool) -> None:
    code = "from spillscope.util import native; print(native.NATIVE is None)"
    env = {**os.environ, native.ENV: value}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == str(python or native.NATIVE is None)


@settings(max_examples=3000, deadline=None)
@given(body=st.lists(st.sampled_from([b'"', b"\n", b"\\", b"u", b"/", b"a", b"D", b"8", b"0", b"d", b"c", b"f", b"F",
                                      b"e", b"n", b"\xc3", b"\xa9", b"\n\"", b'"\n', b"\\ud83d", b"\\uDE00", b"\x01",
                                      b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\\u0000"]), max_size=30).map(b"".join),
       framed=st.booleans(), cut=st.integers(-1, 40))
def test_native_byte_passes_equal_the_python_ones(body: bytes, framed: bool, cut: int) -> None:
    from spillscope.inspect.search import escapes as E

    data = b'"' + body + b'"\n' if framed else body
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")

    def both(fn: Any, *args: Any) -> list[Any]:
        out = []
        for which in ("native", "python"):
            with using(which):
                try:
                    out.append(fn(*args))
                except ValueError:
                    out.append(ValueError)
        return out

    a, b = both(E.deframe, data, cut)
    assert a == b
    reused = bytearray(b"left over from the last window" * 3)
    a, b = both(lambda: bytes(E.deframe_reusing(data, cut, reused)))
    assert a == b
    a, b = both(E.canonical_escapes, data)
    assert a == b
    a, b = both(E.measure_escaped, body)  # counted natively, or decoded and measured
    assert a == b


STATS_ATOMS = [b'"', b"\n", b"\\", b"u", b"/", b"a", b"D", b"8", b"0", b"d", b"e", b"n", b"\xc3", b"\xa9",
               b"\\ud83d", b"\\uDE00", b"\\ud800\\udc00", b"\\u00e9", b"\\u4e16", b"\\u0000", b"\\n", b'\\"',
               b"\\\\", b"\x01", b"\x7f", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xf0\x9f\x98\x80",
               b"\xe4\xb8\x96", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf",
               b"\xf0\x80\x80\xaf", b"\x80", b"\xff", b"\xf8", b"plain ascii text ", b"x" * 31]


@settings(max_examples=3000, deadline=None)
@given(body=st.lists(st.sampled_from(STATS_ATOMS), max_size=120).map(b"".join), start=st.integers(0, 20),
       cut=st.integers(0, 20))
def test_simd_counts_equal_the_scalar_and_python_ones(body: bytes, start: int, cut: int) -> None:
    """The counts a search keeps as it goes (32 bytes at a time, UTF-8 validated by SIMD)
    are the scalar loop's and the decoder's, on text that straddles blocks anywhere."""
    from spillscope.inspect.search import escapes as E

    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    end = max(start, len(body) - cut)
    was, was512 = nat.simd(), nat.avx512()
    try:
        nat.simd(1)
        fast = nat.escaped_stats(body, start, end), nat.utf8_stats(body, start, end)
        fast_survey = nat.survey(body, end)
        nat.avx512(0)  # the AVX2 loops where the AVX-512 ones run by default
        assert (nat.escaped_stats(body, start, end), nat.utf8_stats(body, start, end)) == fast
        nat.avx512(was512)
        nat.simd(0)
        slow = nat.escaped_stats(body, start, end), nat.utf8_stats(body, start, end)
        slow_survey = nat.survey(body, end)
    finally:
        nat.simd(was)
        nat.avx512(was512)
    assert fast == slow
    # survey: canonical_escapes of the whole, and the counts up to ``end`` where ``end``
    # splits the counts (an escape boundary, as a window's carry point always is)
    with using("python"):
        canonical = E.canonical_escapes(body)
    head, tail, whole = nat.escaped_stats(body, 0, end), nat.escaped_stats(body, end), nat.escaped_stats(body)
    splits = None not in (head, tail, whole) and (head[0] + tail[0], head[1] + tail[1]) == whole
    for got in (fast_survey, slow_survey):
        assert got[0] == canonical
        if splits:
            assert got[1] == head
        elif whole is None:
            assert got[1] is None
    seg = body[start:end]
    if fast[0] is not None:
        text = E.decode_escaped(seg)
        assert fast[0] == (len(text), utf8_len(text))
    try:
        plain = seg.decode("utf-8")
    except UnicodeDecodeError:
        assert fast[1] is None
    else:
        assert fast[1] == (len(plain), len(seg))


def test_the_simd_counts_are_used_where_the_cpu_has_them() -> None:
    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" in flags and " popcnt" in flags:
        assert nat.simd()


@pytest.mark.parametrize("kind", ["transcript", "tool"])
def test_a_hit_deep_in_a_huge_message_is_counted_without_a_second_read(tmp_path: Path, kind: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The native path counts offsets as it reads, so a hit at the end of a message costs
    one read of the file, not two (the lazy count read everything before the hit again)."""
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    big = "The spill store keeps 界 and 😀 out of context; \"quoted\" \\ line\n\x01" * 4000
    text = big + "the needle at the end"
    if kind == "transcript":
        root = write_root(tmp_path, [[text, "after"]])
    else:
        root = write_root(tmp_path, [], [text])
    path = str(next(p for p in root.rglob("*.txt")))
    monkeypatch.setattr(T, "WINDOW", 4096)
    monkeypatch.setattr(TL, "WINDOW", 4096)
    read: list[int] = []
    pread, preadv = os.pread, os.preadv
    monkeypatch.setattr(os, "pread", lambda fd, n, at: read.append(n) or pread(fd, n, at))
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, at: read.append(sum(map(len, bufs))) or preadv(fd, bufs, at))
    pattern = P.Pattern("needle")
    # The search itself (the byte prefilter before it, a pass of its own over files up to
    # prefilter.MAX_SIZE, is not what this measures).
    if kind == "transcript":
        hits = [ev.hit for ev in T.search_transcript(path, pattern, prefiltered=True) if isinstance(ev, R._Located)]
    else:
        hits = list(TL.search_tool_output(path, pattern, prefiltered=True))
    want = len(big) + 4
    assert [(h.start, h.end, h.byte_start) for h in hits] == [(want, want + 6, utf8_len(text[:want]))]
    assert sum(read) < 1.2 * os.path.getsize(path) + (64 << 10)


def jsonl(out: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.decode().splitlines()]


def write_root(tmp: Path, conversations: list[list[str]], tools: list[str] = ()) -> Path:
    """A spill root with one transcript per conversation (as the reference writes it)
    and tool outputs; no logs."""
    root = tmp / "root"
    sdir = root / "session-0123456789ab"
    sdir.mkdir(parents=True)
    for i, texts in enumerate(conversations, 1):
        conv = [{"role": "user" if j % 2 == 0 else "assistant", "text": t} for j, t in enumerate(texts)]
        data = render_transcript({"sessionId": "src", "label": "l", "cwd": None, "capturedThroughSeq": 3,
                                  "conversation": conv}, 3)
        (sdir / f"{i:012x}-session-reference-{i}.txt").write_bytes(js_utf8(data))
    for i, text in enumerate(tools, 1):
        (sdir / f"{i + 100:012x}-bash.txt").write_bytes(js_utf8(text))
    return root


def brute(text: str, needle: str) -> list[tuple[int, int]]:
    out, i = [], text.find(needle)
    while i >= 0:
        out.append((i, i + len(needle)))
        i = text.find(needle, i + len(needle))
    return out


CASES = {
    "across a fragment line": ("x" * 60 + "crossing the line" + "y" * 100, "crossing the line"),
    "quote": ('say "hello" to "them"' * 3 + "a" * 70, 'o" to "t'),
    "backslash": ("C:\\Users\\me\\new\\table" + "b" * 70, "\\new\\t"),
    "newline": ("one\ntwo\r\nthree" + "c" * 62 + "four\nfive", "r\nfive"),
    "tab": ("a\tb\t" * 40, "b\ta\tb"),
    "controls": ("\x00\x01\x1b[31m\x7f" * 30, "\x1b[31m\x7f\x00"),
    "lone surrogate": ("a\ud800b" * 30 + "\udfffz", "\ud800b"),
    "lone low then letter": ("q" * 63 + "\udfffz", "\udfffz"),
    "astral": ("😀" * 63 + "界😀x", "😀界😀x"),
    "combining": ("e\u0301" * 40, "\u0301e\u0301"),
    "escape-like text": ("\\u0041 is not A, \\n is not a newline" * 4, "\\u0041 is"),
}


@pytest.mark.parametrize("scanners", SCANNERS)
@pytest.mark.parametrize("name", list(CASES))
def test_grep_finds_escaped_and_split_phrases_with_exact_offsets(tmp_path: Path, name: str, scanners: str) -> None:
    text, needle = CASES[name]
    root = write_root(tmp_path, [["intro", text]], [text])
    # Through argv as a JSON string: NUL and lone surrogates cannot be argv bytes.
    proc = run("grep", "--json-pattern", json.dumps(needle), str(root), "--json", scanners=scanners)
    assert proc.returncode == 0, proc.stderr
    hits = jsonl(proc.stdout)
    if "\x00" not in needle and "\ud800" not in needle and "\udfff" not in needle:
        assert jsonl(run("grep", needle, str(root), "--json", scanners=scanners).stdout) == hits
    path = next(root.rglob("*session-reference-1.txt"))
    exact = read_transcript(path).messages[1].text
    want = [(2, s, e) for s, e in brute(exact, needle)]
    got = [(h["message"], h["start"], h["end"]) for h in hits if h["kind"] == "session-reference-transcript"]
    assert got == want and want
    for h in hits:
        if h["kind"] == "session-reference-transcript":
            assert exact[h["start"] : h["end"]] == needle
            assert h["seen"] is None and h["session"] is None
    tool = [h for h in hits if h["kind"] == "tool-output"]
    if "\ud800" in needle or "\udfff" in needle:
        assert tool == []  # written to disk as U+FFFD: the lone surrogate is not in the file
    else:
        tool_text = js_utf8(text).decode()
        assert [(h["start"], h["end"]) for h in tool] == brute(tool_text, needle)
        assert all(h["message"] is None for h in tool)


def test_grep_case_insensitive_and_regex(tmp_path: Path) -> None:
    text = "The Spill STORE keeps\n" + "z" * 50 + "spill store " + "ß and ẞ"
    root = write_root(tmp_path, [[text]])
    exact = read_transcript(next(root.rglob("*.txt"))).messages[0].text
    hits = jsonl(run("grep", "-i", "spill store", str(root), "--json").stdout)
    assert [(h["start"], h["end"]) for h in hits] == [(4, 15), (72, 83)]
    assert all(exact[h["start"] : h["end"]].lower() == "spill store" for h in hits)
    hits = jsonl(run("grep", "-E", r"z+spill", str(root), "--json").stdout)
    assert [(h["start"], h["end"]) for h in hits] == [(exact.index("z"), exact.index("spill store") + 5)]
    hits = jsonl(run("grep", "-E", "-i", r"keeps\nZ", str(root), "--json").stdout)
    assert len(hits) == 1 and exact[hits[0]["start"] : hits[0]["end"]] == "keeps\nz"


def test_grep_exit_codes_and_bad_artifacts(tmp_path: Path) -> None:
    root = write_root(tmp_path, [["alpha beta"], ["gamma"]])
    assert run("grep", "beta", str(root)).returncode == 0
    assert run("grep", "nowhere", str(root)).returncode == 1
    assert run("grep", "-E", "(", str(root)).returncode == 2
    assert run("grep", "x", str(tmp_path / "missing")).returncode == 2
    # A malformed transcript is a finding on stderr; the others are still searched.
    bad = next(root.rglob("*session-reference-2.txt"))
    bad.write_bytes(bad.read_bytes().replace(b'"gamma"', b'"gam\\xma"'))
    proc = run("grep", "a", str(root), "--json")
    assert proc.returncode == 0
    assert b"malformed-artifact" in proc.stderr and bad.name.encode() in proc.stderr
    assert {h["path"] for h in jsonl(proc.stdout)} == {str(next(root.rglob("*session-reference-1.txt")))}


@pytest.mark.parametrize("size", [1, 7, R_ROOT.HIT_BATCH])
def test_root_batches_are_runs_of_one_artifact_in_the_search_order(tmp_path: Path, size: int) -> None:
    """search_root_batches: each list one artifact's hits (at most HIT_BATCH, never empty),
    a finding after the hits found before it; flattened, the very events of search_root, a
    dense tool output's hits cut into full batches and a last one."""
    root = write_root(tmp_path, [["ab " * 300, "x ab"], ["ab ab", "tail ab"]], ["ab\n" * 2500, "none here", "ab"])
    bad = next(root.rglob("*session-reference-2.txt"))
    bad.write_bytes(bad.read_bytes().replace(b'"tail ab"', b'"tail ab\\xma"'))  # message 2 malformed
    pattern = P.Pattern("ab")
    batches = list(R_ROOT.search_root_batches(root, pattern, batch=size))
    flat = [h for b in batches for h in (b if isinstance(b, list) else [b])]
    assert flat == list(R_ROOT.search_root(root, pattern))
    runs = [b for b in batches if isinstance(b, list)]
    assert all(0 < len(b) <= size and len({h.path for h in b}) == 1 for b in runs)
    dense = [len(b) for b in runs if b[0].path.endswith(f"{101:012x}-bash.txt")]
    assert dense == [size] * (2500 // size) + ([2500 % size] if 2500 % size else [])
    # the malformed transcript: its first message's hit, then the finding
    where = [i for i, b in enumerate(batches) if (b[0].path if isinstance(b, list) else b.path) == str(bad)]
    assert isinstance(batches[where[-1]], R_ROOT.Finding) and batches[where[-1]].code == "malformed-artifact"
    assert any(isinstance(batches[i], list) for i in where[:-1])


def test_search_root_hands_on_each_hit_as_it_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """search_root (the TUI's, the notebook's) yields a hit before the search of its artifact
    looks for the next one: a list is grep's, not a reason to hold a hit back."""
    root = write_root(tmp_path, [], ["ab ab ab"])
    produced: list[int] = []
    real = R_ROOT.searchers()

    def tool(*args: Any, **kwargs: Any) -> Iterator[list[R.MessageHit]]:
        for run in real[0](*args, **kwargs):
            produced.extend(h.start for h in run)
            yield run

    monkeypatch.setattr(R_ROOT, "searchers", lambda: (tool, real[1]))
    events = R_ROOT.search_root(root, P.Pattern("ab"))
    first = next(e for e in events if isinstance(e, R_ROOT.SearchHit))
    assert first.start == 0 and produced == [0]
    events.close()


@pytest.mark.skipif(native.NATIVE is None, reason="the batched native check")
@pytest.mark.parametrize("files", [40, 200])
def test_the_prefilter_hands_its_wait_to_meanwhile_while_a_batch_is_checked(tmp_path: Path, files: int,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``meanwhile`` (the searchers' imports) runs once, while a batch is checked and before the
    first verdict is handed on: the first batch's check where it is the only one (40 files),
    else the second's, once begun (200: a first batch of small files is checked in a few ms,
    and the second's check waited for the imports). The verdicts are the checks'."""
    root = write_root(tmp_path, [], [f"line {i}" for i in range(files)])
    targets = [R_ROOT._Target(str(p), R.TOOL_OUTPUT, None, str(p.parent), None)
               for p in sorted(root.glob("*/*-bash.txt"))]
    order: list[str] = []
    real_submit, real_result = R_ROOT._Workers.submit, R_ROOT._Job.result

    def submit(self: Any, call: Any) -> Any:
        order.append("check")
        return real_submit(self, call)

    def result(self: Any) -> Any:
        order.append("verdicts")
        return real_result(self)

    monkeypatch.setattr(R_ROOT._Workers, "submit", submit)
    monkeypatch.setattr(R_ROOT._Job, "result", result)
    got = R_ROOT._prefiltered(iter(targets), P.Pattern("line 7"), True, meanwhile=lambda: order.append("meanwhile"))
    first = next(got)
    before = list(order)
    rest = [first, *got]
    holding = {str(root / "session-0123456789ab" / f"{i + 101:012x}-bash.txt") for i in range(files) if "line 7" in f"line {i}"}
    assert [t for t, _ in rest] == targets and {t.path for t, may in rest if may} == holding
    assert order.count("meanwhile") == 1
    if files <= R_ROOT.FIRST_BATCH:
        assert before == ["check", "meanwhile", "verdicts"]
    else:
        assert before == ["check", "verdicts", "check", "meanwhile"]


def test_grep_says_which_entries_it_could_not_search(tmp_path: Path) -> None:
    """A directory or a FIFO where an artifact belongs is skipped with a finding on stderr
    (it was skipped in silence); the search goes on and its exit status is the hits'."""
    root = write_root(tmp_path, [["alpha beta"]])
    sdir = next(root.iterdir())
    (sdir / "aaaaaaaaaaaa-bash.txt").mkdir()
    os.mkfifo(sdir / "bbbbbbbbbbbb-bash.txt")
    proc = run("grep", "beta", str(root), "--json")
    assert proc.returncode == 0 and len(jsonl(proc.stdout)) == 1
    err = proc.stderr.decode()
    assert "unexpected-entry" in err and "aaaaaaaaaaaa-bash.txt" in err and "bbbbbbbbbbbb-bash.txt" in err
    assert "directory" in err and "FIFO" in err.upper()


def test_grep_human_output_shows_controls_and_marks_the_hit(tmp_path: Path) -> None:
    root = write_root(tmp_path, [["before \x1b[31m red \x00 after"]])
    proc = run("grep", "red", str(root))
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "\x1b" not in out and "\x00" not in out
    assert "␛[31m [[red]] ␀ after" in out and "message 1 (user)" in out


def test_grep_max_count(tmp_path: Path) -> None:
    root = write_root(tmp_path, [["ab " * 100], ["ab"]])
    hits = jsonl(run("grep", "ab", str(root), "--json", "--max-count", "3").stdout)
    assert len(hits) == 4


def test_grep_seen_against_the_linked_preview(tmp_path: Path) -> None:
    demo = write_demo(tmp_path / "demo")
    proc = run("grep", "appendix line", str(demo.root), "--logs", str(demo.logs), "--json")
    assert proc.returncode == 0, proc.stderr
    hits = [h for h in jsonl(proc.stdout) if h["kind"] == "session-reference-transcript"]
    assert hits and all(h["session"] is not None for h in hits)
    # The oracle: the preview text in the log, read independently of the search.
    from spillscope.inspect.logs import read_logs

    previews = {}
    for log in read_logs(demo.logs):
        for ref in log.references:
            if ref.locator:
                previews[os.path.basename(ref.locator)] = ref.preview
    path = hits[0]["path"]
    preview = previews[os.path.basename(path)]
    texts = [m["text"] for m in preview["conversation"]]
    exact = read_transcript(path).messages
    checked = set()
    for h in hits:
        if h["path"] != path:
            continue
        text = exact[h["message"] - 1].text
        line_end = text.find("\n", h["end"])
        line = text[text.rfind("\n", 0, h["start"]) + 1 : line_end]
        if not line.startswith("界😀é appendix line") or line_end < 0:
            continue
        number = line.rsplit(" ", 1)[1]
        if any("\n" + line + "\n" in "\n" + t for t in texts):
            shown = True  # the whole line is in the preview
        elif not any(re.search(rf"appendix line {number}(?![0-9])", t) for t in texts):
            shown = False  # no part of it is
        else:
            continue  # cut by the preview's head/tail boundary
        assert h["seen"] is shown, (line, h)
        checked.add(shown)
    assert checked == {True, False}  # both kinds occur: the head/tail seen, the middle omitted
    # Tool outputs linked to their notice: the head and tail were seen.
    proc = run("grep", "line 0000: ok", str(demo.root), "--logs", str(demo.logs), "--json")
    tool = [h for h in jsonl(proc.stdout) if h["kind"] == "tool-output"]
    assert tool and tool[0]["seen"] is True
    proc = run("grep", "line 0400: ok", str(demo.root), "--logs", str(demo.logs), "--json")
    assert [h["seen"] for h in jsonl(proc.stdout)] == [False]
    # Without logs nothing is linked.
    assert {h["seen"] for h in jsonl(run("grep", "appendix line", str(demo.root), "--json").stdout)} == {None}


def _transcript_bytes(texts: list[str], rng: random.Random, irregular: bool) -> bytes:
    """A transcript of ``texts`` (user messages): as the writer renders it, or irregular."""
    if irregular:
        return _irregular_transcript(texts, rng)
    conv = [{"role": "user", "text": t} for t in texts]
    return js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": conv}, 3))


def _irregular_transcript(texts: list[str], rng: random.Random) -> bytes:
    """A transcript the parser accepts but the reference writer would not produce:
    short fragments, escapes spelled differently (\\u0041, \\/, escaped pairs)."""
    head = render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": []}, 3)
    out = [js_utf8(head)]
    for k, text in enumerate(texts, 1):
        out.append(f"\n### Message {k}: user\n\n".encode())
        cps = list(text)
        i = 0
        while i < len(cps):
            n = rng.randint(1, 64)
            frag = "".join(cps[i : i + n])
            i += n
            parts = []
            for c in frag:
                r = rng.random()
                if c.isascii() and c.isalpha() and r < 0.2:
                    parts.append(f"\\u{ord(c):04X}")  # uppercase hex, an escape JSON.stringify never writes
                elif c == "/" and r < 0.5:
                    parts.append("\\/")
                elif ord(c) > 0xFFFF and r < 0.5:
                    units = c.encode("utf-16-le")
                    parts.append("".join(f"\\u{int.from_bytes(units[i:i + 2], 'little'):04x}" for i in (0, 2)))
                else:
                    parts.append(js_json_string(c)[1:-1])
            out.append(js_utf8('"' + "".join(parts) + '"') + b"\n")
    return b"".join(out)


ALPHABET = st.sampled_from(TRICKY + list("abc xyz") + ["\u212a", "k", "K", "\u00e9", "\u00c9", "Z"])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(st.lists(ALPHABET, min_size=1, max_size=200).map("".join), min_size=1, max_size=3),
       seed=st.integers(0, 2**32), window=st.sampled_from([64, 300, 4 << 20]), irregular=st.booleans())
@pytest.mark.parametrize("scanners", SCANNERS)
def test_every_phrase_in_the_exact_text_is_found(tmp_path_factory: pytest.TempPathFactory, texts: list[str], seed: int,
                                                 window: int, irregular: bool, scanners: str) -> None:
    with using(scanners):
        _every_phrase_is_found(tmp_path_factory, texts, seed, window, irregular)


def _every_phrase_is_found(tmp_path_factory: pytest.TempPathFactory, texts: list[str], seed: int, window: int,
                           irregular: bool) -> None:
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("gen")
    path = tmp / "000000000001-session-reference-1.txt"
    path.write_bytes(_transcript_bytes(texts, rng, irregular))
    exact = [m.text for m in read_transcript(path).messages]
    old = T.WINDOW
    T.WINDOW = window
    try:
        for _ in range(4):
            k = rng.randrange(len(exact))
            text = exact[k]
            a = rng.randrange(len(text))
            needle = text[a : a + rng.randint(1, 40)]
            want = [(i + 1, s, e) for i, t in enumerate(exact) for s, e in brute(t, needle)]
            for pattern in (P.Pattern(needle), P.Pattern(re.escape(needle), regex=True)):
                got = [ev for ev in T.search_transcript(str(path), pattern) if isinstance(ev, R._Located)]
                assert [(ev.message, ev.hit.start, ev.hit.end) for ev in got] == want
                for ev in got:
                    t = exact[ev.message - 1]
                    assert ev.hit.byte_start == utf8_len(t[: ev.hit.start])
                    assert ev.hit.byte_end == utf8_len(t[: ev.hit.end])
    finally:
        T.WINDOW = old


@pytest.mark.parametrize("scanners", SCANNERS)
def test_reader_search_uses_the_file_and_agrees_with_the_text(tmp_path: Path, scanners: str) -> None:
    with using(scanners):
        _reader_search_agrees(tmp_path)


def _reader_search_agrees(tmp_path: Path) -> None:
    from spillscope.frontends.tui.document import TranscriptDocument

    text = ("needle" + "界😀\"\\\n" * 30) * 50
    root = write_root(tmp_path, [["x", text]])
    path = str(next(root.rglob("*.txt")))
    doc = TranscriptDocument(TranscriptIndex.build(path))
    hits, capped = D.find_hits(doc, 2, "needle", [(0, 100)])
    assert [(h.start, h.end) for h in hits] == brute(text, "needle") and not capped
    assert [h.seen for h in hits][:2] == [True, False]
    unlinked = D.find_hits(doc, 2, "re:needle\u754c", None)[0]
    assert len(unlinked) == 50 and {h.seen for h in unlinked} == {None}  # nothing linked: not known, never "omitted"
    with pytest.raises(P.PatternError, match="regex"):
        D.find_hits(doc, 2, "re:(", None)


def test_notebook_search_table(tmp_path: Path) -> None:
    import spillscope.frontends.notebook as nb

    demo = write_demo(tmp_path / "demo")
    insp = nb.open(demo.root, demo.logs)
    res = insp.search("line 0000: ok")
    records = res.to_records()
    assert len(res) == 1 and records[0]["seen"] is True and records[0]["kind"] == "tool-output"
    assert records[0]["match"] == "line 0000: ok"
    html = res._repr_html_()
    assert "<mark class='hit-seen'>line 0000: ok</mark>" in html
    hostile = insp.search("\x1b[31mRED", max_count=1)
    assert len(hostile) >= 1
    assert "\x1b" not in hostile._repr_html_() and "␛[31mRED" in hostile._repr_html_()
    assert "[[" in repr(hostile)


async def _wait(pilot: Any, predicate: Any, timeout: float = 10.0) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out")


async def _searched_in_tui(pilot: Any, app: Any, text: str) -> Any:
    """The search screen of ``app``, opened with ``s``, after a search for ``text`` is done."""
    from spillscope.frontends.tui.search import SearchScreen

    await _wait(pilot, lambda: app.verified)
    await pilot.press("s")
    await _wait(pilot, lambda: isinstance(app.screen, SearchScreen))
    screen = app.screen
    assert isinstance(screen, SearchScreen)
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")
    await _wait(pilot, lambda: "done" in str(screen.query_one("#search-status").render()))
    return screen


async def test_tui_root_search_streams_groups_and_opens_the_reader_at_the_hit(tmp_path: Path) -> None:
    from spillscope.frontends.tui.app import SpillscopeApp
    from spillscope.frontends.tui.screens import ReaderScreen
    from spillscope.frontends.tui.search import SearchScreen, SearchTree

    demo = write_demo(tmp_path / "demo")
    app = SpillscopeApp(str(demo.root), str(demo.logs), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await _searched_in_tui(pilot, app, "appendix line 2")
        tree = screen.query_one(SearchTree)
        sessions = list(tree.root.children)
        assert sessions and all(s.children for s in sessions)  # session → artifact → hits
        leaves = [leaf for s in sessions for a in s.children for leaf in a.children]
        seen = [leaf.data.hit.seen for leaf in leaves if leaf.data and leaf.data.hit]
        assert True in seen and False in seen
        # The styles of seen and omitted hits differ, as in the reader.
        assert tree.get_component_rich_style("search--seen") != tree.get_component_rich_style("search--omitted")
        target = next(leaf for leaf in leaves if leaf.data and leaf.data.hit and leaf.data.hit.seen is False)
        hit = target.data.hit
        tree.focus()
        tree.move_cursor(target)
        await pilot.press("enter")
        await _wait(pilot, lambda: isinstance(app.screen, ReaderScreen) and bool(app.screen.hits))
        reader = app.screen
        assert reader.message == hit.message
        assert [(h.start, h.end, h.seen) for h in reader.hits] == [(hit.start, hit.end, False)]
        assert reader.document.read(hit.message, hit.start, hit.end - hit.start) == hit.match
        # Bad regex: said on the status line, nothing crashes.
        await pilot.press("escape")
        await _wait(pilot, lambda: isinstance(app.screen, SearchScreen))
        screen.query_one("#search-input").value = "re:("
        screen.start("re:(")
        assert "invalid regex" in str(screen.query_one("#search-status").render())


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.lists(ALPHABET, min_size=1, max_size=300).map("".join), seed=st.integers(0, 2**32),
       window=st.sampled_from([16, 64, 4 << 20]))
def test_every_phrase_in_a_tool_output_is_found(tmp_path_factory: pytest.TempPathFactory, text: str, seed: int,
                                                window: int) -> None:
    rng = random.Random(seed)
    path = tmp_path_factory.mktemp("tool") / "000000000001-bash.txt"
    path.write_bytes(js_utf8(text))
    exact = js_utf8(text).decode()  # what the file holds: lone surrogates became U+FFFD
    old = TL.WINDOW
    TL.WINDOW = window
    try:
        for _ in range(4):
            a = rng.randrange(len(exact))
            needle = exact[a : a + rng.randint(1, 30)]
            for pattern in (P.Pattern(needle), P.Pattern(re.escape(needle), regex=True)):
                got = list(TL.search_tool_output(str(path), pattern))
                assert [(h.start, h.end) for h in got] == brute(exact, needle)
                assert all(h.byte_start == utf8_len(exact[: h.start]) for h in got)
                assert all(h.match == needle for h in got)
    finally:
        TL.WINDOW = old


def test_grep_on_the_upstream_fixtures_with_rebase() -> None:
    """Real artifacts and logs of the reference implementation: offsets against
    read_transcript, and a tool output's seen/omitted against the text the model got."""
    from conftest import UPSTREAM

    manifest = json.loads((UPSTREAM / "manifest.json").read_text())
    old_root = manifest["spillRoot"]["originalRoot"]
    root, logs = UPSTREAM / "spill-root", UPSTREAM / "sessions"
    proc = run("grep", "-E", r"line [0-9]{4}: ok", str(root), "--logs", str(logs), "--rebase", old_root, "--json")
    assert proc.returncode == 0, proc.stderr
    hits = jsonl(proc.stdout)
    tool = [h for h in hits if h["kind"] == "tool-output"]
    assert tool and {h["session"] for h in tool} != {None}
    checked = set()
    for path in {h["path"] for h in tool}:
        text = Path(path).read_bytes().decode()
        art = next(a for a in manifest["artifacts"] if path.endswith(a["path"]))
        case = next((c for c in manifest["toolCases"] if c["callId"] == art["source"].get("callId") and c["replaced"]), None)
        if case is None:
            assert {h["seen"] for h in tool if h["path"] == path} == {None}  # the orphan: no notice
            continue
        preview = case["finalText"][: case["finalText"].rindex("\n\n(Omitted")]
        for h in tool:
            if h["path"] == path:
                match = text[h["start"] : h["end"]]
                assert h["seen"] is (match in preview), match
                checked.add(h["seen"])
    assert checked == {True, False}
    # Transcripts: a phrase with a lone surrogate, by JSON pattern; offsets against the reader.
    proc = run("grep", "--json-pattern", '"\\ud800"', str(root), "--logs", str(logs), "--rebase", old_root, "--json")
    hits = jsonl(proc.stdout)
    assert hits and all(h["seen"] is not None for h in hits)
    texts = {p: [m.text for m in read_transcript(p).messages] for p in {h["path"] for h in hits}}
    for h in hits:
        assert texts[h["path"]][h["message"] - 1][h["start"] : h["end"]] == "\ud800"


def test_grep_in_a_transcript_cut_off_mid_write(tmp_path: Path) -> None:
    root = write_root(tmp_path, [["first needle here", "x" * 100 + "second needle " + "y" * 100]])
    path = next(root.rglob("*.txt"))
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"second needle") + 20])  # cut inside a fragment line
    proc = run("grep", "needle", str(root), "--json")
    assert proc.returncode == 0
    hits = jsonl(proc.stdout)
    exact = read_transcript(path)
    assert not exact.complete
    want = [(i + 1, s) for i, m in enumerate(exact.messages) for s, _ in brute(m.text, "needle")]
    assert [(h["message"], h["start"]) for h in hits] == want and (1, 6) in want
    assert b"incomplete-artifact" in proc.stderr


# Hits never overlap, and each scan resumes where the last hit ended: a run of the needle's
# own characters chains hits from the message start, whatever the windows, escapes or path.
CHAIN_TEXTS = ['"' * 40 + "\x00\\u0041" + '"' * 7, "a" * 97 + "b" + "a" * 31, '""' + "\\" * 50 + '"' * 33 + "😀",
               ("aa\n" * 20) + "a" * 45, "e\u0301" * 30 + '"' * 5]
CHAIN_PATTERNS = [P.Pattern('"""'), P.Pattern("aa"), P.Pattern("\\\\\\"), P.Pattern("e\u0301e"),
                  P.Pattern('"{2,3}', regex=True), P.Pattern("a+?a", regex=True), P.Pattern("\\Baa", regex=True),
                  P.Pattern("^aa", regex=True), P.Pattern("AA", ignore_case=True)]


def _finditer(text: str, pattern: P.Pattern) -> list[tuple[int, int]]:
    """The non-empty matches over the whole text: Python's re for a fixed string, RE2's own
    finditer for a regex (the library's, not the search's windows and offset mapping)."""
    if pattern.regex:
        return re2_spans(text, pattern.text, pattern.ignore_case)
    compiled = re.compile(re.escape(pattern.text), re.IGNORECASE if pattern.ignore_case else 0)
    return [(m.start(), m.end()) for m in compiled.finditer(text) if m.end() > m.start()]


@pytest.mark.parametrize("scanners", SCANNERS)
@pytest.mark.parametrize("seed", range(6))
def test_hit_chains_resume_where_the_last_hit_ended_on_every_path(tmp_path: Path, seed: int, scanners: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with using(scanners):
        _hit_chains(tmp_path, seed, monkeypatch)


def _hit_chains(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from spillscope.frontends.tui.document import PlainDocument, TranscriptDocument
    from spillscope.inspect.search import exact as X
    from spillscope.inspect.search import message as M

    rng = random.Random(seed)
    texts = rng.sample(CHAIN_TEXTS, 3)
    path = tmp_path / "000000000001-session-reference-1.txt"
    path.write_bytes(_transcript_bytes(texts, rng, irregular=seed % 2 == 1))
    exact = [m.text for m in read_transcript(path).messages]
    monkeypatch.setattr(T, "WINDOW", rng.choice([48, 64, 300]))
    monkeypatch.setattr(X, "EXACT_WINDOW", rng.choice([5, 17, 64]))
    monkeypatch.setattr(D, "DOCUMENT_CHUNK", rng.choice([3, 11, 50]))
    monkeypatch.setattr(TL, "WINDOW", rng.choice([16, 40]))
    # A short overlap puts window edges inside the runs (every pattern here matches at most 3).
    for module in (D, X, M):
        monkeypatch.setattr(module, "REGEX_OVERLAP", rng.choice([4, 9]))
    for pattern in CHAIN_PATTERNS:
        want = [(k, s, e) for k, t in enumerate(exact, 1) for s, e in _finditer(t, pattern)]
        fast = [(ev.message, ev.hit.start, ev.hit.end) for ev in T.search_transcript(str(path), pattern)
                if isinstance(ev, R._Located)]
        fallback = [(ev.message, ev.hit.start, ev.hit.end)
                    for ev in X._exact_transcript(str(path), pattern.compile(), {}, None, lambda: False, 1 << 20)
                    if isinstance(ev, R._Located)]
        assert fast == want, pattern
        assert fallback == want, pattern
        doc = TranscriptDocument(TranscriptIndex.build(str(path)))
        for k in range(1, len(exact) + 1):
            got = [(h.start, h.end) for h in D._document_hits(doc, k, pattern, lambda: False, 10_000)]
            assert got == _finditer(exact[k - 1], pattern), (pattern, k)
        for k, text in enumerate(texts):
            tool = tmp_path / f"{k + 100:012x}-bash.txt"
            tool.write_bytes(js_utf8(text))
            whole = js_utf8(text).decode()
            assert [(h.start, h.end) for h in TL.search_tool_output(str(tool), pattern)] == _finditer(whole, pattern)
            plain = PlainDocument(str(tool))
            got = [(h.start, h.end) for h in D._document_hits(plain, 1, pattern, lambda: False, 10_000)]
            assert got == _finditer(whole, pattern), pattern


@pytest.mark.parametrize("scanners", SCANNERS)
def test_a_transcript_of_many_short_messages_costs_its_own_bytes(tmp_path: Path, scanners: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Each message's first window is small (512 bytes) and grows: 2000 messages must not read 2000 MiB.
    texts = [f"message {i} has a needle" if i % 500 == 0 else f"message {i}" for i in range(2000)]
    root = write_root(tmp_path, [texts])
    path = str(next(root.rglob("*.txt")))
    read: list[int] = []
    pread, preadv = os.pread, os.preadv
    monkeypatch.setattr(os, "pread", lambda fd, n, at: read.append(n) or pread(fd, n, at))
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, at: read.append(sum(map(len, bufs))) or preadv(fd, bufs, at))
    with using(scanners):
        hits = [(ev.message, ev.hit.start) for ev in T.search_transcript(path, P.Pattern("needle"))
                if isinstance(ev, R._Located)]
    assert hits == [(1, 16), (501, 18), (1001, 19), (1501, 19)]
    assert sum(read) < 8 * os.path.getsize(path) + (1 << 20)


@pytest.mark.parametrize("scanners", SCANNERS)
@pytest.mark.parametrize("seed", range(8))
def test_every_hit_shows_the_context_the_exact_text_has_wherever_windows_end(
        tmp_path: Path, seed: int, scanners: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hit's context is the exact text around it (to the line's end, at most CONTEXT code
    points), not cut where a read window happened to start or end."""
    from spillscope.inspect.search.records import _hit

    rng = random.Random(seed)
    words = ["spill", "needle", "store", " ", " ", "界", "😀", '"', "\\", "\x01", "\ud800", "e\u0301"]
    texts = ["".join(rng.choice(words) for _ in range(rng.randint(200, 900))) for _ in range(3)]
    path = tmp_path / "000000000001-session-reference-1.txt"
    path.write_bytes(_transcript_bytes(texts, rng, irregular=seed % 2 == 1))
    exact = [m.text for m in read_transcript(path).messages]
    monkeypatch.setattr(T, "WINDOW", rng.choice([700, 1500, 4000]))
    monkeypatch.setattr(TL, "WINDOW", rng.choice([600, 1300]))

    def ideal(text: str, s: int, e: int) -> tuple[str, str]:
        h = _hit(s, e, 0, 0, text[:s], text[s:e], text[e:])
        return h.before, h.after

    with using(scanners):
        for pattern in (P.Pattern("needle"), P.Pattern("sto", regex=True), P.Pattern("SPILL", ignore_case=True)):
            got = [ev for ev in T.search_transcript(str(path), pattern) if isinstance(ev, R._Located)]
            assert len(got) == sum(len(_finditer(t, pattern)) for t in exact)
            for ev in got:
                assert (ev.hit.before, ev.hit.after) == ideal(exact[ev.message - 1], ev.hit.start, ev.hit.end)
            tool = tmp_path / "000000000100-bash.txt"
            tool.write_bytes(js_utf8(texts[0]))
            whole = js_utf8(texts[0]).decode()
            hits = list(TL.search_tool_output(str(tool), pattern))
            assert [(h.start, h.end) for h in hits] == _finditer(whole, pattern)
            for h in hits:
                assert (h.before, h.after) == ideal(whole, h.start, h.end)


def test_grep_writes_in_blocks_even_when_python_is_unbuffered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PYTHONUNBUFFERED=1 (or -u) makes stdout write-through: a grep of a common phrase
    made two system calls per hit. The CLI writes in blocks; the output is the same."""
    import io

    from spillscope.frontends.cli.main import main

    root = write_root(tmp_path, [["needle " * 3000]])

    class Counting(io.RawIOBase):
        def __init__(self) -> None:
            self.writes, self.data = 0, bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.writes += 1
            self.data += bytes(b)
            return len(b)

    raw = Counting()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # what -u gives
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["grep", "needle", str(root), "--json"]) == 0
    out.flush()
    lines = raw.data.decode().splitlines()
    assert len(lines) == 3000 and [json.loads(x)["start"] for x in lines[:3]] == [0, 7, 14]
    assert raw.writes < 3000 / 10


def test_only_i_k_and_s_match_beyond_ascii_when_case_is_ignored() -> None:
    """The case-insensitive prefilter trusts that an ASCII character matches only ASCII
    characters under re.IGNORECASE, but for i, k and s: checked over every code point."""
    from spillscope.inspect.search.required import _FOLDS_BEYOND_ASCII

    beyond = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    for c in map(chr, range(0x80)):
        if re.search(re.escape(c), beyond, re.IGNORECASE):
            assert c in _FOLDS_BEYOND_ASCII, repr(c)
        else:
            assert c not in _FOLDS_BEYOND_ASCII, repr(c)


@settings(max_examples=2000, deadline=None)
@given(hay=st.lists(st.sampled_from([b"a", b"A", b"b", b"B", b"@", b"`", b"[", b"{", b"z", b"Z", b"\x80", b"\xc3",
                                     b" ", b"Ab" * 20]), max_size=80).map(b"".join),
       needle=st.lists(st.sampled_from([b"a", b"b", b"@", b"`", b"[", b"{", b"z", b" ", b"\xc3"]), min_size=1,
                       max_size=6).map(b"".join), start=st.integers(0, 12))
def test_native_find_ci_is_lower_then_find(hay: bytes, needle: bytes, start: int) -> None:
    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    was = nat.simd()
    try:
        for flag in (1, 0):
            nat.simd(flag)
            assert nat.find_ci(hay, needle, start) == hay.lower().find(needle, start)
    finally:
        nat.simd(was)


CASE_WORDS = ["spill", "SPILL", "Spill", "ſpill", "\u212aelvin", "kelvin", "KELVIN", "\u0130stanbul", "ıstanbul",
              "istanbul", " ", "\n", '"', "\\", "\x01", "界", "😀", "\ud800", "e\u0301", "Store", "sTORE", "ß", "SS"]


@pytest.mark.parametrize("scanners", SCANNERS)
@pytest.mark.parametrize("seed", range(6))
def test_ignoring_case_finds_what_re_finds_wherever_windows_fall(tmp_path: Path, seed: int, scanners: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """-i: windows without the pattern's plain-ASCII part are skipped, never a hit (the
    Kelvin sign matches k, long s matches s, dotless and dotted I match i)."""
    rng = random.Random(seed)
    texts = ["".join(rng.choice(CASE_WORDS) for _ in range(rng.choice([30, 400, 3000]))) for _ in range(2)]
    root = write_root(tmp_path, [texts], [texts[0]])
    monkeypatch.setattr(T, "WINDOW", rng.choice([600, 1500, 4096]))
    monkeypatch.setattr(TL, "WINDOW", rng.choice([64, 600, 1300]))
    transcript = next(root.rglob("*-session-reference-1.txt"))
    tool = next(root.rglob("*-bash.txt"))
    exact = [m.text for m in read_transcript(transcript).messages]
    tool_text = tool.read_bytes().decode("utf-8", "replace")
    with using(scanners):
        for needle in ("spill store", "KELVIN", "Istanbul", "SPILL\n\"", "kiss", "e\u0301 ", "store\\"):
            pattern = P.Pattern(needle, ignore_case=True)
            compiled = re.compile(re.escape(needle), re.IGNORECASE)  # the oracle: Python's re, whole texts
            want = [(i + 1, m.start(), m.end()) for i, t in enumerate(exact) for m in compiled.finditer(t)]
            got = [(ev.message, ev.hit.start, ev.hit.end) for ev in T.search_transcript(str(transcript), pattern)
                   if isinstance(ev, R._Located)]
            assert got == want, needle
            want_tool = [(m.start(), m.end(), utf8_len(tool_text[: m.start()])) for m in compiled.finditer(tool_text)]
            got_tool = [(h.start, h.end, h.byte_start) for h in TL.search_tool_output(str(tool), pattern)]
            assert got_tool == want_tool, needle


def _lines_oracle(text: str, spans: list[tuple[int, int]], context: int) -> list[tuple[int, tuple[str, ...], tuple[str, ...]]]:
    from spillscope.inspect.search.lines import LINE_CUT

    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    cut = lambda line: line if len(line) <= LINE_CUT else line[:LINE_CUT] + "…"  # noqa: E731
    out = []
    for s, e in spans:
        first, last = text.count("\n", 0, s) + 1, text.count("\n", 0, e - 1) + 1
        out.append((first, tuple(map(cut, lines[max(0, first - 1 - context) : first - 1])),
                    tuple(map(cut, lines[last : last + context]))))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_line_numbers_and_context_whatever_the_pieces(seed: int) -> None:
    """grep -n/-C count lines in the decoded text fed in pieces of any size: a hit's start line,
    N lines before it and N after the line it ends on, long lines cut."""
    from spillscope.inspect.search.lines import text_lines

    rng = random.Random(seed)
    for _ in range(400):
        text = "".join(rng.choice(["a", "b", "\n", "界😀", "\n\n", "\r\n", "q" * rng.choice([1, 5, 500])])
                       for _ in range(rng.randrange(1, 60)))
        spans, p = [], 0
        while True:
            p += rng.randrange(0, 15)
            if p >= len(text):
                break
            e = min(len(text), p + rng.randrange(1, 8))
            spans.append((p, e))
            p = e
        context = rng.choice([0, 1, 2, 3])
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randrange(0, 6))))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        got = [(h.line, h.before, h.after) for h in text_lines(pieces, spans, context)]
        assert got == _lines_oracle(text, spans, context), (text, spans, context, pieces)


def test_grep_colour_is_inert_and_said_by_flag_and_NO_COLOR(tmp_path: Path) -> None:
    """--color always marks hits with SGR only; an escape sequence in the text stays visible
    (␛), never live; never/NO_COLOR write none; -n puts the line in the hit's line."""
    root = write_root(tmp_path, [["one\ntwo \x1b[31mred needle\x1b]0;title\x07 end"]], ["x\nneedle \x1b[2J"])
    proc = run("grep", "needle", str(root), "--color", "always", "-n")
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert "\x1b[1;33mneedle\x1b[0m" in out and "␛[31m" in out and "␛]0;title␇" in out and "␛[2J" in out
    assert "\x1b[31m" not in out and "\x1b]" not in out and "\x1b[2J" not in out
    assert "message 1 (user) line 2 cp" in out and "tool output line 2 cp" in out
    # On a terminal (a pty): colour by default, none with NO_COLOR or --color never.
    for args, env, coloured in (([], {}, True), (["--color", "never"], {}, False), ([], {"NO_COLOR": "1"}, False)):
        got = _on_a_terminal([sys.executable, "-m", "spillscope", "grep", "needle", str(root), *args], env)
        assert (b"\x1b[1;33mneedle" in got) == coloured and (b"[[needle]]" in got) != coloured, (args, env, got)
        assert b"\x1b[2J" not in got and "␛[2J".encode() in got
    assert run("grep", "absent", str(root), "-c").returncode == 1
    assert run("grep", "needle", str(root), "-l", "-c").returncode == 2


def _on_a_terminal(argv: list[str], env: dict[str, str]) -> bytes:
    """What a command writes to a terminal (a pty as its stdout)."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdout=slave, stderr=subprocess.DEVNULL, env={**os.environ, **env})
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break  # the child closed the terminal
            if not chunk:
                break
            chunks.append(chunk)
        proc.wait(60)
        return b"".join(chunks)
    finally:
        os.close(master)


@pytest.mark.parametrize("scanners", SCANNERS)
def test_the_byte_prefilter_never_rules_out_a_file_that_holds_a_match(tmp_path: Path, scanners: str) -> None:
    """Every placement of a needle across a fragment line's edge (each split point, escapes,
    astral characters, -i), in a transcript and a tool output: the prefilter lets the file
    through and the search finds it; a file without it is ruled out unread by the search."""
    from spillscope.inspect.search.prefilter import may_match

    rng = random.Random(7)
    needles = ['a"b\\c\td界😀' + "x" * 20, "needle", "N", 'q"' * 32 + "!", "Kelvin spill"]
    with using(scanners):
        for needle in needles:
            for pattern in (P.Pattern(needle), P.Pattern(needle.upper(), ignore_case=True)):
                for cut in range(0, 64, 5):
                    text = "y" * (64 - cut) + needle + "z" * rng.randrange(0, 90)
                    root = write_root(tmp_path / f"{len(needle)}-{cut}-{pattern.ignore_case}", [[text, "other"]], [text])
                    for path in root.rglob("*.txt"):
                        transcript = "reference" in path.name
                        assert may_match(str(path), transcript, pattern), (needle, cut, path.name)
                        hits = (list(T.search_transcript(str(path), pattern)) if transcript
                                else list(TL.search_tool_output(str(path), pattern)))
                        assert hits, (needle, cut)
            absent = write_root(tmp_path / f"absent-{len(needle)}", [["nothing to see " * 40]], ["plain text " * 40])
            for path in absent.rglob("*.txt"):
                if needle.encode() not in path.read_bytes() and len(needle) > 1:  # "N" is in a title
                    assert not may_match(str(path), "reference" in path.name, P.Pattern(needle))


@pytest.mark.parametrize("scanners", SCANNERS)
def test_the_prefilter_finds_a_needle_over_lines_of_any_length(tmp_path: Path, scanners: str) -> None:
    """Fragment lines shorter than the writer's 64 code points (a hand-made transcript): a
    needle crossing many of them still passes the prefilter and is found."""
    from spillscope.inspect.search.prefilter import may_match
    from spillscope.util.text import code_point_slices

    head = render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": []}, 3)
    text = "before " + 'a "quoted" needle界😀 that crosses' + " after"
    for width in (1, 2, 3, 7):
        lines = "".join(js_json_string(s) + "\n" for s in code_point_slices(text, width))
        path = tmp_path / f"{width:012x}-session-reference-1.txt"
        path.write_bytes(js_utf8(head + "\n### Message 1: user\n\n" + lines))
        with using(scanners):
            for pattern in (P.Pattern('"quoted" needle界😀 that'), P.Pattern("QUOTED", ignore_case=True)):
                assert may_match(str(path), True, pattern), (width, pattern)
                assert [ev for ev in T.search_transcript(str(path), pattern) if isinstance(ev, R._Located)], width


def test_the_batched_native_prefilter_rules_each_file_as_the_python_one_does(tmp_path: Path) -> None:
    """``may_match_many`` (one native call over many files, on threads) gives, file by file,
    what ``may_match`` gives: over transcripts and tool outputs holding the needle, not
    holding it, holding it only across a fragment edge, with a ``\\u``/``\\/`` escape, cut off
    mid-line, empty, invalid UTF-8, overlapping ``"\\n"`` runs; and a symlink, a directory and
    a vanished path (never ruled out: the search says why). Needles: plain, ``-i``, with a
    quote, a newline, U+FFFD, a lone surrogate, a control that escapes as ``\\u``."""
    from spillscope.inspect.search.prefilter import may_match, may_match_many

    if native.NATIVE is None:
        pytest.skip("the C accelerator is not built")
    rng = random.Random(26)
    needles = ["needle", 'q"uote', "line\nbreak", "ab\ufffdcd", "x\ud800y", "bell\x07", "Kelvin", "界😀"]
    texts = ["", "plain words only", 'a"\n"b', '"\n"\n"', "needle", "NEEDLE", 'q"uote', "line\nbreak",
             "ab\ufffdcd", "bell\x07", "Kelvin", "界😀", "\\u0041", "a/b"]
    root = tmp_path / "root" / "session-0123456789ab"
    root.mkdir(parents=True)
    paths: list[Path] = []
    for i in range(240):
        body = "".join(rng.choice(texts) + rng.choice(["", " ", "y" * rng.randrange(1, 90)]) for _ in range(6))
        if i % 2:
            conv = [{"role": "user", "text": body}, {"role": "assistant", "text": rng.choice(texts)}]
            data = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                              "conversation": conv}, 3))
            if i % 7 == 1:
                data = data[: rng.randrange(1, len(data))]  # cut off mid-write
            if i % 11 == 3:
                data = data.replace(b'"\n"', b'"\n"\n"', 1)
            path = root / f"{i:012x}-session-reference-1.txt"
        else:
            data = body.encode("utf-8", "surrogatepass")
            if i % 10 == 4:
                data += b"\xff\xfe needle"
            path = root / f"{i:012x}-bash.txt"
        path.write_bytes(data)
        paths.append(path)
    (root / "000000000990-bash.txt").symlink_to(paths[0])
    (root / "000000000991-bash.txt").mkdir()
    paths += [root / "000000000990-bash.txt", root / "000000000991-bash.txt", root / "000000000992-bash.txt"]
    kinds = ["reference" in p.name for p in paths]
    for needle in needles:
        for pattern in (P.Pattern(needle), P.Pattern(needle.upper(), ignore_case=True)):
            pattern.compile()
            want = [may_match(str(p), k, pattern) for p, k in zip(paths, kinds)]
            assert may_match_many([str(p) for p in paths], kinds, pattern) == want, (needle, pattern.ignore_case)
            assert pattern.ignore_case or not all(want) or needle == "ab\ufffdcd", needle  # some are ruled out


# A regex's required literal rules windows (and files) out unread; the windows it keeps must
# still see the text before them: ^, $, \b, \B and \A look at it, and a hit shows it.
LITERAL_PATTERNS = [r"^needle", r"\bneedle\b", r"needle$", r"(?m)^needle", r"(?m)needle$", r"\Bneedle",
                    r"needle\w*", r"\Aneedle", r"[a-z]+ needle", "e\u0301needle", r"(?i)NEEDLE", r"(ne)+edle",
                    r"\d*needle\z", r'"needle"', r"\\needle"]


@pytest.mark.parametrize("scanners", SCANNERS)
@pytest.mark.parametrize("seed", range(6))
def test_a_regex_with_a_required_literal_finds_what_re2_finds_over_the_whole_text(
        tmp_path: Path, seed: int, scanners: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from spillscope.inspect.search import message as M
    from spillscope.inspect.search.prefilter import may_match
    from spillscope.inspect.search.records import CONTEXT, _hit

    rng = random.Random(seed)
    filler = ["spill ", "store ", "界", "😀", " ", "\n", '"', "\\", "e\u0301", "x", "7"]
    lead = ["", "\n", " ", "x", "e\u0301", '"', "\\", "7"]
    texts = []
    for _ in range(3):
        parts = [rng.choice(lead) + "needle" if rng.random() < 0.5 else ""]
        for _ in range(rng.randint(2, 5)):
            parts.append("".join(rng.choice(filler) for _ in range(rng.randint(30, 400))))
            parts.append(rng.choice(lead) + "needle" + rng.choice(["", "s", " ", "\n", '"', "7"]))
        texts.append("".join(parts))
    path = tmp_path / "000000000001-session-reference-1.txt"
    path.write_bytes(_transcript_bytes(texts, rng, irregular=seed % 3 == 2))
    exact = [m.text for m in read_transcript(path).messages]
    monkeypatch.setattr(T, "WINDOW", rng.choice([48, 64, 300]))
    monkeypatch.setattr(TL, "WINDOW", rng.choice([16, 40, 300]))
    # A short overlap puts window edges near the hits; a hit's context is whole from CONTEXT on.
    overlap = rng.choice([4, 9, CONTEXT + 1])
    monkeypatch.setattr(M, "REGEX_OVERLAP", overlap)
    for text in LITERAL_PATTERNS:
        pattern = P.Pattern(text, regex=True)
        assert pattern.required is not None, text  # each of them has one: the path under test runs
        want = [(k, s, e) for k, t in enumerate(exact, 1) for s, e in _finditer(t, pattern)]
        got = [ev for ev in T.search_transcript(str(path), pattern) if isinstance(ev, R._Located)]
        assert [(ev.message, ev.hit.start, ev.hit.end) for ev in got] == want, text
        for ev in got:
            t = exact[ev.message - 1]
            h = _hit(ev.hit.start, ev.hit.end, 0, 0, t[: ev.hit.start], t[ev.hit.start : ev.hit.end], t[ev.hit.end :])
            assert ev.hit.match == h.match and (overlap < CONTEXT or (ev.hit.before, ev.hit.after) == (h.before, h.after)), text
        assert may_match(str(path), True, pattern) or not want, text
        for k, t in enumerate(texts):
            tool = tmp_path / f"{k + 100:012x}-bash.txt"
            tool.write_bytes(js_utf8(t))
            whole = js_utf8(t).decode()
            hits = list(TL.search_tool_output(str(tool), pattern))
            assert [(h.start, h.end) for h in hits] == _finditer(whole, pattern), text
            assert may_match(str(tool), False, pattern) or not hits, text


LITERAL_SOURCES = [r"ERROR\] timeout \w+ failed", r"a(bc)+d", r"(?i:abc)def", r"x(?:yz){2,}w", r"(ab|cd)ef",
                   r"foo\.bar\d?baz", r"(?i)KELVIN spills", r"[ab]cd[ef]gh", r"a{,3}bcd", r"\$\{HOME\}",
                   r"(?s)start.*end", r"q(?:r(?:st)u)v", r"((ab)*)cd", r"ab\bcd|ef"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), pat=st.sampled_from(LITERAL_SOURCES), icase=st.booleans())
def test_a_regex_literal_is_one_every_match_holds(data: st.DataObject, pat: str, icase: bool) -> None:
    """The literal drawn from a regex is in every match RE2 finds (ignoring ASCII case where
    it says so), over strings made to match it, with noise around them."""
    from spillscope.inspect.search.required import required_literal

    got = required_literal(pat, icase)
    if got is None:
        return
    lit, folded = got
    assert lit
    matching = st.from_regex(re.compile(pat, re.IGNORECASE if icase else 0), fullmatch=True)
    sample = data.draw(st.text(max_size=5)) + data.draw(matching) + data.draw(st.text(max_size=5))
    for s, e in re2_spans(sample, pat, icase):
        m = sample[s:e]
        assert lit in m.lower() if folded else lit in m, (pat, icase, lit, m)


def test_syntax_read_otherwise_than_re2_gives_no_literal() -> None:
    from spillscope.inspect.search.required import required_literal

    assert required_literal(r"x[[:alpha:]]y", False) is None
    assert required_literal(r"\pLneedle", False) is None
    assert required_literal(r"ab|cd", False) is None
    assert required_literal(r"(?i)kiss", False) is None  # k, i and s fold to non-ASCII letters


def test_the_native_prefilter_joins_fragment_lines_of_any_length_exactly(tmp_path: Path, simd: int) -> None:
    """The prefilter's join of a transcript's fragment lines (64 bytes at a time, AVX2 or
    SSE2) rules a file out only where the Python twin does, and never a file whose joined
    text holds the needle: lines of 1-150 characters put the '"\\n"' joins at every offset
    of a block (several in one, one at its edges, runs of them), escapes near the edges."""
    from spillscope.inspect.search.prefilter import may_match, may_match_many

    rng = random.Random(simd)
    needle = "quartz handover"
    root = tmp_path / "session-0123456789ab"
    root.mkdir()
    paths, holds = [], []
    for i in range(300):
        words = [rng.choice(["ab", "quartz", "handover", " ", "x" * rng.randrange(1, 70), "\n", "é", '"']) for _ in range(60)]
        if i % 3 == 0:
            words.insert(rng.randrange(len(words)), needle)
        if i % 17 == 5:
            words.insert(rng.randrange(len(words)), rng.choice(["\x07", "/"]))  # escapes as \u0007: never ruled out
        text = "".join(words)
        lines, at = [], 0
        while at < len(text):
            n = rng.choice([1, 2, 3, rng.randrange(1, 150), 64, 63, 61])
            lines.append(js_json_string(text[at : at + n]).replace("/", "\\/") + "\n")
            at += n
        if i % 5 == 2:  # a line of one quote, twice: the joins run into each other
            lines.insert(rng.randrange(len(lines)), '"\n"\n')
        path = root / f"{i:012x}-session-reference-1.txt"
        path.write_bytes(("".join(lines)).encode())
        paths.append(str(path))
        holds.append(needle in text and i % 5 != 2)
    pattern = P.Pattern(needle)
    pattern.compile()
    got = may_match_many(paths, [True] * len(paths), pattern)
    assert got == [may_match(p, True, pattern) for p in paths]
    assert all(g for g, h in zip(got, holds) if h)  # never a file that holds it
    assert not all(got)  # and some are ruled out


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(st.lists(ALPHABET, min_size=0, max_size=400).map("".join), min_size=1, max_size=3),
       seed=st.integers(0, 2**32), irregular=st.booleans())
def test_a_text_searched_whole_gives_the_window_search_s_hits_and_context(
        tmp_path_factory: pytest.TempPathFactory, texts: list[str], seed: int, irregular: bool) -> None:
    """Every hit the whole-text search (inspect/search/whole.py) gives, with its offsets and
    its context each side, is the window search's and the pure-Python one's: transcripts with
    every escape spelling and tool outputs (valid UTF-8 or not), fixed strings and regexes."""
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("whole")
    transcript = tmp / "000000000001-session-reference-1.txt"
    transcript.write_bytes(_transcript_bytes([t or "x" for t in texts], rng, irregular))
    tool = tmp / "000000000002-bash.txt"
    raw = texts[0].encode("utf-8", "surrogatepass")
    tool.write_bytes(raw if rng.random() < 0.7 else raw[: rng.randrange(len(raw) + 1)] + b"\xff" + raw)
    text = texts[0] or "x"
    a = rng.randrange(len(text))
    sub = text[a : a + rng.randint(1, 6)]
    patterns = [P.Pattern(sub), P.Pattern(re.escape(sub), regex=True), P.Pattern(r"\w+", regex=True),
                P.Pattern(r"(?m)^.", regex=True), P.Pattern(r"\s\S", regex=True), P.Pattern("x", regex=True),
                P.Pattern(sub.upper(), ignore_case=True), P.Pattern("X", ignore_case=True),
                P.Pattern("\u212a" + sub.swapcase() + "Z", ignore_case=True), P.Pattern("A\u00e9b", ignore_case=True)]

    def run(scanners: str, pattern: P.Pattern) -> list[Any]:
        with using(scanners):
            return ([ev for ev in T.search_transcript(str(transcript), pattern)]
                    + list(TL.search_tool_output(str(tool), pattern)))

    for pattern in patterns:
        try:
            pattern.compile()
        except P.PatternError:
            continue
        want = run("python", pattern)
        assert run("native", pattern) == want, pattern
        assert run("native-windowed", pattern) == want, pattern


def test_the_native_prefilter_read_a_chunk_at_a_time_gives_the_whole_file_s_verdict(tmp_path: Path, simd: int) -> None:
    """A file bigger than a chunk is checked a chunk at a time (a transcript's chunks cut just
    after a join, a tool output's overlapping by the needle): for chunks of 64 bytes up to
    more than the file, the verdict is the whole file's, and a file whose text holds the
    needle (across a chunk's edge, a join, both) is never ruled out."""
    if native.NATIVE is None:
        pytest.skip("the C accelerator is not built")
    nat = native.NATIVE
    rng = random.Random(40 + simd)
    needle = "quartz handover"
    paths: list[bytes] = []
    kinds = bytearray()
    holds = []
    for i in range(120):
        words = [rng.choice(["ab", "quartz", "handover", " ", "x" * rng.randrange(1, 90), "é", '"', "\n"])
                 for _ in range(rng.randrange(5, 400))]
        if i % 2 == 0:
            words.insert(rng.randrange(len(words)), needle)
        if i % 13 == 7:
            words.insert(rng.randrange(len(words)), "\x07")  # \u0007 in a transcript: never ruled out
        text = "".join(words)
        if i % 3 == 0:
            path = tmp_path / f"{i:012x}-bash.txt"
            path.write_bytes(text.encode())
            kinds.append(0)
        else:
            lines, at = [], 0
            while at < len(text):
                n = rng.choice([1, 2, 64, 63, rng.randrange(1, 200)])
                lines.append(js_json_string(text[at : at + n]) + "\n")
                at += n
            path = tmp_path / f"{i:012x}-session-reference-1.txt"
            path.write_bytes("".join(lines).encode() if i % 11 else "".join(lines).encode()[:-1])  # one cut off
            kinds.append(1)
        paths.append(os.fsencode(path))
        holds.append(needle in text)
    nb = needle.encode()
    for folded, plain in ((False, nb), (True, nb.lower())):
        whole = nat.prefilter(paths, bytes(kinds), plain, plain, folded, 1 << 62, 2, 1 << 30)
        assert all(v == 1 for v, h in zip(whole, holds) if h)
        assert 0 in whole
        for chunk in (64, 65, 100, 257, 1000, 4096):
            got = nat.prefilter(paths, bytes(kinds), plain, plain, folded, 1 << 62, 2, chunk)
            # A line longer than a chunk is not checked (1); everything else is the whole file's verdict.
            assert all(g == w or (g == 1 and w == 0 and chunk < 400) for g, w in zip(got, whole)), chunk
            assert all(g == 1 for g, h in zip(got, holds) if h), chunk
            if chunk >= 400:
                assert got == whole, chunk


def test_native_deframing_of_long_fragment_lines_equals_the_python_one(simd: int) -> None:
    """Deframing joins 64 bytes at a time while every newline is a join: over fragment lines of
    every length (joins at every offset of a block, several in one), runs of '"\\n"', a stray
    newline or an unframed line anywhere (then None, or the window's exact text), it gives
    the Python twin's result."""
    from spillscope.inspect.search import escapes as E

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    nat = native.NATIVE
    rng = random.Random(7 + simd)
    for case in range(400):
        lines = []
        for _ in range(rng.randrange(1, 60)):
            frag = "".join(rng.choice(["a", "é", '"', "\\", "\n", "x" * rng.randrange(1, 70), "😀"])
                           for _ in range(rng.randrange(0, 6)))
            lines.append(js_json_string(frag).encode() + b"\n")
        data = b"".join(lines)
        k = rng.randrange(len(data))
        if case % 4 == 1:
            data = data[:k] + b"\n" + data[k:]  # a stray newline
        elif case % 4 == 2:
            data = data[:k] + b'"\n"' + data[k:]  # a join's bytes where none belongs
        elif case % 4 == 3:
            data = data.replace(b'"\n"', b'"\n"\n"', 1)
        with using("native"):
            got = nat.deframe(data)
        with using("python"):
            try:
                want: bytes | None = E.deframe(data)
            except ValueError:
                want = None
        assert got == want, (case, data[:200])


@settings(max_examples=1500, deadline=None)
@given(text=st.lists(ALPHABET, max_size=200).map("".join), upper=st.booleans())
def test_native_message_text_gives_the_decoder_s_text_or_declines(text: str, upper: bool) -> None:
    """native.message_text (the whole-text search's decoder) gives exactly the UTF-8 of what
    the Python decoder gives for a fragment line, or -1 where it declines (a surrogate
    escape, a raw control or quote, invalid UTF-8, an escape JSON does not have): it never
    gives other text."""
    from spillscope.inspect.search.escapes import decode_escaped

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    body = js_json_string(text)[1:-1]
    if upper:
        body = body.upper()  # uppercase hex digits (and escapes JSON does not have: declined)
    raw = body.encode("utf-8", "surrogatepass")
    out = bytearray(len(raw) + 64)

    def text_of(b: bytes) -> bytes | None:
        line = b'"' + b + b'"\n'
        n, cps = native.NATIVE.message_text(line, 0, len(line), out)  # type: ignore[union-attr]
        assert n < 0 or cps == len(bytes(out[:n]).decode())
        return None if n < 0 else bytes(out[:n])

    got = text_of(raw)
    if got is not None:
        assert got == decode_escaped(raw).encode("utf-8")
    for bad in (b"\x01", b"\xff", b"\\ud800", b"\\q", b'"', b"\x1f"):
        assert text_of(raw + bad) is None, bad
        assert text_of(bad + raw) is None, bad


def test_native_message_text_is_the_exact_text_of_fragment_lines(simd: int) -> None:
    """native.message_text (joined and unescaped into a reused buffer) gives the UTF-8 of the
    exact text of fragment lines of every length, escapes side by side and at 16-byte
    edges, or -1 where the Python path would decode otherwise."""
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    nat = native.NATIVE
    rng = random.Random(11 + simd)
    out = bytearray(1 << 16)
    for _ in range(3000):
        text = "".join(rng.choice(["a", "b", '"', "\n", "\\", "é", "😀", "\t", "x" * rng.randrange(1, 40)])
                       for _ in range(rng.randrange(1, 40)))
        step = rng.choice([1, 3, 7, 16, 64])
        lines = b"".join(js_json_string(text[i : i + step]).encode() + b"\n" for i in range(0, len(text), step))
        pad = b"junk" * rng.randrange(3)
        data = pad + lines + pad
        n, cps = nat.message_text(data, len(pad), len(pad) + len(lines), out)
        assert n >= 0 and bytes(out[:n]) == text.encode() and cps == len(text), (text, lines)
    assert nat.message_text(b'"a\\ud800"\n', 0, 11, out) == (-1, 0)
    assert nat.message_text(b'"a\x01"\n', 0, 6, out) == (-1, 0)
    with pytest.raises(ValueError):
        nat.message_text(b'"a"\n', 0, 4, bytearray(3))  # too small
    same = bytearray(b'"a"\n')
    with pytest.raises(ValueError):
        nat.message_text(same, 0, 4, same)  # the text written over the lines it is read from


@pytest.fixture(params=["sse2", "avx2", "avx512"])
def kernel(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The accelerator with its vector loops cut down to SSE2, to AVX2, or all on (AVX-512 with
    VBMI2 where the CPU has it)."""
    nat = native.NATIVE
    if nat is None:
        pytest.skip("the C accelerator is not built")
    simd, avx512 = nat.simd(), nat.avx512()
    want = request.param
    if want != "sse2" and not nat.simd(True):
        pytest.skip("no AVX2 here")
    nat.simd(want != "sse2")
    if want == "avx512" and not nat.avx512(True):
        nat.simd(simd)
        pytest.skip("no AVX-512BW here")
    if want == "avx2":
        nat.avx512(False)
    yield nat
    nat.simd(simd)
    nat.avx512(avx512)


def _lines_text(lines: bytes) -> bytes | None:
    """The UTF-8 of the text of fragment lines as the exact parser reads them (each line one
    JSON string, strict), or None where a line is not one (or the text is no valid UTF-8)."""
    out = []
    for line in lines.split(b"\n")[:-1]:
        try:
            got = json.loads(line.decode("utf-8"), strict=True)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(got, str) or line[:1] != b'"' or line[-1:] != b'"':
            return None
        out.append(got)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        return None  # a lone surrogate: the Python decoder's to say


@pytest.mark.parametrize("seed", range(3))
def test_native_message_text_is_the_parser_s_text_or_declines_at_every_offset(kernel: Any, seed: int) -> None:
    """native.message_text (a message's lines joined and unescaped in one pass: 64 bytes a step
    with AVX-512 VBMI2, 32 with AVX2, else deframe then unescape) gives the parser's exact
    text or declines (-1): never other text. Lines of every length with escapes, joins and
    astral characters at every vector edge, and then one fault planted at each offset: a raw
    quote, control or newline, a '\"' before a line's newline, a line of a lone quote, a \\u
    (plain, upper hex, a surrogate), an escape JSON has not, invalid UTF-8, a character split over
    two lines (each line invalid, whole once joined), whitespace about a newline. A message
    without faults is never declined."""
    rng = random.Random(seed)
    out = bytearray(1 << 17)
    atoms = ["a", "xyz", '"', "\\", "\n", "\t", "\r", "\b", "\f", "/", "é", "界", "😀", "\u2028", "\x7f", "u",
             "n", "q" * 61, "b" * 130]
    faults = [b'"', b"\x01", b"\n", b'\\"\n"', b'"\n"\n"', b"\\u0041", b"\\u00E9", b"\\ud83d\\ude00", b"\\ud800",
              b"\\q", b"\\", b"\xff", b"\xc3", b' \n', b'"\r\n"', b'"\n "', b"\\/", b"\\\\",
              b'\xc3"\n"\xa9', b'\xf0\x9f"\n"\x98\x80', b'\xe7"\n"\x95\x8c']
    declined = 0
    for case in range(60):
        text = "".join(rng.choice(atoms) for _ in range(rng.randrange(1, 60)))
        step = rng.choice([1, 2, 5, 31, 32, 33, 63, 64, 65, 200])
        lines = b"".join(js_json_string(text[i : i + step]).encode() + b"\n" for i in range(0, len(text), step))
        pad = b"#" * rng.randrange(3)
        got = nat_text(kernel, pad + lines + pad, len(pad), len(pad) + len(lines), out)
        assert got == text.encode("utf-8"), (step, text)
        # each offset of the first 140 bytes (two 64-byte blocks and the edges about them), and
        # some after: O(lines) each, the oracle decoding every line
        offsets = list(range(1, min(len(lines) - 1, 140))) + rng.sample(range(1, len(lines) - 1),
                                                                         min(40, len(lines) - 2))
        for at in offsets:
            bad = lines[:at] + rng.choice(faults) + lines[at:]
            if not (bad[:1] == b'"' and bad[-2:] == b'"\n'):
                continue
            got = nat_text(kernel, bad, 0, len(bad), out)
            want = _lines_text(bad)
            declined += got is None
            assert got is None or got == want, (bad, got, want)
    assert declined > 100  # the faults are seen


def test_native_message_text_counts_a_text_whose_u_escapes_or_bad_bytes_end_it(kernel: Any) -> None:
    """message_text's code points (counted from the raw lines on the way with AVX-512, else from
    the text) are the text's where a \\u escape, a character cut short or an invalid byte
    sits at any offset of the last 200 bytes: where the 64-byte loop hands over to the
    one after it, and across its last step (each length of the lines mod 64)."""
    out = bytearray(1 << 14)
    for extra in range(0, 64, 7):
        text = ("ab界😀\n" * 40)[: 150 + extra]
        lines = b"".join(js_json_string(text[i : i + 64]).encode() + b"\n" for i in range(0, len(text), 64))
        assert nat_text(kernel, lines, 0, len(lines), out) == text.encode()
        for at in range(max(1, len(lines) - 200), len(lines) - 2):
            for planted in (b"\\u00e9", b"\\u0041", b"\\ud83d\\ude00", b"\xe7\x95", b"\xff", b"\\\\u"):
                bad = lines[:at] + planted + lines[at:]
                got, want = nat_text(kernel, bad, 0, len(bad), out), _lines_text(bad)
                assert got is None or got == want, (bad, got, want)


def nat_text(nat: Any, data: bytes, start: int, end: int, out: bytearray) -> bytes | None:
    n, cps = nat.message_text(data, start, end, out)
    assert n < 0 or cps == len(bytes(out[:n]).decode("utf-8"))
    return None if n < 0 else bytes(out[:n])


def test_the_native_prefilter_joins_a_line_edge_at_the_end_of_its_vector_loop(tmp_path: Path, simd: int) -> None:
    """A join whose newline is the first byte after the 64-byte loop (in the last 130-193
    bytes of a file or chunk) is made: a needle across it is never ruled out (every file
    length and split near there, whole files and 64-byte-aligned chunks)."""
    nat = native.NATIVE
    assert nat is not None
    paths, kinds = [], bytearray()
    for k in range(0, 200):
        for first in (60, 61, 62, 63, 64, 65, 127, 128, 129):
            data = b'"' + b"a" * first + b'x"\n"y' + b"b" * k + b'"\n'
            path = tmp_path / f"{len(paths):012x}-session-reference-1.txt"
            path.write_bytes(data)
            paths.append(os.fsencode(path))
            kinds.append(1)
    for chunk in (1 << 30, 256, 193):
        got = nat.prefilter(paths, bytes(kinds), b"xy", b"xy", False, 1 << 62, 2, chunk)
        assert set(got) == {1}, (chunk, [i for i, v in enumerate(got) if v != 1][:5])


def test_a_raw_quote_in_a_message_is_malformed_on_every_path(tmp_path: Path) -> None:
    """A fragment line with an unescaped quote is not JSON: the whole-text search declines it
    and the search reports the transcript as malformed, as the window and Python paths do."""
    path = tmp_path / "000000000001-session-reference-1.txt"
    text = render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                              "conversation": [{"role": "user", "text": 'say "quartz" now'},
                                               {"role": "assistant", "text": "quartz again"}]}, 3)
    path.write_bytes(js_utf8(text).replace(b'\\"', b'"'))
    results = {}
    for which in SCANNERS:
        with using(which):
            results[which] = [(type(ev).__name__, getattr(ev, "code", None)) for ev in
                              T.search_transcript(str(path), P.Pattern("quartz"))]
    assert results["native"] == results["python"] == results["native-windowed"]
    assert ("Finding", "malformed-artifact") in results["python"]


def test_hit_runs_stop_at_the_limit_and_are_cut_at_the_run_size() -> None:
    from spillscope.inspect.search import whole

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    spans = whole.byte_spans(P.Pattern("a"), P.Pattern("a").compile())
    assert spans is not None
    assert list(whole.hit_runs(b"aaa", spans, 0)) == []
    assert [len(run) for run in whole.hit_runs(b"aaa", spans, 2)] == [2]
    assert [len(run) for run in whole.hit_runs(b"aaaaa", spans, None, run_size=2)] == [2, 2, 1]


@pytest.mark.parametrize("run_size", [1, 3, 1024])
@pytest.mark.parametrize("regex", [False, True])
def test_hit_runs_over_ascii_without_context_are_the_hit_by_hit_ones(run_size: int, regex: bool) -> None:
    """Over ASCII text, spans only and no limit (grep --json's dense case), hit_runs takes a run of
    spans at a time: the same hits in the same runs as hit by hit (a limit past the end makes it
    go hit by hit), and a cancelled search stops after the run it is in."""
    from spillscope.inspect.search import whole

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    rng = random.Random(run_size)
    data = "".join(rng.choice(["ab", "a\n", "\r\n", " ", "b", "\x00", "\x7f"]) for _ in range(3000)).encode()
    pattern = P.Pattern("a+b?" if regex else "ab", regex=regex)
    spans = whole.byte_spans(pattern, pattern.compile())
    assert spans is not None
    counts = (len(data), len(data))
    fast = list(whole.hit_runs(data, spans, None, context=False, counts=counts, run_size=run_size))
    slow = list(whole.hit_runs(data, spans, 10**9, context=False, counts=counts, run_size=run_size))
    assert fast == slow and sum(map(len, fast)) > 100
    assert [len(run) for run in fast][:-1] == [run_size] * (len(fast) - 1)
    asked: list[int] = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) >= 2

    assert list(whole.hit_runs(data, spans, None, cancelled, context=False, counts=counts, run_size=run_size)) == fast[:2]


@pytest.mark.parametrize("ahead_hits", [1, 3, 4096])
def test_big_artifacts_searched_ahead_give_the_serial_search_s_hits(tmp_path: Path, ahead_hits: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Artifacts searched ahead on threads (every one, here) give the same hits in the same
    order as one after another, however few hits each may hold ahead; a search closed early
    leaves nothing waiting."""
    root = write_demo(tmp_path / "demo").root
    session = next(p for p in Path(root).iterdir() if p.is_dir())
    (session / "000000000f01-bash.txt").write_bytes((b"needle " * 500 + b"\n") * 20)
    (session / "000000000f02-bash.txt").write_bytes(b"needle\n" * 300)
    pattern = P.Pattern("needle")
    monkeypatch.setattr(R_ROOT, "BIG_ARTIFACT", 1 << 62)
    want = [(h.path, h.message, h.start) for h in R_ROOT.search_root(root, pattern) if isinstance(h, R_ROOT.SearchHit)]
    monkeypatch.setattr(R_ROOT, "BIG_ARTIFACT", 1)
    monkeypatch.setattr(R_ROOT, "AHEAD_HITS", ahead_hits)
    got = [(h.path, h.message, h.start) for h in R_ROOT.search_root(root, pattern) if isinstance(h, R_ROOT.SearchHit)]
    assert got == want and len(want) > 10000
    it = R_ROOT.search_root(root, pattern)
    next(it)
    it.close()  # stops what runs ahead; the test would hang on a search that kept going
    import threading
    import time

    deadline = time.monotonic() + 10
    ours = ("spillscope-search", "spillscope-prefilter")
    while any(t.name.startswith(ours) for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [t.name for t in threading.enumerate() if t.name.startswith(ours)]  # the workers end


def test_an_error_in_a_search_run_ahead_is_raised_in_its_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A big artifact's search that fails on a worker thread fails the search where its hits
    would come: after the hits of the artifacts before it, not lost on the thread."""
    root = write_root(tmp_path, [], ["needle one", "needle two", "needle three"])
    monkeypatch.setattr(R_ROOT, "BIG_ARTIFACT", 1)
    real = R_ROOT._events

    def events(t: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        if t.path.endswith(f"{102:012x}-bash.txt"):
            raise RuntimeError("boom")
        yield from real(t, *args, **kwargs)

    monkeypatch.setattr(R_ROOT, "_events", events)
    got: list[str] = []
    with pytest.raises(RuntimeError, match="boom"):
        for ev in R_ROOT.search_root(root, P.Pattern("needle")):
            got.append(ev.match)
    assert got == ["needle"]  # the first artifact's hit, then the second's error


@settings(max_examples=2000, deadline=None)
@given(hay=st.lists(st.sampled_from([b"a", b"b", b"e", b" ", b"z", b"q", b"\x00", b"\xc3", b"\n", b"eq" * 20,
                                     b"ze" * 33]), max_size=120).map(b"".join),
       needle=st.lists(st.sampled_from([b"a", b"e", b" ", b"z", b"q", b"\x00", b"\xc3", b"\n"]), min_size=0,
                       max_size=8).map(b"".join), start=st.integers(0, 12))
def test_native_find_is_bytes_find(hay: bytes, needle: bytes, start: int) -> None:
    """The vector search on the needle's two rarest bytes (AVX-512, AVX2) and memmem give find's answer."""
    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    was, was512 = nat.simd(), nat.avx512()
    try:
        for flag, wide in ((1, 1), (1, 0), (0, 0)):
            nat.simd(flag)
            nat.avx512(wide)
            assert nat.find(hay, needle, start) == hay.find(needle, start)
    finally:
        nat.simd(was)
        nat.avx512(was512)


def test_native_find_goes_on_after_a_block_of_false_candidates() -> None:
    """Where a block's candidates (the needle's two rarest bytes in place) are all false, the
    search goes on at the very next byte: over a two-letter alphabet every block is full of
    them, and the first match is bytes.find's from every start (AVX-512, AVX2, memmem)."""
    nat = native.NATIVE
    if nat is None:
        pytest.skip("no native accelerator here")
    rng = random.Random(7)
    was, was512 = nat.simd(), nat.avx512()
    try:
        for _ in range(300):
            needle = bytes(rng.choice(b"ab") for _ in range(rng.randrange(2, 9)))
            hay = bytes(rng.choice(b"ab") for _ in range(rng.randrange(60, 400)))
            for flag, wide in ((1, 1), (1, 0), (0, 0)):
                nat.simd(flag)
                nat.avx512(wide)
                for start in range(0, len(hay), 7):
                    assert nat.find(hay, needle, start) == hay.find(needle, start), (needle, hay, start)
    finally:
        nat.simd(was)
        nat.avx512(was512)


async def test_tui_root_search_stopped_at_its_cap_still_lists_every_artifact_not_searched(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search screen stops at MAX_SHOWN hits; the artifacts that could not be searched
    (symlinks) in the session dirs after its last hit are still listed and counted."""
    from spillscope.frontends.tui import search as S
    from spillscope.frontends.tui.app import SpillscopeApp

    monkeypatch.setattr(S, "MAX_SHOWN", 5)
    root = tmp_path / "root"
    for d in range(3):
        s = root / f"session-{d:012x}"
        s.mkdir(parents=True)
        for i in range(150):
            (s / f"{i:012x}-bash.txt").write_bytes(b"a needle")
    late = root / "session-ffffffffffff"
    late.mkdir()
    for i in range(3):
        (late / f"{i:012x}-bash.txt").symlink_to("/etc/hostname")
    app = SpillscopeApp(str(root), None, watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await _searched_in_tui(pilot, app, "needle")
        status = str(screen.query_one("#search-status").render())
        assert "(stopped at 5)" in status and "3 artifacts not searched" in status, status
        assert screen.bad == 3


@pytest.mark.parametrize("path", ["/r/s/000000000001-bash.txt", '/r/"q"\\/\x00\x7f\x1b[31m\u2028界😀\udcff', "/r/ascii\x7fdel", ""])
def test_json_lines_are_each_hits_ascii_json(path: str) -> None:
    """``grep --json``'s lines, the artifact's fields escaped once: each is ``ascii_json`` of the
    hit's ``to_json()``, whatever the path holds (controls, quotes, a lone surrogate, astral)."""
    from spillscope.util.text import ascii_json

    hits = [R_ROOT.SearchHit(path, session, "d", kind, message, role, start, end, seen, "", "", "")
            for session in (None, "s-1\u00e9") for kind in (R.TOOL_OUTPUT, R.TRANSCRIPT)
            for message, role in ((None, None), (7, "user")) for start, end in ((0, 0), (12, 10**12))
            for seen in (True, False, None)]
    # Groups of mixed messages and ``seen``, and groups of one message and one ``seen`` each
    # (written by the shorter way), of every kind of hit.
    groups = [hits[k : k + 12] for k in range(0, len(hits), 12)]
    groups += [[h for h in hits if (h.session, h.kind, h.message, h.seen) == key]
               for key in {(h.session, h.kind, h.message, h.seen) for h in hits}]
    for group in groups:
        want = "".join(ascii_json(h.to_json()) + "\n" for h in group)
        assert R_ROOT.json_lines(group) == want and want.isascii()
    assert R_ROOT.json_lines([]) == ""


@pytest.mark.parametrize("scanners", ["native", "native-windowed", "python"])
def test_a_character_split_over_two_lines_is_a_malformed_artifact_on_every_path(tmp_path: Path, scanners: str) -> None:
    """A UTF-8 character cut between two fragment lines is whole once the lines are joined,
    but each line is no UTF-8, and the parser (``cat``, ``verify``) calls the file malformed:
    the search says the same on every path (the whole-message decoder, the windows, the
    Python twin), wherever in the line the cut falls, and reports no hit from that line."""
    root = tmp_path / "root"
    sdir = root / "session-0123456789ab"
    sdir.mkdir(parents=True)
    head = js_utf8(render_transcript({"sessionId": "s", "label": "l", "cwd": None, "capturedThroughSeq": 1,
                                      "conversation": [{"role": "user", "text": "x"}]}, 3))
    head = head[: head.index(b"### Message 1: ")]
    for k, (char, cut) in enumerate([("é", 1), ("界", 1), ("界", 2), ("😀", 1), ("😀", 3)]):
        raw = char.encode()
        for j, pad in enumerate((0, 30, 63)):
            first = b"needle " + b"a" * pad + raw[:cut]
            body = b'"' + first + b'"\n"' + raw[cut:] + b"b" * 70 + b'"\n'
            (sdir / f"{k * 10 + j:012x}-session-reference-1.txt").write_bytes(
                head + b"### Message 1: user\n\n" + body)
    env = {**os.environ, "SPILLSCOPE_NO_NATIVE": "1" if scanners == "python" else "0",
           "SPILLSCOPE_WHOLE_MAX": "0" if scanners == "native-windowed" else str(64 << 20)}
    proc = subprocess.run([sys.executable, "-m", "spillscope", "grep", "needle", str(root), "--json"],
                          capture_output=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout) == (1, b"")
    assert proc.stderr.decode().count("malformed-artifact") == len(list(sdir.iterdir())) == 15


@pytest.mark.parametrize("seed", range(3))
def test_native_message_text_clean_pass_is_the_parser_s_text_or_declines_about_its_chunks(seed: int) -> None:
    """The unescape's clean pass (4 KiB chunks taken with nothing carried from block to block,
    one with anything odd taken again by the block loop) on messages of many chunks: the parser's
    exact text, or a decline, with a fault planted about a chunk's edge or anywhere (each fault
    of the test above, and a backslash pair, a \\/ and a \\u at the edge), and the same as the
    block loop alone gives."""
    nat = native.NATIVE
    if nat is None or not nat.clean_passes():
        pytest.skip("the clean pass needs AVX-512 VBMI2")
    rng = random.Random(seed)
    out = bytearray(1 << 20)
    faults = [b'"', b"\x01", b"\n", b'\\"\n"', b'"\n"\n"', b"\\u0041", b"\\ud83d\\ude00", b"\\q", b"\\", b"\xff",
              b"\xc3", b'"\r\n"', b"\\/", b"\\\\", b'\xe7"\n"\x95\x8c', b"\\\\\\", b"\\n", b"\\t", b'\n"']
    wrong = []
    for case in range(80):
        atoms = rng.choice([["a", "b c", "é", "界", "😀", "\n"], ["x"], ["a", "\\", '"', "\t", "/", "\b", "é"],
                            ["word ", "more ", "\n"]])
        text = "".join(rng.choice(atoms) for _ in range(rng.choice([3000, 9000, 30000])))
        step = rng.choice([64, 64, 64, 7, 200])
        lines = b"".join(js_json_string(text[i : i + step]).encode() + b"\n" for i in range(0, len(text), step))
        if rng.random() < 0.7:
            edge = 4096 * rng.randrange(1, max(2, len(lines) // 4096)) + rng.randrange(-70, 70)
            where = rng.random()  # about a chunk's edge, anywhere, or in the first line (in no block)
            at = edge if where < 0.7 else 1 if where < 0.8 else rng.randrange(1, len(lines) - 1)
            at = max(1, min(len(lines) - 2, at))
            lines = lines[:at] + rng.choice(faults) + lines[at:]
        if not (lines[:1] == b'"' and lines[-2:] == b'"\n'):
            continue
        got = clean_and_not(nat, lines, out)
        want = _lines_text(lines)
        if got[1] != got[0] or (got[1] is not None and got[1] != want) or (want is not None and got[0] is None
                                                                              and b"\\u" not in lines):
            wrong.append((case, got[1] is None, got[0] is None, want is None))
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("cut", [b"\xc3", b"\xe7\x95", b"\xf0\x9f\x98", b"\xe7"])
def test_native_message_text_declines_a_character_cut_short_at_a_chunk_s_end_before_ascii(cut: bytes) -> None:
    """A character begun in the last bytes of a clean pass's chunk and never finished, the next
    chunk all ASCII (whose UTF-8 check is then only whether the one before ended well): declined
    at every offset about the first chunks' edges, as the block loop declines it."""
    nat = native.NATIVE
    if nat is None:
        pytest.skip("the C accelerator is not built")
    out = bytearray(1 << 16)
    text = "x" * 20000
    lines = b"".join(js_json_string(text[i : i + 64]).encode() + b"\n" for i in range(0, len(text), 64))
    wrong = []
    for edge in (4097, 8193, 12289):
        for at in range(edge - 8, edge + 4):
            bad = lines[:at] + cut + lines[at:]
            got = nat_text(nat, bad, 0, len(bad), out)
            if got is not None:
                wrong.append(at)
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("seed", range(2))
def test_native_message_text_clean_pass_checks_the_framing_of_a_join_at_its_chunk_s_edges(seed: int) -> None:
    """A join whose newline is a chunk's first or last byte has a neighbour outside the chunk,
    which the block loop looks at only through the quote before the newline: framing bytes
    overwritten or inserted (a quote gone, escaped, or another byte) at each chunk edge, the
    chunk before taken by the clean pass or (a backslash pair early) by the block loop: the
    parser's text or a decline, and the same as the block loop alone."""
    nat = native.NATIVE
    if nat is None or not nat.clean_passes():
        pytest.skip("the clean pass needs AVX-512 VBMI2")
    rng = random.Random(seed)
    out = bytearray(1 << 16)
    faults = [b'\n"', b'"\n', b"\n", b'x\n"', b'"\nx', b'\\"\n"x', b"\x80", b'"', b"\\\\"]
    wrong = []
    for case in range(400):
        text = "".join(rng.choice(["x", "ab", "é", "\n"]) for _ in range(9000))
        lines = b"".join(js_json_string(text[i : i + 64]).encode() + b"\n" for i in range(0, len(text), 64))
        if rng.random() < 0.5:  # the first chunk not clean: the block loop takes it, then the edge
            k = rng.randrange(1, 4000)
            lines = lines[:k] + b"\\\\" + lines[k:]
        at = 1 + 4096 * rng.randrange(1, max(2, len(lines) // 4096)) + rng.randrange(-4, 4)
        f = rng.choice(faults)
        lines = lines[:at] + f + (lines[at:] if rng.random() < 0.5 else lines[at + len(f):])
        if not (lines[:1] == b'"' and lines[-2:] == b'"\n'):
            continue
        got = clean_and_not(nat, lines, out)
        if got[1] != got[0] or (got[1] is not None and got[1] != _lines_text(lines)):
            wrong.append((case, at, f, got[1] is None, got[0] is None))
    assert not wrong, wrong[:5]


def clean_and_not(nat: Any, lines: bytes, out: bytearray) -> dict[int, bytes | None]:
    """:func:`nat_text` of ``lines`` with the clean passes on (key 1) and off (key 0)."""
    got = {}
    for clean in (1, 0):
        nat.clean_passes(clean)
        try:
            got[clean] = nat_text(nat, lines, 0, len(lines), out)
        finally:
            nat.clean_passes(1)
    return got
