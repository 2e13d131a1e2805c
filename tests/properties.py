"""Properties for fuzzing the readers, shared by tests/test_fuzz.py (short runs in CI)
and bench/reliability.py (long runs with counts).

Each property takes generated input and returns normally when the reader either parsed
it or reported a *located* problem; anything else (another exception, a finding
without a location, a line number outside the input) is an AssertionError."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import strategies as st

from spillscope.util.text import js_utf8
from spillscope.reference.check import check_notice
from spillscope.formats.transcript import Transcript, TranscriptError, read_transcript, render_transcript
from spillscope.formats.sessionlog import LogLineError, LogRow, iter_log

VALID = js_utf8(render_transcript({
    "sessionId": "s", "label": "L", "cwd": None, "capturedThroughSeq": 2,
    "conversation": [{"role": "user", "text": "hello 界😀 \x00\r\n" * 12}, {"role": "assistant", "text": "x\ud800y" * 30}],
}, 3))


def check_transcript_bytes(data: bytes) -> Transcript | None:
    lines = data.count(b"\n") + 1
    try:
        t = read_transcript(data, max_line_bytes=4096)
    except TranscriptError as exc:
        assert 1 <= exc.line <= lines, (exc.line, lines)
        assert exc.reason and str(exc).startswith("<bytes>:")
        return None
    for m in t.messages:
        assert isinstance(m.text, str) and m.text
    if t.incomplete is not None:
        assert 0 <= t.incomplete.line <= lines
    return t


@st.composite
def mutated_transcripts(draw: Any) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup-line"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
        elif op == "truncate":
            del data[pos:]
        else:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def check_log_bytes(data: bytes) -> int:
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as f:
        f.write(data)
        path = f.name
    try:
        lines = data.count(b"\n") + 1
        n = 0
        for item in iter_log(path, max_line_bytes=4096):
            assert isinstance(item, (LogRow, LogLineError))
            assert 1 <= item.line <= lines
            if isinstance(item, LogLineError):
                assert item.reason
            n += 1
        return n
    finally:
        os.unlink(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
conversation_items = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", 3]),
                                            "text": st.text(max_size=80) | json_values})
notices = st.fixed_dictionaries({
    "sessionId": st.text(max_size=5) | json_values,
    "capturedThroughSeq": json_values,
    "omittedMessages": json_values,
    "omittedBytes": json_values,
    "fullSnapshot": json_values,
})


def check_notice_values(conversation: list[Any], notice: dict[str, Any]) -> None:
    t = read_transcript(VALID)
    result, problems = check_notice({"conversation": conversation}, notice, t, artifact_size=len(VALID))
    assert result.original_messages == 2
    for p in problems:
        assert p.field
