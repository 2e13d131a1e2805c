"""Hypothesis fuzzing of the transcript reader, the log reader and the notice checker:
random bytes and structured mutations either parse or fail with a located finding."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from properties import (
    VALID,
    check_log_bytes,
    check_notice_values,
    check_transcript_bytes,
    conversation_items,
    mutated_transcripts,
    notices,
)

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(st.binary(max_size=2000))
def test_transcript_reader_on_random_bytes(data):
    check_transcript_bytes(data)


@FAST
@given(mutated_transcripts())
def test_transcript_reader_on_mutations(data):
    check_transcript_bytes(data)


def test_valid_transcript_reads_exactly():
    t = check_transcript_bytes(VALID)
    assert t is not None and t.complete and len(t.messages) == 2


@FAST
@given(st.lists(st.binary(max_size=200) | st.sampled_from([b'{"type":"session","id":"x"}', b"{}", b"[]", b'{"a":'])
                , max_size=10), st.booleans())
def test_log_reader_on_random_lines(lines, torn):
    data = b"\n".join(lines) + (b"" if torn else b"\n")
    check_log_bytes(data)


@FAST
@given(st.lists(conversation_items, max_size=4), notices)
def test_notice_checker_never_raises(conversation, notice):
    check_notice_values(conversation, notice)
