"""The transcript codec: upstream artifacts, exact round trips, located errors, the lazy index."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spillscope.util import native
from spillscope.util.text import js_normalize, js_utf8
from spillscope.reference import (
    TranscriptError,
    TranscriptIndex,
    parse_transcript,
    read_transcript,
    render_transcript,
)
from spillscope.formats.transcript import iter_transcript, Fragment

from conftest import UPSTREAM


def _data(texts, roles=None):
    roles = roles or ["user" if i % 2 == 0 else "assistant" for i in range(len(texts))]
    return {
        "sessionId": "src",
        "label": "L",
        "cwd": None,
        "capturedThroughSeq": 3,
        "conversation": [{"role": r, "text": t} for r, t in zip(roles, texts)],
    }


def test_upstream_artifacts_read_exactly_and_rerender_identically(manifest):
    seen = 0
    for art in manifest["artifacts"]:
        if art["kind"] != "session-reference-transcript":
            continue
        path = UPSTREAM / "spill-root" / art["path"]
        t = read_transcript(path)
        assert t.complete and t.metadata is not None
        assert [(m.role, m.text) for m in t.messages] == [(m["role"], m["text"]) for m in art["messages"]]
        assert t.metadata.to_json() == art["capture"]
        data = {**{k: v for k, v in art["capture"].items() if k != "capturedFormatVersion"},
                "conversation": [{"role": m["role"], "text": m["text"]} for m in art["messages"]]}
        assert js_utf8(render_transcript(data, art["capture"]["capturedFormatVersion"])) == path.read_bytes()
        # Fragment line counts as upstream reported them.
        frags = [t for ev in iter_transcript(path) if isinstance(ev, Fragment) for t in ev.texts]
        assert len(frags) == sum(m["fragmentLines"] for m in art["messages"])
        seen += 1
    assert seen == 9


# Every code point, lone surrogates (category Cs) and controls included.
texts = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.text(max_size=20))
def test_round_trip_any_text(messages, label):
    data = _data(messages)
    data["label"] = label
    rendered = render_transcript(data, 3)
    t = parse_transcript(rendered)
    assert t.complete
    assert [m.text for m in t.messages] == [js_normalize(m) for m in messages]
    assert t.metadata is not None and t.metadata.label == js_normalize(label)
    frags = [json.loads(line) for line in rendered.split("\n") if line.startswith('"')]
    for frag, nxt in zip(frags, frags[1:] + [""]):
        assert 1 <= len(js_normalize(frag)) <= 64
        # A surrogate pair is never split: no fragment ends with a high surrogate whose
        # low half starts the next one (stdlib json keeps escaped halves apart).
        assert not ("\ud800" <= frag[-1] <= "\udbff" and nxt[:1] and "\udc00" <= nxt[0] <= "\udfff")
    for ev in iter_transcript(js_utf8(rendered)):
        if isinstance(ev, Fragment):
            assert max(ev.code_points()) <= 64


def test_pairs_are_never_split_and_lone_surrogates_survive():
    text = "a" * 63 + "\U0001F600" + "\ud800" + "x\r\n\x00\u2028\ufeff"
    rendered = render_transcript(_data([text]), 3)
    lines = [l for l in rendered.split("\n") if l.startswith('"')]
    assert lines[0] == '"' + "a" * 63 + '\U0001F600"'
    assert lines[1].startswith('"\\ud800x\\r\\n\\u0000')
    assert parse_transcript(rendered).messages[0].text == text


def test_message_of_a_single_newline():
    t = parse_transcript(render_transcript(_data(["\n"]), 3))
    assert t.messages[0].text == "\n"


def test_message_text_that_looks_like_a_header():
    text = "\n\n### Message 2: user\n\n\"x\"\n"
    t = parse_transcript(render_transcript(_data([text, "b"]), 3))
    assert [m.text for m in t.messages] == [text, "b"]


GOOD = render_transcript(_data(["hello world", "second"]), 3)


def _err(text: str | bytes) -> TranscriptError:
    with pytest.raises(TranscriptError) as info:
        read_transcript(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    return info.value


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    "mutate,reason,needle",
    [
        (lambda s: s.replace("## Referenced session", "## Something else", 1), "wrong or missing header", None),
        (lambda s: "garbage\n" + s, "wrong or missing header", None),
        (lambda s: s.replace('"sessionId": "src"', '"sessionId": 5'), "invalid metadata block", None),
        (lambda s: s.replace('"cwd": null,\n', ""), "missing cwd", None),
        (lambda s: s.replace('  "label": "L",', '  "label": "L"'), "invalid metadata block", None),
        (lambda s: s.replace('"hello world"', "hello world"), "fragment line is not a JSON string", None),
        (lambda s: s.replace('"second"', '"second"\nsecond'), "text after the last message", None),
        (lambda s: s.replace('"hello world"', "42"), "fragment line is not a JSON string", None),
        (lambda s: s.replace('"hello world"', '"' + "x" * 65 + '"'), "65 code points", None),
        (lambda s: s.replace('"hello world"', '"unterminated'), "not a valid JSON string", None),
        (lambda s: s.replace("### Message 2: assistant", "### Message 3: assistant"), "out of sequence", None),
        (lambda s: s.replace("### Message 2: assistant", "### Message 2: system"), "unknown role 'system'", None),
        (lambda s: s + "trailing text\n", "text after the last message", None),
        (lambda s: s + "\nmore\n", "text after the last message", None),
    ],
)
def test_malformed_cases_are_located(mutate, reason, needle):
    bad = mutate(GOOD)
    err = _err(bad)
    assert reason in err.reason
    assert err.line >= 1
    assert str(err).startswith(f"<bytes>:{err.line}: ")


def test_error_line_numbers_point_at_the_line():
    bad = GOOD.replace('"second"', '"' + "y" * 70 + '"')
    err = _err(bad)
    assert err.line == _line_of(bad, '"' + "y" * 70)


def test_invalid_utf8_is_located():
    bad = GOOD.encode().replace(b"hello", b"hel\xff\xfeo")
    err = _err(bad)
    assert err.line == _line_of(GOOD, '"hello')


def test_path_errors_carry_the_path(tmp_path):
    p = tmp_path / "x-session-reference-1.txt"
    p.write_text(GOOD.replace("### Message 2", "### Message 9"))
    with pytest.raises(TranscriptError) as info:
        read_transcript(p)
    assert str(info.value).startswith(f"{p}:")


@pytest.mark.parametrize("cut", [1, 50, 200, len(GOOD) - 1])
def test_cut_mid_write_is_incomplete_not_an_error(cut):
    t = read_transcript(GOOD[:cut].encode())
    assert not t.complete


def test_every_prefix_is_incomplete_or_complete_never_an_error():
    data = GOOD.encode()
    for n in range(0, len(data) + 1):
        t = read_transcript(data[:n])
        if n == len(data):
            assert t.complete and [m.text for m in t.messages] == ["hello world", "second"]
        else:
            # A cut right after a fragment line cannot be told from the end of a
            # shorter transcript; every other cut is reported incomplete.
            if t.complete:
                assert data[n - 1 : n] == b"\n" and data[:n].split(b"\n")[-2].startswith(b'"'), n
            for m in t.messages:  # whatever was read is an exact prefix
                assert ["hello world", "second"][m.index - 1].startswith(m.text)


def test_dangling_header_is_incomplete():
    cut = GOOD[: GOOD.index("### Message 2: assistant") + len("### Message 2: assistant\n\n")]
    t = read_transcript(cut.encode())
    assert not t.complete and "dangling header" in t.incomplete.reason
    assert [m.text for m in t.messages] == ["hello world"]


def test_overlong_line_is_refused_without_reading_it_all():
    bad = GOOD.replace('"hello world"', '"' + "h" * 5000 + '"')
    with pytest.raises(TranscriptError) as info:
        read_transcript(bad.encode(), max_line_bytes=1000)
    assert "exceeds 1000 bytes" in info.value.reason


def test_symlinked_artifact_is_refused(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text(GOOD)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with pytest.raises(OSError):
        read_transcript(link)


def test_lazy_index_reads_the_middle_of_a_giant_single_line_message(tmp_path):
    # ~12 MB single-line message with multi-byte text, an escape-heavy run and a lone surrogate.
    unit = "界😀é-" + "abc" * 10
    text = unit * 300_000 + "\x00\r\n\ud800" + "tail"
    path = tmp_path / "big.txt"
    path.write_bytes(js_utf8(render_transcript(_data([text]), 3)))
    idx = TranscriptIndex.build(path)
    msg = idx.messages[0]
    norm = js_normalize(text)
    assert msg.code_points == len(norm)
    assert msg.utf8_bytes == len(js_utf8(text))
    mid = len(norm) // 2 + 7
    assert idx.read(1, mid, 500) == norm[mid : mid + 500]
    assert idx.read(1, len(norm) - 10) == norm[-10:]
    assert idx.read(1, 0, 3) == norm[:3]
    # Memory is proportional to the index: a checkpoint per 128 fragments.
    assert len(msg.checkpoints) == 4 * ((msg.fragments + 127) // 128)


def test_index_on_upstream_huge_message(manifest):
    art = next(a for a in manifest["artifacts"] if a["path"].endswith("a8669c8960ea-session-reference-1.txt"))
    idx = TranscriptIndex.build(UPSTREAM / "spill-root" / art["path"])
    text = art["messages"][0]["text"]
    assert idx.messages[0].code_points == art["messages"][0]["codePoints"]
    assert idx.messages[0].utf8_bytes == art["messages"][0]["utf8Bytes"]
    assert idx.read(1, 10_000, 64) == text[10_000:10_064]


def test_index_positions_lines_and_bytes(tmp_path):
    text = "".join(f"line {i} 界😀\n" for i in range(5000)) + "end"
    path = tmp_path / "t.txt"
    path.write_bytes(js_utf8(render_transcript(_data(["first", text]), 3)))
    idx = TranscriptIndex.build(path)
    assert idx.messages[1].newlines == 5000
    for line in (0, 1, 77, 2500, 4999, 5000):
        cp = idx.offset_of_line(2, line)
        assert text[:cp].count("\n") == line and (cp == 0 or text[cp - 1] == "\n")
        assert idx.position(2, cp) == (line, len(text[:cp].encode()))
    for byte in (0, 5, 9, 10, 11, 12, 13, 1000, 77777):
        cp = idx.offset_of_byte(2, byte)
        assert len(text[:cp].encode()) <= byte < len(text[: cp + 1].encode())


def _malformed_transcript(path, megabytes: int) -> int:
    """Three messages; a bad fragment line near the end of message 2. Returns its line."""
    text = render_transcript({"sessionId": "s", "label": "L", "cwd": None, "capturedThroughSeq": 1, "conversation": [
        {"role": "user", "text": "first " * 10}, {"role": "assistant", "text": "x" * (megabytes << 20)},
        {"role": "user", "text": "third"}]}, 3)
    lines = text.split("\n")
    bad = max(j for j, line in enumerate(lines) if line.startswith('"x')) - 5
    lines[bad] = "not json"
    path.write_bytes(js_utf8("\n".join(lines)))
    return bad + 1


@pytest.mark.parametrize("scanners", ["native", "python"])
@pytest.mark.parametrize("megabytes", [1, 6])  # indexed whole on open / only its first screen
def test_index_of_a_malformed_transcript_keeps_what_came_before(tmp_path, megabytes, scanners, monkeypatch):
    if scanners == "native" and native.NATIVE is None:
        pytest.skip("no native accelerator here")
    if scanners == "python":
        monkeypatch.setattr(native, "NATIVE", None)
    path = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    line = _malformed_transcript(path, megabytes)
    index = TranscriptIndex.open(path)  # message 1 is readable: no error here
    assert index.read(1) == "first " * 10
    # Reading ahead never raises: indexing stops at the bad line and says so.
    index.ensure(3)
    assert index.done and index.error is not None and index.error.line == line
    assert len(index.messages) == 2 and index.read(2, 0, 5) == "xxxxx"
    assert index.advance() is True  # nothing more to index, nothing raised twice
    with pytest.raises(TranscriptError) as err:
        TranscriptIndex.build(path)
    assert err.value.line == line
    # With nothing readable before the error, opening fails.
    path.write_bytes(b"## Referenced session \xe2\x80\x94 full projected snapshot\n\nnot the intro\n")
    with pytest.raises(TranscriptError):
        TranscriptIndex.open(path)


# The native scanner (spillscope._native.index_lines) against the pure-Python index --------
def _index_state(index):
    return (index.metadata, index.incomplete, None if index.error is None else str(index.error), index.done,
            index.indexed_bytes,
            [(m.index, m.role, m.header_line, m.first_line, m.start, m.end, m.fragments, m.code_points,
              m.utf8_bytes, m.newlines, m.checkpoints.tolist()) for m in index.messages])


def _index_both_ways(path, max_line_bytes):
    """{scanners: (state after build or the error, message texts read back)}."""
    out = {}
    saved = native.NATIVE
    for which, nat in (("native", saved), ("python", None)):
        native.NATIVE = nat
        try:
            try:
                index = TranscriptIndex.build(path, max_line_bytes=max_line_bytes)
            except TranscriptError as exc:
                index = None
                built = str(exc)
            lazy = TranscriptIndex(str(path), max_line_bytes)
            lazy.ensure(None)  # what the TUI does: keeps what came before an error
            state = _index_state(lazy)
            reads = [lazy.read(m.index) for m in lazy.messages]
            positions = [lazy.position(m.index, m.code_points // 2) for m in lazy.messages]
            out[which] = (built if index is None else _index_state(index), state, reads, positions)
        finally:
            native.NATIVE = saved
    return out


#: Line edits the native scanner must refuse (or count exactly) as the Python path does.
_EDITS = [
    lambda l: l.replace("a", "\\u0041", 1),  # uppercase-hex escape of a plain letter
    lambda l: l.replace("a", "\\u00e9\\ud83d\\ude00\\uD83D\\uDE00", 1),  # escaped pairs, both cases
    lambda l: l.replace("a", "\\ud800", 1),  # a lone high surrogate escape
    lambda l: l.replace("a", "\\udc00x", 1),  # a lone low one
    lambda l: l.replace("a", "\\ud83d\\u0041", 1),  # a high one not followed by a low
    lambda l: l.replace("a", "\\/\\b\\f\\u000a\\u000A\\u0000", 1),
    lambda l: l.replace("a", "\\x", 1),  # an unknown escape
    lambda l: l.replace("a", "\\u12", 1),  # a short one
    lambda l: l.replace("a", "\t", 1),  # a raw control character
    lambda l: l.replace("a", '"', 1),  # a raw quote
    lambda l: l[:-1] + '\\"',  # the closing quote escaped
    lambda l: l + " ",  # whitespace after the string
    lambda l: " " + l,
    lambda l: '""',  # an empty fragment
    lambda l: '"' + "y" * 65 + '"',  # too many code points
    lambda l: '"' + "y" * 64 + '"',
    lambda l: "",  # a blank line inside the message
    lambda l: "not json",
    lambda l: l + "\n### Message 9: user",
]
_BAD_BYTES = [b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xff", b"\xf0\x9f\x98"]


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=3), st.randoms(use_true_random=False),
       st.integers(0, 3), st.sampled_from([1 << 20, 70, 10]))
def test_native_index_equals_the_python_index(tmp_path_factory, messages, rng, edits, max_line_bytes):
    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    rendered = js_utf8(render_transcript(_data([m + "a" * rng.choice([0, 300, 9000]) for m in messages]), 3))
    lines = rendered.split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(b"### Message 1"))
    for _ in range(edits):
        i = rng.randrange(first, len(lines))
        r = rng.random()
        if r < 0.7 and lines[i].startswith(b'"'):
            lines[i] = rng.choice(_EDITS)(lines[i].decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")
        elif r < 0.85 and lines[i].startswith(b'"'):
            at = rng.randrange(1, len(lines[i]))
            lines[i] = lines[i][:at] + rng.choice(_BAD_BYTES) + lines[i][at:]
        elif r < 0.9:
            lines[i] = lines[i].replace(b"Message", b"Message 0", 1).replace(b"user", b"system")
        else:
            lines = lines[: i + 1]
    data = b"\n".join(lines)
    if rng.random() < 0.3:
        data = data[: rng.randrange(len(data) // 2, len(data) + 1)]  # cut off mid-write
    path = tmp_path_factory.mktemp("index") / "aaaaaaaaaaaa-session-reference-1.txt"
    path.write_bytes(data)
    got = _index_both_ways(path, max_line_bytes)
    assert got["native"] == got["python"]


def test_native_index_hands_over_to_the_parser_mid_message(tmp_path, monkeypatch):
    """Counted chunks, then an irregular line (a lone surrogate, which the parser keeps),
    then plain lines again and a second message: the same index either way, and the
    scanner goes on after that line (no second parse of the file)."""
    from spillscope.formats.transcript import index as I

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    monkeypatch.setattr(I, "NATIVE_CHUNK", 4096)  # many chunks, and lines cut at chunk ends
    resumed = []
    real_resume = I._resume
    monkeypatch.setattr(I, "_resume", lambda *a: resumed.append(a) or real_resume(*a))
    text = ("plain 界😀 text\n" * 4000) + "\ud800" + ("more \\ \"q\"\n" * 4000)
    path = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    path.write_bytes(js_utf8(render_transcript(_data([text, "b" * 5000, text]), 3)))
    got = _index_both_ways(path, 1 << 20)
    assert got["native"] == got["python"]
    assert got["native"][2] == [js_normalize(text), "b" * 5000, js_normalize(text)]
    assert len(got["native"][1][5][0][10]) > 4 * 8  # checkpoints from both sides of the handover
    assert resumed == []
    # A line the line-by-line path refuses goes back to the parser, which says where.
    path.write_bytes(path.read_bytes().replace(b'"b', b'"\\x', 1))
    got = _index_both_ways(path, 1 << 20)
    assert got["native"] == got["python"] and "not a valid JSON string" in got["native"][0]
    assert resumed


def test_native_index_reads_each_byte_about_once(tmp_path, monkeypatch):
    """Many short messages and many irregular lines (each a lone surrogate) cost the
    scanner their own bytes: the buffer is read again only where the scan reaches its end,
    not per message or per irregular line (1 MiB each would be quadratic)."""
    import os

    if native.NATIVE is None:
        pytest.skip("no native accelerator here")
    texts = [f"message {i} \ud800 界\n" * (1 + i % 3) for i in range(2000)] + ["x\ud83d" * 3000]
    path = tmp_path / "aaaaaaaaaaaa-session-reference-1.txt"
    path.write_bytes(js_utf8(render_transcript(_data(texts), 3)))
    read = []
    real = os.preadv
    monkeypatch.setattr(os, "preadv", lambda fd, bufs, at: read.append(real(fd, bufs, at)) or read[-1])
    got = _index_both_ways(path, 1 << 20)
    assert got["native"] == got["python"]
    assert len(got["native"][1][5]) == 2001
    size = path.stat().st_size
    assert 0 < sum(read) < 2 * size + (1 << 20)  # both ways together: the native one reads


@pytest.mark.parametrize("framing", [b'"\r\n"', b'" \n"', b'"\t\n"', b'"\n "', b'"\n\t"', b'" \r\n  "', b'"\r\n\t"'])
@pytest.mark.parametrize("surrogate", [False, True])
def test_whitespace_about_a_fragment_line_reads_the_same_on_every_path(tmp_path, framing, surrogate):
    """JSON takes whitespace about a value, and the batch path's orjson does; the line-by-line
    path (a lone surrogate sends a message there) and the index take the same lines: the
    text is the writer's framing's, whichever path reads it, and the search finds it."""
    from spillscope.inspect.search import pattern as P, transcript as S

    import random

    rng = random.Random(7)
    text = ("\ud800" if surrogate else "") + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(300))
    data = js_utf8(render_transcript(_data([text, "next"]), 3))
    first = data.index(b'\n"', data.index(b"### Message 1: ")) + 1
    path = tmp_path / "000000000001-session-reference-1.txt"
    path.write_bytes(data[:first] + data[first:].replace(b'"\n"', framing))
    assert [m.text for m in read_transcript(path).messages] == [js_normalize(text), "next"]
    index = TranscriptIndex.build(path)
    assert index.read(1, 0) == js_normalize(text)
    needle = text[60:70]  # across the first join
    hits = [(e.message, e.hit.start) for e in S.search_transcript(str(path), P.Pattern(needle)) if hasattr(e, "hit")]
    assert hits == [(1, 60)]
