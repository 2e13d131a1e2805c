"""The transcript codec: upstream artifacts, exact round trips, located errors, the lazy index."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize("megabytes", [1, 6])  # indexed whole on open / only its first screen
def test_index_of_a_malformed_transcript_keeps_what_came_before(tmp_path, megabytes):
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
