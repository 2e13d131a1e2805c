"""Reused byte buffers (util/scratch.py) and the byte compares that read them in place."""

from __future__ import annotations

import random

from spillscope.reference import preview
from spillscope.reference.preview import common_prefix, common_suffix, same_bytes
from spillscope.util import scratch
from spillscope.util.scratch import Scratch, put_utf8
from spillscope.util.text import js_utf8


def test_put_utf8_writes_js_utf8_piece_by_piece(monkeypatch):
    monkeypatch.setattr(scratch, "TEXT_PIECE", 3)
    rng = random.Random(5)
    # A pair's halves as two code points (JavaScript joins them), lone halves, astral, BOM.
    alphabet = ["a", "\ud83d", "\ude00", "\U0001f600", "\ufeff", "界", "\x00", "\u2028"]
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 14)))
        buf = Scratch().take()
        buf[:] = b"old bytes past the end stay"
        end = put_utf8(buf, 4, text)
        assert bytes(buf[4:end]) == js_utf8(text), repr(text)
        assert bytes(buf[:4]) == b"old "


def test_a_scratch_view_still_held_is_never_written_over():
    s = Scratch()
    buf = s.take(5)
    buf[:5] = b"first"
    held = memoryview(buf)[:5]
    again = s.take(5)
    assert again is not buf and bytes(held) == b"first"
    del held
    assert s.take(3) is again  # let go of: reused, not a fresh buffer
    assert len(s.take(7)) >= 7


def test_views_compare_as_bytes(monkeypatch):
    monkeypatch.setattr(preview, "PIECE", 4)  # two views: compared a piece at a time
    monkeypatch.setattr(preview, "_BLOCK", 3)
    rng = random.Random(11)
    for _ in range(500):
        a = bytes(rng.choice(b"ab") for _ in range(rng.randrange(0, 20)))
        b = bytes(rng.choice(b"ab") for _ in range(rng.randrange(0, 20)))
        va, vb = memoryview(bytearray(a)), memoryview(bytearray(b))
        assert same_bytes(va, vb) is (a == b)
        assert same_bytes(va[1:], vb[1:]) is (a[1:] == b[1:])
        assert common_prefix(va, vb) == common_prefix(a, b) == next(
            (i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        assert common_suffix(va, vb) == common_suffix(a, b) == common_prefix(a[::-1], b[::-1])
