"""Session log lines longer than a read piece: read into one reused buffer, answered as
``readline`` answers (formats/linebuf.py, formats/sessionlog.py)."""

from __future__ import annotations

import io
import json
import random

import pytest

from spillscope.formats import linebuf
from spillscope.formats.linebuf import LineReader, is_blank
from spillscope.formats.sessionlog import LogLineError, LogRow, iter_log


@pytest.fixture
def small_piece(monkeypatch):
    monkeypatch.setattr(linebuf, "PIECE", 8)
    return 8


def test_line_reader_answers_as_readline(small_piece):
    rng = random.Random(3)
    for _ in range(300):
        data = b"".join(rng.choice([b"", b"a", b" ", b"\n", b"\r\n", b"xyz" * rng.randrange(0, 9)])
                        for _ in range(rng.randrange(0, 20)))
        want, got = io.BytesIO(data), LineReader(io.BytesIO(data))  # type: ignore[arg-type]
        while True:
            limit = rng.choice([1, 7, 8, 9, 16, 17, 40, 1 << 20])
            a, b = want.readline(limit), got.readline(limit)
            assert bytes(b) == a, (data, limit)
            assert is_blank(b) is a.isspace()
            if not a:
                break


def test_long_lines_reuse_one_buffer(small_piece):
    data = b"x" * 50 + b"\n" + b"y" * 45 + b"\n" + b"z" * 50 + b"\n"
    reader = LineReader(io.BytesIO(data))  # type: ignore[arg-type]
    first = reader.readline(1000)
    assert bytes(first) == data[:51]
    buf, size = reader.scratch.buf, len(reader.scratch.buf)
    del first
    assert bytes(reader.readline(1000)) == b"y" * 45 + b"\n"
    assert bytes(reader.readline(1000)) == b"z" * 50 + b"\n"
    # Written over the first line's pages, not a fresh buffer per line.
    assert reader.scratch.buf is buf and len(reader.scratch.buf) == size


def test_a_line_still_held_is_never_written_over_by_a_longer_one(small_piece):
    reader = LineReader(io.BytesIO(b"a" * 20 + b"\n" + b"b" * 60 + b"\n"))  # type: ignore[arg-type]
    held = reader.readline(1000)
    assert bytes(reader.readline(1000)) == b"b" * 60 + b"\n"  # needs more room: a buffer of its own
    assert bytes(held) == b"a" * 20 + b"\n"


def test_iter_log_reads_long_lines_as_short_ones(tmp_path, small_piece):
    rows = [{"type": "session", "id": "s"}, {"text": "界\u2028\ud800" + "x" * 20}, {"t": "y" * 30}]
    lines = [json.dumps(r).encode() for r in rows]
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines[:2]) + b"\n" + b" \t" * 20 + b"\n" + b"[" + b"1," * 20 + b"1]\n"
                     + b"z" * 100 + b"\n" + lines[2] + b"\n" + b"w" * 30)
    items = list(iter_log(path, max_line_bytes=60))
    assert [i.value for i in items if isinstance(i, LogRow)] == [json.loads(x) for x in lines]
    errors = [(i.line, i.reason) for i in items if isinstance(i, LogLineError)]
    assert errors == [(3, "empty line"), (4, "line is not a JSON object"), (5, "line exceeds 60 bytes"),
                      (7, "torn last line (no final newline)")]


def test_a_line_the_fallback_parser_read_is_let_go_with_the_collector_off():
    """A lone surrogate sends a line to the stdlib parser; orjson's error must not keep
    the line alive in a cycle (verify pauses the collector: every such line stayed)."""
    import gc

    from spillscope.util.text import loads_exact

    was = gc.isenabled()
    gc.disable()
    try:
        buf = bytearray(b'{"a": "\\ud800x"}')
        view = memoryview(buf)
        assert loads_exact(view) == {"a": "\ud800x"}
        del view
        buf.append(0)  # BufferError while any view of it is alive
    finally:
        if was:
            gc.enable()
